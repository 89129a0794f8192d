"""Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle, README: Autoscaling): the
deletion-cost container and its busy signal, the role's ServiceAccount, Role and RoleBinding, the
token in that container alone, the ValidatingAdmissionPolicy by version (1.30), API server egress,
and what the chart refuses (JH071, JH046)."""

from __future__ import annotations

from typing import Any

import pytest

from generator import lifecycle, model
from generator.render import helm

SCALE_IN = lifecycle.DATA["scaleIn"]
TOKEN_PATH = lifecycle.DATA["launcher"]["tokenPath"]
NP_ON: dict[str, Any] = {"enabled": True, "database": {"to": [{"ipBlock": {"cidr": "10.20.0.5/32"}}]}}


def _prefer(**prefer: Any) -> dict[str, Any]:
    return {"handlers": {"job": {"scaleIn": {"preferIdle": {"enabled": True, **prefer}}}}}


def render(overrides: dict[str, Any], kube_version: str = model.DEFAULT_KUBE_VERSION) -> list[dict]:
    return helm.render(overrides=overrides, kube_version=kube_version)


def _pod(objs: list[dict], role: str) -> dict[str, Any]:
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["labels"]["app.kubernetes.io/component"] == role]
    return dep["spec"]["template"]["spec"]


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    (c,) = [c for c in pod["containers"] if c["name"] == SCALE_IN["container"]]
    return c


def test_off_by_default():
    objs = render({})
    assert not [o for o in objs if o["kind"] in ("Role", "RoleBinding", "ValidatingAdmissionPolicy")]
    for role in ("web", "job"):
        assert [c["name"] for c in _pod(objs, role)["containers"]] == [role]


def test_the_container_reads_the_busy_file_and_patches_its_own_pod():
    objs = render(_prefer())
    pod = _pod(objs, "job")
    assert [c["name"] for c in pod["containers"]] == ["job", SCALE_IN["container"]]
    c = _container(pod)
    script = c["command"][2]
    assert c["command"][:2] == ["sh", "-c"]
    assert "for f in /run/jobhandlers/busy; do" in script
    assert f"want={SCALE_IN['busyCost']}; state=busy; else want={SCALE_IN['idleCost']}; state=idle" in script
    assert SCALE_IN["annotation"] in script and "sleep 5 & wait $!" in script
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]} == \
        {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert c["image"] == pod["containers"][0]["image"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {m["name"]: m.get("readOnly") for m in c["volumeMounts"]} == {"state": True, "deletion-cost-token": True}
    assert c["resources"] == {"requests": {"cpu": "10m", "memory": "64Mi"}}  # defaultResources


def test_busy_command_costs_period_and_image():
    objs = render(_prefer(busyCommand=["sh", "-c", "test -n \"$(ls /run/jobhandlers/work-* 2>/dev/null)\" && echo it's busy"],
                          busyCost=7, idleCost=-3, periodSeconds=2, image="tools/curl:8"))
    c = _container(_pod(objs, "job"))
    script = c["command"][2]
    assert "'sh' '-c' 'test -n \"$(ls /run/jobhandlers/work-* 2>/dev/null)\" && echo it'\\''s busy' >/dev/null 2>&1" in script
    assert "for f in" not in script
    assert "want=7; state=busy; else want=-3; state=idle" in script and "sleep 2 & wait $!" in script
    assert c["image"] == "tools/curl:8"


def test_the_token_is_in_the_deletion_cost_container_only():
    objs = render(_prefer())
    pod = _pod(objs, "job")
    assert pod["serviceAccountName"] == "demo-jobhandlers-job" and pod["automountServiceAccountToken"] is False
    (vol,) = [v for v in pod["volumes"] if v["name"] == "deletion-cost-token"]
    assert [s for s in vol["projected"]["sources"] if "serviceAccountToken" in s]
    mount = [m for m in _container(pod)["volumeMounts"] if m["name"] == "deletion-cost-token"]
    assert mount == [{"name": "deletion-cost-token", "mountPath": TOKEN_PATH, "readOnly": True}]
    for c in [*pod["containers"], *pod.get("initContainers", [])]:
        if c["name"] != SCALE_IN["container"]:
            assert all(m["name"] != "deletion-cost-token" for m in c.get("volumeMounts", [])), c["name"]
    # the web role keeps the shared account and no token
    web = _pod(objs, "web")
    assert web["serviceAccountName"] == "demo-jobhandlers" and web["automountServiceAccountToken"] is False


def test_rbac_patch_pods_bound_to_the_roles_account():
    objs = render(_prefer())
    (sa,) = [s for s in helm.by_kind(objs, "ServiceAccount") if s["metadata"]["name"] == "demo-jobhandlers-job"]
    assert sa["automountServiceAccountToken"] is False
    (role,) = helm.by_kind(objs, "Role")
    assert role["metadata"]["name"] == "demo-jobhandlers-job-deletion-cost" and role["rules"] == SCALE_IN["rules"]
    (binding,) = helm.by_kind(objs, "RoleBinding")
    assert binding["roleRef"]["name"] == "demo-jobhandlers-job-deletion-cost"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "demo-jobhandlers-job", "namespace": "demo"}]


def test_with_a_launcher_one_account_two_roles():
    objs = render({"handlers": {"job": {"launcher": {"enabled": True}, "scaleIn": {"preferIdle": {"enabled": True}}}}})
    assert [s["metadata"]["name"] for s in helm.by_kind(objs, "ServiceAccount")].count("demo-jobhandlers-job") == 1
    assert sorted(r["metadata"]["name"] for r in helm.by_kind(objs, "Role")) == \
        ["demo-jobhandlers-job", "demo-jobhandlers-job-deletion-cost"]


@pytest.mark.parametrize("kube_version", model.KUBE_VERSIONS)
def test_the_admission_policy_by_version(kube_version: str):
    objs = render(_prefer(), kube_version)
    vaps = helm.by_kind(objs, "ValidatingAdmissionPolicy")
    bindings = helm.by_kind(objs, "ValidatingAdmissionPolicyBinding")
    pod = _pod(objs, "job")
    if not model.at_least(kube_version, model.DELETION_COST_POLICY_MIN_VERSION):
        assert not vaps and not bindings
    else:
        (vap,) = vaps
        (binding,) = bindings
        assert vap["metadata"]["name"] == "demo-demo-jobhandlers-job-deletion-cost"
        assert vap["spec"]["matchConditions"][0]["expression"] == \
            "request.userInfo.username == 'system:serviceaccount:demo:demo-jobhandlers-job'"
        assert vap["spec"]["matchConstraints"]["resourceRules"][0]["operations"] == ["UPDATE"]
        assert binding["spec"]["policyName"] == vap["metadata"]["name"]
        assert binding["spec"]["validationActions"] == ["Deny"]
    projected = model.at_least(kube_version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION)
    assert pod["automountServiceAccountToken"] is (not projected)
    assert any(v["name"] == "deletion-cost-token" for v in pod["volumes"]) is projected


def test_api_server_egress_under_a_network_policy():
    objs = render({**_prefer(), "networkPolicy": {**NP_ON, "apiServer": {"to": [{"ipBlock": {"cidr": "172.18.0.2/32"}}]}}})
    (pol,) = [p for p in helm.by_kind(objs, "NetworkPolicy") if p["metadata"]["name"] == "demo-jobhandlers-job"]
    assert any(peer.get("ipBlock", {}).get("cidr") == "172.18.0.2/32" for rule in pol["spec"]["egress"] for peer in rule.get("to", []))


def test_refused_on_a_statefulset_and_without_api_egress():
    with pytest.raises(helm.HelmRenderError) as info:
        render({"handlers": {"job": {"kind": "StatefulSet", "scaleIn": {"preferIdle": {"enabled": True}}}}})
    assert "(jobhandlers check: JH071)" in info.value.message
    with pytest.raises(helm.HelmRenderError) as info:
        render({**_prefer(), "networkPolicy": NP_ON})
    assert "sets its pod-deletion-cost" in info.value.message and "(jobhandlers check: JH046)" in info.value.message
