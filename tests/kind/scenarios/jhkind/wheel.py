"""The tool as a user installs it: the wheel built from this checkout, installed with its `live`
extra into a fresh venv outside the repository (scenario 24 runs the generated suites from it).
The packaging tests' own build and install (tests/packaging/packaging_support.py)."""

from __future__ import annotations

from pathlib import Path

from . import support


def user_venv(tmp: Path) -> Path:
    """bin/ of a fresh venv under `tmp` with `jobhandlers[live]` from a wheel of this checkout,
    installed by uv (seconds)."""
    packaging = support.load("tests/packaging/packaging_support.py")
    wheel = packaging.build_dist(tmp / "src", tmp / "dist", "--wheel")["wheel"]
    venv = tmp / "venv"
    venv.mkdir()
    return packaging.install("wheel", Path(f"{wheel}[live]"), venv, installer="uv")
