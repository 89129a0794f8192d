"""Progress lines with phase timings, printed as they happen and kept for the summary."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterator

from . import pool


@dataclass
class Progress:
    """One scenario's clock: `phase()` times a block, `note()` prints a line."""

    name: str
    t0: float = field(default_factory=time.monotonic)
    phases: dict[str, float] = field(default_factory=dict)
    facts: dict[str, object] = field(default_factory=dict)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    # Set by the pytest conftest to write past output capturing (progress stays live).
    terminal: ClassVar[Callable[[str], None] | None] = None

    def note(self, message: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')} {self.name} +{self.elapsed():6.1f}s] {message}"
        print(line, flush=True)  # captured: part of the failure report
        if Progress.terminal is not None:
            Progress.terminal(line)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        start = time.monotonic()
        self.note(f"{label} ...")
        ok = False
        try:
            yield
            ok = True
        finally:
            took = time.monotonic() - start
            self.phases[label] = round(took, 2)
            self.note(f"{label} {'done' if ok else 'FAILED'} in {took:.1f}s")

    def fact(self, key: str, value: object) -> None:
        """Record a measured number (printed and kept for the summary)."""
        self.facts[key] = value
        self.note(f"{key} = {value}")


def when_where(seconds: float) -> dict[str, object]:
    """When a scenario that just ended after `seconds` started, and where it ran (its lane), for
    .ci/budget.py's lanes: cluster/pytest worker, or cluster/pool-<name> for a pass on a node pool
    (jhkind.pool) of a cluster another pass shares."""
    where = f"pool-{pool.name()}" if pool.name() else os.environ.get("PYTEST_XDIST_WORKER", "main")
    return {"started": round(time.time() - seconds, 1),
            "lane": f"{os.environ.get('KIND_CLUSTER_NAME', 'jobhandlers')}/{where}"}


def record(summary: dict, key: str, progress: Progress, seconds: float, rep: object | None) -> None:
    """One scenario's entry in bench-results/kind-scenarios.json. A failed attempt that is run
    again (KIND_RERUNS) keeps its entry, with the end of its error, under "<key> (failed attempt N)"."""
    failed = rep is None or bool(getattr(rep, "failed", True))
    if key in summary and not summary[key]["passed"]:
        n = sum(1 for k in summary if k.startswith(f"{key} (failed attempt")) + 1
        summary[f"{key} (failed attempt {n})"] = summary.pop(key)
    entry: dict = {"passed": not failed, "seconds": round(seconds, 1), "phases": progress.phases, "facts": progress.facts,
                   # when and where it ran: .ci/budget.py's lanes (which worker of which cluster was busy when)
                   **when_where(seconds)}
    if failed and rep is not None:
        entry["error"] = str(getattr(rep, "longrepr", ""))[-2000:]
    summary[key] = entry


@contextlib.contextmanager
def recorded(summary: dict, key: str, progress: Progress, node: object) -> Iterator[None]:
    """Times the block and records it under `key` (record), with the test's call report
    (`node.rep_call`, set by the scenarios' conftest), whatever the block raises."""
    started = time.monotonic()
    try:
        yield
    finally:
        record(summary, key, progress, time.monotonic() - started, getattr(node, "rep_call", None))
