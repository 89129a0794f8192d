"""Real Galaxy 26.1.2 (unmodified, image jobhandlers/galaxy:26.1) with its Kubernetes job runner,
from values-examples/galaxy-k8s.yaml: every Galaxy job is a Kubernetes Job in the release
namespace, the job handlers only create and watch them, and share Galaxy's data directory
with the job pods through a ReadWriteMany claim (here a static hostPath PV on the directory
kind-up.sh mounts into every node). 22a a rollout of the job StatefulSet with jobs in flight;
22b a job handler SIGKILLed (pod force-deleted, grace 0) with jobs in flight, one of them ending
while it is away. The local runner's loss on the same rollout is 16c's.

22a and 22b share one install (one Galaxy costs minutes of a 2-core machine; each checks what
it needs first, so either also runs alone) and one xdist group. Jobs are the jh_sleep tool
(>= 60 s, writes `slept N`): each must end `ok` with that output, with exactly one Kubernetes
Job and one pod, never restarted."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from typing import Iterator

import pytest

from jhkind import galaxy as gx
from jhkind import setup
from jhkind.cluster import RESTRICTED_LABELS, Kube, parse_time
from jhkind.diagnostics import dump_namespace
from jhkind.helm import Helm
from jhkind.identity import lifetimes, overlaps
from jhkind.observe import deletion_started, terminated_state
from jhkind.postgres import Postgres
from jhkind.progress import Progress, record
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(1800)]
SHARED = pytest.mark.xdist_group("galaxy-k8s")

CLAIM = "galaxy-data"          # values-examples/galaxy-k8s.yaml: extraVolumes, k8s_persistent_volume_claims
NODE_DIR = "/jobhandlers-shared"  # kind-up.sh: the host directory every node mounts (extraMounts)
APP_UID = 10001                # the Galaxy image's user; the job pods run as it too (k8s_run_as_user_id)
GALAXY_JOBS = "app.kubernetes.io/managed-by=galaxy"  # a label Galaxy puts on every Job's pod template


def _node_sh(script: str) -> None:
    """Run a shell script as root in the control-plane node (the shared directory is the same
    host directory on every node)."""
    node = f"{setup.cluster_name()}-control-plane"
    res = subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"{node}: {script}: {res.stderr}"


def shared_claim(kube: Kube, namespace: str) -> str:
    """A ReadWriteMany claim CLAIM in the namespace, bound to a static hostPath PV on
    NODE_DIR/<namespace>, a directory owned by APP_UID (Galaxy and its job pods write it).
    Returns the PV's name."""
    _node_sh(f"test -d {NODE_DIR} || {{ echo 'no {NODE_DIR}: a cluster made before kind-up.sh mounted it "
             f"(make kind-down kind-up)' >&2; exit 1; }}; "
             f"mkdir -p {NODE_DIR}/{namespace} && chown {APP_UID}:{APP_UID} {NODE_DIR}/{namespace}")
    pv = f"jh-{namespace}-{CLAIM}"
    kube.core.create_persistent_volume({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": pv, "labels": {"jobhandlers.test/namespace": namespace}},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                 "hostPath": {"path": f"{NODE_DIR}/{namespace}", "type": "Directory"},
                 "claimRef": {"namespace": namespace, "name": CLAIM}},
    })
    kube.core.create_namespaced_persistent_volume_claim(namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": pv,
                 "resources": {"requests": {"storage": "5Gi"}}},
    })
    wait_until(lambda: (kube.core.read_namespaced_persistent_volume_claim(CLAIM, namespace).status.phase == "Bound"),
               60, f"claim {CLAIM} bound to {pv}", interval=1)
    return pv


class JobWatch:
    """Every Kubernetes Job Galaxy creates in the namespace, polled every 2 s in a thread (the
    handler deletes a Job once it has collected it): Galaxy job id (label
    app.galaxyproject.org/job_id) -> Job names, Job name -> pod names and their highest
    container restart count, and each Job's completion time."""

    def __init__(self, kube: Kube, namespace: str):
        self.kube, self.namespace = kube, namespace
        self.jobs: dict[str, set[str]] = {}
        self.pods: dict[str, set[str]] = {}
        self.restarts: dict[str, int] = {}
        self.labels: dict[str, str] = {}
        self.completed: dict[str, float] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "JobWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # reported by the test, never silent
                self.errors.append(repr(exc))
            self._stop.wait(2)

    def poll(self) -> None:
        for job in self.kube.jobs(self.namespace):
            meta = job["metadata"]
            labels = ((job["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
            if labels.get("app.kubernetes.io/managed-by") != "galaxy":
                continue
            self.jobs.setdefault(labels.get("app.galaxyproject.org/job_id", "?"), set()).add(meta["name"])
            done = (job.get("status") or {}).get("completionTime")
            if done:
                self.completed[meta["name"]] = parse_time(done)
        for pod in self.kube.pods(self.namespace, GALAXY_JOBS):
            name = pod["metadata"]["labels"].get("job-name", "?")
            self.pods.setdefault(name, set()).add(pod["metadata"]["name"])
            self.labels = pod["metadata"]["labels"]
            for st in (pod.get("status") or {}).get("containerStatuses") or []:
                key = pod["metadata"]["name"]
                self.restarts[key] = max(self.restarts.get(key, 0), int(st.get("restartCount") or 0))


class Shared:
    def __init__(self, sc: Scenario, install, watch: JobWatch):
        self.sc, self.install, self.watch = sc, install, watch


@pytest.fixture(scope="module")
def galaxy_k8s(kube: Kube, helm: Helm, postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One namespace (Pod Security restricted) + database + ReadWriteMany claim + Galaxy install
    (helm install --wait of galaxy-k8s.yaml) for 22a and 22b."""
    namespace = f"jh-gxk8s-{secrets.token_hex(2)}"
    progress = Progress("22-galaxy-k8s")
    kube.create_namespace(namespace, dict(RESTRICTED_LABELS))
    sc = Scenario(kube, helm, postgres, namespace, tmp_path_factory.mktemp("galaxy-k8s"), progress).open()
    shared: Shared | None = None
    pv = None
    watch = JobWatch(kube, namespace).start()
    try:
        with progress.phase(f"ReadWriteMany claim {CLAIM} (hostPath PV on {NODE_DIR})"):
            pv = shared_claim(kube, namespace)
        with progress.phase("helm install --wait of values-examples/galaxy-k8s.yaml"):
            res = gx.install(sc, timeout_s=900, example=gx.EXAMPLE_K8S)
        shared = Shared(sc, res, watch)
        yield shared
    finally:
        watch.stop()
        failed = shared is None or shared.install.rc != 0
        with progress.phase("cleanup"):
            # the MutatingAdmissionPolicy and its binding are cluster-scoped: uninstall removes them
            sc.helm.run(["uninstall", sc.release, "-n", namespace, "--wait", "--timeout", "120s"], timeout=180)
            sc.close(failed, delete_namespace=True)
            if pv:
                kube._ignore_404(kube.core.delete_persistent_volume, pv)
            _node_sh(f"rm -rf {NODE_DIR}/{namespace}")


@pytest.fixture
def shared(request, galaxy_k8s: Shared, scenario_summary: dict) -> Iterator[Scenario]:
    sc = galaxy_k8s.sc
    galaxy_k8s.install.check("helm install of values-examples/galaxy-k8s.yaml")
    sc.progress = Progress(request.node.name.removeprefix("test_")[:24])
    started = time.monotonic()
    try:
        yield sc
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is None or rep.failed:
            dump_namespace(sc.kube, sc.namespace, sc.helm.status(sc.release, sc.namespace))
        record(scenario_summary, request.node.name, sc.progress, time.monotonic() - started, rep)


def _rows(sc: Scenario, ids: set[int]) -> list[dict]:
    """Galaxy's job rows with their Kubernetes Job name and the times of their state changes."""
    rows = sc.pg.sql(sc.database, "SELECT j.id, j.state, coalesce(j.handler, ''), coalesce(j.job_runner_external_id, ''), "
                     "coalesce(j.info, ''), "
                     "(SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'queued'), "
                     "(SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'running'), "
                     "(SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'ok') "
                     "FROM job j ORDER BY j.id")
    out = []
    for i, s, h, ext, info, q, r, ok in rows:
        if int(i) in ids:
            out.append({"id": int(i), "state": s, "handler": h, "external_id": ext, "info": info,
                        "queued": float(q) if q else None, "running": float(r) if r else None,
                        "ok": float(ok) if ok else None})
    return out


def _outputs(sc: Scenario, ids: set[int]) -> dict[int, tuple[str, int]]:
    """Galaxy job id -> (its output dataset's state, file size)."""
    rows = sc.pg.sql(sc.database, "SELECT jtod.job_id, d.state, coalesce(d.file_size, 0) FROM job_to_output_dataset jtod "
                     "JOIN history_dataset_association hda ON hda.id = jtod.dataset_id "
                     "JOIN dataset d ON d.id = hda.dataset_id")
    return {int(j): (s, int(size)) for j, s, size in rows if int(j) in ids}


def _contents(sc: Scenario) -> list[str]:
    """The `slept N` lines of every dataset file in Galaxy's object store (read in the web pod,
    which mounts the shared claim)."""
    web = sc.handler_pods("web")[0]["metadata"]["name"]
    res = sc.kube.exec(sc.namespace, web, ["sh", "-c", "find /galaxy/data/objects -name '*.dat' -exec cat {} +"],
                       container="web", timeout=120)
    assert res.rc == 0, res.stderr
    return sorted(line for line in res.stdout.splitlines() if line.startswith("slept "))


def _submit(sc: Scenario, durations: list[int], user: str) -> set[int]:
    before = {j["id"] for j in gx.jobs(sc)}
    gx.submit_sleep_jobs(sc, durations, user=user)
    wait_until(lambda: len({j["id"] for j in gx.jobs(sc)} - before) == len(durations), 120,
               f"{len(durations)} new job rows", interval=2)
    return {j["id"] for j in gx.jobs(sc)} - before


def _check_jobs(sc: Scenario, watch: JobWatch, ids: set[int], durations: list[int], before_lines: list[str],
                p: Progress) -> list[dict]:
    """Every job ok with its output, one Kubernetes Job and one pod each, no container restart."""
    rows = _rows(sc, ids)
    p.fact("final_states", {r["id"]: (r["state"], r["handler"]) for r in rows})
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["state"]] = counts.get(r["state"], 0) + 1
    p.fact("final_state_counts", counts)
    assert counts == {"ok": len(ids)}, rows
    outputs = _outputs(sc, ids)
    assert sorted(outputs) == sorted(ids) and all(s == "ok" and size > 0 for s, size in outputs.values()), outputs
    lines = _contents(sc)
    new = list(lines)
    for line in before_lines:
        new.remove(line)
    assert sorted(new) == sorted(f"slept {d}" for d in durations), (new, durations)
    watch.poll()
    k8s_jobs = {i: watch.jobs.get(str(i), set()) for i in ids}
    p.fact("kubernetes_jobs_per_galaxy_job", {i: len(v) for i, v in k8s_jobs.items()})
    assert all(len(v) == 1 for v in k8s_jobs.values()), f"a Galaxy job ran as != 1 Kubernetes Job: {k8s_jobs}"
    for r in rows:
        assert {r["external_id"]} == k8s_jobs[r["id"]], (r, k8s_jobs[r["id"]])
    pods = {name: watch.pods.get(name, set()) for v in k8s_jobs.values() for name in v}
    p.fact("pods_per_kubernetes_job", {n: len(v) for n, v in pods.items()})
    assert all(len(v) == 1 for v in pods.values()), f"a Job ran != 1 pod: {pods}"
    restarts = {pod: watch.restarts.get(pod, 0) for v in pods.values() for pod in v}
    assert sum(restarts.values()) == 0, restarts
    assert not watch.errors, watch.errors
    p.fact("queued_to_running_s", {r["id"]: round(r["running"] - r["queued"], 1) for r in rows
                                   if r["running"] and r["queued"]})
    done = {r["external_id"]: watch.completed.get(r["external_id"]) for r in rows}
    p.fact("k8s_done_to_ok_s", {r["id"]: round(r["ok"] - done[r["external_id"]], 1) for r in rows
                                if r["ok"] and done[r["external_id"]]})
    p.fact("job_pod_labels", watch.labels)
    return rows


@SHARED
def test_22a_galaxy_k8s_rollout_with_jobs_in_flight(shared: Scenario, galaxy_k8s: Shared) -> None:
    """Rollout restart of the job StatefulSet while 4 sleep jobs run as Kubernetes Jobs (70 s:
    they end during the rollout, some while their handler is away; 240 s: they outlive it). The
    old handler exits on SIGTERM without touching its Jobs; its successor (same server name)
    adopts them (KubernetesJobRunner.recover) and collects them. 16c is the same rollout with
    the local runner (the long jobs end `error`)."""
    sc, p, watch = shared, shared.progress, galaxy_k8s.watch
    durations = [70, 70, 240, 240]
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    before_lines = _contents(sc)
    with p.phase(f"submit sleep jobs {durations}; all running as Kubernetes Jobs"):
        ids = _submit(sc, durations, "jh22a")
        wait_until(lambda: all(r["state"] == "running" for r in _rows(sc, ids)), 300, "every job running",
                   interval=2, describe=lambda: str(_rows(sc, ids)))
        p.fact("handlers_of_running_jobs", sorted(r["handler"] for r in _rows(sc, ids)))
    old = {pod["metadata"]["uid"] for pod in sc.handler_pods("job")}
    grace = sc.grace("job")
    with p.phase("rollout restart of the job StatefulSet"):
        t0 = sc.restart_role("job")
        sc.wait_rollout("job", old, timeout=2 * (grace + 300))
        p.fact("rollout_seconds", round(time.time() - t0, 1))
        p.fact("states_after_rollout", {r["id"]: r["state"] for r in _rows(sc, ids)})
    with p.phase("every job ok with its output; one Kubernetes Job and one pod each"):
        wait_until(lambda: not [r for r in _rows(sc, ids) if r["state"] in gx.UNFINISHED], 600,
                   "every job final", interval=3, describe=lambda: str(_rows(sc, ids)))
        _check_jobs(sc, watch, ids, durations, before_lines, p)
    with p.phase("one process per identity; the old handlers exit well before their grace"):
        spans = overlaps(lifetimes(sc.timeline, "job"), key=lambda name: name)
        p.fact("identity_overlaps_s", spans)
        assert spans and max(spans) <= 0, f"two processes held one identity at once: {spans}"
        last = sc.timeline.last_pods()
        exits = {uid: terminated_state(last[uid], "job") for uid in old}
        took = {last[uid]["metadata"]["name"]: round(parse_time(t["finishedAt"]) - deletion_started(sc.timeline, uid), 1)
                for uid, t in exits.items() if t and deletion_started(sc.timeline, uid) is not None}
        p.fact("old_exit_codes", [t["exitCode"] if t else None for t in exits.values()])
        p.fact("old_sigterm_to_exit_s", took)
        p.fact("grace_s", grace)
        assert len(took) == 2 and max(took.values()) < grace / 2, f"grace {grace}s: {took}"
        restarts = {n: r for n, r in sc.handler_restarts().items() if "-job-" in n}
        assert sum(restarts.values()) == 0, restarts


@SHARED
def test_22b_galaxy_k8s_sigkill_handler(shared: Scenario, galaxy_k8s: Shared) -> None:
    """Force-delete (grace 0: SIGKILL, no shutdown code runs) a job handler while its jobs run
    as Kubernetes Jobs, and hold it away (the StatefulSet scaled below its ordinal: a node
    loss, a long outage; its restart alone takes ~20-30 s, shorter than any job) until one of
    its Jobs has completed, then scale back. The pod of the same name adopts its jobs: each
    ends `ok` with its output, including the ones that finished while no handler watched them
    (no TTL deleted their Jobs)."""
    sc, p, watch = shared, shared.progress, galaxy_k8s.watch
    durations = [65, 65, 65, 65, 180, 180]
    sts = sc.deployments()["job"]["metadata"]["name"]
    replicas = int(sc.deployments()["job"]["spec"]["replicas"])
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    before_lines = _contents(sc)
    with p.phase(f"submit sleep jobs {durations}; all running"):
        ids = _submit(sc, durations, "jh22b")
        wait_until(lambda: all(r["state"] == "running" for r in _rows(sc, ids)), 300, "every job running",
                   interval=2, describe=lambda: str(_rows(sc, ids)))
    rows = _rows(sc, ids)
    # the highest ordinal that runs a job: scaling to its ordinal keeps it (and only the ones
    # above it, none here if it is the last) away
    target = max({r["handler"] for r in rows}, key=lambda h: int(h.rsplit("-", 1)[1]))
    ordinal = int(target.rsplit("-", 1)[1])
    theirs = {r["id"] for r in rows if r["handler"] == target}
    p.fact("target", target)
    p.fact("target_jobs", sorted(theirs))
    with p.phase(f"force-delete {target} (grace 0), hold it away until one of its Jobs completes"):
        t0 = time.time()
        sc.kube.core.delete_namespaced_pod(target, sc.namespace, grace_period_seconds=0)
        sc.kube.apps.patch_namespaced_stateful_set_scale(sts, sc.namespace, {"spec": {"replicas": ordinal}})
        wait_until(lambda: sc.kube.pod(sc.namespace, target) is None, 120, f"{target} gone", interval=1)
        names = {r["id"]: r["external_id"] for r in rows if r["id"] in theirs}
        wait_until(lambda: (watch.poll() or True) and any(n in watch.completed for n in names.values()), 300,
                   f"a Job of {target} to complete", interval=2)
        p.fact("jobs_states_while_away", {r["id"]: r["state"] for r in _rows(sc, theirs)})
        assert all(r["state"] == "running" for r in _rows(sc, theirs)), "a job of the absent handler changed state"
    with p.phase(f"scale back to {replicas}: {target} returns Ready"):
        t1 = time.time()
        sc.kube.apps.patch_namespaced_stateful_set_scale(sts, sc.namespace, {"spec": {"replicas": replicas}})
        wait_until(lambda: sc.kube.pod(sc.namespace, target) is not None, 120, f"a new {target}", interval=1)
        sc.wait_handlers_ready(600)
        pod = sc.kube.pod(sc.namespace, target)
        started = parse_time(next(s for s in pod["status"]["containerStatuses"] if s["name"] == "job")
                             ["state"]["running"]["startedAt"])
        p.fact("handler_away_s", round(started - t0, 1))
        p.fact("scale_back_to_ready_s", round(time.time() - t1, 1))
    with p.phase("every job ok with its output; the ones that ended while their handler was away too"):
        wait_until(lambda: not [r for r in _rows(sc, ids) if r["state"] in gx.UNFINISHED], 600,
                   "every job final", interval=3, describe=lambda: str(_rows(sc, ids)))
        final = _check_jobs(sc, watch, ids, durations, before_lines, p)
        away = [r["id"] for r in final if r["id"] in theirs
                and (watch.completed.get(r["external_id"]) or 1e18) < started]
        p.fact("ended_while_handler_away", away)
        assert away, f"no job of {target} ended between the kill ({t0}) and its successor's start ({started})"
        assert all(r["handler"] == target for r in final if r["id"] in theirs)
