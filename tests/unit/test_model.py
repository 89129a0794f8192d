"""generator.model: the numbers every other part relies on."""

from __future__ import annotations

from generator import model
from generator.values import merged


def test_version_parsing() -> None:
    assert model.version_tuple("v1.29.3-eks-1") == (1, 29)
    assert model.version_tuple("1.37") == (1, 37)
    assert model.at_least("1.25", "1.25") and not model.at_least("1.24", "1.25")
    assert model.DEFAULT_KUBE_VERSION in model.KUBE_VERSIONS


def test_computed_grace_rounds_like_helm() -> None:
    assert model.computed_grace(100, 1.1, 30, 10) == 150  # not 151
    assert model.computed_grace(300, 1.0, 30, 10) == 340
    assert model.computed_grace(7, 1.5, 0, 0) == 11


def test_default_roles() -> None:
    values = merged({})
    assert model.enabled_roles(values) == ["job", "web"]
    job = model.role_grace(values, "job")
    assert (job.computed, job.effective, job.drain_deadline) == (340, 340, 315)
    web = model.role_grace(values, "web")
    assert (web.computed, web.drain_deadline) == (70, 45)


def test_per_version_decisions() -> None:
    values = merged({})
    assert [model.startup_probe_rendered(values, v) for v in ("1.16", "1.17", "1.18")] == [False, False, True]
    assert model.liveness_initial_delay(values, "1.17") == 300 and model.liveness_initial_delay(values, "1.18") == 0
    assert model.probe_grace(values, "1.24") is None and model.probe_grace(values, "1.25") == 30
    assert model.pdb_api_version("1.20") == "policy/v1beta1" and model.pdb_api_version("1.21") == "policy/v1"
    forced = merged({"startupProbe": {"force": True, "featureGateEnabled": True}})
    assert model.startup_probe_rendered(forced, "1.16")
