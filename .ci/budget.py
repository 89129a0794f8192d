#!/usr/bin/env python3
"""The time budget of .ci/run's stages, in one place, and the table printed at the end of a run.

    .ci/budget.py STAGES_FILE [SCENARIOS_JSON] [--markdown FILE] [--cpu CPU_JSONL]

STAGES_FILE has one line per finished stage, "NAME SECONDS EXIT" (.ci/run's stage() appends
them); SCENARIOS_JSON is bench-results/kind-scenarios.json (per-scenario seconds), optional.
Prints budget, actual and ratio for each stage, the ones over budget first. Stages whose time
does not depend on caches ("check": the test and scenario passes, the cluster's start and end)
fail the run (exit 1) when they take more than FAIL_RATIO × their budget; the builds and
downloads ("report") are only reported, since a cold machine takes many times its warm time.
Scenarios have budgets of their own (SCENARIO_BUDGETS, from measured runs): one that passed and took
more than FAIL_RATIO x its budget fails the run too; the ones over it are listed.
--markdown FILE also writes every stage and every scenario (its time and its two longest
phases: what it waits on) as Markdown tables, the generated part of docs/ci-times.md; with
--cpu (.ci/cpu.py's samples of the scenario phase), also where the CPU went and each
scenario's pods' CPU-s.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FAIL_RATIO = 1.5
# Warm budgets (s): stop 30's warm clean-clone run (docs/testing.md) with margin, 2 cores.
# name: (budget, kind)
BUDGETS: dict[str, tuple[int, str]] = {
    "system": (60, "report"),            # apt; stop 30 cold: 20 s
    "venv": (90, "report"),              # 39 s warm, 65 s cold (downloads)
    "kind": (30, "report"),              # 2 s warm (Go build cached), 134-260 s cold
    "tools": (60, "report"),             # 23 s warm, ~20 min cold
    "kind-node-image": (60, "report"),   # 30 s warm, ~17 min cold
    "images": (60, "report"),            # 8 s warm, ~14 min cold
    "kind-up": (150, "check"),           # 27 s on stop 36's machine; 53-91 s on stop 43's (ci20-ci22: 91 s failed ci22's run at the old 60); 5 nodes (the pool, stop 48): 37 s
    "kind-load": (60, "report"),         # a push to the local registry: 0-5 s warm, more after a rebuild
    "kind-postgres": (60, "check"),      # 4 s
    "test-cpu": (600, "check"),          # alone, first (stop 43): 204-219 s alone on stop 42's machine (warm venv); beside the waiting pass 653 s (ci18), 2518 s beside it and the scenarios (ci21)
    "test-kind-main": (2700, "check"),   # stop 45 (3 lanes, 16b and 22e last in it): ci4 1898 s + 474 s of its heavy pass; stop 44 (2 lanes): 2459 s
    "test-kind-nodes": (1900, "check"),  # on the main cluster's pool since stop 48; stop 45's ci4: 1986 s with 17 (in the main pass since); since stop 37 also the `sequential` scenarios (26: ~11 min alone)
    "test-wait": (700, "check"),         # alone, after the computing pass (stop 43): 543 s alone on stop 43's machine (a clean clone); beside the computing pass 487 s (ci18), 1097-1142 s (ci20, ci21)
    "kind-down": (90, "check"),          # 35 s
    "total": (3300, "report"),           # stop 34 CI 2872 s, stop 35 rehearsal 2966 s; the goal is 30 min (issue 32); CI limit 90 min
}
SCENARIO_BUDGET = 300  # s, a scenario without a budget of its own below (stop 30 cold: the slowest, 16d, 259 s)
# Each scenario's budget (s): 1.5 x its longest time in stop 48's four warm clean-clone runs (ci10-ci13,
# docs/ci-times.md; the comment), at least 120, rounded up to 10 s. Runs of the same work vary by 10 % in
# total and up to 2x per scenario (22c: 147-290 s), so a scenario that passed and took more than
# FAIL_RATIO x its budget (at least 2.25 x its longest, 180 s for the short ones) fails the run: that is
# no noise. A new scenario has SCENARIO_BUDGET, reported only, until it gets a line here.
SCENARIO_BUDGETS: dict[str, int] = {
    "test_22e_galaxy_k8s_upgrade_25_1_to_26_1_with_jobs_in_flight": 920,  # 611
    "test_16b_galaxy_helm_pattern_gating_off": 680,  # 447
    "test_26e_burst_then_quiet_with_metrics_server": 530,  # 351
    "test_18a_celery_rollout_with_prefetch": 500,  # 332
    "test_22a_galaxy_k8s_rollout_with_jobs_in_flight": 500,  # 329
    "test_22b_galaxy_k8s_sigkill_handler": 450,  # 294
    "test_22c_galaxy_k8s_drain_handler_node": 440,  # 290
    "test_16d_galaxy_liveness_sigstop": 420,  # 275
    "test_17c_rollback_between_the_phases": 390,  # 259
    "test_17ab_contract_split_vs_all_in_pre_deploy[a]": 330,  # 215
    "test_24a_generated_live_workload": 320,  # 210
    "test_18c_celery_broker_restart_during_rollout": 320,  # 208
    "test_17ab_contract_split_vs_all_in_pre_deploy[b]": 320,  # 207
    "test_24d_generated_live_celery": 310,  # 203
    "test_25b_kind_switch_in_one_upgrade": 310,  # 202
    "test_24b_generated_live_negative_control": 300,  # 194
    "test_24c_generated_live_procrastinate": 290,  # 190
    "test_8z_node_loss_reschedules_and_reruns_every_job": 280,  # 184
    "test_5e_procrastinate_liveness_busy_and_wedged": 270,  # 178
    "test_4a_rollback_without_downgrade_fails_fast_and_v2_keeps_serving": 260,  # 170
    "test_18b_celery_maintenance_mode": 250,  # 163
    "test_6b_chancy_naive_restarts": 240,  # 158
    "test_5c_procrastinate_rollout_with_jobs_in_flight": 230,  # 153
    "test_16c_galaxy_job_rollout_with_jobs_in_flight": 210,  # 138
    "test_18d_celery_node_drain_with_prefetch": 200,  # 129
    "test_15a_statefulset_rollout_one_process_per_identity": 200,  # 127
    "test_3e_rollout_cost_of_long_drains": 190,  # 122
    "test_10_no_shell_image_installs_serves_and_drains": 180,  # 118
    "test_5d_procrastinate_upgrade_locked_migration": 180,  # 117
    "test_13c_huey_rollout_sigterm_alone_loses_tasks": 180,  # 114
    "test_26d_celery_statefulset_hpa_scale_in_takes_the_top_ordinal": 180,  # 114
    "test_4c_rollback_with_downgrade_hook_brings_the_schema_back": 180,  # 114
    "test_6e_chancy_liveness_busy_and_wedged": 180,  # 114
    "test_5a_procrastinate_fresh_install_locked_migration": 170,  # 113
    "test_26a_prefer_idle_scale_in_takes_the_idle_pods": 170,  # 108
    "test_21_launched_jobs_outlive_their_handlers": 170,  # 107
    "test_5b_procrastinate_naive_restarts": 150,  # 99
    "test_4b_rollback_with_accept_ahead_starts_v1_on_the_v2_schema": 140,  # 93
    "test_26b_control_scale_in_takes_the_busy_pods": 140,  # 92
    "test_22d_galaxy_k8s_job_cost": 140,  # 92
    "test_3c_liveness_vs_blocking_jobs": 130,  # 84
    "test_7a_pgbouncer_native_sidecar_serves_migration_wait_and_drain": 130,  # 84
    "test_26c_hpa_scale_in_keeps_its_count_through_helm_upgrade": 130,  # 83
    "test_8c_scale_down_drains_the_removed_handlers": 130,  # 82
    "test_25c_kind_switch_two_steps": 130,  # 82
    "test_15b_deployment_rollout_overlaps": 120,  # 79
    "test_13a_huey_fresh_install_locked_migration": 120,  # 78
    "test_6c_chancy_rollout_with_jobs_in_flight": 120,  # 74
    "test_19_networkpolicy_enforced_live": 120,  # 73
    "test_8b_node_drain_respects_the_pdb_and_loses_nothing": 120,  # 72
    "test_16f_galaxy_local_job_cost": 120,  # 71
    "test_3a_drain_on_rollout": 120,  # 69
    "test_13b_huey_rollout_signal_int_drains": 120,  # 67
    "test_6a_chancy_fresh_install_locked_migration": 120,  # 67
    "test_11_helm_test_passes_healthy_and_fails_behind": 120,  # 67
    "test_7b_config_file_change_rolls_every_pod": 120,  # 63
    "test_1b_naive_chart_restarts": 120,  # 62
    "test_3d_sigkill_mid_job": 120,  # 58
    "test_13d_huey_rollout_kubelet_stop_signal": 120,  # 57
    "test_8e_drain_hangs_with_if_healthy_budget": 120,  # 53
    "test_2a_upgrade_to_v2": 120,  # 52
    "test_12_install_from_oci_and_upgrade_to_a_newer_pushed_version": 120,  # 52
    "test_6d_chancy_upgrade_locked_migration": 120,  # 52
    "test_25d_upgrade_a_real_app_from_release_with_jobs_in_flight": 120,  # 52
    "test_3b_drain_mode": 120,  # 50
    "test_16a_galaxy_fresh_install": 120,  # 47
    "test_1a_fresh_install_slow_migration": 120,  # 47
    "test_2b_failed_migration_on_upgrade": 120,  # 42
    "test_20a_version_gates_live": 120,  # 34
    "test_23_launcher_rbac_token_and_admission_policy": 120,  # 33
    "test_1c_gitops_mode_pods_wait_in_init": 120,  # 32
    "test_8d_drain_of_drained_but_alive_handlers_completes": 120,  # 28
    "test_8a_default_spread_puts_a_role_on_both_workers": 120,  # 23
    "test_14b_kubectl_drain_of_their_node": 120,  # 13
    "test_14a_kubectl_delete_pod": 120,  # 13
    "test_14c_helm_uninstall": 120,  # 11
}


def scenario_budget(name: str) -> tuple[int, bool]:
    """A scenario's budget (s) and whether it is its own (a failed attempt's is its scenario's,
    reported only: the rerun decides)."""
    base, _, attempt = name.partition(" (failed attempt")
    if base in SCENARIO_BUDGETS:
        return SCENARIO_BUDGETS[base], not attempt
    return SCENARIO_BUDGET, False


def read_stages(text: str) -> dict[str, tuple[float, int]]:
    """NAME SECONDS EXIT lines -> {name: (seconds, exit)}; a stage run twice keeps its last line."""
    stages: dict[str, tuple[float, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            stages[parts[0]] = (float(parts[1]), int(parts[2]))
    return stages


def rows(stages: dict[str, tuple[float, int]], scenarios: dict | None = None) -> list[dict]:
    """One row per budgeted stage (actual None when it did not run), then the stages without a
    budget, then the scenarios over theirs; sorted over-budget first, by ratio."""
    out = []
    for name, (budget, kind) in BUDGETS.items():
        actual, rc = stages.get(name, (None, 0))
        out.append({"name": name, "kind": kind, "budget": budget, "actual": actual, "exit": rc})
    for name, (actual, rc) in stages.items():
        if name not in BUDGETS:  # a stage added without a budget: shown, so it gets one
            out.append({"name": name, "kind": "report", "budget": None, "actual": actual, "exit": rc})
    for name, entry in (scenarios or {}).items():
        seconds = entry.get("seconds") if isinstance(entry, dict) else None
        limit, own = scenario_budget(name)
        if isinstance(seconds, (int, float)) and seconds > limit:
            passed = entry.get("passed", True)
            out.append({"name": f"scenario {name}", "kind": "check" if own and passed else "report", "budget": limit,
                        "actual": seconds, "exit": 0 if passed else 1})
    for r in out:
        r["ratio"] = r["actual"] / r["budget"] if r["actual"] is not None and r["budget"] else None
        r["fail"] = r["kind"] == "check" and r["ratio"] is not None and r["ratio"] > FAIL_RATIO
    return sorted(out, key=lambda r: -(r["ratio"] if r["ratio"] is not None else -1))


def table(rs: list[dict]) -> str:
    width = min(90, max([40] + [len(r["name"]) for r in rs]))
    lines = [f"{'stage':<{width}} {'kind':<6} {'budget':>7} {'actual':>7} {'ratio':>6}  verdict"]
    for r in rs:
        budget = f"{r['budget']}" if r["budget"] is not None else "-"
        actual = f"{r['actual']:.0f}" if r["actual"] is not None else "-"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        if r["actual"] is None:
            verdict = "did not run"
        elif r["ratio"] is None:
            verdict = "no budget: add one to .ci/budget.py"
        elif r["fail"]:
            verdict = f"OVER by {r['actual'] - r['budget']:.0f} s (> {FAIL_RATIO}x): FAILS the run"
        elif r["ratio"] > 1:
            verdict = f"over by {r['actual'] - r['budget']:.0f} s"
        else:
            verdict = f"under by {r['budget'] - r['actual']:.0f} s"
        if r["exit"]:
            verdict += f" (the stage failed, exit {r['exit']})"
        lines.append(f"{r['name'][:width]:<{width}} {r['kind']:<6} {budget:>7} {actual:>7} {ratio:>6}  {verdict}")
    return "\n".join(lines)


def markdown(rs: list[dict], scenarios: dict | None, cpu_summary: dict | None = None) -> str:
    """Every stage (budget, actual) and every scenario, slowest first, with its longest phases
    (and its pods' CPU-s, with cpu_summary)."""
    out = ["| stage | kind | budget (s) | actual (s) |", "| --- | --- | ---: | ---: |"]
    for r in sorted(rs, key=lambda r: r["name"] == "total"):
        if r["name"].startswith("scenario ") or r["actual"] is None:
            continue
        out.append(f"| {r['name']} | {r['kind']} | {r['budget'] if r['budget'] is not None else '-'} "
                   f"| {r['actual']:.0f}{' (failed)' if r['exit'] else ''} |")
    entries = [(name, e) for name, e in (scenarios or {}).items() if isinstance(e, dict)]
    by_scenario: dict[str, float] = {}
    if cpu_summary:
        import cpu  # .ci/cpu.py
        out += ["", cpu.markdown(cpu_summary).rstrip("\n")]
        by_scenario = cpu.scenario_cpu(cpu_summary, [name for name, _ in entries])
    if entries:
        col = " pods' CPU-s |" if by_scenario else ""
        out += ["", f"| scenario | seconds | budget |{col} longest phases (s) |",
                f"| --- | ---: | ---: |{' ---: |' if by_scenario else ''} --- |"]
        for name, e in sorted(entries, key=lambda kv: -float(kv[1].get("seconds") or 0)):
            phases = sorted((e.get("phases") or {}).items(), key=lambda kv: -float(kv[1] or 0))[:2]
            what = "; ".join(f"{k} {float(v):.0f}" for k, v in phases)
            mark = "" if e.get("passed", True) else " (failed)"
            used = f" {by_scenario[name]:.0f} |" if name in by_scenario else (" - |" if by_scenario else "")
            out.append(f"| {name} | {float(e.get('seconds') or 0):.0f}{mark} | {scenario_budget(name)[0]} |{used} {what} |")
        out += lanes(entries, (cpu_summary or {}).get("t0"))
        shared = {k: v for k, v in by_scenario.items() if k.startswith("(namespace") and v >= 1}
        if shared:
            out += ["", "Pods of no one scenario (a module's shared install, e.g. `jh-galaxy`, `jh-gxk8s`): "
                    + ", ".join(f"{k.removeprefix('(namespace ').rstrip(')')} {v:.0f} CPU-s"
                                for k, v in sorted(shared.items(), key=lambda kv: -kv[1])) + "."]
    return "\n".join(out) + "\n"


def lanes(entries: list[tuple[str, dict]], t0: float | None = None) -> list[str]:
    """Per lane (a pytest worker of one cluster): its scenarios, from its first start to its last
    end (s from t0, else from the first start), and how much of that they ran (busy). A lane
    that ends long after the others is the run's critical path."""
    by: dict[str, list[tuple[float, float]]] = {}
    for _, e in entries:
        if isinstance(e.get("started"), (int, float)) and e.get("lane"):
            by.setdefault(e["lane"], []).append((float(e["started"]), float(e.get("seconds") or 0)))
    if not by:
        return []
    base = t0 if t0 is not None else min(s for runs in by.values() for s, _ in runs)
    out = ["", "| lane (cluster/worker) | scenarios | first start (s) | last end (s) | busy (s) |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for lane, runs in sorted(by.items(), key=lambda kv: -max(s + d for s, d in kv[1])):
        out.append(f"| {lane} | {len(runs)} | {min(s for s, _ in runs) - base:.0f} "
                   f"| {max(s + d for s, d in runs) - base:.0f} | {sum(d for _, d in runs):.0f} |")
    return out


def _take(argv: list[str], flag: str) -> tuple[Path | None, list[str]] | None:
    """`flag VALUE` out of argv: (the value or None, the rest); None when the value is missing."""
    if flag not in argv:
        return None, argv
    i = argv.index(flag)
    if i + 1 >= len(argv):
        return None
    return Path(argv[i + 1]), argv[:i] + argv[i + 2:]


def main(argv: list[str]) -> int:
    md = _take(argv, "--markdown")
    cpu_arg = _take(md[1], "--cpu") if md else None
    if md is None or cpu_arg is None or len(cpu_arg[1]) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    md_out, (cpu_path, argv) = md[0], cpu_arg
    cpu_summary = None
    if cpu_path is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import cpu  # .ci/cpu.py
        cpu_summary = cpu.summarize(cpu_path)
    stages = read_stages(Path(argv[1]).read_text())
    scenarios = None
    if len(argv) == 3 and Path(argv[2]).is_file():
        try:
            scenarios = json.loads(Path(argv[2]).read_text())
        except ValueError:
            print(f"{argv[2]}: not JSON, scenarios left out")
    rs = rows(stages, scenarios)
    print(table(rs))
    if md_out is not None:
        tmp = md_out.with_name(md_out.name + ".tmp")
        tmp.write_text(markdown(rs, scenarios, cpu_summary))
        tmp.replace(md_out)
    failed = [r["name"] for r in rs if r["fail"]]
    if failed:
        print(f"over budget by more than {FAIL_RATIO}x: {', '.join(failed)} (budgets: .ci/budget.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
