"""The bodies of the generated live tests. Each records its numbers first (report.Results),
then asserts; `expect` holds what the policy model computed when the suite was generated."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.rest import ApiException

from . import report
from .appjobs import TERMINAL, AppJobs, JobState
from .helmcli import Helm
from .kube import COMPONENT, INSTANCE, Kube, PodRecorder, PodTrace, ready, ready_at, restarts, ts, wait_for

UNREACHABLE_DB = "postgresql://jobhandlers-live@127.0.0.1:1/unreachable"
WAITING_GONE_LIMIT = 15  # seconds: "gone in seconds", far below any handler's grace


@dataclass
class Live:
    """One release under test and what is known about it."""

    kube: Kube
    helm: Helm
    namespace: str
    release: str
    values: list[Path]
    expect: dict[str, Any]
    results: report.Results
    max_job_seconds: int | None = None
    rollouts: int = 0
    running_since: float = 0.0
    installed: bool = field(default=False)

    @cached_property
    def jobs(self) -> AppJobs:
        """The app's jobs through the description (one per Live: it counts the Jobs it ran)."""
        return AppJobs(self.kube, self.namespace, self.release, self.expect["job_roles"])

    @property
    def max_grace(self) -> int:
        """The longest grace of the release's roles (what a stop or an uninstall may take)."""
        return max(r["grace"] for r in self.expect["roles"].values())

    def job_seconds(self, role: str) -> int:
        """How long the test's jobs of `role` run: the described length, else the role's
        maxJobRuntimeSeconds, capped by --max-job-seconds."""
        spec = self.expect["job_roles"][role]
        n = spec["seconds"] or self.expect["roles"][role]["max_job_runtime"]
        return min(n, self.max_job_seconds) if self.max_job_seconds else n

    def handler_pods(self) -> list[Any]:
        return [p for r in self.expect["roles"] for p in self.kube.role_pods(self.namespace, self.release, r)]

    def all_ready(self) -> bool:
        pods = self.handler_pods()
        want = sum(int(r["replicas"]) for r in self.expect["roles"].values())
        return len(pods) >= want and all(ready(p) for p in pods)

    def require_installed(self) -> None:
        if not self.installed:
            raise AssertionError("the release is not installed (the install test failed or did not run)")


def _migration_jobs(live: Live) -> list[Any]:
    sel = f"{INSTANCE}={live.release},{COMPONENT}=migration"
    return list(live.kube.batch.list_namespaced_job(live.namespace, label_selector=sel).items)


def _check_migration(live: Live, numbers: dict[str, Any]) -> list[str]:
    """The migration Job ran once (one pod) and succeeded."""
    if not live.expect["migration"]:
        return []
    jobs = _migration_jobs(live)
    numbers["migration_jobs"] = len(jobs)
    problems = []
    if len(jobs) != 1:
        return [f"{len(jobs)} migration Jobs, expected 1"]
    job = jobs[0]
    pods = live.kube.pods(live.namespace, f"job-name={job.metadata.name}")
    numbers["migration_pods"] = len(pods)
    start, end = ts(job.status.start_time), ts(job.status.completion_time)
    if start and end:
        numbers["migration_seconds"] = round(end - start, 1)
    if (job.status.succeeded or 0) != 1 or (job.status.failed or 0) != 0:
        problems.append(f"migration Job {job.metadata.name}: succeeded={job.status.succeeded} failed={job.status.failed}")
    if len(pods) > 1:
        problems.append(f"the migration ran {len(pods)} times (pods {[p.metadata.name for p in pods]})")
    return problems


def install(live: Live) -> None:
    """helm install --wait; the migration Job ran once and succeeded; every handler pod Ready
    with 0 restarts; time to Ready; helm test passes."""
    res = live.helm.install(live.values, live.expect["install_timeout"])
    n: dict[str, Any] = {"helm_install_seconds": res.seconds}
    live.results.record("install", **n)
    res.check("helm install")
    live.installed = True
    wait_for("every handler pod Ready", live.all_ready, 120)
    pods = live.handler_pods()
    n["pods"] = len(pods)
    n["restarts"] = sum(restarts(p) for p in pods)
    to_ready = [ready_at(p) - ts(p.metadata.creation_timestamp) for p in pods if ready_at(p)]
    n["pod_to_ready_max_seconds"] = round(max(to_ready), 1) if to_ready else None
    problems = _check_migration(live, n)
    t = live.helm.test()
    n["helm_test_seconds"] = t.seconds
    live.results.record("install", **n)
    if n["restarts"]:
        problems.append("restarts: " + ", ".join(f"{p.metadata.name}={restarts(p)}" for p in pods if restarts(p)))
    if t.rc != 0:
        problems.append(f"helm test failed (exit {t.rc}): {t.output[-1500:]}")
    assert not problems, "; ".join(problems)


def _submit_in_flight(live: Live) -> dict[str, str]:
    """Per job role, two jobs per replica of role-length; returns id -> role once at least one
    per replica runs."""
    jobs: dict[str, str] = {}
    for role in live.expect["job_roles"]:
        for _ in range(2 * max(1, int(live.expect["roles"][role]["replicas"]))):
            jobs[live.jobs.submit(role, live.job_seconds(role))] = role

    def running() -> bool:
        states = {j: live.jobs.read(r, j).state for j, r in jobs.items()}
        return all(sum(1 for j, r in jobs.items() if r == role and states[j] in ("running",) + TERMINAL)
                   >= max(1, int(live.expect["roles"][role]["replicas"])) for role in live.expect["job_roles"])
    wait_for("the jobs to be running", running, 120, interval=2)
    live.running_since = time.time()
    return jobs


def _left_at_stop(live: Live, jobs: dict[str, str], traces: list[PodTrace], n: dict[str, Any]) -> None:
    """Per job role, at most how much of the jobs' length was left when the first of its
    pods began to stop (they were seen running at running_since): how hard the drain was tested."""
    for role in set(jobs.values()):
        stops = [t.sigterm_at for t in traces if t.role == role and t.sigterm_at is not None]
        if stops and live.running_since:
            n[f"{role}_left_at_stop_seconds"] = round(live.job_seconds(role) - (min(stops) - live.running_since), 1)


def _job_problems(live: Live, jobs: dict[str, str], states: dict[str, JobState], traces: list[PodTrace]) -> list[str]:
    """Every job done exactly once; a job that was not names itself and the grace."""
    problems = []
    for job_id, role in jobs.items():
        s = states[job_id]
        if s.state == "done" and s.runs in (None, 1):
            continue
        r = live.expect["roles"][role]
        stopped = [t for t in traces if t.role == role and t.exit_seconds is not None]
        exits = ", ".join(f"{t.name} exited {t.exit_seconds} s after SIGTERM" for t in stopped) or "no pod seen stopping"
        ran = f"ran {s.runs} times" if s.runs is not None else "ran more than once or not at all"
        problems.append(
            f"job {job_id} (role {role}, {live.job_seconds(role)} s) ended {s.state} ({s.raw}) and {ran}: it was "
            f"killed or released mid-job when its handler stopped ({exits}): the grace of {r['grace']} s "
            f"(maxJobRuntimeSeconds {r['max_job_runtime']}, DRAIN_DEADLINE_SECONDS {r['drain_deadline']}) "
            f"was too short for it")
    return problems


def _exit_problems(live: Live, traces: list[PodTrace], n: dict[str, Any]) -> list[str]:
    """Stopped pods exited before their grace (SIGKILL at the grace means they did not)."""
    problems = []
    for role in live.expect["roles"]:
        mine = [t for t in traces if t.role == role]
        exits = [t.exit_seconds for t in mine if t.exit_seconds is not None]
        if exits:
            n[f"{role}_exit_max_seconds"] = max(exits)
            n[f"{role}_grace_seconds"] = live.expect["roles"][role]["grace"]
        for t in mine:
            grace = live.expect["roles"][role]["grace"]
            if t.exit_seconds is None:
                problems.append(f"{t.name}: no exit seen")
            elif t.exit_seconds >= grace or 137 in t.exit_codes.values():
                problems.append(f"{t.name} (role {role}) was killed at its grace: exited {t.exit_seconds} s after "
                                f"SIGTERM, grace {grace} s, exit codes {t.exit_codes}")
    return problems


def _new_pod_problems(live: Live, old: set[str], n: dict[str, Any]) -> list[str]:
    new = [p for p in live.handler_pods() if p.metadata.uid not in old]
    n["new_pods"] = len(new)
    n["new_pod_restarts"] = sum(restarts(p) for p in new)
    return [f"{p.metadata.name} restarted {restarts(p)} times" for p in new if restarts(p)]


def _settle(live: Live, rec: PodRecorder, stopped: set[str], jobs: dict[str, str], n: dict[str, Any]) -> tuple[
        list[PodTrace], dict[str, JobState]]:
    grace = live.max_grace
    wait_for("the stopped pods to be gone", lambda: all(live.kube.gone(live.namespace, t.name, t.uid) for t in rec.of(stopped))
             and len(rec.of(stopped)) == len(stopped), grace + 120, interval=2)
    time.sleep(2)  # the watch's last events
    longest = max(live.job_seconds(r) for r in set(jobs.values()))
    t0 = time.monotonic()
    states = live.jobs.wait_states(jobs, TERMINAL, longest + grace + 180)
    n["jobs"] = len(jobs)
    n["jobs_done_once"] = sum(1 for s in states.values() if s.state == "done" and s.runs in (None, 1))
    n["jobs_wait_after_stop_seconds"] = round(time.monotonic() - t0, 1)
    n["commands_run_as_jobs"] = live.jobs.as_jobs  # so far, in the suite (the Job form of the description)
    return rec.of(stopped), states


def rollout(live: Live) -> None:
    """Jobs in flight on every job role, then `helm upgrade` changes the pod template: every
    job done exactly once, old pods exit before their grace, new pods 0 restarts."""
    live.require_installed()
    jobs = _submit_in_flight(live)
    old = {p.metadata.uid for p in live.handler_pods()}
    live.rollouts += 1
    n: dict[str, Any] = {"job_seconds": {r: live.job_seconds(r) for r in live.expect["job_roles"]}}
    with PodRecorder(live.kube, live.namespace, live.release) as rec:
        time.sleep(1)
        res = live.helm.upgrade(live.values, live.expect["install_timeout"],
                                ["--set-string", f"podAnnotations.jobhandlers\\.io/live-rollout={live.rollouts}"])
        n["helm_upgrade_seconds"] = res.seconds
        live.results.record("rollout", **n)
        res.check("helm upgrade")
        traces, states = _settle(live, rec, old, jobs, n)
    _left_at_stop(live, jobs, traces, n)
    problems = _job_problems(live, jobs, states, traces) + _exit_problems(live, traces, n)
    problems += _check_migration(live, n) + _new_pod_problems(live, old, n)
    live.results.record("rollout", **n)
    assert not problems, "; ".join(problems)


def eviction(live: Live) -> None:
    """Jobs in flight, then one pod of each job role evicted through the Eviction API (its
    PDB decides): every job done exactly once, the pod exits before its grace, the
    replacement has 0 restarts."""
    live.require_installed()
    jobs = _submit_in_flight(live)
    old = {p.metadata.uid for p in live.handler_pods()}
    n: dict[str, Any] = {"job_seconds": {r: live.job_seconds(r) for r in live.expect["job_roles"]}}
    evicted: set[str] = set()
    with PodRecorder(live.kube, live.namespace, live.release) as rec:
        time.sleep(1)
        for role in live.expect["job_roles"]:
            pod = sorted(live.kube.role_pods(live.namespace, live.release, role), key=lambda p: p.metadata.name)[0]
            t0 = time.monotonic()

            def evict() -> bool:
                try:
                    live.kube.evict(live.namespace, pod.metadata.name)
                    return True
                except ApiException as exc:
                    if exc.status == 429:  # the PDB refuses for now
                        return False
                    raise
            wait_for(f"the PDB to allow evicting {pod.metadata.name}", evict, 120, interval=2)
            n[f"{role}_eviction_allowed_after_seconds"] = round(time.monotonic() - t0, 1)
            evicted.add(pod.metadata.uid)
        live.results.record("eviction", **n)
        traces, states = _settle(live, rec, evicted, jobs, n)
    wait_for("every handler pod Ready again", live.all_ready, 180)
    _left_at_stop(live, jobs, traces, n)
    problems = _job_problems(live, jobs, states, traces) + _exit_problems(live, traces, n)
    problems += _new_pod_problems(live, old, n)
    live.results.record("eviction", **n)
    assert not problems, "; ".join(problems)


def _waiting_pod(live: Live, role: str, name: str) -> dict[str, Any]:
    """A bare pod of the role's template whose database is unreachable: it waits in
    wait-for-migrations. Not selected by the role's Service or PDB."""
    kind = live.expect["roles"][role]["kind"]
    obj_name = live.expect["roles"][role]["object"]
    read = live.kube.apps.read_namespaced_stateful_set if kind == "StatefulSet" else \
        live.kube.apps.read_namespaced_deployment
    spec = live.kube.api.sanitize_for_serialization(read(obj_name, live.namespace).spec.template.spec)
    spec = copy.deepcopy(spec)
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        env = [e for e in c.get("env", []) if e.get("name") != "DATABASE_URL"]
        c["env"] = env + [{"name": "DATABASE_URL", "value": UNREACHABLE_DB}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"jobhandlers.io/live": "waiting"}}, "spec": spec}


def waiting_pod(live: Live) -> None:
    """A pod waiting for the schema (wait-for-migrations, database unreachable) is deleted
    and is gone in seconds, not after its grace."""
    live.require_installed()
    role = live.expect["waiting_role"]
    assert role, "waitForMigrations is off: no pod waits for the schema"
    name = f"{live.release}-live-waiting"
    live.kube.core.create_namespaced_pod(live.namespace, _waiting_pod(live, role, name))
    n: dict[str, Any] = {"role": role, "grace_seconds": live.expect["roles"][role]["grace"]}

    def waiting() -> bool:
        pod = live.kube.core.read_namespaced_pod(name, live.namespace)
        st = {s.name: s for s in pod.status.init_container_statuses or []}
        w = st.get("wait-for-migrations")
        return bool(w and w.state and w.state.running)
    wait_for(f"{name} to wait in wait-for-migrations", waiting, 120)
    time.sleep(3)
    assert waiting(), f"{name} stopped waiting with its database unreachable (its schema check passed?)"
    t0 = time.monotonic()
    live.kube.core.delete_namespaced_pod(name, live.namespace)
    wait_for(f"{name} to be gone", lambda: live.kube.gone(live.namespace, name), 120, interval=0.5)
    n["gone_seconds"] = round(time.monotonic() - t0, 1)
    live.results.record("waiting", **n)
    assert n["gone_seconds"] < WAITING_GONE_LIMIT, \
        f"the waiting pod took {n['gone_seconds']} s to go (limit {WAITING_GONE_LIMIT} s, grace {n['grace_seconds']} s)"


def upgrade(live: Live, chart: str | Path, version: str | None, values: list[Path]) -> None:
    """Install `chart` (--from) with `values` (--from-values), start jobs, then `helm upgrade`
    to the tool's chart with the suite's values: the migration Job ran once and succeeded,
    every job started before the upgrade is done exactly once, the pods that rolled exited
    before their grace, the new ones have 0 restarts. Uninstalls at the end."""
    if live.installed:  # the earlier tests' release (uninstall deselected or failed)
        live.helm.uninstall(live.max_grace + 120).check("helm uninstall")
        live.installed = False
    n: dict[str, Any] = {"from": f"{chart}{' ' + version if version else ''}"}
    res = live.helm.install(values, live.expect["install_timeout"], ["--version", version] if version else (),
                            chart=chart)
    n["helm_install_from_seconds"] = res.seconds
    live.results.record("upgrade", **n)
    res.check(f"helm install of {n['from']}")
    live.installed = True
    wait_for("every handler pod of the old release Ready", lambda: all(ready(p) for p in live.handler_pods())
             and bool(live.handler_pods()), 120)
    jobs = _submit_in_flight(live)
    old = {p.metadata.uid for p in live.handler_pods()}
    n["job_seconds"] = {r: live.job_seconds(r) for r in live.expect["job_roles"]}
    with PodRecorder(live.kube, live.namespace, live.release) as rec:
        time.sleep(1)
        t0 = time.time()
        res = live.helm.upgrade(live.values, live.expect["install_timeout"])
        n["helm_upgrade_seconds"] = res.seconds
        live.results.record("upgrade", **n)
        res.check("helm upgrade to the tool's chart")
        running = {p.metadata.uid for p in live.handler_pods()}
        stopped = {u for u in old if u not in running or (u in rec.traces and rec.traces[u].sigterm_at is not None)}
        n["pods_rolled"] = len(stopped)
        traces, states = _settle(live, rec, stopped, jobs, n)
    _left_at_stop(live, jobs, traces, n)
    problems = _job_problems(live, jobs, states, traces) + _exit_problems(live, traces, n)
    problems += _check_migration(live, n) + _new_pod_problems(live, old, n)
    migrations = _migration_jobs(live)
    if migrations and live.expect["migration"]:
        n["migration_job_of_the_upgrade"] = (ts(migrations[0].metadata.creation_timestamp) or 0) >= t0 - 1
    live.results.record("upgrade", **n)
    live.helm.uninstall(live.max_grace + 120).check("helm uninstall after the upgrade test")
    live.installed = False
    assert not problems, "; ".join(problems)


def _kept_hooks(live: Live) -> set[str]:
    """kind/name of the release's hooks helm keeps after they ran (no hook-succeeded delete
    policy): helm never deletes hooks on uninstall, so these stay by the chart's design."""
    res = live.helm.run(["get", "hooks", live.release], 120).check("helm get hooks")
    kept = set()
    for doc in yaml.safe_load_all(res.output):
        if not isinstance(doc, dict) or "kind" not in doc:
            continue
        policy = ((doc.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook-delete-policy", "")
        if "hook-succeeded" not in policy:
            kept.add(f"{doc['kind']}/{doc['metadata']['name']}")
    return kept


def uninstall(live: Live) -> None:
    """helm uninstall --wait leaves no object of the release and no running pod; the hooks
    the chart keeps on purpose (the last migration Job and its pod, the helm test pod: helm
    never deletes hooks) are named in the numbers and must have finished."""
    live.require_installed()
    kept = _kept_hooks(live)
    hook_jobs = {k.split("/", 1)[1] for k in kept if k.startswith("Job/")}
    res = live.helm.uninstall(live.max_grace + 120)
    n: dict[str, Any] = {"helm_uninstall_seconds": res.seconds}
    live.results.record("uninstall", **n)
    res.check("helm uninstall")
    live.installed = False

    def hook_pod(name: str) -> bool:
        pod = live.kube.core.read_namespaced_pod(name, live.namespace)
        return (pod.metadata.labels or {}).get("job-name") in hook_jobs and pod.status.phase in ("Succeeded", "Failed")

    def left() -> list[str]:
        out = []
        for item in live.kube.leftovers(live.namespace):
            try:
                if item in kept and not (item.startswith("Pod/") and not _finished_pod(live, item)):
                    continue
                if item.startswith("Pod/") and hook_pod(item.split("/", 1)[1]):
                    continue
            except ApiException as exc:
                if exc.status == 404:  # gone while we looked
                    continue
                raise
            out.append(item)
        return out
    t0 = time.monotonic()
    try:
        wait_for("the release's objects to be gone", lambda: not left(), 60, interval=1)
    except AssertionError:
        pass
    remaining = left()
    n["leftovers"] = len(remaining)
    n["empty_after_seconds"] = round(time.monotonic() - t0, 1)
    n["hooks_kept"] = sorted(k for k in live.kube.leftovers(live.namespace) if k not in remaining)
    live.results.record("uninstall", **n)
    assert not remaining, f"helm uninstall left {', '.join(remaining)}"


def _finished_pod(live: Live, item: str) -> bool:
    pod = live.kube.core.read_namespaced_pod(item.split("/", 1)[1], live.namespace)
    return pod.status.phase in ("Succeeded", "Failed")
