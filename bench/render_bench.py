"""Benchmark: `jobhandlers render` (parallel helm) wall time against calling `helm template`
serially for the same values-examples × kube-version matrix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator import model  # noqa: E402
from generator.render import helm  # noqa: E402

JH = REPO / ".venv" / "bin" / "jobhandlers"


ROUNDS = 3


def matrix() -> list[tuple[Path, str]]:
    """(example, kube version) pairs: the render matrix's own versions per example
    (helm.example_versions reads the file's `# kube-versions: >=X.Y`), so the serial baseline
    renders exactly what `jobhandlers render` does."""
    return [(ex, v) for ex in helm.examples() for v in helm.example_versions(ex, model.KUBE_VERSIONS)]


def _serial(pairs: list[tuple[Path, str]]) -> float:
    t0 = time.perf_counter()
    for ex, v in pairs:
        proc = subprocess.run(helm.template_command([ex], v), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"helm template {ex.name} --kube-version {v} failed: {proc.stderr.strip()}")
    return time.perf_counter() - t0


def _tool(tmp: Path) -> tuple[float, int]:
    out = tmp / "rendered"
    t0 = time.perf_counter()
    proc = subprocess.run([str(JH), "render", "--out", str(out)], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"jobhandlers render failed: {proc.stderr}")
    return wall, sum(1 for _ in out.rglob("*.yaml"))


def run() -> dict[str, object]:
    """Measure (ROUNDS interleaved rounds, best of each, to damp a shared machine's load)."""
    examples = helm.examples()
    pairs = matrix()
    serial: list[float] = []
    tool: list[float] = []
    files = 0
    with tempfile.TemporaryDirectory(prefix="jh-bench-render-") as tmp:
        for _ in range(ROUNDS):
            serial.append(_serial(pairs))
            wall, files = _tool(Path(tmp))
            tool.append(wall)
    return {
        "examples": len(examples),
        "kube_versions": len(model.KUBE_VERSIONS),
        "renders": len(pairs),
        "files_written": files,
        "jobs": os.cpu_count(),
        "rounds": ROUNDS,
        "load_average_1m": round(os.getloadavg()[0], 1),
        "serial_helm_template_seconds": round(min(serial), 2),
        "serial_all_rounds": [round(x, 2) for x in serial],
        "jobhandlers_render_seconds": round(min(tool), 2),
        "render_all_rounds": [round(x, 2) for x in tool],
        "speedup": round(min(serial) / min(tool), 2),
    }


def table(r: dict[str, object]) -> str:
    """The result as a table."""
    return "\n".join([
        f"render: {r['examples']} examples x up to {r['kube_versions']} kube versions = {r['renders']} helm renders",
        f"{'method':<48}{'best s':>8}   rounds (load avg {r['load_average_1m']})",
        f"{'helm template, serial (no output written)':<48}{r['serial_helm_template_seconds']:>8}   {r['serial_all_rounds']}",
        f"{'jobhandlers render (--jobs ' + str(r['jobs']) + ', writes ' + str(r['files_written']) + ' files)':<48}"
        f"{r['jobhandlers_render_seconds']:>8}   {r['render_all_rounds']}",
        f"speedup (serial / render): {r['speedup']}x   goal >= 1x",
    ])


if __name__ == "__main__":
    result = run()
    print(table(result))
    print(json.dumps(result))
