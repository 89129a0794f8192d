"""The pod as operators shape it, rendered by the real helm across the kube matrix: sidecar
gating, init order, merge of chart-wide and per-role lists, checksum roll, restricted by
default, rollout and placement."""

from __future__ import annotations

from typing import Any

import pytest

from generator import model
from generator.render import helm
from generator.invariants import role_container
from generator.rules import _restricted_problems
from generator.values.merge import merged

VERSIONS = model.KUBE_VERSIONS
PROXY = {"name": "pgbouncer", "image": "jobhandlers/pgbouncer:1", "migration": True,
         "ports": [{"containerPort": 6432, "name": "pgbouncer"}]}


def deployment(objs: list[dict[str, Any]], role: str) -> dict[str, Any]:
    (dep,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"].endswith(f"-{role}")]
    return dep


def pod(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def names(containers: list[dict[str, Any]] | None) -> list[str]:
    return [c["name"] for c in containers or []]


def fail_message(**kwargs: Any) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(**kwargs)
    return info.value.message


@pytest.mark.parametrize("version", VERSIONS)
def test_native_sidecars_by_version_and_a_job_sidecar_below_the_gate_fails(version: str) -> None:
    over = {"sidecars": [PROXY]}
    if not model.at_least(version, model.NATIVE_SIDECAR_MIN_VERSION):
        msg = fail_message(overrides=over, kube_version=version)
        assert "never completes" in msg and "JH016" in msg and "pgbouncer" in msg
        over = {"sidecars": [{**PROXY, "migration": False}]}
    objs = helm.render(overrides=over, kube_version=version)
    for role in ("web", "job"):
        spec = pod(deployment(objs, role))
        if model.at_least(version, model.NATIVE_SIDECAR_MIN_VERSION):
            first = spec["initContainers"][0]
            assert first["name"] == "pgbouncer" and first["restartPolicy"] == "Always" and "migration" not in first
            assert names(spec["containers"]) == [role]
        else:  # a regular container of the Deployment, after the handler
            assert names(spec["containers"]) == [role, "pgbouncer"]
            assert "restartPolicy" not in spec["containers"][1] and "migration" not in spec["containers"][1]
            assert "pgbouncer" not in names(spec["initContainers"])
    (job,) = helm.by_kind(objs, "Job")
    expected = ["pgbouncer", "wait-for-database"] if model.at_least(version, model.NATIVE_SIDECAR_MIN_VERSION) else ["wait-for-database"]
    assert names(pod(job)["initContainers"]) == expected
    assert names(pod(job)["containers"]) == ["migrate"]


def test_init_order_before_and_after_the_wait() -> None:
    over = {"extraInitContainers": [{"name": "render-config", "image": "x:1"},
                                    {"name": "warm-cache", "image": "x:1", "position": "after"}],
            "sidecars": [{"name": "proxy", "image": "p:1"}],
            "handlers": {"job": {"extraInitContainers": [{"name": "job-before", "image": "x:1", "position": "before"}]}},
            "migration": {"extraInitContainers": [{"name": "mig-after", "image": "x:1", "position": "after"}]}}
    objs = helm.render(overrides=over, kube_version="1.34")
    assert names(pod(deployment(objs, "job"))["initContainers"]) == [
        "proxy", "render-config", "job-before", "wait-for-migrations", "warm-cache"]
    assert names(pod(deployment(objs, "web"))["initContainers"]) == [
        "proxy", "render-config", "wait-for-migrations", "warm-cache"]
    (job,) = helm.by_kind(objs, "Job")
    # chart-wide init containers run in the migration pod too; chart-wide sidecars only with migration: true
    assert names(pod(job)["initContainers"]) == ["render-config", "wait-for-database", "warm-cache", "mig-after"]
    for c in pod(deployment(objs, "job"))["initContainers"]:
        assert "position" not in c


def test_chart_wide_and_per_role_lists_merge() -> None:
    over = {"env": [{"name": "A", "value": "chart"}], "envFrom": [{"secretRef": {"name": "shared"}}],
            "extraVolumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
            "extraVolumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}],
            "podAnnotations": {"team": "a", "tier": "chart"}, "podLabels": {"team": "a"},
            "priorityClassName": "jobs",
            "handlers": {"web": {"env": [{"name": "B", "value": "web"}], "envFrom": [{"configMapRef": {"name": "web"}}],
                                 "extraVolumes": [{"name": "web-data", "emptyDir": {}}],
                                 "extraVolumeMounts": [{"name": "web-data", "mountPath": "/data"}],
                                 "podAnnotations": {"tier": "web"}, "podLabels": {"role-owner": "web"},
                                 "priorityClassName": "web-critical"}},
            "migration": {"env": [{"name": "C", "value": "mig"}]}}
    objs = helm.render(overrides=over)
    web = pod(deployment(objs, "web"))
    c = role_container(deployment(objs, "web"))
    env = [e["name"] for e in c["env"]]
    assert env.index("JOBHANDLERS_ROLE") < env.index("A") < env.index("B")
    assert c["envFrom"] == [{"secretRef": {"name": "shared"}}, {"configMapRef": {"name": "web"}}]
    assert [v["name"] for v in web["volumes"]] == ["state", "tmp", "cfg", "web-data"]
    assert [m["mountPath"] for m in c["volumeMounts"]] == ["/run/jobhandlers", "/tmp", "/etc/cfg", "/data"]
    wait = web["initContainers"][0]
    assert [m["mountPath"] for m in wait["volumeMounts"]] == ["/tmp", "/etc/cfg", "/data"]
    assert wait["envFrom"] == c["envFrom"]
    meta = deployment(objs, "web")["spec"]["template"]["metadata"]
    assert meta["annotations"]["tier"] == "web" and meta["annotations"]["team"] == "a"
    assert meta["labels"]["team"] == "a" and meta["labels"]["role-owner"] == "web"
    assert web["priorityClassName"] == "web-critical"
    assert pod(deployment(objs, "job"))["priorityClassName"] == "jobs"
    assert "B" not in [e["name"] for e in role_container(deployment(objs, "job"))["env"]]
    (job,) = helm.by_kind(objs, "Job")
    mig_env = [e["name"] for e in pod(job)["containers"][0]["env"]]
    assert mig_env == [*model.common_env_names(merged(over)), "A", "C"]
    assert [m["mountPath"] for m in pod(job)["containers"][0]["volumeMounts"]] == ["/tmp", "/etc/cfg"]


def files_checksums(files: dict[str, str], hooks: bool = True) -> tuple[dict[str, str], list[dict[str, Any]]]:
    objs = helm.render(overrides={"files": files, "migration": {"useHelmHooks": hooks}})
    sums = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["annotations"]["checksum/files"]
            for d in helm.by_kind(objs, "Deployment") + helm.by_kind(objs, "Job")}
    return sums, objs


def test_config_files_roll_the_pods_and_the_hook_reads_its_own_copy() -> None:
    before, objs = files_checksums({"app.ini": "[app]\nworkers = 4\n"})
    after, _ = files_checksums({"app.ini": "[app]\nworkers = 8\n"})
    same, _ = files_checksums({"app.ini": "[app]\nworkers = 4\n"})
    assert before == same and set(before) == set(after)
    assert all(before[k] != after[k] for k in before), "a config change must change every pod template"
    maps = {m["metadata"]["name"]: m for m in helm.by_kind(objs, "ConfigMap")}
    assert set(maps) == {"demo-jobhandlers-files", "demo-jobhandlers-migration-files"}
    hook = maps["demo-jobhandlers-migration-files"]["metadata"]["annotations"]
    assert hook["helm.sh/hook"] == "pre-install,pre-upgrade" and hook["helm.sh/hook-weight"] == "-6"
    (job,) = helm.by_kind(objs, "Job")
    assert {"name": "files", "configMap": {"name": "demo-jobhandlers-migration-files"}} in pod(job)["volumes"]
    web = pod(deployment(objs, "web"))
    assert {"name": "files", "configMap": {"name": "demo-jobhandlers-files"}} in web["volumes"]
    assert {"name": "files", "mountPath": "/etc/jobhandlers", "readOnly": True} in role_container(deployment(objs, "web"))["volumeMounts"]
    # plain mode (no hooks): the Job reads the release's ConfigMap
    _, plain = files_checksums({"app.ini": "x"}, hooks=False)
    assert [m["metadata"]["name"] for m in helm.by_kind(plain, "ConfigMap")] == ["demo-jobhandlers-files"]


RESTRICTED_CASES = [(e, v) for e in helm.examples() for v in helm.example_versions(e, ("1.18", "1.25", "1.34"))]


@pytest.mark.parametrize(("example", "version"), RESTRICTED_CASES, ids=[f"{e.stem}-{v}" for e, v in RESTRICTED_CASES])
def test_restricted_by_default(example, version: str) -> None:
    for obj in helm.by_kind(helm.render([example], kube_version=version), "Deployment") + \
            helm.by_kind(helm.render([example], kube_version=version), "Job"):
        spec = pod(obj)
        for c in spec["containers"] + (spec.get("initContainers") or []):
            if c["name"] in ("pgbouncer",):
                continue  # a user's sidecar carries its own securityContext
            pod_ctx = dict(spec.get("securityContext") or {})
            if not model.at_least(version, "1.19"):
                pod_ctx["seccompProfile"] = {"type": "RuntimeDefault"}  # the pre-1.19 annotation
            assert _restricted_problems(pod_ctx, c.get("securityContext") or {}) == [], (obj["metadata"]["name"], c["name"])


def test_security_context_overrides_merge_and_keep_the_rest() -> None:
    objs = helm.render(overrides={"handlers": {"web": {"securityContext": {"readOnlyRootFilesystem": False},
                                                       "podSecurityContext": {"fsGroup": 2000}}}})
    web = pod(deployment(objs, "web"))
    assert web["securityContext"]["fsGroup"] == 2000 and web["securityContext"]["runAsNonRoot"] is True
    ctx = role_container(deployment(objs, "web"))["securityContext"]
    assert ctx["readOnlyRootFilesystem"] is False and ctx["capabilities"] == {"drop": ["ALL"]}
    assert role_container(deployment(objs, "job"))["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize("version", VERSIONS)
def test_rollout_and_placement_defaults(version: str) -> None:
    objs = helm.render(kube_version=version)
    for role in ("web", "job"):
        dep = deployment(objs, role)
        assert dep["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
        spec = pod(dep)
        spread = spec.get("topologySpreadConstraints")
        if model.at_least(version, model.SPREAD_MIN_VERSION):
            (c,) = spread
            assert c["topologyKey"] == "kubernetes.io/hostname" and c["whenUnsatisfiable"] == "ScheduleAnyway"
            assert c["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == role
            assert ("matchLabelKeys" in c) == model.at_least(version, model.SPREAD_MATCH_LABEL_KEYS_MIN_VERSION)
        else:
            assert spread is None
        loss = {t["key"]: t["tolerationSeconds"] for t in spec["tolerations"]}
        assert loss == {"node.kubernetes.io/not-ready": 30, "node.kubernetes.io/unreachable": 30}


def test_rollout_and_placement_overrides() -> None:
    objs = helm.render(overrides={
        "nodeLossTolerationSeconds": None,
        "handlers": {"web": {"strategy": {"type": "Recreate"}, "topologySpreadConstraints": [],
                             "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                              "effect": "NoExecute", "tolerationSeconds": 5}],
                             "nodeLossTolerationSeconds": 60,
                             "service": {"type": "NodePort", "annotations": {"a": "b"},
                                         "extraPorts": [{"name": "metrics", "port": 9100, "targetPort": "metrics"}]},
                             "extraPorts": [{"name": "metrics", "containerPort": 9100}]}}})
    web = deployment(objs, "web")
    assert web["spec"]["strategy"] == {"type": "Recreate"}
    assert "topologySpreadConstraints" not in pod(web)
    assert {t["key"]: t["tolerationSeconds"] for t in pod(web)["tolerations"]} == {
        "node.kubernetes.io/unreachable": 5, "node.kubernetes.io/not-ready": 60}
    assert "tolerations" not in pod(deployment(objs, "job"))
    assert [p["name"] for p in role_container(web)["ports"]] == ["http", "metrics"]
    (svc,) = helm.by_kind(objs, "Service")
    assert svc["spec"]["type"] == "NodePort" and svc["metadata"]["annotations"] == {"a": "b"}
    assert [p["name"] for p in svc["spec"]["ports"]] == ["http", "metrics"]


def test_migration_jobs_placement() -> None:
    """migration.nodeSelector / tolerations / affinity place the migration, downgrade and
    post-deploy Jobs' pods (a cluster whose nodes are all tainted); unset, none is rendered."""
    where = {"nodeSelector": {"pool": "jobs"},
             "tolerations": [{"key": "pool", "operator": "Equal", "value": "jobs", "effect": "NoSchedule"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}}
    objs = helm.render(overrides={"migration": {**where, "onRollback": "downgrade"},
                                  "waitForMigrations": {"acceptAhead": True},
                                  "commands": {"downgrade": ["workload", "downgrade"],
                                               "postMigrate": ["workload", "migrate", "--post"]}})
    jobs = helm.by_kind(objs, "Job")
    assert len(jobs) == 3, [j["metadata"]["name"] for j in jobs]
    for job in jobs:
        assert {k: pod(job).get(k) for k in where} == where, job["metadata"]["name"]
    role = pod(deployment(objs, "job"))
    assert "nodeSelector" not in role and all(t["key"] != "pool" for t in role["tolerations"]), \
        "the roles keep their own placement"
    for job in helm.by_kind(helm.render(), "Job"):
        assert not {"nodeSelector", "tolerations", "affinity"} & set(pod(job))
