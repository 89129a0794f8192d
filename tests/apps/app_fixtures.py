"""The fixtures every real-app test suite under tests/apps/<app>/ shares: a real PostgreSQL
server (the workload harness's), a fresh database per test, the unmodified app run from its
own venv (`make app-venv`), its v2 project (the v1 tree plus the v2 migrations, what the
app's build-image.sh bakes into the :2 image), and the measured facts file. An app's
conftest.py calls `define(globals(), ...)`."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, MutableMapping

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "workload"))
from wl_harness import PostgresServer  # noqa: E402


class HeldLock:
    """`sql` run in an open transaction on another connection, rolled back once at least
    `seconds` have passed *and* the test called release(): what a test asserts "while the
    lock is held" cannot race the lock's end on a loaded machine."""

    def __init__(self, url: str, sql: str, seconds: float, timeout: float = 150):
        import psycopg  # the test venv's; only the app suites that hold locks import it

        self._release = threading.Event()
        held = threading.Event()

        def body() -> None:
            with psycopg.connect(url) as conn:
                conn.execute(sql)
                held.set()
                t0 = time.monotonic()
                self._release.wait(timeout)
                time.sleep(max(0.0, seconds - (time.monotonic() - t0)))
                conn.rollback()

        self._thread = threading.Thread(target=body, daemon=True)
        self._thread.start()
        assert held.wait(10), "the lock was not taken"

    def release(self) -> None:
        """Let the lock go (after its minimum seconds)."""
        self._release.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def define(ns: MutableMapping[str, Any], *, name: str, here: Path, venv: Path, entry: str,
           app_cls: Callable[..., Any], v2_glob: str, migrations_dir: str, db_prefix: str) -> None:
    """Put the fixtures venv, pg, projects, dburl, app and facts into a conftest's namespace.
    entry: a program the venv must have (a missing venv fails, never skips); v2_glob and
    migrations_dir: which files of here/v2 go where in the v2 project."""
    results = ROOT / "bench-results" / f"{name}-app.json"

    @pytest.fixture(scope="session", name="venv")
    def _venv() -> Path:
        if not (venv / "bin" / entry).is_file():
            pytest.fail(f"no {name} app venv at {venv}: run `make app-venv`", pytrace=False)
        return venv

    @pytest.fixture(scope="session", name="pg")
    def _pg() -> Iterator[PostgresServer]:
        server = PostgresServer().start()
        yield server
        server.stop()

    @pytest.fixture(scope="session", name="projects")
    def _projects(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
        v2 = tmp_path_factory.mktemp("v2") / "project"
        shutil.copytree(here / "project", v2, ignore=shutil.ignore_patterns("__pycache__"))
        for mig in (here / "v2").glob(v2_glob):
            shutil.copy(mig, v2 / migrations_dir / mig.name)
        return {1: here / "project", 2: v2}

    @pytest.fixture(name="dburl")
    def _dburl(pg: PostgresServer) -> Iterator[str]:
        url = pg.create_database(db_prefix)
        yield url
        pg.drop_database(url)

    @pytest.fixture(name="app")
    def _app(venv: Path, projects: dict[int, Path], dburl: str, tmp_path: Path) -> Iterator[Any]:
        """app(version=1, **kw) -> the app on this test's database (kw: more arguments of the app
        class); its processes are killed at teardown."""
        made: list[Any] = []

        def make(version: int = 1, **kw: Any) -> Any:
            made.append(app_cls(projects[version], dburl, tmp_path, **kw))
            return made[-1]

        yield make
        for a in made:
            a.kill_all()

    @pytest.fixture(scope="session", name="facts")
    def _facts() -> Iterator[dict[str, Any]]:
        """Measured numbers, written to bench-results/<name>-app.json at the end."""
        data: dict[str, Any] = {}
        yield data
        if data:
            results.parent.mkdir(exist_ok=True)
            results.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    ns.update(_venv=_venv, _pg=_pg, _projects=_projects, _dburl=_dburl, _app=_app, _facts=_facts)
