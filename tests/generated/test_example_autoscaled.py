# generated — do not edit. Source: values-examples/autoscaled.yaml (regenerate with `make gen-tests`).
# Expected values were computed by jobhandlers.model when this file was generated;
# `jobhandlers gen-tests --check` fails when they or the values file change. Needs only the
# jobhandlers package, pytest and helm (on PATH, or JOBHANDLERS_HELM=/path/to/helm).
"""Lifecycle invariants of values-examples/autoscaled.yaml rendered for every kube version of the matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobhandlers import helm
from jobhandlers.invariants import (
    HOOK_WEIGHT,
    annotations,
    command_line,
    deployments_by_role,
    env_value,
    hook_phases,
    init_container,
    migration_jobs,
    of_kind,
    pod_spec,
    role_container,
    secret_refs,
)

# the values file, relative to this test file
EXAMPLE = (Path(__file__).resolve().parent / '../../values-examples/autoscaled.yaml').resolve()
KUBE_VERSIONS = ['1.16', '1.17', '1.18', '1.20', '1.25', '1.28', '1.34', '1.37']
MIGRATION_ENABLED = True
HOOK_MODE = True
HOOK_WEIGHT_VALUE = -5
WAIT_FOR_MIGRATIONS = True
SCHEMA_CHECK = 'workload db check'
IMAGE_TAG = '1'
# role -> effective terminationGracePeriodSeconds, DRAIN_DEADLINE_SECONDS, PDB on/off.
ROLES = {
    'job': {'drain_deadline': 615, 'grace': 640, 'pdb': True},
    'web': {'drain_deadline': 45, 'grace': 70, 'pdb': True},
}
# kube version -> startupProbe rendered, liveness initialDelaySeconds, probe-level grace, PDB apiVersion.
PER_VERSION = {
    '1.16': {'liveness_initial_delay': 300, 'pdb_api_version': 'policy/v1beta1', 'probe_grace': None, 'startup_probe': False},
    '1.17': {'liveness_initial_delay': 300, 'pdb_api_version': 'policy/v1beta1', 'probe_grace': None, 'startup_probe': False},
    '1.18': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1beta1', 'probe_grace': None, 'startup_probe': True},
    '1.20': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1beta1', 'probe_grace': None, 'startup_probe': True},
    '1.25': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1', 'probe_grace': 30, 'startup_probe': True},
    '1.28': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1', 'probe_grace': 30, 'startup_probe': True},
    '1.34': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1', 'probe_grace': 30, 'startup_probe': True},
    '1.37': {'liveness_initial_delay': 0, 'pdb_api_version': 'policy/v1', 'probe_grace': 30, 'startup_probe': True},
}
# kube version -> role -> probe kind -> handler and thresholds (None: not rendered).
PROBES = {
    '1.16': {'job': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 300, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': None},
 'web': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 300, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': None}},
    '1.17': {'job': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 300, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': None},
 'web': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 300, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': None}},
    '1.18': {'job': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
    '1.20': {'job': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
    '1.25': {'job': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
    '1.28': {'job': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
    '1.34': {'job': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
    '1.37': {'job': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}},
 'web': {'liveness': {'failureThreshold': 3, 'grace': 30, 'handler': 'exec', 'heartbeat': True, 'initialDelaySeconds': 0, 'periodSeconds': 30, 'timeoutSeconds': 5},
         'readiness': {'failureThreshold': 1, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 5, 'timeoutSeconds': 2},
         'startup': {'failureThreshold': 300, 'grace': None, 'handler': 'exec', 'heartbeat': True, 'periodSeconds': 1, 'timeoutSeconds': 2}}},
}
# kube version -> role -> init container order, regular sidecars, drain adapter, node-loss toleration.
PODS = {
    '1.16': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.17': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.18': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.20': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.25': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.28': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.34': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
    '1.37': {'job': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': ['deletion-cost'], 'stop_signal': False},
 'web': {'drain_mode': 'marker', 'init_order': ['wait-for-migrations'], 'node_loss_toleration': 30, 'pre_stop': 'exec', 'regular_sidecars': [], 'stop_signal': False}},
}


@pytest.fixture(scope="module")
def helm_binary() -> str:
    """The helm these tests render with; a clear failure (never a skip) when there is none."""
    try:
        return str(helm.find_helm())
    except helm.HelmNotFoundError as exc:
        problem = str(exc)
    pytest.fail(f"{problem}: these generated tests render {EXAMPLE.name} with the real helm", pytrace=False)


@pytest.fixture(scope="module", params=KUBE_VERSIONS)
def rendered(request: pytest.FixtureRequest, helm_binary: str) -> tuple[str, list[dict[str, Any]]]:
    """The example rendered by the real helm for one kube version."""
    return request.param, helm.render([EXAMPLE], kube_version=request.param, helm_binary=helm_binary)


def test_roles_rendered(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = rendered
    assert sorted(deployments_by_role(objects)) == sorted(ROLES)


def test_migration_job_is_pre_install_pre_upgrade_hook(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = rendered
    jobs = migration_jobs(objects)
    assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
    assert hook_phases(jobs[0]) == {"pre-install", "pre-upgrade"}
    assert annotations(jobs[0])[HOOK_WEIGHT] == str(HOOK_WEIGHT_VALUE)

def test_migration_secret_is_an_earlier_hook(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    """The chart-created Secret the pre-install migration Job reads must itself be a hook
    with a lower weight, or the Job waits for a Secret helm creates only later."""
    _, objects = rendered
    job = migration_jobs(objects)[0]
    chart_secrets = {s["metadata"]["name"]: s for s in of_kind(objects, "Secret")}
    used = [chart_secrets[name] for name in sorted(secret_refs(pod_spec(job))) if name in chart_secrets]
    assert used, "the migration Job reads no chart-created Secret"
    for secret in used:
        assert {"pre-install", "pre-upgrade"} <= hook_phases(secret), secret["metadata"]["name"]
        assert int(annotations(secret)[HOOK_WEIGHT]) < HOOK_WEIGHT_VALUE, secret["metadata"]["name"]


def test_wait_for_migrations_gates_every_handler(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = rendered
    for role, deployment in deployments_by_role(objects).items():
        init = init_container(deployment)
        if not WAIT_FOR_MIGRATIONS:
            assert init is None, role
            continue
        assert init is not None, f"{role}: no wait-for-migrations init container"
        assert SCHEMA_CHECK in command_line(init), f"{role}: init container does not run {SCHEMA_CHECK!r}"


def test_grace_and_drain_deadline(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = rendered
    for role, deployment in deployments_by_role(objects).items():
        assert pod_spec(deployment)["terminationGracePeriodSeconds"] == ROLES[role]["grace"], role
        assert env_value(role_container(deployment), "DRAIN_DEADLINE_SECONDS") == str(ROLES[role]["drain_deadline"]), role


def test_probes_per_version(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    version, objects = rendered
    expected = PER_VERSION[version]
    for role, deployment in deployments_by_role(objects).items():
        container = role_container(deployment)
        assert ("startupProbe" in container) == expected["startup_probe"], role
        liveness = container["livenessProbe"]
        assert liveness.get("initialDelaySeconds", 0) == expected["liveness_initial_delay"], role
        assert liveness.get("terminationGracePeriodSeconds") == expected["probe_grace"], role


def test_probe_adapters_per_version(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    version, objects = rendered
    for role, deployment in deployments_by_role(objects).items():
        container = role_container(deployment)
        for kind, expected in PROBES[version][role].items():
            probe = container.get(f"{kind}Probe")
            if expected is None:
                assert probe is None, (role, kind)
                continue
            assert probe is not None, (role, kind)
            handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if k in probe]
            assert handlers == [expected["handler"]], (role, kind, handlers)
            if expected["heartbeat"]:
                assert probe["exec"]["command"][:2] == ["sh", "-c"] and "heartbeat" in probe["exec"]["command"][2]
            for key in ("periodSeconds", "failureThreshold", "timeoutSeconds"):
                assert probe[key] == expected[key], (role, kind, key)
            assert probe.get("terminationGracePeriodSeconds") == expected["grace"], (role, kind)
            if kind == "liveness":
                assert probe.get("initialDelaySeconds", 0) == expected["initialDelaySeconds"], role


def test_pod_shape_per_version(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    version, objects = rendered
    for role, deployment in deployments_by_role(objects).items():
        expected = PODS[version][role]
        spec = pod_spec(deployment)
        assert [c["name"] for c in spec.get("initContainers") or []] == expected["init_order"], role
        others = [c["name"] for c in spec["containers"] if c is not role_container(deployment)]
        assert others == expected["regular_sidecars"], role
        container = role_container(deployment)
        command = container.get("command") or []
        wrapper = command[:2] == ["sh", "-c"] and command[-1:] == ["handler"]
        assert wrapper == (expected["drain_mode"] == "marker"), role
        pre_stop = (container.get("lifecycle") or {}).get("preStop")
        assert (None if pre_stop is None else next(iter(pre_stop))) == expected["pre_stop"], role
        assert ("stopSignal" in (container.get("lifecycle") or {})) == expected["stop_signal"], role
        loss = {t["key"]: t.get("tolerationSeconds") for t in spec.get("tolerations") or []
                if t.get("key") in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")}
        if expected["node_loss_toleration"] is None:
            assert not loss, role
        else:
            assert set(loss.values()) == {expected["node_loss_toleration"]}, role


def test_pdb_api_version(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    version, objects = rendered
    pdbs = of_kind(objects, "PodDisruptionBudget")
    assert len(pdbs) == sum(1 for r in ROLES.values() if r["pdb"])
    assert {p["apiVersion"] for p in pdbs} <= {PER_VERSION[version]["pdb_api_version"]}
