"""Helpers of the packaging tests (fixtures are in conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HELM = Path(os.environ.get("JOBHANDLERS_HELM") or REPO / "bin" / "helm")

# A user's values files: clean, a policy error, a schema error, a warning.
USER_FILES = {
    "good.yaml": '# my app\nimage:\n  tag: "2"\nhandlers:\n  job:\n    maxJobRuntimeSeconds: 120\n',
    "policy.yaml": (REPO / "tests/unit/fixtures/rules/JH001-fail.yaml").read_text(),
    "schema.yaml": 'image:\n  tag: "2"\ndrain:\n  bufferSeconds: lots\n  bufferSecs: 3\n',
    "warning.yaml": (REPO / "tests/unit/fixtures/rules/JH010-fail.yaml").read_text(),
}


def run(cmd: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300, traceback_ok: bool = False) -> subprocess.CompletedProcess[str]:
    """Run a command; never a traceback in what it prints (unless traceback_ok)."""
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert traceback_ok or "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing pointing into this repository."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "JOBHANDLERS_HELM", "JOBHANDLERS_HELM3")
           and not k.startswith("PYTEST")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(REPO)))
    env.update(extra)
    return env


def build_dist(src: Path, out: Path, *flags: str) -> dict[str, Path]:
    """`python -m build FLAGS` of a copy of the sources in `src` (setuptools writes
    jobhandlers.egg-info/ and build/ next to them, and other tests read the checkout at the same
    time) into `out`: {"wheel": ..., "sdist": ...}, each present when built."""
    src.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("generator", "chart"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    proc = run([sys.executable, "-m", "build", *flags, "--outdir", out, src], cwd=out)
    assert proc.returncode == 0, f"python -m build failed (pip install -e '.[test]'?):\n{proc.stdout}\n{proc.stderr}"
    found = {"wheel": sorted(out.glob("jobhandlers-*.whl")), "sdist": sorted(out.glob("jobhandlers-*.tar.gz"))}
    assert all(len(v) <= 1 for v in found.values()), sorted(p.name for p in out.iterdir())
    return {k: v[0] for k, v in found.items() if v}


# uv, pinned by the Makefile (make venv): the venvs that only host the generated and live suites
# are filled by it. pip stays for test_packaging's wheel and sdist: what a user runs.
UV = REPO / ".venv-uv" / "bin" / "uv"


def install(kind: str, artifact: Path, venv: Path, *extra: str, installer: str = "pip") -> Path:
    """A fresh venv at `venv` with `artifact` (and the `extra` requirements) installed by
    `installer` (pip or uv); its bin/."""
    base = getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable
    proc = run([base, "-m", "venv", "--without-pip", venv], cwd=venv)
    assert proc.returncode == 0, proc.stderr
    if installer == "uv":
        # uv links the cached wheels (seconds where pip unpacks for minutes beside the kind
        # scenarios); no byte-compiling (the Makefile's UV_COMPILE_BYTECODE=1 is for the test
        # venv): the kubernetes client's thousands of modules, which the tool imports only for
        # check --server.
        assert UV.is_file(), f"{UV} is missing: make venv installs it"
        proc = run([UV, "pip", "install", "-q", "--python", venv / "bin" / "python", artifact, *extra],
                   cwd=venv, env=clean_env(UV_COMPILE_BYTECODE="0"), timeout=540)
        assert proc.returncode == 0, f"uv pip install {artifact.name} ({kind}) failed:\n{proc.stdout}\n{proc.stderr}"
        return venv / "bin"
    # pip from the test venv installs into the fresh one (--python): no ensurepip, same result.
    # --no-compile: the runtime dependencies include the kubernetes client (check --server) since
    # stop 32, thousands of modules to byte-compile; four such installs at once took over 300 s
    # beside the kind scenarios. The tool imports it only for --server.
    proc = run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-compile",
                "--disable-pip-version-check", "--no-input", artifact, *extra], cwd=venv, env=clean_env(),
               timeout=540)
    assert proc.returncode == 0, f"pip install {artifact.name} ({kind}) failed:\n{proc.stdout}\n{proc.stderr}"
    return venv / "bin"
