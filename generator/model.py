"""The lifecycle policy model: the single source of the numbers the chart must render.

Every expected value in the generated tests, every policy rule and `jobhandlers grace`
comes from these functions; the chart's templates implement the same formulas in
`chart/templates/_grace.tpl` and `_probes.tpl`, and the generated tests hold them equal.
"""

from __future__ import annotations

import math
import re
from collections import namedtuple
from fractions import Fraction
from collections.abc import Mapping

from . import lifecycle as _lc

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

# Versions, gates, kinds and fallbacks come from chart/lifecycle.yaml (generator/lifecycle.py),
# which the chart reads too; see the file for each gate's feature gate, KEP and fallback.
KUBE_VERSIONS: tuple[str, ...] = tuple(_lc.DATA["kubeVersions"]["matrix"])
DEFAULT_KUBE_VERSION: str = _lc.DATA["kubeVersions"]["default"]
PROBE_GRACE_MIN_VERSION = _lc.min_version("probeGrace")
PDB_V1_MIN_VERSION = _lc.min_version("pdbPolicyV1")
SECCOMP_FIELD_MIN_VERSION = _lc.min_version("seccompField")
GRPC_PROBE_MIN_VERSION = _lc.min_version("grpcProbe")
NATIVE_SLEEP_MIN_VERSION = _lc.min_version("nativeSleep")
STOP_SIGNAL_MIN_VERSION = _lc.min_version("stopSignal")
NATIVE_SIDECAR_MIN_VERSION = _lc.min_version("nativeSidecars")
SPREAD_MIN_VERSION = _lc.min_version("spread")
SPREAD_MATCH_LABEL_KEYS_MIN_VERSION = _lc.min_version("spreadMatchLabelKeys")
WORKLOAD_KINDS: tuple[str, ...] = tuple(_lc.DATA["workloadKinds"])
ORDINAL_MIN_VERSION = _lc.min_version("podIndexLabel")
STS_MAX_UNAVAILABLE_MIN_VERSION = _lc.min_version("statefulSetMaxUnavailable")
RELAXED_ENV_NAMES_MIN_VERSION = _lc.min_version("relaxedEnvVarNames")
# StrictIPCIDRValidation (KEP-4858, beta on by default from 1.36): the API server refuses an ipBlock CIDR
# with bits beyond its prefix, leading zeros or an IPv4-mapped IPv6 address (JH051; the chart renders
# ipBlocks as given whatever the version, so this is no chart gate).
STRICT_CIDR_MIN_VERSION = "1.36"
SLEEP_ZERO_MIN_VERSION = _lc.min_version("sleepZero")
UNHEALTHY_POD_EVICTION_MIN_VERSION = _lc.min_version("pdbUnhealthyPodEvictionPolicy")
POD_REPLACEMENT_POLICY_MIN_VERSION = _lc.min_version("jobPodReplacementPolicy")
# The post-deploy Job's projected API token (kube-root-ca.crt ConfigMap GA 1.21, KEP-1205);
# below, the ServiceAccount token is automounted (JH038).
POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION = _lc.min_version("projectedServiceAccountToken")
# An image tag (the distribution reference grammar); the chart refuses anything else (JH028).
IMAGE_TAG_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
PROBE_KINDS: tuple[str, ...] = tuple(_lc.DATA["probe"]["kinds"])
HANDLER_KINDS: tuple[str, ...] = tuple(_lc.DATA["probe"]["handlerKinds"])
DRAIN_MODES: tuple[str, ...] = tuple(_lc.DATA["drain"]["modes"])
# What a null drain key means (values.yaml carries the same defaults).
DRAIN_FALLBACK: dict[str, Any] = dict(_lc.DATA["drain"]["fallback"])
# Kubernetes' own probe defaults, used where neither the role nor the chart-wide block sets a key.
PROBE_DEFAULTS: dict[str, int] = dict(_lc.DATA["probe"]["defaults"])
RELEASE_NAME = "demo"
NAMESPACE = "demo"


def version_tuple(version: str) -> tuple[int, int]:
    """'1.29', 'v1.29.3-eks-1' -> (1, 29)."""
    core = version.lstrip("v").split("-")[0].split("+")[0]
    parts = core.split(".")
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def minor_version(version: str) -> str:
    """'v1.29.3-eks-1' -> '1.29' (ValueError/IndexError when it is not a version)."""
    major, minor = version_tuple(version)
    return f"{major}.{minor}"


def at_least(version: str, minimum: str) -> bool:
    """Semver-style 'version >= minimum' on major.minor (pre-release suffixes match)."""
    return version_tuple(version) >= version_tuple(minimum)


class Grace(namedtuple("Grace", ['role', 'max_job_runtime', 'multiplier', 'buffer', 'pre_stop', 'computed', 'explicit'])):
    """A role's terminationGracePeriodSeconds and the terms it is made of."""

    __slots__ = ()
    # role: str
    # max_job_runtime: int
    # multiplier: float
    # buffer: int
    # pre_stop: int
    # computed: int
    # explicit: int | None

    @property
    def effective(self) -> int:
        """The value the chart renders: the explicit override when present, else computed."""
        return self.explicit if self.explicit is not None else self.computed

    @property
    def drain_deadline(self) -> int:
        """DRAIN_DEADLINE_SECONDS given to the handler: what is left after preStop,
        minus half the buffer kept for requeueing and exiting (at least 1)."""
        return max(1, self.effective - self.pre_stop - self.buffer // 2)


def computed_grace(max_job_runtime: int, multiplier: float, buffer: int, pre_stop: int) -> int:
    """ceil(maxJobRuntimeSeconds x runtimeMultiplier) + bufferSeconds + preStopSeconds."""
    # round() first so that 1.1 * 100 (=110.00000000000001) does not ceil to 111:
    # Helm's float arithmetic in _grace.tpl rounds the same way.
    return math.ceil(round(max_job_runtime * multiplier, 6)) + buffer + pre_stop


def role_grace(values: Mapping[str, Any], role: str) -> Grace:
    """The grace model for one role of a (merged) values mapping."""
    drain = values.get("drain", {})
    spec = values["handlers"][role]
    multiplier = float(drain.get("runtimeMultiplier", 1.0))  # "1.5" from helm --set too
    buffer = int(drain.get("bufferSeconds", 30))
    pre_stop = int(drain.get("preStopSeconds", DRAIN_FALLBACK["preStopSeconds"]))
    runtime = int(spec["maxJobRuntimeSeconds"])
    explicit = spec.get("terminationGracePeriodSeconds")
    return Grace(
        role=role,
        max_job_runtime=runtime,
        multiplier=multiplier,
        buffer=buffer,
        pre_stop=pre_stop,
        computed=computed_grace(runtime, multiplier, buffer, pre_stop),
        explicit=int(explicit) if explicit is not None else None,
    )


def role_kind(values: Mapping[str, Any], role: str) -> str:
    """The workload kind a role renders: Deployment unless handlers.<role>.kind says StatefulSet."""
    return str(((values.get("handlers") or {}).get(role) or {}).get("kind") or "Deployment")


def enabled_roles(values: Mapping[str, Any]) -> list[str]:
    """Roles that render a workload (Deployment or StatefulSet), sorted."""
    return sorted(r for r, spec in (values.get("handlers") or {}).items() if spec and spec.get("enabled", True))


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


def pdb_api_version(kube_version: str) -> str:
    """policy/v1 from 1.21, policy/v1beta1 below."""
    return "policy/v1" if at_least(kube_version, PDB_V1_MIN_VERSION) else "policy/v1beta1"


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


def _role_spec(values: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    return (values.get("handlers") or {}).get(role) or {}


def _block(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


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


class Drain(namedtuple("Drain", ['mode', 'signal', 'command', 'stop_signal', 'wait_for_exit'], defaults=(False,))):
    """A role's drain adapter."""

    __slots__ = ()
    # mode: str
    # signal: str  — without the SIG prefix
    # command: tuple[str, ...]
    # stop_signal: str | None
    # wait_for_exit: bool = False


def role_drain(values: Mapping[str, Any], role: str) -> Drain:
    """The role's drain settings over the chart-wide drain block."""
    glob, own = _block(values.get("drain")), _block(_role_spec(values, role).get("drain"))
    fb = DRAIN_FALLBACK
    merged = {"mode": glob.get("mode") or fb["mode"], "signal": glob.get("signal") or fb["signal"],
              "command": glob.get("command") or [], "stopSignal": glob.get("stopSignal") or None,
              "waitForExit": bool(glob.get("waitForExit", fb["waitForExit"]))}
    merged.update({k: v for k, v in own.items() if v is not None})
    return Drain(mode=str(merged["mode"]), signal=str(merged["signal"]).removeprefix("SIG"),
                 command=tuple(str(x) for x in merged["command"] or ()),
                 stop_signal=str(merged["stopSignal"]) if merged["stopSignal"] else None,
                 wait_for_exit=bool(merged["waitForExit"]))


def prestop_action(values: Mapping[str, Any], role: str, kube_version: str) -> str | None:
    """What the preStop is: "exec", "sleep" (the native action) or None (no preStop)."""
    drain = role_drain(values, role)
    pre_stop = int(_block(values.get("drain")).get("preStopSeconds", DRAIN_FALLBACK["preStopSeconds"]))
    if drain.mode in ("marker", "signal", "command"):
        return "exec"
    if pre_stop == 0:
        return None
    native = _block(values.get("drain")).get("nativeSleep", DRAIN_FALLBACK["nativeSleep"])
    return "sleep" if native and at_least(kube_version, NATIVE_SLEEP_MIN_VERSION) else "exec"


def stop_signal_rendered(values: Mapping[str, Any], role: str, kube_version: str) -> bool:
    """lifecycle.stopSignal is rendered: set, gate declared, cluster >= 1.33."""
    return bool(role_drain(values, role).stop_signal) and bool(
        _block(values.get("drain")).get("stopSignalFeatureGate")) and at_least(kube_version, STOP_SIGNAL_MIN_VERSION)


def needs_shell(values: Mapping[str, Any], role: str, kube_version: str) -> bool:
    """The role's handler container needs sh in the image (wrapper, heartbeat probe, preStop script)."""
    if role_drain(values, role).mode in ("marker", "signal"):
        return True
    if role_drain(values, role).mode == "command" and int(_block(values.get("drain")).get("preStopSeconds", DRAIN_FALLBACK["preStopSeconds"])):
        return True
    probes = [resolve_probe(values, role, k) for k in ("readiness", "liveness")]
    if role_startup_probe_rendered(values, role, kube_version):
        probes.append(resolve_probe(values, role, "startup"))
    return any(p.enabled and p.handler == "heartbeat" for p in probes)


def native_sidecars(kube_version: str) -> bool:
    """Sidecars are native init containers (restartPolicy Always) on this version."""
    return at_least(kube_version, NATIVE_SIDECAR_MIN_VERSION)


def node_loss_toleration(values: Mapping[str, Any], role: str) -> int | None:
    """tolerationSeconds for not-ready/unreachable: the role's, else the chart-wide one."""
    own = _role_spec(values, role).get("nodeLossTolerationSeconds")
    value = own if own is not None else values.get("nodeLossTolerationSeconds", 30)
    return None if value is None else int(value)


def _names(items: Any) -> list[str]:
    return [str(c.get("name")) for c in items or [] if isinstance(c, Mapping)]


def user_containers(values: Mapping[str, Any], role: str, key: str) -> list[tuple[tuple[str | int, ...], Any]]:
    """(key path, item) of a role's `sidecars` or `extraInitContainers` (key), in the order the
    chart renders them: the chart-wide ones, then the role's."""
    return [(where + (i,), item)
            for where, items in (((key,), values.get(key)), (("handlers", role, key), _role_spec(values, role).get(key)))
            for i, item in enumerate(items or [])]


def init_container_order(values: Mapping[str, Any], role: str, kube_version: str) -> list[str]:
    """The initContainers of a role's pod, in order: native sidecars, extraInitContainers
    "before", wait-for-migrations, extraInitContainers "after" (see _pod.tpl)."""
    inits = [c for _, c in user_containers(values, role, "extraInitContainers") if isinstance(c, Mapping)]
    order = _names([c for _, c in user_containers(values, role, "sidecars")]) if native_sidecars(kube_version) else []
    order += _names([c for c in inits if (c.get("position") or "before") == "before"])
    if _block(values.get("waitForMigrations")).get("enabled", True):
        order.append("wait-for-migrations")
    order += _names([c for c in inits if c.get("position") == "after"])
    return order


def regular_sidecars(values: Mapping[str, Any], role: str, kube_version: str) -> list[str]:
    """The containers after the handler: sidecars rendered as regular containers (below the
    native-sidecar version), then scaleIn.preferIdle's deletion-cost container (every version)."""
    own = [] if native_sidecars(kube_version) else _names([c for _, c in user_containers(values, role, "sidecars")])
    return own + ([SCALE_IN["container"]] if role_prefers_idle(values, role) else [])


def image_reference(values: Mapping[str, Any], app_version: str) -> str:
    """repository@digest when image.digest is set (the tag is ignored), else repository:tag
    (an empty tag: the chart's appVersion)."""
    image = _block(values.get("image"))
    if image.get("digest"):
        return f"{image.get('repository')}@{image['digest']}"
    return f"{image.get('repository')}:{image.get('tag') or app_version}"


def version_label(tag: str) -> str:
    """app.kubernetes.io/version for a tag: at most 63 of [A-Za-z0-9._-], alphanumeric at both
    ends, any other character "_" (the chart's "jobhandlers.versionLabel")."""
    return re.sub(r"[^-A-Za-z0-9_.]", "_", tag)[:63].strip("-_.")


def pdb_unhealthy_pod_eviction_policy(values: Mapping[str, Any], role: str, kube_version: str) -> str | None:
    """The role's PDB unhealthyPodEvictionPolicy as rendered: its own, else pdb's; None below 1.27."""
    own = _block(_role_spec(values, role).get("pdb")).get("unhealthyPodEvictionPolicy")
    policy = own or _block(values.get("pdb")).get("unhealthyPodEvictionPolicy")
    if not policy or not at_least(kube_version, UNHEALTHY_POD_EVICTION_MIN_VERSION):
        return None
    return str(policy)


def migration_pod_replacement_policy(values: Mapping[str, Any], kube_version: str) -> str | None:
    """The migration Job's podReplacementPolicy as rendered (None below 1.29 or when null)."""
    policy = _block(values.get("migration")).get("podReplacementPolicy")
    if not policy or not at_least(kube_version, POD_REPLACEMENT_POLICY_MIN_VERSION):
        return None
    return str(policy)


def container_resources(values: Mapping[str, Any], own: Any) -> Mapping[str, Any]:
    """The resources of a chart-owned container: its own non-empty block, else defaultResources."""
    return _block(own) or _block(values.get("defaultResources"))


def owned_resources(values: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Chart-owned container group -> (the key of its own resources, effective resources)."""
    out = {f"role {role}": (f"handlers.{role}.resources", _role_spec(values, role).get("resources"))
           for role in enabled_roles(values)}
    out["wait-for-migrations"] = ("waitForMigrations.resources", _block(values.get("waitForMigrations")).get("resources"))
    out["the migration Job"] = ("migration.resources", _block(values.get("migration")).get("resources"))
    out["the helm test pod"] = ("helmTest.resources", _block(values.get("helmTest")).get("resources"))
    return {k: (key, container_resources(values, own)) for k, (key, own) in out.items()}


_SUFFIXES = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": 10**3,
             "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


def parse_quantity(value: Any) -> Fraction:
    """A Kubernetes resource quantity ("100m", "128Mi", "1e3", 2) as an exact number;
    ValueError when it is not one."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, (int, float)):
        return Fraction(str(value))
    m = _QUANTITY.fullmatch(str(value).strip())
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIXES[m.group(3) or ""]
# The chart's own env variables, in the order it defines them before the user's env
# (chart/templates/_pod.tpl: "jobhandlers.handler.env", "jobhandlers.common.env").
ROLE_ENV: tuple[str, ...] = ("DATABASE_URL", "JOBHANDLERS_ROLE", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS",
                             "DRAIN_DEADLINE_SECONDS")
COMMON_ENV: tuple[str, ...] = ("DATABASE_URL", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS")
START_DRAINED_ENV = "JOBHANDLERS_START_DRAINED"
ACCEPT_AHEAD_ENV = "JOBHANDLERS_SCHEMA_ACCEPT_AHEAD"
WAIT_TIMEOUT_ENV = "WAIT_TIMEOUT_SECONDS"
# a StatefulSet role's identity (_identity.tpl), right after JOBHANDLERS_ROLE; the ordinal from 1.28
IDENTITY_ENV: tuple[str, ...] = ("JOBHANDLERS_POD_NAME", "JOBHANDLERS_ORDINAL")
CHART_ENV_NAMES: frozenset[str] = frozenset(ROLE_ENV + IDENTITY_ENV + (START_DRAINED_ENV, ACCEPT_AHEAD_ENV,
                                                                       WAIT_TIMEOUT_ENV))


def _accept_ahead(values: Mapping[str, Any]) -> bool:
    return str(_block(values.get("waitForMigrations")).get("acceptAhead")).lower() == "true"


def handler_env_names(values: Mapping[str, Any], role: str) -> list[str]:
    """The chart's variables of a role's handler container, in order (before the user's env).
    A StatefulSet role's identity is listed whatever the version (JH025 judges the ordinal)."""
    names = list(ROLE_ENV)
    if role_kind(values, role) == "StatefulSet":
        at = names.index("JOBHANDLERS_ROLE") + 1  # _pod.tpl: the identity follows the role
        names[at:at] = IDENTITY_ENV
    if _role_spec(values, role).get("startDrained"):
        names.append(START_DRAINED_ENV)
    if _accept_ahead(values):
        names.append(ACCEPT_AHEAD_ENV)
    return names


def common_env_names(values: Mapping[str, Any]) -> list[str]:
    """The chart's variables of a container without a role (wait-for-database, migrate,
    downgrade, the helm test's schema-check), in order."""
    return list(COMMON_ENV) + ([ACCEPT_AHEAD_ENV] if _accept_ahead(values) else [])


class EnvContainer(namedtuple("EnvContainer", ['where', 'chart_env', 'user_env', 'env_from'])):
    """A rendered container that gets env: the chart's variables first, then the user's
    entries (each with the key path it comes from)."""

    __slots__ = ()
    # where: str  — e.g. "role web: wait-for-migrations", "migration Job: migrate"
    # chart_env: tuple[str, ...]
    # user_env: tuple[tuple[tuple[str | int, ...], Mapping[str, Any]], ...]
    # env_from: bool  — envFrom present: names the chart cannot know


def _entries(items: Any, *prefix: str | int) -> list[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    return [((*prefix, i), e) for i, e in enumerate(items if isinstance(items, list) else []) if isinstance(e, Mapping)]


def _own_containers(where: str, items: list[tuple[tuple[str | int, ...], Mapping[str, Any]]]) -> list[EnvContainer]:
    """extraInitContainers / sidecars: the user's containers as written (no chart env)."""
    return [EnvContainer(f"{where} {c.get('name')}", (), tuple(_entries(c.get("env"), *path, "env")),
                         bool(c.get("envFrom"))) for path, c in items]


def env_containers(values: Mapping[str, Any]) -> list[EnvContainer]:
    """Every container the chart renders with env, and what its env list holds (_pod.tpl,
    _wait-for-migrations.tpl, _migration.tpl, tests/test.yaml)."""
    out: list[EnvContainer] = []
    chart_env, chart_from = _entries(values.get("env"), "env"), bool(values.get("envFrom"))
    inits = _entries(values.get("extraInitContainers"), "extraInitContainers")
    sidecars = _entries(values.get("sidecars"), "sidecars")
    for role in enabled_roles(values):
        spec = _role_spec(values, role)
        user = tuple(chart_env + _entries(spec.get("env"), "handlers", role, "env"))
        env_from = chart_from or bool(spec.get("envFrom"))
        names = handler_env_names(values, role)
        out.append(EnvContainer(f"role {role}: {role}", tuple(names), user, env_from))
        if _block(values.get("waitForMigrations")).get("enabled", True):
            out.append(EnvContainer(f"role {role}: wait-for-migrations", (*names, WAIT_TIMEOUT_ENV), user, env_from))
        out += _own_containers(f"role {role}: init container", inits + _entries(
            spec.get("extraInitContainers"), "handlers", role, "extraInitContainers"))
        out += _own_containers(f"role {role}: sidecar", sidecars + _entries(spec.get("sidecars"), "handlers", role,
                                                                           "sidecars"))
    mig = _block(values.get("migration"))
    common = tuple(common_env_names(values))
    user = tuple(chart_env + _entries(mig.get("env"), "migration", "env"))
    env_from = chart_from or bool(mig.get("envFrom"))
    # Job -> (main container, (the chart's init container, its chart env) or None, the user's env)
    wait_db = ("wait-for-database", common) if _block(mig.get("waitForDatabase")).get("enabled", True) else None
    jobs = {"migration": ("migrate", wait_db, user)} if mig.get("enabled", True) else {}
    if jobs and mig.get("useHelmHooks", True) and str(mig.get("onRollback")) == "downgrade":
        jobs["downgrade"] = ("downgrade", wait_db, user)  # the pre-rollback hook: the same pod, its own container name
    if post_deploy_enabled(values):  # waits for the schema instead of the database; postDeploy.env comes last
        jobs["post-migration"] = ("post-migrate", ("wait-for-migrations", (*common, WAIT_TIMEOUT_ENV)),
                                  user + tuple(_entries(_block(mig.get("postDeploy")).get("env"),
                                                        "migration", "postDeploy", "env")))
    for job, (main, wait, job_user) in jobs.items():
        if wait:
            out.append(EnvContainer(f"{job} Job: {wait[0]}", wait[1], job_user, env_from))
        out.append(EnvContainer(f"{job} Job: {main}", common, job_user, env_from))
        out += _own_containers(f"{job} Job: init container", inits + _entries(
            mig.get("extraInitContainers"), "migration", "extraInitContainers"))
        out += _own_containers(f"{job} Job: sidecar", [(p, c) for p, c in sidecars if c.get("migration")]
                               + _entries(mig.get("sidecars"), "migration", "sidecars"))
    if _block(values.get("helmTest")).get("enabled", True):
        out.append(EnvContainer("helm test: schema-check", common, user, env_from))
    return out


def env_references(value: str) -> list[str]:
    """The names a Kubernetes env value refers to as $(NAME), in order ($$ escapes a $;
    an unclosed $( is literal), like Kubernetes' own expansion."""
    refs, i = [], 0
    while i < len(value) - 1:
        if value[i] == "$":
            if value[i + 1] == "$":
                i += 2
                continue
            if value[i + 1] == "(":
                end = value.find(")", i + 2)
                if end != -1:
                    refs.append(value[i + 2:end])
                    i = end + 1
                    continue
        i += 1
    return refs


def post_deploy_enabled(values: Mapping[str, Any]) -> bool:
    """The chart renders the post-deploy Job: commands.postMigrate with the migration on."""
    migration = values.get("migration") or {}
    return bool((values.get("commands") or {}).get("postMigrate")) and migration.get("enabled", True) is not False


def max_grace(values: Mapping[str, Any]) -> int:
    """The longest effective grace of any enabled role (0 without roles)."""
    return max((role_grace(values, r).effective for r in enabled_roles(values)), default=0)


def post_deploy_rollout_timeout(values: Mapping[str, Any]) -> int:
    """wait-for-rollout's limit: explicit, else the longest grace + waitForMigrations.timeoutSeconds."""
    explicit = (((values.get("migration") or {}).get("postDeploy") or {}).get("waitForRollout") or {}).get("timeoutSeconds")
    if explicit is not None:
        return int(explicit)
    return max_grace(values) + int((values.get("waitForMigrations") or {}).get("timeoutSeconds", 1200))


# Launching roles (handlers.<role>.launcher; chart/templates/_launcher.tpl).
MUTATING_ADMISSION_POLICY_MIN_VERSION = _lc.min_version("mutatingAdmissionPolicy")
POD_SECURITY_LEVELS: tuple[str, ...] = tuple(_lc.DATA["launcher"]["levels"])
LAUNCHER_DEFAULT_RULES: list[dict[str, Any]] = list(_lc.DATA["launcher"]["defaultRules"])


class Launcher(namedtuple("Launcher", ['enabled', 'namespace', 'rules', 'enforce', 'pods_meet', 'mutate',
                                       'pod_selector', 'max_job_runtime'])):
    """A role's launcher settings with the chart's defaults resolved."""

    __slots__ = ()
    # enabled: bool
    # namespace: str
    # rules: list[Any]
    # enforce: str  — the Pod Security level enforced where the launched pods run
    # pods_meet: str  — the level the app's launched pods meet
    # mutate: bool
    # pod_selector: Mapping[str, Any]
    # max_job_runtime: int | None


def role_launcher(values: Mapping[str, Any], role: str) -> Launcher:
    """handlers.<role>.launcher as the chart renders it (enabled only for an enabled role)."""
    spec = _role_spec(values, role)
    raw = _block(spec.get("launcher"))
    ps = _block(raw.get("podSecurity"))
    rules = raw.get("rules")
    return Launcher(
        enabled=bool(spec.get("enabled", True)) and raw.get("enabled") is True,
        namespace=str(raw.get("namespace") or NAMESPACE),
        rules=LAUNCHER_DEFAULT_RULES if rules is None else list(rules),
        enforce=str(ps.get("enforce") or "restricted"),
        pods_meet=str(ps.get("podsMeet") or "restricted"),
        mutate=ps.get("mutate") is True,
        pod_selector=_block(ps.get("podSelector")),
        max_job_runtime=raw.get("maxJobRuntimeSeconds"),
    )


def launcher_mutates(launcher: Launcher, kube_version: str) -> bool:
    """The chart renders the role's MutatingAdmissionPolicy (mutate, a podSelector, >= 1.36)."""
    return (launcher.enabled and launcher.mutate and bool(launcher.pod_selector)
            and at_least(kube_version, MUTATING_ADMISSION_POLICY_MIN_VERSION))


def launched_pods_admitted(launcher: Launcher, kube_version: str) -> bool:
    """The launched pods meet the enforced Pod Security level, or the policy lifts baseline to restricted."""
    meet, need = POD_SECURITY_LEVELS.index(launcher.pods_meet), POD_SECURITY_LEVELS.index(launcher.enforce)
    return meet >= need or (launcher_mutates(launcher, kube_version)
                            and launcher.pods_meet == "baseline" and launcher.enforce == "restricted")


# Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle; chart/templates/_scalein.tpl).
DELETION_COST_POLICY_MIN_VERSION = _lc.min_version("podDeletionCostPolicy")
SCALE_IN: dict[str, Any] = dict(_lc.DATA["scaleIn"])


def role_prefers_idle(values: Mapping[str, Any], role: str) -> bool:
    """handlers.<role>.scaleIn.preferIdle.enabled on an enabled role (the chart's scaleIn.enabled)."""
    spec = _role_spec(values, role)
    prefer = _block(_block(spec.get("scaleIn")).get("preferIdle"))
    return bool(spec.get("enabled", True)) and prefer.get("enabled") is True


def role_calls_api(values: Mapping[str, Any], role: str) -> bool:
    """The role's pods hold an API token of their own: it launches, or sets its deletion cost."""
    return role_launcher(values, role).enabled or role_prefers_idle(values, role)


# Autoscaled roles (handlers.<role>.autoscaling; chart/templates/_autoscaling.tpl).
HPA_V2_MIN_VERSION = _lc.min_version("hpaV2")
HPA_BEHAVIOR_MIN_VERSION = _lc.min_version("hpaBehavior")
AUTOSCALING: dict[str, int] = {k: int(v) for k, v in _lc.DATA["autoscaling"].items()}


def role_autoscaler(values: Mapping[str, Any], role: str) -> str | None:
    """"hpa", "keda" or None: the autoscaler the chart renders for a role (the HPA when both are on)."""
    auto = _block(_role_spec(values, role).get("autoscaling"))
    for kind in ("hpa", "keda"):
        if _block(auto.get(kind)).get("enabled") is True:
            return kind
    return None


def autoscaler_poll_seconds(values: Mapping[str, Any], role: str, kind: str) -> int:
    """One poll of the metrics: the HPA controller's sync period, or KEDA's pollingInterval."""
    if kind == "keda":
        keda = _block(_block(_role_spec(values, role).get("autoscaling")).get("keda"))
        return int(keda.get("pollingInterval", 30))
    return AUTOSCALING["hpaSyncPeriodSeconds"]


def derived_scale_down(values: Mapping[str, Any], role: str, poll_seconds: int) -> dict[str, Any]:
    """The scaleDown behavior the chart renders when the user gives none: at most the PDB's
    maxUnavailable pods (1 for a percentage) per min(grace, 1800 s), and a stabilization window
    of max(300 s, one poll), at most 3600 s."""
    pdb = _block(_role_spec(values, role).get("pdb"))
    max_unavailable = pdb.get("maxUnavailable", 1)
    pods = max_unavailable if isinstance(max_unavailable, int) and not isinstance(max_unavailable, bool) \
        and max_unavailable > 0 else 1
    period = min(max(1, role_grace(values, role).effective), AUTOSCALING["maxPolicyPeriodSeconds"])
    window = min(max(AUTOSCALING["minStabilizationWindowSeconds"], int(poll_seconds)),
                 AUTOSCALING["maxStabilizationWindowSeconds"])
    return {"stabilizationWindowSeconds": window, "selectPolicy": "Min",
            "policies": [{"type": "Pods", "value": pods, "periodSeconds": period}]}
