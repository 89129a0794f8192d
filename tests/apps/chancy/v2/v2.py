"""jhtasks v2 (image :2 only): a worker column on the task-run table."""

from chancy.migrate import Migration


class TaskRunWorker(Migration):
    async def up(self, migrator, cursor):
        await cursor.execute("ALTER TABLE jh_taskrun ADD COLUMN worker text")

    async def down(self, migrator, cursor):
        await cursor.execute("ALTER TABLE jh_taskrun DROP COLUMN worker")
