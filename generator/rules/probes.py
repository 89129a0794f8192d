"""Rules on the probes: windows, handlers, timeouts and the version gates of probe fields."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterator, Sequence

from .. import model
from .base import Context, Hit, KeyPath, _p


def _jh002(ctx: Context) -> Iterator[Hit]:
    live, ready, beat = ctx.num("liveness.maxAgeSeconds"), ctx.num("readiness.maxAgeSeconds"), ctx.num(
        "heartbeat.intervalSeconds")
    if live < 3 * ready:
        yield Hit([_p("liveness.maxAgeSeconds"), _p("readiness.maxAgeSeconds")],
                  f"liveness.maxAgeSeconds={live:g} is less than 3 * readiness.maxAgeSeconds={ready:g}: "
                  "a slow handler is restarted instead of just taken out of rotation",
                  f"set liveness.maxAgeSeconds to at least {3 * ready:g}")
    if ready < 3 * beat:
        yield Hit([_p("readiness.maxAgeSeconds"), _p("heartbeat.intervalSeconds")],
                  f"readiness.maxAgeSeconds={ready:g} is less than 3 * heartbeat.intervalSeconds={beat:g}: "
                  "one late heartbeat flaps readiness",
                  f"set readiness.maxAgeSeconds to at least {3 * beat:g}")


def _jh002_roles(ctx: Context) -> Iterator[Hit]:
    """JH002 generalised to every probe kind: per role, the liveness window must stay at least
    3x the readiness window (period x failureThreshold, plus maxAge for heartbeats)."""
    for role in model.enabled_roles(ctx.values):
        ready = model.resolve_probe(ctx.values, role, "readiness")
        live = model.resolve_probe(ctx.values, role, "liveness")
        if not (ready.enabled and live.enabled) or (ready.handler == live.handler == "heartbeat"
                                                    and not _role_probe_keys(ctx, role)):
            continue  # the chart-wide heartbeat windows: _jh002 above
        if live.window < 3 * ready.window:
            key = f"handlers.{role}.livenessProbe"
            yield Hit([_p(key), _p(f"handlers.{role}.readinessProbe"), _p("liveness")],
                      f"role {role}: the liveness window {live.window} s ({live.handler}: {live.period} x "
                      f"{live.failure}{f' + maxAge {live.max_age}' if live.max_age else ''}) is less than 3 x the "
                      f"readiness window {ready.window} s: a slow handler is restarted instead of just taken out "
                      "of rotation",
                      f"widen {key} (periodSeconds x failureThreshold) to at least {3 * ready.window} s")


def _role_probe_keys(ctx: Context, role: str) -> bool:
    spec = (ctx.values.get("handlers") or {}).get(role) or {}
    return any(spec.get(k) for k in ("readinessProbe", "livenessProbe"))


def _jh002_all(ctx: Context) -> Iterator[Hit]:
    yield from _jh002(ctx)
    yield from _jh002_roles(ctx)


def _jh007(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("startupProbe.enabled", True) or not ctx.flag("startupProbe.force", False):
        return
    minimum = str(ctx.get("startupProbe.minKubeVersion", "1.18"))
    if not model.at_least(ctx.kube_version, minimum) and not ctx.flag("startupProbe.featureGateEnabled", False):
        yield Hit([_p("startupProbe.force"), _p("startupProbe.featureGateEnabled")],
                  f"startupProbe.force=true on Kubernetes {ctx.kube_version} (below startupProbe.minKubeVersion="
                  f"{minimum}) without startupProbe.featureGateEnabled: the API server drops the probe",
                  "enable the StartupProbe feature gate and set startupProbe.featureGateEnabled=true, "
                  "or remove startupProbe.force")


def _jh008(ctx: Context) -> Iterator[Hit]:
    key = "liveness.terminationGracePeriodSeconds"
    if ctx.user_sets(key) and not model.at_least(ctx.kube_version, model.PROBE_GRACE_MIN_VERSION):
        yield Hit([_p(key)],
                  f"{key} is set but Kubernetes {ctx.kube_version} < {model.PROBE_GRACE_MIN_VERSION} ignores "
                  "probe-level grace: a wedged handler is killed only after the full drain grace",
                  f"target Kubernetes >= {model.PROBE_GRACE_MIN_VERSION}, or remove {key} from this file")


# argv[0]s that start an interpreter or a framework: seconds, not milliseconds, per probe.
HEAVY_COMMANDS = ("python", "python3", "celery", "django-admin", "manage.py", "procrastinate", "pulpcore-manager",
                  "ruby", "bundle", "rails", "rake", "node", "npm", "java", "php", "flask", "airflow", "galaxy")


MIN_HEAVY_EXEC_TIMEOUT = 5


def _role_probes(ctx: Context) -> Iterator[tuple[str, list[model.Probe]]]:
    """Per enabled role, its rendered probes (startup only where the chart renders it)."""
    for role in model.enabled_roles(ctx.values):
        probes = [model.resolve_probe(ctx.values, role, kind) for kind in model.PROBE_KINDS]
        yield role, [p for p in probes if p.enabled and (
            p.kind != "startup" or model.role_startup_probe_rendered(ctx.values, role, ctx.kube_version))]


def _probe_paths(role: str, probes: Sequence[model.Probe]) -> list[KeyPath]:
    """Where a finding about these probes is reported: the role's own probe blocks first."""
    paths: list[KeyPath] = [_p(p.source) for p in probes if p.source]
    for p in probes:
        own = f"handlers.{role}.{p.kind}Probe"
        paths += [_p(f"{own}.{p.handler}"), _p(f"{own}.timeoutSeconds")]
    for p in probes:
        paths += [_p(f"handlers.{role}.{p.kind}Probe"), _p("startupProbe" if p.kind == "startup" else p.kind)]
    return paths + [_p(f"handlers.{role}")]


def _kinds(probes: Sequence[model.Probe]) -> str:
    return ", ".join(p.kind for p in probes)


def _argv(probe: model.Probe) -> list[str]:
    return [str(x) for x in (probe.spec or {}).get("command") or []]


def _jh013(ctx: Context) -> Iterator[Hit]:
    for role, probes in _role_probes(ctx):
        execs = [p for p in probes if p.handler == "exec"]
        slow = []
        for p in execs:
            words = [a.rsplit("/", 1)[-1] for a in _argv(p)[:3]]
            heavy = next((w for w in words if w in HEAVY_COMMANDS or w.startswith("python")), None)
            if heavy and p.timeout < MIN_HEAVY_EXEC_TIMEOUT:
                slow.append((p, heavy))
        if slow:
            heavy = slow[0][1]
            yield Hit(_probe_paths(role, [p for p, _ in slow]),
                      f"role {role}: the {_kinds([p for p, _ in slow])} exec probe starts {heavy} with timeoutSeconds="
                      f"{'/'.join(str(p.timeout) for p, _ in slow)}: an interpreter's start-up alone can take that "
                      "long on a busy node, so the probe fails on a healthy handler",
                      "set " + " and ".join(f"handlers.{role}.{p.kind}Probe.timeoutSeconds" for p, _ in slow)
                      + f" to at least {MIN_HEAVY_EXEC_TIMEOUT}")
            continue
        overlap = [p for p in execs if p.timeout >= p.period and p.kind != "startup"]
        if overlap:
            yield Hit(_probe_paths(role, overlap),
                      f"role {role}: the {_kinds(overlap)} exec probe's timeoutSeconds is not below its periodSeconds: "
                      "probes overlap and pile up on a slow handler",
                      "set periodSeconds above timeoutSeconds")


def _jh014(ctx: Context) -> Iterator[Hit]:
    var = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
    for role, probes in _role_probes(ctx):
        bad = [p for p in probes if p.handler == "exec" and any(var.search(a) for a in _argv(p))]
        if bad:
            argv = _argv(bad[0])
            ref = next(m.group(1) for a in argv for m in [var.search(a)] if m)
            fixed = " ".join(var.sub(r"$\1", a) for a in argv)
            yield Hit(_probe_paths(role, bad),
                      f"role {role}: the {_kinds(bad)} exec probe uses $({ref}), but Kubernetes expands $(VAR) only "
                      f"in a container's command and args, not in probe commands: '{' '.join(argv)}' gets it literally",
                      f'let a shell expand it: command: ["sh", "-c", "{fixed}"]')


def _jh015(ctx: Context) -> Iterator[Hit]:
    if model.at_least(ctx.kube_version, model.GRPC_PROBE_MIN_VERSION):
        return
    for role, probes in _role_probes(ctx):
        grpc = [p for p in probes if p.handler == "grpc"]
        if grpc:
            yield Hit(_probe_paths(role, grpc),
                      f"role {role}: grpc {_kinds(grpc)} probe on Kubernetes {ctx.kube_version} < "
                      f"{model.GRPC_PROBE_MIN_VERSION}: the API server drops it and the container has no probe",
                      f"use httpGet, tcpSocket or exec there, or target Kubernetes >= {model.GRPC_PROBE_MIN_VERSION}")
