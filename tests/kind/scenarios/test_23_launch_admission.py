"""Launching roles on a live API server (docs/launching.md): the role's RBAC allows what a
launcher needs and nothing else, its API token is valid for a year (the 3607 s projection the
API server extends; pykube reads it once), no other role gets a token, and the opt-in
MutatingAdmissionPolicy (Kubernetes >= 1.36) lets a Job whose pods meet only Pod Security
`baseline`, as Galaxy's Kubernetes runner writes them, run in the scenario's `restricted`
namespace, while the same Job without the launched-pod label is refused."""

from __future__ import annotations

import base64
import json
import time

import pytest
from kubernetes import client

from jhkind.cluster import job_state
from jhkind.scenario import WORKLOAD_IMAGE, Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(420)]

SELECTOR = {"jobhandlers.test/launched": "true"}
LAUNCHER = {"handlers": {"web": {"enabled": False},
                         "job": {"launcher": {"enabled": True, "podSecurity": {
                             "enforce": "restricted", "podsMeet": "baseline", "mutate": True,
                             "podSelector": SELECTOR}}}}}


def baseline_job(name: str, labels: dict[str, str]) -> dict:
    """A Job as Galaxy 26.1's Kubernetes runner writes one: user, group and fsGroup only."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": {
                "restartPolicy": "Never",
                "securityContext": {"runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001},
                "containers": [{"name": "job", "image": f"{WORKLOAD_IMAGE}:1", "imagePullPolicy": "IfNotPresent",
                                "command": ["sh", "-c", "id -u"]}]}}}}


def can_i(sc: Scenario, sa: str, verb: str, resource: str, group: str = "") -> bool:
    review = client.AuthorizationV1Api(sc.kube.api).create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": f"system:serviceaccount:{sc.namespace}:{sa}",
                 "groups": ["system:serviceaccounts", f"system:serviceaccounts:{sc.namespace}"],
                 "resourceAttributes": {"namespace": sc.namespace, "verb": verb, "group": group,
                                        "resource": resource}}})
    return bool(review.status.allowed)


def test_23_launcher_rbac_token_and_admission_policy(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    sa = f"{sc.release}-jobhandlers-job"
    try:
        with p.phase("install with the job role launching (mutate on)"):
            sc.install(LAUNCHER).check("helm install")
            sc.wait_handlers_ready(120)
        with p.phase("RBAC of the launching role"):
            allowed = {f"{verb} {res}": can_i(sc, sa, verb, res, group)
                       for verb, res, group in [("create", "jobs", "batch"), ("delete", "jobs", "batch"),
                                                ("list", "pods", ""), ("create", "pods", ""),
                                                ("get", "secrets", ""), ("create", "deployments", "apps")]}
        p.fact("launcher_rbac", allowed)
        assert allowed == {"create jobs": True, "delete jobs": True, "list pods": True,
                           "create pods": False, "get secrets": False, "create deployments": False}
        # the handler container reads the token where in-cluster clients look; it lasts a year
        (pod,) = sc.handler_pods("job")
        name = pod["metadata"]["name"]
        res = sc.kube.exec(sc.namespace, name, ["cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"],
                           container="job")
        assert res.rc == 0, res.stderr
        claims = res.stdout.strip().split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
        days = (claims["exp"] - claims["iat"]) / 86400
        p.fact("launcher_token_validity_days", round(days, 1))
        assert days >= 364, claims
        assert claims["kubernetes.io"]["serviceaccount"]["name"] == sa
        wait = sc.kube.exec(sc.namespace, name, ["ls", "/var/run/secrets/kubernetes.io/serviceaccount"],
                            container="wait-for-migrations")
        assert wait.rc != 0, "wait-for-migrations sees the token"
        with p.phase("a baseline Job with the launched-pod label runs in the restricted namespace"):
            sc.kube.batch.create_namespaced_job(sc.namespace, baseline_job("launched", SELECTOR))
            t0 = time.monotonic()
            wait_until(lambda: job_state(sc.kube.to_dict(sc.kube.batch.read_namespaced_job("launched", sc.namespace)))
                       == "complete", 120, "the launched Job to complete", interval=1)
            p.fact("launched_job_complete_s", round(time.monotonic() - t0, 1))
        (launched,) = sc.kube.pods(sc.namespace, "job-name=launched")
        spec = launched["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        ctx = spec["containers"][0]["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False and ctx["capabilities"] == {"drop": ["ALL"]}
        with p.phase("the same Job without the label is refused by Pod Security"):
            sc.kube.batch.create_namespaced_job(sc.namespace, baseline_job("unlabelled", {"x": "y"}))

            def refused() -> str | None:
                for ev in sc.kube.events(sc.namespace):
                    if ev.get("involvedObject", {}).get("name") == "unlabelled" and ev.get("reason") == "FailedCreate":
                        return str(ev.get("message"))
                return None
            message = wait_until(refused, 60, "a FailedCreate event of the unlabelled Job", interval=1)
        p.note(message[:200])
        assert "violates PodSecurity" in message and "restricted" in message
        assert not sc.kube.pods(sc.namespace, "job-name=unlabelled")
    finally:
        # the policy is cluster-scoped: the namespace's deletion would leave it behind
        sc.helm.run(["uninstall", sc.release, "-n", sc.namespace, "--wait", "--timeout", "60s"], timeout=120)
