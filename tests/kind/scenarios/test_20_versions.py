"""Scenario 20: the version gates, live. The chart renders a gated field only where the
cluster's version has it (chart/lifecycle.yaml, one source for the chart and for this test);
here the API server itself says what it kept.

`make test-kind` runs it on the default cluster (1.37), `make test-kind-versions` on 1.29 —
the oldest minor with native sidecars on by default and without the sleep action — together
with the other scenarios marked `versions` (startup, drain on rollout, the native pgbouncer
sidecar, a drain of drained-but-alive handlers)."""
from __future__ import annotations

import os

import pytest
from kubernetes.client.rest import ApiException

from generator import lifecycle, model
from generator.render import helm
from generator.invariants import deployments_by_role, pod_spec, role_container
from jhkind.cluster import pod_ready
from jhkind.scenario import WORKLOAD_IMAGE, Scenario

pytestmark = [pytest.mark.kind, pytest.mark.versions, pytest.mark.timeout(600)]

# A sidecar in the job role: a native sidecar (an init container with restartPolicy Always)
# where the cluster has them, a plain container below.
SIDECAR = {"name": "helper", "image": f"{WORKLOAD_IMAGE}:1", "imagePullPolicy": "IfNotPresent",
           "command": ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"],
           "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
# drain.mode none: the preStop is only the pause before SIGTERM, the sleep action from 1.30
# (nativeSleep), an exec of sleep below (the marker modes always exec: they touch a file first).
GATED = {"drain": {"mode": "none"}, "handlers": {"job": {"sidecars": [SIDECAR]}}}


def test_20a_version_gates_live(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    minor = model.minor_version(sc.kube.server_version())
    want = os.environ.get("KIND_K8S")
    if want:  # make test-kind-versions: the suite runs on the version it was asked for
        assert minor == want, f"the cluster runs {minor}, KIND_K8S={want}"
    on = {g: model.at_least(minor, lifecycle.min_version(g))
          for g in ("nativeSidecars", "nativeSleep", "probeGrace", "pdbUnhealthyPodEvictionPolicy",
                    "jobPodReplacementPolicy")}
    p.fact("kubernetes", minor)
    p.fact("gates_on", on)
    with p.phase(f"helm install on {minor} (a sidecar in the job role)"):
        sc.install(GATED).check("helm install")
        sc.wait_handlers_ready(240)

    job = sc.deployments()["job"]  # as the API server stored it
    spec = pod_spec(job)
    native = [c for c in spec.get("initContainers") or [] if c["name"] == "helper"]
    plain = [c for c in spec["containers"] if c["name"] == "helper"]
    assert (len(native), len(plain)) == ((1, 0) if on["nativeSidecars"] else (0, 1)), spec
    if native:
        assert native[0].get("restartPolicy") == "Always", native
    main = role_container(job)
    pre_stop = main["lifecycle"]["preStop"]
    assert ("sleep" in pre_stop) is on["nativeSleep"] and ("exec" in pre_stop) is not on["nativeSleep"], pre_stop
    assert ("terminationGracePeriodSeconds" in main["livenessProbe"]) is on["probeGrace"], main["livenessProbe"]
    assert "startupProbe" in main, main
    [pdb] = [d for d in sc.kube.pdbs(sc.namespace) if d["metadata"]["name"].endswith("-job")]
    assert (pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow") is on["pdbUnhealthyPodEvictionPolicy"], pdb
    jobs = sc.migration_jobs()
    assert jobs, "the migration Job is gone (hook-delete-policy?)"
    assert (jobs[0]["spec"].get("podReplacementPolicy") == "Failed") is on["jobPodReplacementPolicy"], jobs[0]["spec"]
    pods = sc.handler_pods("job")
    assert pods and all(pod_ready(x) for x in pods) and sum(sc.handler_restarts().values()) == 0, sc.describe_pods()
    p.fact("prestop", sorted(pre_stop))

    # The fallback is needed: the job Deployment rendered for 1.37 (the sleep action), sent
    # to this API server as a dry run, is refused below the gate and accepted from it.
    with p.phase("the job Deployment rendered for 1.37, dry-run against this server"):
        new = deployments_by_role(helm.render(kube_version="1.37", overrides=sc.values))["job"]
        # a name of its own (the installed one exists), in this namespace
        new["metadata"].update(name=new["metadata"]["name"] + "-for-1-37", namespace=sc.namespace)
        try:
            sc.kube.apps.create_namespaced_deployment(sc.namespace, new, dry_run="All")
            refused = ""
        except ApiException as exc:
            refused = (exc.body or str(exc))[:400]
        p.fact("newer_render_refused", refused)
        assert bool(refused) is not on["nativeSleep"], refused or "accepted"
