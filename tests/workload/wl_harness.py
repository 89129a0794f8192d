"""Test and benchmark harness: a throwaway PostgreSQL server and `workload` subprocesses.

PostgreSQL comes from the Debian packages (`make deps`); as root the server runs as the
unprivileged `nobody` user (postgres refuses to run as root), on a free 127.0.0.1 port, in
a temp dir removed at stop(). Nothing here is mocked: every process is real.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import psycopg  # noqa: E402


class HarnessError(Exception):
    """The environment cannot run the workload tests; the message says how to fix it."""


def pg_bin(name: str) -> str:
    """Path of a PostgreSQL server binary (PATH, then /usr/lib/postgresql/*/bin)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if candidates:
        return candidates[-1]
    raise HarnessError(f"PostgreSQL binary {name!r} not found on PATH or in /usr/lib/postgresql/*/bin; "
                       "run `make deps` (apt-get install postgresql)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `predicate` until truthy; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


class PostgresServer:
    """A private PostgreSQL cluster: start(), url(db), create_database(), stop()."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="workload-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.user: str | None = "nobody" if os.geteuid() == 0 else None
        self._n = 0

    def _chown(self) -> None:
        if self.user:
            shutil.chown(self.root, self.user)
            if self.data.exists():
                for path in [self.data, *self.data.rglob("*")]:
                    shutil.chown(path, self.user)

    def start(self, timeout: float = 60.0) -> "PostgresServer":
        self._chown()
        init = subprocess.run([pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                               "-E", "UTF8", "--locale=C", "--no-sync"],
                              user=self.user, capture_output=True, text=True, cwd=self.root)
        if init.returncode != 0:
            raise HarnessError(f"initdb failed ({init.returncode}): {init.stderr.strip()}")
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [pg_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", "",
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB"],
            user=self.user, stdout=logf, stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True)
        logf.close()

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise HarnessError(f"postgres exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        wait_for(ready, timeout, "postgres to accept connections", interval=0.1)
        return self

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t") -> str:
        """A fresh empty database; returns its URL."""
        self._n += 1
        name = f"{prefix}{os.getpid()}_{self._n}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def workload_env(url: str, state_dir: Path, version: int = 1, **extra: Any) -> dict[str, str]:
    """Environment for a `workload` subprocess: the chart's contract with short test timings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKLOAD_", "JOBHANDLERS_"))}
    env.update({
        "DATABASE_URL": url,
        "WORKLOAD_VERSION": str(version),
        "JOBHANDLERS_STATE_DIR": str(state_dir),
        "HEARTBEAT_INTERVAL_SECONDS": "0.2",
        "DRAIN_DEADLINE_SECONDS": "10",
        "WORKLOAD_LEASE_SECONDS": "3",
        "WORKLOAD_POLL_SECONDS": "0.1",
        "PYTHONPATH": str(HERE) + os.pathsep + env.get("PYTHONPATH", ""),
        "PYTHONUNBUFFERED": "1",
    })
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Workload:
    """One `python -m workload …` subprocess with its JSON log captured to a file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self._out = open(log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "workload", *args], env=env,
                                     stdout=self._out, stderr=subprocess.STDOUT, cwd=HERE)
        self.pid = self.proc.pid

    def events(self) -> list[dict[str, Any]]:
        """Every JSON line logged so far."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return out

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == name]

    def wait_event(self, name: str, timeout: float = 20.0, where: Callable[[dict[str, Any]], bool] | None = None,
                   count: int = 1) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            hits = [e for e in self.named(name) if where is None or where(e)]
            if len(hits) >= count:
                return hits
            if self.proc.poll() is not None:
                hits = [e for e in self.named(name) if where is None or where(e)]
                if len(hits) >= count:
                    return hits
                raise AssertionError(f"workload {self.args} exited ({self.proc.returncode}) before {name!r}:\n"
                                     f"{self.output()[-3000:]}")
            return None

        return wait_for(found, timeout, f"event {name!r} from workload {' '.join(self.args)}")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"workload {self.args} still running after {timeout:g} s:\n"
                                 f"{self.output()[-3000:]}") from None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


def run_cli(args: list[str], env: dict[str, str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a short `workload` command to completion."""
    return subprocess.run([sys.executable, "-m", "workload", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=HERE)


def jobs_table(url: str) -> Iterator[tuple[Any, ...]]:
    """(id, state, attempts) of every job."""
    with psycopg.connect(url) as conn:
        yield from conn.execute("SELECT id, state, attempts FROM jobs ORDER BY id").fetchall()
