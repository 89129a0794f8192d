"""Fixtures of the Galaxy app tests: a real PostgreSQL (the workload harness's), a fresh
database per test, Galaxy 26.1.2 unmodified from its own venv (`make galaxy-venv`).

Gated: the venv is ~0.9 GB and every Galaxy start costs 15-140 s of imports, so `make
test` (which collects tests/apps) does NOT collect test_galaxy_app.py; `make test-galaxy`
does (it sets JH_GALAXY_TESTS=1). Without it the file is ignored, by design."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "workload"))
from gxapp import VENV, Galaxy  # noqa: E402
from wl_harness import PostgresServer  # noqa: E402

collect_ignore = [] if os.environ.get("JH_GALAXY_TESTS") == "1" else ["test_galaxy_app.py"]


@pytest.fixture(scope="session")
def venv() -> Path:
    if not (VENV / "bin" / "galaxy-main").is_file():
        pytest.fail(f"no Galaxy venv at {VENV}: run `make galaxy-venv`", pytrace=False)
    return VENV


@pytest.fixture(scope="session")
def pg() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def dburl(pg: PostgresServer) -> Iterator[str]:
    url = pg.create_database("gx")
    yield url
    pg.drop_database(url)


@pytest.fixture
def galaxy(venv: Path, dburl: str, tmp_path: Path) -> Iterator[Galaxy]:
    """Galaxy on this test's database; its processes are killed at teardown."""
    g = Galaxy(dburl, tmp_path)
    yield g
    g.kill_all()


@pytest.fixture(scope="session")
def facts() -> Iterator[dict[str, Any]]:
    """Measured numbers, written to bench-results/galaxy-app.json at the end."""
    data: dict[str, Any] = {}
    yield data
    if data:
        out = ROOT / "bench-results" / "galaxy-app.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
