"""Fixtures for the packaging tests: one wheel and one sdist per session, each installed
into a fresh venv outside the repository, and a user's values files in a temp directory.

Nothing here skips: a missing helm or build frontend is a failure that names the fix."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from packaging_support import HELM, USER_FILES, build_dist, install


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    assert HELM.is_file() and os.access(HELM, os.X_OK), f"helm not found at {HELM}: run `make tools`"
    return HELM


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """python -m build: the sdist, then the wheel built from that sdist (once per session).
    Built from a copy of the sources: setuptools writes jobhandlers.egg-info/ and build/ next
    to them, and other tests (renders into rendered/) run in the checkout at the same time."""
    built = build_dist(tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist"))
    assert built.keys() == {"wheel", "sdist"}, built
    return built


@pytest.fixture(scope="session")
def venvs(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two fresh venvs outside the repository, one with the wheel and one with the sdist
    installed (in parallel: most of the time is pip unpacking the dependencies)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(install, k, dist[k], tmp_path_factory.mktemp(f"venv-{k}")) for k in dist}
        return {k: f.result() for k, f in futures.items()}


@pytest.fixture(scope="session", params=["wheel", "sdist"])
def installed(request: pytest.FixtureRequest, venvs: dict[str, Path]) -> Path:
    """bin/ of the fresh venv with the wheel or the sdist installed."""
    return venvs[request.param]


@pytest.fixture(scope="session")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project: their values files, no checkout anywhere near."""
    d = tmp_path_factory.mktemp("user-project")
    for name, text in USER_FILES.items():
        (d / name).write_text(text, encoding="utf-8")
    return d
