"""JH073 against the real Pod Security admission plugin (namespace labelled `restricted`), on
both minors the oracle runs (1.37 and 1.29: every test runs once per `server`).

Each override below breaks one restricted check, and the API server says so: it refuses a Pod the
render holds (helm test, hooks), and for a Deployment, StatefulSet or Job it admits the object with
the warning `would violate PodSecurity "restricted:latest": …` (enforcement is on Pods: their
controller's creates are refused then). `check` warns JH073 at the field, naming the same check. The rule's pass
fixture is admitted; every values example is admitted by test_apiserver_examples.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generator.render import helm
from generator.check.full import check_file
from kubeapi import ApiServer
from api_oracle import dry_run

FIXTURES = Path(__file__).resolve().parent.parent / "unit" / "fixtures" / "rules"
SIDECAR = {"name": "proxy", "image": "proxy:1",
           "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}

# (id, values, the key path JH073 names, the Pod Security check, what the server's refusal says)
CASES: list[tuple[str, dict[str, Any], str, str, str]] = [
    ("pod-runAsNonRoot", {"podSecurityContext": {"runAsNonRoot": False}},
     "podSecurityContext.runAsNonRoot", "runAsNonRoot", "runAsNonRoot != true"),
    ("pod-runAsUser", {"podSecurityContext": {"runAsUser": 0}},
     "podSecurityContext.runAsUser", "runAsUser", "runAsUser=0"),
    ("pod-seccomp", {"podSecurityContext": {"seccompProfile": {"type": "Unconfined"}}},
     "podSecurityContext.seccompProfile.type", "seccompProfile", "seccompProfile"),
    ("container-escalation", {"containerSecurityContext": {"allowPrivilegeEscalation": True}},
     "containerSecurityContext.allowPrivilegeEscalation", "privilegeEscalation", "allowPrivilegeEscalation != false"),
    ("role-privileged", {"handlers": {"web": {"securityContext": {"privileged": True, "allowPrivilegeEscalation": True}}}},
     "handlers.web.securityContext.privileged", "privileged", "privileged"),
    ("role-capabilities", {"handlers": {"job": {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}}},
     "handlers.job.securityContext.capabilities.add", "capabilities", "unrestricted capabilities"),
    ("sidecar-drop", {"sidecars": [{**SIDECAR, "securityContext": {"allowPrivilegeEscalation": False,
                                                                   "capabilities": {"drop": ["NET_RAW"]}}}]},
     "sidecars[0].securityContext.capabilities.drop", "capabilities", "unrestricted capabilities"),
    ("init-root", {"extraInitContainers": [{**SIDECAR, "name": "setup",
                                            "securityContext": {**SIDECAR["securityContext"], "runAsUser": 0}}]},
     "extraInitContainers[0].securityContext.runAsUser", "runAsUser", "runAsUser=0"),
    ("sidecar-hostPort", {"sidecars": [{**SIDECAR, "ports": [{"containerPort": 80, "hostPort": 80}]}]},
     "sidecars[0].ports[0].hostPort", "hostPorts", "hostPort"),
    ("role-hostPath", {"handlers": {"web": {"extraVolumes": [{"name": "host", "hostPath": {"path": "/tmp"}}]}}},
     "handlers.web.extraVolumes[0].hostPath", "hostPathVolumes", '"hostPath"'),
    ("migration-nfs", {"migration": {"extraVolumes": [{"name": "nfs", "nfs": {"server": "nfs", "path": "/"}}]}},
     "migration.extraVolumes[0].nfs", "volumeTypes", "restricted volume types"),
]


@pytest.mark.parametrize(("values", "path", "check", "refusal"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_override_is_refused_and_warned(server: ApiServer, tmp_path: Path, values: dict[str, Any], path: str,
                                        check: str, refusal: str) -> None:
    """The server refuses or warns under restricted, naming the check; check warns JH073 at the field, naming the check."""
    file = tmp_path / "values.yaml"
    with file.open("w") as fh:
        YAML(typ="safe", pure=True).dump(values, fh)
    verdict = dry_run(server, helm.render_text([file], kube_version=server.minor))
    said = [m for m in verdict.errors + verdict.warnings if 'violate PodSecurity "restricted' in m]
    assert said, f"the API server neither refused nor warned about {values}: {verdict.explain()}"
    assert any(refusal in m for m in said), "\n".join(said)
    jh073 = [f for f in check_file(file, server.minor) if f.rule == "JH073"]
    at = [f for f in jh073 if f.path == path]
    assert len(at) == 1, jh073
    assert f"(check {check})" in at[0].message and at[0].severity == "warning" and at[0].fix


def test_fail_fixture_is_refused_pass_fixture_admitted(server: ApiServer) -> None:
    """The rule's fixtures: every JH073 in the fail one is a refusal; the pass one is admitted."""
    refused = dry_run(server, helm.render_text([FIXTURES / "JH073-fail.yaml"], kube_version=server.minor))
    assert not refused.accepted and "violates PodSecurity" in refused.explain()
    admitted = dry_run(server, helm.render_text([FIXTURES / "JH073-pass.yaml"], kube_version=server.minor))
    assert admitted.accepted and not admitted.warnings, admitted.explain() + "\n".join(admitted.warnings)


def test_jh018_omission_is_refused_and_reported_once(server: ApiServer) -> None:
    """JH018's fixture (a null deletes the chart's allowPrivilegeEscalation: false) is refused by
    restricted, naming allowPrivilegeEscalation; check reports it once, as JH018, not JH073."""
    refused = dry_run(server, helm.render_text([FIXTURES / "JH018-fail.yaml"], kube_version=server.minor))
    assert not refused.accepted and "allowPrivilegeEscalation != false" in refused.explain(), refused.explain()
    findings = check_file(FIXTURES / "JH018-fail.yaml", server.minor)
    assert [f.rule for f in findings] == ["JH018"], findings
    assert "allowPrivilegeEscalation" in findings[0].message


def test_jh074_fixtures_against_the_plugin(server: ApiServer) -> None:
    """JH074's fail fixture (user containers without the restricted fields): the server warns
    that the workloads' pods would violate restricted (their creates are refused then), naming
    the containers; its pass fixture is admitted without a warning."""
    verdict = dry_run(server, helm.render_text([FIXTURES / "JH074-fail.yaml"], kube_version=server.minor))
    said = "\n".join(m for m in verdict.errors + verdict.warnings if 'violate PodSecurity "restricted' in m)
    for name in ("proxy", "setup", "cloudsql"):
        assert f'"{name}"' in said, (name, said or verdict.explain())
    assert "allowPrivilegeEscalation != false" in said and "unrestricted capabilities" in said, said
    admitted = dry_run(server, helm.render_text([FIXTURES / "JH074-pass.yaml"], kube_version=server.minor))
    assert admitted.accepted and not admitted.warnings, admitted.explain() + "\n".join(admitted.warnings)
