"""`jobhandlers check --server` against the validation API server (its kubeconfig).

The issue's values are refused offline now (values.schema.json, JH050, JH051), so helm no longer
renders them: the server path is shown with a clean render's objects changed to what the chart
rendered before (replicas, ipBlock cidr, env names). The CLI runs end to end on a clean example,
a Pod Security refusal, an unreachable server and unusable kubeconfigs.
"""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generator.render import helm
from generator.check import server
from kubeapi import ApiServer, MINOR, free_port

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "values-examples" / "minimal.yaml"
_ns = itertools.count(1)


def _namespace(api: ApiServer) -> str:
    """A fresh namespace labelled Pod Security restricted, with its `default` ServiceAccount
    (this server runs no controller-manager to create it)."""
    name = f"jhk-{next(_ns)}"
    api.kubectl("create", "namespace", name)
    api.kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
    api.kubectl("create", "serviceaccount", "default", "-n", name)
    return name


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator.entry", "check", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)


def _first(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in objects if o.get("kind") == kind)


def _mutated(objects: list[dict[str, Any]], change: str) -> list[dict[str, Any]]:
    objs = copy.deepcopy(objects)
    workload = next(o for o in objs if o.get("kind") in ("Deployment", "StatefulSet"))
    if change == "replicas":
        workload["spec"]["replicas"] = 1099511627776
    elif change == "cidr":
        objs.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "db"},
                     "spec": {"podSelector": {}, "policyTypes": ["Egress"],
                              "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.300/33"}}]}]}})
    elif change == "env":
        workload["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append({"name": "A=B"})
    return objs


@pytest.mark.parametrize(("change", "rule", "field"), [
    ("replicas", "JHK400", ""),
    ("cidr", "JHK422", "spec.egress[0].to[0].ipBlock.cidr"),
    ("env", "JHK422", "spec.template.spec.containers[0].env"),
])
def test_issue_values_are_refused_with_the_field(api: ApiServer, change: str, rule: str, field: str) -> None:
    """Each of the issue's refusals becomes a JHK finding with the kind/name, field and message."""
    ns = _namespace(api)
    objects = _mutated(helm.render([MINIMAL], kube_version=MINOR), change)
    findings = server.dry_run(objects, server.Target(str(api.kubeconfig), None, ns), "v.yaml")
    refused = [f for f in findings if f.severity == "error"]
    assert refused and all(f.rule == rule for f in refused), findings
    assert any(field in f.message for f in refused), findings
    if change == "replicas":
        assert any("int32" in f.message for f in refused), findings


def test_clean_example_passes(api: ApiServer) -> None:
    ns = _namespace(api)
    proc = _cli("--server", "--kubeconfig", str(api.kubeconfig), "--namespace", ns, "--format", "json", str(MINIMAL))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["findings"] == []


def test_pod_security_refusal_exits_1(api: ApiServer, tmp_path: Path) -> None:
    """A value restricted forbids: JH073 offline, and JHK403 from the server: its workloads' pods would be refused."""
    ns = _namespace(api)
    values = tmp_path / "v.yaml"
    values.write_text(MINIMAL.read_text() + "\npodSecurityContext:\n  runAsNonRoot: false\n")
    proc = _cli("--server", "--kubeconfig", str(api.kubeconfig), "-n", ns, "--format", "json", str(values))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    assert {"JH073", "JHK403"} <= rules, proc.stdout
    assert "violate PodSecurity" in proc.stdout


def test_missing_namespace_is_a_refusal(api: ApiServer) -> None:
    proc = _cli("--server", "--kubeconfig", str(api.kubeconfig), "-n", "no-such-ns", str(MINIMAL))
    assert proc.returncode == 1 and "JHK404" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["unreachable", "missing-file", "not-a-kubeconfig", "unknown-context"])
def test_unusable_cluster_exits_2_with_one_line(api: ApiServer, tmp_path: Path, case: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    args = ["--kubeconfig", str(kubeconfig)]
    if case == "unreachable":
        kubeconfig.write_text(api.kubeconfig.read_text().replace(f":{api.port}", f":{free_port()}"))
    elif case == "not-a-kubeconfig":
        kubeconfig.write_text("just: [text\n")
    elif case == "unknown-context":
        kubeconfig.write_text(api.kubeconfig.read_text())
        args += ["--context", "nope"]
    proc = _cli("--server", *args, str(MINIMAL))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("jobhandlers check --server: "), proc.stderr
