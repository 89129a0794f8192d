"""Rules on the NetworkPolicies: database egress, DNS, and ingress to role ports."""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (fastcheck.py)
    from typing import Any, Iterator

from .. import model
from .base import Context, Hit, _p


def _jh041(ctx: Context) -> Iterator[Hit]:
    if ctx.flag("networkPolicy.enabled", False) and not ctx.get("networkPolicy.database.to") \
            and not ctx.get("networkPolicy.extraEgress"):
        host, port = ctx.get("database.host"), ctx.get("database.port")
        yield Hit([_p("networkPolicy.enabled"), _p("networkPolicy.database.to")],
                  "networkPolicy.enabled=true, but networkPolicy.database.to is empty and there is no "
                  "networkPolicy.extraEgress: the policies would deny the handlers, wait-for-migrations, the "
                  f"migration Job and the helm test every connection to the database ({host}:{port}) "
                  "(the chart refuses to render it)",
                  "set networkPolicy.database.to to the database's peers, e.g. [{ipBlock: {cidr: 10.0.0.5/32}}] "
                  "for a database outside the cluster or a podSelector/namespaceSelector for one inside, or give "
                  "networkPolicy.extraEgress rules that reach it")


def _is_ip(text: Any) -> bool:
    """True when text is an IPv4 or IPv6 address (not a name DNS must resolve)."""
    try:
        ipaddress.ip_address(str(text))
    except ValueError:
        return False
    return True


def _jh042(ctx: Context) -> Iterator[Hit]:
    host = ctx.get("database.host")
    if (ctx.flag("networkPolicy.enabled", False) and not ctx.flag("networkPolicy.dns.enabled", True)
            and not ctx.get("networkPolicy.extraEgress") and host and not _is_ip(host)):
        yield Hit([_p("networkPolicy.dns.enabled")],
                  f"networkPolicy.dns.enabled=false and no networkPolicy.extraEgress, but database.host={host!r} "
                  "is a name: the policies deny DNS, so no chart pod can resolve it",
                  "keep networkPolicy.dns.enabled=true (set networkPolicy.dns.to for NodeLocal DNSCache or another "
                  "resolver), or give database.host as an IP address, or an extraEgress rule to your resolver")


def _jh043(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("networkPolicy.enabled", False) or ctx.flag("networkPolicy.allowRelease", True):
        return
    if ctx.get("networkPolicy.ingress.from") or ctx.get("networkPolicy.extraIngress"):
        return
    for role in model.enabled_roles(ctx.values):
        spec = (ctx.get("handlers") or {}).get(role) or {}
        if spec.get("port") is None and not spec.get("extraPorts"):
            continue
        own = spec.get("networkPolicy") or {}
        if (own.get("ingress") or {}).get("from") or own.get("extraIngress"):
            continue
        yield Hit([_p("networkPolicy.allowRelease"), _p(f"handlers.{role}.networkPolicy")],
                  f"role {role} has a port, but with networkPolicy.allowRelease=false and no ingress.from or "
                  "extraIngress (chart-wide or the role's) its NetworkPolicy admits no pod: its Service answers "
                  "nobody, and `helm test` fails",
                  f"give {role}'s clients in networkPolicy.ingress.from or handlers.{role}.networkPolicy.ingress.from "
                  "(e.g. your ingress controller's namespaceSelector), or keep networkPolicy.allowRelease=true")
