#!/usr/bin/env python3
"""The time budget of .ci/run's stages, in one place, and the table printed at the end of a run.

    .ci/budget.py STAGES_FILE [SCENARIOS_JSON] [--markdown FILE] [--cpu CPU_JSONL]

STAGES_FILE has one line per finished stage, "NAME SECONDS EXIT" (.ci/run's stage() appends
them); SCENARIOS_JSON is bench-results/kind-scenarios.json (per-scenario seconds), optional.
Prints budget, actual and ratio for each stage, the ones over budget first. Stages whose time
does not depend on caches ("check": the test and scenario passes, the cluster's start and end)
fail the run (exit 1) when they take more than FAIL_RATIO × their budget; the builds and
downloads ("report") are only reported, since a cold machine takes many times its warm time.
Scenarios are reported only (no per-scenario history yet): the ones over SCENARIO_BUDGET.
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
SCENARIO_BUDGET = 300  # s, one scenario (stop 30 cold: the slowest, 16d, 259 s)


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
        if isinstance(seconds, (int, float)) and seconds > SCENARIO_BUDGET:
            out.append({"name": f"scenario {name}", "kind": "report", "budget": SCENARIO_BUDGET, "actual": seconds,
                        "exit": 0 if entry.get("passed", True) else 1})
    for r in out:
        r["ratio"] = r["actual"] / r["budget"] if r["actual"] is not None and r["budget"] else None
        r["fail"] = r["kind"] == "check" and r["ratio"] is not None and r["ratio"] > FAIL_RATIO
    return sorted(out, key=lambda r: -(r["ratio"] if r["ratio"] is not None else -1))


def table(rs: list[dict]) -> str:
    lines = [f"{'stage':<40} {'kind':<6} {'budget':>7} {'actual':>7} {'ratio':>6}  verdict"]
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
        lines.append(f"{r['name'][:40]:<40} {r['kind']:<6} {budget:>7} {actual:>7} {ratio:>6}  {verdict}")
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
        out += ["", f"| scenario | seconds (budget {SCENARIO_BUDGET}) |{col} longest phases (s) |",
                f"| --- | ---: |{' ---: |' if by_scenario else ''} --- |"]
        for name, e in sorted(entries, key=lambda kv: -float(kv[1].get("seconds") or 0)):
            phases = sorted((e.get("phases") or {}).items(), key=lambda kv: -float(kv[1] or 0))[:2]
            what = "; ".join(f"{k} {float(v):.0f}" for k, v in phases)
            mark = "" if e.get("passed", True) else " (failed)"
            used = f" {by_scenario[name]:.0f} |" if name in by_scenario else (" - |" if by_scenario else "")
            out.append(f"| {name} | {float(e.get('seconds') or 0):.0f}{mark} |{used} {what} |")
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
