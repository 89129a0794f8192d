"""Rules on the pod shape: image, resources, security contexts, identities, user containers and env."""

from __future__ import annotations

import re
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
from .base import Context, Hit, KeyPath, _p


def _jh009(ctx: Context) -> Iterator[Hit]:
    if ctx.get("image.digest"):
        return  # repository@digest: pinned whatever the tag says
    tag = ctx.get("image.tag")
    if tag is None or (isinstance(tag, str) and tag.strip() in ("", "latest")):
        shown = "empty" if not tag else repr(tag)
        yield Hit([_p("image.tag"), _p("image")],
                  f"image.tag is {shown}: the migration, init container and handlers may run different "
                  "images and the schema revision is not pinned",
                  'pin image.tag to a release, e.g. "2"')


def _jh010(ctx: Context) -> Iterator[Hit]:
    handlers = ctx.get("handlers") or {}
    for role in model.enabled_roles(ctx.values):
        spec = handlers.get(role) or {}
        resources = spec.get("resources") or {}
        if spec.get("port") is None and not (isinstance(resources, Mapping) and resources.get("requests")):
            yield Hit([_p(f"handlers.{role}.resources"), _p(f"handlers.{role}")],
                      f"job handler role {role!r} has no resources.requests: the scheduler packs it onto full "
                      "nodes and it is evicted first, mid-job",
                      f"set handlers.{role}.resources.requests (cpu and memory)")


def _jh017(ctx: Context) -> Iterator[Hit]:
    if model.native_sidecars(ctx.kube_version) or not ctx.flag("waitForMigrations.enabled", True):
        return
    paths, names = [], []
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.values.get("handlers") or {}).get(role) or {}
        own = [str(s.get("name")) for s in spec.get("sidecars") or [] if isinstance(s, Mapping)]
        if own:
            paths.append(_p(f"handlers.{role}.sidecars"))
            names += own
    names += [str(s.get("name")) for s in ctx.get("sidecars") or [] if isinstance(s, Mapping)]
    if names:
        yield Hit(paths + [_p("sidecars")],
                  f"on Kubernetes {ctx.kube_version} < {model.NATIVE_SIDECAR_MIN_VERSION} the sidecars "
                  f"({', '.join(sorted(set(names)))}) are regular containers: they start only after "
                  "wait-for-migrations, so a database proxy cannot serve the wait, and they get SIGTERM with the "
                  "handler instead of after it",
                  "let the wait and the handler reach the database directly below 1.29, or target >= 1.29")


RESTRICTED_CAPS = {"NET_BIND_SERVICE"}


def _restricted_problems(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[str]:
    """What makes a pod/container security context leave Pod Security "restricted"."""
    out = []
    if pod.get("runAsNonRoot") is False or container.get("runAsNonRoot") is False:
        out.append("runAsNonRoot: false")
    if not (pod.get("runAsNonRoot") or container.get("runAsNonRoot")):
        out.append("runAsNonRoot unset")
    for ctx_name, c in (("pod", pod), ("container", container)):
        if c.get("runAsUser") == 0:
            out.append(f"{ctx_name} runAsUser: 0")
        profile = (c.get("seccompProfile") or {}).get("type")
        if profile == "Unconfined":
            out.append(f"{ctx_name} seccompProfile Unconfined")
    if not ((pod.get("seccompProfile") or {}).get("type") or (container.get("seccompProfile") or {}).get("type")):
        out.append("no seccompProfile")
    if container.get("allowPrivilegeEscalation") is not False:
        out.append("allowPrivilegeEscalation not false")
    if container.get("privileged"):
        out.append("privileged: true")
    caps = container.get("capabilities") or {}
    if "ALL" not in [str(c) for c in caps.get("drop") or []]:
        out.append("capabilities.drop lacks ALL")
    added = sorted(set(str(c) for c in caps.get("add") or []) - RESTRICTED_CAPS)
    if added:
        out.append("capabilities.add " + ",".join(added))
    return out


def _restricted_omissions(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[str]:
    """What restricted requires that the merged contexts leave unset (a `null` over the chart's
    default, or a context of the user's without it). A value restricted forbids is JH073's,
    named at its own key, so the two rules never report one cause twice."""
    out = []
    if pod.get("runAsNonRoot") is None and container.get("runAsNonRoot") is None:
        out.append("runAsNonRoot unset")
    if not ((pod.get("seccompProfile") or {}).get("type") or (container.get("seccompProfile") or {}).get("type")):
        out.append("no seccompProfile")
    if container.get("allowPrivilegeEscalation") is None:
        out.append("allowPrivilegeEscalation unset (restricted needs false)")
    caps = container.get("capabilities")
    if not isinstance(caps, Mapping) or caps.get("drop") is None:
        out.append("capabilities.drop unset (restricted needs ALL)")
    return out


def _deep(base: Any, over: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        return {**base, **{k: _deep(base.get(k), v) for k, v in over.items()}}
    return over if over is not None else base


def _pod_context(ctx: Context, role: str | None) -> Mapping[str, Any]:
    """The pod-level security context of a role's pods: the chart-wide podSecurityContext, the
    role's over it (role None: the chart-wide one, as the migration Job's)."""
    pod = ctx.get("podSecurityContext") or {}
    if role is not None:
        pod = _deep(pod, ctx.get(f"handlers.{role}.podSecurityContext") or {})
    return pod if isinstance(pod, Mapping) else {}


def _jh018(ctx: Context) -> Iterator[Hit]:
    """Per role whose own contexts the file sets, at them; the other roles together, once, at
    the chart-wide contexts (one cause, one finding)."""
    shared: dict[str, list[str]] = {}
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.values.get("handlers") or {}).get(role) or {}
        container = _deep(ctx.get("containerSecurityContext") or {}, spec.get("securityContext") or {})
        problems = _restricted_omissions(_pod_context(ctx, role), container)
        if not problems:
            continue
        own = [_p(f"handlers.{role}.{k}") for k in ("securityContext", "podSecurityContext")
               if ctx.user_sets(f"handlers.{role}.{k}")]
        if not own:
            shared[role] = problems
            continue
        yield _jh018_hit(own, f"role {role}", problems)
    if shared:
        problems = sorted({p for ps in shared.values() for p in ps})
        yield _jh018_hit([_p("containerSecurityContext"), _p("podSecurityContext")],
                         f"role{'s' if len(shared) > 1 else ''} {', '.join(sorted(shared))}", problems)


def _jh018_hit(paths: list[KeyPath], who: str, problems: list[str]) -> Hit:
    return Hit(paths, f"{who} leave{'' if who.startswith('roles ') else 's'} Pod Security "
               f"\"restricted\" ({'; '.join(problems)}): a namespace that enforces restricted rejects its pods",
               "keep the chart's defaults (runAsNonRoot, RuntimeDefault seccomp, no privilege escalation, "
               "drop ALL), or label the namespace for the Pod Security level you need")


_IDENTITY_VARS = ("JOBHANDLERS_POD_NAME", "JOBHANDLERS_ORDINAL")


def _jh023(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        kind = model.role_kind(ctx.values, role)
        if kind == "StatefulSet":
            if ctx.user_sets(f"handlers.{role}.strategy"):
                yield Hit([_p(f"handlers.{role}.strategy")],
                          f"role {role} is a StatefulSet, but sets strategy (a Deployment's): a StatefulSet never "
                          f"surges a second pod with the same identity, so strategy is ignored",
                          f"remove handlers.{role}.strategy; use handlers.{role}.updateStrategy (RollingUpdate with "
                          f"partition / maxUnavailable, or OnDelete)")
            continue
        for key in ("podManagementPolicy", "updateStrategy"):
            if ctx.get(f"handlers.{role}.{key}") is not None:
                yield Hit([_p(f"handlers.{role}.{key}"), _p(f"handlers.{role}.kind")],
                          f"role {role} is a Deployment, but sets {key}, which applies only to kind: StatefulSet "
                          f"(the chart refuses it)",
                          f"set handlers.{role}.kind: StatefulSet for stable identities, or remove {key}")


def _jh024(ctx: Context) -> Iterator[Hit]:
    if model.at_least(ctx.kube_version, model.STS_MAX_UNAVAILABLE_MIN_VERSION):
        return
    for role in model.enabled_roles(ctx.values):
        if model.role_kind(ctx.values, role) != "StatefulSet":
            continue
        if ctx.get(f"handlers.{role}.updateStrategy.rollingUpdate.maxUnavailable") is not None:
            yield Hit([_p(f"handlers.{role}.updateStrategy.rollingUpdate.maxUnavailable")],
                      f"role {role}: StatefulSet rollingUpdate.maxUnavailable on Kubernetes {ctx.kube_version} < "
                      f"{model.STS_MAX_UNAVAILABLE_MIN_VERSION} (MaxUnavailableStatefulSet off by default): the chart "
                      f"leaves it out, and the rollout replaces one pod at a time, each after its full drain",
                      f"expect a rollout of replicas x the drain time, or target Kubernetes >= "
                      f"{model.STS_MAX_UNAVAILABLE_MIN_VERSION}")


def _jh025(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        spec = ctx.get(f"handlers.{role}") or {}
        stable = model.role_kind(ctx.values, role) == "StatefulSet"
        for key in ("command", "args", "env"):
            text = repr(spec.get(key))
            for var in _IDENTITY_VARS:
                if f"$({var})" not in text:
                    continue
                if not stable:
                    yield Hit([_p(f"handlers.{role}.{key}"), _p(f"handlers.{role}.kind")],
                              f"role {role} uses $({var}) in {key}, but only StatefulSet roles get it: in a "
                              f"Deployment the text stays literal (the chart refuses it)",
                              f"set handlers.{role}.kind: StatefulSet")
                elif var == "JOBHANDLERS_ORDINAL" and not model.at_least(ctx.kube_version, model.ORDINAL_MIN_VERSION):
                    yield Hit([_p(f"handlers.{role}.{key}")],
                              f"role {role} uses $(JOBHANDLERS_ORDINAL) in {key}, but Kubernetes {ctx.kube_version} < "
                              f"{model.ORDINAL_MIN_VERSION} has no pod label apps.kubernetes.io/pod-index, so the "
                              f"chart cannot render it (the chart refuses it)",
                              f"use $(JOBHANDLERS_POD_NAME) (the ordinal is its last dash-separated part), or target "
                              f"Kubernetes >= {model.ORDINAL_MIN_VERSION}")


def _jh028(ctx: Context) -> Iterator[Hit]:
    tag = ctx.get("image.tag")
    if not isinstance(tag, str) or not tag:
        return  # empty: JH009 (or the chart's appVersion); not a string: the schema
    repo = ctx.get("image.repository")
    if "@" in tag:
        head, _, digest = tag.partition("@")
        yield Hit([_p("image.tag")],
                  f"image.tag={tag!r} holds a digest (@{digest}): a tag cannot carry one, and the chart copies the tag "
                  "into the app.kubernetes.io/version label (the chart refuses to render it)",
                  f"move the digest to image.digest: image.digest: {digest!r} and image.tag: {head!r} (the image is "
                  f"then {repo}@{digest}; the tag only names the version label)")
    elif not re.fullmatch(model.IMAGE_TAG_PATTERN, tag):
        yield Hit([_p("image.tag")],
                  f"image.tag={tag!r} is not an image tag (at most 128 of A-Z a-z 0-9 _ . -, not starting with . or "
                  f"-): {repo}:{tag} is not a valid image reference (the chart refuses to render it)",
                  'set image.tag to the release tag, e.g. "2"; a digest goes to image.digest')


def _user_containers(ctx: Context) -> Iterator[tuple[KeyPath, Mapping[str, Any]]]:
    """(key path, container) of every container the user gives: sidecars and extraInitContainers,
    chart-wide, per role and of the migration Job."""
    keys = ["sidecars", "extraInitContainers", "migration.sidecars", "migration.extraInitContainers"]
    keys += [f"handlers.{role}.{k}" for role in sorted(ctx.get("handlers") or {})
             for k in ("sidecars", "extraInitContainers")]
    for key in keys:
        items = ctx.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            if isinstance(c, Mapping):
                yield _p(key) + (i,), c


def _jh031(ctx: Context) -> Iterator[Hit]:
    for path, c in _user_containers(ctx):
        lifecycle = c.get("lifecycle") if isinstance(c.get("lifecycle"), Mapping) else {}
        for hook in ("preStop", "postStart"):
            handler = lifecycle.get(hook)
            sleep = handler.get("sleep") if isinstance(handler, Mapping) else None
            if not isinstance(sleep, Mapping):
                continue
            where = dotted(path)
            at = [path + ("lifecycle", hook, "sleep", "seconds"), path + ("lifecycle", hook, "sleep"), path]
            if not model.at_least(ctx.kube_version, model.NATIVE_SLEEP_MIN_VERSION):
                yield Hit(at, f"{where} (container {c.get('name')}) has a lifecycle.{hook} sleep action, but Kubernetes "
                          f"{ctx.kube_version} < {model.NATIVE_SLEEP_MIN_VERSION} has none: the API server rejects the "
                          "pod (the chart refuses to render it)",
                          f'use exec: {{command: [sleep, "N"]}} (needs sleep in the image), or target Kubernetes >= '
                          f"{model.NATIVE_SLEEP_MIN_VERSION}")
            elif sleep.get("seconds") == 0 and not model.at_least(ctx.kube_version, model.SLEEP_ZERO_MIN_VERSION):
                yield Hit(at, f"{where} (container {c.get('name')}) has lifecycle.{hook}.sleep.seconds=0, but Kubernetes "
                          f"{ctx.kube_version} < {model.SLEEP_ZERO_MIN_VERSION} rejects a 0-second sleep "
                          "(PodLifecycleSleepActionAllowZero) (the chart refuses to render it)",
                          f"remove the {hook} hook (a 0-second sleep does nothing), or target Kubernetes >= "
                          f"{model.SLEEP_ZERO_MIN_VERSION}")


def _jh032(ctx: Context) -> Iterator[Hit]:
    found: dict[tuple[str, str], tuple[list[str], Any, Any]] = {}
    for what, (key, res) in model.owned_resources(ctx.values).items():
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if not (isinstance(requests, Mapping) and isinstance(limits, Mapping)):
            continue
        src = key if isinstance(ctx.get(key), Mapping) and ctx.get(key) else "defaultResources"
        for name in sorted(set(requests) & set(limits)):
            try:
                over = model.parse_quantity(requests[name]) > model.parse_quantity(limits[name])
            except ValueError:
                continue  # the API server names a malformed quantity itself
            if over:
                found.setdefault((src, name), ([], requests[name], limits[name]))[0].append(what)
    for (src, name), (whats, request, limit) in found.items():
        yield Hit([_p(f"{src}.limits.{name}"), _p(f"{src}.requests.{name}"), _p(src)],
                  f"{', '.join(whats)}: requests.{name}={request} is above limits.{name}={limit} ({src}): the API "
                  "server rejects the pod (a chart default request merged with a lower limit of yours?)",
                  f"set {src}.requests.{name} too (at most the limit), or null it to let Kubernetes use the limit")


# Service-link variables the kubelet adds (enableServiceLinks): FOO_SERVICE_HOST, FOO_PORT_80_TCP, ...
_SERVICE_LINK = re.compile(r"_(SERVICE_HOST|SERVICE_PORT(_\w+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$")


def _jh026(ctx: Context) -> Iterator[Hit]:
    literal: dict[tuple[tuple[str | int, ...], str], list[str]] = {}  # (entry path, name) -> containers
    resolved: dict[tuple[tuple[str | int, ...], str], list[str]] = {}
    values: dict[tuple[str | int, ...], str] = {}
    for c in model.env_containers(ctx.values):
        names = set(c.chart_env)
        for path, entry in c.user_env:
            value = entry.get("value")
            for ref in model.env_references(value) if isinstance(value, str) else []:
                if not ref or _SERVICE_LINK.search(ref):
                    continue
                values[path] = value
                # with envFrom, a name the chart does not own may come from there
                known = ref in names or (c.env_from and ref not in model.CHART_ENV_NAMES)
                (resolved if known else literal).setdefault((path, ref), []).append(c.where)
            names.add(str(entry.get("name")))
    for (path, ref), where in literal.items():
        elsewhere = resolved.get((path, ref))
        if "sidecars" in path or "extraInitContainers" in path:
            fix = f"the chart gives extra init containers and sidecars none of its variables: define {ref} above it"
        elif ref in model.CHART_ENV_NAMES and ref not in model.COMMON_ENV:
            fix = f"{ref} exists only in a role's handler and wait-for-migrations containers: move the entry to " \
                  "handlers.<role>.env"
        else:
            fix = f"define {ref} above it in the same list (chart-wide env comes before handlers.<role>.env and " \
                  "migration.env)"
        yield Hit([(*path, "value"), path],
                  f"{values[path]!r} refers to $({ref}), which is not defined before it in {', '.join(where)}"
                  + (f" (only in {', '.join(elsewhere)})" if elsewhere else "")
                  + ": Kubernetes expands $(VAR) only from names defined earlier in the same container's env, "
                  "so there the text stays literal", fix + f", or write $$({ref}) for the literal text")


def _jh061(ctx: Context) -> Iterator[Hit]:
    """A kind switch is judged against the cluster (the chart's lookup, templates/_kindswitch.tpl):
    the values alone do not say which kind is installed, so offline `check` finds nothing."""
    return iter(())
