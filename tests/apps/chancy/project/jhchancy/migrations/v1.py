"""jhtasks v1: the task-run table of sleep_task (one row per run)."""

from chancy.migrate import Migration


class TaskRun(Migration):
    async def up(self, migrator, cursor):
        await cursor.execute(
            "CREATE TABLE jh_taskrun (id bigserial PRIMARY KEY, job_id text NOT NULL, task text NOT NULL,"
            " started_at timestamptz NOT NULL, finished_at timestamptz)")

    async def down(self, migrator, cursor):
        await cursor.execute("DROP TABLE jh_taskrun")
