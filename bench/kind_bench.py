#!/usr/bin/env python3
"""`make bench-kind`: the gated chart against the naive one on the same kind cluster, in one run.

Per variant (fresh namespace, database and release each):
  * helm install with a 20 s migration -> seconds until every handler is Ready, restarts;
  * a rolling restart of the job role while 30 jobs of 10-60 s run -> jobs lost, reruns,
    forced exits;
  * SIGTERM -> exit of an idle and of a busy job handler (from the workload's own log lines);
  * `kubectl drain` of a worker while its job handler runs jobs of 10-60 s (multi-node
    clusters): drain duration, jobs lost, reruns, SIGKILLed handlers.
The naive variant is the chart with the startup gating off (no hook, no init container, no
startupProbe) and the Kubernetes-default shutdown (grace 30 s, no preStop, no buffer, no PDB).
The gated variants run the chart's own probe and wait-for-migrations defaults (the scenarios'
faster test settings are put back to chart/values.yaml for them).
Start-up latency (bench/kind_startup.py): migrate_done -> every handler Ready, cut into its
segments, for the gated chart in hook mode, in GitOps mode (useHelmHooks=false: the pods already
wait in wait-for-migrations) and the naive chart, over --repeats installs each (the gated and
naive installs of the full run count as one). --startup-only measures just that.
Prints a table, writes bench-results/kind-bench.json, kind-readiness.png and kind-drain.png,
and copies the two plots to docs/ (committed, shown in the README).
Exit 0 when measured (goals are reported, not enforced); 2 when the cluster is unusable.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kind" / "scenarios"))

from jhkind import nodes  # noqa: E402
from jhkind import postgres as pg_mod  # noqa: E402
from jhkind import setup  # noqa: E402
from jhkind.cluster import RESTRICTED_LABELS, Kube, parse_time  # noqa: E402
from jhkind.helm import ROOT, Helm  # noqa: E402
from jhkind.observe import LogFollower, ready_series, restart_series  # noqa: E402
from jhkind.progress import Progress  # noqa: E402
from jhkind.scenario import Scenario  # noqa: E402
from jhkind.waits import WaitTimeout, wait_until  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kind_startup  # noqa: E402

MIGRATION_SECONDS = 20
JOBS = 30
JOB_MIN, JOB_MAX = 10, 60
REPLICAS, CONCURRENCY = 2, 8
OUT = ROOT / "bench-results"
COLORS = {"gated": "tab:green", "gitops": "tab:blue", "naive": "tab:red"}
DOCS = ROOT / "docs"


def _env(**kv: str) -> list[dict]:
    return [{"name": k, "value": v} for k, v in kv.items()]


# Start-up settings the gated variants take from chart/values.yaml, not from the scenarios'
# base values (jhkind.scenario.base_values shortens them for the tests).
CHART_DEFAULT_KEYS = {"startupProbe": None, "readiness": None, "waitForMigrations": ["intervalSeconds"]}
# variant -> start-up mode of kind_startup.breakdown
MODES = {"gated": "hook", "gitops": "gitops", "naive": "naive"}


def chart_defaults() -> dict:
    import yaml
    values = yaml.safe_load((ROOT / "chart" / "values.yaml").read_text())
    out: dict = {}
    for key, sub in CHART_DEFAULT_KEYS.items():
        out[key] = dict(values[key]) if sub is None else {k: values[key][k] for k in sub}
    return out


def variant_values(name: str) -> dict:
    job = {"replicas": REPLICAS,
           "env": _env(WORKLOAD_POLL_SECONDS="0.5", WORKLOAD_LEASE_SECONDS="10", WORKLOAD_CONCURRENCY=str(CONCURRENCY))}
    common = {"migration": {"extraArgs": ["--slow", str(MIGRATION_SECONDS)]}}
    if name in ("gated", "gitops"):
        job["maxJobRuntimeSeconds"] = JOB_MAX  # grace = 60 + 10 + 3
        if name == "gitops":
            common["migration"]["useHelmHooks"] = False
        return {**chart_defaults(), **common, "handlers": {"job": job}}
    job["maxJobRuntimeSeconds"] = 30  # grace = 30 s, the Kubernetes default
    return {"waitForMigrations": {"enabled": False}, "startupProbe": {"enabled": False},
            "migration": {"useHelmHooks": False, "extraArgs": ["--slow", str(MIGRATION_SECONDS)]},
            "drain": {"bufferSeconds": 0, "preStopSeconds": 0},
            "handlers": {"job": {**job, "pdb": {"enabled": False}}, "web": {"pdb": {"enabled": False}}}}


def _sigterm_to_exit(sc: Scenario, pod: str) -> dict:
    """Delete one job pod and time its shutdown from its own log (follows until it exits)."""
    follower = LogFollower(sc.kube, sc.namespace, pod, "job").start()
    wait_until(lambda: follower.lines, 15, f"the log of {pod} to be followed")
    t_delete = time.time()
    sc.kube.core.delete_namespaced_pod(pod, sc.namespace)
    follower.join(timeout=sc.grace("job") + 30)
    draining, exit_ev = follower.first("draining"), follower.first("exit")
    finished = [e["ts"] for e in follower.events() if e.get("event") == "finished"
                and draining and e["ts"] >= draining["ts"]]
    out = {"pod": pod, "in_flight": draining and draining.get("in_flight"),
           "exit_code": exit_ev and exit_ev.get("exit_code")}
    if draining and exit_ev:
        out["sigterm_to_exit_s"] = round(exit_ev["ts"] - draining["ts"], 3)
        out["delete_to_exit_s"] = round(exit_ev["ts"] - t_delete, 3)
        if finished:
            out["last_job_to_exit_s"] = round(exit_ev["ts"] - max(finished), 3)
    return out


class _Sampler:
    """Jobs running and jobs done, once a second, from t0 on (the drain timeline)."""

    def __init__(self, sc: Scenario, t0: float):
        import threading

        from jhkind.jobs import JobsDb
        # its own API client: the kubernetes client's exec stream is not thread-safe
        self.db = JobsDb(pg_mod.Postgres(Kube(sc.kube.kubeconfig)), sc.database)
        self.sc, self.t0, self.points = sc, t0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "_Sampler":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                states = self.db.states()
                self.points.append((round(time.time() - self.t0, 1), states.get("running", 0), states.get("done", 0)))
            except Exception:  # noqa: BLE001 - a missed sample is no result
                pass
            self._stop.wait(1.0)

    def stop(self) -> list[tuple[float, int, int]]:
        self._stop.set()
        self._thread.join(5)
        return self.points


def plot_drain(results: list[dict], path: Path) -> None:
    """Jobs in flight and jobs done over time during the rolling restart, per variant."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for r in results:
        color = COLORS.get(r["variant"], "tab:gray")
        pts = r.get("drain_series") or []
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, linewidth=2,
                label=f"{r['variant']}: jobs running (grace {r['job_grace_s']} s)")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], color=color, linestyle="--", linewidth=1,
                label=f"{r['variant']}: jobs done (lost {r['jobs_lost']}, rerun {r['jobs_rerun']})")
    ax.set_xlabel("seconds since kubectl rollout restart of the job role")
    ax.set_ylabel("jobs")
    ax.set_title(f"Drain timeline: rolling restart with {JOBS} jobs of {JOB_MIN}-{JOB_MAX} s in flight")
    ax.legend(loc="center right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    tmp.replace(path)


def _node_drain(sc: Scenario, client, p: Progress) -> dict:  # noqa: ANN001 - jhkind Client
    """Drain the worker of one job handler while it runs jobs; the node is uncordoned after."""
    wait_until(lambda: sc.db.states()["running"] == 0, 180, "no job running")
    sc.wait_handlers_ready(60)
    rng = random.Random(11)
    durations = [round(rng.uniform(JOB_MIN, JOB_MAX), 1) for _ in range(REPLICAS * CONCURRENCY)]
    ids = client.submit([{"kind": "sleep", "duration": d} for d in durations])
    wait_until(lambda: sc.db.states()["running"] >= len(durations) // 2, 60, "jobs to run")
    pods = sc.handler_pods("job")
    node = nodes.placement(pods).most_common(1)[0][0]
    evicted = {pod["metadata"]["uid"] for pod in pods if pod["spec"].get("nodeName") == node}
    try:
        res = nodes.drain(sc.kube, node, f"app.kubernetes.io/instance={sc.release}", sc.grace("job") * 3 + 120)
    finally:
        nodes.uncordon(sc.kube, node)
    try:
        wait_until(lambda: sc.db.report(ids)["done"] == len(ids), 300, "all jobs done", interval=2)
    except WaitTimeout:
        pass  # counted as lost below
    report = sc.db.report(ids)
    last = sc.timeline.last_pods()
    exits = [st["state"]["terminated"]["exitCode"] for uid in evicted for st in
             (last[uid].get("status") or {}).get("containerStatuses") or [] if (st.get("state") or {}).get("terminated")]
    out = {"node": node, "drain_rc": res.rc, "drain_s": round(res.seconds, 1), "pdb_refusals": res.pdb_refusals,
           "longest_job_s": max(durations), "jobs_lost": report["lost"], "jobs_rerun": report["reruns"],
           "evicted_exit_codes": exits, "sigkills": sum(1 for c in exits if c == 137)}
    p.note(f"node drain: {out}")
    return out


def open_variant(name: str, kube: Kube, helm: Helm, pg: pg_mod.Postgres, workdir: Path) -> tuple[Scenario, Progress]:
    p = Progress(f"bench-{name}")
    ns = f"jh-bench-{name}-{secrets.token_hex(2)}"
    kube.create_namespace(ns, dict(RESTRICTED_LABELS))
    sc = Scenario(kube, helm, pg, ns, workdir, p)
    sc.timeline = kind_startup.StartupTimeline(kube, ns)  # + Deployments, ReplicaSets, Secrets, SAs
    return sc.open(), p


def measure_install(name: str, sc: Scenario, p: Progress) -> dict:
    """helm install --wait of a variant; readiness series and the start-up breakdown."""
    result: dict = {"variant": name, "namespace": sc.namespace}
    with p.phase("helm install --wait"):
        res = sc.install(variant_values(name), timeout_s=420).check("helm install")
    want = sum(int(d["spec"]["replicas"]) for d in sc.deployments().values())
    sc.wait_handlers_ready(120)
    series = ready_series(sc.timeline, res.started)
    restarts = restart_series(sc.timeline, res.started)
    job = sc.migration_jobs()[0]
    startup = kind_startup.breakdown(sc.kube, sc.namespace, sc.timeline, MODES[name])
    mig = startup["migration"]
    done = mig.get("job_complete") or parse_time(job["status"]["completionTime"])
    result.update({
        "install_to_ready_s": next((round(t, 1) for t, n in series if n >= want), None),
        "helm_install_s": round(res.seconds, 1),
        "migration_s": round(parse_time(job["status"]["completionTime"]) - parse_time(job["status"]["startTime"]), 1),
        # the Job's Complete condition as the watch saw it (completionTime has second resolution)
        "migration_done_s": round(done - res.started, 1),
        "restarts": sum(sc.handler_restarts().values()),
        "migration_to_ready_s": startup.get("job_complete_to_ready_s"),
        "migrate_done_to_ready_s": startup.get("migrate_done_to_ready_s"),
        "ready_series": series, "restart_series": restarts, "handlers": want, "job_grace_s": sc.grace("job"),
        "startup": startup,
    })
    if result["migration_to_ready_s"] is not None:
        result["migration_to_ready_s"] = round(result["migration_to_ready_s"], 1)
    p.note(f"Ready after {result['install_to_ready_s']}s (Job Complete -> Ready {result['migration_to_ready_s']}s,"
           f" migrate_done -> Ready {result['migrate_done_to_ready_s']}s), restarts {result['restarts']};"
           f" segments {startup.get('segments')}")
    return result


def startup_only(name: str, kube: Kube, helm: Helm, pg: pg_mod.Postgres, workdir: Path) -> dict:
    sc, p = open_variant(name, kube, helm, pg, workdir)
    failed = True
    try:
        result = measure_install(name, sc, p)
        failed = False
        return result
    finally:
        sc.close(failed)


def run_variant(name: str, kube: Kube, helm: Helm, pg: pg_mod.Postgres, workdir: Path) -> dict:
    sc, p = open_variant(name, kube, helm, pg, workdir)
    failed = True
    try:
        result = measure_install(name, sc, p)

        client = sc.client()
        rng = random.Random(42)
        durations = [round(rng.uniform(JOB_MIN, JOB_MAX), 1) for _ in range(JOBS)]
        with p.phase(f"rolling restart of the job role with {JOBS} jobs of {JOB_MIN}-{JOB_MAX} s"):
            ids = client.submit([{"kind": "sleep", "duration": d} for d in durations])
            wait_until(lambda: sc.db.states()["running"] >= min(JOBS, REPLICAS * CONCURRENCY) // 2, 60, "jobs to run")
            old = {pod["metadata"]["uid"]: pod["metadata"]["name"] for pod in sc.handler_pods("job")}
            t_restart = time.time()
            sampler = _Sampler(sc, t_restart).start()
            sc.restart_role("job")
            sc.wait_rollout("job", set(old), timeout=sc.grace("job") + 120)
            rollout_s = time.time() - t_restart
            try:
                wait_until(lambda: sc.db.report(ids)["done"] == JOBS, 240, "all jobs done", interval=2)
            except WaitTimeout:
                pass  # counted as lost below
            report = sc.db.report(ids)
            result["drain_series"] = sampler.stop()
            last = sc.timeline.last_pods()
            exits = [st["state"]["terminated"]["exitCode"] for uid in old for st in
                     (last[uid].get("status") or {}).get("containerStatuses") or [] if (st.get("state") or {}).get("terminated")]
        result.update({"rollout_s": round(rollout_s, 1), "jobs_lost": report["lost"], "jobs_rerun": report["reruns"],
                       "attempt_outcomes": report["attempt_outcomes"], "old_pod_exit_codes": exits,
                       "forced_exits": sum(1 for c in exits if c != 0)})
        p.note(f"rolling restart: lost {report['lost']}, rerun {report['reruns']}, exit codes {exits}")

        with p.phase("SIGTERM -> exit, idle handler"):
            wait_until(lambda: sc.db.states()["running"] == 0, 120, "no job running")
            sc.wait_handlers_ready(60)
            result["idle"] = _sigterm_to_exit(sc, sc.handler_pods("job")[0]["metadata"]["name"])
        with p.phase("SIGTERM -> exit, busy handler"):
            sc.wait_handlers_ready(60)
            busy_ids = client.submit([{"kind": "sleep", "duration": 8} for _ in range(REPLICAS * CONCURRENCY)])
            victim = sc.handler_pods("job")[0]["metadata"]["name"]
            wait_until(lambda: any(a.pod == victim and a.outcome is None for a in sc.db.attempts(busy_ids)), 30,
                       f"{victim} to run a job")
            result["busy"] = _sigterm_to_exit(sc, victim)
        if len(nodes.workers(kube)) >= 2:
            with p.phase("kubectl drain of a worker with jobs in flight"):
                result["node_drain"] = _node_drain(sc, client, p)
        failed = False
        return result
    finally:
        sc.close(failed)


def table(results: list[dict]) -> str:
    for r in results:  # flatten the node-drain numbers into the table's keys
        for key, value in (r.get("node_drain") or {}).items():
            r[f"drain_{key}"] = value
    rows = [
        ("install -> all handlers Ready (s)", "install_to_ready_s", "<= migration + 10"),
        ("migration Job (s)", "migration_s", ""),
        ("migration Job done -> all handlers Ready (s)", "migration_to_ready_s", "<= 3"),
        ("migrate_done (schema at head) -> all handlers Ready (s)", "migrate_done_to_ready_s", ""),
        (f"  the same, median of {{runs}} installs (s)", "startup_median_s", "<= 3"),
        ("handler restarts", "restarts", "0"),
        ("job grace (s)", "job_grace_s", ""),
        (f"jobs lost in rolling restart ({JOBS} jobs)", "jobs_lost", "0"),
        ("jobs rerun (work redone)", "jobs_rerun", ""),
        ("forced exits (exit != 0)", "forced_exits", "0"),
        ("rollout duration (s)", "rollout_s", ""),
        ("idle SIGTERM -> exit (s)", ("idle", "sigterm_to_exit_s"), "<= 1"),
        ("idle delete -> exit, incl. preStop (s)", ("idle", "delete_to_exit_s"), ""),
        ("busy SIGTERM -> exit (s)", ("busy", "sigterm_to_exit_s"), ""),
        ("busy: last job end -> exit (s)", ("busy", "last_job_to_exit_s"), "<= 1"),
        ("node drain: kubectl drain duration (s)", "drain_drain_s", "<= longest job + buffer"),
        ("node drain: jobs lost", "drain_jobs_lost", "0"),
        ("node drain: jobs rerun", "drain_jobs_rerun", ""),
        ("node drain: SIGKILLed handlers", "drain_sigkills", "0"),
        ("node drain: longest job in flight (s)", "drain_longest_job_s", ""),
    ]
    names = [r["variant"] for r in results]
    lines = [f"| metric | {' | '.join(names)} | goal |", "|---" * (len(names) + 2) + "|"]
    runs = max((r.get("startup_runs") or 0 for r in results), default=0)
    for label, key, goal in rows:
        label = label.format(runs=runs)
        vals = []
        for r in results:
            v = r.get(key[0], {}).get(key[1]) if isinstance(key, tuple) else r.get(key)
            vals.append("-" if v is None else str(v))
        lines.append(f"| {label} | {' | '.join(vals)} | {goal} |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    fig, ax = plt.subplots(figsize=(9, 4.5))
    end = max(max(t for t, _ in r["ready_series"]) for r in results) + 5
    for r in results:
        color = COLORS.get(r["variant"], "tab:gray")
        xs = [t for t, _ in r["ready_series"]] + [end]
        ys = [n for _, n in r["ready_series"]] + [r["ready_series"][-1][1]]
        ax.step(xs, ys, where="post", color=color, linewidth=2,
                label=f"{r['variant']}: Ready handlers (all after {r['install_to_ready_s']} s)")
        rx = [t for t, _ in r["restart_series"]] + [end]
        ry = [n for _, n in r["restart_series"]] + [r["restart_series"][-1][1]]
        ax.step(rx, ry, where="post", color=color, linestyle="--", linewidth=1,
                label=f"{r['variant']}: container restarts (total {r['restarts']})")
        ax.axvline(r["migration_done_s"], color=color, linestyle=":", linewidth=1)
    ax.set_xlabel("seconds since helm install (dotted: migration Job complete; gitops: no hook, the Job runs beside the pods)")
    ax.set_ylabel("pods / restarts")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, end)
    ax.set_title(f"Gated vs naive chart: install with a {MIGRATION_SECONDS} s migration")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="directory for kind-bench.json and kind-readiness.png")
    ap.add_argument("--repeats", type=int, default=3, help="installs per variant for the start-up breakdown")
    ap.add_argument("--startup-only", action="store_true",
                    help="only the start-up breakdown (installs, no restart/drain); writes kind-startup.json")
    ap.add_argument("--variants", default="gated,gitops,naive", help="with --startup-only: which variants")
    args = ap.parse_args(argv)
    p = Progress("bench")
    workdir = Path(tempfile.mkdtemp(prefix="kind-bench-"))
    try:
        kube = Kube(setup.private_kubeconfig(workdir / "kubeconfig"))
        kube.server_version()
        helm = Helm(kube.kubeconfig)
        setup.load_images(p)
    except (setup.SetupError, FileNotFoundError) as exc:
        print(f"kind_bench: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"kind_bench: error: cannot reach the cluster: {exc}", file=sys.stderr)
        return 2
    with p.phase("external PostgreSQL"):
        pg = pg_mod.install(kube)
    variants = args.variants.split(",") if args.startup_only else list(MODES)
    results: dict[str, dict] = {}
    samples: dict[str, list[dict]] = {name: [] for name in variants}
    try:
        for name in variants:
            try:
                if not args.startup_only and name != "gitops":
                    results[name] = run_variant(name, kube, helm, pg, workdir)
                    samples[name].append(results[name]["startup"])
                while len(samples[name]) < args.repeats:
                    r = startup_only(name, kube, helm, pg, workdir)
                    results.setdefault(name, r)
                    samples[name].append(r["startup"])
            except (AssertionError, RuntimeError, TimeoutError) as exc:  # WaitTimeout is an AssertionError
                print(f"kind_bench: error: variant {name!r} could not be measured (namespace dumped above): {exc}",
                      file=sys.stderr)
                return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summaries = {name: kind_startup.summarize(samples[name]) for name in variants}
    for name, r in results.items():
        med = summaries[name].get("migrate_done_to_ready_s") or {}
        r["startup_median_s"] = med.get("median")
        r["startup_runs"] = summaries[name]["runs"]
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"kubernetes": kube.server_version(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "migration_seconds": MIGRATION_SECONDS, "jobs": JOBS, "job_seconds": [JOB_MIN, JOB_MAX],
           "job_replicas": REPLICAS, "concurrency": CONCURRENCY, "chart_defaults": chart_defaults(),
           "startup": {"segments": {MODES[n]: summaries[n] for n in variants},
                       "samples": {MODES[n]: samples[n] for n in variants}},
           "results": [results[n] for n in variants]}
    name = "kind-startup.json" if args.startup_only else "kind-bench.json"
    tmp_json = args.out / f"{name}.tmp"
    tmp_json.write_text(json.dumps(doc, indent=2))
    tmp_json.replace(args.out / name)
    print()
    print(kind_startup.segment_table([summaries[n] for n in variants]))
    if args.startup_only:
        print(f"\nwritten: {args.out / name}")
        return 0
    ordered = [results[n] for n in variants]
    plot(ordered, args.out / "kind-readiness.png")
    plot_drain(ordered, args.out / "kind-drain.png")
    DOCS.mkdir(exist_ok=True)  # the committed copies the README shows
    for png in ("kind-readiness.png", "kind-drain.png"):
        shutil.copyfile(args.out / png, DOCS / png)
    print()
    print(table(ordered))
    print(f"\nwritten: {args.out / name}, {args.out / 'kind-readiness.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
