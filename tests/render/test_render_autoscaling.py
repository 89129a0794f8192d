"""Autoscaled roles (handlers.<role>.autoscaling): the HPA by version, the KEDA ScaledObject, no
replicas on an autoscaled workload, and the derived scale-down behavior equal to the model's."""

from __future__ import annotations

from typing import Any

import pytest

from generator import model
from generator.render import helm
from generator.values.merge import merged

from render_helpers import deep_merge as _merge

HPA: dict[str, Any] = {"handlers": {"job": {"autoscaling": {"hpa": {"enabled": True, "minReplicas": 2,
                                                                   "maxReplicas": 6}}}}}
KEDA: dict[str, Any] = {"handlers": {"job": {"autoscaling": {"keda": {
    "enabled": True, "pollingInterval": 20, "minReplicaCount": 0, "maxReplicaCount": 8,
    "triggers": [{"type": "postgresql", "metadata": {"query": "SELECT count(*) FROM jobs", "targetQueryValue": "4"}}]}}}}}


def render(overrides: dict[str, Any], kube_version: str = model.DEFAULT_KUBE_VERSION) -> list[dict]:
    return helm.render(overrides=overrides, kube_version=kube_version)


def _workload(objs: list[dict], role: str) -> dict:
    (w,) = [o for o in objs if o["kind"] in ("Deployment", "StatefulSet")
            and o["metadata"]["labels"]["app.kubernetes.io/component"] == role]
    return w


def test_off_by_default():
    objs = render({})
    assert not [o for o in objs if o["kind"] in ("HorizontalPodAutoscaler", "ScaledObject")]
    assert _workload(objs, "job")["spec"]["replicas"] == 1


@pytest.mark.parametrize("version", model.KUBE_VERSIONS)
def test_hpa_by_version_and_no_replicas(version: str):
    objs = render(HPA, version)
    (hpa,) = helm.by_kind(objs, "HorizontalPodAutoscaler")
    v2 = model.at_least(version, model.HPA_V2_MIN_VERSION)
    assert hpa["apiVersion"] == ("autoscaling/v2" if v2 else "autoscaling/v2beta2")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-jobhandlers-job"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert ("behavior" in hpa["spec"]) is model.at_least(version, model.HPA_BEHAVIOR_MIN_VERSION)
    assert "replicas" not in _workload(objs, "job")["spec"]
    assert _workload(objs, "web")["spec"]["replicas"] == 1


def test_statefulset_role_is_targeted_as_one():
    objs = render({"handlers": {"job": {"kind": "StatefulSet", "strategy": None,
                                        "autoscaling": HPA["handlers"]["job"]["autoscaling"]}}})
    (hpa,) = helm.by_kind(objs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "StatefulSet"
    assert "replicas" not in _workload(objs, "job")["spec"]


def test_keda_scaled_object_with_triggers_as_data():
    objs = render(KEDA)
    (so,) = helm.by_kind(objs, "ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    spec = so["spec"]
    assert (spec["pollingInterval"], spec["minReplicaCount"], spec["maxReplicaCount"]) == (20, 0, 8)
    assert spec["triggers"] == KEDA["handlers"]["job"]["autoscaling"]["keda"]["triggers"]
    assert not helm.by_kind(objs, "HorizontalPodAutoscaler")
    assert "replicas" not in _workload(objs, "job")["spec"]


@pytest.mark.parametrize("overrides", [
    {},
    {"handlers": {"job": {"maxJobRuntimeSeconds": 7200}}},  # grace above the HPA's 1800 s period cap
    {"handlers": {"job": {"pdb": {"maxUnavailable": 3}}}},
    {"handlers": {"job": {"pdb": {"maxUnavailable": "50%"}}}},
    {"drain": {"runtimeMultiplier": 2.5, "bufferSeconds": 7}},
])
@pytest.mark.parametrize("kind", ["hpa", "keda"])
def test_derived_scale_down_is_the_models(overrides: dict[str, Any], kind: str):
    """One source: the chart's derived scaleDown equals generator.model.derived_scale_down."""
    base = HPA if kind == "hpa" else KEDA
    values = _merge(base, overrides)
    objs = render(values)
    if kind == "hpa":
        (obj,) = helm.by_kind(objs, "HorizontalPodAutoscaler")
        got = obj["spec"]["behavior"]["scaleDown"]
    else:
        (obj,) = helm.by_kind(objs, "ScaledObject")
        got = obj["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    full = merged(values)
    want = model.derived_scale_down(full, "job", model.autoscaler_poll_seconds(full, "job", kind))
    assert got == want
    assert got["policies"][0]["periodSeconds"] <= 1800 and got["stabilizationWindowSeconds"] >= 300


def test_user_scale_down_replaces_the_derived_one():
    down = {"stabilizationWindowSeconds": 900, "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}
    objs = render(_merge(HPA, {"handlers": {"job": {"autoscaling": {"hpa": {"behavior": {"scaleDown": down}}}}}}))
    (hpa,) = helm.by_kind(objs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["behavior"] == {"scaleDown": down}


def test_both_autoscalers_refused():
    both = _merge(HPA, KEDA)
    with pytest.raises(helm.HelmRenderError) as info:
        render(both)
    assert "(jobhandlers check: JH055)" in info.value.message

