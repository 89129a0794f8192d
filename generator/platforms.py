"""Platforms whose documented limits cap how long a handler pod may take to stop (`check --platform`)."""

from __future__ import annotations

import re
from collections import namedtuple

# What the limit caps. Either way the role's effective terminationGracePeriodSeconds is the number to
# compare: a pod may legitimately use all of it, and the platform stops waiting at the limit.
GRACE = "grace"  # the per-pod grace period itself is cut to the limit
DRAIN_TOTAL = "drain total"  # the whole per-node drain/notice window, eviction to pod exit


class Platform(namedtuple("Platform", ['name', 'title', 'limit_seconds', 'what', 'consequence', 'source'])):
    """One platform limit: the number, what it caps, what happens above it, and where it is documented."""

    __slots__ = ()
    # name: str
    # title: str
    # limit_seconds: int | None  — None: no documented default; the user must give NAME=SECONDS
    # what: str  — GRACE or DRAIN_TOTAL
    # consequence: str
    # source: str


PLATFORMS: tuple[Platform, ...] = (
    Platform(
        name="cluster-autoscaler",
        title="Kubernetes cluster-autoscaler scale-down",
        limit_seconds=600,
        what=GRACE,
        consequence="--max-graceful-termination-sec (default 600): a pod not stopped within it is not "
        "waited for; the node is terminated anyway",
        source="https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md"
        "#does-ca-respect-gracefultermination-in-scale-down",
    ),
    Platform(
        name="gke-upgrade",
        title="GKE node upgrade (surge)",
        limit_seconds=3600,
        what=DRAIN_TOTAL,
        consequence="PodDisruptionBudgets and pod grace are respected for up to 1 hour per node; after "
        "that GKE proceeds with the upgrade and the remaining pods are removed",
        source="https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-upgrades",
    ),
    Platform(
        name="eks-upgrade",
        title="EKS managed node group update",
        limit_seconds=900,
        what=DRAIN_TOTAL,
        consequence="pods not off the node within 15 minutes fail the update with PodEvictionFailure; "
        "with the force flag the pods are deleted instead",
        source="https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html",
    ),
    Platform(
        name="aks-upgrade",
        title="AKS node pool upgrade",
        limit_seconds=1800,
        what=DRAIN_TOTAL,
        consequence="drainTimeoutInMinutes (default 30) per node, PDB waits included: when exceeded the "
        "upgrade fails (undrainableNodeBehavior=Cordon quarantines the node instead)",
        source="https://learn.microsoft.com/en-us/dotnet/api/"
        "microsoft.azure.management.containerservice.models.agentpoolupgradesettings.draintimeoutinminutes",
    ),
    Platform(
        name="karpenter",
        title="Karpenter NodePool terminationGracePeriod",
        limit_seconds=None,
        what=DRAIN_TOTAL,
        consequence="spec.template.spec.terminationGracePeriod bounds how long a node may drain before it "
        "is forcibly deleted; a pod whose grace is longer may be killed before its grace ends",
        source="https://karpenter.sh/docs/concepts/nodepools/#spectemplatespecterminationgraceperiod",
    ),
    Platform(
        name="aws-spot",
        title="AWS EC2 Spot interruption notice",
        limit_seconds=120,
        what=DRAIN_TOTAL,
        consequence="the interruption notice comes two minutes (best effort) before EC2 stops or "
        "terminates the instance; whatever is still running then is lost",
        source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html",
    ),
    Platform(
        name="gcp-spot",
        title="GKE Spot / preemptible VM graceful node shutdown",
        limit_seconds=15,
        what=GRACE,
        consequence="after the preemption notice the kubelet gives non-system pods 15 s (then 15 s for "
        "critical pods, VM off at 30 s); a longer terminationGracePeriodSeconds has no effect",
        source="https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms",
    ),
    Platform(
        name="azure-spot",
        title="Azure Spot VM eviction (Scheduled Events Preempt)",
        limit_seconds=30,
        what=DRAIN_TOTAL,
        consequence="the Preempt scheduled event gives a minimum of 30 s notice before the VM is evicted; "
        "whatever is still running then is lost",
        source="https://learn.microsoft.com/en-us/azure/virtual-machines/linux/scheduled-events",
    ),
)

PLATFORMS_BY_NAME: dict[str, Platform] = {p.name: p for p in PLATFORMS}

_SPEC = re.compile(r"^\s*([A-Za-z0-9-]+)\s*(?:=\s*(\S*)\s*)?$")


def _valid_names() -> str:
    """The valid platform names, for error messages."""
    return ", ".join(p.name if p.limit_seconds is not None else f"{p.name}=SECONDS" for p in PLATFORMS)


def parse_platform(text: str) -> tuple[Platform, int]:
    """Parse `NAME` or `NAME=SECONDS` into the platform and the limit to check against (SECONDS overrides)."""
    m = _SPEC.match(text or "")
    if m is None:
        raise ValueError(f"bad --platform {text!r}: expected NAME or NAME=SECONDS; valid: {_valid_names()}")
    name, seconds = m.group(1).lower(), m.group(2)
    platform = PLATFORMS_BY_NAME.get(name)
    if platform is None:
        raise ValueError(f"unknown platform {name!r}; valid: {_valid_names()}")
    if seconds is None:
        if platform.limit_seconds is None:
            raise ValueError(f"platform {name!r} has no default limit: give it as {name}=SECONDS "
                             f"(the NodePool's terminationGracePeriod in seconds)")
        return platform, platform.limit_seconds
    if not (seconds.isascii() and seconds.isdigit()) or int(seconds) <= 0:
        raise ValueError(f"bad limit in --platform {text!r}: SECONDS must be a positive whole number")
    return platform, int(seconds)
