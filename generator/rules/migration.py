"""Rules on the migration Jobs: hook mode, GitOps names, sidecars, rollback and the post-deploy phase."""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterator

from .. import model
from .base import Context, Hit, _p


def _jh003(ctx: Context) -> Iterator[Hit]:
    if not (ctx.flag("migration.enabled", True) and ctx.flag("waitForMigrations.enabled", True)):
        return
    wait = ctx.num("waitForMigrations.timeoutSeconds")
    deadline = ctx.num("migration.activeDeadlineSeconds")
    db_wait = ctx.num("migration.waitForDatabase.timeoutSeconds")
    if wait < deadline + db_wait:
        yield Hit([_p("waitForMigrations.timeoutSeconds"), _p("migration.activeDeadlineSeconds"),
                   _p("migration.waitForDatabase.timeoutSeconds")],
                  f"waitForMigrations.timeoutSeconds={wait:g} is shorter than migration.activeDeadlineSeconds"
                  f"={deadline:g} + migration.waitForDatabase.timeoutSeconds={db_wait:g}: handlers give up "
                  "while the migration may still legitimately run",
                  f"set waitForMigrations.timeoutSeconds to at least {deadline + db_wait:g}")


def _jh004(ctx: Context) -> Iterator[Hit]:
    if ctx.hook_mode() and ctx.flag("database.createdByRelease", False):
        yield Hit([_p("database.createdByRelease"), _p("migration.useHelmHooks")],
                  "database.createdByRelease=true with migration.useHelmHooks=true: the pre-install hook "
                  "waits for a database the release only creates after the hook (install deadlock)",
                  "create the database outside this release, or set migration.useHelmHooks=false")


def _jh005(ctx: Context) -> Iterator[Hit]:
    existing = ctx.get("database.existingSecret") or ""
    if ctx.hook_mode() and not existing and not ctx.flag("database.secretIsHook", True):
        yield Hit([_p("database.secretIsHook"), _p("migration.useHelmHooks")],
                  "hook mode with a chart-created database Secret that is not a hook: the pre-install "
                  "migration Job starts before the Secret exists (install deadlock)",
                  "set database.secretIsHook=true (the default) or use database.existingSecret")


def _jh006(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("migration.enabled", True) or ctx.flag("migration.useHelmHooks", True):
        return
    suffix = ctx.get("migration.jobNameSuffix", "hash")
    if suffix != "hash":
        yield Hit([_p("migration.jobNameSuffix"), _p("migration.useHelmHooks")],
                  f"migration.useHelmHooks=false with migration.jobNameSuffix={suffix!r}: the Job name does "
                  "not change with its spec, so upgrades fail on the immutable Job template or skip the migration",
                  'set migration.jobNameSuffix: "hash"')


def _migration_sidecars(ctx: Context) -> list[str]:
    chart = [s for s in ctx.get("sidecars") or [] if isinstance(s, Mapping) and s.get("migration")]
    own = [s for s in ctx.get("migration.sidecars") or [] if isinstance(s, Mapping)]
    return [str(s.get("name")) for s in chart + own]


def _jh016(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("migration.enabled", True) or model.native_sidecars(ctx.kube_version):
        return
    names = _migration_sidecars(ctx)
    if names:
        yield Hit([_p("migration.sidecars"), _p("sidecars")],
                  f"the migration Job has sidecars ({', '.join(names)}) on Kubernetes {ctx.kube_version} < "
                  f"{model.NATIVE_SIDECAR_MIN_VERSION}: without native sidecars a sidecar keeps running after "
                  "migrate exits and the Job never completes (the chart refuses to render it)",
                  "remove migration: true (and migration.sidecars) below 1.29, or target Kubernetes >= 1.29")


def _jh022(ctx: Context) -> Iterator[Hit]:
    if ctx.get("migration.onRollback", "none") != "downgrade":
        return
    if not ctx.get("commands.downgrade"):
        yield Hit([_p("migration.onRollback"), _p("commands.downgrade")],
                  "migration.onRollback=downgrade without commands.downgrade: the pre-rollback hook has nothing "
                  "to run (the chart refuses to render it)",
                  "set commands.downgrade to the app's downgrade command (it runs in the image being rolled back "
                  "to and must undo the revisions above that image's head)")
    if not ctx.hook_mode():
        yield Hit([_p("migration.onRollback"), _p("migration.useHelmHooks")],
                  "migration.onRollback=downgrade needs migration.useHelmHooks=true: only helm runs pre-rollback "
                  "hooks (a GitOps revert has no hook)",
                  "set migration.useHelmHooks: true, or migration.onRollback: none with waitForMigrations.acceptAhead")


def _jh030(ctx: Context) -> Iterator[Hit]:
    key = "migration.podReplacementPolicy"
    if (ctx.flag("migration.enabled", True) and ctx.get(key) == "Failed" and ctx.user_sets(key)
            and not model.at_least(ctx.kube_version, model.POD_REPLACEMENT_POLICY_MIN_VERSION)):
        yield Hit([_p(key)],
                  f"{key}=Failed is not rendered on Kubernetes {ctx.kube_version} < "
                  f"{model.POD_REPLACEMENT_POLICY_MIN_VERSION} (JobPodReplacementPolicy is beta from 1.29): the Job "
                  "controller may start a replacement migrate pod while the previous one is still terminating",
                  f"make commands.migrate safe when two run at once (the chart's contract), or target Kubernetes >= "
                  f"{model.POD_REPLACEMENT_POLICY_MIN_VERSION}")


def _post_deploy(ctx: Context) -> bool:
    return model.post_deploy_enabled(ctx.values)


def _jh035(ctx: Context) -> Iterator[Hit]:
    if _post_deploy(ctx) and not ctx.flag("waitForMigrations.acceptAhead", False):
        yield Hit([_p("waitForMigrations.acceptAhead"), _p("commands.postMigrate")],
                  "commands.postMigrate (two migration phases) with waitForMigrations.acceptAhead=false: after the "
                  "pre-deploy phase the schema is ahead of the previous image, so its pods that (re)start before the "
                  "post-deploy phase (a container restart, a replacement, a rollback) fail their schema gate "
                  "(the chart refuses to render it)",
                  "set waitForMigrations.acceptAhead: true, also in the release before the first two-phase upgrade "
                  "(old pods keep the values they were created with), and keep pre-deploy migrations expand-only")


def _jh036(ctx: Context) -> Iterator[Hit]:
    if not _post_deploy(ctx) or ctx.flag("migration.useHelmHooks", True):
        return
    if ctx.get("migration.postDeploy.gitOps") not in ("argocd", "plain"):
        yield Hit([_p("migration.postDeploy.gitOps"), _p("migration.useHelmHooks"), _p("commands.postMigrate")],
                  "commands.postMigrate in GitOps mode (migration.useHelmHooks=false) without "
                  "migration.postDeploy.gitOps: nothing says how your tool runs the post-deploy Job (the chart "
                  "refuses to render it)",
                  "set migration.postDeploy.gitOps: argocd (an Argo CD PostSync hook) or plain (a hash-named Job "
                  "that waits by itself: Flux Kustomization, kubectl apply); a Flux HelmRelease runs helm hooks: "
                  "keep migration.useHelmHooks: true")


def _jh037(ctx: Context) -> Iterator[Hit]:
    key = "migration.postDeploy.waitForRollout.timeoutSeconds"
    if not _post_deploy(ctx) or ctx.get(key) is None:
        return
    timeout, grace = ctx.num(key), model.max_grace(ctx.values)
    if timeout < grace:
        default = grace + int(ctx.num("waitForMigrations.timeoutSeconds"))
        yield Hit([_p(key)],
                  f"{key}={int(timeout)} is below the longest role grace ({grace} s): old pods may drain that long, "
                  "so the post-deploy Job gives up and the contract migration does not run (the chart refuses to "
                  "render it)",
                  f"remove it (the chart uses {default} s = the longest grace + waitForMigrations.timeoutSeconds) or "
                  f"set it to at least {grace}")


def _jh038(ctx: Context) -> Iterator[Hit]:
    if _post_deploy(ctx) and not model.at_least(ctx.kube_version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION):
        yield Hit([_p("commands.postMigrate")],
                  f"on Kubernetes {ctx.kube_version} < {model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION} the post-deploy "
                  "Job's wait-for-rollout cannot get a projected token (no kube-root-ca.crt ConfigMap): the chart "
                  "automounts its ServiceAccount token, so every container of that pod (post-migrate too) can list "
                  "the namespace's pods",
                  f"accept it (the Role allows only list on pods), or target Kubernetes >= "
                  f"{model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION}")
