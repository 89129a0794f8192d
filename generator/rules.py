"""The lifecycle policy rules JH001…JH038: each has a stable id, a severity, a one-line
message, the fix and README documentation. Every expected number comes from generator.model."""

from __future__ import annotations

import ipaddress
import re
from collections import namedtuple
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (fastcheck.py)
    from typing import Any, Callable, Iterable, Iterator, Sequence

    from .values import ValuesFile

from . import lifecycle as _lc, model, platforms as plat
from .findings import ERROR, POLICY, WARNING, Finding
from .findings import dotted

KeyPath = tuple[str, ...]


class _Skip(Exception):
    """A value a rule needs is missing or mistyped (the schema check reports that)."""


class Hit(namedtuple("Hit", ['paths', 'message', 'fix'])):
    """One rule violation before it is located: the key paths it concerns (the first one
    present in the user's file is where it is reported), the message and the fix."""

    __slots__ = ()
    # paths: Sequence[KeyPath]
    # message: str
    # fix: str


class Context(namedtuple("Context", ['values', 'user', 'kube_version', 'platforms'], defaults=((),))):
    """What a rule sees: merged values (defaults + file), the file's own values, the target
    kube version."""

    __slots__ = ()
    # values: Mapping[str, Any]
    # user: Mapping[str, Any]
    # kube_version: str
    # platforms: tuple[tuple[plat.Platform, int], ...] = ()

    def get(self, dotted_path: str, default: Any = None) -> Any:
        """Merged value at a dotted path, or default."""
        node: Any = self.values
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def user_sets(self, dotted_path: str) -> bool:
        """True when the user's file itself sets the key to a non-null value."""
        node: Any = self.user
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return node is not None

    def num(self, dotted_path: str) -> float:
        """A numeric merged value; _Skip when missing or not a number."""
        value = self.get(dotted_path)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Skip(dotted_path)
        return value

    def flag(self, dotted_path: str, default: bool) -> bool:
        """A boolean merged value (default when missing); _Skip when mistyped."""
        value = self.get(dotted_path, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _Skip(dotted_path)
        return value

    def hook_mode(self) -> bool:
        """The migration runs as a pre-install/pre-upgrade hook."""
        return self.flag("migration.enabled", True) and self.flag("migration.useHelmHooks", True)


class Rule(namedtuple("Rule", ['id', 'severity', 'title', 'doc', 'fix', 'check'])):
    """A policy rule and its documentation."""

    __slots__ = ()
    # id: str
    # severity: str
    # title: str
    # doc: str  — what is wrong and why (README)
    # fix: str  — the generic fix (README); hits carry the concrete one
    # check: Callable[[Context], Iterable[Hit]]


def _p(text: str) -> KeyPath:
    return tuple(text.split("."))


def _jh001(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        try:
            grace = model.role_grace(ctx.values, role)
        except (KeyError, TypeError, ValueError) as exc:
            raise _Skip(role) from exc
        if grace.explicit is not None and grace.explicit < grace.computed:
            key = f"handlers.{role}.terminationGracePeriodSeconds"
            yield Hit(
                [_p(key), _p(f"handlers.{role}.maxJobRuntimeSeconds")],
                f"{key}={grace.explicit} is below the computed grace {grace.computed} "
                f"(ceil({grace.max_job_runtime}*{grace.multiplier})+{grace.buffer}+{grace.pre_stop}): "
                f"rollouts kill {role} handlers mid-job",
                f"remove {key} (the chart computes {grace.computed}) or set it to at least {grace.computed}",
            )


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


def _jh011(ctx: Context) -> Iterator[Hit]:
    grace = model.probe_grace(ctx.values, ctx.kube_version)
    if grace is None:
        return
    pre_stop = ctx.num("drain.preStopSeconds")
    if grace <= pre_stop:
        yield Hit([_p("liveness.terminationGracePeriodSeconds"), _p("drain.preStopSeconds")],
                  f"liveness.terminationGracePeriodSeconds={grace} is not above drain.preStopSeconds={pre_stop:g}: "
                  "a liveness restart runs preStop first, so its sleep uses the whole probe grace and the "
                  "wedged handler is SIGKILLed before it ever gets SIGTERM to requeue its jobs",
                  f"set liveness.terminationGracePeriodSeconds to at least {pre_stop + 5:g} "
                  "(preStopSeconds + 5 s for the handler to requeue and exit)")


MIN_REQUEUE_SECONDS = 2


def _jh012(ctx: Context) -> Iterator[Hit]:
    buffer = ctx.num("drain.bufferSeconds")
    if buffer // 2 < MIN_REQUEUE_SECONDS:
        yield Hit([_p("drain.bufferSeconds")],
                  f"drain.bufferSeconds={buffer:g} leaves {int(buffer // 2)} s between DRAIN_DEADLINE_SECONDS and "
                  "the SIGKILL: a handler that hits its drain deadline is killed while it hands its jobs back, "
                  "so they wait for their leases to expire instead of rerunning at once",
                  f"set drain.bufferSeconds to at least {2 * MIN_REQUEUE_SECONDS}")


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


def _deep(base: Any, over: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        return {**base, **{k: _deep(base.get(k), v) for k, v in over.items()}}
    return over if over is not None else base


def _jh018(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.values.get("handlers") or {}).get(role) or {}
        pod = _deep(ctx.get("podSecurityContext") or {}, spec.get("podSecurityContext") or {})
        container = _deep(ctx.get("containerSecurityContext") or {}, spec.get("securityContext") or {})
        problems = _restricted_problems(pod, container)
        if problems:
            yield Hit([_p(f"handlers.{role}.securityContext"), _p(f"handlers.{role}.podSecurityContext"),
                       _p("containerSecurityContext"), _p("podSecurityContext")],
                      f"role {role} leaves Pod Security \"restricted\" ({'; '.join(problems)}): a namespace that "
                      "enforces restricted rejects its pods",
                      "keep the chart's defaults (runAsNonRoot, RuntimeDefault seccomp, no privilege escalation, "
                      "drop ALL), or label the namespace for the Pod Security level you need")


def _jh019(ctx: Context) -> Iterator[Hit]:
    gate = ctx.flag("drain.stopSignalFeatureGate", False)
    for role in model.enabled_roles(ctx.values):
        drain = model.role_drain(ctx.values, role)
        if drain.stop_signal and not model.stop_signal_rendered(ctx.values, role, ctx.kube_version):
            why = (f"Kubernetes {ctx.kube_version} < {model.STOP_SIGNAL_MIN_VERSION}"
                   if not model.at_least(ctx.kube_version, model.STOP_SIGNAL_MIN_VERSION)
                   else "drain.stopSignalFeatureGate is false (ContainerStopSignals is alpha, off by default)")
            yield Hit([_p(f"handlers.{role}.drain.stopSignal"), _p("drain.stopSignal"), _p("drain.stopSignalFeatureGate")],
                      f"role {role}: drain.stopSignal={drain.stop_signal} cannot be rendered: {why}; the kubelet "
                      "would send the image's STOPSIGNAL instead (the chart refuses to render it)",
                      f"use drain.mode: signal with drain.signal: {drain.stop_signal.removeprefix('SIG')} (a preStop "
                      "kill; needs sh), or bake STOPSIGNAL into the image" + ("" if gate else
                      ", or declare drain.stopSignalFeatureGate: true if the gate is on"))


def _jh020(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.values.get("handlers") or {}).get(role) or {}
        drain = model.role_drain(ctx.values, role)
        if drain.mode == "marker" and not spec.get("command"):
            yield Hit([_p(f"handlers.{role}.command"), _p(f"handlers.{role}.drain.mode"), _p("drain.mode"),
                       _p(f"handlers.{role}")],
                      f"role {role} has no command, but drain.mode=marker wraps the command in sh -c (the chart "
                      "refuses to render it)",
                      f"set handlers.{role}.command, or handlers.{role}.drain.mode: none | signal | command")
        if drain.mode == "command" and not drain.command:
            yield Hit([_p(f"handlers.{role}.drain.mode"), _p("drain.mode")],
                      f"role {role}: drain.mode=command without drain.command (the chart refuses to render it)",
                      f"set handlers.{role}.drain.command to the app's quiesce command")


def _platforms(ctx: Context) -> list[tuple[plat.Platform, int, bool]]:
    """--platform ones, then the values key `platforms` ((platform, limit, from the file))."""
    out = [(p, limit, False) for p, limit in ctx.platforms]
    for text in ctx.get("platforms") or []:
        try:
            p, limit = plat.parse_platform(str(text))
        except ValueError:
            continue  # the schema reports it
        out.append((p, limit, True))
    return out


def _jh021(ctx: Context) -> Iterator[Hit]:
    for platform, limit, from_file in _platforms(ctx):
        for role in model.enabled_roles(ctx.values):
            grace = model.role_grace(ctx.values, role)
            pinned = ((ctx.values.get("handlers") or {}).get(role) or {}).get("safeToEvict") is False
            if pinned and platform.name in ("cluster-autoscaler", "karpenter"):
                continue  # the role's pods block scale-down / disruption of their node
            if grace.effective > limit:
                paths = [_p(f"handlers.{role}.maxJobRuntimeSeconds"), _p(f"handlers.{role}.terminationGracePeriodSeconds")]
                if from_file:
                    paths.insert(0, _p("platforms"))
                yield Hit(paths + [_p(f"handlers.{role}")],
                          f"role {role}: terminationGracePeriodSeconds={grace.effective} exceeds what {platform.title} "
                          f"honours ({limit} s, {platform.what}): {platform.consequence} ({platform.source})",
                          (f"set handlers.{role}.safeToEvict: false (its node is then not scaled down or "
                           "disrupted while it runs), or " if platform.name in ("cluster-autoscaler", "karpenter")
                           else "") +
                          f"keep jobs of role {role} under about {max(1, limit - grace.buffer - grace.pre_stop)} s "
                          "(checkpoint or split them), run the role on a dedicated node pool that the platform does "
                          "not drain, or raise the platform's limit where it is configurable")


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


def _jh029(ctx: Context) -> Iterator[Hit]:
    if model.at_least(ctx.kube_version, model.UNHEALTHY_POD_EVICTION_MIN_VERSION):
        return
    glob, inheriting = "pdb.unhealthyPodEvictionPolicy", []
    for role in model.enabled_roles(ctx.values):
        pdb = ((ctx.values.get("handlers") or {}).get(role) or {}).get("pdb") or {}
        if not pdb.get("enabled", True):
            continue
        own = f"handlers.{role}.pdb.unhealthyPodEvictionPolicy"
        if not pdb.get("unhealthyPodEvictionPolicy"):
            inheriting.append(role)
        elif ctx.get(own) == "AlwaysAllow" and ctx.user_sets(own):
            yield _jh029_hit(ctx, own, [role])
    if inheriting and ctx.get(glob) == "AlwaysAllow" and ctx.user_sets(glob):
        yield _jh029_hit(ctx, glob, inheriting)


def _jh029_hit(ctx: Context, key: str, roles: list[str]) -> Hit:
    return Hit([_p(key)],
               f"{key}=AlwaysAllow is not rendered on Kubernetes {ctx.kube_version} < "
               f"{model.UNHEALTHY_POD_EVICTION_MIN_VERSION} (the field is beta from 1.27): draining a node whose pods "
               f"of role {', '.join(roles)} all run but are not Ready (drain mode, startDrained) hangs on the "
               "PodDisruptionBudget",
               f"target Kubernetes >= {model.UNHEALTHY_POD_EVICTION_MIN_VERSION}; below, undrain the role (or delete "
               "its pods) before draining nodes, or disable its pdb")


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


def _jh041(ctx: Context) -> Iterator[Hit]:
    if ctx.flag("networkPolicy.enabled", False) and not ctx.get("networkPolicy.database.to") \
            and not ctx.get("networkPolicy.extraEgress"):
        host, port = ctx.get("database.host"), ctx.get("database.port")
        yield Hit([_p("networkPolicy.enabled"), _p("networkPolicy.database.to")],
                  "networkPolicy.enabled=true, but networkPolicy.database.to is empty and there is no "
                  "networkPolicy.extraEgress: the policies would deny the handlers, wait-for-migrations, the "
                  f"migration Job and the helm test every connection to the database ({host}:{port}) "
                  "(the chart refuses to render it)",
                  "set networkPolicy.database.to to the database's peers, e.g. [{ipBlock: {cidr: 10.0.0.5/32}}] "
                  "for a database outside the cluster or a podSelector/namespaceSelector for one inside, or give "
                  "networkPolicy.extraEgress rules that reach it")


def _is_ip(text: Any) -> bool:
    """True when text is an IPv4 or IPv6 address (not a name DNS must resolve)."""
    try:
        ipaddress.ip_address(str(text))
    except ValueError:
        return False
    return True


def _jh042(ctx: Context) -> Iterator[Hit]:
    host = ctx.get("database.host")
    if (ctx.flag("networkPolicy.enabled", False) and not ctx.flag("networkPolicy.dns.enabled", True)
            and not ctx.get("networkPolicy.extraEgress") and host and not _is_ip(host)):
        yield Hit([_p("networkPolicy.dns.enabled")],
                  f"networkPolicy.dns.enabled=false and no networkPolicy.extraEgress, but database.host={host!r} "
                  "is a name: the policies deny DNS, so no chart pod can resolve it",
                  "keep networkPolicy.dns.enabled=true (set networkPolicy.dns.to for NodeLocal DNSCache or another "
                  "resolver), or give database.host as an IP address, or an extraEgress rule to your resolver")


def _jh043(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("networkPolicy.enabled", False) or ctx.flag("networkPolicy.allowRelease", True):
        return
    if ctx.get("networkPolicy.ingress.from") or ctx.get("networkPolicy.extraIngress"):
        return
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.get("handlers") or {}).get(role) or {}
        if spec.get("port") is None and not spec.get("extraPorts"):
            continue
        own = spec.get("networkPolicy") or {}
        if (own.get("ingress") or {}).get("from") or own.get("extraIngress"):
            continue
        yield Hit([_p("networkPolicy.allowRelease"), _p(f"handlers.{role}.networkPolicy")],
                  f"role {role} has a port, but with networkPolicy.allowRelease=false and no ingress.from or "
                  "extraIngress (chart-wide or the role's) its NetworkPolicy admits no pod: its Service answers "
                  "nobody, and `helm test` fails",
                  f"give {role}'s clients in networkPolicy.ingress.from or handlers.{role}.networkPolicy.ingress.from "
                  "(e.g. your ingress controller's namespaceSelector), or keep networkPolicy.allowRelease=true")


# Each rule's check; its severity, title, documentation and fix are in chart/lifecycle.yaml
# (`rules`), which the chart's render-time checks and docs/rules.md take them from too.
_CHECKS: dict[str, Callable[[Context], Iterable[Hit]]] = {
    "JH001": _jh001,
    "JH002": _jh002_all,
    "JH003": _jh003,
    "JH004": _jh004,
    "JH005": _jh005,
    "JH006": _jh006,
    "JH007": _jh007,
    "JH008": _jh008,
    "JH009": _jh009,
    "JH010": _jh010,
    "JH011": _jh011,
    "JH012": _jh012,
    "JH013": _jh013,
    "JH014": _jh014,
    "JH015": _jh015,
    "JH016": _jh016,
    "JH017": _jh017,
    "JH018": _jh018,
    "JH019": _jh019,
    "JH020": _jh020,
    "JH021": _jh021,
    "JH022": _jh022,
    "JH023": _jh023,
    "JH024": _jh024,
    "JH025": _jh025,
    "JH026": _jh026,
    "JH028": _jh028,
    "JH029": _jh029,
    "JH030": _jh030,
    "JH031": _jh031,
    "JH032": _jh032,
    "JH035": _jh035,
    "JH036": _jh036,
    "JH037": _jh037,
    "JH038": _jh038,
    "JH041": _jh041,
    "JH042": _jh042,
    "JH043": _jh043,
}
RULES: tuple[Rule, ...] = tuple(
    Rule(rule_id, meta["severity"], meta["title"], meta["when"], meta["fix"], _CHECKS[rule_id])
    for rule_id, meta in _lc.RULES.items())
RULES_BY_ID = {r.id: r for r in RULES}


def check(vf: ValuesFile, kube_version: str, platforms: Sequence[tuple[plat.Platform, int]] = (),
          values: Mapping[str, Any] | None = None) -> list[Finding]:
    """Run every rule on a loaded values file, merged over the chart defaults (or `values`:
    the merged values when the caller has them)."""
    if values is None:
        from .values import merged
        values = merged(vf.data)
    ctx = Context(values=values, user=vf.data, kube_version=kube_version, platforms=tuple(platforms))
    findings: list[Finding] = []
    for rule in RULES:
        try:
            hits = list(rule.check(ctx))
        except (_Skip, KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
            continue  # a mistyped or out-of-range value: the schema check reports it
        for hit in hits:
            findings.append(_locate(vf, rule, hit))
    return findings


def _locate(vf: ValuesFile, rule: Rule, hit: Hit) -> Finding:
    """Report at the first of the hit's key paths the file itself sets."""
    for path in hit.paths:
        line, col, found = vf.position(path)
        if found:
            return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(path), hit.message, hit.fix)
    line, col, _ = vf.position(hit.paths[0])
    return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(hit.paths[0]),
                   hit.message + " (from chart defaults)", hit.fix)
