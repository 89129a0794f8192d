"""Every values example, rendered for each minor the oracle runs (1.37 and 1.29) that the
example supports, is accepted by a real API server of that minor."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from generator.render import helm
from kubeapi import MINORS, ApiServer
from api_oracle import dry_run

CASES = [(e, m) for e in helm.examples() for m in helm.example_versions(e, MINORS)]


def test_the_server_runs_the_pinned_minor(server: ApiServer) -> None:
    """The oracle is the minor the tests name, started in reasonable time."""
    version = server.kubectl("version", "-o", "json").stdout
    assert f'"minor": "{server.minor.split(".")[1]}"' in version, version
    assert server.startup_seconds < 120


def test_the_server_refuses_what_a_cluster_refuses(server: ApiServer) -> None:
    """The oracle can say no: an invalid object and a pod Pod Security `restricted` forbids."""
    bad = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name", "namespace": "demo"}},
           {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": "demo"},
            "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]}}]
    verdict = dry_run(server, bad)
    assert len(verdict.errors) == 2, verdict.explain()
    assert "Not_A_Name" in verdict.errors[0] and "restricted" in verdict.errors[1], verdict.explain()


def test_every_example_runs_on_both_minors_but_the_gated() -> None:
    """Both minors are exercised: every example but those that declare a newer floor."""
    assert {m for _, m in CASES} == set(MINORS)
    assert len(CASES) >= 2 * len(helm.examples()) - 3, CASES


@pytest.mark.parametrize(("example", "minor"), CASES, ids=[f"{e.stem}-{m}" for e, m in CASES])
def test_example_is_accepted(servers: Callable[[str], ApiServer], example: Path, minor: str) -> None:
    """Every object of the example's render, hooks and tests included, passes a server dry run."""
    verdict = dry_run(servers(minor), helm.render_text([example], kube_version=minor))
    assert verdict.objects > 0
    assert verdict.accepted, f"{example.name} on {minor}: the API server refused\n{verdict.explain()}"
    assert not verdict.warnings, f"{example.name} on {minor}: the API server warned\n" + "\n".join(verdict.warnings)
