"""The migration Jobs: the post-deploy phase and the Job's version-gated fields."""

from __future__ import annotations

from collections.abc import Mapping

from .grace import max_grace
from .roles import _block
from .versions import POD_REPLACEMENT_POLICY_MIN_VERSION, at_least

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

def post_deploy_enabled(values: Mapping[str, Any]) -> bool:
    """The chart renders the post-deploy Job: commands.postMigrate with the migration on."""
    migration = values.get("migration") or {}
    return bool((values.get("commands") or {}).get("postMigrate")) and migration.get("enabled", True) is not False


def post_deploy_rollout_timeout(values: Mapping[str, Any]) -> int:
    """wait-for-rollout's limit: explicit, else the longest grace + waitForMigrations.timeoutSeconds."""
    explicit = (((values.get("migration") or {}).get("postDeploy") or {}).get("waitForRollout") or {}).get("timeoutSeconds")
    if explicit is not None:
        return int(explicit)
    return max_grace(values) + int((values.get("waitForMigrations") or {}).get("timeoutSeconds", 1200))


def migration_pod_replacement_policy(values: Mapping[str, Any], kube_version: str) -> str | None:
    """The migration Job's podReplacementPolicy as rendered (None below 1.29 or when null)."""
    policy = _block(values.get("migration")).get("podReplacementPolicy")
    if not policy or not at_least(kube_version, POD_REPLACEMENT_POLICY_MIN_VERSION):
        return None
    return str(policy)
