"""The post-deploy migration phase (commands.postMigrate): the Job in hook and GitOps mode, its
waits, its least-privilege API access per Kubernetes version, and what the chart refuses."""

from __future__ import annotations

import re
from typing import Any

import pytest

from generator import model
from generator.render import helm

from render_helpers import deep_merge as _merge

SPLIT: dict[str, Any] = {"commands": {"migrate": ["workload", "migrate", "--skip-post-deployment"],
                                      "postMigrate": ["workload", "migrate"]},
                         "waitForMigrations": {"acceptAhead": True}}
GITOPS = {"migration": {"useHelmHooks": False, "postDeploy": {"gitOps": "plain"}}}


def post_jobs(objs: list[dict]) -> list[dict]:
    return [j for j in helm.by_kind(objs, "Job") if j["metadata"]["labels"]["app.kubernetes.io/component"] == "post-migration"]


def render(*parts: dict[str, Any], kube_version: str = model.DEFAULT_KUBE_VERSION) -> list[dict]:
    return helm.render(overrides=_merge(*parts) if parts else None, kube_version=kube_version)


def fail_message(*parts: dict[str, Any]) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        render(*parts)
    return info.value.message


def test_one_phase_app_renders_no_post_deploy_objects():
    objs = render()
    assert post_jobs(objs) == []
    assert not [o for o in objs if o["kind"] in ("Role", "RoleBinding")]
    assert "post-migration" not in str([o["metadata"]["name"] for o in objs])


def test_hook_mode_post_install_post_upgrade_hook_with_its_waits():
    objs = render(SPLIT)
    (job,) = post_jobs(objs)
    ann = job["metadata"]["annotations"]
    assert job["metadata"]["name"] == "demo-jobhandlers-post-migration"
    assert ann["helm.sh/hook"] == "post-install,post-upgrade" and ann["helm.sh/hook-weight"] == "5"
    assert ann["helm.sh/hook-delete-policy"] == "before-hook-creation"
    pod = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["wait-for-migrations", "wait-for-rollout"]
    (main,) = pod["containers"]
    assert main["name"] == "post-migrate" and main["command"] == ["workload", "migrate"] and "args" not in main
    # the schema wait fails on "ahead" (a newer image migrated further), never accepts it
    loop = pod["initContainers"][0]["command"][2]
    assert 'if [ "$rc" -eq 4 ]' in loop and "exit 1" in loop and "accepted" not in loop
    assert pod["initContainers"][0]["args"] == ["workload", "db", "check"]
    # the post Job runs after the release's resources exist: the regular Secret, not the hook copy
    secret = main["env"][0]["valueFrom"]["secretKeyRef"]["name"]
    assert secret == "demo-jobhandlers-database"
    # activeDeadlineSeconds covers the rollout wait (longest grace 340 + 1200) and the migration (900)
    assert job["spec"]["activeDeadlineSeconds"] == 900 + 340 + 1200
    wait = {e["name"]: e.get("value") for e in pod["initContainers"][1]["env"]}
    assert wait["WAIT_TIMEOUT_SECONDS"] == str(340 + 1200) and wait["IMAGE"] == "jobhandlers/workload:1"
    assert wait["RELEASE_SELECTOR"] == "app.kubernetes.io/name=jobhandlers,app.kubernetes.io/instance=demo"
    # the pre-deploy Job is unchanged: a pre-install,pre-upgrade hook running commands.migrate
    (pre,) = [j for j in helm.by_kind(objs, "Job") if j not in post_jobs(objs)]
    assert pre["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert pre["spec"]["template"]["spec"]["containers"][0]["command"] == SPLIT["commands"]["migrate"]


def test_least_privilege_role_and_token_only_in_wait_for_rollout():
    objs = render(SPLIT)
    (role,) = helm.by_kind(objs, "Role")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    (binding,) = helm.by_kind(objs, "RoleBinding")
    (job,) = post_jobs(objs)
    pod = job["spec"]["template"]["spec"]
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"] == role["metadata"]["name"]
    sa = [s for s in helm.by_kind(objs, "ServiceAccount") if s["metadata"]["name"] == pod["serviceAccountName"]]
    assert sa and sa[0]["automountServiceAccountToken"] is False
    assert "helm.sh/hook" not in (sa[0]["metadata"].get("annotations") or {}), "must exist before post hooks"
    assert pod["automountServiceAccountToken"] is False
    mounts = {c["name"]: [m["name"] for m in c.get("volumeMounts") or []] for c in pod["initContainers"] + pod["containers"]}
    assert [n for n, m in mounts.items() if "api-token" in m] == ["wait-for-rollout"]
    (vol,) = [v for v in pod["volumes"] if v["name"] == "api-token"]
    sources = vol["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["expirationSeconds"] == 600
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    # no other Job, Deployment or pod of the release gets a token
    for dep in helm.by_kind(objs, "Deployment"):
        assert dep["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("version", model.KUBE_VERSIONS)
def test_token_per_kube_version(version: str):
    """Projected token + kube-root-ca.crt from 1.21 (KEP-1205); below, the automounted token (JH038)."""
    (job,) = post_jobs(render(SPLIT, kube_version=version))
    pod = job["spec"]["template"]["spec"]
    projected = model.at_least(version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION)
    assert pod["automountServiceAccountToken"] is (not projected)
    assert any(v["name"] == "api-token" for v in pod["volumes"]) is projected
    env = {e["name"]: e["value"] for e in pod["initContainers"][1]["env"]}
    assert env["API_TOKEN_DIR"] == ("/var/run/secrets/jobhandlers" if projected
                                    else "/var/run/secrets/kubernetes.io/serviceaccount")


def test_gitops_plain_is_hash_named_and_unannotated_argocd_is_a_postsync_hook():
    (plain,) = post_jobs(render(SPLIT, GITOPS))
    assert re.fullmatch(r"demo-jobhandlers-post-migration-[0-9a-f]{10}", plain["metadata"]["name"])
    assert not plain["metadata"].get("annotations")
    (again,) = post_jobs(render(SPLIT, GITOPS, {"handlers": {"job": {"replicas": 4}}}))
    assert again["metadata"]["name"] == plain["metadata"]["name"]
    (newer,) = post_jobs(render(SPLIT, GITOPS, {"image": {"tag": "3"}}))
    assert newer["metadata"]["name"] != plain["metadata"]["name"]
    (argo,) = post_jobs(render(SPLIT, GITOPS, {"migration": {"postDeploy": {"gitOps": "argocd"}}}))
    assert argo["metadata"]["annotations"] == {"argocd.argoproj.io/hook": "PostSync",
                                               "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}


def test_post_deploy_env_comes_after_migration_env():
    extra = {"migration": {"env": [{"name": "SKIP_POST_DEPLOYMENT_MIGRATIONS", "value": "true"}],
                           "postDeploy": {"env": [{"name": "SKIP_POST_DEPLOYMENT_MIGRATIONS", "value": "false"}]}}}
    objs = render(SPLIT, extra)
    (job,) = post_jobs(objs)
    names = [(e["name"], e.get("value")) for e in job["spec"]["template"]["spec"]["containers"][0]["env"]]
    skip = [v for n, v in names if n == "SKIP_POST_DEPLOYMENT_MIGRATIONS"]
    assert skip == ["true", "false"], names  # Kubernetes: the last entry wins
    (pre,) = [j for j in helm.by_kind(objs, "Job") if j not in post_jobs(objs)]
    assert [e.get("value") for e in pre["spec"]["template"]["spec"]["containers"][0]["env"]
            if e["name"] == "SKIP_POST_DEPLOYMENT_MIGRATIONS"] == ["true"]


def test_own_wait_command_and_image():
    own = {"migration": {"postDeploy": {"waitForRollout": {"image": "bitnami/kubectl:1.37", "timeoutSeconds": 4000,
                                                           "command": ["sh", "-c", "my-wait"]}}}}
    (job,) = post_jobs(render(SPLIT, own))
    (_, wait) = job["spec"]["template"]["spec"]["initContainers"]
    assert wait["image"] == "bitnami/kubectl:1.37" and wait["command"] == ["sh", "-c", "my-wait"]
    assert {e["name"]: e["value"] for e in wait["env"]}["WAIT_TIMEOUT_SECONDS"] == "4000"
    assert job["spec"]["activeDeadlineSeconds"] == 900 + 4000


def test_refusals_name_the_rule_and_the_fix():
    msg = fail_message({"commands": {"postMigrate": ["workload", "migrate"]}})
    assert "acceptAhead=false" in msg and "JH035" in msg and "Fix: set waitForMigrations.acceptAhead=true" in msg
    msg = fail_message(SPLIT, {"migration": {"useHelmHooks": False}})
    assert "JH036" in msg and "migration.postDeploy.gitOps=argocd" in msg
    msg = fail_message(SPLIT, {"migration": {"postDeploy": {"waitForRollout": {"timeoutSeconds": 339}}}})
    assert "timeoutSeconds=339 is below the longest role grace (340 s)" in msg and "JH037" in msg
    assert post_jobs(render(SPLIT, {"migration": {"postDeploy": {"waitForRollout": {"timeoutSeconds": 340}}}}))
    # a migration turned off renders no post-deploy phase (and refuses nothing)
    assert post_jobs(render({"commands": {"postMigrate": ["x"]}, "migration": {"enabled": False}})) == []
