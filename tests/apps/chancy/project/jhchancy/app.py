"""The chancy app of the test image: configuration only. `app` is what `chancy --app
jhchancy.app.app` loads; the API plugin (chancy's own, in the worker process) serves
GET /health; the JhTasks plugin only declares the migrations of our task table through
chancy's own migrator (key `jhtasks`, package jhchancy.migrations)."""

import os
import time

import psycopg
from chancy import Chancy, QueuedJob, job
from chancy.plugin import Plugin
from chancy.plugins.api import Api
from chancy.plugins.api.auth import SimpleAuthBackend


class JhTasks(Plugin):
    """Our task table (jh_taskrun), migrated by `chancy misc migrate` like chancy's own."""

    @staticmethod
    def get_identifier() -> str:
        return "jobhandlers.jhtasks"

    def migrate_key(self) -> str:
        return "jhtasks"

    def migrate_package(self) -> str:
        return "jhchancy.migrations"


app = Chancy(
    os.environ["DATABASE_URL"],
    plugins=[
        JhTasks(),
        # No users: the dashboard API refuses every login; /health needs none.
        Api(host="0.0.0.0", port=int(os.environ.get("CHANCY_API_PORT", "8000")),
            authentication_backend=SimpleAuthBackend({})),
    ],
)


def _record(sql: str, *params: object) -> None:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(sql, params)


@job(queue="default")
def sleep_task(*, seconds: float, context: QueuedJob) -> None:
    """Record a start row, sleep, record the finish: a run without a finish = lost work."""
    _record("INSERT INTO jh_taskrun (job_id, task, started_at) VALUES (%s, 'sleep_task', now())", str(context.id))
    time.sleep(seconds)
    _record("UPDATE jh_taskrun SET finished_at = now() WHERE job_id = %s AND finished_at IS NULL", str(context.id))
