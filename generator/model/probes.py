"""A role's probes, resolved like chart/templates/_probes.tpl: handler, thresholds, version gates."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

from .. import lifecycle as _lc
from .roles import _block, _role_spec
from .versions import PROBE_GRACE_MIN_VERSION, at_least

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

PROBE_KINDS: tuple[str, ...] = tuple(_lc.DATA["probe"]["kinds"])
HANDLER_KINDS: tuple[str, ...] = tuple(_lc.DATA["probe"]["handlerKinds"])

# Kubernetes' own probe defaults, used where neither the role nor the chart-wide block sets a key.
PROBE_DEFAULTS: dict[str, int] = dict(_lc.DATA["probe"]["defaults"])


def startup_probe_rendered(values: Mapping[str, Any], kube_version: str) -> bool:
    """startupProbe is rendered from startupProbe.minKubeVersion on, or below it only
    when forced with the feature gate declared on."""
    sp = values.get("startupProbe", {})
    if not sp.get("enabled", True):
        return False
    if at_least(kube_version, str(sp.get("minKubeVersion", "1.18"))):
        return True
    return bool(sp.get("force")) and bool(sp.get("featureGateEnabled"))


def liveness_initial_delay(values: Mapping[str, Any], kube_version: str) -> int:
    """Without a startupProbe, liveness waits out the startup budget instead."""
    if startup_probe_rendered(values, kube_version):
        return 0
    sp = values.get("startupProbe", {})
    # the chart defaults (chart/values.yaml startupProbe: 1 s x 300) when a key is missing
    return int(sp.get("periodSeconds", 1)) * int(sp.get("failureThreshold", 300))


def probe_grace(values: Mapping[str, Any], kube_version: str) -> int | None:
    """Probe-level liveness terminationGracePeriodSeconds, or None when not rendered."""
    value = values.get("liveness", {}).get("terminationGracePeriodSeconds")
    if value is None or not at_least(kube_version, PROBE_GRACE_MIN_VERSION):
        return None
    return int(value)


class Probe(namedtuple("Probe", ['kind', 'handler', 'spec', 'period', 'failure', 'timeout', 'success', 'initial_delay', 'grace', 'enabled', 'max_age', 'path', 'source'], defaults=(None, None, "",))):
    """One resolved probe of a role: its handler and thresholds (what the chart renders)."""

    __slots__ = ()
    # kind: str  — readiness | liveness | startup
    # handler: str  — exec | httpGet | tcpSocket | grpc | heartbeat
    # spec: Mapping[str, Any]
    # period: int
    # failure: int
    # timeout: int
    # success: int
    # initial_delay: int
    # grace: int | None  — probe-level terminationGracePeriodSeconds as set (not version-gated)
    # enabled: bool
    # max_age: int | None = None  — heartbeat only
    # path: str | None = None  — heartbeat only
    # source: str = ""  — dotted key of the block the handler came from ("" = the built-in heartbeat)

    @property
    def window(self) -> int:
        """Seconds from the last good moment to the probe failing: period x failures (+ maxAge)."""
        return self.period * self.failure + (self.max_age or 0)


def probe_candidate_keys(role: str, kind: str) -> list[str]:
    """The dotted keys of probe_candidates, in the same order."""
    own = {k: f"handlers.{role}.{k}Probe" for k in ("readiness", "liveness", "startup")}
    if kind == "readiness":
        return [own["readiness"], own["liveness"], "readiness", "liveness"]
    if kind == "liveness":
        return [own["liveness"], own["readiness"], "liveness", "readiness"]
    return [own["startup"], own["liveness"], own["readiness"], "startupProbe", "liveness", "readiness"]


def probe_candidates(values: Mapping[str, Any], role: str, kind: str) -> list[Mapping[str, Any]]:
    """The blocks a probe's handler is looked up in, in order (see _probes.tpl)."""
    spec = _role_spec(values, role)
    rr, rl, rs = (_block(spec.get(k)) for k in ("readinessProbe", "livenessProbe", "startupProbe"))
    gr, gl, gs = (_block(values.get(k)) for k in ("readiness", "liveness", "startupProbe"))
    if kind == "readiness":
        return [rr, rl, gr, gl]
    if kind == "liveness":
        return [rl, rr, gl, gr]
    return [rs, rl, rr, gs, gl, gr]


def resolve_probe(values: Mapping[str, Any], role: str, kind: str) -> Probe:
    """A role's probe of one kind, resolved exactly like "jobhandlers.probe.resolve"."""
    candidates = probe_candidates(values, role, kind)
    own = candidates[0]
    glob = _block(values.get("startupProbe" if kind == "startup" else kind))
    handler, hspec, source, source_key = "heartbeat", {}, own, ""
    for block, key in zip(candidates, probe_candidate_keys(role, kind)):
        found = next((k for k in HANDLER_KINDS if block.get(k) is not None), None)
        if found:
            handler, hspec, source, source_key = found, block[found], block, f"{key}.{found}"
            break
    nums: dict[str, int] = {}
    for key, default in PROBE_DEFAULTS.items():
        value = glob.get(key, default)
        if key == "timeoutSeconds" and source is not own and source.get(key) is not None:
            value = source[key]  # a borrowed handler brings its timeout: it is the command's cost
        if own.get(key) is not None:
            value = own[key]
        nums[key] = int(value)
    grace = glob.get("terminationGracePeriodSeconds")
    if "terminationGracePeriodSeconds" in own:
        grace = own["terminationGracePeriodSeconds"]
    enabled = True
    for block in (glob, own):
        if isinstance(block.get("enabled"), bool):
            enabled = block["enabled"]
    max_age = path = None
    if handler == "heartbeat":
        max_age = int(_block(values.get("readiness" if kind == "startup" else kind)).get("maxAgeSeconds", 20))
        own_beat = _block(own.get("heartbeat"))
        if own_beat.get("maxAgeSeconds"):
            max_age = int(own_beat["maxAgeSeconds"])
        heartbeat = _block(values.get("heartbeat"))
        path = str(_block(hspec).get("path") or heartbeat.get("path") or "heartbeat")
        if not path.startswith("/"):
            path = f"{heartbeat.get('dir', '/run/jobhandlers')}/{path}"
    return Probe(kind=kind, handler=handler, spec=hspec, period=nums["periodSeconds"],
                 failure=nums["failureThreshold"], timeout=nums["timeoutSeconds"], success=nums["successThreshold"],
                 initial_delay=nums["initialDelaySeconds"], grace=None if grace is None else int(grace),
                 enabled=enabled, max_age=max_age, path=path, source=source_key)


def role_startup_probe_rendered(values: Mapping[str, Any], role: str, kube_version: str) -> bool:
    """The role's startupProbe is rendered: enabled for the role, and the version gate."""
    if not resolve_probe(values, role, "startup").enabled:
        return False
    return startup_probe_rendered({**values, "startupProbe": {**_block(values.get("startupProbe")), "enabled": True}},
                                  kube_version)


def role_liveness_initial_delay(values: Mapping[str, Any], role: str, kube_version: str) -> int:
    """The role's liveness initialDelaySeconds: its own with a startupProbe, else at least the
    startup budget periodSeconds x failureThreshold of its resolved startupProbe."""
    live = resolve_probe(values, role, "liveness")
    if role_startup_probe_rendered(values, role, kube_version):
        return live.initial_delay
    start = resolve_probe(values, role, "startup")
    return max(live.initial_delay, start.period * start.failure)


def rendered_probe_grace(probe: Probe, kube_version: str) -> int | None:
    """The probe-level grace the chart renders: liveness/startup only, from 1.25."""
    if probe.kind == "readiness" or probe.grace is None or not at_least(kube_version, PROBE_GRACE_MIN_VERSION):
        return None
    return probe.grace
