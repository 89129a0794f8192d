"""The generated live suites (issue 34): `jobhandlers gen-tests --live` writes a suite for a
values file and its job description, and that suite runs here as a user would run it
(`pytest DIR` with KUBECONFIG), in a scratch namespace of its own: the tool and the suite's
pytest come from a fresh venv with the wheel of this checkout and its `live` extra
(jhkind.wheel, one per module and worker), not from the repository's venv.

24a: the reference workload (values-examples/minimal.yaml, values-examples/jobs/minimal.yaml,
jobs capped at 30 s, `--from` the released 0.2.0 chart): every generated test passes, the
upgrade from 0.2.0 with jobs in flight among them (it replaced hand-written 25a: the same
jobs-in-flight, migration-once and restart checks; what the upgrade re-creates and rolls is
held by tests/apiserver/test_apiserver_upgrade.py for every example and live by 25d). 24b, the negative control: the same app
with maxJobRuntimeSeconds below its jobs' length must fail its rollout test, naming the
killed job and saying the grace was too short. The values differ from the examples only in
the database (the scenarios' PostgreSQL)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from jhkind import postgres as pg_mod
from jhkind import released, wheel
from jhkind.helm import ROOT, deep_merge, write_values
from jhkind.progress import Progress, recorded

pytestmark = [pytest.mark.kind, pytest.mark.timeout(1500)]

EXAMPLES = ROOT / "values-examples"
MINIMAL = EXAMPLES / "minimal.yaml"
JOBS = EXAMPLES / "jobs" / "minimal.yaml"
NEGATIVE_JOB_S = 120
ALL_TESTS = {"install", "rollout", "eviction", "waiting", "uninstall"}
FROM = "0.2.0"  # 24a's --from: the release before the last, whose chart rolls every role on upgrade


@pytest.fixture
def p(request: pytest.FixtureRequest, scenario_summary: dict) -> Iterator[Progress]:
    """This test's Progress, recorded in bench-results/kind-scenarios.json (seconds, phases,
    facts, lane) as the scenarios with a namespace of their own are."""
    progress = Progress(request.node.name.removeprefix("test_")[:3])
    with recorded(scenario_summary, request.node.name, progress, request.node):
        yield progress


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of the user's venv: jobhandlers[live] from the wheel (build + uv: ~20 s)."""
    return wheel.user_venv(tmp_path_factory.mktemp("user-venv"))


def _suite(tool: Path, tmp_path: Path, postgres: pg_mod.Postgres, overrides: dict, jobs: Path, cap: int | None,
           example: Path = MINIMAL, extra: tuple[str, ...] = ()) -> Path:
    """A database, the values (the example with the database and `overrides`), and the
    generated suite in tmp_path/live."""
    name = f"live_{secrets.token_hex(3)}"
    password = secrets.token_hex(12)
    postgres.create_database(name, password)
    values = deep_merge(yaml.safe_load(example.read_text()), {"database": {
        "host": postgres.host, "port": 5432, "name": name, "user": name, "password": password}}, overrides)
    vfile = write_values(tmp_path / "values.yaml", values)
    out = tmp_path / "live"
    args = [str(tool / "jobhandlers"), "gen-tests", "--live", str(vfile), str(jobs), "--out", str(out)]
    gen = subprocess.run(args + (["--max-job-seconds", str(cap)] if cap else []) + list(extra), capture_output=True, text=True,
                         timeout=120, check=False)
    assert gen.returncode == 0, gen.stdout + gen.stderr
    return out


def _run(tool: Path, out: Path, kubeconfig: str, p: Progress, *select: str) -> tuple[int, str, dict]:
    """pytest on the generated suite, as a user runs it (the user venv's pytest); (exit code,
    output, its JSON report)."""
    report = out / "live-results.json"
    # a user's shell: helm on PATH (the repository's, built by make tools), nothing of this venv
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "JOBHANDLERS_HELM")} | {
        "KUBECONFIG": kubeconfig, "PATH": f"{ROOT / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    t0 = time.monotonic()
    proc = subprocess.run([str(tool / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider", "--live-report", str(report),
                           *select, str(out)], cwd=out, env=env, capture_output=True, text=True, timeout=1400,
                          check=False)
    p.fact("generated_suite_seconds", round(time.monotonic() - t0, 1))
    print(proc.stdout[-6000:], proc.stderr[-2000:])
    doc = json.loads(report.read_text()) if report.is_file() else {}
    for test, row in doc.get("tests", {}).items():
        p.fact(f"live_{test}", row)
    return proc.returncode, proc.stdout + proc.stderr, doc


def test_24a_generated_live_workload(p: Progress, tool: Path, kind_kubeconfig: str, postgres: pg_mod.Postgres, tmp_path: Path) -> None:
    """The reference workload's generated suite passes on kind: install, rollout, eviction,
    waiting pod, uninstall, and the upgrade from the released 0.2.0 chart (`--from`) with jobs
    in flight: every job done once, the migration Job of the upgrade ran once, every handler
    pod rolled and exited before its grace."""
    old_chart = released.chart(FROM, tmp_path / f"release-{FROM}")
    out = _suite(tool, tmp_path, postgres, {}, JOBS, cap=30, extra=("--from", str(old_chart)))
    with p.phase(f"the generated live suite, with the upgrade from {FROM}"):
        rc, text, doc = _run(tool, out, kind_kubeconfig, p)
    assert rc == 0, text[-5000:]
    _passed(doc, ALL_TESTS | {"upgrade"})
    up = doc["tests"]["upgrade"]
    assert up["pods_rolled"] > 0 and up["migration_job_of_the_upgrade"] is True, up


def _passed(doc: dict, tests: set[str] = ALL_TESTS) -> None:
    assert set(doc["tests"]) == tests, doc
    assert all(row.get("passed") for row in doc["tests"].values()), doc
    for test in {"rollout", "eviction", "upgrade"} & tests:
        assert doc["tests"][test]["jobs_done_once"] == doc["tests"][test]["jobs"] > 0, doc


def test_24c_generated_live_procrastinate(p: Progress, tool: Path, kind_kubeconfig: str, postgres: pg_mod.Postgres, tmp_path: Path) -> None:
    """procrastinate (values-examples/procrastinate.yaml, its job description, jobs of 30 s):
    the generated suite passes. Its description submits in the Job form (a Kubernetes Job from
    the job role's pod template runs Task.defer(), no exec API): every submit ran as a Job."""
    out = _suite(tool, tmp_path, postgres, {}, EXAMPLES / "jobs" / "procrastinate.yaml", cap=30,
                 example=EXAMPLES / "procrastinate.yaml")
    with p.phase("the generated live suite"):
        rc, text, doc = _run(tool, out, kind_kubeconfig, p)
    assert rc == 0, text[-5000:]
    _passed(doc)
    as_jobs = doc["tests"]["rollout"]["commands_run_as_jobs"]
    assert as_jobs >= doc["tests"]["rollout"]["jobs"] > 0, doc
    p.fact("commands_run_as_jobs_by_rollout", as_jobs)


def test_24b_generated_live_negative_control(p: Progress, tool: Path, kind_kubeconfig: str, postgres: pg_mod.Postgres, tmp_path: Path) -> None:
    """maxJobRuntimeSeconds 5 with jobs of 120 s: the rollout test fails, names the job and
    says the grace was too short. (The jobs are long enough that most of their length is
    left when the old pods begin to stop: `helm upgrade` runs the migration hook and waits
    for the surge pods first, 30-40 s here.)"""
    desc = yaml.safe_load(JOBS.read_text())
    desc["roles"]["job"]["jobSeconds"] = NEGATIVE_JOB_S
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(yaml.safe_dump(desc))
    out = _suite(tool, tmp_path, postgres, {"handlers": {"job": {"maxJobRuntimeSeconds": 5}}}, jobs, cap=None)
    with p.phase("the generated live suite: install and rollout"):
        rc, text, doc = _run(tool, out, kind_kubeconfig, p, "-k", "test_install or test_rollout")
    assert rc == 1, text[-5000:]
    assert doc["tests"]["install"]["passed"] is True, doc
    assert doc["tests"]["rollout"]["passed"] is False, doc
    m = re.search(rf"job (\d+) \(role job, {NEGATIVE_JOB_S} s\) ended \w+ .*?was too short for it", text)
    assert m, text[-5000:]
    p.fact("negative_control_message", m.group(0)[:600])


def test_24d_generated_live_celery(p: Progress, tool: Path, kube, kind_kubeconfig: str, postgres: pg_mod.Postgres, tmp_path: Path) -> None:
    """Celery on RabbitMQ (values-examples/django-celery.yaml, its job description, jobs of
    30 s; the broker in a namespace of its own, as scenario 18's in theirs): the generated
    suite passes."""
    from jhkind import celery as ce
    from jhkind.cluster import RESTRICTED_LABELS, pod_ready
    from jhkind.waits import wait_until

    broker_ns = f"jh-live-broker-{secrets.token_hex(2)}"
    kube.create_namespace(broker_ns, dict(RESTRICTED_LABELS))
    try:
        kube.apply_objects(broker_ns, ce.broker_objects())
        wait_until(lambda: (pod := kube.pod(broker_ns, ce.BROKER)) and pod_ready(pod), 180, "RabbitMQ Ready")
        example = yaml.safe_load((EXAMPLES / "django-celery.yaml").read_text())
        url = f"amqp://guest:guest@{ce.BROKER}.{broker_ns}.svc.cluster.local:5672//"
        env = [e if e["name"] != "CELERY_BROKER_URL" else {**e, "value": url} for e in example["env"]]
        slow = {"timeoutSeconds": 30, "failureThreshold": 3}  # as scenario 18's values (jhkind.celery.values)
        overrides = {"env": env, "startupProbe": {"periodSeconds": 2, "failureThreshold": 150, "timeoutSeconds": 30},
                     "handlers": {"job": {"resources": {"requests": {"cpu": "20m", "memory": "160Mi"}},
                                          "readinessProbe": {**slow, "periodSeconds": 31}, "livenessProbe": slow}}}
        out = _suite(tool, tmp_path, postgres, overrides, EXAMPLES / "jobs" / "django-celery.yaml", cap=30,
                     example=EXAMPLES / "django-celery.yaml")
        with p.phase("the generated live suite"):
            rc, text, doc = _run(tool, out, kind_kubeconfig, p)
    finally:
        kube.delete_namespace(broker_ns)
    assert rc == 0, text[-5000:]
    _passed(doc)
