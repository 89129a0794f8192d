"""Every values example, rendered for the newest minor, is accepted by a real 1.37 API server."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.render import helm
from kubeapi import ApiServer, MINOR
from api_oracle import dry_run

EXAMPLES = [e for e in helm.examples() if MINOR in helm.example_versions(e)]


def test_the_server_runs_the_pinned_minor(api: ApiServer) -> None:
    """The oracle is the minor the tests name, started in reasonable time."""
    version = api.kubectl("version", "-o", "json").stdout
    assert f'"minor": "{MINOR.split(".")[1]}"' in version, version
    assert api.startup_seconds < 120


def test_the_server_refuses_what_a_cluster_refuses(api: ApiServer) -> None:
    """The oracle can say no: an invalid object and a pod Pod Security `restricted` forbids."""
    bad = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name", "namespace": "demo"}},
           {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": "demo"},
            "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]}}]
    verdict = dry_run(api, bad)
    assert len(verdict.errors) == 2, verdict.explain()
    assert "Not_A_Name" in verdict.errors[0] and "restricted" in verdict.errors[1], verdict.explain()


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_is_accepted(api: ApiServer, example: Path) -> None:
    """Every object of the example's render, hooks and tests included, passes a server dry run."""
    verdict = dry_run(api, helm.render_text([example], kube_version=MINOR))
    assert verdict.objects > 0
    assert verdict.accepted, f"{example.name} on {MINOR}: the API server refused\n{verdict.explain()}"
    assert not verdict.warnings, f"{example.name} on {MINOR}: the API server warned\n" + "\n".join(verdict.warnings)

