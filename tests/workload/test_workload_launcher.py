"""Launcher mode (WORKLOAD_LAUNCH=job) against a fake batch/v1 API server whose "pods" are real
`workload run-job` processes on the real PostgreSQL: every job runs once, as one Kubernetes
Job named after its id; SIGTERM leaves the Jobs running and the next handler adopts and
collects them; a Job that ended without recording or vanished fails its job."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import psycopg
import pytest

from fake_kube import FakeKube
from wl_harness import wait_for, workload_env
from workload import queue
from workload.jobspec import LaunchSettings, job_manifest

NS = "jobs"
PREFIX = "t"


def submit(url: str, duration: float, n: int = 1, kind: str = "sleep") -> list[int]:
    with psycopg.connect(url) as conn:
        return [conn.execute("INSERT INTO jobs (kind, duration) VALUES (%s, %s) RETURNING id",
                             (kind, duration)).fetchone()[0] for _ in range(n)]


def rows(url: str, ids: list[int]) -> dict[int, tuple[str, int, str | None, str | None]]:
    """id -> (state, attempts, finished_by, error)."""
    with psycopg.connect(url) as conn:
        got = conn.execute("SELECT id, state, attempts, finished_by, error FROM jobs WHERE id = ANY(%s)",
                           (ids,)).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in got}


def outcomes(url: str, ids: list[int]) -> dict[int, list[str | None]]:
    with psycopg.connect(url) as conn:
        got = conn.execute("SELECT job_id, outcome FROM job_attempts WHERE job_id = ANY(%s) ORDER BY job_id, attempt",
                           (ids,)).fetchall()
    out: dict[int, list[str | None]] = {}
    for job_id, outcome in got:
        out.setdefault(job_id, []).append(outcome)
    return out


def all_state(url: str, ids: list[int], state: str) -> bool:
    return all(r[0] == state for r in rows(url, ids).values())


@pytest.fixture
def kube(migrated: str, tmp_path: Path) -> Iterator[tuple[FakeKube, dict[str, str]]]:
    """The fake API server and the launcher's extra environment."""
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t0ken\n")
    (sa / "namespace").write_text(NS)
    pod_env = workload_env(migrated, tmp_path / "pod-state")
    pod_env.pop("DATABASE_URL")
    logs = tmp_path / "pods"
    logs.mkdir()
    fake = FakeKube({"db": {"url": migrated}}, pod_env, logs)
    url = fake.start()
    env = {"WORKLOAD_LAUNCH": "job", "WORKLOAD_KUBE_API_URL": url, "WORKLOAD_KUBE_SA_DIR": str(sa),
           "WORKLOAD_LAUNCH_IMAGE": "jobhandlers/workload:1", "WORKLOAD_LAUNCH_DB_SECRET": "db",
           "WORKLOAD_LAUNCH_DB_SECRET_KEY": "url", "WORKLOAD_LAUNCH_PREFIX": PREFIX,
           "WORKLOAD_LAUNCH_SYNC_SECONDS": "0.2", "WORKLOAD_CONCURRENCY": "4"}
    yield fake, env
    fake.stop()


def name(job_id: int) -> str:
    return f"{PREFIX}-job-{job_id}"


def test_each_job_runs_once_as_one_kubernetes_job(migrated: str, spawn: Callable[..., Any], kube: Any) -> None:
    fake, env = kube
    ids = submit(migrated, 0.3, 6)
    h = spawn(migrated, "job", **env)
    wait_for(lambda: all_state(migrated, ids, "done"), 40, "6 jobs done")
    h.wait_event("collected", count=6, timeout=10)
    [failing] = submit(migrated, 0.1, kind="fail")
    wait_for(lambda: all_state(migrated, [failing], "failed"), 20, "the failing job failed")
    bad = h.wait_event("collected", where=lambda e: e["job"] == failing)[0]
    assert (bad["job_phase"], bad["state"], bad["failed_by_launcher"]) == ("failed", "failed", None), \
        "run-job recorded the failure itself (exit 1: the Job failed)"
    assert outcomes(migrated, [failing]) == {failing: ["failed"]}
    ids.append(failing)
    assert fake.creates == {name(i): 1 for i in ids} and not fake.conflicts
    assert sorted(fake.deletes) == sorted((name(i), "Background") for i in ids), "collected Jobs are deleted"
    assert outcomes(migrated, ids[:6]) == {i: ["done"] for i in ids[:6]}
    assert {r[1] for r in rows(migrated, ids).values()} == {1}
    assert {r[2] for r in rows(migrated, ids).values()} == {"job-pod"}, "completion recorded by the Job's pod"
    assert len(h.named("launched")) == 7 and not h.named("adopted")
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_sigterm_leaves_jobs_running_and_the_next_handler_adopts_them(migrated: str, spawn: Callable[..., Any],
                                                                      kube: Any, tmp_path: Path) -> None:
    fake, env = kube
    ids = submit(migrated, 3.0, 3)
    a = spawn(migrated, "job", **env)
    a.wait_event("launched", count=3)
    wait_for(lambda: fake.running() == 3, 10, "3 job pods running")
    a.signal(signal.SIGTERM)
    assert a.wait(10) == 0
    draining, exit_ev = a.named("draining")[0], a.named("exit")[0]
    assert draining["in_flight"] == 0 and exit_ev["ts"] - draining["ts"] < 1.0, "no wait for launched Jobs"
    assert fake.running() == 3, "the Jobs outlive their handler"
    # the projected token is rotated meanwhile: the next handler reads the new one
    fake.token = "t1ken"
    (Path(env["WORKLOAD_KUBE_SA_DIR"]) / "token").write_text("t1ken\n")
    b = spawn(migrated, "job", **env)
    adopted = b.wait_event("adopted", count=3)
    assert {e["job"] for e in adopted} == set(ids) and {e["reason"] for e in adopted} == {"found at sync"}
    wait_for(lambda: all_state(migrated, ids, "done"), 20, "the adopted jobs done")
    collected = b.wait_event("collected", count=3)
    assert {e["adopted"] for e in collected} == {False}, "watched while running, then collected"
    assert fake.creates == {name(i): 1 for i in ids}
    assert outcomes(migrated, ids) == {i: ["done"] for i in ids}
    b.signal(signal.SIGTERM)
    assert b.wait(10) == 0


def test_jobs_that_finished_while_no_handler_ran_are_collected(migrated: str, spawn: Callable[..., Any],
                                                                kube: Any) -> None:
    fake, env = kube
    ids = submit(migrated, 0.5, 2)
    a = spawn(migrated, "job", **env)
    a.wait_event("launched", count=2)
    a.signal(signal.SIGKILL)
    a.wait(5)
    wait_for(lambda: all_state(migrated, ids, "done"), 20, "the jobs done with no handler running")
    assert len(fake.jobs) == 2 and not fake.deletes, "nobody collected them yet"
    b = spawn(migrated, "job", **env)
    collected = b.wait_event("collected", count=2)
    assert {(e["job"], e["job_phase"], e["state"], e["adopted"]) for e in collected} == \
        {(i, "complete", "done", True) for i in ids}
    assert not fake.jobs and fake.creates == {name(i): 1 for i in ids}
    b.signal(signal.SIGTERM)
    assert b.wait(10) == 0


def test_a_kill_between_create_and_hand_over_is_adopted_not_rerun(migrated: str, spawn: Callable[..., Any],
                                                                   kube: Any) -> None:
    """Galaxy's hole (galaxy#6246): the handler created the Job and died before it recorded it.
    Here the Job exists and the job is still leased to the dead handler: the next handler
    hands it over at its first sync (j1), or, when its list missed the Job, gets AlreadyExists
    on create once the lease expired and adopts (j2). One Job, one run, each."""
    fake, env = kube
    fake.run_pods = False
    j1, j2 = submit(migrated, 0.3, 2)
    ls = LaunchSettings.from_env(env, 1, NS)
    with psycopg.connect(migrated, autocommit=True) as conn:
        c1 = queue.claim(conn, "dead", 1, 600)[0]
        c2 = queue.claim(conn, "dead", 1, 0.5)[0]
    for c in (c1, c2):
        assert fake.create(NS, job_manifest(ls, c.id, c.attempt, c.duration, "dead"))[0] == 201
    fake.hidden.add(name(j2))
    time.sleep(0.6)  # c2's lease is over
    h = spawn(migrated, "job", **env)
    first = h.wait_event("adopted", where=lambda e: e["job"] == j1)[0]
    assert first["reason"] == "found at sync" and first["handed_over"] is True
    second = h.wait_event("adopted", where=lambda e: e["job"] == j2)[0]
    assert second["reason"] == "already exists" and second["attempt"] == 2
    fake.hidden.clear()
    fake.run_pods = True
    wait_for(lambda: all_state(migrated, [j1, j2], "done"), 20, "both jobs done")
    assert fake.creates == {name(j1): 1, name(j2): 1} and fake.conflicts == {name(j2): 1}
    assert outcomes(migrated, [j1, j2]) == {j1: ["done"], j2: [None, "done"]}, "one run each"
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_a_job_that_failed_or_vanished_fails_its_job(migrated: str, spawn: Callable[..., Any], kube: Any) -> None:
    fake, env = kube
    deadline, vanished = submit(migrated, 30.0, 2)
    h = spawn(migrated, "job", **env)
    h.wait_event("launched", count=2)
    wait_for(lambda: fake.running() == 2, 10, "2 job pods running")
    fake.fail_job(name(deadline), "DeadlineExceeded", NS)
    with fake.lock:  # someone deletes the Job (and its pod) behind the launcher's back
        fake.jobs.pop((NS, name(vanished)))
        fake.procs.pop((NS, name(vanished))).kill()
    lost = h.wait_event("job_lost")[0]
    assert lost["job"] == vanished and lost["outcome"] == "failed"
    got = h.wait_event("collected", where=lambda e: e["job"] == deadline)[0]
    assert got["failed_by_launcher"] == "failed" and got["state"] == "failed"
    r = rows(migrated, [deadline, vanished])
    assert r[deadline][0] == "failed" and "DeadlineExceeded" in (r[deadline][3] or "")
    assert r[vanished][0] == "failed" and "disappeared" in (r[vanished][3] or "")
    assert fake.creates == {name(deadline): 1, name(vanished): 1}, "failed, not relaunched"
    h.signal(signal.SIGTERM)
    assert h.wait(10) == 0


def test_run_job_is_fenced_and_the_manifest_is_restricted(migrated: str, cli: Callable[..., Any]) -> None:
    [jid] = submit(migrated, 0.0)
    res = cli(migrated, "run-job", str(jid), WORKLOAD_LAUNCH_JOB_NAME=name(jid))
    assert res.returncode == 0 and "run_skipped" in res.stdout, "a queued job is not the Job's to run"
    assert rows(migrated, [jid])[jid][:2] == ("queued", 0)
    env = {"WORKLOAD_LAUNCH_IMAGE": "img:1", "WORKLOAD_LAUNCH_DB_SECRET": "s", "WORKLOAD_LAUNCH_PREFIX": "p"}
    m = job_manifest(LaunchSettings.from_env(env, 3, "ns"), 42, 1, 20.5, "h:1")
    spec, pod = m["spec"], m["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert m["metadata"]["name"] == "p-job-42" and m["metadata"]["namespace"] == "ns"
    assert m["metadata"]["labels"]["workload.jobhandlers.io/job-id"] == "42"
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 21 + 120
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
                                    "seccompProfile": {"type": "RuntimeDefault"}}
    assert c["command"] == ["workload", "run-job", "42"]
    assert {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "s", "key": "DATABASE_URL"}}} in c["env"]
    assert {"name": "WORKLOAD_VERSION", "value": "3"} in c["env"]


def test_launcher_configuration_errors_exit_2(migrated: str, cli: Callable[..., Any], kube: Any) -> None:
    _fake, env = kube
    res = cli(migrated, "job", **{**env, "WORKLOAD_LAUNCH_IMAGE": ""})
    assert res.returncode == 2 and "WORKLOAD_LAUNCH_IMAGE is not set" in res.stderr
    res = cli(migrated, "job", **{**env, "WORKLOAD_KUBE_SA_DIR": "/nonexistent"})
    assert res.returncode == 2 and "no API token at /nonexistent/token" in res.stderr
    res = cli(migrated, "job", "--launch", "job", **{**env, "WORKLOAD_LAUNCH": "", "WORKLOAD_LAUNCH_IMAGE": ""})
    assert res.returncode == 2 and "WORKLOAD_LAUNCH_IMAGE is not set" in res.stderr, "--launch job = WORKLOAD_LAUNCH=job"
    res = cli(migrated, "job", **{**env, "WORKLOAD_LAUNCH": "pods"})
    assert res.returncode == 2 and "WORKLOAD_LAUNCH='pods'" in res.stderr
    res = cli(migrated, "job", **{**env, "WORKLOAD_LAUNCH_PREFIX": "Bad_Prefix"})
    assert res.returncode == 2 and "WORKLOAD_LAUNCH_PREFIX" in res.stderr
