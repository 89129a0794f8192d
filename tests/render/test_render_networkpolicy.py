"""networkPolicy (opt-in): off renders nothing; on, one NetworkPolicy per enabled role, one for the
migration pods and one for the helm test pod, on every version of the matrix (the DNS peer's
namespace label is gated at 1.21); JH041 is refused by the chart and by `check` alike."""

from __future__ import annotations

from typing import Any

import pytest

from generator import model
from generator.render import helm
from generator.rules import check
from generator.values.full import parse_values
from render_helpers import VERSIONS, kinds, migration_job

DB_PEER = {"ipBlock": {"cidr": "10.20.0.5/32"}}
ON: dict[str, Any] = {"networkPolicy": {"enabled": True, "database": {"to": [DB_PEER]}}}
RELEASE_PEER = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jobhandlers",
                                                "app.kubernetes.io/instance": model.RELEASE_NAME}}}
NAMESPACE_LABEL_MIN = "1.21"  # chart/lifecycle.yaml gates.namespaceNameLabel (KEP-2161)


def policies(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """NetworkPolicy name suffix (role, migration, helm-test) -> object."""
    return {o["metadata"]["name"].partition("-jobhandlers-")[2]: o for o in kinds(objs, "NetworkPolicy")}


def selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    return policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()


def egress_ports(policy: dict[str, Any], peer: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted((p["protocol"], p["port"]) for rule in policy["spec"]["egress"] if peer in rule.get("to", [])
                  for p in rule.get("ports", []))


def test_off_by_default_renders_no_policy_and_the_same_bytes():
    default = helm.render_text()
    assert "kind: NetworkPolicy" not in default
    assert helm.render_text(overrides={"networkPolicy": {"enabled": False, "database": {"to": [DB_PEER]}}}) == default


@pytest.mark.parametrize("version", VERSIONS)
def test_every_chart_pod_is_selected_and_reaches_database_and_dns(version):
    objs = helm.render(overrides=ON, kube_version=version)
    pols = policies(objs)
    deps = {d["metadata"]["name"].partition("-jobhandlers-")[2]: d for d in kinds(objs, "Deployment")}
    assert sorted(pols) == sorted([*deps, "migration", "helm-test"])
    job, (test_pod,) = migration_job(objs), kinds(objs, "Pod")
    assert selects(pols["migration"], job["spec"]["template"]["metadata"]["labels"])
    assert selects(pols["helm-test"], test_pod["metadata"]["labels"])
    ns = ({"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
          if model.at_least(version, NAMESPACE_LABEL_MIN) else {})
    dns_peer = {"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "namespaceSelector": ns}
    for name, pol in pols.items():
        assert pol["apiVersion"] == "networking.k8s.io/v1"
        assert pol["spec"]["policyTypes"] == ["Ingress", "Egress"], name
        assert egress_ports(pol, DB_PEER) == [("TCP", 5432)], name
        assert egress_ports(pol, dns_peer) == [("TCP", 53), ("UDP", 53)], name
        assert {"to": [RELEASE_PEER]} in pol["spec"]["egress"], name
        for rule in pol["spec"].get("ingress", []):
            assert rule.get("from"), f"{name}: an ingress rule without from admits every source"
    for role, dep in deps.items():
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert selects(pols[role], pod_labels) and not selects(pols[role], test_pod["metadata"]["labels"])
        ports = [p["containerPort"] for c in dep["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
        expected = [{"from": [RELEASE_PEER], "ports": [{"port": p, "protocol": "TCP"} for p in ports]}] if ports else []
        assert pols[role]["spec"]["ingress"] == expected, role
    assert pols["migration"]["spec"]["ingress"] == [] and pols["helm-test"]["spec"]["ingress"] == []


def test_namespace_label_gate_boundary():
    def ns_selector(version: str) -> dict[str, Any]:
        pol = policies(helm.render(overrides=ON, kube_version=version))["web"]
        (dns,) = [r for r in pol["spec"]["egress"] if {"protocol": "UDP", "port": 53} in r.get("ports", [])]
        return dns["to"][0]["namespaceSelector"]
    assert ns_selector("1.20") == {}
    assert ns_selector("v1.21.0-eks-1") == ns_selector("1.21") == {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}


def test_user_peers_rules_and_role_extras():
    ingress_ns = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress"}}}
    web_peer = {"podSelector": {"matchLabels": {"app": "proxy"}}}
    broker = {"to": [{"ipBlock": {"cidr": "10.30.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 5672}]}
    metrics = {"from": [{"podSelector": {"matchLabels": {"app": "prometheus"}}}], "ports": [{"port": 9100}]}
    resolver = [{"ipBlock": {"cidr": "169.254.20.10/32"}}]
    over = {"networkPolicy": {"enabled": True, "allowRelease": False, "database": {"to": [DB_PEER]},
                              "ingress": {"from": [ingress_ns]}, "extraEgress": [broker],
                              "dns": {"to": resolver}},
            "handlers": {"web": {"extraPorts": [{"name": "metrics", "containerPort": 9100}],
                                 "networkPolicy": {"ingress": {"from": [web_peer]}, "extraIngress": [metrics]}},
                         "job": {"networkPolicy": {"extraEgress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]}}}}
    pols = policies(helm.render(overrides=over))
    web, job, mig = pols["web"], pols["job"], pols["migration"]
    assert web["spec"]["ingress"] == [
        {"from": [ingress_ns, web_peer], "ports": [{"port": 8080, "protocol": "TCP"}, {"port": 9100, "protocol": "TCP"}]},
        metrics]
    assert job["spec"]["ingress"] == []  # no port, no extraIngress of its own: nothing may connect
    assert egress_ports(web, resolver[0]) == [("TCP", 53), ("UDP", 53)]
    for pol in (web, job, mig):
        assert broker in pol["spec"]["egress"]
        assert all(RELEASE_PEER not in r.get("to", []) for r in pol["spec"]["egress"])
    assert {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]} in job["spec"]["egress"]
    assert {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]} not in web["spec"]["egress"]


def test_dns_off_and_disabled_parts_render_no_policy_for_them():
    over = {"networkPolicy": {"enabled": True, "database": {"to": [DB_PEER]}, "dns": {"enabled": False}},
            "migration": {"enabled": False}, "helmTest": {"enabled": False}, "handlers": {"job": {"enabled": False}}}
    pols = policies(helm.render(overrides=over))
    assert sorted(pols) == ["web"]
    assert all(53 not in [p["port"] for p in r.get("ports", [])] for r in pols["web"]["spec"]["egress"])


def test_no_database_egress_is_refused_by_chart_and_check(tmp_path):
    over = {"networkPolicy": {"enabled": True}}
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(overrides=over)
    assert "networkPolicy.database.to is empty" in info.value.message and "(jobhandlers check: JH041)" in info.value.message
    assert [f.rule for f in check(parse_values("networkPolicy:\n  enabled: true\n", "v.yaml"), "1.37")] == ["JH041"]
    # the user's own egress rules are trusted to reach the database
    extra = {"networkPolicy": {"enabled": True, "extraEgress": [{"to": [DB_PEER]}]}}
    assert policies(helm.render(overrides=extra))
