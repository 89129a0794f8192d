"""`workload job` in launcher mode (WORKLOAD_LAUNCH=job): claim a job, run it as a Kubernetes
Job, watch and collect it. Jobs outlive the handler: on SIGTERM it stops claiming and exits at
once; the next handler adopts the Jobs it finds (by the launcher label) and collects them.

Per sync (start-up, then every WORKLOAD_LAUNCH_SYNC_SECONDS):
  1. read the running jobs owned by this launcher's Jobs from the database, THEN list the
     Jobs (a job handed over before the read has its Job created before it too);
  2. every active Job: adopt (hand over a job still leased to a dead handler) and watch;
  3. every finished Job: collect — a Job that ended without recording (deadline, crash,
     eviction) fails its job — then delete it (background propagation: its pod goes too);
  4. every owned job without a Job (confirmed by a GET): failed, not requeued — the Job was
     deleted by someone while running, its pod may still be running (a background deletion),
     so a second Job of the same name could run the job twice.
"""

from __future__ import annotations

import time

from workload import launchq, log, queue
from workload.config import Settings
from workload.jobspec import ANN_ATTEMPT, LABEL_JOB_ID, LaunchSettings, job_manifest
from workload.kubeapi import ApiError, KubeApi, failure_reason, job_phase
from workload.loop import Loop


class JobLauncher(Loop):
    """The job role in launcher mode."""

    role = "job"

    def __init__(self, settings: Settings, launch: LaunchSettings, api: KubeApi) -> None:
        super().__init__(settings)
        self.launch = launch
        self.api = api
        self.active: set[int] = set()  # job ids with an unfinished Job
        self.seen: set[int] = set()    # ids this process already announced (launched/adopted)
        self._next_sync = 0.0
        self._synced = False

    def iteration(self, claiming: bool) -> None:
        if time.monotonic() >= self._next_sync:
            self.sync()
            self._next_sync = time.monotonic() + self.launch.sync
        if claiming and self._synced:
            free = self.settings.concurrency - len(self.active)
            if free > 0:
                for claim in queue.claim(self.connection(), self.settings.handler_id, free, self.settings.lease,
                                         self.settings.version):
                    log.event("claimed", job=claim.id, kind=claim.kind, duration=claim.duration,
                              attempt=claim.attempt)
                    self._launch(claim)

    # ---- launching ----
    def _launch(self, claim: queue.Claim) -> None:
        ls = self.launch
        name = ls.job_name(claim.id)
        body = job_manifest(ls, claim.id, claim.attempt, claim.duration, self.settings.handler_id)
        try:
            self.api.create_job(ls.namespace, body)
            created = True
        except ApiError as exc:
            if exc.status != 409:
                requeued = queue.requeue(self.connection(), self.settings.handler_id, [claim])
                log.event("launch_failed", level="error", job=claim.id, name=name, error=str(exc)[:300],
                          requeued=bool(requeued))
                raise
            created = False  # AlreadyExists: a handler before us created it and died before handing over
        owner = ls.owner(claim.id)
        handed = launchq.hand_over(self.connection(), claim.id, owner)
        self.active.add(claim.id)
        self.seen.add(claim.id)
        log.event("launched" if created else "adopted", job=claim.id, name=name, attempt=claim.attempt,
                  reason=None if created else "already exists", handed_over=handed)

    # ---- adoption and collection ----
    def sync(self) -> None:
        conn = self.connection()
        ls = self.launch
        owned = launchq.owned(conn, f"k8s-job:{ls.prefix}-job-")
        jobs = self.api.list_jobs(ls.namespace, ls.selector)
        by_id: dict[int, dict] = {}
        for job in jobs:
            try:
                by_id[int(job["metadata"]["labels"][LABEL_JOB_ID])] = job
            except (KeyError, ValueError):
                continue
        active: set[int] = set()
        for job_id, job in sorted(by_id.items()):
            phase = job_phase(job)
            if phase == "active":
                active.add(job_id)
                self._adopt(job_id, job)
            elif not job["metadata"].get("deletionTimestamp"):
                self._collect(job_id, job, phase)
        for job_id, owner in sorted(owned.items()):
            if job_id not in by_id and owner == ls.owner(job_id) and self.api.get_job(ls.namespace, ls.job_name(job_id)) is None:
                outcome = launchq.finish(conn, job_id, owner, False, f"Kubernetes Job {ls.job_name(job_id)} disappeared "
                                         "while running (deleted?); not rerun: its pod may still be running",
                                         self.settings.handler_id)
                log.event("job_lost", level="warning", job=job_id, name=ls.job_name(job_id), outcome=outcome)
        self.active = active
        if not self._synced:
            self._synced = True
            log.event("adoption", jobs=len(by_id), active=len(active), owned=len(owned))

    def _adopt(self, job_id: int, job: dict) -> None:
        owner = self.launch.owner(job_id)
        current = launchq.state(self.connection(), job_id)
        handed = False
        if current and current[0] == "running" and current[1] != owner:
            handed = launchq.hand_over(self.connection(), job_id, owner)  # its launcher died before handing over
        if job_id not in self.seen or handed:
            self.seen.add(job_id)
            log.event("adopted", job=job_id, name=job["metadata"]["name"], reason="found at sync",
                      attempt=(job["metadata"].get("annotations") or {}).get(ANN_ATTEMPT), handed_over=handed)

    def _collect(self, job_id: int, job: dict, phase: str) -> None:
        ls = self.launch
        name = job["metadata"]["name"]
        current = launchq.state(self.connection(), job_id)
        recorded = "none"
        if current and current[0] == "running":
            # the pod ended without recording: deadline, OOM, eviction, crash
            reason = failure_reason(job) if phase == "failed" else "Job complete but the run recorded nothing"
            recorded = launchq.finish(self.connection(), job_id, ls.owner(job_id), False,
                                      f"Kubernetes Job {name}: {reason}", self.settings.handler_id)
            if recorded == "stale":  # still leased to a dead handler's claim: take it, then fail it
                launchq.hand_over(self.connection(), job_id, ls.owner(job_id))
                recorded = launchq.finish(self.connection(), job_id, ls.owner(job_id), False,
                                          f"Kubernetes Job {name}: {reason}", self.settings.handler_id)
        final = launchq.state(self.connection(), job_id)
        deleted = self.api.delete_job(ls.namespace, name, "Background")
        log.event("collected", job=job_id, name=name, job_phase=phase, state=final[0] if final else None,
                  failed_by_launcher=recorded if recorded != "none" else None, deleted=deleted,
                  adopted=job_id not in self.seen)
        self.seen.discard(job_id)

    # ---- lifecycle ----
    def in_flight(self) -> int:
        return 0  # launched Jobs outlive the handler: nothing to wait for on SIGTERM

    def on_stop(self) -> None:
        log.event("leaving_jobs", active=len(self.active), note="they run on; the next handler adopts them")
