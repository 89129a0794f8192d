"""Galaxy 26.1.2 (tests/apps/galaxy, image jobhandlers/galaxy:26.1) on the cluster, installed
from values-examples/galaxy.yaml as it is (only the database and the CPU requests are the
scenario's): jobs submitted through Galaxy's own API from a client pod, job rows read from
the scenario's database, and a seed pod that leaves the schema one revision behind."""

from __future__ import annotations

import json
from typing import Any

import yaml

from .client import Client
from .cluster import Kube
from .helm import ROOT, HelmResult, deep_merge
from .scenario import WORKLOAD_IMAGE, Scenario
from .waits import wait_until

EXAMPLE = ROOT / "values-examples" / "galaxy.yaml"
IMAGE = "jobhandlers/galaxy:26.1"
CONFIG = "/opt/galaxy/config/galaxy.yml"
# Galaxy's bootstrap_admin_api_key (web only): the client creates a user and its key with it.
BOOTSTRAP_KEY = "jobhandlers-kind-bootstrap-key"
# What the local runner's recover() writes on a job a restarted handler of the same name finds.
KILLED_INFO = "This job was killed when Galaxy was restarted"
# Galaxy job states that are still in someone's hands (galaxy.model.Job.states).
UNFINISHED = {"new", "resubmitted", "upload", "waiting", "queued", "running", "paused", "deleting", "stop"}

SUBMIT = r"""
import json, sys, urllib.request
base, key, durations = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
def api(method, path, k, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"x-api-key": k, "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=180) as r:
        return json.loads(r.read() or b"null")
user = api("POST", "/api/users", key, {"username": "jh", "email": "jh@example.org", "password": "jobhandlers1"})
ukey = api("POST", f"/api/users/{user['id']}/api_key", key)
hist = api("POST", "/api/histories", ukey, {"name": "jh"})
ids = []
for seconds in durations:
    run = api("POST", "/api/tools", ukey, {"tool_id": "jh_sleep", "history_id": hist["id"], "inputs": {"seconds": seconds}})
    ids += [j["id"] for j in run["jobs"]]
print(json.dumps(ids))
"""


def values(sc: Scenario, *overrides: dict) -> dict[str, Any]:
    """values-examples/galaxy.yaml + the scenario's database + 100m CPU requests (2 shared
    cores: the example's 1.85 cores of requests would not schedule next to other scenarios)."""
    example = yaml.safe_load(EXAMPLE.read_text())
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
    return deep_merge(example, scenario, *overrides)


def install(sc: Scenario, *overrides: dict, timeout_s: int = 900, wait: bool = True) -> HelmResult:
    """helm install of the example (not on top of the workload's base values)."""
    sc.values = values(sc, *overrides)
    return sc.helm.install(sc.release, sc.namespace, [sc._values_file(sc.values)], timeout_s, wait)


def client(sc: Scenario) -> Client:
    """The scenario's client pod, polling Galaxy's /api/version through the web Service."""
    if sc._client is None:
        sc._client = Client(sc.kube, sc.namespace, sc.web_base(), f"{WORKLOAD_IMAGE}:1").start("/api/version", 2.0)
    return sc._client


def submit_sleep_jobs(sc: Scenario, durations: list[int]) -> list[str]:
    """A user (made with the bootstrap admin key, once per scenario), a history, one run of the
    jh_sleep tool per duration: Galaxy's encoded job ids."""
    c = client(sc)
    res = sc.kube.exec(sc.namespace, c.name, ["python3", "-c", SUBMIT, c.web_base, BOOTSTRAP_KEY, json.dumps(durations)],
                       container="client", timeout=600)
    assert res.rc == 0, f"submitting {len(durations)} Galaxy jobs failed (exit {res.rc}): {res.stderr.strip()[-2000:]}"
    ids = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(ids) == len(durations), ids
    return ids


def jobs(sc: Scenario) -> list[dict[str, Any]]:
    """Every row of Galaxy's job table: id, state, handler (server name), info."""
    rows = sc.pg.sql(sc.database, "SELECT id, state, coalesce(handler, ''), coalesce(info, '') FROM job ORDER BY id")
    return [{"id": int(i), "state": s, "handler": h, "info": info} for i, s, h, info in rows]


def states(sc: Scenario) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in jobs(sc):
        out[j["state"]] = out.get(j["state"], 0) + 1
    return out


def seed_behind(sc: Scenario, timeout: float = 600) -> str:
    """Migrate the scenario's database to head, then `galaxy-manage-db downgrade gxy@-1`
    (Galaxy's own tool) in a one-off pod: the schema an older Galaxy left. Returns its log."""
    url = f"postgresql://{sc.database}:{sc.password}@{sc.pg.host}:5432/{sc.database}"
    script = (f"jhgalaxy migrate && jhgalaxy exec galaxy-manage-db --galaxy-config {CONFIG} downgrade gxy@-1 "
              "&& { jhgalaxy schema-check; echo \"schema-check exit $?\"; }")
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "galaxy-seed", "labels": {"app.kubernetes.io/name": "scenario-seed"}},
        "spec": {
            "restartPolicy": "Never", "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "seed", "image": IMAGE, "imagePullPolicy": "Never",
                "command": ["sh", "-c", script], "env": [{"name": "DATABASE_URL", "value": url}],
                "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}},
            }],
        },
    }
    sc.kube.apply_objects(sc.namespace, [pod])
    phase = wait_until(lambda: _phase(sc.kube, sc.namespace, "galaxy-seed") in ("Succeeded", "Failed")
                       and _phase(sc.kube, sc.namespace, "galaxy-seed"), timeout, "the seed pod to finish",
                       interval=2)
    log = sc.kube.logs(sc.namespace, "galaxy-seed", "seed")
    assert phase == "Succeeded", f"seed pod {phase}:\n{log[-3000:]}"
    return log


def _phase(kube: Kube, namespace: str, name: str) -> str | None:
    pod = kube.pod(namespace, name)
    return (pod.get("status") or {}).get("phase") if pod else None
