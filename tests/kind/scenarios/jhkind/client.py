"""A client pod inside the scenario namespace (restricted-PSA compliant): it runs a request
loop against the web Service (one JSON line per request in its log) and is the place from
which jobs are submitted through the web API."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .cluster import Kube, pod_ready
from .waits import wait_until

LOOP = r"""
import json, os, time, urllib.request, urllib.error
url = os.environ["TARGET"]
interval = float(os.environ.get("INTERVAL", "0.2"))
while True:
    t = time.time()
    status, err = 0, ""
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status, err = e.code, str(e)
    except Exception as e:
        err = f"{type(e).__name__}: {e}"
    print(json.dumps({"ts": round(t, 3), "ok": status == 200, "status": status,
                      "ms": round((time.time() - t) * 1000, 1), "err": err[:200]}), flush=True)
    time.sleep(max(0.0, interval - (time.time() - t)))
"""

# A refused connection reached no server, so that POST is sent again (for up to 60 s): a web pod
# just Ready is not yet behind its Service on every node while kube-proxy catches up on a loaded
# machine (scenario 10 failed twice so in stop 34's rehearsal). Any other error fails the submit.
SUBMIT = r"""
import json, sys, time, urllib.error, urllib.request
base, specs = sys.argv[1], json.loads(sys.argv[2])
ids = []
for spec in specs:
    deadline = time.monotonic() + 60
    while True:
        req = urllib.request.Request(base + "/jobs", data=json.dumps(spec).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                ids.append(json.loads(r.read())["id"])
            break
        except urllib.error.URLError as e:
            if not isinstance(e.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(1)
print(json.dumps(ids))
"""


@dataclass
class Request:
    ts: float
    ok: bool
    status: int
    ms: float
    err: str


class Client:
    """The `client` pod of one scenario namespace."""

    name = "client"

    def __init__(self, kube: Kube, namespace: str, web_base: str, image: str):
        self.kube = kube
        self.namespace = namespace
        self.web_base = web_base  # http://<service>:<port>
        self.image = image

    def manifest(self, target_path: str, interval: float) -> dict:
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": self.name, "labels": {"app.kubernetes.io/name": "scenario-client"}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "automountServiceAccountToken": False,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "client", "image": self.image, "imagePullPolicy": "IfNotPresent",
                    "command": ["python3", "-u", "-c", LOOP],
                    "env": [{"name": "TARGET", "value": self.web_base + target_path},
                            {"name": "INTERVAL", "value": str(interval)}],
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                }],
            },
        }

    def start(self, target_path: str = "/counts", interval: float = 0.2, timeout: float = 120) -> "Client":
        self.kube.apply_objects(self.namespace, [self.manifest(target_path, interval)])
        wait_until(lambda: (p := self.kube.pod(self.namespace, self.name)) and pod_ready(p), timeout,
                   "the client pod to be Ready", interval=1)
        return self

    def requests(self) -> list[Request]:
        """Every request the loop made so far."""
        out: list[Request] = []
        for line in self.kube.logs(self.namespace, self.name, "client").splitlines():
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            out.append(Request(float(d["ts"]), bool(d["ok"]), int(d["status"]), float(d["ms"]), str(d["err"])))
        return out

    def submit(self, specs: list[dict], timeout: float = 120) -> list[int]:
        """POST /jobs for each spec ({"kind": ..., "duration": ...}); returns the job ids."""
        res = self.kube.exec(self.namespace, self.name,
                             ["python3", "-c", SUBMIT, self.web_base, json.dumps(specs)],
                             container="client", timeout=timeout)
        if res.rc != 0:
            raise AssertionError(f"submitting {len(specs)} jobs through {self.web_base} failed "
                                 f"(exit {res.rc}): {res.stderr.strip()[-2000:]}")
        return [int(i) for i in json.loads(res.stdout.strip().splitlines()[-1])]


def summarize(requests: list[Request], start: float, end: float) -> dict:
    """Requests in [start, end]: total, failed, the failures, latency max."""
    window = [r for r in requests if start <= r.ts <= end]
    failed = [r for r in window if not r.ok]
    return {
        "requests": len(window),
        "failed": len(failed),
        "failures": [f"{r.ts:.3f} status={r.status} {r.err}" for r in failed[:10]],
        "max_ms": max((r.ms for r in window), default=0.0),
    }
