"""The chancy test app as subprocesses: `chancy --app jhchancy.app.app …` from the app's venv
with the v1 or v2 project on PYTHONPATH (shared by the app tests and nothing else)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENV = Path(os.environ.get("CHANCY_VENV") or HERE / ".venv")
APP = "jhchancy.app.app"
# The chart's commands.schemaCheck: chancy's check-migrations always exits 0 and marks each
# unapplied migration with ✗, so sh turns its output into 0 (at head) / 3 (behind) / 5.
SCHEMA_CHECK = ("out=$(chancy --app jhchancy.app.app misc check-migrations) || exit 5; "
                "case $out in *✗*) exit 3;; esac")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """The test app at one version (1 or 2) against one database URL."""

    def __init__(self, project: Path, url: str, workdir: Path) -> None:
        self.project = project
        self.url = url
        self.workdir = workdir
        self.port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"DATABASE_URL": self.url, "PYTHONPATH": str(self.project), "CHANCY_API_PORT": str(self.port),
                    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8",
                    "PATH": f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`chancy --app APP ARGS` to completion."""
        return subprocess.run([str(VENV / "bin" / "chancy"), "--app", APP, *args], env=self.env(),
                              cwd=self.workdir, capture_output=True, text=True, timeout=timeout)

    def schema_check(self, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", SCHEMA_CHECK], env=self.env(), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def python(self, code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(VENV / "bin" / "python"), "-c", code], env=self.env(), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def push(self, *seconds: float) -> None:
        """Push one sleep_task per entry through the app's own API."""
        res = self.python("import asyncio\nfrom jhchancy.app import app, sleep_task\n"
                          "async def main():\n    async with app:\n"
                          f"        for s in {list(seconds)!r}: await app.push(sleep_task.job.with_kwargs(seconds=s))\n"
                          "asyncio.run(main())")
        assert res.returncode == 0, res.stderr[-3000:]

    def start(self, *args: str, name: str = "worker") -> subprocess.Popen[bytes]:
        """`chancy --app APP ARGS` in the background (killed at teardown); output in workdir/NAME-N.log."""
        log = open(self.workdir / f"{name}-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(VENV / "bin" / "chancy"), "--app", APP, *args], env=self.env(),
                                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        proc.log_path = Path(log.name)  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def health(self, timeout: float = 3) -> int | None:
        """HTTP status of GET /health on the worker's API port; None = no answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=timeout) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def output(proc: subprocess.Popen[bytes]) -> str:
    return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]


def wait_for(pred: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params or None)
        return cur.fetchall() if cur.description else []
