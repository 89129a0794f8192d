"""Galaxy 26.1.2 (tests/apps/galaxy, image jobhandlers/galaxy:26.1; 25.1.3 in :25.1) on the
cluster, installed from values-examples/galaxy.yaml as it is (only the database and the CPU
requests are the scenario's): jobs submitted through Galaxy's own API from a client pod, job
rows and alembic revisions read from the scenario's database, one-off pods that run Galaxy's
own tools (a seed that leaves the schema one revision behind, galaxy-helm's db-init), and
galaxy-helm's layout expressed in our values (one Deployment per handler identity)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import yaml

from .client import Client
from .cluster import Kube, parse_time
from .helm import ROOT, HelmResult, deep_merge
from .scenario import WORKLOAD_IMAGE, Scenario
from .waits import wait_until

EXAMPLE = ROOT / "values-examples" / "galaxy.yaml"
# the same install with Galaxy's Kubernetes job runner (test_22_galaxy_k8s.py)
EXAMPLE_K8S = ROOT / "values-examples" / "galaxy-k8s.yaml"
IMAGE = "jobhandlers/galaxy:26.1"
OLD_TAG = "25.1"  # jobhandlers/galaxy:25.1 (Galaxy 25.1.3): the old side of the upgrade
CONFIG = "/opt/galaxy/config/galaxy.yml"
# Galaxy's bootstrap_admin_api_key (web only): the client creates a user and its key with it.
BOOTSTRAP_KEY = "jobhandlers-kind-bootstrap-key"
# What the local runner's recover() writes on a job a restarted handler of the same name finds.
KILLED_INFO = "This job was killed when Galaxy was restarted"
# What the local runner's worker writes on a job it killed at shutdown, when it gets there
# before the process exits (galaxy.jobs.runners.local: terminated_by_shutdown).
SHUTDOWN_INFO = "job terminated by Galaxy shutdown"
# values-examples/galaxy.yaml's sidecar that empties heartbeat_*.log in place; in the scenarios
# above TRIM_MAX_BYTES (about 2 of Galaxy's 6-8 KB dumps) instead of 1 MiB. 16a waits until every
# pod's file was emptied once: with 20000 (3 dumps, 60-80 s) that wait was the Galaxy lane's
# longest idle phase, and the Galaxy lane is the main pass's last (stop 47's ci10)
TRIM_SIDECAR, TRIM_MAX_BYTES = "heartbeat-trim", 12000
# Galaxy job states that are still in someone's hands (galaxy.model.Job.states).
UNFINISHED = {"new", "resubmitted", "upload", "waiting", "queued", "running", "paused", "deleting", "stop"}

SUBMIT = r"""
import json, sys, urllib.request
base, key, durations, name = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
def api(method, path, k, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"x-api-key": k, "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=180) as r:
        return json.loads(r.read() or b"null")
user = api("POST", "/api/users", key, {"username": name, "email": f"{name}@example.org", "password": "jobhandlers1"})
ukey = api("POST", f"/api/users/{user['id']}/api_key", key)
hist = api("POST", "/api/histories", ukey, {"name": name})
ids = []
for seconds in durations:
    run = api("POST", "/api/tools", ukey, {"tool_id": "jh_sleep", "history_id": hist["id"], "inputs": {"seconds": seconds}})
    ids += [j["id"] for j in run["jobs"]]
print(json.dumps(ids))
"""


def values(sc: Scenario, *overrides: dict, example: Path = EXAMPLE) -> dict[str, Any]:
    """values-examples/galaxy.yaml (or `example`) + the scenario's database + 100m CPU requests (2 shared
    cores: the example's 1.85 cores of requests would not schedule next to other scenarios)
    + the heartbeat-trim sidecar's limit lowered to TRIM_MAX_BYTES."""
    data = yaml.safe_load(example.read_text())
    cpu = {"requests": {"cpu": "100m"}}
    scenario = {
        "database": {"host": sc.pg.host, "port": 5432, "name": sc.database, "user": sc.database,
                     "password": sc.password},
        "migration": {"resources": cpu},
        "waitForMigrations": {"resources": cpu},
        "handlers": {
            "web": {"resources": cpu,
                    "env": [{"name": "GALAXY_CONFIG_OVERRIDE_BOOTSTRAP_ADMIN_API_KEY", "value": BOOTSTRAP_KEY}]},
            "workflow": {"resources": cpu},
            "job": {"resources": cpu},
        },
    }
    scenario["sidecars"] = [_trim_faster(c) for c in data.get("sidecars") or []]
    return deep_merge(data, scenario, *overrides)


def _trim_faster(container: dict[str, Any]) -> dict[str, Any]:
    """The example's heartbeat-trim sidecar with a limit a scenario reaches in a minute."""
    if container.get("name") != TRIM_SIDECAR:
        return container
    fast = {"HEARTBEAT_MAX_BYTES": str(TRIM_MAX_BYTES), "HEARTBEAT_TRIM_SECONDS": "5"}
    env = [{"name": e["name"], "value": fast.get(e["name"], e.get("value"))} for e in container["env"]]
    return {**container, "env": env}


def install(sc: Scenario, *overrides: dict, timeout_s: int = 900, wait: bool = True,
            example: Path = EXAMPLE) -> HelmResult:
    """helm install of the example (not on top of the workload's base values)."""
    sc.values = values(sc, *overrides, example=example)
    return sc.helm.install(sc.release, sc.namespace, [sc._values_file(sc.values)], timeout_s, wait)


def client(sc: Scenario) -> Client:
    """The scenario's client pod, polling Galaxy's /api/version through the web Service."""
    if sc._client is None:
        sc._client = Client(sc.kube, sc.namespace, sc.web_base(), f"{WORKLOAD_IMAGE}:1").start("/api/version", 2.0)
    return sc._client


def submit_sleep_jobs(sc: Scenario, durations: list[int], user: str = "jh") -> list[str]:
    """A new user named `user`-<random> (made with the bootstrap admin key), a history, one run
    of the jh_sleep tool per duration: Galaxy's encoded job ids. The suffix keeps every call's
    user new in a shared install: a rerun of a test (pytest-rerunfailures) submits again, and
    Galaxy refuses a username that exists (reruns of 16c and 22a failed on that in stop 32's CI)."""
    c = client(sc)
    name = f"{user}-{secrets.token_hex(3)}"
    res = sc.kube.exec(sc.namespace, c.name, ["python3", "-c", SUBMIT, c.web_base, BOOTSTRAP_KEY, json.dumps(durations),
                                              name],
                       container="client", timeout=600)
    assert res.rc == 0, f"submitting {len(durations)} Galaxy jobs failed (exit {res.rc}): {res.stderr.strip()[-2000:]}"
    ids = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(ids) == len(durations), ids
    return ids


def jobs(sc: Scenario) -> list[dict[str, Any]]:
    """Every row of Galaxy's job table: id, state, handler (server name), info, update_time."""
    rows = sc.pg.sql(sc.database, "SELECT id, state, coalesce(handler, ''), coalesce(info, ''), "
                     "coalesce(extract(epoch FROM update_time), 0) FROM job ORDER BY id")  # UTC
    return [{"id": int(i), "state": s, "handler": h, "info": info, "update_time": float(u)}
            for i, s, h, info, u in rows]


def states(sc: Scenario) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in jobs(sc):
        out[j["state"]] = out.get(j["state"], 0) + 1
    return out


def upgrade(sc: Scenario, *overrides: dict, timeout_s: int = 1200, example: Path = EXAMPLE) -> HelmResult:
    """helm upgrade --wait to the example (galaxy.yaml unless given) with these overrides."""
    sc.values = values(sc, *overrides, example=example)
    return sc.helm.upgrade(sc.release, sc.namespace, [sc._values_file(sc.values)], timeout_s)


def revisions(sc: Scenario) -> set[str]:
    """Galaxy's alembic revisions in the database (one row per branch: gxy, tsi)."""
    return {r[0] for r in sc.pg.sql(sc.database, "SELECT version_num FROM alembic_version")}


def api_version(sc: Scenario) -> dict[str, Any]:
    """GET /api/version through the web Service, from the client pod."""
    c = client(sc)
    code = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
    res = sc.kube.exec(sc.namespace, c.name, ["python3", "-c", code, c.web_base + "/api/version"],
                       container="client", timeout=60)
    assert res.rc == 0, f"GET /api/version failed (exit {res.rc}): {res.stderr.strip()[-1000:]}"
    return json.loads(res.stdout)


def galaxy_helm_overrides() -> dict[str, Any]:
    """galaxy-helm's layout, as far as our values express it: every process a Deployment with
    a fixed --server-name (job_handler_0, job_handler_1: one Deployment of 1 replica per
    identity, as galaxy-helm's handler Deployments), Kubernetes' default rolling update
    (maxSurge 25 %, maxUnavailable 25 %: for 1 replica a new pod first), a 30 s grace, no
    PodDisruptionBudget. The migration gating is the caller's (galaxy-helm has none)."""
    example = yaml.safe_load(EXAMPLE.read_text())["handlers"]
    default_rollout = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    # grace = maxJobRuntimeSeconds + drain.bufferSeconds (10) + preStopSeconds (2) = 30
    thirty = {"maxJobRuntimeSeconds": 18, "terminationGracePeriodSeconds": 30, "strategy": default_rollout,
              "pdb": {"enabled": False}}
    cpu = {"requests": {"cpu": "100m"}}

    def handler(server: str, pool: str) -> dict[str, Any]:
        base = {k: v for k, v in example["job"].items() if k not in ("kind", "pdb")}
        base["pdb"] = {"enabled": False}
        return {**base, **thirty, "kind": "Deployment", "replicas": 1, "resources": cpu,
                "args": ["-c", CONFIG, "--server-name", server, "--attach-to-pool", pool]}
    return {"handlers": {
        "web": thirty,
        "workflow": handler("workflow_scheduler_0", "workflow-schedulers"),
        "job": {"enabled": False},
        "job0": handler("job_handler_0", "job-handlers"),
        "job1": handler("job_handler_1", "job-handlers"),
    }}


def run_pod(sc: Scenario, name: str, script: str, timeout: float = 600) -> tuple[str, dict]:
    """`sh -c script` in a one-off pod of the Galaxy image with the scenario's DATABASE_URL;
    asserts it succeeded. Returns its log and its container's terminated state."""
    url = f"postgresql://{sc.database}:{sc.password}@{sc.pg.host}:5432/{sc.database}"
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "scenario-seed"}},
        "spec": {
            "restartPolicy": "Never", "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "seed", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", script], "env": [{"name": "DATABASE_URL", "value": url}],
                "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}},
            }],
        },
    }
    sc.kube.apply_objects(sc.namespace, [pod])
    phase = wait_until(lambda: _phase(sc.kube, sc.namespace, name) in ("Succeeded", "Failed")
                       and _phase(sc.kube, sc.namespace, name), timeout, f"the {name} pod to finish",
                       interval=2)
    log = sc.kube.logs(sc.namespace, name, "seed")
    assert phase == "Succeeded", f"{name} pod {phase}:\n{log[-3000:]}"
    done = sc.kube.pod(sc.namespace, name)
    return log, done["status"]["containerStatuses"][0]["state"]["terminated"]


def seed_behind(sc: Scenario, timeout: float = 600) -> str:
    """Migrate the scenario's database to head, then `galaxy-manage-db downgrade gxy@-1`
    (Galaxy's own tool) in a one-off pod: the schema an older Galaxy left. Returns its log."""
    script = (f"jhgalaxy migrate && jhgalaxy exec galaxy-manage-db --galaxy-config {CONFIG} downgrade gxy@-1 "
              "&& { jhgalaxy schema-check; echo \"schema-check exit $?\"; }")
    return run_pod(sc, "galaxy-seed", script, timeout)[0]


def migrate_now(sc: Scenario, timeout: float = 600) -> float:
    """galaxy-helm's db-init Job (a plain Job beside the handlers, nobody waits for it): Galaxy's
    own migration in a one-off pod. Returns the time it finished (container exit)."""
    _log, term = run_pod(sc, "galaxy-db-init", "jhgalaxy migrate && jhgalaxy schema-check", timeout)
    return parse_time(term["finishedAt"])


def job_pod(sc: Scenario, job: dict) -> str:
    """The name of the (last) pod of a Job."""
    pods = sc.kube.pods(sc.namespace, f"job-name={job['metadata']['name']}")
    assert pods, f"no pod of Job {job['metadata']['name']}"
    return max(pods, key=lambda p: p["metadata"]["creationTimestamp"])["metadata"]["name"]


def _phase(kube: Kube, namespace: str, name: str) -> str | None:
    pod = kube.pod(namespace, name)
    return (pod.get("status") or {}).get("phase") if pod else None


def role_of(pod: dict) -> str:
    """The handler role of a chart pod (its app container has the role's name)."""
    return pod["metadata"]["labels"]["app.kubernetes.io/component"]


def app_image(pod: dict) -> str:
    """The image of the pod's app container."""
    return next(c["image"] for c in pod["spec"]["containers"] if c["name"] == role_of(pod))

