"""Rules on autoscaled roles (handlers.<role>.autoscaling): one autoscaler, no replicas beside it,
scale to zero and scale-down windows that fit the role's drain, triggers that see the work."""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from .base import Context, Hit, _p


def _auto(ctx: Context, role: str) -> Mapping[str, Any]:
    value = ((ctx.get("handlers") or {}).get(role) or {}).get("autoscaling")
    return value if isinstance(value, Mapping) else {}


def _on(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("enabled") is True


def _jh055(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        auto = _auto(ctx, role)
        if _on(auto.get("hpa")) and _on(auto.get("keda")):
            base = f"handlers.{role}.autoscaling"
            yield Hit([_p(f"{base}.keda.enabled"), _p(f"{base}.hpa.enabled")],
                      f"{base} has both hpa.enabled and keda.enabled: KEDA creates an HPA of its own, and two "
                      "HPAs fight over one workload's replicas (the chart refuses to render it)",
                      "keep one of them")


def _jh056(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        kind = model.role_autoscaler(ctx.values, role)
        if kind and ctx.user_sets(f"handlers.{role}.replicas"):
            low = "minReplicas" if kind == "hpa" else "minReplicaCount"
            yield Hit([_p(f"handlers.{role}.replicas")],
                      f"handlers.{role}.replicas is set, but the role is autoscaled ({kind}): the chart leaves "
                      "replicas out so that `helm upgrade` keeps the autoscaler's count, and this number is ignored",
                      f"remove handlers.{role}.replicas; set handlers.{role}.autoscaling.{kind}.{low} instead")


def _jh057(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        keda = _auto(ctx, role).get("keda")
        if not _on(keda) or keda.get("minReplicaCount") != 0:
            continue
        if model.role_drain(ctx.values, role).mode == "none":
            key = f"handlers.{role}.autoscaling.keda.minReplicaCount"
            yield Hit([_p(key)],
                      f"{key}=0 on a role with drain.mode=none: KEDA's trigger counts queued work, not work in "
                      "flight, so the last pod is removed while it runs jobs, and SIGTERM alone must finish them",
                      f"give handlers.{role}.drain.mode a drain adapter (marker, signal, command), or "
                      "minReplicaCount >= 1")


def _scale_down(block: Any) -> Mapping[str, Any] | None:
    value = block.get("scaleDown") if isinstance(block, Mapping) else None
    return value if isinstance(value, Mapping) else None


def _jh058(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        kind = model.role_autoscaler(ctx.values, role)
        if kind is None:
            continue
        auto = _auto(ctx, role)
        if kind == "hpa":
            base = f"handlers.{role}.autoscaling.hpa.behavior"
            behavior = auto["hpa"].get("behavior")
            if behavior and not model.at_least(ctx.kube_version, model.HPA_BEHAVIOR_MIN_VERSION):
                yield Hit([_p(base)],
                          f"{base} is set, but Kubernetes {ctx.kube_version} < {model.HPA_BEHAVIOR_MIN_VERSION} has "
                          "no HPA behavior field: the chart does not render it and the HPA scales down by its "
                          "built-in rule", f"remove {base}, or target Kubernetes >= {model.HPA_BEHAVIOR_MIN_VERSION}")
                continue
        else:
            base = f"handlers.{role}.autoscaling.keda.advanced.horizontalPodAutoscalerConfig.behavior"
            behavior = ((auto["keda"].get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("behavior")
        down = _scale_down(behavior)
        window = (down or {}).get("stabilizationWindowSeconds")
        poll = model.autoscaler_poll_seconds(ctx.values, role, kind)
        if isinstance(window, int) and not isinstance(window, bool) and window < poll:
            yield Hit([_p(f"{base}.scaleDown.stabilizationWindowSeconds"), _p(base)],
                      f"{base}.scaleDown.stabilizationWindowSeconds={window} is shorter than one poll of the "
                      f"metrics ({poll} s): one noisy sample removes pods, each of which then drains for up to "
                      f"{model.role_grace(ctx.values, role).effective} s",
                      f"remove scaleDown (the chart derives a window of max({model.AUTOSCALING['minStabilizationWindowSeconds']} s, "
                      f"one poll) and a pace that fits the role's PDB and grace) or raise it to at least {poll}")


def _jh059(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        keda = _auto(ctx, role).get("keda")
        if not _on(keda):
            continue
        try:
            multiplier = float(model.role_grace(ctx.values, role).multiplier)
        except (TypeError, ValueError):
            continue
        if multiplier <= 1:
            continue
        for i, trigger in enumerate(keda.get("triggers") or []):
            if not isinstance(trigger, Mapping) or trigger.get("type") != "rabbitmq":
                continue
            meta = trigger.get("metadata") if isinstance(trigger.get("metadata"), Mapping) else {}
            if str(meta.get("mode", "QueueLength")) != "QueueLength":
                continue
            key = f"handlers.{role}.autoscaling.keda.triggers.{i}"
            yield Hit([("handlers", role, "autoscaling", "keda", "triggers", i, "type")],
                      f"{key} scales on RabbitMQ's queue length, but the role's consumers prefetch "
                      f"(drain.runtimeMultiplier={multiplier:g}): the queue length leaves out delivered, "
                      "unacknowledged messages, so KEDA scales in while every prefetch window is full",
                      "use mode: MessageRate, a trigger on the app's own in-flight count, or no prefetch")
