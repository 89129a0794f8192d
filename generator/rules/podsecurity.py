"""JH073: a user override that makes a rendered pod break Pod Security `restricted`, one finding
per field, named by the Pod Security check it breaks (the names of the Pod Security Standards).

A warning: the user's namespace may enforce `baseline`. JH018 judges a role's merged security
contexts as a whole; this rule names each field, in every pod the chart renders (handlers,
migration Job, their init containers and sidecars), and the volumes and ports restricted forbids.
JH076 (an error) is what the API server itself refuses in a container's merged context.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
from .base import Context, Hit, KeyPath, _p
from .pod import RESTRICTED_CAPS, _deep, _pod_context, _restricted_omissions, _user_containers

# Volume types Pod Security `restricted` allows ("Volume Types"); hostPath is its own check.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret", "image"}
VOLUME_KEYS = {"name"}

_FIX = {
    "runAsNonRoot": "remove it (the chart's default is runAsNonRoot: true) or set runAsNonRoot: true",
    "runAsUser": "remove it or set a non-zero UID (the chart's default is 10001)",
    "privileged": "remove privileged (or set it false)",
    "privilegeEscalation": "set allowPrivilegeEscalation: false",
    "capabilities": 'drop ALL (capabilities: {drop: ["ALL"]}) and add at most NET_BIND_SERVICE',
    "seccompProfile": "use seccompProfile type RuntimeDefault (the chart's default) or Localhost",
    "hostPathVolumes": "use a PersistentVolumeClaim, configMap, secret or emptyDir instead of hostPath",
    "volumeTypes": "use a configMap, secret, emptyDir, projected, csi, ephemeral or persistentVolumeClaim volume",
    "hostPorts": "remove hostPort (reach the pod through a Service)",
}


def _hit(path: KeyPath, check: str, what: str, where: str) -> Hit:
    return Hit([path], f"{what} ({dotted(path)}) breaks Pod Security \"restricted\" (check {check}) in {where}: a "
               "namespace that enforces restricted refuses these pods", _FIX[check] + ", or run the release in a "
               "namespace labelled for the Pod Security level it needs (e.g. baseline)")


def _explicit(path: KeyPath, sc: Any, where: str, container: bool) -> Iterator[Hit]:
    """The fields a security context sets to a value restricted forbids."""
    if not isinstance(sc, Mapping):
        return
    if sc.get("runAsNonRoot") is False:
        yield _hit(path + ("runAsNonRoot",), "runAsNonRoot", "runAsNonRoot: false", where)
    if sc.get("runAsUser") == 0 and not isinstance(sc.get("runAsUser"), bool):
        yield _hit(path + ("runAsUser",), "runAsUser", "runAsUser: 0 (root)", where)
    profile = sc.get("seccompProfile")
    if isinstance(profile, Mapping) and profile.get("type") == "Unconfined":
        yield _hit(path + ("seccompProfile", "type"), "seccompProfile", "seccompProfile type Unconfined", where)
    if not container:
        return
    if sc.get("privileged") is True:
        yield _hit(path + ("privileged",), "privileged", "privileged: true", where)
    if sc.get("allowPrivilegeEscalation") is True:
        yield _hit(path + ("allowPrivilegeEscalation",), "privilegeEscalation", "allowPrivilegeEscalation: true",
                   where)
    caps = sc.get("capabilities")
    if isinstance(caps, Mapping):
        added = sorted({str(c) for c in caps.get("add") or []} - RESTRICTED_CAPS)
        if added:
            yield _hit(path + ("capabilities", "add"), "capabilities", f"capabilities.add {', '.join(added)}", where)
        drop = caps.get("drop")
        if isinstance(drop, list) and "ALL" not in [str(c) for c in drop]:
            yield _hit(path + ("capabilities", "drop"), "capabilities", "capabilities.drop without ALL", where)


def _chart_contexts(ctx: Context) -> Iterator[Hit]:
    """The chart-wide and per-role contexts the chart's own containers and every pod get."""
    roles = sorted(r for r, s in (ctx.get("handlers") or {}).items() if isinstance(s, Mapping))
    yield from _explicit(_p("podSecurityContext"), ctx.user.get("podSecurityContext"), "every pod", False)
    yield from _explicit(_p("containerSecurityContext"), ctx.user.get("containerSecurityContext"),
                         "every chart container", True)
    for role in roles:
        spec = (ctx.user.get("handlers") or {}).get(role)
        if not isinstance(spec, Mapping):
            continue
        yield from _explicit(_p(f"handlers.{role}.podSecurityContext"), spec.get("podSecurityContext"),
                             f"role {role}'s pods", False)
        yield from _explicit(_p(f"handlers.{role}.securityContext"), spec.get("securityContext"),
                             f"role {role}'s containers", True)


def _user_container_hits(ctx: Context) -> Iterator[Hit]:
    """Sidecars and extra init containers (written as given): the values restricted forbids, and hostPorts.
    A field they leave unset (allowPrivilegeEscalation, capabilities.drop) is not judged here."""
    for path, c in _user_containers(ctx):
        where = f"container {c.get('name')}"
        yield from _explicit(path + ("securityContext",), c.get("securityContext"), where, True)
        for i, port in enumerate(c.get("ports") or []):
            if isinstance(port, Mapping) and port.get("hostPort"):
                yield _hit(path + ("ports", i, "hostPort"), "hostPorts", f"hostPort {port.get('hostPort')}", where)


def _volume_and_port_hits(ctx: Context) -> Iterator[Hit]:
    keys = ["extraVolumes", "migration.extraVolumes"]
    keys += [f"handlers.{role}.extraVolumes" for role in sorted(ctx.get("handlers") or {})]
    for key in keys:
        items = ctx.get(key)
        for i, vol in enumerate(items if isinstance(items, list) else []):
            if not isinstance(vol, Mapping):
                continue
            where = f"volume {vol.get('name')}"
            for kind in sorted(set(vol) - VOLUME_KEYS - RESTRICTED_VOLUMES):
                check = "hostPathVolumes" if kind == "hostPath" else "volumeTypes"
                yield _hit(_p(key) + (i, kind), check, f"a {kind} volume", where)
    for role in sorted(ctx.get("handlers") or {}):
        ports = ctx.get(f"handlers.{role}.extraPorts")
        for i, port in enumerate(ports if isinstance(ports, list) else []):
            if isinstance(port, Mapping) and port.get("hostPort"):
                yield _hit(_p(f"handlers.{role}.extraPorts") + (i, "hostPort"), "hostPorts",
                           f"hostPort {port.get('hostPort')}", f"role {role}'s handler container")


def _jh073(ctx: Context) -> Iterator[Hit]:
    seen: set[tuple[str, ...]] = set()
    for hit in (*_chart_contexts(ctx), *_user_container_hits(ctx), *_volume_and_port_hits(ctx)):
        key = (dotted(hit.paths[0]), hit.message)
        if key not in seen:
            seen.add(key)
            yield hit


def _jh074(ctx: Context) -> Iterator[Hit]:
    """JH074: a sidecar or extra init container (written as given: the chart adds no security
    context to it) that leaves unset what restricted requires, judged with the pod-level
    context it runs under (chart-wide podSecurityContext, a role's over it)."""
    for path, c in _user_containers(ctx):
        sc = c.get("securityContext")
        problems = _restricted_omissions(_pod_context(ctx, str(path[1]) if path[0] == "handlers" else None),
                                         sc if isinstance(sc, Mapping) else {})
        if problems:
            yield Hit([path + ("securityContext",), path],
                      f"{dotted(path)} (container {c.get('name')}) leaves Pod Security \"restricted\" "
                      f"({'; '.join(problems)}): the chart adds no security context to your containers, and a "
                      "namespace that enforces restricted refuses their pod",
                      "give it securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}} (and "
                      "runAsNonRoot / a seccompProfile where its pod's context has none), or label the namespace "
                      "for the Pod Security level it needs")


def _escalation_conflict(sc: Any) -> tuple[str, str] | None:
    """(the field, what it sets) the API server's ValidateSecurityContext refuses beside
    allowPrivilegeEscalation: false (1.29 and 1.37 alike): privileged: true, or CAP_SYS_ADMIN added
    (literally that name)."""
    if not isinstance(sc, Mapping) or sc.get("allowPrivilegeEscalation") is not False:
        return None
    if sc.get("privileged") is True:
        return "privileged", "privileged: true"
    caps = sc.get("capabilities")
    if isinstance(caps, Mapping) and "CAP_SYS_ADMIN" in [str(c) for c in caps.get("add") or []]:
        return "capabilities.add", "capabilities.add CAP_SYS_ADMIN"
    return None


def _jh076(ctx: Context) -> Iterator[Hit]:
    """JH076: a container security context the API server refuses, as the chart renders it: a
    rendered role's securityContext merged over containerSecurityContext (whose default is
    allowPrivilegeEscalation: false), the chart-wide one (the migration Job, the wait containers),
    and the sidecars and extra init containers as given."""
    chart_wide = ctx.get("containerSecurityContext") or {}
    targets: list[tuple[list[KeyPath], Any, str]] = [
        ([_p("containerSecurityContext")], chart_wide, "every chart container (the migration Job, wait-for-migrations)")]
    for role in model.enabled_roles(ctx.values):
        own = ctx.get(f"handlers.{role}.securityContext") or {}
        if own:
            targets.append(([_p(f"handlers.{role}.securityContext"), _p("containerSecurityContext")],
                            _deep(chart_wide, own), f"role {role}'s handler container"))
    for path, c in _user_containers(ctx):
        targets.append(([path + ("securityContext",), path], c.get("securityContext"), f"container {c.get('name')}"))
    for paths, sc, where in targets:
        conflict = _escalation_conflict(sc)
        if conflict:
            field, what = conflict
            yield Hit(paths, f"{what} with allowPrivilegeEscalation: false in {where} ({dotted(paths[0])}): the API "
                      "server refuses the container (\"cannot set `allowPrivilegeEscalation` to false and ...\"), so "
                      "the release fails to install",
                      f"set allowPrivilegeEscalation: true beside {field} (the chart's default is false), or remove it")
