"""Rules on shutdown: the grace period, the drain adapters, what platforms and PDBs honour."""

from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterator

from .. import model, platforms as plat
from .base import Context, Hit, _Skip, _p


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
