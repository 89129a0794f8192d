"""Galaxy 26.1.2, unmodified, against a real PostgreSQL: our wrappers' exit codes (jhgalaxy
migrate / schema-check / schema-wait), the seed failure (a handler on an outdated schema dies
with Galaxy's own OutdatedDatabaseError), and what a job handler does with a job in flight
on SIGTERM and on restart under the same / another server name. `make test-galaxy`."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from typing import Any

import pytest

from gxapp import HERE, VENV, Galaxy, output, query, wait_for

CONFIG = str(HERE / "config" / "galaxy.yml")
KILLED_INFO = "This job was killed when Galaxy was restarted"


def started(proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"exited {proc.returncode}:\n{output(proc)[-3000:]}")
    return "is running" in output(proc)


def test_schema_check_exit_codes_and_migrate(galaxy: Galaxy, dburl: str, facts: dict[str, Any]) -> None:
    """empty -> 3; two concurrent migrates from empty -> both 0, schema at head (0);
    unreachable -> 5; a revision unknown to this Galaxy (a newer one's) -> 4."""
    empty = galaxy.jh("schema-check")
    assert empty.returncode == 3, empty.stderr[-2000:]
    assert "gxy: no revision in the database" in empty.stderr
    empty_heads = str(galaxy.workdir / "empty-heads.json")
    assert galaxy.jh("heads", empty_heads).returncode == 0
    empty_fast = galaxy.jh("schema-check", env={"JHGALAXY_HEADS": empty_heads})  # no table: Galaxy decides
    assert empty_fast.returncode == 3 and "gxy: no revision in the database" in empty_fast.stderr, empty_fast.stderr

    t0 = time.monotonic()
    runs = [subprocess.Popen([str(VENV / "bin" / "python"), str(HERE / "jhgalaxy.py"), "migrate"],
                             env=galaxy.env(), cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in runs]
    facts["migrate_two_concurrent_from_empty_s"] = round(time.monotonic() - t0, 1)
    assert [p.returncode for p in runs] == [0, 0], "\n".join(o[-2000:] for o in outs)
    waited = [float(m) for o in outs for m in re.findall(r"waited ([0-9.]+)s for the lock", o)]
    # the second one waited for the first (from empty: 0.9 s on an idle machine, 58 s at load 10)
    assert len(waited) == 2 and max(waited) > 0.2, outs

    t0 = time.monotonic()
    head = galaxy.jh("schema-check")
    facts["schema_check_at_head_s"] = round(time.monotonic() - t0, 1)
    assert head.returncode == 0, head.stderr[-2000:]
    assert re.search(r"gxy: at head \w+; tsi: at head \w+", head.stdout), head.stdout

    wait = galaxy.jh("schema-wait", "5")
    assert wait.returncode == 0 and "try 1" in wait.stdout, wait.stdout + wait.stderr[-1000:]

    # the fast path (the image's build writes the heads): at head without Galaxy's import, the
    # same heads as Galaxy's own check; db-ping with psycopg alone
    heads_file = str(galaxy.workdir / "schema-heads.json")
    written = galaxy.jh("heads", heads_file)
    assert written.returncode == 0, written.stderr[-2000:]
    fast = {"JHGALAXY_HEADS": heads_file}
    quick = galaxy.jh("schema-check", env=fast)
    assert quick.returncode == 0 and "(the heads of this image's build)" in quick.stdout, quick.stdout
    assert quick.stdout.split(" (the heads")[0] == head.stdout.strip(), (quick.stdout, head.stdout)
    quick_wait = galaxy.jh("schema-wait", "5", env=fast)
    assert quick_wait.returncode == 0 and "(the heads of this image's build)" in quick_wait.stdout, quick_wait.stdout
    assert galaxy.jh("db-ping").returncode == 0

    dead = galaxy.jh("schema-check", env={"DATABASE_URL": re.sub(r":\d+/", ":1/", dburl)})
    assert dead.returncode == 5, dead.stderr[-2000:]
    assert "database unreachable" in dead.stderr
    dead_fast = galaxy.jh("schema-check", env={**fast, "DATABASE_URL": re.sub(r":\d+/", ":1/", dburl)})
    assert dead_fast.returncode == 5, dead_fast.stderr[-2000:]
    dead_ping = galaxy.jh("db-ping", env={"DATABASE_URL": re.sub(r":\d+/", ":1/", dburl)})
    assert dead_ping.returncode == 5 and "database unreachable" in dead_ping.stderr, dead_ping.stderr[-2000:]

    gxy_head = query(dburl, "SELECT version_num FROM alembic_version ORDER BY version_num")
    assert len(gxy_head) == 2, gxy_head  # one row per branch: gxy and tsi
    gxy_rev = re.search(r"gxy: at head (\w+)", head.stdout).group(1)  # type: ignore[union-attr]
    query(dburl, "UPDATE alembic_version SET version_num = 'ffffffffffff' WHERE version_num = %s", gxy_rev)
    ahead = galaxy.jh("schema-check")
    assert ahead.returncode == 4, ahead.stderr[-2000:]
    assert "unknown to this Galaxy" in ahead.stderr
    ahead_fast = galaxy.jh("schema-check", env=fast)  # not the heads: Galaxy decides, as above
    assert (ahead_fast.returncode, ahead_fast.stderr) == (4, ahead.stderr), ahead_fast.stderr[-2000:]
    accepted = galaxy.jh("schema-wait", "5", env={"JOBHANDLERS_SCHEMA_ACCEPT_AHEAD": "1"})
    assert accepted.returncode == 0, accepted.stderr[-1000:]


def test_schema_wait_times_out_behind_in_one_process(galaxy: Galaxy, facts: dict[str, Any]) -> None:
    t0 = time.monotonic()
    r = galaxy.jh("schema-wait", "6", env={"JHGALAXY_WAIT_INTERVAL": "1"})
    facts["schema_wait_6s_timeout_total_s"] = round(time.monotonic() - t0, 1)
    assert r.returncode == 3, r.stderr[-2000:]
    tries = re.findall(r"try (\d+) after", r.stderr)
    assert len(tries) >= 3 and "TIMEOUT" in r.stderr, r.stderr[-2000:]  # polled, one import


@pytest.mark.timeout(1200)
def test_handler_on_outdated_schema_dies_then_migrate_upgrades(galaxy: Galaxy, facts: dict[str, Any]) -> None:
    """The seed failure: Galaxy's own OutdatedDatabaseError, exit 1 (gating exists for this)."""
    assert galaxy.jh("migrate").returncode == 0
    down = galaxy.jh("exec", "galaxy-manage-db", "--galaxy-config", CONFIG, "downgrade", "gxy@-1")
    assert down.returncode == 0, down.stderr[-2000:]
    behind = galaxy.jh("schema-check")
    assert behind.returncode == 3 and "behind head" in behind.stderr, behind.stderr[-2000:]

    t0 = time.monotonic()
    h = galaxy.handler("handler_0")
    rc = h.wait(timeout=600)
    facts["handler_on_outdated_schema_exit_s"] = round(time.monotonic() - t0, 1)
    assert rc == 1, output(h)[-3000:]
    assert "OutdatedDatabaseError" in output(h)

    up = galaxy.jh("migrate")
    assert up.returncode == 0 and "gxy: at head" in up.stdout, up.stdout + up.stderr[-2000:]


@pytest.mark.timeout(1800)
def test_handler_identity_decides_what_happens_to_a_job_in_flight(galaxy: Galaxy, dburl: str,
                                                                   facts: dict[str, Any]) -> None:
    """SIGTERM: the local runner waits monitor_thread_join_timeout (30 s), kills the job, the row
    stays `running` with handler=handler_0. Another server name never touches it (#105); the
    same name, restarted, recovers it the only way the local runner can: state `error`."""
    assert galaxy.jh("migrate").returncode == 0
    web = galaxy.web()
    h0 = galaxy.handler("handler_0")
    t0 = time.monotonic()
    wait_for(lambda: started(h0), 600, "handler_0 to start")
    facts["handler_start_s"] = round(time.monotonic() - t0, 1)

    def web_up() -> bool:
        if web.poll() is not None:
            raise AssertionError(output(web)[-3000:])
        try:
            return galaxy.api("GET", "/api/version")["version_major"] == "26.1"
        except OSError:
            return False

    wait_for(web_up, 600, "web /api/version")
    facts["web_ready_s"] = round(time.monotonic() - t0, 1)

    user = galaxy.api("POST", "/api/users", body={"username": "jh", "email": "jh@example.org",
                                                   "password": "jobhandlers1"})
    key = galaxy.api("POST", f"/api/users/{user['id']}/api_key")
    hist = galaxy.api("POST", "/api/histories", key, {"name": "jh"})
    run = galaxy.api("POST", "/api/tools", key, {"tool_id": "jh_sleep", "history_id": hist["id"],
                                                 "inputs": {"seconds": 40}})
    assert len(run["jobs"]) == 1

    def job() -> tuple[Any, ...]:
        return query(dburl, "SELECT id, state, handler, info FROM job")[0]

    wait_for(lambda: job()[1] == "running", 120, "the sleep job to run")
    assert job()[2] == "handler_0"
    beat = galaxy.state / "heartbeat_handler_0.log"
    assert beat.is_file() and beat.stat().st_size > 0

    time.sleep(3)
    t0 = time.monotonic()
    h0.send_signal(signal.SIGTERM)
    rc = h0.wait(timeout=300)
    facts["handler_sigterm_to_exit_with_job_s"] = round(time.monotonic() - t0, 1)
    assert rc is not None
    assert 25 < facts["handler_sigterm_to_exit_with_job_s"] < 40 + 15, output(h0)[-2000:]
    assert "killed with signal 15" in output(h0)
    assert job()[1:3] == ("running", "handler_0")  # left behind by the handler that ran it

    h1 = galaxy.handler("handler_1")
    wait_for(lambda: started(h1), 600, "handler_1 to start")
    time.sleep(15)
    assert job()[1:3] == ("running", "handler_0"), "another server name must not touch handler_0's job"
    h1.send_signal(signal.SIGTERM)
    h1.wait(timeout=120)

    h0b = galaxy.handler("handler_0")
    t0 = time.monotonic()
    wait_for(lambda: job()[1] != "running", 600, "handler_0 (restarted) to recover its job")
    facts["same_name_restart_to_job_recovered_s"] = round(time.monotonic() - t0, 1)
    state, handler, info = job()[1:]
    assert (state, handler) == ("error", "handler_0") and KILLED_INFO in (info or ""), (state, info)
    assert "recovering job" in output(h0b)
