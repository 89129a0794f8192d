"""Rules on roles whose idle pods go first at scale-in (handlers.<role>.scaleIn.preferIdle): only a
ReplicaSet honours the deletion cost, and only from 1.30 is the token narrowed to its own pod."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterator

from .. import model
from .base import Context, Hit, _p


def _preferring(ctx: Context) -> Iterator[str]:
    for role in model.enabled_roles(ctx.values):
        if model.role_prefers_idle(ctx.values, role):
            yield role


def _jh070(ctx: Context) -> Iterator[Hit]:
    if model.at_least(ctx.kube_version, model.DELETION_COST_POLICY_MIN_VERSION):
        return
    low = model.POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION
    for role in _preferring(ctx):
        also = ("" if model.at_least(ctx.kube_version, low) else
                f"; below {low} the token is also automounted into every container of its pods")
        yield Hit([_p(f"handlers.{role}.scaleIn.preferIdle.enabled")],
                  f"role {role} sets its pod-deletion-cost, and Kubernetes {ctx.kube_version} < "
                  f"{model.DELETION_COST_POLICY_MIN_VERSION} has no ValidatingAdmissionPolicy to match the token's "
                  f"pod name: the token of {role}'s pods may patch every pod of the namespace, not only its own "
                  f"pod's deletion cost{also}",
                  "accept it (RBAC still allows `patch` on pods only), or target Kubernetes >= "
                  f"{model.DELETION_COST_POLICY_MIN_VERSION}")


def _jh071(ctx: Context) -> Iterator[Hit]:
    for role in _preferring(ctx):
        if model.role_kind(ctx.values, role) != "StatefulSet":
            continue
        key = f"handlers.{role}.scaleIn.preferIdle.enabled"
        yield Hit([_p(key), _p(f"handlers.{role}.kind")],
                  f"{key}=true on a StatefulSet role: a StatefulSet always removes its highest ordinal and "
                  "ignores controller.kubernetes.io/pod-deletion-cost (ReplicaSets only), so the deletion-cost "
                  "container, token and RBAC cost without effect (the chart refuses to render it)",
                  f"turn {key} off (the drain still finishes the removed pod's jobs), or use kind: Deployment "
                  "where the role needs no stable identities")
