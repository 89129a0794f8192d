"""Rules on launching roles (handlers.<role>.launcher): RBAC, API server egress, the Pod Security
of the launched pods, and a grace sized for work that no longer runs in the pod."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterator

from .. import model
from .base import Context, Hit, _p


def _launchers(ctx: Context) -> Iterator[tuple[str, model.Launcher]]:
    for role in model.enabled_roles(ctx.values):
        launcher = model.role_launcher(ctx.values, role)
        if launcher.enabled:
            yield role, launcher


def _jh044(ctx: Context) -> Iterator[Hit]:
    for role, launcher in _launchers(ctx):
        if not launcher.rules:
            key = f"handlers.{role}.launcher.rules"
            yield Hit([_p(key), _p(f"handlers.{role}.launcher.enabled")],
                      f"{key} is [] on a launching role: its API token may do nothing, and every launch fails "
                      "with 403 Forbidden (the chart refuses to render it)",
                      f"remove {key} (null: the launcher default, batch Jobs and pods) or list the PolicyRules "
                      "the app needs")


def _jh045(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        raw = ((ctx.get("handlers") or {}).get(role) or {}).get("launcher") or {}
        if raw.get("enabled") is True:
            continue
        ps = raw.get("podSecurity") or {}
        keys = [k for k, on in (("rules", raw.get("rules") is not None), ("namespace", bool(raw.get("namespace"))),
                                ("podSecurity.mutate", ps.get("mutate") is True)) if on]
        if keys:
            paths = [_p(f"handlers.{role}.launcher.{k}") for k in keys]
            yield Hit(paths + [_p(f"handlers.{role}.launcher")],
                      f"handlers.{role}.launcher sets {', '.join(keys)} but launcher.enabled is false: nothing "
                      "is rendered for them (the chart refuses to render it)",
                      f"set handlers.{role}.launcher.enabled=true, or remove them")


def _jh046(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("networkPolicy.enabled", False) or ctx.get("networkPolicy.apiServer.to") \
            or ctx.get("networkPolicy.extraEgress"):
        return
    for role in model.enabled_roles(ctx.values):
        if not model.role_calls_api(ctx.values, role):
            continue
        own = ((ctx.get("handlers") or {}).get(role) or {}).get("networkPolicy") or {}
        if own.get("extraEgress"):
            continue
        launches = model.role_launcher(ctx.values, role).enabled
        what, lost = (("launches Kubernetes objects", "nothing is launched or adopted") if launches else
                      ("sets its pod-deletion-cost (scaleIn.preferIdle)", "its idle pods do not go first"))
        yield Hit([_p("networkPolicy.apiServer.to"), _p("networkPolicy.enabled")],
                  f"networkPolicy.enabled=true and role {role} {what}, but "
                  "networkPolicy.apiServer.to is empty and there is no extraEgress: its NetworkPolicy denies "
                  f"every call to the API server, so {lost} (the chart refuses to render it)",
                  "set networkPolicy.apiServer.to to the API server's endpoint addresses (`kubectl get endpointslice "
                  "-n default -l kubernetes.io/service-name=kubernetes`), e.g. [{ipBlock: {cidr: 172.18.0.2/32}}], "
                  "and networkPolicy.apiServer.ports to their port")


def _jh047(ctx: Context) -> Iterator[Hit]:
    for role, launcher in _launchers(ctx):
        if model.launched_pods_admitted(launcher, ctx.kube_version):
            continue
        why = ""
        if launcher.mutate and not model.at_least(ctx.kube_version, model.MUTATING_ADMISSION_POLICY_MIN_VERSION):
            why = (f"; podSecurity.mutate needs Kubernetes >= {model.MUTATING_ADMISSION_POLICY_MIN_VERSION} "
                   f"(MutatingAdmissionPolicy GA, KEP-3962), not {ctx.kube_version}")
        elif launcher.mutate and not launcher.pod_selector:
            why = "; podSecurity.mutate needs podSecurity.podSelector (the launched pods' labels)"
        elif launcher.mutate:
            why = "; podSecurity.mutate only lifts baseline pods to restricted"
        base = f"handlers.{role}.launcher.podSecurity"
        yield Hit([_p(f"{base}.podsMeet"), _p(f"{base}.enforce"), _p(f"{base}.mutate"), _p(f"handlers.{role}.launcher")],
                  f"the launched pods of {role} meet Pod Security {launcher.pods_meet}, but {launcher.enforce} is "
                  f"enforced where they run: the Job controller cannot create them and every launched job fails{why} "
                  "(the chart refuses to render it)",
                  f"launch into a namespace labelled {launcher.pods_meet} (handlers.{role}.launcher.namespace, "
                  f"podSecurity.enforce: {launcher.pods_meet}), or on Kubernetes >= "
                  f"{model.MUTATING_ADMISSION_POLICY_MIN_VERSION} podSecurity.mutate=true with the launched pods' "
                  "podSecurity.podSelector")


def _jh048(ctx: Context) -> Iterator[Hit]:
    for role, launcher in _launchers(ctx):
        launched = launcher.max_job_runtime
        own = ((ctx.get("handlers") or {}).get(role) or {}).get("maxJobRuntimeSeconds")
        if not isinstance(launched, int) or isinstance(own, bool) or not isinstance(own, (int, float)):
            continue
        if own >= launched:
            grace = model.role_grace(ctx.values, role).effective
            key = f"handlers.{role}.maxJobRuntimeSeconds"
            yield Hit([_p(key), _p(f"handlers.{role}.launcher.maxJobRuntimeSeconds")],
                      f"{key}={own} is not below launcher.maxJobRuntimeSeconds={launched}: the grace ({grace} s) is "
                      "sized for the launched jobs, which run outside the pod and outlive it; rollouts, drains and "
                      "autoscalers wait on it for nothing",
                      f"set {key} to the launcher's longest in-pod step (a launch, collecting a job's outputs: "
                      "seconds to a few minutes)")


def _jh049(ctx: Context) -> Iterator[Hit]:
    if model.at_least(ctx.kube_version, model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION):
        return
    for role, _ in _launchers(ctx):
        yield Hit([_p(f"handlers.{role}.launcher.enabled")],
                  f"role {role} launches, and Kubernetes {ctx.kube_version} < "
                  f"{model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION} has no kube-root-ca.crt ConfigMap for a projected "
                  "token: its ServiceAccount token is automounted into every container of its pods",
                  "accept it (the Role's rules bound what it may do), or target Kubernetes >= "
                  f"{model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION}")
