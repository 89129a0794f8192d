"""Helpers for the unit tests: the real console script and fixture paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JH = REPO / ".venv" / "bin" / "jobhandlers"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RULE_FIXTURES = FIXTURES / "rules"


def run_jh(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the installed console script; assert it never prints a traceback."""
    assert JH.is_file(), f"{JH} missing: run `make venv`"
    proc = subprocess.run([str(JH), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc
