"""The Galaxy test app as subprocesses of its own venv (tests/apps/galaxy/.venv, `make
galaxy-venv`): jhgalaxy.py, galaxy-main (handlers) and gunicorn (web) on one database, with
this directory as Galaxy's root (config/, tools/) and everything written under workdir."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("GALAXY_VENV") or HERE / ".venv")
BOOTSTRAP_KEY = "jobhandlers-test-bootstrap-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Galaxy:
    """Galaxy 26.1.2 against one database URL (postgresql://, as the chart gives it)."""

    def __init__(self, url: str, workdir: Path) -> None:
        self.url = url
        self.workdir = workdir
        self.state = workdir / "state"
        self.state.mkdir(exist_ok=True)
        # Galaxy's conda resolver makes its tool dependency directory with exists-then-mkdir
        # (tool_util/deps/installable.py): two servers starting at once (web and a handler) race
        # on it and the second exits with FileExistsError. The images have it; here it is made first.
        (workdir / "data" / "dependencies").mkdir(parents=True, exist_ok=True)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.web_port = 0

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GALAXY_")}
        env.update({"DATABASE_URL": self.url, "GALAXY_CONFIG_FILE": str(HERE / "config" / "galaxy.yml"),
                    "GALAXY_CONFIG_OVERRIDE_DATA_DIR": str(self.workdir / "data"),
                    "GALAXY_CONFIG_OVERRIDE_BOOTSTRAP_ADMIN_API_KEY": BOOTSTRAP_KEY,
                    "JOBHANDLERS_STATE_DIR": str(self.state), "PYTHONUNBUFFERED": "1",
                    "PATH": f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
        return env

    def jh(self, *args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`jhgalaxy ARGS` to completion."""
        return subprocess.run([str(VENV / "bin" / "python"), str(HERE / "jhgalaxy.py"), *args],
                              env={**self.env(), **(env or {})}, cwd=HERE, capture_output=True, text=True,
                              timeout=timeout)

    def start(self, *argv: str, name: str) -> subprocess.Popen[bytes]:
        """`jhgalaxy exec ARGV` in the background (killed at teardown); output in workdir/NAME-N.log."""
        log = open(self.workdir / f"{name}-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(VENV / "bin" / "python"), str(HERE / "jhgalaxy.py"), "exec", *argv],
                                env=self.env(), cwd=HERE, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        proc.log_path = Path(log.name)  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def handler(self, server_name: str, pool: str = "job-handlers") -> subprocess.Popen[bytes]:
        return self.start("galaxy-main", "-c", str(HERE / "config" / "galaxy.yml"), "--server-name", server_name,
                          "--attach-to-pool", pool, name=server_name)

    def web(self) -> subprocess.Popen[bytes]:
        self.web_port = free_port()
        return self.start("gunicorn", "galaxy.webapps.galaxy.fast_factory:factory()",
                          "-k", "galaxy.webapps.galaxy.workers.Worker", "-b", f"127.0.0.1:{self.web_port}",
                          "--workers", "1", "--timeout", "300", "--config", "python:galaxy.web_stack.gunicorn_config",
                          "--preload", name="web")

    def api(self, method: str, path: str, key: str = BOOTSTRAP_KEY, body: Any = None, timeout: float = 60) -> Any:
        req = urllib.request.Request(f"http://127.0.0.1:{self.web_port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"x-api-key": key, "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def output(proc: subprocess.Popen[bytes]) -> str:
    """Everything a background process logged so far."""
    return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]


def wait_for(pred: Any, timeout: float, what: str, interval: float = 0.5) -> Any:
    """Poll pred() until truthy; AssertionError naming `what` after `timeout` s."""
    end = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on its own autocommit connection."""
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params or None)
        return cur.fetchall() if cur.description else []
