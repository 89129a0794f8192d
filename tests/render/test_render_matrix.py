"""Lifecycle invariants of every values example x every kube version of the matrix.

Expected numbers come from generator.model (the policy model), never from a render.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from generator import model
from generator.invariants import migration_jobs
from render_helpers import (
    MATRIX,
    MATRIX_IDS,
    annotations,
    env_map,
    init_container,
    kinds,
    main_container,
    migration_job,
    named,
    pod_spec,
    role_of,
)

pytestmark = pytest.mark.parametrize(("example", "version"), MATRIX, ids=MATRIX_IDS)

LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
HOOK, WEIGHT, DELETE = "helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy"


@pytest.fixture
def objs(render_cache, example: Path, version: str) -> list[dict[str, Any]]:
    return render_cache.get(example, version)


@pytest.fixture
def values(example_values, example: Path) -> dict[str, Any]:
    return example_values(example)


def deployments(objs) -> dict[str, dict[str, Any]]:
    """role -> its workload: a Deployment, or a StatefulSet (handlers.<role>.kind)."""
    return {role_of(d): d for d in kinds(objs, "Deployment") + kinds(objs, "StatefulSet")}


def secret_names(spec: dict[str, Any]) -> set[str]:
    return {
        e["valueFrom"]["secretKeyRef"]["name"]
        for c in spec.get("initContainers", []) + spec["containers"]
        for e in c.get("env") or []
        if "secretKeyRef" in (e.get("valueFrom") or {})
    }


def test_one_deployment_per_enabled_role(objs, values):
    assert sorted(deployments(objs)) == model.enabled_roles(values)


def test_migration_job_is_a_hook_or_hash_named(objs, values):
    job = migration_job(objs)
    m = values["migration"]
    assert job is not None
    assert job["spec"]["backoffLimit"] == m["backoffLimit"]
    assert job["spec"]["activeDeadlineSeconds"] == m["activeDeadlineSeconds"]
    assert pod_spec(job)["restartPolicy"] == "Never"
    ann = annotations(job)
    if m["useHelmHooks"]:
        assert ann[HOOK] == "pre-install,pre-upgrade"
        assert ann[WEIGHT] == str(m["hookWeight"])
        assert ann[DELETE] == "before-hook-creation"  # a failed Job keeps its pod and logs
        assert ann["helm.sh/hook-output-log-policy"] == "hook-failed"
        assert job["metadata"]["name"] == "demo-jobhandlers-migration"
    else:
        assert not [o["metadata"]["name"] for o in objs if HOOK in annotations(o) and annotations(o)[HOOK] != "test"], "no hooks in plain mode (but helm test)"
        assert re.fullmatch(r"demo-jobhandlers-migration-[0-9a-f]{10}", job["metadata"]["name"])


def test_hook_prerequisites_are_earlier_hooks(objs, values):
    """Every Secret and the ServiceAccount the hook pod uses exist before it: as hooks of
    the same phases with a lower weight (or database.existingSecret, not rendered)."""
    job = migration_job(objs)
    spec = pod_spec(job)
    if not values["migration"]["useHelmHooks"]:
        return
    weight = int(annotations(job)[WEIGHT])
    for name in secret_names(spec):
        secret = named(objs, "Secret", name)
        if name == values["database"]["existingSecret"]:
            assert secret is None, "existingSecret is not rendered by the chart"
            continue
        assert secret is not None, f"hook pod reads Secret {name} the chart does not render"
        assert annotations(secret)[HOOK] == "pre-install,pre-upgrade"
        assert int(annotations(secret)[WEIGHT]) < weight
    sa = named(objs, "ServiceAccount", spec["serviceAccountName"])
    assert sa is not None
    assert annotations(sa)[HOOK] == "pre-install,pre-upgrade"
    assert int(annotations(sa)[WEIGHT]) < weight
    # the handlers use the release's own (non-hook) Secret and ServiceAccount
    for dep in deployments(objs).values():
        handler_sa = named(objs, "ServiceAccount", pod_spec(dep)["serviceAccountName"])
        assert handler_sa is not None and HOOK not in annotations(handler_sa)
        for name in secret_names(pod_spec(dep)):
            s = named(objs, "Secret", name)
            assert (s is None and name == values["database"]["existingSecret"]) or HOOK not in annotations(s)


def test_migration_waits_for_database_then_migrates(objs, values):
    job = migration_job(objs)
    wait = init_container(job, "wait-for-database")
    assert wait is not None
    assert wait["args"] == values["commands"]["databaseCheck"]
    script = wait["command"][2]
    assert f"timeout={values['migration']['waitForDatabase']['timeoutSeconds']};" in script
    assert f"interval={values['migration']['waitForDatabase']['intervalSeconds']}" in script
    (migrate,) = pod_spec(job)["containers"]
    assert migrate["command"] == values["commands"]["migrate"]


def test_every_handler_pod_waits_for_migrations(objs, values, version):
    w = values["waitForMigrations"]
    for role, dep in deployments(objs).items():
        inits = pod_spec(dep).get("initContainers") or []
        assert [c["name"] for c in inits] == model.init_container_order(values, role, version), role
        (init,) = [c for c in inits if c["name"] == "wait-for-migrations"]
        assert init["image"] == main_container(dep)["image"], "same image = same expected revision"
        assert "DATABASE_URL" in env_map(init)
        if values["commands"].get("schemaWait"):  # the app's own blocking wait, no sh loop
            assert init["command"] == values["commands"]["schemaWait"]
            assert env_map(init)["WAIT_TIMEOUT_SECONDS"] == str(w["timeoutSeconds"])
            continue
        assert init["args"] == values["commands"]["schemaCheck"]
        assert init["command"][:2] == ["sh", "-c"]
        assert f"timeout={w['timeoutSeconds']};" in init["command"][2]
        assert "exit 1" in init["command"][2] and "TIMEOUT" in init["command"][2]


def test_probes_by_version(objs, values, version):
    for role, dep in deployments(objs).items():
        c = main_container(dep)
        assert ("startupProbe" in c) == model.role_startup_probe_rendered(values, role, version), role
        live = c["livenessProbe"]
        assert live.get("initialDelaySeconds", 0) == model.role_liveness_initial_delay(values, role, version)
        assert live.get("terminationGracePeriodSeconds") == model.rendered_probe_grace(
            model.resolve_probe(values, role, "liveness"), version)
        marker = model.role_drain(values, role).mode == "marker"
        for kind in model.PROBE_KINDS:
            rendered = c.get(f"{kind}Probe")
            if rendered is None:
                continue
            p = model.resolve_probe(values, role, kind)
            assert rendered["periodSeconds"] == p.period and rendered["failureThreshold"] == p.failure, (role, kind)
            if p.handler != "heartbeat":
                assert rendered[p.handler] == p.spec, (role, kind)
                continue
            script = rendered["exec"]["command"][2]
            assert rendered["exec"]["command"][:2] == ["sh", "-c"], "no interpreter: sh, stat, date"
            assert f"-gt {p.max_age}" in script and f"for f in {p.path};" in script, (role, kind)
            state = values["heartbeat"]["dir"]
            has_markers = f"'{state}/drain'" in script and f"'{state}/stopping'" in script
            assert has_markers == (kind == "readiness" and marker), (role, kind)


def test_grace_per_role_equals_model(objs, values, version):
    for role, dep in deployments(objs).items():
        grace = model.role_grace(values, role)
        assert pod_spec(dep)["terminationGracePeriodSeconds"] == grace.effective, role
        env = env_map(main_container(dep))
        assert env["DRAIN_DEADLINE_SECONDS"] == str(grace.drain_deadline)
        pre_stop = (main_container(dep).get("lifecycle") or {}).get("preStop")
        sleep = values["drain"]["preStopSeconds"]
        drain = model.role_drain(values, role)
        state = values["heartbeat"]["dir"]
        action = model.prestop_action(values, role, version)
        if drain.mode == "marker":
            assert pre_stop["exec"]["command"] == ["sh", "-c", f"touch '{state}/stopping'; sleep {sleep}"]
        elif drain.mode == "signal" and drain.wait_for_exit:
            # waits for PID 1 to exit (at most DRAIN_DEADLINE_SECONDS), never a fixed sleep
            assert pre_stop["exec"]["command"] == ["sh", "-c", (
                f"kill -s {drain.signal} 1; trap 'exit 143' TERM; trap 'exit 130' INT; "
                f"n=0; while kill -0 1 2>/dev/null && [ $n -lt {grace.drain_deadline} ]; "
                "do sleep 1 & wait $!; n=$((n + 1)); done")]
        elif drain.mode == "signal":
            assert pre_stop["exec"]["command"] == ["sh", "-c", f"kill -s {drain.signal} 1; sleep {sleep}"]
        elif action == "sleep":
            assert pre_stop == {"sleep": {"seconds": sleep}}
        elif action == "exec" and drain.mode == "none":
            assert pre_stop == {"exec": {"command": ["sleep", str(sleep)]}}
        elif action is None:
            assert pre_stop is None


def test_runtime_env_contract(objs, values):
    state = values["heartbeat"]["dir"]
    for role, dep in deployments(objs).items():
        c = main_container(dep)
        env = env_map(c)
        assert env["JOBHANDLERS_ROLE"] == role
        assert env["JOBHANDLERS_STATE_DIR"] == state
        assert env["HEARTBEAT_INTERVAL_SECONDS"] == str(values["heartbeat"]["intervalSeconds"])
        assert "secretKeyRef" in env["DATABASE_URL"]
        drained = values["handlers"][role].get("startDrained", False)
        assert env.get("JOBHANDLERS_START_DRAINED") == ("1" if drained else None)
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod_spec(dep)["volumes"]}
        assert "emptyDir" in volumes[mounts[state]], "the heartbeat dir is a writable emptyDir"
        spec = values["handlers"][role]
        own = (spec.get("command") or []) + (spec.get("args") or [])
        if model.role_drain(values, role).mode == "marker":
            # the role's command is exec'd by sh (PID 1 gets SIGTERM), after clearing a stale marker
            assert c["command"][:2] == ["sh", "-c"] and 'exec "$@"' in c["command"][2]
            assert c["args"] == own
        else:  # no wrapper: the image needs no shell for its entrypoint
            assert (c.get("command") or []) + (c.get("args") or []) == own


def test_pdb_per_role_and_api_version(objs, values, version):
    pdbs = {role_of(p): p for p in kinds(objs, "PodDisruptionBudget")}
    deps = deployments(objs)
    expected = sorted(r for r in deps if (values["handlers"][r].get("pdb") or {}).get("enabled", True))
    assert sorted(pdbs) == expected
    for role, pdb in pdbs.items():
        assert pdb["apiVersion"] == model.pdb_api_version(version)
        assert pdb["spec"]["selector"]["matchLabels"] == deps[role]["spec"]["selector"]["matchLabels"]
        # KEP-3017: from 1.27 (beta, on by default)
        assert pdb["spec"].get("unhealthyPodEvictionPolicy") == model.pdb_unhealthy_pod_eviction_policy(
            values, role, version), role


def test_migration_job_pod_replacement_policy(objs, values, version):
    job = migration_job(objs)
    # KEP-3939: from 1.29 (beta, on by default)
    assert job["spec"].get("podReplacementPolicy") == model.migration_pod_replacement_policy(values, version)


def test_chart_owned_containers_have_requests(objs, values):
    """Every container the chart owns has its own resources, else defaultResources (never BestEffort
    by the chart's doing)."""
    owned = model.owned_resources(values)
    for role, dep in deployments(objs).items():
        assert main_container(dep).get("resources", {}) == owned[f"role {role}"][1], role
        wait = init_container(dep, "wait-for-migrations")
        if wait is not None:
            assert wait.get("resources", {}) == owned["wait-for-migrations"][1], role
    job = migration_job(objs)
    for c in (pod_spec(job).get("initContainers") or []) + pod_spec(job)["containers"]:
        if c["name"] in ("wait-for-database", "migrate"):
            assert c.get("resources", {}) == owned["the migration Job"][1], c["name"]
    for pod in kinds(objs, "Pod"):
        for c in pod["spec"]["containers"]:
            assert c.get("resources", {}) == owned["the helm test pod"][1], c["name"]


def test_services_only_for_roles_with_a_port(objs, values):
    services = {role_of(s): s for s in kinds(objs, "Service") if s["spec"].get("clusterIP") != "None"}
    deps = deployments(objs)
    assert sorted(services) == sorted(r for r in deps if values["handlers"][r].get("port") is not None)
    # a StatefulSet role also has its governing headless Service, named in spec.serviceName
    headless = {s["metadata"]["name"]: s for s in kinds(objs, "Service") if s["spec"].get("clusterIP") == "None"}
    stateful = [d for d in deps.values() if d["kind"] == "StatefulSet"]
    assert sorted(headless) == sorted(d["spec"]["serviceName"] for d in stateful)
    for d in stateful:
        assert headless[d["spec"]["serviceName"]]["spec"]["selector"] == d["spec"]["selector"]["matchLabels"]
    for role, svc in services.items():
        assert svc["spec"]["ports"][0]["port"] == values["handlers"][role]["port"]
        assert svc["spec"]["selector"] == deps[role]["spec"]["selector"]["matchLabels"]


def test_security_contexts_restricted(objs, version, values):
    # the post-deploy Job's wait-for-rollout lists pods, a launching or preferIdle role's pods patch or
    # create objects: below 1.21 with the automounted token (JH038, JH049, JH070)
    legacy_token = not model.at_least(version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION)
    post = [j["metadata"]["name"] for j in migration_jobs(objs, post_deploy=True)]
    for obj in kinds(objs, "Deployment") + kinds(objs, "StatefulSet") + kinds(objs, "Job"):
        spec = pod_spec(obj)
        role = obj["metadata"]["labels"]["app.kubernetes.io/component"]
        token = obj["metadata"]["name"] in post or (obj["kind"] != "Job" and model.role_calls_api(values, role))
        assert spec["automountServiceAccountToken"] is (legacy_token and token)
        assert spec["securityContext"]["runAsNonRoot"] is True
        pod_annotations = obj["spec"]["template"]["metadata"].get("annotations") or {}
        if model.at_least(version, "1.19"):  # the seccompProfile field exists from 1.19
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert "seccomp.security.alpha.kubernetes.io/pod" not in pod_annotations
        else:
            assert "seccompProfile" not in spec["securityContext"]
            assert pod_annotations["seccomp.security.alpha.kubernetes.io/pod"] == "runtime/default"
        for c in spec.get("initContainers", []) + spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, c["name"]
            assert sc["readOnlyRootFilesystem"] is True, c["name"]
            assert sc["capabilities"]["drop"] == ["ALL"], c["name"]
    for sa in kinds(objs, "ServiceAccount"):
        assert sa["automountServiceAccountToken"] is False


# a launching role's MutatingAdmissionPolicy and its binding (podSecurity.mutate), a preferIdle role's
# ValidatingAdmissionPolicy and its binding
CLUSTER_SCOPED = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def test_standard_labels(objs):
    for obj in objs:
        labels = obj["metadata"]["labels"]
        for key in ("name", "instance", "version", "component", "managed-by", "part-of"):
            assert f"app.kubernetes.io/{key}" in labels, (obj["kind"], obj["metadata"]["name"], key)
        assert labels["app.kubernetes.io/instance"] == model.RELEASE_NAME
        for k, v in labels.items():  # the API server rejects an object with an invalid label value
            assert len(v) <= 63 and LABEL_VALUE.fullmatch(v), (obj["kind"], obj["metadata"]["name"], k, v)
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == model.NAMESPACE
    for dep in kinds(objs, "Deployment") + kinds(objs, "StatefulSet"):
        selector = dep["spec"]["selector"]["matchLabels"]
        assert selector.items() <= dep["spec"]["template"]["metadata"]["labels"].items()
