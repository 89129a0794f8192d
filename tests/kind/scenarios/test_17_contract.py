"""A contract migration (v2 -> v3 drops jobs.duration, which v2 reads) with the two migration
phases: (a) split — the pre-deploy hook backfills, the rollout runs v2 and v3 side by side,
the post-deploy hook drops the column only after the last v2 pod exited — and (b) the same
upgrade all in the pre-deploy hook, run at the same time in a second namespace: (a) loses no
request, (b) does (the scenario measures something). (c) `helm rollback` between the phases.

JH_CONTRACT_V2_TAG names another tag of the v2 image (default 2): a development aid where
several branches share one docker daemon and one cluster, and `:2` may be another branch's."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from jhkind.client import Client, summarize
from jhkind.cluster import parse_time, pod_ready
from jhkind.helm import CHART
from jhkind.observe import LogFollower, terminated_state
from jhkind.scenario import WORKLOAD_IMAGE, Scenario
from jhkind.waits import hold_for, wait_until

# In the main pass since stop 45: with 3 main lanes the node pass became the run's last lane
# (rehearsal ci4), and 17's ~8 minutes fit the main lanes better (stops 37-44: `sequential`, in
# the node pass).
pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

# v2 accepts the expand-only revision 5 (acceptAhead set one release BEFORE the split upgrade:
# old pods keep the values they were created with; JH035).
V2_TAG = os.environ.get("JH_CONTRACT_V2_TAG", "2")
# Jobs of 120 s (job role maxJobRuntimeSeconds 150, grace 170 s): the v2 job pod is still
# draining when helm reaches the post-upgrade hook (after every role's rollout: 20-100 s on the
# shared 2-core machine), so the post-deploy Job has to wait for it. preStopSeconds 10 (the
# scenarios' base is 3): a web pod keeps serving 10 s after it turns not Ready, so a loaded
# machine's endpoint updates land before it stops listening (seen once with 3 s: 2 refused
# connections during the v3 web rollout of 17c).
V2: dict[str, Any] = {"image": {"tag": V2_TAG}, "waitForMigrations": {"acceptAhead": True},
                      "drain": {"preStopSeconds": 10},
                      "handlers": {"web": {"replicas": 2}, "job": {"maxJobRuntimeSeconds": 150}}}
SPLIT: dict[str, Any] = {"image": {"tag": "3"},
                         "commands": {"migrate": ["workload", "migrate", "--skip-post-deployment"],
                                      "postMigrate": ["workload", "migrate"]},
                         "migration": {"postDeploy": {"waitForRollout": {"intervalSeconds": 1}}}}
ALL_IN_PRE: dict[str, Any] = {"image": {"tag": "3"}}
LONG_JOBS = 3
LONG_JOB_SECONDS = 120


def failures(requests: list, t0: float, t1: float) -> tuple[list, list]:
    """(answered failures: an HTTP error status or a refused/reset connection, client timeouts):
    a 3 s client timeout on a machine shared with other clusters' work is load, not the schema."""
    bad = [r for r in requests if t0 <= r.ts <= t1 and not r.ok]
    timeouts = [r for r in bad if r.status == 0 and "timed out" in r.err]
    return [r for r in bad if r not in timeouts], timeouts


def seed_and_client(sc: Scenario) -> int:
    """A finished job row, and the client loop reading it (GET /jobs/<id> reads the duration
    column: v2 reads jobs.duration, v3 jobs.duration_seconds)."""
    [[jid]] = sc.pg.sql(sc.database, "INSERT INTO jobs (kind, duration, duration_seconds, state) "
                                     "VALUES ('sleep', 1, 1, 'done') RETURNING id")
    sc._client = Client(sc.kube, sc.namespace, sc.web_base(), f"{WORKLOAD_IMAGE}:1").start(target_path=f"/jobs/{jid}")
    client = sc._client
    wait_until(lambda: sum(r.ok for r in client.requests()) >= 5, 60, "the client loop to get 5 answers from web")
    return int(jid)


def submit_v2(sc: Scenario, seconds: float, count: int) -> list[int]:
    """Queue sleep jobs as v2 writes them (both duration columns), straight into the database
    (the web API is the client loop's; a loaded machine must not turn a submission into a 503)."""
    rows = ", ".join(f"('sleep', {seconds}, {seconds})" for _ in range(count))
    return [int(r[0]) for r in sc.pg.sql(sc.database, f"INSERT INTO jobs (kind, duration, duration_seconds) "
                                                      f"VALUES {rows} RETURNING id")]


def old_job_pod(sc: Scenario) -> dict:
    [pod] = sc.handler_pods("job")
    return pod


def image_tag(pod: dict) -> str:
    return pod["spec"]["containers"][0]["image"].rsplit(":", 1)[1]


def upgrade_with_long_jobs(sc: Scenario, values: dict, timeout_s: int = 300) -> dict[str, Any]:
    """v2 installed, client loop, LONG_JOBS jobs running on the v2 job pod, then helm upgrade."""
    p = sc.progress
    with p.phase("install v2 (acceptAhead)"):
        sc.install(V2).check("helm install v2")
        sc.wait_handlers_ready(90)
        assert sc.db.schema_revision() == 4
    with p.phase("client loop on GET /jobs/<id>, long jobs on the v2 job pod"):
        seed_and_client(sc)
        ids = submit_v2(sc, LONG_JOB_SECONDS, LONG_JOBS)
        wait_until(lambda: sc.db.states()["running"] >= LONG_JOBS, 30, "the long jobs to run on the v2 job pod")
        pod = old_job_pod(sc)
        follower = LogFollower(sc.kube, sc.namespace, pod["metadata"]["name"], "job").start()
    old = {p_["metadata"]["uid"] for p_ in sc.handler_pods()}
    t_up = time.time()
    with p.phase("helm upgrade --wait to workload:3"):
        res = sc.upgrade(V2, values, timeout_s=timeout_s)
    return {"ids": ids, "old": old, "t_up": t_up, "res": res, "follower": follower}


def last_old_exit(sc: Scenario, old: set[str], follower: LogFollower) -> float:
    """When the last v2 pod's handler exited: its containers' finishedAt (1 s resolution) and the
    v2 job pod's own `exit` log line (sub-second), the later of them."""
    ends = []
    for uid, pod in sc.timeline.last_pods().items():
        if uid in old:
            term = terminated_state(pod, pod["metadata"]["labels"]["app.kubernetes.io/component"])
            assert term, f"{pod['metadata']['name']}: no terminated state seen"
            ends.append(parse_time(term["finishedAt"]))
    exit_event = follower.first("exit")
    assert exit_event, f"the v2 job pod logged no exit: {follower.lines[-5:]}"
    return max([*ends, float(exit_event["ts"])])


def split_variant(sc: Scenario) -> None:
    p = sc.progress
    run = upgrade_with_long_jobs(sc, SPLIT)
    run["res"].check("helm upgrade to v3 (split)")
    t_end = time.time()
    p.fact("helm_upgrade_seconds", round(run["res"].seconds, 1))
    with p.phase("the post-deploy Job ran after the last v2 pod exited"):
        wait_until(lambda: not ({q["metadata"]["uid"] for q in sc.handler_pods(live_only=False)} & run["old"]), 60,
                   "the v2 pods to be gone", describe=sc.describe_pods)
        run["follower"].join(10)
        assert sc.db.schema_revision() == 6
        last_exit = last_old_exit(sc, run["old"], run["follower"])
        pre_done, post_done = sc.db.revision_applied_at(5), sc.db.revision_applied_at(6)
        [job] = [j for j in sc.kube.jobs(sc.namespace) if j["metadata"]["name"].endswith("-post-migration")]
        assert "post-upgrade" in job["metadata"]["annotations"]["helm.sh/hook"]
        [pod] = sc.kube.pods(sc.namespace, f"job-name={job['metadata']['name']}")
        main = terminated_state(pod, "post-migrate")
        assert main and main["exitCode"] == 0, pod["status"]
        created = parse_time(pod["metadata"]["creationTimestamp"])
        assert created < last_exit, (f"the post-deploy pod was created {created - last_exit:.0f} s after the last v2 "
                                     f"pod exited: the rollout outlasted the {LONG_JOB_SECONDS} s jobs, nothing to wait for")
        p.fact("post_job_waited_seconds", round(last_exit - created, 1))
        p.fact("post_deploy_gap_seconds", round(post_done - last_exit, 2))  # DB commit of revision 6 - last v2 exit
        p.fact("post_container_start_after_last_exit_seconds", round(parse_time(main["startedAt"]) - last_exit, 1))
        p.fact("phases_apart_seconds", round(post_done - pre_done, 1))
        assert post_done > last_exit, f"revision 6 applied {last_exit - post_done:.2f} s BEFORE the last v2 pod exited"
        assert parse_time(main["startedAt"]) >= int(last_exit), "post-migrate started before the last v2 pod exited"
        log = sc.kube.logs(sc.namespace, pod["metadata"]["name"], "wait-for-rollout")
        assert "pod(s) of another image" in log and "(terminating)" in log, log  # it did wait on draining pods
        assert "ok: every handler pod runs jobhandlers/workload:3" in log, log
        p.note("wait-for-rollout: " + " | ".join(line[:140] for line in log.strip().splitlines()[-3:]))
    with p.phase("0 failed requests, 0 lost jobs, 0 restarts"):
        requests = sc._client.requests()
        s = summarize(requests, run["t_up"], t_end)
        answered, timeouts = failures(requests, run["t_up"], t_end)
        report = sc.db.report(run["ids"])
        restarts = sc.handler_restarts()
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", len(answered))
        p.fact("client_timeouts_3s", len(timeouts))
        p.fact("jobs_lost", report["lost"])
        p.fact("restarts_total", sum(restarts.values()))
        assert s["requests"] >= 50, s
        assert not answered, [f"{r.ts:.3f} status={r.status} {r.err}" for r in answered[:10]]
        assert len(timeouts) <= s["requests"] // 5, f"{len(timeouts)} client timeouts of {s['requests']}"
        assert report["lost"] == 0 and report["reruns"] == 0, report
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)


def all_in_pre_variant(sc: Scenario) -> None:
    p = sc.progress
    run = upgrade_with_long_jobs(sc, ALL_IN_PRE)
    run["res"].check("helm upgrade to v3 (all in pre-deploy)")
    t_end = time.time()
    with p.phase("the v2 pods failed requests until they were replaced"):
        s = summarize(sc._client.requests(), run["t_up"], t_end)
        wait_until(lambda: not ({q["metadata"]["uid"] for q in sc.handler_pods(live_only=False)} & run["old"]), 240,
                   "the v2 pods to be gone", describe=sc.describe_pods)
        report = sc.db.report(run["ids"])
        p.fact("helm_upgrade_seconds", round(run["res"].seconds, 1))
        answered, timeouts = failures(sc._client.requests(), run["t_up"], t_end)
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", len(answered))
        p.fact("client_timeouts_3s", len(timeouts))
        p.fact("jobs_lost", report["lost"])
        p.note(f"first failures: {[f'{r.status} {r.err[:80]}' for r in answered[:2]]}")
        assert sc.db.schema_revision() == 6
        assert answered and all(r.status == 503 for r in answered), [(r.status, r.err) for r in answered[:5]]


def test_17ab_contract_split_vs_all_in_pre_deploy(scenario_pair: tuple[Scenario, Scenario]) -> None:
    """(a) and (b) at once, in two namespaces."""
    a, b = scenario_pair
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(split_variant, a), pool.submit(all_in_pre_variant, b)]
        errors = [f.exception() for f in futures]
    a.progress.fact("both_variants_wall_seconds", round(time.monotonic() - t0, 1))
    for err in errors:
        if err is not None:
            raise err


def test_17c_rollback_between_the_phases(scenario: Scenario) -> None:
    """helm upgrade to v3 (split) times out (helm's --timeout 150s bounds the post-upgrade hook)
    while the post-deploy Job waits for a 400 s job on the draining v2 pod;
    `helm rollback` to v2: v2 runs on the pre-deploy revision 5, no failed request, and the
    waiting post-deploy Job never drops the column (v2 pods run another image). The 400 s job
    keeps running on its v2 pod (cleanup ends it)."""
    sc, p = scenario, scenario.progress
    v2 = {**V2, "handlers": {"web": {"replicas": 2}, "job": {"maxJobRuntimeSeconds": 400}}}
    values = SPLIT
    with p.phase("install v2 (acceptAhead)"):
        sc.install(v2).check("helm install v2")
        sc.wait_handlers_ready(90)
    seed_and_client(sc)
    [jid] = submit_v2(sc, 400, 1)
    wait_until(lambda: sc.db.states()["running"] >= 1, 60, "the 400 s job to run on the v2 job pod")
    t_up = time.time()
    with p.phase("helm upgrade to v3 (split), --timeout 150s: fails while the post-deploy Job waits"):
        sc.values = sc.values_for(v2, values)
        # no --wait: helm's timeout then bounds the hook alone, so the post-deploy Job always runs;
        # with --wait a rollout slower than 150 s on a loaded machine failed helm before the hook
        # (the post-deploy Job itself waits for the rollout: every handler pod of the new image)
        res = sc.helm.run(["upgrade", sc.release, str(CHART), "-n", sc.namespace, "-f",
                           str(sc._values_file(sc.values)), "--timeout", "150s"], timeout=900)
        p.fact("helm_upgrade_seconds", round(res.seconds, 1))
    p.fact("helm_upgrade_exit", res.rc)
    assert res.rc != 0, res.stdout[-1000:]
    assert sc.db.schema_revision() == 5
    posts = [j for j in sc.kube.jobs(sc.namespace) if j["metadata"]["name"].endswith("-post-migration")]
    assert posts, f"helm failed before the post-upgrade hook: {res.stderr[-1500:]} {sc.describe_pods()}"
    with p.phase("helm rollback to v2 --wait"):
        rb = sc.helm.run(["rollback", sc.release, "1", "-n", sc.namespace, "--wait", "--timeout", "180s"], timeout=300)
        assert rb.rc == 0, rb.stderr[-1500:]
        p.fact("rollback_seconds", round(rb.seconds, 1))

    def v2_only() -> bool:
        """No v3 pod left (terminating ones included); the live pods are v2, as many as the
        replicas, all Ready (the draining v2 job pod may still finish its job)."""
        pods, live = sc.handler_pods(live_only=False), sc.handler_pods()
        want = sum(int(d["spec"]["replicas"]) for d in sc.deployments().values())
        return (bool(pods) and all(image_tag(q) == V2_TAG for q in pods) and len(live) == want
                and all(pod_ready(q) for q in live))
    with p.phase("v2 pods only (the draining v2 job pod still runs its job), the schema still at 5"):
        wait_until(v2_only, 300, "only v2 pods, all Ready", describe=sc.describe_pods)
        job = sc.db.job(jid)
        assert job["state"] in ("running", "done") and job["attempts"] == 1, job  # neither lost nor rerun
        assert sc.db.schema_revision() == 5
    [job] = [j for j in sc.kube.jobs(sc.namespace) if j["metadata"]["name"].endswith("-post-migration")]
    [pod] = sc.kube.pods(sc.namespace, f"job-name={job['metadata']['name']}")

    def still_waiting() -> str | None:
        cur = sc.kube.pod(sc.namespace, pod["metadata"]["name"]) or {}
        main = [c for c in (cur.get("status") or {}).get("containerStatuses") or [] if c["name"] == "post-migrate"]
        if main and "waiting" not in (main[0].get("state") or {}):
            return f"post-migrate left waiting: {main[0]['state']}"
        return None if sc.db.schema_revision() == 5 else f"schema moved to {sc.db.schema_revision()}"
    with p.phase("the post-deploy Job keeps waiting (5 s), v2 serves on revision 5"):
        hold_for(still_waiting, 5, "after the rollback")
        log = sc.kube.logs(sc.namespace, pod["metadata"]["name"], "wait-for-rollout")
        assert "pod(s) of another image" in log and "ok: every handler pod" not in log, log
        for q in [q for q in sc.handler_pods() if parse_time(q["metadata"]["creationTimestamp"]) >= int(t_up)]:
            w = sc.kube.logs(sc.namespace, q["metadata"]["name"], "wait-for-migrations")
            assert "WARNING: the schema is ahead of this image" in w, w
        requests, now = sc._client.requests(), time.time()
        s = summarize(requests, t_up, now)
        answered, timeouts = failures(requests, t_up, now)
        restarts = sc.handler_restarts()
        p.fact("client_requests", s["requests"])
        p.fact("client_failed", len(answered))
        p.fact("client_timeouts_3s", len(timeouts))
        p.fact("restarts_total", sum(restarts.values()))
        assert s["requests"] >= 50 and not answered, [f"{r.ts:.3f} status={r.status} {r.err}" for r in answered[:10]]
        assert len(timeouts) <= s["requests"] // 5, f"{len(timeouts)} client timeouts of {s['requests']}"
        assert sum(restarts.values()) == 0, sc.restart_report(restarts)
