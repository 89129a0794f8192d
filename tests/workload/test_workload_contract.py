"""The expand/contract pair v2 -> v3 in two phases (pre- and post-deployment migrations),
against a real PostgreSQL: what each image's schema check says per phase, that v2 and v3 run
side by side between the phases, and that v2 breaks once the post-deploy phase ran."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import psycopg

from wl_harness import free_port
from workload import migrations


def revision(url: str) -> int:
    with psycopg.connect(url) as conn:
        return migrations.current_revision(conn)


def columns(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'jobs'").fetchall()
    return {r[0] for r in rows}


def http(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def web(spawn: Any, url: str, version: int, **env: Any) -> str:
    port = free_port()
    proc = spawn(url, "web", "--port", str(port), version=version, **env)
    proc.wait_event("listening", 30)
    return f"http://127.0.0.1:{port}"


def test_heads_and_pre_deploy_heads() -> None:
    assert [(v, migrations.pre_deploy_head(v), migrations.head(v)) for v in (1, 2, 3)] == [(1, 3, 3), (2, 4, 4), (3, 5, 6)]
    assert migrations.compatible_ahead(5, 4) and not migrations.compatible_ahead(6, 4)


def test_schema_check_contract_per_phase(dburl: str, cli: Any) -> None:
    """exit codes of `db check` for v2 and v3 at revision 4 (v2 deployed), 5 (pre-deploy phase
    of v3 applied) and 6 (post-deploy applied)."""
    seen: dict[int, tuple[int, int]] = {}
    assert cli(dburl, "migrate", version=2).returncode == 0
    seen[revision(dburl)] = (cli(dburl, "db", "check", version=2).returncode, cli(dburl, "db", "check", version=3).returncode)
    pre = cli(dburl, "migrate", "--skip-post-deployment", version=3)
    assert pre.returncode == 0 and '"event":"post_deploy_skipped"' in pre.stdout and '"revisions":[6]' in pre.stdout
    seen[revision(dburl)] = (cli(dburl, "db", "check", version=2).returncode, cli(dburl, "db", "check", version=3).returncode)
    assert "pre-deploy head" in cli(dburl, "db", "check", version=3).stdout
    # the env spelling (GitLab, Mastodon) does the same: nothing left to do
    again = cli(dburl, "migrate", version=3, SKIP_POST_DEPLOYMENT_MIGRATIONS="true")
    assert again.returncode == 0 and '"event":"migration_noop"' in again.stdout and revision(dburl) == 5
    assert cli(dburl, "migrate", version=3).returncode == 0
    seen[revision(dburl)] = (cli(dburl, "db", "check", version=2).returncode, cli(dburl, "db", "check", version=3).returncode)
    #          v2 check, v3 check: 0 ok, 3 behind, 4 ahead
    assert seen == {4: (0, 3), 5: (4, 0), 6: (4, 0)}
    assert "duration" not in columns(dburl) and "duration_seconds" in columns(dburl)


def test_v2_and_v3_side_by_side_between_the_phases(dburl: str, cli: Any, spawn: Any) -> None:
    """Between the phases v2 (accepting the expand-only revision 5) and v3 serve the same
    queue: jobs written by either run for their full duration on the other."""
    assert cli(dburl, "migrate", version=2).returncode == 0
    v2 = web(spawn, dburl, 2)
    status, old = http("POST", v2 + "/jobs", {"kind": "sleep", "duration": 1.5})
    assert status == 201
    assert cli(dburl, "migrate", "--skip-post-deployment", version=3).returncode == 0
    v2_after = web(spawn, dburl, 2, JOBHANDLERS_SCHEMA_ACCEPT_AHEAD="1")  # an old pod (re)starting
    v3 = web(spawn, dburl, 3)
    status, new = http("POST", v3 + "/jobs", {"kind": "sleep", "duration": 0.7})
    assert status == 201
    assert http("GET", f"{v2}/jobs/{new['id']}") == (200, http("GET", f"{v3}/jobs/{new['id']}")[1])
    assert http("GET", f"{v3}/jobs/{old['id']}")[1]["duration"] == 1.5  # backfilled by revision 5
    assert http("GET", f"{v2_after}/jobs/{new['id']}")[1]["duration"] == 0.7
    handler = spawn(dburl, "job", version=2, JOBHANDLERS_SCHEMA_ACCEPT_AHEAD="1")
    handler.wait_event("finished", 20, where=lambda e: e["job"] == old["id"])
    ran = {e["job"]: e["duration"] for e in handler.named("claimed")}
    assert ran == {old["id"]: 1.5, new["id"]: 0.7}


def test_post_deploy_phase_breaks_v2_and_not_v3(dburl: str, cli: Any, spawn: Any) -> None:
    """What the split protects against: once `duration` is dropped, a v2 pod's requests fail
    and v2 refuses to start even when it accepts an expand-only schema."""
    assert cli(dburl, "migrate", version=2).returncode == 0
    assert cli(dburl, "migrate", "--skip-post-deployment", version=3).returncode == 0
    v2, v3 = web(spawn, dburl, 2, JOBHANDLERS_SCHEMA_ACCEPT_AHEAD="1"), web(spawn, dburl, 3)
    status, job = http("POST", v2 + "/jobs", {"kind": "sleep", "duration": 0})
    assert status == 201 and http("GET", f"{v2}/jobs/{job['id']}")[0] == 200
    assert cli(dburl, "migrate", version=3).returncode == 0 and revision(dburl) == 6
    status, body = http("GET", f"{v2}/jobs/{job['id']}")
    assert status == 503 and "duration" in body["error"], body
    assert http("POST", v2 + "/jobs", {"kind": "sleep", "duration": 0})[0] == 503
    assert http("GET", f"{v3}/jobs/{job['id']}")[0] == 200
    assert http("POST", v3 + "/jobs", {"kind": "sleep", "duration": 0})[0] == 201
    late = spawn(dburl, "job", version=2, JOBHANDLERS_SCHEMA_ACCEPT_AHEAD="1")
    assert late.wait(30) == 4 and "refusing to start" in late.output()


def test_downgrade_from_the_post_deploy_revision_restores_the_column(dburl: str, cli: Any) -> None:
    """v2's `workload downgrade` undoes 6 and 5 with the SQL v3 stored: `duration` comes back
    with the values of `duration_seconds`."""
    assert cli(dburl, "migrate", version=2).returncode == 0
    assert cli(dburl, "submit", "--duration", "2.5", version=2).returncode == 0
    assert cli(dburl, "migrate", version=3).returncode == 0 and "duration" not in columns(dburl)
    down = cli(dburl, "downgrade", version=2)
    assert down.returncode == 0 and "6 -> 4" in down.stdout, down.stderr
    with psycopg.connect(dburl) as conn:
        assert conn.execute("SELECT duration, duration_seconds FROM jobs").fetchall() == [(2.5, 2.5)]
    assert cli(dburl, "db", "check", version=2).returncode == 0
