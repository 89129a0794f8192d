"""`make bench`: check vs helm lint, render vs serial helm template, and the workload
lifecycle benchmark (bench/workload_bench.py, owned by the workload engineer).
Prints tables; writes bench-results/*.json. Exit 1 when a benchmark is missing or fails."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = REPO / "bench-results"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import check_bench  # noqa: E402
import render_bench  # noqa: E402


def _write(name: str, data: dict[str, object]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def main() -> int:
    """Run every benchmark; return the exit code."""
    meta = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.machine(),
            "cpus": __import__("os").cpu_count()}
    failed: list[str] = []
    for name, mod in (("check", check_bench), ("render", render_bench)):
        print(f"=== bench: {name}", flush=True)
        try:
            result = mod.run()
        except (SystemExit, Exception) as exc:  # noqa: BLE001 - report and continue with the others
            print(f"bench {name} FAILED: {exc}")
            failed.append(name)
            continue
        print(mod.table(result))
        print(f"-> {_write(f'{name}', {**meta, **result})}\n", flush=True)
    workload = BENCH / "workload_bench.py"
    print("=== bench: workload", flush=True)
    if workload.is_file():
        proc = subprocess.run([sys.executable, str(workload)], cwd=REPO, check=False)
        if proc.returncode != 0:
            print(f"bench workload FAILED (exit {proc.returncode})")
            failed.append("workload")
    else:
        print(f"bench workload MISSING: {workload.relative_to(REPO)} does not exist")
        failed.append("workload (missing)")
    if failed:
        print(f"benchmarks failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
