"""The Celery test app (tests/apps/celery) on the cluster: a RabbitMQ broker pod per
namespace (tests/apps/rabbitmq), the chart installed from values-examples/django-celery.yaml
as it is (plus the scenario's database and overrides), tasks submitted through the app
itself, and what PostgreSQL (jhtasks_job, jhtasks_taskrun) and RabbitMQ say about them."""

from __future__ import annotations

import json
import time
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from .helm import ROOT, HelmResult, deep_merge
from .scenario import Scenario
from .waits import wait_until

EXAMPLE = ROOT / "values-examples" / "django-celery.yaml"
BROKER_IMAGE = "jobhandlers/rabbitmq:1"
BROKER = "rabbitmq"   # the Service name the example's CELERY_BROKER_URL points at
QUEUE = "jobs"


def broker_objects() -> list[dict[str, Any]]:
    """A bare Pod (not a handler workload: the scenario's pod/workload views skip it; a killed
    node process restarts in place, its emptyDir and queue contents kept) + its Service."""
    labels = {"app.kubernetes.io/name": BROKER}
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": BROKER, "labels": labels},
        "spec": {
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 10,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": BROKER, "image": BROKER_IMAGE, "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "amqp", "containerPort": 5672}],
                "readinessProbe": {"tcpSocket": {"port": 5672}, "periodSeconds": 2, "failureThreshold": 2},
                "resources": {"requests": {"cpu": "50m", "memory": "160Mi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/rabbitmq"}],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": BROKER, "labels": labels},
           "spec": {"selector": labels, "ports": [{"name": "amqp", "port": 5672, "targetPort": 5672}]}}
    return [pod, svc]


def start_broker(sc: Scenario) -> None:
    sc.kube.apply_objects(sc.namespace, broker_objects())


def wait_broker(sc: Scenario, timeout: float = 120) -> None:
    from .cluster import pod_ready
    wait_until(lambda: (p := sc.kube.pod(sc.namespace, BROKER)) and pod_ready(p), timeout,
               f"the RabbitMQ pod of {sc.namespace} to be Ready")


def values(sc: Scenario, *overrides: dict) -> dict[str, Any]:
    """values-examples/django-celery.yaml + the scenario's database + small requests (2 shared
    cores) + probe timeouts for a machine shared by several scenarios (one `celery inspect`
    took 21 s at load 68 there, over the example's 15 s); drain, probe commands and identity
    as the example."""
    example = yaml.safe_load(EXAMPLE.read_text())
    slow = {"timeoutSeconds": 30, "failureThreshold": 3}
    scenario = {
        "database": {"host": sc.pg.host, "port": 5432, "name": sc.database, "user": sc.database,
                     "password": sc.password},
        "startupProbe": {"periodSeconds": 2, "failureThreshold": 150, "timeoutSeconds": 30},
        "handlers": {"job": {"resources": {"requests": {"cpu": "20m", "memory": "160Mi"}},
                             "readinessProbe": {**slow, "periodSeconds": 31}, "livenessProbe": slow}},
    }
    return deep_merge(example, scenario, *overrides)


def install(sc: Scenario, *overrides: dict, timeout_s: int = 400, wait: bool = True) -> HelmResult:
    """helm install of the example (not on top of the workload's base values)."""
    sc.values = values(sc, *overrides)
    return sc.helm.install(sc.release, sc.namespace, [sc._values_file(sc.values)], timeout_s, wait)


def exec_in(sc: Scenario, pod: str, command: list[str], container: str = "job", timeout: float = 60) -> Any:
    """kube.exec, retried (3 tries) when the exec's websocket handshake fails — the command
    then never started (an API server under load answers the upgrade with a plain 200)."""
    for attempt in range(3):
        try:
            return sc.kube.exec(sc.namespace, pod, command, container=container, timeout=timeout)
        except ApiException as exc:
            if exc.status != 0 or "Handshake status" not in str(exc) or attempt == 2:
                raise
            time.sleep(2)
    raise AssertionError("unreachable")


def run(sc: Scenario, pod: str, command: list[str], timeout: float = 60) -> Any:
    """A command in a worker pod's job container (e.g. the example's commands.drain)."""
    return exec_in(sc, pod, command, timeout=timeout)


# One `celery inspect ping` of this worker, timed from inside the pod: wall seconds, CPU
# seconds and peak RSS (KiB) of the interpreter the liveness probe starts.
PING_COST = ["python3", "-c", (
    "import os, resource, subprocess, time\n"
    "t = time.monotonic()\n"
    "p = subprocess.run(['celery', '-A', 'jhcelery', 'inspect', 'ping', '-d', os.environ['CELERY_WORKER_NAME']], capture_output=True)\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(p.returncode, round(time.monotonic() - t, 2), round(r.ru_utime + r.ru_stime, 2), r.ru_maxrss)")]


def ping_cost(sc: Scenario, pod: str) -> dict[str, float]:
    res = run(sc, pod, PING_COST)
    assert res.rc == 0, res.stderr[-2000:]
    rc, wall, cpu, rss = res.stdout.split()
    assert rc == "0", f"inspect ping failed in {pod}"
    return {"wall_s": float(wall), "cpu_s": float(cpu), "rss_mib": round(int(rss) / 1024, 1)}


def runs_on(sc: Scenario, pod: str) -> tuple[int, int]:
    """(runs, finished runs) in a pod (by name)."""
    row = sc.pg.sql(sc.database, "SELECT count(*), count(finished_at) FROM jhtasks_taskrun WHERE pod = '%s'" % pod)[0]
    return int(row[0]), int(row[1])


def submit(sc: Scenario, pod: str, seconds: list[float]) -> list[str]:
    """Submit one sleep_task per entry through Celery's own API (jhtasks.tasks.submit)."""
    code = f"import json\nfrom jhtasks.tasks import submit\nprint(json.dumps(submit(*{json.dumps(seconds)})))"
    res = exec_in(sc, pod, ["django-admin", "shell", "-c", code], timeout=120)
    assert res.rc == 0, f"submit failed (exit {res.rc}): {res.stderr[-2000:]}"
    return json.loads(res.stdout.strip().splitlines()[-1])


def submit_paused(sc: Scenario, pod: str, seconds: list[float]) -> None:
    """Every worker stops consuming (`control cancel_consumer`, a broadcast), the tasks are
    submitted, every worker consumes again (`add_consumer`): the windows fill from a full
    queue at once, however long the submit took on a loaded machine."""
    ctl = ["celery", "-A", "jhcelery", "control"]

    def control(*args: str) -> None:
        res = run(sc, pod, [*ctl, *args], timeout=120)
        assert res.rc == 0, f"celery control {args[0]}: exit {res.rc} {res.stdout[-500:]} {res.stderr[-1000:]}"
    control("cancel_consumer", QUEUE)
    submit(sc, pod, seconds)
    control("add_consumer", QUEUE)
    # Every worker must consume again. `celery control` exits 0 once one worker replied: on a
    # loaded machine another may miss the broadcast (stop 33's CI: one consumer of two, and the
    # one worker ran the whole queue). add_consumer is idempotent, so it is sent again until
    # RabbitMQ counts a consumer per worker.
    workers = len(sc.handler_pods("job"))
    deadline = time.monotonic() + 120
    while (counts := queue_counts(sc))["consumers"] < workers:
        assert time.monotonic() < deadline, f"{workers} consumers of {QUEUE!r} after add_consumer: {counts}"
        time.sleep(3)
        control("add_consumer", QUEUE)


def fill_windows(sc: Scenario, pod: str, seconds: list[float], unacked: int, running: int | None = None,
                 timeout: float = 120) -> None:
    """submit_paused, then wait until the workers hold `unacked` messages (and, if given, run
    `running` tasks): the full-window state the prefetch scenarios start from."""
    submit_paused(sc, pod, seconds)

    def full() -> bool:
        return queue_counts(sc)["unacked"] == unacked and (running is None or report(sc)["running"] == running)

    wait_until(full, timeout, "full prefetch windows", interval=1,
               describe=lambda: f"{queue_counts(sc)} {report(sc) if running is not None else ''}")


def queue_counts(sc: Scenario) -> dict[str, int]:
    """RabbitMQ's view of the `jobs` queue: ready, unacked (held by workers), consumers."""
    res = exec_in(sc, BROKER, ["rabbitmqctl", "-q", "list_queues", "name", "messages_ready",
                                  "messages_unacknowledged", "consumers"], container=BROKER)
    assert res.rc == 0, f"rabbitmqctl list_queues: exit {res.rc} {res.stderr[-1000:]}"
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == QUEUE:
            return {"ready": int(parts[1]), "unacked": int(parts[2]), "consumers": int(parts[3])}
    return {"ready": 0, "unacked": 0, "consumers": 0}


def _true(v: Any) -> bool:
    return str(v).lower() in ("t", "true")


def report(sc: Scenario, ended: dict[str, float] | None = None) -> dict[str, Any]:
    """Jobs submitted, finished (at least one finished run), lost (none), run twice (more than
    one run), redelivered runs (RabbitMQ's flag); unfinished runs split into interrupted (in a
    pod that has ended: `ended` maps a pod name to the time its old container stopped — a
    StatefulSet's replacement has the same name) and still running."""
    ended = ended or {}
    jobs = {r[0] for r in sc.pg.sql(sc.database, "SELECT task_id FROM jhtasks_job")}
    rows = sc.pg.sql(sc.database, "SELECT task_id, pod, redelivered, finished_at IS NOT NULL, "
                                  "extract(epoch FROM started_at) FROM jhtasks_taskrun")
    finished = {r[0] for r in rows if _true(r[3])}
    per_job: dict[str, int] = {}
    for r in rows:
        per_job[r[0]] = per_job.get(r[0], 0) + 1
    unfinished = [r for r in rows if not _true(r[3])]
    gone = [r for r in unfinished if r[1] in ended and float(r[4]) < ended[r[1]]]
    return {"jobs": len(jobs), "runs": len(rows), "finished": len(finished & jobs), "lost": len(jobs - finished),
            "run_twice": sum(1 for n in per_job.values() if n > 1),
            "redelivered_runs": sum(1 for r in rows if _true(r[2])),
            "interrupted_runs": len(gone), "running": len(unfinished) - len(gone)}


def wait_settled(sc: Scenario, timeout: float, ended: dict[str, float] | None = None) -> dict[str, Any]:
    """Nothing queued or held by a worker, no run going on: every job that will ever finish has."""
    def done() -> dict[str, Any] | None:
        q = queue_counts(sc)
        r = report(sc, ended)
        return r if q["ready"] == 0 and q["unacked"] == 0 and r["running"] == 0 else None
    return wait_until(done, timeout, "the queue to drain and every run to end", interval=3,
                      describe=lambda: f"{queue_counts(sc)} {report(sc, ended)}")


def started_between(sc: Scenario, pod: str, start: float, end: float) -> int:
    """Runs that started in `pod` between two times (epoch seconds)."""
    return int(sc.pg.sql(sc.database, (
        "SELECT count(*) FROM jhtasks_taskrun WHERE pod = '%s' AND started_at > to_timestamp(%f) "
        "AND started_at < to_timestamp(%f)") % (pod, start, end))[0][0])
