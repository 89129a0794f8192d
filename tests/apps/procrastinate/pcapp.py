"""The procrastinate test app as subprocesses: `django-admin …` from the app's venv with the
v1 or v2 project on PYTHONPATH (shared by the app tests and nothing else)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENV = Path(os.environ.get("PROCRASTINATE_VENV") or HERE / ".venv")


class App:
    """The test app at one version (1 or 2) against one database URL, run from `venv`
    (requirements.txt's; the upgrade tests use .venv-3.1 and .venv-3.2)."""

    def __init__(self, project: Path, url: str, workdir: Path, venv: Path = VENV) -> None:
        self.project = project
        self.venv = venv
        self.url = url
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.extra_env: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROCRASTINATE_"))}
        env.update({"DATABASE_URL": self.url, "DJANGO_SETTINGS_MODULE": "jhproc.settings",
                    "PYTHONPATH": str(self.project), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONUNBUFFERED": "1", "PATH": f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
        env.update(self.extra_env)
        return env

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`django-admin ARGS` to completion."""
        return subprocess.run([str(self.venv / "bin" / "django-admin"), *args], env=self.env(), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def start(self, *args: str, name: str = "worker") -> subprocess.Popen[bytes]:
        """`django-admin ARGS` in the background (killed at teardown); output in workdir/NAME.log."""
        log = open(self.workdir / f"{name}-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(self.venv / "bin" / "django-admin"), *args], env=self.env(), cwd=self.workdir,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        proc.log_path = Path(log.name)  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def output(proc: subprocess.Popen[bytes]) -> str:
    """Everything a background process logged so far."""
    return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]


def ok(res: subprocess.CompletedProcess[str]) -> str:
    """The output of a command, for assertion messages."""
    return f"exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"


def wait_for(pred: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
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
