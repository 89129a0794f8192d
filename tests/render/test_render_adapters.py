"""Probe and drain adapters, rendered by the real helm across the kube matrix: every handler
kind, every drain mode, each version gate with its fallback, and the no-shell case."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from typing import Any

import pytest

from generator import model
from generator.render import helm
from generator.invariants import role_container

VERSIONS = model.KUBE_VERSIONS


def deployment(objs: list[dict[str, Any]], role: str) -> dict[str, Any]:
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"].endswith(f"-{role}")]
    return dep


def container(objs: list[dict[str, Any]], role: str) -> dict[str, Any]:
    return role_container(deployment(objs, role))


def fail_message(**kwargs: Any) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(**kwargs)
    return info.value.message


HANDLERS = {
    "exec": {"command": ["celery", "-A", "app", "inspect", "ping"]},
    "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP", "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
    "tcpSocket": {"port": "http"},
    "grpc": {"port": 9090, "service": "health"},
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", sorted(HANDLERS))
def test_every_handler_kind_per_role_with_every_version_gate(kind: str, version: str) -> None:
    over = {"handlers": {"web": {"readinessProbe": {kind: HANDLERS[kind], "timeoutSeconds": 7},
                                 "livenessProbe": {"periodSeconds": 40, "failureThreshold": 4}}}}
    if kind == "grpc" and not model.at_least(version, model.GRPC_PROBE_MIN_VERSION):
        msg = fail_message(overrides=over, kube_version=version)
        assert "grpc probe" in msg and "JH015" in msg and "Fix:" in msg
        return
    objs = helm.render(overrides=over, kube_version=version)
    c = container(objs, "web")
    ready, live = c["readinessProbe"], c["livenessProbe"]
    assert ready[kind] == HANDLERS[kind] and ready["timeoutSeconds"] == 7
    # liveness borrows the role's readiness handler (and its timeout), keeps its own window
    assert live[kind] == HANDLERS[kind] and live["timeoutSeconds"] == 7
    assert (live["periodSeconds"], live["failureThreshold"]) == (40, 4)
    # the startupProbe gate and the liveness fallback apply to every kind
    start = c.get("startupProbe")
    if model.at_least(version, "1.18"):
        assert start is not None and start[kind] == HANDLERS[kind]
        assert live["initialDelaySeconds"] == 0
    else:
        assert start is None and live["initialDelaySeconds"] == 5 * 60
    # probe-level grace from 1.25, on liveness only
    assert live.get("terminationGracePeriodSeconds") == (30 if model.at_least(version, "1.25") else None)
    assert "terminationGracePeriodSeconds" not in ready
    # the other role keeps the chart-wide heartbeat probes
    assert container(objs, "job")["readinessProbe"]["exec"]["command"][:2] == ["sh", "-c"]


def test_heartbeat_glob_picks_the_newest_file(tmp_path) -> None:
    over = {"heartbeat": {"dir": str(tmp_path)},
            "handlers": {"web": {"readinessProbe": {"heartbeat": {"path": "heartbeat_*.log", "maxAgeSeconds": 30}}}}}
    script = container(helm.render(overrides=over), "web")["readinessProbe"]["exec"]["command"]
    run = lambda: subprocess.run(script, capture_output=True, text=True, check=False)  # noqa: E731
    first = run()
    assert first.returncode == 1 and "no heartbeat file yet" in first.stdout
    old, new = tmp_path / "heartbeat_main.1.log", tmp_path / "heartbeat_handler.2.log"
    old.write_text("x")
    stale = time.time() - 600
    os.utime(old, (stale, stale))
    only_old = run()
    assert only_old.returncode == 1 and re.search(r"not ready: heartbeat is 60[0-9]s old \(max 30s\)", only_old.stdout)
    new.write_text("x")  # the newest match counts
    assert run().returncode == 0, run().stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_drain_modes_and_their_version_gates(version: str) -> None:
    over = {"drain": {"preStopSeconds": 7},
            "handlers": {
                "web": {"drain": {"mode": "none"}, "command": None, "args": ["--graceful-timeout", "$(DRAIN_DEADLINE_SECONDS)"],
                        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}}},
                "job": {"drain": {"mode": "signal", "signal": "SIGTSTP"}}}}
    objs = helm.render(overrides=over, kube_version=version)
    web, job = container(objs, "web"), container(objs, "job")
    # none: no wrapper, the image's entrypoint, DRAIN_DEADLINE_SECONDS reaches the app as a flag
    assert "command" not in web and web["args"] == ["--graceful-timeout", "$(DRAIN_DEADLINE_SECONDS)"]
    assert any(e["name"] == "DRAIN_DEADLINE_SECONDS" for e in web["env"])
    native = model.at_least(version, model.NATIVE_SLEEP_MIN_VERSION)
    assert web["lifecycle"]["preStop"] == ({"sleep": {"seconds": 7}} if native else {"exec": {"command": ["sleep", "7"]}})
    # signal: the preStop sends the signal to PID 1, then waits; no wrapper
    assert job["lifecycle"]["preStop"]["exec"]["command"] == ["sh", "-c", "kill -s TSTP 1; sleep 7"]
    assert job["command"] == ["workload", "job"]
    # readiness without markers outside marker mode
    assert "stopping" not in json.dumps(job["readinessProbe"])


def test_command_mode_runs_the_apps_quiesce_command() -> None:
    over = {"handlers": {"job": {"drain": {"mode": "command", "command": ["app", "quiesce"]}}}}
    job = container(helm.render(overrides=over), "job")
    assert job["lifecycle"]["preStop"]["exec"]["command"] == ["sh", "-c", '"$@"; sleep 10', "drain", "app", "quiesce"]
    over["drain"] = {"preStopSeconds": 0}
    job = container(helm.render(overrides=over), "job")
    assert job["lifecycle"]["preStop"]["exec"]["command"] == ["app", "quiesce"]
    msg = fail_message(overrides={"handlers": {"job": {"drain": {"mode": "command"}}}})
    assert "drain.mode=command without a drain command" in msg and "JH020" in msg


@pytest.mark.parametrize("version", VERSIONS)
def test_stop_signal_only_where_the_cluster_honours_it(version: str) -> None:
    over = {"handlers": {"job": {"drain": {"mode": "none", "stopSignal": "SIGQUIT"}}}}
    msg = fail_message(overrides=over, kube_version=version)
    assert "JH019" in msg and "ContainerStopSignals" in msg
    over["drain"] = {"stopSignalFeatureGate": True}
    if not model.at_least(version, model.STOP_SIGNAL_MIN_VERSION):
        assert "JH019" in fail_message(overrides=over, kube_version=version)
        return
    dep = deployment(helm.render(overrides=over, kube_version=version), "job")
    assert role_container(dep)["lifecycle"]["stopSignal"] == "SIGQUIT"
    assert dep["spec"]["template"]["spec"]["os"] == {"name": "linux"}


def test_marker_mode_needs_a_command() -> None:
    msg = fail_message(overrides={"handlers": {"job": {"command": None}}})
    assert "drain.mode=marker wraps" in msg and "JH020" in msg


@pytest.mark.parametrize(("overrides", "path"), [
    ({"handlers": {"web": {"readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "tcpSocket": {"port": 8080}}}}},
     "/handlers/web/readinessProbe"),
    ({"handlers": {"job": {"enabled": False, "startupProbe": {"exec": {"command": ["true"]}, "grpc": {"port": 1}}}}},
     "/handlers/job/startupProbe"),
    ({"liveness": {"tcpSocket": {"port": 8080}, "heartbeat": {}}}, "/liveness"),
], ids=["role-readiness", "disabled-role-startup", "chart-wide-liveness"])
def test_two_handlers_in_one_probe_fail(overrides: dict[str, Any], path: str) -> None:
    """values.schema.json (oneProbeHandler): helm refuses a probe block naming two handlers,
    whatever block it is, and so does `jobhandlers check` (tests/unit/test_schema.py)."""
    msg = fail_message(overrides=overrides)
    assert "values don't meet the specifications of the schema" in msg
    assert f"at '{path}': 'not' failed" in msg, msg


def no_shell_values() -> dict[str, Any]:
    """A distroless app: http/tcp probes, SIGTERM drain, its own schema wait."""
    return {"drain": {"mode": "none"},
            "handlers": {"web": {"command": ["/app", "web"], "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}},
                         "job": {"command": ["/app", "job"], "readinessProbe": {"tcpSocket": {"port": 9000}}}}}


@pytest.mark.parametrize("version", VERSIONS)
def test_no_shell_in_the_handler_container_where_the_cluster_allows(version: str) -> None:
    objs = helm.render(overrides=no_shell_values(), kube_version=version)
    for role in ("web", "job"):
        c = container(objs, role)
        handlers = [c.get(f"{k}Probe") or {} for k in model.PROBE_KINDS] + [(c.get("lifecycle") or {}).get("preStop") or {}]
        argv0 = [(c.get("command") or ["<entrypoint>"])[0]] + [h["exec"]["command"][0] for h in handlers if "exec" in h]
        uses_shell = bool({"sh", "sleep"} & set(argv0))
        assert uses_shell == (not model.at_least(version, model.NATIVE_SLEEP_MIN_VERSION)), (role, version)
        assert model.needs_shell(helm_values(no_shell_values()), role, version) is False


def helm_values(over: dict[str, Any]) -> dict[str, Any]:
    from generator.values.merge import merged
    return merged(over)


def test_set_float_multiplier_renders_the_same_grace_with_helm_3_and_4() -> None:
    for major in (3, 4):
        binary = helm.find_helm(major)
        via_set = helm.render(set_values=["drain.runtimeMultiplier=1.5", "handlers.job.maxJobRuntimeSeconds=100"],
                              helm_binary=binary)
        via_file = helm.render(overrides={"drain": {"runtimeMultiplier": 1.5}, "handlers": {"job": {"maxJobRuntimeSeconds": 100}}},
                               helm_binary=binary)
        graces = [deployment(o, "job")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] for o in (via_set, via_file)]
        assert graces == [model.computed_grace(100, 1.5, 30, 10)] * 2, major
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(set_values=["drain.runtimeMultiplier=0.5"])
    assert "drain.runtimeMultiplier=0.5 is below 1" in info.value.message


def test_schema_wait_replaces_the_sh_loop_for_images_without_a_shell() -> None:
    over = {**no_shell_values(), "commands": {"schemaWait": ["/app", "db", "wait", "--timeout", "$(WAIT_TIMEOUT_SECONDS)"]},
            "migration": {"waitForDatabase": {"enabled": False}}}
    objs = helm.render(overrides=over, kube_version="1.34")
    init = deployment(objs, "job")["spec"]["template"]["spec"]["initContainers"][0]
    assert init["name"] == "wait-for-migrations" and init["command"][0] == "/app" and "args" not in init
    assert {"name": "WAIT_TIMEOUT_SECONDS", "value": "1200"} in init["env"]
    (job,) = helm.by_kind(objs, "Job")
    assert "initContainers" not in job["spec"]["template"]["spec"]


def test_signal_with_wait_for_exit_holds_sigterm_until_the_handler_is_gone() -> None:
    over = {"handlers": {"job": {"drain": {"mode": "signal", "signal": "INT", "waitForExit": True}}}}
    job = container(helm.render(overrides=over), "job")
    deadline = model.role_grace(helm_values(over), "job").drain_deadline
    assert job["lifecycle"]["preStop"]["exec"]["command"] == [
        "sh", "-c", f"kill -s INT 1; trap 'exit 143' TERM; trap 'exit 130' INT; "
        f"n=0; while kill -0 1 2>/dev/null && [ $n -lt {deadline} ]; do sleep 1 & wait $!; n=$((n + 1)); done"]
    assert model.role_drain(helm_values(over), "job").wait_for_exit is True
