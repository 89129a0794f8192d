#!/usr/bin/env python3
"""Workload lifecycle benchmark: the reference job handler vs a naive handler, same run.

Measures, against a private PostgreSQL server (Debian packages, `make deps`):
  1. idle handler: SIGTERM -> process exit
  2. busy handler: process exit minus the end of its last job (SIGTERM sent mid-job)
  3. jobs lost across 20 random SIGTERM/SIGKILL restarts while 4 handlers run 500 jobs
  4. throughput, jobs/s, 4 handlers with one job slot each (best of 3, alternated)
The naive handler is the common hand-written worker: `while not stop: claim one job
(SKIP LOCKED, no lease), run it, else time.sleep(poll)`; SIGTERM sets the flag. Both use
the same poll interval. Prints a table; writes bench-results/workload.json.
Goals (issue 6): idle <= 1 s, busy <= 1 s after the last job, 0 jobs lost.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "workload"))

import psycopg  # noqa: E402

from wl_harness import PostgresServer, wait_for, workload_env  # noqa: E402
from workload import migrations  # noqa: E402

POLL = 2.0  # the poll interval both handlers use in the exit measurements
RESULTS = ROOT / "bench-results" / "workload.json"


# ---- the naive handler (runs as `workload_bench.py naive-handler`) -----------------
def naive_handler() -> int:
    """A worker without lease, drain deadline or wake-up: the baseline."""
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(flag=True))
    owner = f"naive:{os.getpid()}"
    poll = float(os.environ.get("WORKLOAD_POLL_SECONDS", POLL))

    def emit(event: str, **fields: Any) -> None:
        print(json.dumps({"ts": time.time(), "event": event, **fields}), flush=True)

    conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    emit("claiming")
    while not stop["flag"]:
        row = conn.execute("""
            UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = %s, started_at = now()
            WHERE id = (SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING id, duration, attempts""", (owner,)).fetchone()
        if row is None:
            time.sleep(poll)
            continue
        job_id, duration, attempt = row
        conn.execute("INSERT INTO job_attempts (job_id, attempt, handler) VALUES (%s, %s, %s)", (job_id, attempt, owner))
        emit("claimed", job=job_id)
        time.sleep(duration)
        conn.execute("UPDATE jobs SET state = 'done', finished_at = now(), finished_by = %s WHERE id = %s",
                     (owner, job_id))
        conn.execute("UPDATE job_attempts SET outcome = 'done', ended_at = now() WHERE job_id = %s AND attempt = %s",
                     (job_id, attempt))
        emit("finished", job=job_id)
    emit("exit", exit_code=0)
    return 0


# ---- process helpers -------------------------------------------------------------
class Proc:
    """A handler subprocess (ours or naive) with its JSON log in a file."""

    def __init__(self, kind: str, env: dict[str, str], log: Path) -> None:
        self.log = log
        out = open(log, "wb")
        argv = ([sys.executable, "-m", "workload", "job"] if kind == "ours"
                else [sys.executable, str(Path(__file__).resolve()), "naive-handler"])
        self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def events(self, name: str) -> list[dict[str, Any]]:
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if e.get("event") == name:
                    found.append(e)
        return found

    def wait_event(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        def hit() -> dict[str, Any] | None:
            if self.proc.poll() is not None and not self.events(name):
                raise RuntimeError(f"handler exited early:\n{self.log.read_text()[-2000:]}")
            got = self.events(name)
            return got[0] if got else None
        return wait_for(hit, timeout, name, interval=0.01)

    def exit_time(self, timeout: float = 60.0) -> float:
        """Poll until exit; returns the wall-clock time it was seen (10 ms resolution)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"handler did not exit within {timeout} s")
            time.sleep(0.01)
        return time.time()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Bench:
    """Shared state: the server and a scratch directory."""

    def __init__(self, pg: PostgresServer, scratch: Path) -> None:
        self.pg = pg
        self.scratch = scratch
        self.n = 0

    def database(self) -> str:
        url = self.pg.create_database("bench")
        with contextlib.redirect_stdout(io.StringIO()):  # keep the table readable
            migrations.migrate(url, migrations.head(1))
        return url

    def spawn(self, kind: str, url: str, **env: Any) -> Proc:
        self.n += 1
        base = workload_env(url, self.scratch / f"state{self.n}", 1, WORKLOAD_POLL_SECONDS=POLL,
                            HEARTBEAT_INTERVAL_SECONDS=1, DRAIN_DEADLINE_SECONDS=30, WORKLOAD_LEASE_SECONDS=3)
        base.update({k: str(v) for k, v in env.items()})
        return Proc(kind, base, self.scratch / f"{kind}{self.n}.log")


def submit(url: str, durations: list[float]) -> None:
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO jobs (kind, duration) VALUES ('sleep', %s)", [(d,) for d in durations])


def count_done(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0])


# ---- the four measurements -----------------------------------------------------------
def idle_exit(b: Bench, kind: str, runs: int = 3) -> float:
    url = b.database()
    times = []
    for _ in range(runs):
        p = b.spawn(kind, url)
        p.wait_event("claiming")
        time.sleep(0.3)  # let it settle into its idle wait
        t0 = time.time()
        p.proc.send_signal(signal.SIGTERM)
        times.append(p.exit_time() - t0)
    return statistics.median(times)


def busy_exit(b: Bench, kind: str, runs: int = 3) -> float:
    url = b.database()
    lags = []
    for _ in range(runs):
        submit(url, [1.5])
        p = b.spawn(kind, url, WORKLOAD_CONCURRENCY=1)
        p.wait_event("claimed")
        time.sleep(0.5)
        p.proc.send_signal(signal.SIGTERM)
        exited = p.exit_time()
        lags.append(exited - p.wait_event("finished")["ts"])
    return statistics.median(lags)


def restarts(b: Bench, kind: str, jobs: int = 500, handlers: int = 4, kills: int = 20,
             seed: int = 6) -> dict[str, Any]:
    rnd = random.Random(seed)
    url = b.database()
    submit(url, [rnd.uniform(0.02, 0.1) for _ in range(jobs)])
    env = {"WORKLOAD_POLL_SECONDS": 0.1, "WORKLOAD_CONCURRENCY": 1, "WORKLOAD_LEASE_SECONDS": 2}
    pool = [b.spawn(kind, url, **env) for _ in range(handlers)]
    for p in pool:
        p.wait_event("claiming")
    t0 = time.monotonic()
    sent = {"SIGTERM": 0, "SIGKILL": 0}
    for _ in range(kills):
        time.sleep(rnd.uniform(0.15, 0.45))
        i = rnd.randrange(handlers)
        sig = rnd.choice([signal.SIGTERM, signal.SIGKILL])
        sent[sig.name] += 1
        pool[i].proc.send_signal(sig)
        pool[i].exit_time(60)
        pool[i] = b.spawn(kind, url, **env)
    # Settle: ours must finish everything; the naive one stops making progress.
    last, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 6.0 and time.monotonic() - t0 < 120:
        done = count_done(url)
        if done == jobs:
            break
        if done != last:
            last, stable_since = done, time.monotonic()
        time.sleep(0.2)
    elapsed = time.monotonic() - t0
    with psycopg.connect(url) as conn:
        done = int(conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0])
        reruns = int(conn.execute("SELECT count(*) FROM jobs WHERE attempts > 1").fetchone()[0])
        double_done = int(conn.execute("""SELECT count(*) FROM (SELECT job_id FROM job_attempts
                                          WHERE outcome = 'done' GROUP BY job_id HAVING count(*) > 1) d""").fetchone()[0])
    for p in pool:
        p.stop()
    return {"lost": jobs - done, "reruns": reruns, "double_completions": double_done, "signals": sent,
            "seconds": round(elapsed, 1)}


def throughput(b: Bench, kind: str, jobs: int = 1000, handlers: int = 4) -> float:
    url = b.database()
    # One job at a time each, like the naive loop, so the rate compares the claim paths.
    pool = [b.spawn(kind, url, WORKLOAD_POLL_SECONDS=0.1, WORKLOAD_CONCURRENCY=1) for _ in range(handlers)]
    for p in pool:
        p.wait_event("claiming")
    t0 = time.monotonic()
    submit(url, [0.0] * jobs)
    wait_for(lambda: count_done(url) == jobs, 120, f"{jobs} jobs done", interval=0.02)
    rate = jobs / (time.monotonic() - t0)
    for p in pool:
        p.stop()
    return rate


def row(name: str, ours: float, naive: float, unit: str, goal: str, lower_better: bool = True) -> list[str]:
    if lower_better:
        ratio = f"{naive / ours:.1f}x better" if ours > 0 else ("equal" if naive == 0 else f"{naive:g} vs 0")
    else:
        ratio = f"{ours / naive:.2f}x" if naive > 0 else "-"
    def fmt(v: float) -> str:
        return (f"{v:.0f}" if v >= 100 else f"{v:.3g}") + (f" {unit}" if unit else "")
    return [name, fmt(ours), fmt(naive), ratio, goal]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "naive-handler":
        return naive_handler()
    t_start = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="workload-bench-"))
    pg = PostgresServer().start()
    b = Bench(pg, scratch)
    results: dict[str, Any] = {}
    try:
        for kind in ("ours", "naive"):
            print(f"... measuring {kind} handler", file=sys.stderr, flush=True)
            results[kind] = {
                "idle_exit_s": idle_exit(b, kind),
                "busy_exit_after_last_job_s": busy_exit(b, kind),
                "restarts": restarts(b, kind),
            }
        # Throughput is noisy on a shared machine: alternate the two, keep each one's best of 3.
        rates: dict[str, list[float]] = {"ours": [], "naive": []}
        for _ in range(3):
            for kind in ("ours", "naive"):
                rates[kind].append(throughput(b, kind))
        for kind in ("ours", "naive"):
            results[kind]["throughput_jobs_per_s"] = max(rates[kind])
            results[kind]["throughput_runs"] = [round(r) for r in rates[kind]]
    finally:
        pg.stop()
    ours, naive = results["ours"], results["naive"]
    table = [
        ["metric", "workload (ours)", "naive handler", "naive/ours", "goal"],
        row("idle SIGTERM -> exit (median of 3)", ours["idle_exit_s"], naive["idle_exit_s"], "s", "<= 1 s"),
        row("busy: exit after last job ends (median of 3)", ours["busy_exit_after_last_job_s"],
            naive["busy_exit_after_last_job_s"], "s", "<= 1 s"),
        row("jobs lost, 20 random TERM/KILL restarts, 500 jobs", ours["restarts"]["lost"],
            naive["restarts"]["lost"], "", "0"),
        row("throughput, 4 handlers x 1 slot, 1000 empty jobs (best of 3)", ours["throughput_jobs_per_s"],
            naive["throughput_jobs_per_s"], "jobs/s", "-", lower_better=False),
    ]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for i, r in enumerate(table):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print(f"\nthroughput runs: ours {ours['throughput_runs']}, naive {naive['throughput_runs']} jobs/s")
    print(f"restarts detail: ours {ours['restarts']}\n                 naive {naive['restarts']}")
    print(f"poll interval {POLL:g} s for both in the exit rows; total bench time "
          f"{time.monotonic() - t_start:.0f} s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(RESULTS)
    ok = (ours["idle_exit_s"] <= 1 and ours["busy_exit_after_last_job_s"] <= 1 and ours["restarts"]["lost"] == 0)
    print("goals met" if ok else "GOALS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
