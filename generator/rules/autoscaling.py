"""Rules on autoscaled roles (handlers.<role>.autoscaling): one autoscaler, no replicas beside it,
scale to zero and scale-down windows that fit the role's drain, triggers that see the work,
utilization targets whose pods request what they measure."""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
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


def _utilization_metrics(ctx: Context, role: str) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(key path, resource) of each metric of the role's autoscaler that is a percentage of the pods'
    requests: an HPA `Resource` metric with target type Utilization, a KEDA cpu/memory trigger in
    its default metricType Utilization (KEDA turns it into the same HPA metric)."""
    kind = model.role_autoscaler(ctx.values, role)
    auto = _auto(ctx, role)
    base: tuple[str | int, ...] = ("handlers", role, "autoscaling")
    if kind == "hpa":
        for i, m in enumerate(auto["hpa"].get("metrics") or []):
            res = m.get("resource") if isinstance(m, Mapping) and m.get("type") == "Resource" else None
            target = res.get("target") if isinstance(res, Mapping) else None
            if isinstance(target, Mapping) and target.get("type") == "Utilization" and res.get("name"):
                yield base + ("hpa", "metrics", i), str(res["name"])
    elif kind == "keda":
        for i, t in enumerate(auto["keda"].get("triggers") or []):
            if isinstance(t, Mapping) and t.get("type") in ("cpu", "memory") \
                    and (t.get("metricType") or "Utilization") == "Utilization":
                yield base + ("keda", "triggers", i), str(t["type"])


def _pod_containers(ctx: Context, role: str) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(key path, container name, resources) of every container the HPA sums requests over in the
    role's pods: the role's own, the sidecars (chart-wide, then the role's), extra init containers with
    restartPolicy Always (native sidecars of yours) and preferIdle's deletion-cost container. The
    chart's own containers fall back to defaultResources; yours are rendered as given."""
    spec = (ctx.get("handlers") or {}).get(role) or {}
    default = ctx.get("defaultResources")
    yield ("handlers", role, "resources"), role, spec.get("resources") or default
    for key in ("sidecars", "extraInitContainers"):
        for path, c in model.user_containers(ctx.values, role, key):
            if not isinstance(c, Mapping) or (key == "extraInitContainers" and c.get("restartPolicy") != "Always"):
                continue
            yield path + ("resources",), str(c.get("name")), c.get("resources")
    if model.role_prefers_idle(ctx.values, role):
        yield (("handlers", role, "scaleIn", "preferIdle", "resources"), model.SCALE_IN["container"],
               spec["scaleIn"]["preferIdle"].get("resources") or default)


def _jh072(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        for metric, resource in _utilization_metrics(ctx, role):
            for path, name, block in _pod_containers(ctx, role):
                requests = block.get("requests") if isinstance(block, Mapping) else None
                if isinstance(requests, Mapping) and requests.get(resource) is not None:
                    continue
                own = [path[:-1]] if isinstance(path[-2], int) else []  # a container of yours: its item
                yield Hit([path, *own, metric],
                          f"{dotted(metric)} scales on {resource} utilization (a percentage of the pods' requests), "
                          f"but container {name} ({dotted(path)}) requests no {resource}: the HPA controller then "
                          f"computes no utilization (\"missing request for {resource} in container {name}\") and never "
                          "scales the role",
                          f"set {dotted(path)}.requests.{resource}, or scale on an AverageValue target instead")
