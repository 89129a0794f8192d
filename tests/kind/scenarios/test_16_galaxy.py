"""Real Galaxy 26.1.2 (unmodified, image jobhandlers/galaxy:26.1) from values-examples/galaxy.yaml:
16a a fresh install (hook Job creates the schema, web + workflow scheduler + 2 job handlers
Ready, 0 restarts); 16b galaxy-helm's pattern (one Deployment per handler identity, default
rolling update, 30 s grace, no gating) on a schema one revision behind: Galaxy's own
OutdatedDatabaseError and restarts, time to Ready after its migration, then a rollout with
jobs in flight (identity overlap, orphaned jobs); 16c a rollout of the job StatefulSet with
jobs in flight (one process per identity, every job final); 16d liveness on Galaxy's
heartbeat log (a SIGSTOPped handler is restarted in place); 16f what a job costs on the
local runner (22d: on the Kubernetes runner). The upgrade from Galaxy 25.1.3 to 26.1.2 across
Galaxy's real migrations under a client loop (16e until stop 33) is 22e's, with Kubernetes
Jobs in flight: one Galaxy upgrade per run instead of two.

16a, 16f, 16c and 16d share one install (jhkind.shared: one Galaxy costs minutes of a 2-core
machine; each checks what it needs first, so any of them also runs alone). 16b has an install
of its own. The whole module is one xdist group (its pytestmark): under `make test-kind` one
worker runs 16b first, then builds the shared install once for the others."""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from jhkind import galaxy as gx
from jhkind import gxcost
from jhkind import liveness as live
from jhkind.cluster import Kube, event_time, job_state, parse_time, pod_ready, restart_count
from jhkind.helm import Helm
from jhkind.identity import lifetimes, overlaps
from jhkind.observe import deletion_started, is_handler_pod, ready_at, started_at, terminated_state
from jhkind.postgres import Postgres
from jhkind.scenario import Scenario, job_completed_at
from jhkind.shared import Shared, open_shared, per_test
from jhkind.waits import WaitTimeout, wait_until

# One Galaxy lane for both Galaxy modules (this one's and test_22_galaxy_k8s's, group "galaxy"):
# one worker runs their tests one after the other (make test-kind: --dist loadgroup), this
# module's shared install first, then 22's. Galaxy is most of the scenarios' CPU: with a worker
# per install, four Galaxy installs started at once and the first minutes ran at load 28-35 on 2
# cores (stop 33's CI: 16c failed twice); with a lane per module (stop 42), the two shared
# installs, 16b's and 22e's started together and the slower machine's CI failed 16a, 16c, 22e and
# 22's install on timing. 16b and 22e, with installs of their own, are `heavy`: each a group of its
# own, in the main pass after the lifecycle basics (stops 43-44: a pass of their own, after it).
pytestmark = [pytest.mark.kind, pytest.mark.timeout(1800), pytest.mark.xdist_group("galaxy")]

ROLES = {"web": "Deployment", "workflow": "StatefulSet", "job": "StatefulSet"}
HELM_ROLES = ("web", "workflow", "job0", "job1")  # 16b: galaxy-helm's layout, all Deployments
# sleep-tool jobs of 16c: SHORT ones end ok unless their handler is stopped under them; LONG
# ones outlive the whole rollout, so each is killed by its handler's SIGTERM and recovered
SHORT, LONG = 45, 900
GALAXY_ERRORS = ("OutdatedDatabaseError", "NoSuchTableError", "NoVersionTableError", "RevisionNotFoundError")


@pytest.fixture(scope="module")
def galaxy(kube: Kube, helm: Helm, postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One namespace + database + Galaxy install (helm install --wait) for 16a, 16c, 16d, 16f."""
    with open_shared(kube, helm, postgres, tmp_path_factory.mktemp("galaxy"), "galaxy", "16-galaxy",
                     "helm install of values-examples/galaxy.yaml") as shared:
        with shared.sc.progress.phase("helm install --wait of values-examples/galaxy.yaml"):
            shared.install = gx.install(shared.sc, timeout_s=900)
        yield shared


@pytest.fixture
def shared(request, galaxy: Shared, scenario_summary: dict) -> Iterator[Scenario]:
    """The shared scenario with this test's own progress (phases and facts in the summary)."""
    with per_test(request, galaxy, scenario_summary) as sc:
        yield sc


def test_16a_galaxy_fresh_install(shared: Scenario, galaxy: Shared) -> None:
    sc, p = shared, shared.progress
    p.fact("helm_install_wait_seconds", round(galaxy.install.seconds, 1))
    with p.phase("the hook Job created the schema before any handler pod existed"):
        [job] = sc.migration_jobs()
        assert "pre-install" in (job["metadata"].get("annotations") or {}).get("helm.sh/hook", "")
        assert job_state(job) == "complete", job.get("status")
        started, completed = parse_time(job["status"]["startTime"]), job_completed_at(job)
        assert started is not None and completed is not None
        p.fact("migration_job_seconds", round(completed - started, 1))
        pods = [pod for pod in sc.timeline.last_pods().values() if is_handler_pod(pod)]
        assert pods, "no handler pod seen"
        first = min(parse_time(pod["metadata"]["creationTimestamp"]) for pod in pods)
        assert first >= completed, f"a handler pod was created {completed - first:.0f}s before the migration ended"
    with p.phase("web, workflow scheduler and 2 job handlers Ready, 0 restarts"):
        sc.wait_handlers_ready(600)
        kinds = {role: w["kind"] for role, w in sc.deployments().items()}
        assert kinds == ROLES, kinds
        names = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))
        assert names == [f"{sc.deployments()['job']['metadata']['name']}-{i}" for i in range(2)], names
        pods = sc.handler_pods()
        ready = {pod["metadata"]["name"]: ready_at(pod) for pod in pods}
        assert all(ready.values()), ready
        p.fact("all_ready_after_migration_s", round(max(ready.values()) - completed, 1))
        p.fact("start_to_ready_s", {pod["metadata"]["name"]: round(ready[pod["metadata"]["name"]]
                                                                   - started_at(pod, gx.role_of(pod)), 1)
                                    for pod in pods})
        restarts = sc.handler_restarts()
        p.fact("restarts_total", sum(restarts.values()))
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)
    with p.phase("every pod's wait-for-migrations found the schema at head without importing Galaxy"):
        # jhgalaxy's fast path: the database's alembic_version rows against the heads Galaxy's
        # AlembicManager wrote at image build (tests/apps/galaxy/jhgalaxy.py); ~6 CPU-s less a pod
        logs = {pod["metadata"]["name"]: sc.kube.logs(sc.namespace, pod["metadata"]["name"], "wait-for-migrations")
                for pod in sc.handler_pods()}
        slow = {name: log[-300:] for name, log in logs.items() if "(the heads of this image's build)" not in log}
        assert not slow, slow
    with p.phase("the web answers through its Service"):
        c = gx.client(sc)
        wait_until(lambda: any(r.ok for r in c.requests()), 120, "a successful GET /api/version from the client")
    with p.phase(f"heartbeat logs stay bounded: {gx.TRIM_SIDECAR} empties them above {gx.TRIM_MAX_BYTES} bytes"):
        pods = [pod["metadata"]["name"] for pod in sc.handler_pods()]

        def trimmed(name: str) -> bool:
            return "heartbeat-trim: emptied" in sc.kube.logs(sc.namespace, name, gx.TRIM_SIDECAR)
        wait_until(lambda: all(trimmed(n) for n in pods), 300, "every pod's heartbeat log to be emptied once",
                   interval=5)
        sizes = {}
        for name in pods:
            res = sc.kube.exec(sc.namespace, name, ["sh", "-c", "stat -c '%n %s' /run/jobhandlers/heartbeat_*.log"],
                               container=gx.TRIM_SIDECAR, timeout=60)
            assert res.rc == 0, res.stderr
            sizes |= {f"{name}:{line.split()[0].rsplit('/', 1)[-1]}": int(line.split()[1])
                      for line in res.stdout.splitlines()}
        p.fact("heartbeat_log_bytes", sizes)
        # the limit plus what Galaxy can append between two 5 s checks (a dump is ~6 KB)
        assert sizes and max(sizes.values()) <= gx.TRIM_MAX_BYTES + 8000, sizes
        assert all(pod_ready(pod) for pod in sc.handler_pods()), sc.describe_pods()
        assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())


def test_16f_galaxy_local_job_cost(shared: Scenario) -> None:
    """What a job costs on the local runner, on an undisturbed install (22d is the Kubernetes
    runner's): 3 jh_sleep jobs of 20 s, each `ok`; per job queued -> running, queued -> the
    tool's first command, the tool's last command -> `ok` (gxcost). The job is a child process
    of the handler: it adds no pod."""
    sc, p = shared, shared.progress
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    before = {j["id"] for j in gx.jobs(sc)}
    with p.phase("3 jobs of 20 s, each ok"):
        gx.submit_sleep_jobs(sc, [20, 20, 20], user="jh16f")
        wait_until(lambda: len(_new_jobs(sc, before)) == 3
                   and not [j for j in _new_jobs(sc, before) if j["state"] in gx.UNFINISHED], 300,
                   "3 jobs final", interval=2, describe=lambda: str(_new_jobs(sc, before)))
        final = _new_jobs(sc, before)
        assert {j["state"] for j in final} == {"ok"}, final
    with p.phase("per job: times from Galaxy's records"):
        cost = gxcost.record(p, sc, {j["id"] for j in final})
        assert all(cost[k]["n"] == 3 for k in cost), cost


def _settled(sc: Scenario, before: set[int], timeout: float) -> list[dict]:
    """The scenario's new job rows once none is unfinished, or as they are after timeout."""
    def mine() -> list[dict]:
        return [j for j in gx.jobs(sc) if j["id"] not in before]
    try:
        wait_until(lambda: not [j for j in mine() if j["state"] in gx.UNFINISHED], timeout,
                   "every job to reach a final state", interval=3)
    except WaitTimeout:
        pass  # measured: what is still running/queued now is orphaned
    return mine()


@pytest.mark.heavy
@pytest.mark.xdist_group("galaxy-16b")  # its own install: not the Galaxy lane (closest marker wins)
def test_16b_galaxy_helm_pattern_gating_off(scenario: Scenario) -> None:
    """galaxy-helm's pattern in our values (jhkind.galaxy.galaxy_helm_overrides): every process a
    Deployment with a fixed --server-name, job_handler_0 and job_handler_1 one Deployment each,
    Kubernetes' default rolling update, 30 s grace, no migration gating.
    1. On the schema an older Galaxy left (one gxy revision behind), with no migration yet, every
       Galaxy process exits with Galaxy's own OutdatedDatabaseError and Kubernetes restarts it
       (the seed failure, galaxy-helm #172).
    2. galaxy-helm's db-init Job (Galaxy's own migration, beside the crashing pods): time until
       every process is Ready after it (CrashLoopBackOff decides).
    3. A rollout restart of both handler Deployments with sleep jobs in flight: the surge pod
       starts while the old one still runs, so two processes hold one server name; the new one
       recovers (marks `error`) the jobs the old one still runs. Measured: overlap, orphaned
       jobs (left running/queued), jobs recovered before their process had exited."""
    sc, p = scenario, scenario.progress
    with p.phase("seed: migrate to head, galaxy-manage-db downgrade gxy@-1"):
        log = gx.seed_behind(sc)
        assert "schema-check exit 3" in log and "behind head" in log, log[-2000:]
    with p.phase("install galaxy-helm's pattern, gating off (no migration Job, no wait-for-migrations)"):
        t0 = time.time()
        gx.install(sc, gx.galaxy_helm_overrides(),
                   {"migration": {"enabled": False}, "waitForMigrations": {"enabled": False}},
                   wait=False).check("helm install (galaxy-helm's pattern, gating off)")
        assert not sc.migration_jobs()
        kinds = {role: w["kind"] for role, w in sc.deployments().items()}
        assert kinds == {r: "Deployment" for r in HELM_ROLES}, kinds
        for w in sc.deployments().values():
            spec = w["spec"]["template"]["spec"]
            inits = [c["name"] for c in spec.get("initContainers") or [] if c.get("restartPolicy") != "Always"]
            assert not inits, f"{w['metadata']['name']}: init containers other than native sidecars: {inits}"
            assert spec["terminationGracePeriodSeconds"] == 30, w["metadata"]["name"]
            assert w["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    with p.phase("every Galaxy process exits on the outdated schema and is restarted"):
        def all_restarted() -> bool:
            pods = sc.handler_pods()
            return len(pods) == len(HELM_ROLES) and all(restart_count(pod) >= 1 for pod in pods)
        wait_until(all_restarted, 600, "web, workflow and both job handlers to be restarted", interval=2,
                   describe=sc.describe_pods)
        p.fact("all_restarted_after_install_s", round(time.time() - t0, 1))
        errors: dict[str, list[str]] = {}
        codes: dict[str, int] = {}
        for pod in sc.handler_pods():
            name, role = pod["metadata"]["name"], gx.role_of(pod)
            st = next(s for s in pod["status"]["containerStatuses"] if s["name"] == role)
            codes[name] = st["lastState"]["terminated"]["exitCode"]
            previous = sc.kube.logs(sc.namespace, name, role, previous=True)
            errors[name] = [e for e in GALAXY_ERRORS if e in previous]
            if role.startswith("job"):
                assert errors[name], f"no Galaxy schema error in {name}'s previous log:\n{previous[-3000:]}"
        p.fact("previous_exit_codes", codes)
        p.fact("galaxy_errors_in_previous_logs", errors)
        assert all(code != 0 for code in codes.values()), codes
        restarts = sc.handler_restarts()
        p.fact("restarts_before_migration", sum(restarts.values()))
        assert sum(restarts.values()) >= len(HELM_ROLES), restarts
    with p.phase("galaxy-helm's db-init: Galaxy's migration in a plain pod; every process Ready after it"):
        migrated = gx.migrate_now(sc)
        sc.wait_handlers_ready(900)
        ready = {pod["metadata"]["name"]: ready_at(pod) for pod in sc.handler_pods()}
        assert all(ready.values()), ready
        p.fact("all_ready_after_migration_s", round(max(ready.values()) - migrated, 1))
        restarts = sc.handler_restarts()
        p.fact("restarts_per_pod", restarts)
        p.fact("restarts_total", sum(restarts.values()))
    before = {j["id"] for j in gx.jobs(sc)}
    durations = [SHORT, SHORT, LONG, LONG]
    with p.phase(f"submit sleep jobs {durations} through Galaxy's API; all running"):
        gx.submit_sleep_jobs(sc, durations)
        wait_until(lambda: len(_new_jobs(sc, before)) == len(durations)
                   and all(j["state"] == "running" for j in _new_jobs(sc, before)), 300,
                   f"{len(durations)} jobs running", interval=2, describe=lambda: str(_new_jobs(sc, before)))
        p.fact("handlers_of_running_jobs", sorted(j["handler"] for j in _new_jobs(sc, before)))
    roles = ("job0", "job1")
    old = {uid: pod for role in roles for pod in sc.handler_pods(role) for uid in [pod["metadata"]["uid"]]}
    restarts_before = sum(sc.handler_restarts().values())
    with p.phase("rollout restart of both handler Deployments (default rolling update)"):
        t0 = time.time()
        for role in roles:
            sc.restart_role(role)
        sc.wait_rollout("job0", set(old), timeout=900)
        sc.wait_rollout("job1", set(old), timeout=900)
        p.fact("rollout_seconds", round(time.time() - t0, 1))
    with p.phase("measure: identity overlap, orphaned jobs, restarts"):
        spans = {role: overlaps(lifetimes(sc.timeline, role), key=lambda _name, r=role: r) for role in roles}
        p.fact("identity_overlaps_s", spans)
        flat = [o for v in spans.values() for o in v]
        p.fact("max_identity_overlap_s", max(flat))
        final = _settled(sc, before, 60)
        p.fact("final_states", {j["id"]: (j["state"], j["handler"]) for j in final})
        orphaned = [j for j in final if j["state"] in gx.UNFINISHED]
        p.fact("orphaned_jobs", len(orphaned))
        last = sc.timeline.last_pods()
        exits = {uid: terminated_state(last[uid], gx.role_of(last[uid])) for uid in old}
        p.fact("old_exit_codes", sorted(t["exitCode"] if t else -1 for t in exits.values()))
        old_exit = max(parse_time(t["finishedAt"]) for t in exits.values() if t) if any(exits.values()) else None
        early = [j["id"] for j in final if j["state"] == "error" and old_exit is not None
                 and gx.KILLED_INFO in j["info"] and j["update_time"] < old_exit]
        p.fact("recovered_while_old_process_ran", len(early))
        p.fact("restarts_during_rollout", sum(sc.handler_restarts().values()) - restarts_before)
        # galaxy-helm's pattern: each identity's new process started before its old one exited
        assert len(flat) == len(roles), f"expected one replacement per identity: {spans}"
        assert min(flat) > 0, f"no overlap: the surge pod started after the old one exited: {spans}"


def _new_jobs(sc: Scenario, before: set[int]) -> list[dict]:
    return [j for j in gx.jobs(sc) if j["id"] not in before]


def test_16c_galaxy_job_rollout_with_jobs_in_flight(shared: Scenario) -> None:
    """Rollout restart of the job StatefulSet while sleep jobs run: the StatefulSet replaces one
    pod at a time, the old process exits before its successor (same name) starts; the local
    runner kills the jobs of a stopped handler and either marks them `error` itself before it
    exits (SHUTDOWN_INFO) or leaves them `running` for its successor, which has the same server
    name and recovers them as `error` (KILLED_INFO). No job is left running or queued."""
    sc, p = shared, shared.progress
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    before = {j["id"] for j in gx.jobs(sc)}
    durations = [SHORT, SHORT, LONG, LONG]

    def mine() -> list[dict]:
        return [j for j in gx.jobs(sc) if j["id"] not in before]
    with p.phase(f"submit sleep jobs {durations} through Galaxy's API; all running"):
        gx.submit_sleep_jobs(sc, durations)
        wait_until(lambda: len(mine()) == len(durations) and all(j["state"] == "running" for j in mine()), 300,
                   f"{len(durations)} jobs running", interval=2, describe=lambda: str(mine()))
    at_rollout = mine()
    p.fact("handlers_of_running_jobs", sorted(j["handler"] for j in at_rollout))
    restarts_before = sc.restart_counts()
    old = set(restarts_before)
    grace = sc.grace("job")
    with p.phase("rollout restart of the job StatefulSet"):
        t0 = sc.restart_role("job")
        sc.wait_rollout("job", old, timeout=2 * (grace + 300))
        p.fact("rollout_seconds", round(time.time() - t0, 1))
    with p.phase("every job final: ok, or error recovered by the handler of the same name"):
        wait_until(lambda: not [j for j in mine() if j["state"] in gx.UNFINISHED], 300,
                   "every job to reach a final state", interval=3, describe=lambda: str(mine()))
        final = mine()
        p.fact("final_states", {j["id"]: (j["state"], j["handler"]) for j in final})
        counts = {s: sum(1 for j in final if j["state"] == s) for s in {j["state"] for j in final}}
        p.fact("final_state_counts", counts)
        # the number set beside 22a's (Kubernetes runner) in docs/benchmarks.md
        p.fact("jobs_killed_or_error", len(final) - counts.get("ok", 0))
        p.fact("error_set_by", {"old process at shutdown": sum(gx.SHUTDOWN_INFO in j["info"] for j in final),
                                "successor of the same name": sum(gx.KILLED_INFO in j["info"] for j in final)})
        names = {pod["metadata"]["name"] for pod in sc.handler_pods("job")}
        for j in final:
            assert j["state"] in ("ok", "error"), j
            assert j["handler"] in names, f"job {j['id']} handled by {j['handler']!r}, not a stable identity {names}"
            if j["state"] == "error":  # set by the old process at its shutdown, or by its successor
                assert gx.KILLED_INFO in j["info"] or gx.SHUTDOWN_INFO in j["info"], j
        # the LONG jobs outlive the whole rollout: their handler was stopped under them
        assert counts.get("error", 0) >= 2, counts
    with p.phase("one process per identity: overlap <= 0"):
        # this test's pods only: the old ones and those created since the rollout (on the shared
        # install the timeline also holds earlier tests' pods, and a first try's: a rerun failed
        # on them in stop 34's rehearsal)
        mine = [life for life in lifetimes(sc.timeline, "job") if life[1] in old or life[2] >= t0 - 1]
        spans = overlaps(mine, key=lambda name: name)
        p.fact("identity_overlaps_s", spans)
        p.fact("max_identity_overlap_s", max(spans))
        assert len(spans) == 2, f"expected one replacement per identity: {mine}"
        assert max(spans) <= 0, f"two processes held one identity at once: {spans}"
        last = sc.timeline.last_pods()
        exits = {uid: terminated_state(last[uid], "job") for uid in old}
        p.fact("old_exit_codes", [t["exitCode"] if t else None for t in exits.values()])
        took = {last[uid]["metadata"]["name"]: round(parse_time(t["finishedAt"]) - deletion_started(sc.timeline, uid), 1)
                for uid, t in exits.items() if t and deletion_started(sc.timeline, uid) is not None}
        p.fact("old_sigterm_to_exit_s", took)
        assert all(t is not None for t in exits.values()), "an old job handler's end was not seen"
        # Galaxy exits in 14-43 s of its 57 s grace; at load 40 one needed longer and the kubelet
        # SIGKILLed it at the grace (exit 137, stop 34's rehearsal). For the local runner that
        # loses nothing more (its jobs are killed either way), so a kill at the grace is
        # recorded, not failed; the grace itself still bounds the exit.
        p.fact("old_killed_at_grace", sum(1 for t in exits.values() if t and t["exitCode"] == 137))
        assert len(took) == 2 and max(took.values()) <= grace + 2, f"grace {grace}s: {took}"
        restarts = sc.restarts_since(restarts_before)
        p.fact("job_handler_restarts_since_the_test_began", restarts)
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def test_16d_galaxy_liveness_sigstop(shared: Scenario) -> None:
    """SIGSTOP one job handler from its node: its heartbeat log goes stale, the liveness probe
    (maxAge 150 s, 3 x 20 s) restarts the container in place with the probe-level grace."""
    sc, p = shared, shared.progress
    with p.phase("every handler Ready"):
        sc.wait_handlers_ready(600)
    target = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))[0]
    before = {pod["metadata"]["name"]: restart_count(pod) for pod in sc.handler_pods("job")}
    probe = sc.values["handlers"]["job"]["livenessProbe"]
    max_age, period, threshold = probe["heartbeat"]["maxAgeSeconds"], probe["periodSeconds"], probe["failureThreshold"]
    probe_grace = int(sc.deployments()["job"]["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
                      ["terminationGracePeriodSeconds"])
    window = max_age + period * threshold
    with p.phase(f"SIGSTOP {target}: restarted by liveness (window {window}s + grace {probe_grace}s)"):
        uid = sc.kube.pod(sc.namespace, target)["metadata"]["uid"]
        t0 = time.time()
        live.freeze(sc, target, "job")

        def restarted() -> bool:
            pod = sc.kube.pod(sc.namespace, target)
            if pod is not None and pod["metadata"]["uid"] != uid:
                raise WaitTimeout(f"{target} was replaced by a new pod, not restarted in place (evicted? its "
                                  f"node drained by another scenario?): {sc.describe_pods()}")
            return pod is not None and restart_count(pod) > before[target]
        wait_until(restarted, window + probe_grace + 120, f"{target} to be restarted in place", interval=2,
                   describe=sc.describe_pods)
        p.fact("sigstop_to_restart_s", round(time.time() - t0, 1))
        pod = sc.kube.pod(sc.namespace, target)
        last = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "job")["lastState"]["terminated"]
        kills = [e for e in sc.kube.events(sc.namespace)
                 if e.get("reason") == "Killing" and (e.get("involvedObject") or {}).get("name") == target
                 and "liveness" in (e.get("message") or "")]
        assert kills, f"no liveness Killing event for {target}"
        kill_at = max(event_time(e) for e in kills)
        p.fact("sigstop_to_liveness_kill_s", round(kill_at - t0, 1))
        p.fact("liveness_kill_to_exit_s", round(parse_time(last["finishedAt"]) - kill_at, 1))
        p.fact("liveness_exit_code", last.get("exitCode"))
        assert kill_at - t0 >= max_age - 25, "killed before its heartbeat could be stale"
        assert parse_time(last["finishedAt"]) - kill_at <= probe_grace + 5
    with p.phase("the restarted handler is Ready again; the other was left alone"):
        t1 = time.time()
        sc.wait_handlers_ready(600)
        p.fact("restart_to_ready_s", round(time.time() - t1, 1))
        after = {pod["metadata"]["name"]: restart_count(pod) for pod in sc.handler_pods("job")}
        assert after[target] == before[target] + 1, after
        assert all(after[n] == before[n] for n in after if n != target), after
