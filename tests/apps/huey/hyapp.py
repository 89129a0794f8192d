"""The huey test app as subprocesses: `django-admin …` (run_huey, migrate, shell) from the
app's venv with the project on PYTHONPATH (shared by the app tests and nothing else)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENV = Path(os.environ.get("HUEY_VENV") or HERE / ".venv")
sys.path.insert(0, str(HERE.parent / "procrastinate"))
from pcapp import output, query, wait_for  # noqa: E402,F401 - the same helpers, re-exported

# The consumer as the chart runs it (values-examples/huey.yaml): process workers, so
# huey's SIGTERM reaches a running task as KeyboardInterrupt.
CONSUMER = ("run_huey", "--workers", "2", "--worker-type", "process", "--delay", "0.2", "--max-delay", "1")


class App:
    """The test app against one database URL (one version: huey has no upgrade scenario)."""

    def __init__(self, project: Path, url: str, workdir: Path) -> None:
        self.project = project
        self.url = url
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HUEY_"))}
        env.update({"DATABASE_URL": self.url, "DJANGO_SETTINGS_MODULE": "jhhuey.settings",
                    "PYTHONPATH": str(self.project), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONUNBUFFERED": "1", "PATH": f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`django-admin ARGS` to completion."""
        return subprocess.run([str(VENV / "bin" / "django-admin"), *args], env=self.env(), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def enqueue(self, *seconds: float) -> None:
        """Enqueue one sleep_task per entry through huey's own API."""
        res = self.run("shell", "-c", f"from jhtasks.tasks import sleep_task\nfor s in {list(seconds)!r}: sleep_task(s)")
        assert res.returncode == 0, res.stderr[-3000:]

    def start(self, *args: str, name: str = "consumer") -> subprocess.Popen[bytes]:
        """`django-admin ARGS` in the background (killed at teardown); output in workdir/NAME-N.log."""
        log = open(self.workdir / f"{name}-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(VENV / "bin" / "django-admin"), *args], env=self.env(), cwd=self.workdir,
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
