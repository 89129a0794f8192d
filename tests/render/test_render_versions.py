"""Version gates on vendor-style and boundary version strings (the `-0` in semverCompare)."""

from __future__ import annotations

import pytest

from generator import model
from generator.render import helm
from generator.invariants import role_container


def handler_containers(objs):
    return [role_container(d) for d in helm.by_kind(objs, "Deployment")]


@pytest.mark.parametrize(
    ("version", "startup", "probe_grace", "pdb"),
    [
        ("v1.29.3-eks-1", True, True, "policy/v1"),
        ("v1.18.0-rc.1", True, False, "policy/v1beta1"),
        ("v1.17.17-gke.1", False, False, "policy/v1beta1"),
        ("v1.21.0-alpha.0", True, False, "policy/v1"),
        ("v1.24.9+k3s1", True, False, "policy/v1"),
        ("v1.25.0-0", True, True, "policy/v1"),
    ],
)
def test_vendor_versions(version, startup, probe_grace, pdb):
    assert model.at_least(version, "1.18") == startup  # the model agrees with the expectation
    objs = helm.render(kube_version=version)
    containers = handler_containers(objs)
    assert containers
    for c in containers:
        assert ("startupProbe" in c) is startup
        assert ("terminationGracePeriodSeconds" in c["livenessProbe"]) is probe_grace
        assert c["livenessProbe"]["initialDelaySeconds"] == (0 if startup else 300)
    assert {p["apiVersion"] for p in helm.by_kind(objs, "PodDisruptionBudget")} == {pdb}


def test_min_kube_version_is_configurable():
    objs = helm.render(kube_version="1.20", overrides={"startupProbe": {"minKubeVersion": "1.21"}})
    assert all("startupProbe" not in c for c in handler_containers(objs))
    objs = helm.render(kube_version="1.21", overrides={"startupProbe": {"minKubeVersion": "1.21"}})
    assert all("startupProbe" in c for c in handler_containers(objs))


def test_null_probe_grace_is_never_rendered():
    objs = helm.render(kube_version="1.34", overrides={"liveness": {"terminationGracePeriodSeconds": None}})
    assert all("terminationGracePeriodSeconds" not in c["livenessProbe"] for c in handler_containers(objs))


def test_disabled_startup_probe_gets_the_liveness_fallback():
    values = {"startupProbe": {"enabled": False, "periodSeconds": 4, "failureThreshold": 10}}
    objs = helm.render(kube_version="1.34", overrides=values)
    for c in handler_containers(objs):
        assert "startupProbe" not in c and c["livenessProbe"]["initialDelaySeconds"] == 40
