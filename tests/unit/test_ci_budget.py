"""`.ci/budget.py`: the table .ci/run prints at its end, and which overruns fail the run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ci_budget", ROOT / ".ci" / "budget.py")
budget = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(budget)


def _stages(tmp_path: Path, **seconds: float) -> Path:
    path = tmp_path / "stages"
    path.write_text("".join(f"{name.replace('_', '-')} {s} 0\n" for name, s in seconds.items()))
    return path


def test_under_budget_passes_and_prints_every_stage(tmp_path, capsys):
    assert budget.main(["budget.py", str(_stages(tmp_path, test_kind_main=1500, images=8))]) == 0
    out = capsys.readouterr().out
    for name in budget.BUDGETS:
        assert name in out
    assert f"under by {budget.BUDGETS['test-kind-main'][0] - 1500} s" in out
    assert "did not run" in out


def test_check_stage_over_the_fail_ratio_fails_and_comes_first(tmp_path, capsys):
    over = budget.BUDGETS["test-kind-nodes"][0] * 1.6
    assert budget.main(["budget.py", str(_stages(tmp_path, test_kind_nodes=over, test_cpu=700))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("test-kind-nodes") and "FAILS the run" in out[1]
    assert "test-kind-nodes" in out[-1]


def test_check_stage_over_but_within_the_ratio_is_reported_only(tmp_path, capsys):
    assert budget.main(["budget.py", str(_stages(tmp_path, test_wait=budget.BUDGETS["test-wait"][0] * 1.4))]) == 0
    assert "over by" in capsys.readouterr().out


def test_builds_many_times_over_budget_only_report(tmp_path, capsys):
    """A cold machine: the builds take 10-20x their warm budget; that is not a failure."""
    assert budget.main(["budget.py", str(_stages(tmp_path, kind_node_image=1000, tools=1200))]) == 0
    assert "FAILS" not in capsys.readouterr().out


def test_unbudgeted_stage_and_slow_scenarios_are_shown(tmp_path, capsys):
    stages = _stages(tmp_path, new_stage=5)
    scenarios = tmp_path / "kind-scenarios.json"
    scenarios.write_text(json.dumps({"test_16a": {"passed": True, "seconds": budget.SCENARIO_BUDGET + 100},
                                     "test_1": {"passed": True, "seconds": 10}}))
    assert budget.main(["budget.py", str(stages), str(scenarios)]) == 0
    out = capsys.readouterr().out
    assert "new-stage" in out and "no budget" in out
    assert "scenario test_16a" in out and "test_1 " not in out


def _scenarios(tmp_path: Path, entries: dict) -> Path:
    path = tmp_path / "kind-scenarios.json"
    path.write_text(json.dumps(entries))
    return path


def test_a_scenario_far_over_its_own_budget_fails_the_run(tmp_path, capsys):
    name = "test_22e_galaxy_k8s_upgrade_25_1_to_26_1_with_jobs_in_flight"
    limit = budget.SCENARIO_BUDGETS[name]
    scenarios = _scenarios(tmp_path, {name: {"passed": True, "seconds": limit * 1.6}})
    assert budget.main(["budget.py", str(_stages(tmp_path, venv=20)), str(scenarios)]) == 1
    out = capsys.readouterr().out
    assert f"scenario {name}" in out.splitlines()[1] and "FAILS the run" in out


def test_a_scenario_over_but_within_the_ratio_a_failed_attempt_or_one_without_a_budget_only_report(tmp_path, capsys):
    name = "test_16b_galaxy_helm_pattern_gating_off"
    limit = budget.SCENARIO_BUDGETS[name]
    scenarios = _scenarios(tmp_path, {
        name: {"passed": True, "seconds": limit * 1.4},
        f"{name} (failed attempt 1)": {"passed": False, "seconds": limit * 3},
        "test_99_new_scenario": {"passed": True, "seconds": budget.SCENARIO_BUDGET * 3},
    })
    assert budget.main(["budget.py", str(_stages(tmp_path, venv=20)), str(scenarios)]) == 0
    out = capsys.readouterr().out
    assert "FAILS" not in out and out.count("over by") == 3


def test_every_kind_scenario_has_a_budget_of_its_own():
    """One place: a scenario added to tests/kind gets its line in SCENARIO_BUDGETS."""
    import re
    names = {m for f in (ROOT / "tests" / "kind" / "scenarios").glob("test_*.py")
             for m in re.findall(r"^def (test_\w+)\(", f.read_text(), re.M)}
    assert names and len(names) >= 70
    budgeted = {k.partition("[")[0] for k in budget.SCENARIO_BUDGETS}
    assert names <= budgeted, sorted(names - budgeted)


def test_a_stage_run_twice_keeps_its_last_time():
    assert budget.read_stages("kind-up 30 0\nkind-up 12 0\nbroken line\n") == {"kind-up": (12.0, 0)}


def test_a_failed_stage_says_so(tmp_path, capsys):
    path = tmp_path / "stages"
    path.write_text("kind-up 11 2\n")
    assert budget.main(["budget.py", str(path)]) == 0  # the run fails on the stage itself, not on time
    assert "the stage failed, exit 2" in capsys.readouterr().out


def test_markdown_has_every_stage_and_scenario_slowest_first(tmp_path):
    stages = _stages(tmp_path, test_kind_main=1500, venv=20)
    scenarios = tmp_path / "s.json"
    scenarios.write_text(json.dumps({
        "test_fast": {"passed": True, "seconds": 10, "phases": {"install": 8, "cleanup": 2}},
        "test_slow": {"passed": False, "seconds": 400, "phases": {"a": 1, "rollout": 300, "install": 90}},
    }))
    out = tmp_path / "times.md"
    assert budget.main(["budget.py", str(stages), str(scenarios), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert f"| test-kind-main | check | {budget.BUDGETS['test-kind-main'][0]} | 1500 |" in text and "| venv |" in text
    assert text.index("test_slow") < text.index("test_fast")
    assert f"| test_slow | 400 (failed) | {budget.SCENARIO_BUDGET} | rollout 300; install 90 |" in text
    assert "did not run" not in text


def _cpu_samples(tmp_path: Path) -> Path:
    """Two samples 100 s apart: a node whose pods used 60 CPU-s (a scenario's 40, a shared
    install's 15, the API server's 5) and its own work 20, on a machine that used 150."""
    def rec(t: float, host: float, node: tuple[float, float], pods: dict[str, float]) -> str:
        return json.dumps({"t": t, "host": host * 1e9, "nodes": {"jobhandlers-worker": [node[0] * 1e9, node[1] * 1e9]},
                           "pods": {f"jobhandlers-worker:{k}": v * 1e9 for k, v in pods.items()}})
    path = tmp_path / "cpu.jsonl"
    path.write_text("\n".join([
        rec(0, 1000, (100, 50), {"kube-system/kube-apiserver-x": 45, "jh-gxk8s-ab12/web": 5}),
        rec(100, 1150, (180, 110), {"kube-system/kube-apiserver-x": 50, "jh-gxk8s-ab12/web": 20,
                                    "jh-16b-galaxy-helm-pa-0f3e/job0": 30, "jh-17ab-contract-spli-b-77aa/job": 10}),
    ]) + "\n")
    return path


def test_cpu_report_says_where_the_cpu_went(tmp_path):
    """.ci/cpu.py's summary: pods by namespace (a pod first seen later started at 0), the nodes'
    own work, system pods, the machine outside the nodes; each namespace named by its scenario."""
    import sys
    sys.path.insert(0, str(ROOT / ".ci"))
    import cpu
    s = cpu.summarize(_cpu_samples(tmp_path))
    assert s["window"] == 100 and s["host"] == 150 and s["outside_nodes"] == 70
    assert s["node_own"] == 20 and s["system_pods"] == 5
    assert s["namespaces"] == {"jh-gxk8s": 15, "jh-16b-galaxy-helm-pa": 30, "jh-17ab-contract-spli-b": 10}
    keys = ["test_16b_galaxy_helm_pattern_gating_off", "test_17ab_contract_split_vs_all_in_pre_deploy[a]",
            "test_17ab_contract_split_vs_all_in_pre_deploy[b]"]
    assert cpu.scenario_cpu(s, keys) == {"test_16b_galaxy_helm_pattern_gating_off": 30,
                                         "test_17ab_contract_split_vs_all_in_pre_deploy[b]": 10,
                                         "(namespace jh-gxk8s)": 15}
    assert "| the kind nodes' own work" in cpu.markdown(s) and "| 20 | 13 % |" in cpu.markdown(s)
    assert cpu.summarize(tmp_path / "missing.jsonl") == {} and "No CPU samples" in cpu.markdown({})


def test_cpu_report_counts_a_cluster_deleted_before_the_end(tmp_path):
    """A node first sampled late (the node pass's cluster starts after the phase did) and gone
    before the last sample (its kind-down): counted from 0 to its last sample, not as the machine
    outside the nodes."""
    import sys
    sys.path.insert(0, str(ROOT / ".ci"))
    import cpu
    def rec(t: float, host: float, nodes: dict[str, tuple[float, float]]) -> str:
        return json.dumps({"t": t, "host": host * 1e9, "pods": {},
                           "nodes": {n: [a * 1e9, b * 1e9] for n, (a, b) in nodes.items()}})
    path = tmp_path / "cpu.jsonl"
    path.write_text("\n".join([
        rec(0, 1000, {"jobhandlers-worker": (100, 50)}),
        rec(50, 1080, {"jobhandlers-worker": (120, 60), "jobhandlers-nodes-worker": (30, 10)}),
        rec(100, 1200, {"jobhandlers-worker": (150, 80)}),
    ]) + "\n")
    s = cpu.summarize(path)
    assert s["host"] == 200 and s["outside_nodes"] == 200 - 50 - 30
    assert s["node_own"] == (50 - 30) + (30 - 10)


def test_markdown_with_cpu_has_a_cpu_column(tmp_path):
    scen = tmp_path / "scenarios.json"
    scen.write_text(json.dumps({"test_16b_galaxy_helm_pattern_gating_off": {"passed": True, "seconds": 500,
                                                                            "phases": {"crash loop": 169}}}))
    md = tmp_path / "times.md"
    assert budget.main(["budget.py", str(_stages(tmp_path, test_cpu=100)), str(scen), "--markdown", str(md),
                        "--cpu", str(_cpu_samples(tmp_path))]) == 0
    text = md.read_text()
    assert "| scenario | seconds | budget | pods' CPU-s | longest phases (s) |" in text
    limit = budget.SCENARIO_BUDGETS["test_16b_galaxy_helm_pattern_gating_off"]
    assert f"| test_16b_galaxy_helm_pattern_gating_off | 500 | {limit} | 30 | crash loop 169 |" in text
    assert "jh-gxk8s 15 CPU-s" in text
    assert budget.main(["budget.py", str(_stages(tmp_path, test_cpu=100)), "--cpu"]) == 2


def test_lanes_show_each_workers_span_and_busy_time(tmp_path):
    """A lane is a worker of one cluster: first start and last end from the earliest start (or
    the CPU sampler's first sample), busy seconds; the lane that ends last comes first."""
    entries = [("a", {"started": 1000.0, "seconds": 100, "lane": "jobhandlers/gw0"}),
               ("b", {"started": 1150.0, "seconds": 50, "lane": "jobhandlers/gw0"}),
               ("c", {"started": 1010.0, "seconds": 400, "lane": "jobhandlers-nodes/gw1"}),
               ("d", {"seconds": 5})]  # an entry of an older run: no lane, left out
    lines = budget.lanes(entries)
    assert lines[3] == "| jobhandlers-nodes/gw1 | 1 | 10 | 410 | 400 |"
    assert lines[4] == "| jobhandlers/gw0 | 2 | 0 | 200 | 150 |"
    assert budget.lanes(entries, t0=900.0)[4] == "| jobhandlers/gw0 | 2 | 100 | 300 | 150 |"
    assert budget.lanes([("d", {"seconds": 5})]) == []


def test_cpu_timeline_says_the_cores_in_use(tmp_path):
    import sys
    sys.path.insert(0, str(ROOT / ".ci"))
    import cpu
    recs = [{"t": t, "host": h * 1e9} for t, h in [(0, 0), (150, 300), (300, 600), (450, 750), (600, 900)]]
    assert cpu.timeline(recs) == [[0, 2.0], [300, 1.0]]
    s = cpu.summarize(_cpu_samples(tmp_path))
    assert s["timeline"] == [[0, 1.5]] and "0 min 1.50" in cpu.markdown(s)


def test_acct_tables_by_program_and_concern(tmp_path):
    """.ci/acct.py: dump-acct's lines, kept when the process ended after --since; programs grouped by
    what they are part of (RabbitMQ's scheduler threads by their Erlang names); a line it cannot read
    is skipped; --markdown appends through a temporary file."""
    import sys
    sys.path.insert(0, str(ROOT / ".ci"))
    import acct
    line = "{:<16}|v3|{:>9.2f}|{:>9.2f}|{:>9.2f}|     0|     0|  1000.00|     0.00|   1|   0|     |  0|__      |{}"
    start = "Mon Dec  7 12:00:00 2026"
    text = "\n".join([
        line.format("kube-apiserver", 9000, 1000, 360000, start),  # ends 13:00: 100 CPU-s
        line.format("galaxy-main", 1400, 100, 6000, start),  # ends 12:01: 15 CPU-s
        line.format("runc", 1, 1, 1, start),  # ends at once: before --since
        line.format("1_dirty_io_sche", 300, 0, 60000, start),
        "not a record",
    ])
    records = acct.parse(text)
    assert [r.comm for r in records] == ["kube-apiserver", "galaxy-main", "runc", "1_dirty_io_sche"]
    since = records[0].end - 3600 + 30  # 12:00:30
    out = acct.tables(records, since)
    assert "3 processes" in out and "118 CPU-s" in out
    assert "| control planes (API server, etcd, controllers, scheduler, CoreDNS) | 1 | 100 | 85 % |" in out
    assert "| RabbitMQ (Erlang) | 1 | 3 | 3 % |" in out and "runc" not in out
    assert "| `galaxy-main` | 1 | 15 | 15.00 |" in out
    assert acct.group_of("no-such-program") == "the rest"
    md = tmp_path / "times.md"
    md.write_text("# before\n")
    assert acct.main([str(tmp_path / "missing.log"), "--since", "0", "--markdown", str(md)]) == 2
    assert md.read_text() == "# before\n"


def test_acct_alive_processes_from_proc(tmp_path):
    """.ci/acct.py snapshot / --alive: the processes alive at the phase's start and at the report,
    counted from /proc/PID/stat (utime + stime since the snapshot), by what they are part of; a
    process that started after the snapshot (another pid:start) is not counted."""
    import json
    import os
    import sys
    sys.path.insert(0, str(ROOT / ".ci"))
    import acct
    tick = os.sysconf("SC_CLK_TCK")

    def proc(pid, comm, ppid, ticks, start):
        d = tmp_path / "proc" / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        rest = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 6 + [str(start)] + ["0"] * 20
        (d / "stat").write_text(f"{pid} ({comm}) {' '.join(rest)}\n")

    proc(100, "dockerd", 1, 10 * tick, 5)
    proc(200, "registry", 150, 1 * tick, 6)
    proc(3, "ksoftirqd/0", 2, 0, 1)
    before = acct.read_proc(tmp_path / "proc")
    assert before["100:5"] == (next(iter(acct.ALIVE_GROUPS)), 10.0)
    proc(100, "dockerd", 1, 40 * tick, 5)
    proc(200, "registry", 150, 4 * tick, 999)  # the pid came back as another process: not counted
    proc(3, "ksoftirqd/0", 2, 7 * tick, 1)
    snapshot = {key: cpu for key, (_, cpu) in before.items()}  # what `acct.py snapshot` writes
    out = acct.alive_table(json.loads(json.dumps(snapshot)), acct.read_proc(tmp_path / "proc"))
    assert "| dockerd and the host's containerd (docker exec, docker ps, the nodes' containers) | 1 | 30 |" in out
    assert f"| {acct.KERNEL} | 1 | 7 |" in out and "registry" not in out
