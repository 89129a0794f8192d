"""Kubernetes versions: the matrix, each gate's first version (chart/lifecycle.yaml, which the chart
reads too: see the file for each gate's feature gate, KEP and fallback) and comparisons."""

from __future__ import annotations

from .. import lifecycle as _lc

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
ORDINAL_MIN_VERSION = _lc.min_version("podIndexLabel")
STS_MAX_UNAVAILABLE_MIN_VERSION = _lc.min_version("statefulSetMaxUnavailable")
RELAXED_ENV_NAMES_MIN_VERSION = _lc.min_version("relaxedEnvVarNames")

# StrictIPCIDRValidation (KEP-4858, beta on by default from 1.36): the API server refuses an ipBlock CIDR
# with bits beyond its prefix, leading zeros or an IPv4-mapped IPv6 address (JH051; the chart renders
# ipBlocks as given whatever the version, so this is no chart gate).
STRICT_CIDR_MIN_VERSION = "1.36"
# From 1.32 (kubernetes/kubernetes#128212, ValidateNodeSelectorRequirement) the values of a required node
# affinity's matchExpressions must be label values; below, the API server takes any string and the pod
# never schedules (JH075; the chart renders affinity as given, so this is no chart gate).
NODE_AFFINITY_LABEL_VALUES_MIN_VERSION = "1.32"
SLEEP_ZERO_MIN_VERSION = _lc.min_version("sleepZero")
UNHEALTHY_POD_EVICTION_MIN_VERSION = _lc.min_version("pdbUnhealthyPodEvictionPolicy")
POD_REPLACEMENT_POLICY_MIN_VERSION = _lc.min_version("jobPodReplacementPolicy")

# The post-deploy Job's projected API token (kube-root-ca.crt ConfigMap GA 1.21, KEP-1205);
# below, the ServiceAccount token is automounted (JH038).
POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION = _lc.min_version("projectedServiceAccountToken")


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


def pdb_api_version(kube_version: str) -> str:
    """policy/v1 from 1.21, policy/v1beta1 below."""
    return "policy/v1" if at_least(kube_version, PDB_V1_MIN_VERSION) else "policy/v1beta1"


def native_sidecars(kube_version: str) -> bool:
    """Sidecars are native init containers (restartPolicy Always) on this version."""
    return at_least(kube_version, NATIVE_SIDECAR_MIN_VERSION)
