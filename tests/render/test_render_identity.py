"""handlers.<role>.kind: StatefulSet — stable identities, with everything the Deployment path has."""

from __future__ import annotations

import pytest

from generator import model
from generator.render import helm
from render_helpers import env_map, init_container, kinds, main_container, pod_spec

STS = {"handlers": {"job": {"kind": "StatefulSet", "replicas": 2,
                            "args": ["--server-name", "$(JOBHANDLERS_POD_NAME)"]}}}


def _render(overrides: dict, version: str = "1.37") -> list[dict]:
    return helm.render(overrides=overrides, kube_version=version)


def _only(objs: list[dict], kind: str) -> dict:
    (obj,) = kinds(objs, kind)
    return obj


def fail_message(overrides: dict, version: str = "1.37") -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        _render(overrides, version)
    return info.value.message


def test_statefulset_keeps_the_deployment_lifecycle():
    """The same pod template as a Deployment of the role: wait-for-migrations, probes, grace,
    preStop drain, files checksum; plus the identity env and a governing headless Service."""
    objs = _render(STS)
    sts = _only(objs, "StatefulSet")
    base = {"handlers": {"job": {"replicas": 2, "args": ["--server-name", "x"]}}}
    dep = [d for d in kinds(_render(base), "Deployment") if d["metadata"]["name"].endswith("-job")][0]
    ps, pd = pod_spec(sts), pod_spec(dep)
    assert ps["terminationGracePeriodSeconds"] == pd["terminationGracePeriodSeconds"] == model.computed_grace(300, 1.0, 30, 10)
    wait_s, wait_d = init_container(sts, "wait-for-migrations"), init_container(dep, "wait-for-migrations")
    # the wait gets the handler's variables, identity included (a $(JOBHANDLERS_POD_NAME) in env resolves there too)
    ident = [e for e in wait_s["env"] if e["name"] in model.IDENTITY_ENV]
    assert [e["name"] for e in ident] == list(model.IDENTITY_ENV)
    assert {**wait_s, "env": [e for e in wait_s["env"] if e not in ident]} == wait_d
    cs, cd = main_container(sts), main_container(dep)
    for key in ("readinessProbe", "livenessProbe", "startupProbe", "lifecycle", "command", "securityContext"):
        assert cs.get(key) == cd.get(key), key
    assert cs["args"][-1] == "$(JOBHANDLERS_POD_NAME)"
    env = env_map(cs)
    assert env["JOBHANDLERS_POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["JOBHANDLERS_ORDINAL"] == {"fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}
    names = [e["name"] for e in cs["env"]]
    # the identity right after the role, as the env model lists it (chart env, before the user's)
    at = names.index("JOBHANDLERS_ROLE") + 1
    assert names[at:at + 2] == list(model.IDENTITY_ENV)
    assert sts["spec"]["replicas"] == 2
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    assert "strategy" not in sts["spec"]
    svc = [s for s in kinds(objs, "Service") if s["metadata"]["name"] == sts["spec"]["serviceName"]]
    assert len(svc) == 1 and svc[0]["spec"]["clusterIP"] == "None"
    assert svc[0]["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    pdbs = [p for p in kinds(objs, "PodDisruptionBudget") if p["spec"]["selector"] == sts["spec"]["selector"]]
    assert len(pdbs) == 1
    # the other role stays a Deployment
    assert [d["metadata"]["name"].rsplit("-", 1)[-1] for d in kinds(objs, "Deployment")] == ["web"]


def test_statefulset_name_leaves_room_for_the_revision_hash_label():
    objs = _render({**STS, "fullnameOverride": "x" * 60})
    name = _only(objs, "StatefulSet")["metadata"]["name"]
    assert len(name) <= 52 and not name.endswith("-")
    assert len(_only(objs, "StatefulSet")["spec"]["serviceName"]) <= 63


@pytest.mark.parametrize("version,ordinal", [("1.27", False), ("1.28", True), ("1.34", True)])
def test_ordinal_env_only_where_the_pod_index_label_exists(version: str, ordinal: bool):
    over = {"handlers": {"job": {"kind": "StatefulSet"}}}
    env = env_map(main_container(_only(_render(over, version), "StatefulSet")))
    assert "JOBHANDLERS_POD_NAME" in env
    assert ("JOBHANDLERS_ORDINAL" in env) is ordinal
    assert model.at_least(version, model.ORDINAL_MIN_VERSION) is ordinal


@pytest.mark.parametrize("version,kept", [("1.36", False), ("1.37", True)])
def test_max_unavailable_only_where_honoured(version: str, kept: bool):
    over = {"handlers": {"job": {"kind": "StatefulSet", "podManagementPolicy": "OrderedReady",
                                 "updateStrategy": {"rollingUpdate": {"partition": 1, "maxUnavailable": 2}}}}}
    sts = _only(_render(over, version), "StatefulSet")
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    ru = sts["spec"]["updateStrategy"]["rollingUpdate"]
    assert ru["partition"] == 1
    assert ("maxUnavailable" in ru) is kept
    assert model.at_least(version, model.STS_MAX_UNAVAILABLE_MIN_VERSION) is kept


def test_on_delete_carries_no_rolling_update():
    over = {"handlers": {"job": {"kind": "StatefulSet", "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}}}}
    assert _only(_render(over), "StatefulSet")["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_deployment_roles_get_no_identity_env():
    for dep in kinds(_render({}), "Deployment"):
        env = env_map(main_container(dep))
        assert "JOBHANDLERS_POD_NAME" not in env and "JOBHANDLERS_ORDINAL" not in env


@pytest.mark.parametrize("key,value", [("podManagementPolicy", "Parallel"), ("updateStrategy", {"type": "OnDelete"})])
def test_statefulset_keys_on_a_deployment_fail(key: str, value):
    msg = fail_message({"handlers": {"job": {key: value}}})
    assert f"handlers.job.{key} is set, but the role is a Deployment" in msg and "JH023" in msg


@pytest.mark.parametrize("var", ["JOBHANDLERS_POD_NAME", "JOBHANDLERS_ORDINAL"])
def test_identity_vars_in_a_deployment_fail(var: str):
    msg = fail_message({"handlers": {"job": {"args": [f"--name=$({var})"]}}})
    assert f"uses $({var}), which only StatefulSet roles get" in msg and "JH025" in msg


def test_ordinal_below_1_28_fails_pod_name_renders():
    over = {"handlers": {"job": {"kind": "StatefulSet", "args": ["$(JOBHANDLERS_ORDINAL)"]}}}
    msg = fail_message(over, "1.27")
    assert "1.28" in msg and "JH025" in msg and "$(JOBHANDLERS_POD_NAME)" in msg
    over["handlers"]["job"]["args"] = ["$(JOBHANDLERS_POD_NAME)"]
    assert _only(_render(over, "1.27"), "StatefulSet")


@pytest.mark.parametrize("version", model.KUBE_VERSIONS)
def test_statefulset_renders_on_every_matrix_version(version: str):
    """StatefulSet roles: apps/v1 everywhere the chart renders (apps/v1 StatefulSet is GA since 1.9)."""
    sts = _only(_render({"handlers": {"job": {"kind": "StatefulSet"}}}, version), "StatefulSet")
    assert sts["apiVersion"] == "apps/v1"


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_the_kind_switch_guard_is_silent_in_helm_template(kind):
    """JH061 (templates/_kindswitch.tpl) asks the cluster through helm's lookup, which `helm template`
    answers with nothing: any kind renders, and `kindSwitch.allowOverlap` renders nothing of its own
    (tests/apiserver/test_apiserver_kind_switch.py: the guard in real upgrades)."""
    plain = helm.render_text(overrides={"handlers": {"job": {"kind": kind}}}, kube_version="1.37")
    acked = helm.render_text(overrides={"handlers": {"job": {"kind": kind, "kindSwitch": {"allowOverlap": True}}}},
                             kube_version="1.37")
    assert plain == acked
    assert kinds(helm.parse_manifests(plain), kind)
