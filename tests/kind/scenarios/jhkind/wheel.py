"""The tool as a user installs it: the wheel built from this checkout, installed with its `live`
extra into a fresh venv outside the repository (scenario 24 runs the generated suites from it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .helm import ROOT

# uv, pinned by the Makefile (make venv): it links the cached wheels in seconds
UV = ROOT / ".venv-uv" / "bin" / "uv"


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, f"{' '.join(str(c) for c in cmd)}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def user_venv(tmp: Path) -> Path:
    """bin/ of a fresh venv under `tmp` with `jobhandlers[live]` from a wheel of this checkout.

    Built from a copy of the sources (setuptools writes egg-info and build/ beside them, and
    other scenarios read the checkout at the same time)."""
    src, out, venv = tmp / "src", tmp / "dist", tmp / "venv"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("generator", "chart"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, src], cwd=tmp)
    [wheel] = sorted(out.glob("jobhandlers-*.whl"))
    assert UV.is_file(), f"{UV} is missing: make venv installs it"
    _run([UV, "venv", "-q", "--python", "python3", venv], cwd=tmp)
    # no byte-compiling (the Makefile's UV_COMPILE_BYTECODE=1 is for the test venv)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_COMPILE_BYTECODE"] = "0"
    _run([UV, "pip", "install", "-q", "--python", venv / "bin" / "python", f"{wheel}[live]"], cwd=tmp, env=env)
    return venv / "bin"
