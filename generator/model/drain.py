"""A role's drain adapter (chart/templates/_drain.tpl) and what it needs from the image."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

from .. import lifecycle as _lc
from .probes import resolve_probe, role_startup_probe_rendered
from .roles import _block, _role_spec
from .versions import NATIVE_SLEEP_MIN_VERSION, STOP_SIGNAL_MIN_VERSION, at_least

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

DRAIN_MODES: tuple[str, ...] = tuple(_lc.DATA["drain"]["modes"])

# What a null drain key means (values.yaml carries the same defaults).
DRAIN_FALLBACK: dict[str, Any] = dict(_lc.DATA["drain"]["fallback"])


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
