"""Celery (unmodified, RabbitMQ, prefetch multiplier 4) under the chart from
values-examples/django-celery.yaml: the races of OpenWhisk's invoker drain on a real
prefetching consumer. Workers are a StatefulSet (node name celery@<pod>).

18a a rollout restart with every worker's prefetch window full and more tasks queued, in
four namespaces at once (one test, to save cluster time): drain `none` (SIGTERM alone: warm
shutdown hands the reserved tasks back; then a scale-down 2 -> 1 with full windows), drain `command` (the example: cancel_consumer,
wait until nothing is reserved, then SIGTERM), and the `command` drain with a grace that
does not cover the prefetched batch, with late acks (the example) and with Celery's default
early acks. Counts per variant: jobs lost, run twice, redelivered runs; old pods' exits.
18b maintenance mode: cancel_consumer takes a worker out (it finishes what it holds, takes
nothing new, is not Ready), add_consumer puts it back.
18c broker restart during a rollout: what the chart can promise (every job runs) and what it
cannot (exactly once).
18d `kubectl drain` of one worker's node with both windows full (a node scenario: it runs alone,
after the others): the evicted worker drains, the same identity comes back on the other node."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from jhkind import celery as cy
from jhkind import nodes
from jhkind.cluster import RESTRICTED_LABELS, Kube, pod_ready
from jhkind.helm import Helm
from jhkind.observe import Timeline, kubelet_stop_at, old_pod_exit
from jhkind.postgres import Postgres
from jhkind.progress import Progress, when_where
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

PREFETCH, CONCURRENCY = 4, 2
HELD = PREFETCH * CONCURRENCY          # messages one worker holds (running + reserved)
WORKER_ENV = yaml.safe_load(cy.EXAMPLE.read_text())["handlers"]["job"]["env"]
# both pods of a variant replaced at once (StatefulSet maxUnavailable, on by default in 1.37):
# half the cluster time of one-by-one, the same drain per pod
BOTH_AT_ONCE = {"handlers": {"job": {"updateStrategy": {"type": "RollingUpdate",
                                                        "rollingUpdate": {"maxUnavailable": 2}}}}}
# grace 20 x 1 + 4 + 2 = 26 s, the batch of 8 tasks of 10-20 s on 2 slots needs ~60 s
SHORT_GRACE = {"drain": {"runtimeMultiplier": 1, "bufferSeconds": 4},
               "handlers": {"job": {"replicas": 1, "maxJobRuntimeSeconds": 20}}}
EARLY_ACKS = {"handlers": {"job": {"env": [*WORKER_ENV, {"name": "CELERY_TASK_ACKS_LATE", "value": "false"}]}}}
VARIANTS: dict[str, list[dict]] = {
    "none": [{"drain": {"mode": "none"}}, BOTH_AT_ONCE],
    "command": [BOTH_AT_ONCE],
    "short-late": [SHORT_GRACE],
    "short-early": [SHORT_GRACE, EARLY_ACKS],
}


@contextlib.contextmanager
def namespaces(kube: Kube, helm: Helm, postgres: Postgres, tmp: Path, names: list[str]) -> Iterator[dict[str, Scenario]]:
    """One Scenario (namespace, database, timeline) per name; removed again at the end. Each
    gets its own API clients, and its timeline yet another: the kubernetes client's exec
    (`stream`) swaps `call_api` on the ApiClient it uses, so a second thread's calls on that
    client would go out as websocket upgrades."""
    made: dict[str, Scenario] = {}
    failed = True
    try:
        for name in names:
            ns = f"jh-celery-{name}-{secrets.token_hex(2)}"
            kube.create_namespace(ns, dict(RESTRICTED_LABELS))
            own = Kube(kube.kubeconfig)
            (tmp / name).mkdir(exist_ok=True)
            sc = Scenario(own, helm, dataclasses.replace(postgres, kube=own), ns, tmp / name, Progress(f"18-{name}"))
            sc.timeline = Timeline(Kube(kube.kubeconfig), ns)
            made[name] = sc.open()
        yield made
        failed = False
    finally:
        for sc in made.values():
            sc.close(failed, delete_namespace=True)


def scale_down(sc: Scenario, rng: random.Random) -> dict[str, Any]:
    """Both windows full and 4 queued, then the StatefulSet scaled 2 -> 1: pod 1 goes (its
    drain, then it is not replaced). What pod 1 held must end up run once, on either pod."""
    p = sc.progress
    before = cy.report(sc)
    with p.phase(f"submit {2 * HELD + 4} tasks of 5-8 s; windows full"):
        cy.fill_windows(sc, sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))[0],
                        [round(rng.uniform(5, 8), 1) for _ in range(2 * HELD + 4)], unacked=2 * HELD)
    [gone] = [pod for pod in sc.handler_pods("job") if pod["metadata"]["name"].endswith("-1")]
    uid, name = gone["metadata"]["uid"], gone["metadata"]["name"]
    with p.phase(f"scale 2 -> 1: {name} drains and goes"):
        sts = sc.deployments()["job"]["metadata"]["name"]
        sc.kube.apps.patch_namespaced_stateful_set_scale(sts, sc.namespace, {"spec": {"replicas": 1}})
        wait_until(lambda: uid not in {pod["metadata"]["uid"] for pod in sc.handler_pods("job", live_only=False)},
                   sc.grace("job") + 60, f"{name} to be gone", interval=1)
    started, ended, code = old_pod_exit(sc.timeline, uid, name, "job")
    with p.phase("queue drained, every run ended"):
        after = cy.wait_settled(sc, 300, {name: ended})
    out = {"lost": after["lost"], "run_twice": after["run_twice"] - before["run_twice"],
           "redelivered_runs": after["redelivered_runs"] - before["redelivered_runs"],
           "exit": (code, round(ended - started, 1))}
    p.fact("scale_down", out)
    return out


def rollout(sc: Scenario, overrides: list[dict], seed: int, then_scale_down: bool = False) -> dict[str, Any]:
    """Broker + install, fill every worker's prefetch window and queue 4 more, rollout-restart
    the workers, wait until every job has finished; the report plus the old pods' exits."""
    p = sc.progress
    with p.phase("broker + helm install --wait"):
        cy.start_broker(sc)
        cy.install(sc, *overrides).check("helm install")
        sc.wait_handlers_ready(300)
    grace, replicas = sc.grace("job"), int(sc.values["handlers"]["job"]["replicas"])
    pods = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))
    rng = random.Random(seed)
    n = HELD * replicas + 4
    with p.phase(f"submit {n} tasks of 10-20 s; every window full ({HELD} per worker)"):
        # paused: the windows fill from a full queue at once, so the state below holds from then
        # until the first task ends (>= 10 s), however slow the submit on a loaded machine
        cy.fill_windows(sc, pods[0], [round(rng.uniform(10, 20), 1) for _ in range(n)],
                        unacked=HELD * replicas, running=CONCURRENCY * replicas)
    held = cy.queue_counts(sc)
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    with p.phase("rollout restart"):
        sc.restart_role("job")
        sc.wait_rollout("job", set(old), timeout=grace + 240)
    last = sc.timeline.last_pods()
    exits: dict[str, tuple[int, float]] = {}
    ended: dict[str, float] = {}
    ran_while_draining = after_sigterm = 0
    pre_stop = int(sc.values["drain"]["preStopSeconds"])
    events = sc.kube.events(sc.namespace)
    stop_lag: dict[str, float | None] = {}
    for uid, name in old.items():
        started, ended[name], code = old_pod_exit(sc.timeline, uid, name, "job", last)
        exits[name] = (code, round(ended[name] - started, 1))
        ran_while_draining += cy.started_between(sc, name, started, ended[name])
        if sc.values["drain"]["mode"] == "none":
            # SIGTERM comes after the preStop's sleep, which starts when the kubelet begins to stop
            # the container: under load seconds after the deletion (stop 46's ci8 counted a task
            # started in that lag as "after SIGTERM"); the deletion when the event was not kept
            stop = kubelet_stop_at(events, uid, "job")
            stop_lag[name] = None if stop is None else round(stop - started, 1)
            after_sigterm += cy.started_between(sc, name, (stop or started) + pre_stop + 1, ended[name])
    with p.phase("queue drained, every run ended"):
        rep = cy.wait_settled(sc, 300, ended)
    rep.update(grace=grace, held_at_rollout=held, exits=exits, started_while_draining=ran_while_draining,
               started_after_sigterm=after_sigterm, kubelet_stop_lag_s=stop_lag)
    p.fact("report", rep)
    if then_scale_down:
        rep["scale_down"] = scale_down(sc, rng)
    return rep


def test_18a_celery_rollout_with_prefetch(kube: Kube, helm: Helm, postgres: Postgres, tmp_path: Path,
                                          scenario_summary: dict) -> None:
    t0 = time.monotonic()
    with namespaces(kube, helm, postgres, tmp_path, list(VARIANTS)) as scs:
        with ThreadPoolExecutor(len(scs)) as pool:
            # the SIGTERM-alone variant ends first: it also scales down with full windows
            futures = {name: pool.submit(rollout, scs[name], VARIANTS[name], 18, name == "none") for name in scs}
            reports = {name: f.result() for name, f in futures.items()}
    seconds = round(time.monotonic() - t0, 1)
    scenario_summary["test_18a_celery_rollout_with_prefetch"] = {
        "passed": True, "seconds": seconds, "facts": reports, **when_where(seconds)}
    print({k: {x: v[x] for x in ("lost", "run_twice", "redelivered_runs", "exits", "grace", "started_while_draining")}
           for k, v in reports.items()})
    none, cmd, late, early = (reports[k] for k in ("none", "command", "short-late", "short-early"))
    # SIGTERM alone: warm shutdown finishes the running tasks and hands the reserved ones back
    assert none["lost"] == 0 and none["run_twice"] == 0, none
    assert none["redelivered_runs"] >= 2 * (HELD - CONCURRENCY) - 2, f"the reserved tasks were not handed back: {none}"
    assert none["started_after_sigterm"] == 0, f"a worker took a task after SIGTERM: {none}"
    # cancel_consumer first: each old worker runs its whole batch, nothing is handed back
    assert cmd["lost"] == 0 and cmd["run_twice"] == 0 and cmd["redelivered_runs"] == 0, cmd
    assert cmd["started_while_draining"] >= 2 * (HELD - CONCURRENCY), f"the old workers did not run their batch: {cmd}"
    for rep in (none, cmd):
        for name, (code, seconds) in rep["exits"].items():
            assert code == 0 and seconds < rep["grace"], f"{name}: exit {code} after {seconds}s (grace {rep['grace']}s)"
    # scale-down 2 -> 1 with full windows: the removed worker's batch is handed back, run once
    down = none["scale_down"]
    assert down["lost"] == 0 and down["run_twice"] == 0, down
    assert down["exit"][0] == 0 and down["exit"][1] < none["grace"], down
    # a grace shorter than the batch: SIGKILL mid-task
    for rep in (late, early):
        [(code, seconds)] = rep["exits"].values()
        assert code != 0 and seconds >= rep["grace"], f"the short grace did not cut the batch: {rep}"
    assert late["lost"] == 0 and late["run_twice"] >= 1, f"late acks: the killed tasks must run again: {late}"
    assert early["lost"] >= 1, f"early acks: the killed tasks must be lost: {early}"


def test_18b_celery_maintenance_mode(scenario: Scenario) -> None:
    """commands.drain (cancel_consumer for this worker) on one pod with a full window: it
    finishes the 8 tasks it holds, takes none of those submitted after, turns not Ready and
    stays alive; commands.undrain (add_consumer) makes it Ready and consuming again."""
    sc, p = scenario, scenario.progress
    fast_ready = {"handlers": {"job": {"readinessProbe": {"periodSeconds": 5}}}}
    with p.phase("broker + helm install --wait"):
        cy.start_broker(sc)
        cy.install(sc, fast_ready).check("helm install")
        sc.wait_handlers_ready(180)
    pod0, pod1 = sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))
    with p.phase("cost of the liveness probe (celery inspect ping), 3 tries"):
        costs = [cy.ping_cost(sc, pod1) for _ in range(3)]
        p.fact("inspect_ping_cost", costs)
    with p.phase(f"submit {2 * HELD} tasks of 15 s; both windows full"):
        cy.fill_windows(sc, pod0, [15.0] * (2 * HELD), unacked=2 * HELD)
    with p.phase(f"commands.drain in {pod1}; submit 8 more"):
        res = cy.run(sc, pod1, sc.values["commands"]["drain"])
        assert res.rc == 0 and "no longer consuming from" in res.stdout, f"exit {res.rc}: {res.stdout} {res.stderr[-1500:]}"
        assert cy.queue_counts(sc)["consumers"] == 1, cy.queue_counts(sc)
        cy.submit(sc, pod0, [3.0] * 8)
    with p.phase(f"{pod1}: finishes what it held, takes nothing new, not Ready"):
        wait_until(lambda: not pod_ready(sc.kube.pod(sc.namespace, pod1) or {}), 60, f"{pod1} not Ready")
        rep = cy.wait_settled(sc, 180)
        runs1 = cy.runs_on(sc, pod1)
        p.fact("maintenance_runs_on_drained_pod", runs1)
        assert runs1 == (HELD, HELD), f"{pod1} should finish exactly the {HELD} it held: {runs1}"
        assert rep["lost"] == 0 and rep["run_twice"] == 0 and rep["finished"] == 2 * HELD + 8, rep
        assert not pod_ready(sc.kube.pod(sc.namespace, pod1) or {}), f"{pod1} turned Ready while not consuming"
        assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())
    with p.phase(f"commands.undrain in {pod1}: Ready and consuming again"):
        res = cy.run(sc, pod1, sc.values["commands"]["undrain"])
        assert res.rc == 0 and "add consumer jobs" in res.stdout, f"exit {res.rc}: {res.stdout} {res.stderr[-1500:]}"
        wait_until(lambda: pod_ready(sc.kube.pod(sc.namespace, pod1) or {}), 60, f"{pod1} Ready again")
        cy.submit(sc, pod0, [2.0] * (2 * HELD))
        cy.wait_settled(sc, 120)
        after = cy.runs_on(sc, pod1)
        p.fact("runs_on_pod_after_undrain", after)
        assert after[0] > HELD, f"{pod1} took nothing after add_consumer: {after}"


def test_18c_celery_broker_restart_during_rollout(scenario: Scenario) -> None:
    """A rollout (drain `command`, both pods at once) with full windows, and RabbitMQ stopped
    3 s into it (`rabbitmqctl stop`; the kubelet restarts the node in place, its queue data
    kept in the pod's emptyDir). What the chart can promise here: every job still runs (the
    queue is durable, late acks); not exactly once."""
    sc, p = scenario, scenario.progress
    with p.phase("broker + helm install --wait"):
        cy.start_broker(sc)
        cy.install(sc, BOTH_AT_ONCE).check("helm install")
        sc.wait_handlers_ready(180)
    grace = sc.grace("job")
    rng = random.Random(183)
    with p.phase(f"submit {2 * HELD + 4} tasks of 10-20 s; windows full"):
        cy.fill_windows(sc, sorted(pod["metadata"]["name"] for pod in sc.handler_pods("job"))[0],
                        [round(rng.uniform(10, 20), 1) for _ in range(2 * HELD + 4)], unacked=2 * HELD, timeout=60)
    old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
    with p.phase("rollout restart; 3 s later the broker stops and comes back"):
        sc.restart_role("job")
        time.sleep(3)
        res = cy.exec_in(sc, cy.BROKER, ["rabbitmqctl", "stop"], container=cy.BROKER, timeout=60)
        p.fact("rabbitmqctl_stop_rc", res.rc)

        def back() -> bool:
            pod = sc.kube.pod(sc.namespace, cy.BROKER) or {}
            restarts = sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])
            return restarts >= 1 and pod_ready(pod)
        t0 = time.monotonic()
        wait_until(back, 180, "RabbitMQ restarted in place and Ready", interval=1)
        p.fact("broker_outage_seconds", round(time.monotonic() - t0 + 3, 1))
    with p.phase("rollout done"):
        sc.wait_rollout("job", set(old), timeout=grace + 240)
    last = sc.timeline.last_pods()
    exits: dict[str, tuple[int, float]] = {}
    ended: dict[str, float] = {}
    for uid, name in old.items():
        started, ended[name], code = old_pod_exit(sc.timeline, uid, name, "job", last)
        exits[name] = (code, round(ended[name] - started, 1))
    with p.phase("queue drained, every run ended"):
        rep = cy.wait_settled(sc, 400, ended)
    rep.update(grace=grace, exits=exits)
    p.fact("report", rep)
    with p.phase("every job ran (durable queue, late acks); the rest is recorded, not promised"):
        assert rep["lost"] == 0 and rep["finished"] == 2 * HELD + 4, rep
        assert cy.queue_counts(sc)["consumers"] == 2, cy.queue_counts(sc)


@pytest.mark.nodes
def test_18d_celery_node_drain_with_prefetch(scenario: Scenario) -> None:
    """`kubectl drain` of the node under one worker (eviction API, the role's PDB) while both
    prefetch windows are full and 4 more tasks are queued: the evicted worker drains (the
    example's `command`: cancel_consumer, wait until nothing is reserved, then SIGTERM) and
    exits 0 inside its grace; the StatefulSet re-creates the same identity on the other node.
    Every job runs, none twice."""
    sc, p = scenario, scenario.progress
    with p.phase("broker + helm install --wait"):
        cy.start_broker(sc)
        cy.install(sc).check("helm install")
        sc.wait_handlers_ready(300)
    grace = sc.grace("job")
    pods = sorted(sc.handler_pods("job"), key=lambda pod: pod["metadata"]["name"])
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 2, "the default spread should put the 2 workers on 2 nodes"
    gone = pods[1]
    uid, name, node = gone["metadata"]["uid"], gone["metadata"]["name"], gone["spec"]["nodeName"]
    rng = random.Random(184)
    with p.phase(f"submit {2 * HELD + 4} tasks of 5-8 s; both windows full"):
        cy.fill_windows(sc, pods[0]["metadata"]["name"], [round(rng.uniform(5, 8), 1) for _ in range(2 * HELD + 4)],
                        unacked=2 * HELD)
    selector = f"app.kubernetes.io/instance={sc.release},app.kubernetes.io/component=job"
    try:
        with p.phase(f"kubectl drain {node} --pod-selector {selector} ({name}, grace {grace} s)"):
            res = nodes.drain(sc.kube, node, selector, grace + 120)
        p.fact("drain_seconds", round(res.seconds, 1))
        assert res.rc == 0, res.output[-2000:]
        with p.phase(f"{name} re-created on the other node, Ready"):
            def replaced() -> bool:
                pod = sc.kube.pod(sc.namespace, name) or {}
                return pod.get("metadata", {}).get("uid") not in (None, uid) and pod_ready(pod)
            wait_until(replaced, 180, f"{name} back and Ready")
            new_node = sc.kube.pod(sc.namespace, name)["spec"]["nodeName"]
            p.fact("replacement_node", new_node)
            assert new_node != node, f"{name} came back on the cordoned {node}"
    finally:
        nodes.uncordon(sc.kube, node)
    started, ended, code = old_pod_exit(sc.timeline, uid, name, "job")
    with p.phase("queue drained, every run ended"):
        rep = cy.wait_settled(sc, 300, {name: ended})
    rep.update(grace=grace, exit=(code, round(ended - started, 1)))
    p.fact("report", rep)
    assert rep["lost"] == 0 and rep["finished"] == 2 * HELD + 4, rep
    assert rep["run_twice"] == 0 and rep["interrupted_runs"] == 0, rep
    assert rep["exit"][0] == 0 and rep["exit"][1] < grace, f"{name} exit code and seconds after deletion: {rep['exit']}"
    assert sum(sc.handler_restarts().values()) == 0, sc.restart_report(sc.handler_restarts())
