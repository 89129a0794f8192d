"""The migration Job's name and prerequisites in both modes."""

from __future__ import annotations

import re

from generator.render import helm

GITOPS = helm.EXAMPLES_DIR / "gitops.yaml"


def job_name(**kwargs) -> str:
    (job,) = helm.by_kind(helm.render([GITOPS], **kwargs), "Job")
    return job["metadata"]["name"]


def test_plain_job_name_is_stable_for_the_same_spec():
    first = job_name()
    assert re.fullmatch(r"demo-jobhandlers-migration-[0-9a-f]{10}", first)
    assert job_name() == first
    # nothing of the Job changes with handler settings, nor with the cluster version between its
    # gates: the seccomp profile moves to an annotation below 1.19, podReplacementPolicy appears
    # from 1.29 (a changed spec is a new Job, as for any other change: the policy is set at creation)
    assert job_name(kube_version="1.19") == job_name(kube_version="1.28") != first
    assert job_name(kube_version="1.29") == job_name(kube_version="1.37") == first
    assert job_name(overrides={"handlers": {"job": {"replicas": 7}}, "drain": {"bufferSeconds": 99}}) == first


def test_plain_job_name_changes_with_its_spec():
    base = job_name()
    changed = {
        job_name(overrides={"image": {"tag": "3"}}),
        job_name(overrides={"migration": {"backoffLimit": 5}}),
        job_name(overrides={"migration": {"extraArgs": ["--verbose"]}}),
        job_name(overrides={"commands": {"migrate": ["workload", "migrate", "--to", "head"]}}),
    }
    assert base not in changed and len(changed) == 4


def test_fixed_suffix_gives_the_plain_name():
    assert job_name(overrides={"migration": {"jobNameSuffix": "fixed"}}) == "demo-jobhandlers-migration"


def test_plain_mode_renders_no_hooks_and_uses_the_release_secret():
    objs = helm.render(overrides={"migration": {"useHelmHooks": False}})
    assert not [o for o in objs if (o["metadata"].get("annotations") or {}).get("helm.sh/hook", "test") != "test"]
    (job,) = helm.by_kind(objs, "Job")
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "demo-jobhandlers"
    ref = spec["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "demo-jobhandlers-database", "key": "DATABASE_URL"}
    assert {s["metadata"]["name"] for s in helm.by_kind(objs, "Secret")} == {"demo-jobhandlers-database"}


def test_hook_mode_with_existing_secret_and_no_service_account():
    objs = helm.render(overrides={"database": {"existingSecret": "db", "existingSecretKey": "url"},
                                  "serviceAccount": {"create": False, "name": "jobs"}})
    assert helm.by_kind(objs, "Secret") == [] and helm.by_kind(objs, "ServiceAccount") == []
    (job,) = helm.by_kind(objs, "Job")
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "jobs"
    for c in spec["initContainers"] + spec["containers"]:
        assert c["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "db", "key": "url"}


def test_ttl_is_rendered_only_when_set():
    (job,) = helm.by_kind(helm.render(overrides={"migration": {"ttlSecondsAfterFinished": 600}}), "Job")
    assert job["spec"]["ttlSecondsAfterFinished"] == 600
    (job,) = helm.by_kind(helm.render(), "Job")
    assert "ttlSecondsAfterFinished" not in job["spec"]


def test_migration_disabled_renders_no_job_and_no_hooks():
    objs = helm.render(overrides={"migration": {"enabled": False}})
    assert helm.by_kind(objs, "Job") == []
    assert not [o for o in objs if (o["metadata"].get("annotations") or {}).get("helm.sh/hook", "test") != "test"]


def test_database_url_is_escaped():
    import base64
    objs = helm.render(overrides={"database": {"user": "a b", "password": "p@ss:w/rd%+"}})
    (secret,) = [s for s in helm.by_kind(objs, "Secret") if s["metadata"]["name"] == "demo-jobhandlers-database"]
    url = base64.b64decode(secret["data"]["DATABASE_URL"]).decode()
    assert url == "postgresql://a%20b:p%40ss%3Aw%2Frd%25%2B@postgres:5432/jobs"
