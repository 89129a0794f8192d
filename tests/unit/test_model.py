"""generator.model: the numbers every other part relies on."""

from __future__ import annotations

from generator import model
from generator.values.merge import merged


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


def test_image_reference_and_version_label() -> None:
    digest = "sha256:" + "ab" * 32
    assert model.image_reference(merged({}), "1") == "jobhandlers/workload:1"
    assert model.image_reference(merged({"image": {"tag": ""}}), "7") == "jobhandlers/workload:7"
    assert model.image_reference(merged({"image": {"digest": digest}}), "1") == f"jobhandlers/workload@{digest}"
    assert model.version_label("1.2.3") == "1.2.3"
    assert model.version_label(f"1@{digest}") == f"1_sha256_{'ab' * 32}"[:63]
    assert model.version_label("-v1+b-") == "v1_b" and len(model.version_label("x" * 200)) == 63


def test_version_gated_policies() -> None:
    values = merged({})
    assert [model.pdb_unhealthy_pod_eviction_policy(values, "web", v) for v in ("1.26", "1.27", "1.31")] == [
        None, "AlwaysAllow", "AlwaysAllow"]
    own = merged({"handlers": {"job": {"pdb": {"unhealthyPodEvictionPolicy": "IfHealthyBudget"}}}})
    assert model.pdb_unhealthy_pod_eviction_policy(own, "job", "1.27") == "IfHealthyBudget"
    assert model.pdb_unhealthy_pod_eviction_policy(merged({"pdb": {"unhealthyPodEvictionPolicy": None}}),
                                                   "web", "1.34") is None
    assert [model.migration_pod_replacement_policy(values, v) for v in ("1.28", "1.29")] == [None, "Failed"]
    assert model.migration_pod_replacement_policy(merged({"migration": {"podReplacementPolicy": None}}), "1.34") is None


def test_owned_resources_fall_back_to_default_resources() -> None:
    values = merged({})
    owned = model.owned_resources(values)
    floor = {"requests": {"cpu": "10m", "memory": "64Mi"}}
    assert owned["role job"][1] == {"requests": {"cpu": "100m", "memory": "128Mi"}}
    assert {k: v[1] for k, v in owned.items() if k != "role job"} == {
        "role web": floor, "wait-for-migrations": floor, "the migration Job": floor, "the helm test pod": floor}
    limits = merged({"handlers": {"web": {"resources": {"limits": {"memory": "1Gi"}}}}})
    assert model.owned_resources(limits)["role web"][1] == {"limits": {"memory": "1Gi"}}
