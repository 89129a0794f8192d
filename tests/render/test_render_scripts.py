"""The rendered shell (retry loops, probes, preStop, entrypoint) run for real with sh:
the exact command + args of the rendered containers, against a temporary state dir."""

from __future__ import annotations

import os
import re
import signal
import shlex
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from generator.render import helm
from generator.invariants import role_container


def private_tmp() -> dict[str, str]:
    """The environment with a TMPDIR of its own, as each container has its own /tmp: the wait loop
    names its output file by its PID, and two of these tests as PID 1 of their own PID namespaces
    (both PID 1) would share /tmp/jobhandlers-wait-for-migrations.1 (a race seen in stop 32)."""
    return dict(os.environ, TMPDIR=tempfile.mkdtemp(prefix="jh-scripts-"))


def run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=private_tmp())


def web(objs) -> dict[str, Any]:
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"] == "demo-jobhandlers-web"]
    return dep["spec"]["template"]["spec"]


def flaky_check(tmp_path: Path, failures: int) -> list[str]:
    """A schema check that says 'behind' (exit 3) `failures` times, then 'at head'."""
    counter = tmp_path / "tries"
    script = (f'n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; '
              f'if [ "$n" -lt {failures} ]; then echo "schema behind: at r1, image wants r2"; exit 3; fi; echo "at head r2"')
    return ["sh", "-c", script]


def wait_container(tmp_path: Path, failures: int, timeout: int) -> list[str]:
    objs = helm.render(overrides={"commands": {"schemaCheck": flaky_check(tmp_path, failures)},
                                  "waitForMigrations": {"timeoutSeconds": timeout, "intervalSeconds": 1}})
    (init,) = web(objs)["initContainers"]
    return init["command"] + init["args"]


def test_wait_for_migrations_loops_until_the_check_passes(tmp_path):
    proc = run(wait_container(tmp_path, failures=2, timeout=60))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert "try 1" in lines[0] and "exited 3: schema behind: at r1, image wants r2" in lines[0]
    assert "try 3" in lines[2] and "ok: at head r2" in lines[2]


def test_wait_for_migrations_times_out_with_a_clear_message(tmp_path):
    t0 = time.monotonic()
    proc = run(wait_container(tmp_path, failures=1000, timeout=1))
    assert proc.returncode == 1
    assert time.monotonic() - t0 < 10
    assert "exited 3: schema behind" in proc.stdout
    assert "wait-for-migrations: TIMEOUT" in proc.stderr and "(limit 1s, last exit 3)" in proc.stderr
    assert "migration Job" in proc.stderr


def test_wait_for_database_times_out(tmp_path):
    objs = helm.render(overrides={"commands": {"databaseCheck": ["sh", "-c", "echo connection refused; exit 2"]},
                                  "migration": {"waitForDatabase": {"timeoutSeconds": 1, "intervalSeconds": 1}}})
    (job,) = helm.by_kind(objs, "Job")
    (init,) = job["spec"]["template"]["spec"]["initContainers"]
    proc = run(init["command"] + init["args"])
    assert proc.returncode == 1
    assert "exited 2: connection refused" in proc.stdout and "wait-for-database: TIMEOUT" in proc.stderr


@pytest.fixture
def state(tmp_path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def probes(state) -> dict[str, list[str]]:
    objs = helm.render(kube_version="1.34", overrides={"heartbeat": {"dir": str(state)}, "drain": {"preStopSeconds": 0}})
    (c,) = web(objs)["containers"]
    out = {p: c[p]["exec"]["command"] for p in ("readinessProbe", "livenessProbe", "startupProbe")}
    out["preStop"] = c["lifecycle"]["preStop"]["exec"]["command"]
    out["entrypoint"] = c["command"]
    return out


def beat(state: Path, age: int) -> None:
    hb = state / "heartbeat"
    hb.touch()
    t = time.time() - age
    os.utime(hb, (t, t))


def codes(probes) -> tuple[int, int, int]:
    return tuple(run(probes[p]).returncode for p in ("readinessProbe", "livenessProbe", "startupProbe"))


def test_probes_follow_the_heartbeat_and_markers(state, probes):
    assert codes(probes) == (1, 1, 1)  # no heartbeat yet
    assert "no heartbeat" in run(probes["readinessProbe"]).stdout
    beat(state, 1)
    assert codes(probes) == (0, 0, 0)
    beat(state, 100)  # > readiness 20 s, < liveness 600 s
    assert codes(probes) == (1, 0, 1)
    assert re.search(r"heartbeat is 10[0-9]s old \(max 20s\)", run(probes["readinessProbe"]).stdout)  # + seconds under load
    beat(state, 700)
    assert codes(probes) == (1, 1, 1)
    beat(state, 1)
    (state / "drain").touch()  # maintenance mode: alive, not ready
    assert codes(probes) == (1, 0, 0)
    assert "drain mode" in run(probes["readinessProbe"]).stdout
    (state / "drain").unlink()
    assert run(probes["preStop"]).returncode == 0  # preStop: the stopping marker
    assert (state / "stopping").exists()
    assert codes(probes) == (1, 0, 0)


def test_startup_probe_wants_a_heartbeat_of_this_container(state, probes):
    """A crashed handler's last beat survives in the pod's emptyDir; the restarted
    container's startupProbe must wait for a beat written after its own PID 1 started.
    The container is a fresh PID namespace (unshare), the probe runs beside its PID 1."""
    beat(state, 3)  # the previous container's last beat
    startup, readiness = shlex.join(probes["startupProbe"]), shlex.join(probes["readinessProbe"])
    inner = (f"{startup}; echo startup=$?; {readiness} >/dev/null; echo readiness=$?; "
             f"touch {shlex.quote(str(state / 'heartbeat'))}; {startup}; echo startup=$?")
    proc = run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", inner])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out == ["not started: the newest heartbeat is from before this container started",
                   "startup=1", "readiness=0", "startup=0"], proc.stdout
    assert run(probes["startupProbe"]).returncode == 0  # beside the host's PID 1 the beat is new


def test_entrypoint_clears_a_stale_stopping_marker_and_keeps_drain(state, probes):
    (state / "stopping").touch()
    (state / "drain").touch()
    proc = run(probes["entrypoint"] + ["sh", "-c", f"test ! -e {state}/stopping && echo started $#", "x", "a b"])
    assert proc.returncode == 0 and proc.stdout.strip() == "started 1"  # args passed through intact
    assert not (state / "stopping").exists() and (state / "drain").exists()


def test_entrypoint_execs_the_role_command(state, probes):
    """exec: the role's command replaces sh (same PID), so SIGTERM reaches it."""
    proc = subprocess.Popen(probes["entrypoint"] + ["sh", "-c", "echo $$"], stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert int(out) == proc.pid  # the container's first process *is* the role's command


def ahead_container(tmp_path: Path, accept: bool) -> list[str]:
    """wait-for-migrations against a schema check that always says 'ahead' (exit 4)."""
    check = ["sh", "-c", "echo 'database schema at revision 4, ahead of this image head 3'; exit 4"]
    objs = helm.render(overrides={"commands": {"schemaCheck": check},
                                  "waitForMigrations": {"timeoutSeconds": 60, "intervalSeconds": 1, "acceptAhead": accept}})
    spec = web(objs)
    (init,) = spec["initContainers"]
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert (env.get("JOBHANDLERS_SCHEMA_ACCEPT_AHEAD") == "1") == accept
    return init["command"] + init["args"]


def test_schema_ahead_fails_at_once_with_the_fixes(tmp_path):
    t0 = time.monotonic()
    proc = run(ahead_container(tmp_path, accept=False))
    assert proc.returncode == 1 and time.monotonic() - t0 < 5, "ahead must not wait out the 60 s timeout"
    assert "schema is ahead of this image" in proc.stderr and "revision 4" in proc.stderr
    assert "roll forward" in proc.stderr and "migration.onRollback=downgrade" in proc.stderr


def test_schema_ahead_accepted_with_a_warning(tmp_path):
    proc = run(ahead_container(tmp_path, accept=True))
    assert proc.returncode == 0
    assert "WARNING: the schema is ahead of this image" in proc.stdout and "revision 4" in proc.stdout


# --- Signals. A container's first process is PID 1 of its own PID namespace, and the kernel
# drops every signal PID 1 has no handler for: run the rendered loops exactly so
# (unshare --pid --fork), signal them from outside as the kubelet does, and time the exit.

BEHIND = ["sh", "-c", "echo 'schema behind: at r1, image wants r2'; exit 3"]
HANGS = ["sh", "-c", "echo connecting; exec sleep 300"]  # a check stuck on an unreachable database


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _default_stop_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def as_pid1(argv: list[str]) -> tuple[subprocess.Popen[str], int]:
    """Start argv as PID 1 of a new PID namespace; (the unshare process, argv's host pid).
    SIGINT and SIGQUIT are reset to their defaults first, as a container runtime starts PID 1:
    under a shell without job control (`.ci/run &`, nohup) they arrive ignored, and a shell
    cannot trap a signal that was ignored when it started."""
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_stop_signals, env=private_tmp())
    deadline = time.monotonic() + 10
    while not children(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc, children(proc.pid)[0]


def signal_while_waiting(argv: list[str], sig: int, after: float = 1.5, cap: float = 15) -> tuple[float, int, str]:
    """Seconds from the signal to the exit, the exit code and stdout (killed after cap)."""
    proc, pid1 = as_pid1(argv)
    # the loop has started (its traps are set first) once PID 1 has a child: the check or the
    # sleep between tries. A signal before the trap would be dropped by PID 1 (a loaded machine
    # can take over a second to get there).
    deadline = time.monotonic() + 30
    while not children(pid1):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(after)
    assert proc.poll() is None, proc.communicate()
    os.kill(pid1, sig)
    t0 = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"still running {cap} s after {signal.Signals(sig).name}") from None
    return time.monotonic() - t0, proc.returncode, out


def wait_script(check: list[str], interval: int = 30) -> list[str]:
    """The rendered wait-for-migrations (timeout 600 s: the wait must not end by itself)."""
    objs = helm.render(overrides={"commands": {"schemaCheck": check},
                                  "waitForMigrations": {"timeoutSeconds": 600, "intervalSeconds": interval}})
    (init,) = web(objs)["initContainers"]
    return init["command"] + init["args"]


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_wait_for_migrations_exits_at_once_on_a_stop_signal(sig: int, code: int) -> None:
    """Between tries (in the sleep of a 30 s interval) SIGTERM/SIGINT ends the wait at once (bound 10 s: far below the interval, loose enough for a loaded machine)."""
    seconds, rc, out = signal_while_waiting(wait_script(BEHIND), sig)
    assert rc == code and seconds < 10, (seconds, rc, out)
    # "after 0s", or 1 s when a loaded machine starts the first try across a second boundary
    assert re.search(r"try 1 after [01]s: 'sh -c", out) and "exited 3: schema behind" in out, out
    assert re.search(rf"wait-for-migrations: stopped by {signal.Signals(sig).name} after \d+s \(try 1\)", out), out


def test_wait_for_migrations_exits_at_once_while_the_check_hangs() -> None:
    """SIGTERM during a check that hangs (a database that never answers) ends the wait and the check."""
    proc, pid1 = as_pid1(wait_script(HANGS))
    deadline = time.monotonic() + 30
    while not children(pid1):  # the hanging check has started (a loaded machine may take seconds)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(1.0)
    (check,) = children(pid1)
    os.kill(pid1, signal.SIGTERM)
    t0 = time.monotonic()
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 143 and time.monotonic() - t0 < 10, out
    assert "stopped by SIGTERM after" in out and "(try 1)" in out and not Path(f"/proc/{check}").exists()


def test_wait_for_migrations_keeps_its_output_and_codes_as_pid1(tmp_path) -> None:
    """As PID 1 too: exit 0 once the check passes, 1 at the timeout, output unchanged."""
    ok = run(["unshare", "--pid", "--fork", *wait_container(tmp_path, failures=1, timeout=60)])
    assert ok.returncode == 0 and ok.stdout.splitlines()[1].endswith("ok: at head r2"), ok.stdout
    (tmp_path / "tries").unlink()
    late = run(["unshare", "--pid", "--fork", *wait_container(tmp_path, failures=1000, timeout=1)])
    assert late.returncode == 1 and "TIMEOUT" in late.stderr and "stopped" not in late.stdout


def test_wait_for_database_exits_at_once_on_sigterm() -> None:
    objs = helm.render(overrides={"commands": {"databaseCheck": ["sh", "-c", "echo connection refused; exit 2"]},
                                  "migration": {"waitForDatabase": {"timeoutSeconds": 600, "intervalSeconds": 30}}})
    (job,) = helm.by_kind(objs, "Job")
    (init,) = job["spec"]["template"]["spec"]["initContainers"]
    seconds, rc, out = signal_while_waiting(init["command"] + init["args"], signal.SIGTERM)
    assert rc == 143 and seconds < 10, (seconds, rc, out)  # "at once": the interval is 30 s
    assert "exited 2: connection refused" in out and "wait-for-database: stopped by SIGTERM" in out


def test_wait_for_exit_prestop_ends_on_sigterm() -> None:
    """drain.waitForExit: the preStop waits for PID 1 (which ignores the drain signal here) and
    still ends at once when it is itself stopped. Inside a PID namespace, so `kill -s INT 1`
    reaches the namespace's own PID 1, an sh ignoring INT."""
    objs = helm.render(overrides={"handlers": {"job": {"maxJobRuntimeSeconds": 300, "drain": {
        "mode": "signal", "signal": "INT", "waitForExit": True}}}})
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"] == "demo-jobhandlers-job"]
    pre_stop = role_container(dep)["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[:2] == ["sh", "-c"]
    proc, pid1 = as_pid1(["sh", "-c", 'trap "" INT; sh -c "$1"; echo "preStop exit $?"', "pid1", pre_stop[2]])
    time.sleep(1.5)
    (hook,) = children(pid1)
    os.kill(hook, signal.SIGTERM)
    t0 = time.monotonic()
    out, _ = proc.communicate(timeout=15)
    assert time.monotonic() - t0 < 2 and out.strip() == "preStop exit 143", out
