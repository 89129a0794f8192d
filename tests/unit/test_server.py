"""generator.check.server (`check --server`) without a cluster: the server's Status and Warning headers
as findings."""

from __future__ import annotations

import json

from generator.check import server
from generator.cli import main


def test_status_causes_become_fields() -> None:
    body = json.dumps({"kind": "Status", "reason": "Invalid", "message": "x is invalid", "details": {"causes": [
        {"field": "spec.egress[0].to[0].ipBlock.cidr", "message": "Invalid value: must be a valid CIDR value"}]}})
    assert server._refusal(422, body) == ("Invalid", [("spec.egress[0].to[0].ipBlock.cidr",
                                                       "Invalid value: must be a valid CIDR value")])
    assert server._refusal(403, json.dumps({"reason": "Forbidden", "message": "no"})) == ("Forbidden", [("", "no")])
    assert server._refusal(502, "<html>bad gateway</html>") == ("", [("", "<html>bad gateway</html>")])


def test_field_parts() -> None:
    assert server._field_parts("spec.template.spec.containers[0].env[1].name") == [
        "spec", "template", "spec", "containers", 0, "env", 1, "name"]


def test_pod_security_warning_is_an_error_where_enforced() -> None:
    header = '299 - "would violate PodSecurity \\"restricted:latest\\": runAsNonRoot != true"'
    enforced = server._warning("v.yaml", "Deployment/web", header, "restricted")
    assert (enforced.rule, enforced.severity) == ("JHK403", "error")
    assert 'would violate PodSecurity "restricted:latest"' in enforced.message
    for level in (None, "baseline"):
        assert server._warning("v.yaml", "Deployment/web", header, level).rule == "JHK299"


def test_cluster_flags_need_server(capsys) -> None:
    assert main(["check", "--namespace", "jobs", "values-examples/minimal.yaml"]) == 2
    assert "need --server" in capsys.readouterr().err
