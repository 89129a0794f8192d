"""Real Galaxy 26.1.2 (unmodified, image jobhandlers/galaxy:26.1) with its Kubernetes job runner,
from values-examples/galaxy-k8s.yaml: every Galaxy job is a Kubernetes Job in the release
namespace, the job handlers only create and watch them, and share Galaxy's data directory
with the job pods through a ReadWriteMany claim (here a static hostPath PV on the directory
kind-up.sh mounts into every node). 22a a rollout of the job StatefulSet with jobs in flight;
22b a job handler SIGKILLed (pod force-deleted, grace 0) with jobs in flight, one of them ending
while it is away; 22c a drain of the node that runs a job handler (a node scenario); 22d what a
job costs on this runner (16f: on the local runner); 22e an upgrade from Galaxy 25.1.3 with
Kubernetes Jobs in flight (an install of its own). The local runner's loss on the same rollout
is 16c's.

22a, 22b and 22d share one install (jhkind.galaxy_k8s.open_install: one Galaxy costs minutes of
a 2-core machine; each checks what it needs first, so any of them also runs alone) and one
xdist group. 22c runs in the node pass (`-m nodes`, a pytest run of its own, after the
others): the same module fixture makes a fresh install there, since the main pass's is gone
by then and a drain cannot run beside the other scenarios. Jobs are the jh_sleep tool
(>= 60 s, writes `slept N`): each must end `ok` with that output, with exactly one Kubernetes
Job and one pod, never restarted."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
import yaml

from jhkind import galaxy as gx
from jhkind import galaxy_k8s as gk
from jhkind import gxcost, nodes
from jhkind.client import summarize
from jhkind.cluster import Kube, job_state, parse_time, pod_ready
from jhkind.galaxy_k8s import JobWatch
from jhkind.helm import Helm
from jhkind.identity import lifetimes, overlaps
from jhkind.observe import deletion_started, is_handler_pod, ready_at, started_at, terminated_state
from jhkind.podstats import PodUsage
from jhkind.postgres import Postgres
from jhkind.progress import Progress
from jhkind.scenario import Scenario, job_completed_at
from jhkind.shared import Shared, per_test
from jhkind.waits import wait_until

# The Galaxy lane (group "galaxy", see test_16_galaxy's pytestmark): one worker runs this module's
# tests after test_16's; 22e is `heavy` (a group of its own, after the lifecycle basics); 22c runs in
# the node pass.
pytestmark = [pytest.mark.kind, pytest.mark.timeout(1800), pytest.mark.xdist_group("galaxy")]

@pytest.fixture(scope="module")
def galaxy_k8s(kube: Kube, helm: Helm, postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One namespace (Pod Security restricted) + database + ReadWriteMany claim + Galaxy install
    (helm install --wait of galaxy-k8s.yaml) + a JobWatch, for every test of the module."""
    with gk.open_install(kube, helm, postgres, tmp_path_factory.mktemp("galaxy-k8s")) as shared:
        yield shared


@pytest.fixture
def shared(request, galaxy_k8s: Shared, scenario_summary: dict) -> Iterator[Scenario]:
    with per_test(request, galaxy_k8s, scenario_summary) as sc:
        yield sc


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
    # no objects directory before the first dataset (Galaxy 25.1 makes it then, 26.1 at start)
    script = "! test -d /galaxy/data/objects || find /galaxy/data/objects -name '*.dat' -exec cat {} +"
    res = sc.kube.exec(sc.namespace, web, ["sh", "-c", script],
                       container="web", timeout=120)
    assert res.rc == 0, res.stderr
    return sorted(line for line in res.stdout.splitlines() if line.startswith("slept "))


def _quiet(sc: Scenario) -> list[str]:
    """Every handler Ready and every job of the install final (a failed first attempt of a test leaves
    its jobs running, and their outputs would land among its rerun's); then the `slept N` lines there
    are before this test's jobs."""
    with sc.progress.phase("every handler Ready, every earlier job of the install final"):
        sc.wait_handlers_ready(600)
        unfinished = lambda: [(j["id"], j["state"]) for j in gx.jobs(sc) if j["state"] in gx.UNFINISHED]  # noqa: E731
        wait_until(lambda: not unfinished(), 600, "earlier jobs final", interval=3, describe=lambda: str(unfinished()))
    return _contents(sc)


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
    # the number set beside 16c's (local runner) in docs/benchmarks.md
    p.fact("jobs_killed_or_error", len(ids) - counts.get("ok", 0))
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
    assert sum(restarts.values()) == 0, sc.restart_report(restarts)
    assert not watch.errors, watch.errors
    p.fact("queued_to_running_s", {r["id"]: round(r["running"] - r["queued"], 1) for r in rows
                                   if r["running"] and r["queued"]})
    done = {r["external_id"]: watch.completed.get(r["external_id"]) for r in rows}
    p.fact("k8s_done_to_ok_s", {r["id"]: round(r["ok"] - done[r["external_id"]], 1) for r in rows
                                if r["ok"] and done[r["external_id"]]})
    p.fact("job_pod_labels", watch.labels)
    gxcost.record(p, sc, ids, prefix="cost_all_jobs")
    return rows


def test_22a_galaxy_k8s_rollout_with_jobs_in_flight(shared: Scenario, galaxy_k8s: Shared) -> None:
    """Rollout restart of the job StatefulSet while 4 sleep jobs run as Kubernetes Jobs (70 s:
    they end during the rollout, some while their handler is away; 240 s: they outlive it). The
    old handler exits on SIGTERM without touching its Jobs; its successor (same server name)
    adopts them (KubernetesJobRunner.recover) and collects them. 16c is the same rollout with
    the local runner (the long jobs end `error`)."""
    sc, p, watch = shared, shared.progress, gk.job_watch(galaxy_k8s)
    durations = [70, 70, 240, 240]
    before_lines = _quiet(sc)
    with p.phase(f"submit sleep jobs {durations}; all running as Kubernetes Jobs"):
        ids = _submit(sc, durations, "jh22a")
        wait_until(lambda: all(r["state"] == "running" for r in _rows(sc, ids)), 300, "every job running",
                   interval=2, describe=lambda: str(_rows(sc, ids)))
        p.fact("handlers_of_running_jobs", sorted(r["handler"] for r in _rows(sc, ids)))
    restarts_before = sc.restart_counts()
    old = set(restarts_before)
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
        restarts = sc.restarts_since(restarts_before)
        p.fact("job_handler_restarts_since_the_test_began", restarts)
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_22b_galaxy_k8s_sigkill_handler(shared: Scenario, galaxy_k8s: Shared) -> None:
    """Force-delete (grace 0: SIGKILL, no shutdown code runs) a job handler while its jobs run
    as Kubernetes Jobs, and hold it away (the StatefulSet scaled below its ordinal: a node
    loss, a long outage; its restart alone takes ~20-30 s, shorter than any job) until one of
    its Jobs has completed, then scale back. The pod of the same name adopts its jobs: each
    ends `ok` with its output, including the ones that finished while no handler watched them
    (no TTL deleted their Jobs)."""
    sc, p, watch = shared, shared.progress, gk.job_watch(galaxy_k8s)
    durations = [65, 65, 65, 65, 180, 180]
    sts = sc.deployments()["job"]["metadata"]["name"]
    replicas = int(sc.deployments()["job"]["spec"]["replicas"])
    before_lines = _quiet(sc)
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


def _pods_of(watch: JobWatch, jobs: set[str]) -> set[str]:
    """The pods of these Kubernetes Jobs (a test's own: a shared install has others' too)."""
    return {pod for job in jobs for pod in watch.pods.get(job, set())}


def _job_pods_on(watch: JobWatch, node: str, jobs: set[str]) -> list[str]:
    """The pods of these Kubernetes Jobs that ran on node."""
    watch.poll()
    mine = _pods_of(watch, jobs)
    return sorted(pod for pod, where in watch.nodes.items() if where == node and pod in mine)


@pytest.mark.nodes
def test_22c_galaxy_k8s_drain_handler_node(shared: Scenario, galaxy_k8s: Shared) -> None:
    """`kubectl drain` (eviction API, the roles' PDBs) of the worker that runs a job handler,
    while that handler's jobs run as Kubernetes Jobs on the other worker (the node is cordoned
    before they are submitted: a drain would evict a job pod too, and Galaxy's Jobs have
    backoffLimit 0). The StatefulSet brings the same handler name back on the other worker,
    where it adopts its Jobs (KubernetesJobRunner.recover, "k8s trying to recover job") and
    collects them: every job `ok` with its output, one Kubernetes Job and one pod each, 0
    container restarts, one process per handler name at every moment. A node scenario: it
    cordons and drains, so it runs alone (its own install: the node pass is a pytest run of
    its own)."""
    sc, p, watch = shared, shared.progress, gk.job_watch(galaxy_k8s)
    workers = nodes.workers(sc.kube)
    assert len(workers) >= 2, f"the drain needs 2 workers (make kind-up KIND_WORKERS=2), have {workers}"
    before_lines = _quiet(sc)
    placed = {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in sc.handler_pods("job")}
    target = sorted(placed)[0]
    node = placed[target]
    p.fact("handler_nodes", placed)
    p.fact("target", target)
    p.fact("drained_node", node)
    old_uid = sc.kube.pod(sc.namespace, target)["metadata"]["uid"]
    restarts_before = sc.restart_counts()
    durations = [60, 90, 120]
    ids: set[int] = set()
    usage = PodUsage(sc.kube, sc.namespace, gk.GALAXY_JOBS, interval=5).start()
    try:
        with p.phase(f"cordon {node}; submit sleep jobs {durations} until {target} holds some, all running"):
            nodes.kubectl(sc.kube, "cordon", node, timeout=60).check_returncode()
            # a handler grabs a round's new jobs at random (db-skip-locked), often all of them: 1/64 for none
            # in 6 rounds (with 3, 1/8: stop 44's rehearsal ci2 gave the other handler all 9 jobs)
            for n in range(6):
                ids |= _submit(sc, durations, f"jh22c{n}")
                wait_until(lambda: all(r["state"] == "running" for r in _rows(sc, ids)), 300, "every job running",
                           interval=2, describe=lambda: str(_rows(sc, ids)))
                if any(r["handler"] == target for r in _rows(sc, ids)):
                    break
            rows = _rows(sc, ids)
            theirs = {r["id"]: r["external_id"] for r in rows if r["handler"] == target}
            p.fact("handlers_of_running_jobs", sorted(r["handler"] for r in rows))
            p.fact("target_jobs", sorted(theirs))
            assert theirs, f"{target} grabbed none of {len(ids)} jobs in 6 rounds: {rows}"
            jobs = {r["external_id"] for r in rows}
            assert not _job_pods_on(watch, node, jobs), f"a job pod on the cordoned {node}: {watch.nodes}"
        all_durations = durations * (len(ids) // len(durations))
        with p.phase(f"kubectl drain {node} (the release's pods: eviction API, PDBs)"):
            res = nodes.drain(sc.kube, node, f"app.kubernetes.io/instance={sc.release}", 600)
            p.fact("drain_seconds", round(res.seconds, 1))
            p.fact("pdb_refusals", res.pdb_refusals)
            assert res.rc == 0, f"kubectl drain exited {res.rc}: {res.output[-2000:]}"
            assert not _job_pods_on(watch, node, jobs), f"a job pod on the drained {node}: {watch.nodes}"
        with p.phase(f"{target} back on another worker, Ready"):
            def back() -> dict | None:
                pod = sc.kube.pod(sc.namespace, target)
                return pod if pod and pod["metadata"]["uid"] != old_uid and pod_ready(pod) else None
            pod = wait_until(back, 600, f"a new {target} Ready", interval=2, describe=sc.describe_pods)
            p.fact("target_new_node", pod["spec"]["nodeName"])
            assert pod["spec"]["nodeName"] != node, pod["spec"]["nodeName"]
            evicted = deletion_started(sc.timeline, old_uid)
            term = terminated_state(sc.timeline.last_pods()[old_uid], "job")
            started = parse_time(next(s for s in pod["status"]["containerStatuses"] if s["name"] == "job")
                                 ["state"]["running"]["startedAt"])
            ready = max(parse_time(c["lastTransitionTime"]) for c in pod["status"]["conditions"] if c["type"] == "Ready")
            assert evicted is not None and term is not None, "the old handler's eviction or exit was not seen"
            p.fact("old_exit_code", term["exitCode"])
            p.fact("old_sigterm_to_exit_s", round(parse_time(term["finishedAt"]) - evicted, 1))
            p.fact("no_process_s", round(started - parse_time(term["finishedAt"]), 1))
            p.fact("handler_gone_s", round(ready - evicted, 1))
            assert term["exitCode"] == 0, term
        with p.phase("every job ok with its output; the target adopted its Jobs; one Kubernetes Job and one pod each"):
            sc.wait_handlers_ready(600)
            wait_until(lambda: not [r for r in _rows(sc, ids) if r["state"] in gx.UNFINISHED], 600,
                       "every job final", interval=3, describe=lambda: str(_rows(sc, ids)))
            final = _check_jobs(sc, watch, ids, all_durations, before_lines, p)
            assert all(r["handler"] == target for r in final if r["id"] in theirs), final
            log = sc.kube.logs(sc.namespace, target, "job")
            recovered = {i: f"k8s trying to recover job: {name}" in log for i, name in theirs.items()}
            p.fact("recovered_by_successor", recovered)
            assert all(recovered.values()), f"{target}'s successor did not recover {recovered}"
            p.fact("target_jobs_done_while_away", sorted(i for i, name in theirs.items()
                                                         if (watch.completed.get(name) or 1e18) < ready))
            p.fact("job_pod_nodes", sorted({watch.nodes[pod] for pod in _pods_of(watch, jobs) if pod in watch.nodes}))
            usage.stop()
            p.fact("job_pod_usage", usage.facts())
            p.fact("job_pod_usage_errors", usage.errors[:5])
        with p.phase("one process per handler name; 0 handler restarts"):
            spans = overlaps(lifetimes(sc.timeline, "job"), key=lambda name: name)
            p.fact("identity_overlaps_s", spans)
            assert spans and max(spans) <= 0, f"two processes held one identity at once: {spans}"
            restarts = sc.restarts_since(restarts_before)
            p.fact("job_handler_restarts_since_the_test_began", restarts)
            assert sum(restarts.values()) == 0, sc.restart_report(restarts)
    finally:
        usage.stop()
        nodes.uncordon(sc.kube, node)


def test_22d_galaxy_k8s_job_cost(shared: Scenario, galaxy_k8s: Shared) -> None:
    """What a job costs on the Kubernetes runner, on an undisturbed install (16f is the local
    runner's): 3 jh_sleep jobs of 20 s; per job queued -> running, queued -> the tool's first
    command, the tool's last command -> `ok` (gxcost), and the CPU and memory of its pod (the
    kubelet's /stats/summary, every 3 s)."""
    sc, p = shared, shared.progress
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    usage = PodUsage(sc.kube, sc.namespace, gk.GALAXY_JOBS, interval=3).start()
    try:
        with p.phase("3 jobs of 20 s, each ok"):
            ids = _submit(sc, [20, 20, 20], "jh22d")
            wait_until(lambda: not [r for r in _rows(sc, ids) if r["state"] in gx.UNFINISHED], 300,
                       "every job final", interval=2, describe=lambda: str(_rows(sc, ids)))
    finally:
        usage.stop()
    with p.phase("per job: times (Galaxy's records) and its pod's CPU and memory (kubelet)"):
        assert {r["state"] for r in _rows(sc, ids)} == {"ok"}, _rows(sc, ids)
        cost = gxcost.record(p, sc, ids)
        assert all(cost[k]["n"] == len(ids) for k in cost), cost
        pods = usage.facts()
        p.fact("job_pod_usage", pods)
        p.fact("job_pod_usage_errors", usage.errors[:5])
        assert pods, f"no job pod sampled by the kubelet's summary: {usage.errors[:5]}"
        p.fact("job_pod_cpu_s", gxcost.spread([u["cpu_s"] for u in pods.values()]))
        p.fact("job_pod_memory_peak_mib", gxcost.spread([u["memory_peak_mib"] for u in pods.values()]))


def _old_version_overrides() -> dict:
    """galaxy-k8s.yaml on Galaxy 25.1.3: the image, the job pods' image (the destination's
    docker_default_container_id) and the trim sidecar's, all jobhandlers/galaxy:25.1."""
    data = yaml.safe_load(gx.EXAMPLE_K8S.read_text())
    new, old = gx.IMAGE, f"{gx.IMAGE.split(':')[0]}:{gx.OLD_TAG}"
    conf = data["files"]["job_conf.xml"]
    assert new in conf, f"{new} not in galaxy-k8s.yaml's job_conf.xml"
    return {"image": {"tag": gx.OLD_TAG}, "files": {"job_conf.xml": conf.replace(new, old)}}


# 22e's web keeps serving 10 s (the chart's default) after it turns not Ready, not the example's
# 2 s: with 2 s, a loaded machine's endpoint updates landed after the old web stopped listening
# and 2 requests of the upgrade were refused (both tries of stop 33's rehearsal).
WEB_PRESTOP = {"drain": {"preStopSeconds": 10}}


@pytest.mark.heavy
@pytest.mark.xdist_group("galaxy-22e")  # its own install: not the Galaxy lane (closest marker wins)
@pytest.mark.timeout(2400)
def test_22e_galaxy_k8s_upgrade_25_1_to_26_1_with_jobs_in_flight(scenario: Scenario) -> None:
    """Galaxy 25.1.3 on its Kubernetes runner (galaxy-k8s.yaml with the :25.1 image, job pods
    too) with 4 jh_sleep jobs running as Kubernetes Jobs, then `helm upgrade --wait` to 26.1.2
    while a client polls /api/version through the web Service: the pre-upgrade Job runs
    Galaxy's own migrations while 25.1's handlers and their Jobs run (the alembic revisions move
    to 26.1's heads; 26.1's schema-check passes), every 26.1 process starts only after it, the
    job StatefulSet rolls to 26.1, whose handlers (same server names) adopt the Jobs 25.1
    created. 0 restarts, 0 failed requests. Measured: each job's end state and output,
    Kubernetes Jobs per Galaxy job, job pod restarts. Its own install (another Galaxy version).
    Until stop 33 the upgrade without jobs was 16e's, on the local runner: one Galaxy upgrade
    now proves both."""
    sc, p = scenario, scenario.progress
    watch = JobWatch(sc.kube, sc.namespace).start()
    pv = None
    try:
        with p.phase(f"ReadWriteMany claim {gk.CLAIM}; install Galaxy 25.1.3 with its Kubernetes runner"):
            pv = gk.shared_claim(sc.kube, sc.namespace)
            res = gx.install(sc, _old_version_overrides(), WEB_PRESTOP, timeout_s=900, example=gx.EXAMPLE_K8S)
            res.check("helm install of galaxy-k8s.yaml on Galaxy 25.1")
            p.fact("install_25_1_seconds", round(res.seconds, 1))
            assert gx.api_version(sc)["version_major"] == gx.OLD_TAG
            old_revs = gx.revisions(sc)
            p.fact("revisions_25_1", sorted(old_revs))
            assert len(old_revs) == 2, old_revs  # gxy and tsi
            old_image = f"{gx.IMAGE.split(':')[0]}:{gx.OLD_TAG}"
            assert {gx.app_image(pod) for pod in sc.handler_pods()} == {old_image}
        durations = [120, 120, 300, 300]
        with p.phase(f"submit sleep jobs {durations} to 25.1; all running as Kubernetes Jobs"):
            before_lines = _contents(sc)
            ids = _submit(sc, durations, "jh22e")
            wait_until(lambda: all(r["state"] == "running" for r in _rows(sc, ids)), 300, "every job running",
                       interval=2, describe=lambda: str(_rows(sc, ids)))
            p.fact("handlers_of_running_jobs", sorted(r["handler"] for r in _rows(sc, ids)))
            c = gx.client(sc)  # polls /api/version since the submission
            wait_until(lambda: any(r.ok for r in c.requests()), 120, "a successful GET /api/version")
        old = {pod["metadata"]["uid"] for pod in sc.handler_pods()}
        with p.phase("helm upgrade --wait to Galaxy 26.1.2 (pre-upgrade migration Job, then the rollout)"):
            t0 = time.time()
            res = gx.upgrade(sc, WEB_PRESTOP, timeout_s=1500, example=gx.EXAMPLE_K8S)
            t_end = time.time()
            res.check("helm upgrade to Galaxy 26.1")
            p.fact("helm_upgrade_wait_seconds", round(res.seconds, 1))
            sc.wait_handlers_ready(300)
            assert not {pod["metadata"]["uid"] for pod in sc.handler_pods()} & old
            assert gx.api_version(sc)["version_major"] == "26.1"
            p.fact("states_after_upgrade", {r["id"]: r["state"] for r in _rows(sc, ids)})
        with p.phase("the pre-upgrade Job migrated the schema to 26.1's heads while the jobs ran"):
            [job] = sc.migration_jobs()
            assert "pre-upgrade" in (job["metadata"].get("annotations") or {}).get("helm.sh/hook", ""), job["metadata"]
            assert job_state(job) == "complete", job.get("status")
            started, done = parse_time(job["status"]["startTime"]), job_completed_at(job)
            assert started is not None and done is not None and started >= t0 - 5, (started, t0)
            p.fact("migration_job_seconds", round(done - started, 1))
            p.fact("jobs_running_during_migration", sorted(
                r["id"] for r in _rows(sc, ids)
                if r["running"] and r["running"] < started
                and (watch.completed.get(r["external_id"]) or 1e18) > done))
            mlog = sc.kube.logs(sc.namespace, gx.job_pod(sc, job), "migrate")
            # jhgalaxy migrate's watchdog: old sessions idle in a transaction that blocked it
            p.fact("blocking_sessions_terminated",
                   [line[:300] for line in mlog.splitlines() if "terminated session" in line])
            assert "jhgalaxy migrate: waited" in mlog, mlog[-3000:]
            new_revs = gx.revisions(sc)
            p.fact("revisions_26_1", sorted(new_revs))
            assert len(new_revs) == 2 and new_revs != old_revs, (old_revs, new_revs)
            target = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))[0]
            check = sc.kube.exec(sc.namespace, target, ["jhgalaxy", "schema-check"], container="job", timeout=180)
            assert check.rc == 0, f"26.1's schema-check in {target}: exit {check.rc} (0 = at the code's heads)\n" \
                                  f"{check.stdout[-1500:]}{check.stderr[-1500:]}"
        with p.phase("every 26.1 process started after the migration; 0 failed requests while it upgraded"):
            pods = sc.handler_pods()
            assert {gx.app_image(pod) for pod in pods} == {gx.IMAGE}, [gx.app_image(pod) for pod in pods]
            starts = {pod["metadata"]["name"]: started_at(pod, gx.role_of(pod)) for pod in pods}
            p.fact("app_start_after_migration_s", {n: round(t - done, 1) for n, t in starts.items() if t})
            assert all(t is not None and t >= done for t in starts.values()), (done, starts)
            new_pods = [pod for pod in sc.timeline.last_pods().values()
                        if is_handler_pod(pod) and gx.app_image(pod) == gx.IMAGE]
            first = min(parse_time(pod["metadata"]["creationTimestamp"]) for pod in new_pods)
            p.fact("first_new_pod_after_migration_s", round(first - done, 1))
            assert first >= done - 1, f"a 26.1 pod was created {done - first:.0f}s before the migration ended"
            ready = {pod["metadata"]["name"]: ready_at(pod) for pod in pods}
            p.fact("all_ready_after_migration_s", round(max(ready.values()) - done, 1))
            s = summarize(c.requests(), t0, t_end)
            p.fact("requests_during_upgrade", s)
            assert s["requests"] > 30, s
            assert s["failed"] == 0, s
        with p.phase("every job final: ok with its output, one Kubernetes Job and one pod each"):
            wait_until(lambda: not [r for r in _rows(sc, ids) if r["state"] in gx.UNFINISHED], 600,
                       "every job final", interval=3, describe=lambda: str(_rows(sc, ids)))
            _check_jobs(sc, watch, ids, durations, before_lines, p)
        with p.phase("26.1's handlers adopted the Jobs 25.1 created; 0 restarts"):
            logs = "".join(sc.kube.logs(sc.namespace, pod["metadata"]["name"], "job") for pod in sc.handler_pods("job"))
            names = {r["id"]: r["external_id"] for r in _rows(sc, ids)}
            recovered = {i: f"k8s trying to recover job: {n}" in logs for i, n in names.items()}
            p.fact("recovered_by_26_1", recovered)
            assert any(recovered.values()), f"no Job of 25.1 recovered by a 26.1 handler: {recovered}"
            restarts = sc.handler_restarts()
            p.fact("restarts_per_pod", restarts)
            assert sum(restarts.values()) == 0, sc.restart_report(restarts)
    finally:
        watch.stop()
        # the MutatingAdmissionPolicy and its binding are cluster-scoped: uninstall removes them
        sc.helm.run(["uninstall", sc.release, "-n", sc.namespace, "--wait", "--timeout", "120s"], timeout=180)
        if pv:
            sc.kube._ignore_404(sc.kube.core.delete_persistent_volume, pv)
            gk.node_sh(f"rm -rf {gk.NODE_DIR}/{sc.namespace}")  # the release's pods are gone
