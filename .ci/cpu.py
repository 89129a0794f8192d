#!/usr/bin/env python3
"""Where a CI run's CPU goes: a sampler for the kind clusters and its report.

    .ci/cpu.py sample OUT.jsonl      every INTERVAL s until killed: the machine's CPU, each kind
                                     node container's and its pods' (cgroup cpuacct), one JSON line
    .ci/cpu.py report OUT.jsonl      the Markdown tables (also used by .ci/budget.py --cpu)

A kind node is a container; inside it, kubelet.slice/kubelet-kubepods.slice holds the pods and
the rest of its cgroup is the node's own work (kubelet, containerd, shims, runc: exec probes,
container starts, image unpacking). Pod uids are named through `crictl pods` in the node the first
time they are seen. cgroup v1 (cpuacct, this machine) and v2 (cpu.stat) are both read; on a
machine where neither is found the sampler writes nothing and the report says so. Costs ≈ 0.01
of a core (a `docker ps` per sample, a `docker exec crictl` when a node has new pods).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

INTERVAL = 15
V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")
SYSTEM_NS = ("kube-system", "jh-postgres", "local-path-storage")


def _read_ns(path: Path) -> int | None:
    """CPU time of a cgroup in ns: cpuacct.usage (v1) or cpu.stat usage_usec (v2)."""
    try:
        if path.joinpath("cpuacct.usage").is_file():
            return int(path.joinpath("cpuacct.usage").read_text())
        for line in path.joinpath("cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
    except (OSError, ValueError):
        return None
    return None


def _node_dir(cid: str) -> Path | None:
    for d in (V1 / "docker" / cid, V2 / "system.slice" / f"docker-{cid}.scope"):
        if d.is_dir():
            return d
    return None


def _nodes() -> list[tuple[str, str]]:
    out = subprocess.run(["docker", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"],
                         capture_output=True, text=True, check=False).stdout
    pairs = [line.split(None, 1) for line in out.splitlines()]
    return [(p[0], p[1]) for p in pairs if len(p) == 2 and p[1].startswith("jobhandlers")]


def sample(out_path: Path) -> None:
    names: dict[str, str] = {}
    host = V1 if (V1 / "cpuacct.usage").is_file() else V2
    with out_path.open("a", buffering=1) as out:
        while True:
            rec: dict = {"t": round(time.time(), 1), "host": _read_ns(host), "nodes": {}, "pods": {}}
            for cid, name in _nodes():
                d = _node_dir(cid)
                if d is None:
                    continue
                kp = d / "kubelet.slice" / "kubelet-kubepods.slice"
                rec["nodes"][name] = [_read_ns(d), _read_ns(kp)]
                pods: dict[str, int | None] = {}
                for sub in (kp, *[p for p in kp.glob("kubelet-kubepods-*.slice") if p.is_dir()]):
                    for pod in sub.glob("*-pod*.slice"):
                        pods[pod.name.rsplit("-pod", 1)[1].removesuffix(".slice")] = _read_ns(pod)
                if any(uid not in names for uid in pods):
                    res = subprocess.run(["docker", "exec", name, "crictl", "pods", "-o", "json"],
                                         capture_output=True, text=True, check=False)
                    try:
                        for p in json.loads(res.stdout)["items"]:
                            md = p["metadata"]
                            names[md["uid"].replace("-", "_")] = f"{md['namespace']}/{md['name']}"
                    except (ValueError, KeyError):
                        pass
                for uid, ns in pods.items():
                    if ns is not None:
                        rec["pods"][f"{name}:{names.get(uid, '?/' + uid)}"] = ns
            if rec["host"] is not None and rec["nodes"]:
                out.write(json.dumps(rec) + "\n")
            time.sleep(INTERVAL)


def summarize(path: Path) -> dict:
    """CPU-s by where it went over the sampled window: per namespace (the scenarios), the
    clusters' system pods, each node's own work, and the machine outside the kind nodes."""
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    if len(recs) < 2:
        return {}
    first, last = recs[0], recs[-1]
    window = last["t"] - first["t"]
    host = (last["host"] - first["host"]) / 1e9
    node_total = node_own = 0.0
    # each node up to its last sample: a node gone before the phase ends (stopped by 8z; until
    # stop 48 the node pass's own cluster, deleted early) is not the machine outside the nodes
    # (stop 44's tables put its whole CPU there: "outside" 42 %); a node first seen later started at 0
    node_last: dict[str, list] = {}
    for rec in recs:
        node_last.update(rec["nodes"])
    for name, (tot, pods) in node_last.items():
        t0, p0 = first["nodes"].get(name, [0, 0])
        node_total += ((tot or 0) - (t0 or 0)) / 1e9
        node_own += (((tot or 0) - (t0 or 0)) - ((pods or 0) - (p0 or 0))) / 1e9
    start: dict[str, int] = dict(first["pods"])
    seen: dict[str, int] = {}
    for rec in recs:
        seen.update(rec["pods"])
    by_ns: Counter = Counter()
    system = 0.0
    for key, ns_end in seen.items():
        cluster_pod = key.split(":", 1)[1]
        namespace = cluster_pod.split("/", 1)[0]
        used = (ns_end - start.get(key, 0)) / 1e9  # a pod first seen later started at 0
        if namespace in SYSTEM_NS:
            system += used
        else:
            by_ns[re.sub(r"-[0-9a-f]{4}$", "", namespace)] += used
    return {"window": window, "host": host, "outside_nodes": host - node_total, "node_own": node_own,
            "system_pods": system, "namespaces": dict(by_ns), "scenario_pods": sum(by_ns.values()),
            "t0": first["t"], "timeline": timeline(recs)}


def timeline(recs: list[dict], step: float = 300) -> list[list[float]]:
    """[seconds from the first sample, cores the machine used] per `step` s: where the run left
    CPU idle (a lane waiting alone) and where it was saturated."""
    out: list[list[float]] = []
    start = prev = recs[0]
    for rec in recs[1:]:
        if rec["t"] - prev["t"] >= step or rec is recs[-1]:
            out.append([round(prev["t"] - start["t"]), round((rec["host"] - prev["host"]) / 1e9 / max(rec["t"] - prev["t"], 1), 2)])
            prev = rec
    return out


def _short(key: str) -> str:
    """The namespace stem of a scenario (tests/kind/scenarios/conftest.py's `short`, without its tag)."""
    return key.split(" (")[0].split("[")[0].removeprefix("test_")[:18].rstrip("_").replace("_", "-")


def scenario_cpu(summary: dict, scenario_keys: list[str]) -> dict[str, float]:
    """CPU-s of each scenario's pods: its namespace is jh-<short>[-<tag>]-<4 hex>; a namespace
    of no one scenario (a module's shared install) keeps its own row, "(namespace NAME)"."""
    keys = sorted({k.split(" (")[0] for k in scenario_keys})
    out: dict[str, float] = {}
    for ns, used in summary.get("namespaces", {}).items():
        stem = ns.removeprefix("jh-")
        match = [k for k in keys if stem == _short(k) or stem.startswith(_short(k) + "-")]
        if len(match) > 1:  # a parametrized scenario: the tag is its parameter
            match = [k for k in match if k.endswith(f"[{stem.rsplit('-', 1)[-1]}]")] or match[:1]
        name = match[0] if match else f"(namespace {ns})"
        out[name] = out.get(name, 0.0) + used
    return out


def markdown(summary: dict) -> str:
    if not summary:
        return "No CPU samples (`.ci/cpu.py sample`: no kind node cgroup was readable).\n"
    host = summary["host"] or 1.0
    rows = [("the scenarios' pods (every namespace but the clusters' own)", summary["scenario_pods"]),
            ("the kind nodes' own work (kubelet, containerd, runc: probes, container starts, image pulls)",
             summary["node_own"]),
            ("the clusters' system pods (API servers, etcd, controllers, CoreDNS, the scenarios' PostgreSQL)",
             summary["system_pods"]),
            ("the machine outside the kind nodes (pytest, helm, kubectl, docker)", summary["outside_nodes"])]
    out = [f"CPU of the scenario phase ({summary['window']:.0f} s sampled, {summary['host']:.0f} CPU-s, "
           f"{summary['host'] / max(summary['window'], 1):.2f} of the cores on average):", "",
           "| where | CPU-s | share |", "| --- | ---: | ---: |"]
    out += [f"| {what} | {cpu:.0f} | {100 * cpu / host:.0f} % |" for what, cpu in rows]
    if summary.get("timeline"):
        out += ["", "Cores in use, per 5 minutes of the scenario phase (of 2): "
                + ", ".join(f"{t // 60:.0f} min {cores:.2f}" for t, cores in summary["timeline"]) + "."]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("sample", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "sample":
        sample(Path(argv[2]))
        return 0
    summary = summarize(Path(argv[2]))
    sys.stdout.write(markdown(summary))
    for ns, cpu in sorted(summary.get("namespaces", {}).items(), key=lambda kv: -kv[1])[:25]:
        print(f"{cpu:8.0f}  {ns}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv))
