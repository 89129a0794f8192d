"""Roles: the schema gate at startup, the web API, the workflow handler."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from typing import Any

import psycopg
import pytest

from wl_harness import free_port, wait_for
from workload import migrations


@pytest.mark.parametrize("role", ["job", "workflow", "web"])
@pytest.mark.parametrize("case,code", [("behind", 3), ("ahead", 4)])
def test_roles_refuse_another_schema_revision(dburl: str, spawn: Any, tmp_path: Any, role: str, case: str,
                                              code: int) -> None:
    migrations.migrate(dburl, 2 if case == "behind" else 4)
    args = [role] + (["--port", str(free_port())] if role == "web" else [])
    state = tmp_path / "st"
    proc = spawn(dburl, *args, version=1, state=state)
    assert proc.wait(30) == code
    out = proc.output()
    assert "refusing to start" in out and case in out, out
    assert proc.named("schema_mismatch") and proc.named("exit")[0]["exit_code"] == code
    assert not (state / "heartbeat").exists(), "a refusing role must never look alive"
    assert "Traceback" not in out


def test_roles_refuse_an_unreachable_database(spawn: Any) -> None:
    proc = spawn(f"postgresql://postgres@127.0.0.1:{free_port()}/x", "job")
    assert proc.wait(30) == 5
    assert "refusing to start: database unreachable" in proc.output()


def _http(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_web_api_submits_reads_and_counts_jobs(migrated: str, spawn: Any) -> None:
    port = free_port()
    web = spawn(migrated, "web", "--port", str(port))
    web.wait_event("listening")
    base = f"http://127.0.0.1:{port}"
    assert _http("GET", base + "/healthz")[0] == 200
    status, body = _http("POST", base + "/jobs", {"kind": "sleep", "duration": 0.1})
    assert status == 201 and isinstance(body["id"], int)
    status, job = _http("GET", f"{base}/jobs/{body['id']}")
    assert status == 200 and job["state"] == "queued" and job["kind"] == "sleep"
    assert _http("POST", base + "/jobs?kind=cpu&duration=0.2")[0] == 201
    assert _http("POST", base + "/jobs", {"kind": "nope"}) == (400, {"error": "unknown job kind 'nope'; use one of "
                                                                              "sleep, cpu, blocking, fail"})
    assert _http("GET", base + "/counts") == (200, {"queued": 2, "running": 0, "done": 0, "failed": 0})
    assert _http("GET", base + "/jobs/999")[0] == 404
    status, wf = _http("POST", base + "/workflows", {"steps": 2, "duration": 0})
    assert status == 201 and _http("GET", f"{base}/workflows/{wf['id']}")[1]["state"] == "new"
    state = web.log_path.parent / "state0"
    wait_for(lambda: (state / "heartbeat").exists(), 10, "the web heartbeat")
    web.signal(signal.SIGTERM)
    assert web.wait(10) == 0
    assert (state / "stopping").exists()
    names = [e["event"] for e in web.events()]
    assert names.index("draining") < names.index("drained") < names.index("exit") == len(names) - 1


def test_web_priority_needs_the_v2_schema(dburl: str, spawn: Any) -> None:
    migrations.migrate(dburl, 4)
    port = free_port()
    web = spawn(dburl, "web", "--port", str(port), version=2)
    web.wait_event("listening")
    status, body = _http("POST", f"http://127.0.0.1:{port}/jobs", {"kind": "sleep", "priority": 5})
    assert status == 201
    with psycopg.connect(dburl) as conn:
        assert conn.execute("SELECT priority FROM jobs WHERE id = %s", (body["id"],)).fetchone() == (5,)


def test_workflow_handler_chains_steps_into_jobs(migrated: str, spawn: Any, cli: Any) -> None:
    with psycopg.connect(migrated) as conn:
        wid = conn.execute("INSERT INTO workflows (steps, step_kind, step_duration) VALUES (3, 'sleep', 0.2) "
                           "RETURNING id").fetchone()[0]
        failing = conn.execute("INSERT INTO workflows (steps, step_kind, step_duration) VALUES (2, 'fail', 0) "
                               "RETURNING id").fetchone()[0]
    flow = spawn(migrated, "workflow")
    jobs = spawn(migrated, "job")

    def states() -> dict[int, str]:
        with psycopg.connect(migrated) as conn:
            return dict(conn.execute("SELECT id, state FROM workflows").fetchall())

    wait_for(lambda: states() == {wid: "done", failing: "failed"}, 30, "both workflows to end")
    with psycopg.connect(migrated) as conn:
        steps = conn.execute("SELECT step, state, created_at, finished_at FROM jobs WHERE workflow_id = %s "
                             "ORDER BY step", (wid,)).fetchall()
        failed_steps = conn.execute("SELECT step, state FROM jobs WHERE workflow_id = %s", (failing,)).fetchall()
    assert [(s[0], s[1]) for s in steps] == [(1, "done"), (2, "done"), (3, "done")]
    for prev, nxt in zip(steps, steps[1:]):
        assert nxt[2] >= prev[3], "a step is queued only after the previous one finished"
    assert failed_steps == [(1, "failed")], "a failed step ends the workflow"
    for proc in (flow, jobs):
        proc.signal(signal.SIGTERM)
        assert proc.wait(10) == 0
