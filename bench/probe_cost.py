#!/usr/bin/env python3
"""`make bench-probes`: what the chart's heartbeat probes cost a node, in CPU-seconds per pod-hour.

Every exec probe is a process started in the container: the kubelet asks containerd, containerd
its shim, the shim runs runc, runc enters the container and starts `sh` (which starts `stat` and
`date`). None of it shows in the pod's own CPU figure; all of it is on the node. This benchmark
measures it where it lands: the kind node container's CPU (its cgroup's cpuacct.usage: kubelet,
containerd, shims, runc and the pods), on one worker, for N idle handler pods whose only work is
touching the heartbeat file every 5 s, over the same window for each probe variant:

  * none        - the same pods without probes (the node's own cost and the pods' loop);
  * default     - the probes `helm template` renders from chart/values.yaml (readiness every 2 s,
                  liveness every 30 s, startupProbe every 1 s until the first success);
  * each `--readiness-period P` - the chart's probes with `readiness.periodSeconds: P`.

Probe cost per pod-hour = (variant - none) / N / window x 3600. A naive alternative to compare:
the probes run every 2 s, as rendered today (`default`). Prints a table and writes
bench-results/probe-cost.json. Exit 2 when the cluster is unusable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kind" / "scenarios"))

from jhkind import setup  # noqa: E402
from jhkind.cluster import Kube, pod_ready  # noqa: E402
from jhkind.scenario import WORKLOAD_IMAGE  # noqa: E402
from jhkind.waits import wait_until  # noqa: E402

OUT = ROOT / "bench-results"
HEARTBEAT_DIR = "/run/jobhandlers"
# the handler stand-in: the heartbeat every 5 s (the chart's heartbeat.intervalSeconds), nothing else
LOOP = f"mkdir -p {HEARTBEAT_DIR}; while :; do touch {HEARTBEAT_DIR}/heartbeat; sleep 5; done"


def chart_probes(readiness_period: int | None) -> dict:
    """The job role's probes as the chart renders them (helm template), optionally with another
    readiness period."""
    from jobhandlers import helm  # the tool's own render (real helm)

    overrides = {"readiness": {"periodSeconds": readiness_period}} if readiness_period else {}
    objs = helm.render([ROOT / "values-examples" / "minimal.yaml"], kube_version="1.37", overrides=overrides)
    for obj in objs:
        if obj["kind"] in ("Deployment", "StatefulSet") and obj["metadata"]["name"].endswith("-job"):
            main = obj["spec"]["template"]["spec"]["containers"][0]
            return {k: main[k] for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in main}
    raise SystemExit("bench-probes: no job role in the rendered minimal example")


def deployment(name: str, replicas: int, node: str, probes: dict) -> dict:
    container = {"name": "handler", "image": f"{WORKLOAD_IMAGE}:1", "imagePullPolicy": "IfNotPresent",
                 "command": ["sh", "-c", LOOP], "volumeMounts": [{"name": "state", "mountPath": HEARTBEAT_DIR}],
                 "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}}, **probes}
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                                           "terminationGracePeriodSeconds": 0,
                                           "automountServiceAccountToken": False,
                                           "containers": [container],
                                           "volumes": [{"name": "state", "emptyDir": {}}]}}}}


def node_cpu_seconds(node: str) -> float:
    """The node container's cumulative CPU (cgroup v1 cpuacct or v2 cpu.stat), in seconds."""
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", node], capture_output=True, text=True,
                         check=True).stdout.strip()
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text()) / 1e9
    for base in (Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope"), Path(f"/sys/fs/cgroup/docker/{cid}")):
        stat = base / "cpu.stat"
        if stat.exists():
            usage = dict(line.split() for line in stat.read_text().splitlines())
            return int(usage["usage_usec"]) / 1e6
    raise SystemExit(f"bench-probes: no cgroup CPU figure for node container {node}")


def measure(kube: Kube, ns: str, name: str, replicas: int, node: str, probes: dict, settle: float,
            window: float) -> dict:
    kube.apps.create_namespaced_deployment(ns, deployment(name, replicas, node, probes))
    t0 = time.time()
    wait_until(lambda: sum(pod_ready(p) for p in kube.pods(ns, f"app={name}")) == replicas, 300,
               f"{replicas} pods of {name} Ready", interval=1)
    ready_s = time.time() - t0
    time.sleep(settle)
    c0, w0 = node_cpu_seconds(node), time.time()
    time.sleep(window)
    c1, w1 = node_cpu_seconds(node), time.time()
    restarts = sum(cs.get("restartCount", 0) for p in kube.pods(ns, f"app={name}")
                   for cs in p["status"].get("containerStatuses") or [])
    kube.apps.delete_namespaced_deployment(name, ns)
    wait_until(lambda: not kube.pods(ns, f"app={name}"), 120, f"pods of {name} gone", interval=1)
    return {"node_cpu_s": c1 - c0, "window_s": w1 - w0, "ready_s": round(ready_s, 1), "restarts": restarts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=10)
    ap.add_argument("--window", type=float, default=180, help="seconds measured per variant")
    ap.add_argument("--settle", type=float, default=20, help="seconds after Ready before measuring")
    ap.add_argument("--readiness-period", type=int, action="append", default=[],
                    help="also measure the chart's probes with this readiness period (repeatable)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    periods = args.readiness_period or [5, 10]
    try:
        kube = Kube(setup.kubeconfig())
        workers = [n.metadata.name for n in kube.core.list_node().items
                   if "node-role.kubernetes.io/control-plane" not in (n.metadata.labels or {})]
    except Exception as exc:  # noqa: BLE001 - an unusable cluster is exit 2, in words
        print(f"bench-probes: cannot reach the cluster ({exc}); `make kind-up` first", file=sys.stderr)
        return 2
    node = sorted(workers)[0] if workers else "jobhandlers-control-plane"
    variants = [("none", {}), ("default", chart_probes(None))]
    variants += [(f"readiness {p} s", chart_probes(p)) for p in periods]
    ns = f"jh-bench-probes-{int(time.time()) % 100000}"
    kube.create_namespace(ns)
    results: dict[str, dict] = {}
    try:
        for i, (label, probes) in enumerate(variants):
            results[label] = measure(kube, ns, f"v{i}", args.pods, node, probes, args.settle, args.window)
            print(f"{label}: {results[label]}", flush=True)
    finally:
        kube.delete_namespace(ns)
    base = results["none"]["node_cpu_s"] / results["none"]["window_s"]
    rows = []
    for label, r in results.items():
        per_s = r["node_cpu_s"] / r["window_s"]
        probe_pod_hour = (per_s - base) / args.pods * 3600
        rows.append({"variant": label, "node_cpu_per_s": round(per_s, 4),
                     "probe_cpu_s_per_pod_hour": round(probe_pod_hour, 1), "ready_s": r["ready_s"],
                     "restarts": r["restarts"]})
    default = next(r for r in rows if r["variant"] == "default")["probe_cpu_s_per_pod_hour"]
    print(f"\n{args.pods} idle handler pods on {node}, {args.window:.0f} s per variant")
    print(f"{'variant':<16} {'node CPU/s':>10} {'probe CPU-s per pod-hour':>25} {'vs default':>10} {'Ready in':>8}")
    for r in rows:
        ratio = r["probe_cpu_s_per_pod_hour"] / default if default > 0 else float("nan")
        print(f"{r['variant']:<16} {r['node_cpu_per_s']:>10.3f} {r['probe_cpu_s_per_pod_hour']:>25.1f} "
              f"{ratio:>10.2f} {r['ready_s']:>7.1f}s")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "probe-cost.json"
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"pods": args.pods, "node": node, "window_s": args.window,
                               "server": kube.server_version(), "rows": rows}, indent=2) + "\n")
    tmp.replace(out)
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
