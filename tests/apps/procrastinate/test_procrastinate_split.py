"""procrastinate's own pre/post migration split, upgrading 3.1.0 -> 3.2.2 (adjacent minors, as
its docs require) against a real PostgreSQL while 3.1 code defers and runs jobs. 3.2.2 ships
three Django migrations 3.1.0 does not have: 0036_add_worker_model (Django state only),
0037_pre_batch_defer_jobs (adds procrastinate_defer_jobs_v1, which 3.2 defers with) and
0038_post_batch_defer_jobs (drops procrastinate_defer_job_v1, which 3.1 defers with).

`premigrate` and `schemacheck` are our thin wrappers around Django's migration API
(project/jhtasks/management/commands/); the venvs are .venv-3.1 and .venv-3.2 (make app-venv)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pytest
from pcapp import HERE, App, ok, output, query, wait_for

VENVS = {v: HERE / f".venv-{v}" for v in ("3.1", "3.2")}
PRE = "procrastinate.0037_pre_batch_defer_jobs"
POST = "procrastinate.0038_post_batch_defer_jobs"
# A client of the app's code: sleep_task.defer() every 0.1 s, one line per try (the test's
# own loop, run in the app's `django-admin shell`; procrastinate does the deferring).
DEFER_LOOP = """
import time
from jhtasks.tasks import sleep_task
while True:
    try:
        print("ok", sleep_task.defer(seconds=0.1), flush=True)
    except Exception as exc:
        print("fail", type(exc).__name__, " ".join(f"{exc} {exc.__cause__}".split()), flush=True)
    time.sleep(0.1)
"""

# its own group: its three tests (two venvs, ~35-90 s) need not queue behind the app tests
pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("procrastinate-split")]


@pytest.fixture(name="pc")
def _pc(app: Callable[..., App]) -> Callable[[str], App]:
    """pc("3.1") -> the app (project v1) run by procrastinate 3.1.0's venv."""
    def make(version: str) -> App:
        if not (VENVS[version] / "bin" / "django-admin").is_file():
            pytest.fail(f"no procrastinate {version} venv at {VENVS[version]}: run `make app-venv`", pytrace=False)
        return app(1, venv=VENVS[version])
    return make


class Deferrer:
    """DEFER_LOOP in a background process of `app`'s code."""

    def __init__(self, app: App, name: str) -> None:
        self.proc = app.start("shell", "-c", DEFER_LOOP, name=name)

    def tries(self) -> list[str]:
        return [line for line in output(self.proc).splitlines() if line.startswith(("ok ", "fail "))]

    def ids(self) -> list[int]:
        return [int(line.split()[1]) for line in self.tries() if line.startswith("ok ")]

    def failures(self) -> list[str]:
        return [line for line in self.tries() if line.startswith("fail ")]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def timed(a: App, *args: str) -> tuple[Any, float]:
    t0 = time.monotonic()
    res = a.run(*args)
    return res, round(time.monotonic() - t0, 2)


def succeeded(url: str, ids: list[int]) -> int:
    return query(url, "SELECT count(*) FROM procrastinate_jobs WHERE id = ANY(%s) AND status = 'succeeded'",
                 ids)[0][0]


def wait_run(url: str, deferrer: Deferrer, more: int, what: str) -> list[int]:
    """Wait until `more` further jobs of `deferrer` were deferred and have run; their ids."""
    seen = len(deferrer.ids())
    ids = wait_for(lambda: deferrer.ids()[seen:seen + more] if len(deferrer.ids()) >= seen + more else None,
                   30, f"{more} defers of {what}")
    wait_for(lambda: succeeded(url, ids) == more, 30, f"the {more} jobs of {what} to run")
    return ids


def statuses(url: str) -> dict[str, int]:
    return dict(query(url, "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1"))


def has_function(url: str, name: str) -> bool:
    return bool(query(url, "SELECT 1 FROM pg_proc WHERE proname = %s", name))


def start_old(pc: Callable[[str], App], dburl: str) -> tuple[App, Any, Deferrer]:
    """3.1 migrated to its head, its worker and a client deferring; a first 10 jobs run."""
    old = pc("3.1")
    mig = old.run("migrate", "--noinput")
    assert mig.returncode == 0 and "0035_post_add_heartbeat... OK" in mig.stdout, ok(mig)
    worker = old.start("procrastinate", "worker", "--concurrency=2", name="old-worker")
    client = Deferrer(old, "old-client")
    wait_run(dburl, client, 10, "the 3.1 client")
    return old, worker, client


def test_split_upgrade_keeps_old_code_working(pc: Callable[[str], App], dburl: str, facts: dict) -> None:
    """The chart's two phases by hand: 3.2's `premigrate` (pre-deploy) while 3.1 code defers and
    runs jobs; 3.1 and 3.2 side by side (the rollout); 3.1 stops; 3.2's `migrate` (post-deploy)."""
    old, old_worker, old_client = start_old(pc, dburl)
    new = pc("3.2")
    assert new.run("schemacheck").returncode == 3
    assert old.run("schemacheck").returncode == 0
    before, t0 = len(old_client.ids()), time.monotonic()

    # 1. pre-deploy: 0036 and 0037, not 0038
    pre, facts["split_premigrate_s"] = timed(new, "premigrate")
    assert pre.returncode == 0, ok(pre)
    assert f"Applying {PRE}... OK" in pre.stdout and f"Applying {POST}" not in pre.stdout, ok(pre)
    assert has_function(dburl, "procrastinate_defer_jobs_v1") and has_function(dburl, "procrastinate_defer_job_v1")
    # the old code keeps deferring and running, only its own worker there
    wait_run(dburl, old_client, 20, "the 3.1 client after premigrate")
    check = new.run("schemacheck")
    assert check.returncode == 0 and f"post-deploy pending: {POST}" in check.stdout, ok(check)
    assert new.run("migrate", "--check").returncode == 1  # Django's own check: 0038 unapplied
    assert old.run("migrate", "--check").returncode == 0  # Django ignores applied migrations it does not know
    ahead = old.run("schemacheck")
    assert ahead.returncode == 4 and f"0036_add_worker_model, {PRE})" in ahead.stderr, ok(ahead)
    assert old.run("schemacheck", "--accept-ahead").returncode == 0
    # procrastinate's own healthchecks: the old code passes, the new code refuses any pending
    # procrastinate migration, the post-deploy one too (so it cannot be the new pods' readiness)
    assert old.run("procrastinate", "healthchecks").returncode == 0
    health = new.run("procrastinate", "healthchecks")
    assert health.returncode == 1 and "Missing procrastinate migrations" in health.stdout + health.stderr, ok(health)

    # 2. rollout: the new code defers and runs beside the old
    new_worker = new.start("procrastinate", "worker", "--concurrency=2", name="new-worker")
    new_client = Deferrer(new, "new-client")
    wait_run(dburl, new_client, 10, "the 3.2 client on the pre-deploy revision")
    wait_run(dburl, old_client, 10, "the 3.1 client beside 3.2")

    # 3. the old code is gone: SIGTERM drains its worker
    old_client.stop()
    old_worker.terminate()
    assert old_worker.wait(30) == 0, output(old_worker)
    facts["split_old_defers_during_split"] = len(old_client.ids()) - before
    facts["split_premigrate_to_old_stopped_s"] = round(time.monotonic() - t0, 1)
    facts["split_old_defer_failures"] = len(old_client.failures())
    assert old_client.failures() == [], old_client.failures()[:3]

    # 4. post-deploy: 0038 drops the function 3.1 deferred with; 3.2 goes on
    post, facts["split_post_migrate_s"] = timed(new, "migrate", "--noinput")
    assert post.returncode == 0 and f"Applying {POST}... OK" in post.stdout, ok(post)
    assert not has_function(dburl, "procrastinate_defer_job_v1")
    assert new.run("schemacheck").returncode == 0 and new.run("migrate", "--check").returncode == 0
    assert new.run("procrastinate", "healthchecks").returncode == 0
    wait_run(dburl, new_client, 10, "the 3.2 client after the post-deploy migration")
    new_client.stop()
    facts["split_new_defers"] = len(new_client.ids())
    assert new_client.failures() == [], new_client.failures()[:3]
    wait_for(lambda: set(statuses(dburl)) == {"succeeded"}, 30, "every job to run")
    facts["split_jobs_succeeded"] = statuses(dburl)["succeeded"]
    new_worker.terminate()
    assert new_worker.wait(30) == 0, output(new_worker)


def test_naive_upgrade_breaks_old_code(pc: Callable[[str], App], dburl: str, facts: dict) -> None:
    """The same upgrade with plain `migrate` (everything pre-deploy) while 3.1 code runs: 0038
    drops procrastinate_defer_job_v1 under it and every 3.1 defer fails until it is replaced."""
    old, old_worker, old_client = start_old(pc, dburl)
    new = pc("3.2")
    mig, facts["naive_migrate_s"] = timed(new, "migrate", "--noinput")
    assert mig.returncode == 0 and f"Applying {POST}... OK" in mig.stdout, ok(mig)
    time.sleep(3)  # what a 3.1 pod of a rollout would see for these 3 s
    old_client.stop()
    failures, tries = old_client.failures(), old_client.tries()
    facts["naive_old_defer_failures_in_3s"] = len(failures)
    assert failures, tries[-5:]
    after = tries[tries.index(failures[0]):]
    assert len(after) == len(failures), f"a 3.1 defer passed after the first failure: {after[:5]}"
    assert "procrastinate_defer_job_v1(" in failures[0] and "does not exist" in failures[0], failures[0]
    facts["naive_old_defer_error"] = failures[0][:failures[0].index("does not exist") + len("does not exist")]
    # its worker still runs what was deferred before: only deferring broke
    assert old_worker.poll() is None, output(old_worker)
    wait_for(lambda: set(statuses(dburl)) == {"succeeded"}, 30, "the jobs deferred before to run")


def test_schemacheck_exit_codes_and_fresh_install(pc: Callable[[str], App], tmp_path: Path, facts: dict) -> None:
    """3 behind, 0 at the pre-deploy revision and at head, 4 ahead, 5 unreachable. A fresh
    install's pre-deploy phase stops only before the newest release's `_post_` migration
    (0038), not before the first `_post_` of the plan (0033_post_cancel_notification, where
    3.2's worker could not run: no heartbeat functions, test_partial_schema_worker_refuses)."""
    old, new = pc("3.1"), pc("3.2")
    behind = new.run("schemacheck")
    assert behind.returncode == 3 and "38 pre-deploy migration(s) pending" in behind.stderr, ok(behind)
    pre, facts["premigrate_fresh_s"] = timed(new, "premigrate")
    assert pre.returncode == 0 and "Applying procrastinate.0035_post_add_heartbeat... OK" in pre.stdout, ok(pre)
    assert f"Applying {PRE}... OK" in pre.stdout and f"Applying {POST}" not in pre.stdout, ok(pre)
    assert f"left for `migrate` after the rollout: {POST}" in pre.stdout, ok(pre)
    again = new.run("premigrate")
    assert again.returncode == 0 and "No pre-deploy migrations to apply." in again.stdout, ok(again)
    check, facts["schemacheck_s"] = timed(new, "schemacheck")
    assert check.returncode == 0 and "pre-deploy revision" in check.stdout, ok(check)
    assert new.run("migrate", "--noinput").returncode == 0
    head = new.run("schemacheck")
    assert head.returncode == 0 and "head" in head.stdout, ok(head)
    ahead = old.run("schemacheck")
    assert ahead.returncode == 4 and f"{PRE}, {POST})" in ahead.stderr, ok(ahead)
    accepted = old.run("schemacheck", "--accept-ahead")
    assert accepted.returncode == 0 and "WARNING: schema ahead" in accepted.stdout, ok(accepted)
    down = App(old.project, "postgresql://postgres@127.0.0.1:1/none", tmp_path, VENVS["3.2"])
    gone, facts["schemacheck_unreachable_s"] = timed(down, "schemacheck")
    assert gone.returncode == 5 and "database unreachable" in gone.stderr, ok(gone)
