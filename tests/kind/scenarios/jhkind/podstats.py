"""CPU and memory of pods from the kubelet's own /stats/summary, read through the API server's
node proxy (no metrics-server needed): a sampler thread that keeps, per pod, the peak
working set and the last cumulative CPU time the kubelet reported."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .cluster import Kube
from .poller import Poller


def summary(kube: Kube, node: str) -> dict[str, Any]:
    """GET /api/v1/nodes/<node>/proxy/stats/summary (the kubelet's Summary API)."""
    resp = kube.core.connect_get_node_proxy_with_path(node, "stats/summary", _preload_content=False,
                                                      _request_timeout=20)
    return json.loads(resp.data)


@dataclass
class Usage:
    """One pod's usage as the kubelet reported it (pod level: its containers and sandbox)."""

    samples: int = 0
    cpu_s: float = 0.0          # cumulative CPU seconds at the last sample
    memory_peak_mib: float = 0.0  # highest working set seen

    def add(self, pod: dict[str, Any]) -> None:
        cpu = (pod.get("cpu") or {}).get("usageCoreNanoSeconds")
        mem = (pod.get("memory") or {}).get("workingSetBytes")
        if cpu is None and mem is None:
            return
        self.samples += 1
        if cpu is not None:
            self.cpu_s = max(self.cpu_s, cpu / 1e9)
        if mem is not None:
            self.memory_peak_mib = max(self.memory_peak_mib, mem / 2**20)


class PodUsage(Poller):
    """Samples the pods of a namespace matching a label selector every `interval` s, on the
    nodes they run on, until stop()."""

    def __init__(self, kube: Kube, namespace: str, selector: str, interval: float = 5):
        super().__init__(interval)
        self.kube, self.namespace, self.selector = kube, namespace, selector
        self.usage: dict[str, Usage] = {}

    def poll(self) -> None:
        pods = self.kube.pods(self.namespace, self.selector)
        names = {p["metadata"]["name"] for p in pods}
        for node in {p["spec"].get("nodeName") for p in pods} - {None}:
            for pod in summary(self.kube, node).get("pods") or []:
                ref = pod.get("podRef") or {}
                if ref.get("namespace") == self.namespace and ref.get("name") in names:
                    self.usage.setdefault(ref["name"], Usage()).add(pod)

    def facts(self) -> dict[str, dict[str, float]]:
        """pod -> {cpu_s, memory_peak_mib, samples} of every pod sampled at least once."""
        return {name: {"cpu_s": round(u.cpu_s, 2), "memory_peak_mib": round(u.memory_peak_mib, 1), "samples": u.samples}
                for name, u in sorted(self.usage.items()) if u.samples}
