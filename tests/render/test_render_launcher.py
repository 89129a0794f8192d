"""Launching roles (handlers.<role>.launcher, docs/launching.md): the role's own ServiceAccount,
Role and RoleBinding, its token in the handler container alone, API server egress, the
MutatingAdmissionPolicy by version, and what the chart refuses (JH044-JH047)."""

from __future__ import annotations

from typing import Any

import pytest

from generator import model
from generator.render import helm

LAUNCH: dict[str, Any] = {"handlers": {"job": {"launcher": {"enabled": True}}}}
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
NP_ON: dict[str, Any] = {"enabled": True, "database": {"to": [{"ipBlock": {"cidr": "10.20.0.5/32"}}]}}


def _launch(**launcher: Any) -> dict[str, Any]:
    return {"handlers": {"job": {"launcher": {"enabled": True, **launcher}}}}


def render(overrides: dict[str, Any], kube_version: str = model.DEFAULT_KUBE_VERSION) -> list[dict]:
    return helm.render(overrides=overrides, kube_version=kube_version)


def fail_message(overrides: dict[str, Any], kube_version: str = model.DEFAULT_KUBE_VERSION) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        render(overrides, kube_version)
    return info.value.message


def _pod(objs: list[dict], role: str) -> dict[str, Any]:
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["labels"]["app.kubernetes.io/component"] == role]
    return dep["spec"]["template"]["spec"]


def test_defaults_render_no_launcher_objects():
    objs = render({})
    assert not [o for o in objs if o["kind"] in ("Role", "RoleBinding", "MutatingAdmissionPolicy")]
    assert sorted(s["metadata"]["name"] for s in helm.by_kind(objs, "ServiceAccount")) == \
        ["demo-jobhandlers", "demo-jobhandlers-migration"]


def test_launching_role_gets_its_own_account_default_rules_and_binding():
    objs = render(LAUNCH)
    (role,) = helm.by_kind(objs, "Role")
    assert role["metadata"] == {**role["metadata"], "name": "demo-jobhandlers-job", "namespace": "demo"}
    assert role["rules"] == model.LAUNCHER_DEFAULT_RULES
    (binding,) = helm.by_kind(objs, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "demo-jobhandlers-job"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "demo-jobhandlers-job", "namespace": "demo"}]
    (sa,) = [s for s in helm.by_kind(objs, "ServiceAccount") if s["metadata"]["name"] == "demo-jobhandlers-job"]
    assert sa["automountServiceAccountToken"] is False
    assert _pod(objs, "job")["serviceAccountName"] == "demo-jobhandlers-job"
    # web does not launch: the shared account, no token
    web = _pod(objs, "web")
    assert web["serviceAccountName"] == "demo-jobhandlers" and web["automountServiceAccountToken"] is False
    assert all(v["name"] != "launcher-token" for v in web["volumes"])


def test_token_only_in_the_handler_container_laid_out_as_the_automounted_one():
    objs = render({**_launch(), "sidecars": [{"name": "proxy", "image": "proxy:1"}],
                   "extraInitContainers": [{"name": "render-config", "image": "busybox:1"}]})
    pod = _pod(objs, "job")
    assert pod["automountServiceAccountToken"] is False
    with_token = [c["name"] for c in pod.get("initContainers", []) + pod["containers"]
                  if any(m["name"] == "launcher-token" for m in c.get("volumeMounts") or [])]
    assert with_token == ["job"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "launcher-token"]
    assert mount == {"name": "launcher-token", "mountPath": TOKEN_PATH, "readOnly": True}
    (vol,) = [v for v in pod["volumes"] if v["name"] == "launcher-token"]
    sources = vol["projected"]["sources"]
    # 3607 s: the API server extends exactly this expiration to a year (pykube reads the token once)
    assert sources[0]["serviceAccountToken"] == {"path": "token", "expirationSeconds": 3607}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["path"] == "namespace"
    # the migration Job keeps no token
    for job in helm.by_kind(objs, "Job"):
        assert job["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("version", model.KUBE_VERSIONS)
def test_token_per_kube_version(version: str):
    """Projected into the handler container from 1.21 (kube-root-ca.crt, KEP-1205); below, automounted (JH049)."""
    pod = _pod(render(LAUNCH, version), "job")
    projected = model.at_least(version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION)
    assert pod["automountServiceAccountToken"] is (not projected)
    assert any(v["name"] == "launcher-token" for v in pod["volumes"]) is projected


def test_role_and_binding_in_the_launch_namespace():
    objs = render(_launch(namespace="galaxy-jobs", rules=[{"apiGroups": ["batch"], "resources": ["jobs"],
                                                           "verbs": ["create", "get"]}]))
    (role,) = helm.by_kind(objs, "Role")
    (binding,) = helm.by_kind(objs, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "galaxy-jobs"
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]}]
    assert binding["subjects"][0]["namespace"] == "demo"


def test_networkpolicy_lets_only_the_launching_role_reach_the_api_server():
    api = {"to": [{"ipBlock": {"cidr": "172.18.0.2/32"}}], "ports": [{"port": 6443, "protocol": "TCP"}]}
    objs = render({**LAUNCH, "networkPolicy": {**NP_ON, "apiServer": api}})
    policies = {p["metadata"]["name"]: p for p in helm.by_kind(objs, "NetworkPolicy")}
    job_egress = policies["demo-jobhandlers-job"]["spec"]["egress"]
    assert {"to": api["to"], "ports": api["ports"]} in job_egress
    for name in ("demo-jobhandlers-web", "demo-jobhandlers-migration", "demo-jobhandlers-helm-test"):
        assert all(rule.get("to") != api["to"] for rule in policies[name]["spec"]["egress"]), name


@pytest.mark.parametrize("version", model.KUBE_VERSIONS)
def test_mutating_admission_policy_only_from_1_36(version: str):
    overrides = _launch(podSecurity={"enforce": "restricted", "podsMeet": "restricted", "mutate": True,
                                     "podSelector": {"app": "launched"}})
    objs = render(overrides, version)
    policies = helm.by_kind(objs, "MutatingAdmissionPolicy")
    bindings = helm.by_kind(objs, "MutatingAdmissionPolicyBinding")
    on = model.at_least(version, model.MUTATING_ADMISSION_POLICY_MIN_VERSION)
    assert len(policies) == len(bindings) == (1 if on else 0)
    if on:
        assert policies[0]["apiVersion"] == "admissionregistration.k8s.io/v1"
        spec = bindings[0]["spec"]
        assert spec["policyName"] == policies[0]["metadata"]["name"] == "demo-demo-jobhandlers-job"
        assert spec["matchResources"]["objectSelector"] == {"matchLabels": {"app": "launched"}}
        assert spec["matchResources"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "demo"}}
        mutations = policies[0]["spec"]["mutations"]
        assert [m["patchType"] for m in mutations] == ["ApplyConfiguration", "JSONPatch"]
        expr = mutations[0]["applyConfiguration"]["expression"] + mutations[1]["jsonPatch"]["expression"]
        for field in ("runAsNonRoot: true", '"RuntimeDefault"', "allowPrivilegeEscalation: false", 'drop: ["ALL"]'):
            assert field in expr


@pytest.mark.parametrize(("overrides", "version", "rule"), [
    (_launch(rules=[]), model.DEFAULT_KUBE_VERSION, "JH044"),
    ({"handlers": {"job": {"launcher": {"namespace": "jobs"}}}}, model.DEFAULT_KUBE_VERSION, "JH045"),
    ({**LAUNCH, "networkPolicy": NP_ON}, model.DEFAULT_KUBE_VERSION, "JH046"),
    (_launch(podSecurity={"podsMeet": "baseline"}), model.DEFAULT_KUBE_VERSION, "JH047"),
    (_launch(podSecurity={"podsMeet": "baseline", "mutate": True, "podSelector": {"a": "b"}}), "1.34", "JH047"),
    (_launch(podSecurity={"podsMeet": "baseline", "mutate": True}), model.DEFAULT_KUBE_VERSION, "JH047"),
    (_launch(podSecurity={"podsMeet": "privileged", "mutate": True, "podSelector": {"a": "b"}}),
     model.DEFAULT_KUBE_VERSION, "JH047"),
])
def test_refused_with_the_rule_id(overrides: dict[str, Any], version: str, rule: str):
    message = fail_message(overrides, version)
    assert f"(jobhandlers check: {rule})" in message and "Fix:" in message


@pytest.mark.parametrize("overrides", [
    _launch(podSecurity={"podsMeet": "baseline", "enforce": "baseline"}, namespace="jobs"),
    _launch(podSecurity={"podsMeet": "baseline", "mutate": True, "podSelector": {"a": "b"}}),
    {**LAUNCH, "networkPolicy": {**NP_ON, "extraEgress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}},
])
def test_accepted_combinations(overrides: dict[str, Any]):
    assert render(overrides)
