"""`workload job`: the job handler — claims, runs, renews and completes jobs.

Kinds: `sleep` and `cpu` run in worker threads (up to WORKLOAD_CONCURRENCY at once);
`blocking` runs inside the work loop itself, stalling it (no heartbeat, no lease renewal)
like Galaxy's in-process indexing; `fail` ends in state `failed`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from workload import log, queue
from workload.config import Settings
from workload.loop import Loop


@dataclass
class Running:
    """A claimed attempt and, once it ended, its result (ok, error)."""

    claim: queue.Claim
    started: float = field(default_factory=time.monotonic)
    result: tuple[bool, str | None] | None = None
    lost: bool = False


def execute(claim: queue.Claim) -> tuple[bool, str | None]:
    """Run one job's payload; returns (ok, error)."""
    end = time.monotonic() + claim.duration
    if claim.kind == "cpu":
        x = 0
        while time.monotonic() < end:
            for i in range(2000):
                x += i * i
    else:  # sleep, blocking, fail
        while (left := end - time.monotonic()) > 0:
            time.sleep(left)
    if claim.kind == "fail":
        return False, "job failed on purpose (kind=fail)"
    return True, None


class JobHandler(Loop):
    """The job role."""

    role = "job"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.running: dict[tuple[int, int], Running] = {}
        self._last_renew = time.monotonic()

    def in_flight(self) -> int:
        return len(self.running)

    def iteration(self, claiming: bool) -> None:
        conn = self.connection()
        self._complete_finished()
        self._renew_if_due()
        if claiming:
            free = self.settings.concurrency - len(self.running)
            if free > 0:
                for claim in queue.claim(conn, self.settings.handler_id, free, self.settings.lease,
                                         self.settings.version):
                    log.event("claimed", job=claim.id, kind=claim.kind, duration=claim.duration,
                              attempt=claim.attempt)
                    self._start(claim)
                self._complete_finished()

    def _start(self, claim: queue.Claim) -> None:
        item = Running(claim)
        self.running[(claim.id, claim.attempt)] = item
        if claim.kind == "blocking":
            log.event("blocking_started", job=claim.id, duration=claim.duration)
            item.result = execute(claim)  # stalls the work loop on purpose
        else:
            threading.Thread(target=self._work, args=(item,), name=f"job-{claim.id}", daemon=True).start()

    def _work(self, item: Running) -> None:
        try:
            item.result = execute(item.claim)
        except Exception as exc:  # noqa: BLE001 - a job's failure is recorded, not raised
            item.result = (False, f"{type(exc).__name__}: {exc}")
        self.life.wake()

    def _complete_finished(self) -> None:
        for key, item in list(self.running.items()):
            if item.result is None:
                continue
            ok, error = item.result
            outcome = queue.complete(self.connection(), self.settings.handler_id, item.claim, ok, error)
            del self.running[key]
            log.event("finished", job=item.claim.id, attempt=item.claim.attempt, outcome=outcome,
                      seconds=round(time.monotonic() - item.started, 3),
                      level="info" if outcome == "done" else "warning")

    def _renew_if_due(self) -> None:
        if not self.running or time.monotonic() - self._last_renew < self.settings.lease / 3:
            self._last_renew = time.monotonic() if not self.running else self._last_renew
            return
        claims = [item.claim for item in self.running.values()]
        held = queue.renew(self.connection(), self.settings.handler_id, claims, self.settings.lease)
        self._last_renew = time.monotonic()
        for item in self.running.values():
            if item.claim.id not in held and not item.lost:
                item.lost = True
                log.event("lease_lost", level="warning", job=item.claim.id, attempt=item.claim.attempt)

    def next_wait(self) -> float:
        if not self.running:
            return self.settings.poll
        due = self.settings.lease / 3 - (time.monotonic() - self._last_renew)
        return max(0.0, min(self.settings.poll, due))

    def abandon(self) -> None:
        """Complete what already ended, requeue the rest so another handler reruns it."""
        try:
            self._complete_finished()
            claims = [item.claim for item in self.running.values()]
            requeued = queue.requeue(self.connection(), self.settings.handler_id, claims)
            for job_id in requeued:
                log.event("requeued", level="warning", job=job_id)
            for claim in claims:
                if claim.id not in requeued:
                    log.event("requeue_skipped", level="warning", job=claim.id, reason="lease no longer ours")
        except Exception as exc:  # noqa: BLE001 - the leases expire anyway
            log.event("requeue_failed", level="error", error=f"{type(exc).__name__}: {exc}",
                      note="the leases expire and another handler reclaims the jobs")
