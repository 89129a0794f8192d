"""The Celery test app on the host: a private redis-server (Debian's package) as the broker,
the unmodified worker and `django-admin` from the app's venv (requirements.txt plus
requirements-redis.txt), and the job records it keeps in PostgreSQL (shared by the app
tests and nothing else)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENV = Path(os.environ.get("CELERY_VENV") or HERE / ".venv")
PREFETCH, CONCURRENCY = 4, 2
HELD = PREFETCH * CONCURRENCY      # messages one worker holds: running + reserved


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


class RedisServer:
    """Debian's redis-server on a free 127.0.0.1 port, in a temp dir, no persistence (no RDB
    snapshots, no AOF: a broker restart is not what these tests measure)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="celery-redis-"))
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> "RedisServer":
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).is_file():
            raise AssertionError("no redis-server: run `make deps` (apt-get install redis-server)")
        log = open(self.root / "redis.log", "ab")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"redis-server exited {self.proc.returncode}: "
                                     f"{(self.root / 'redis.log').read_text()[-2000:]}")
            try:
                return self.command("PING") == "PONG"
            except OSError:
                return False

        wait_for(ready, timeout, "redis-server to answer PING")
        return self

    def command(self, *args: str) -> Any:
        """One command over RESP (no client library in the test venv): str, int, list or None."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(f"*{len(args)}\r\n".encode() + b"".join(
                f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args))
            f = s.makefile("rb")

            def read() -> Any:
                line = f.readline().rstrip(b"\r\n")
                kind, rest = line[:1], line[1:].decode()
                if kind == b"+":
                    return rest
                if kind == b"-":
                    raise RuntimeError(rest)
                if kind == b":":
                    return int(rest)
                if kind == b"$":
                    return None if rest == "-1" else f.read(int(rest) + 2)[:-2].decode()
                if kind == b"*":
                    return None if rest == "-1" else [read() for _ in range(int(rest))]
                raise RuntimeError(f"unexpected reply {line!r}")

            return read()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class App:
    """The test app (one project tree) against one database URL; the broker URL, the acks
    setting and kombu's transport options are attributes, set before the first process."""

    def __init__(self, project: Path, url: str, workdir: Path) -> None:
        self.project = project
        self.url = url
        self.workdir = workdir
        self.broker = ""
        self.acks_late = True
        self.transport_options: dict[str, Any] = {}
        self.procs: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
        env.update({"DATABASE_URL": self.url, "DJANGO_SETTINGS_MODULE": "jhcelery.settings",
                    "CELERY_BROKER_URL": self.broker,
                    "CELERY_TASK_ACKS_LATE": "true" if self.acks_late else "false",
                    "CELERY_BROKER_TRANSPORT_OPTIONS": json.dumps(self.transport_options),
                    "PYTHONPATH": str(self.project), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONUNBUFFERED": "1", "PATH": f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`django-admin ARGS` to completion."""
        return subprocess.run([str(VENV / "bin" / "django-admin"), *args], env=self.env(), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def submit(self, *seconds: float) -> list[str]:
        """jhtasks.tasks.submit: one Job row, then one message per entry; the task ids."""
        res = self.run("shell", "-c", "import json\nfrom jhtasks.tasks import submit\n"
                       f"print(json.dumps(submit(*{list(seconds)!r})))")
        assert res.returncode == 0, res.stderr[-3000:]
        return list(json.loads(res.stdout.strip().splitlines()[-1]))

    def worker(self, name: str, loglevel: str = "INFO") -> subprocess.Popen[bytes]:
        """A worker as values-examples/django-celery.yaml runs it (-n NAME -Q jobs, concurrency
        2, prefetch multiplier 4), in its own session; output in workdir/NAME.log."""
        log = open(self.workdir / f"{name.replace('@', '-')}.log", "wb")
        proc = subprocess.Popen(
            [str(VENV / "bin" / "celery"), "-A", "jhcelery", "worker", "-n", name, "-Q", "jobs",
             "--concurrency", str(CONCURRENCY), "--prefetch-multiplier", str(PREFETCH), "--loglevel", loglevel],
            env=self.env(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        proc.log_path = Path(log.name)  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def stream(self, task_seconds: float, gap: float) -> tuple[subprocess.Popen[str], Path]:
        """A submitter that calls submit(task_seconds) every `gap` s until the returned path
        exists (at most 120 s), then prints how many it submitted (read it with .communicate())."""
        stop = self.workdir / f"stop-stream-{len(self.procs)}"
        code = ("import os, time\nfrom jhtasks.tasks import submit\n"
                "end = time.monotonic() + 120\nn = 0\n"
                f"while not os.path.exists({str(stop)!r}) and time.monotonic() < end:\n"
                f"    submit({task_seconds!r})\n    n += 1\n    time.sleep({gap!r})\n"
                "print('submitted', n)")
        proc = subprocess.Popen([str(VENV / "bin" / "django-admin"), "shell", "-c", code], env=self.env(),
                                cwd=self.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        self.procs.append(proc)  # type: ignore[arg-type]
        return proc, stop

    def ready(self, proc: subprocess.Popen[bytes], name: str, timeout: float = 60) -> None:
        """Wait for the worker's `NAME ready.` line (it consumes from then on)."""
        def up() -> bool:
            assert proc.poll() is None, f"worker {name} exited {proc.returncode}:\n{output(proc)[-3000:]}"
            return f"{name} ready." in output(proc)
        wait_for(up, timeout, f"worker {name} to be ready")

    def runs(self) -> list[tuple[Any, ...]]:
        """(task_id, worker, redelivered, finished, started epoch) per run, in start order."""
        return query(self.url, "SELECT task_id, worker, redelivered, finished_at IS NOT NULL, "
                               "extract(epoch FROM started_at)::float8 FROM jhtasks_taskrun ORDER BY id")

    def tally(self) -> dict[str, int]:
        """Per job: lost (no finished run), run twice (two runs or more), redelivered runs."""
        jobs = [r[0] for r in query(self.url, "SELECT task_id FROM jhtasks_job")]
        runs = self.runs()
        finished = {r[0] for r in runs if r[3]}
        count: dict[str, int] = {}
        for r in runs:
            count[r[0]] = count.get(r[0], 0) + 1
        return {"jobs": len(jobs), "finished": sum(1 for j in jobs if j in finished),
                "lost": sum(1 for j in jobs if j not in finished),
                "run_twice": sum(1 for j in jobs if count.get(j, 0) > 1),
                "redelivered_runs": sum(1 for r in runs if r[2])}

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def output(proc: subprocess.Popen[bytes]) -> str:
    """Everything a background process logged so far."""
    return Path(proc.log_path).read_text(errors="replace")  # type: ignore[attr-defined]
