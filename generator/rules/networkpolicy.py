"""Rules on the NetworkPolicies: database egress, DNS, and ingress to role ports."""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
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


def _sloppy_network(text: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str | None] | None:
    """`text` parsed as Go's net.ParseCIDR in its sloppy form (leading zeros allowed), as the API
    server's netutils.ParseCIDRSloppy does: (the masked network, why strict validation refuses it
    or None); None when not a CIDR at all."""
    addr, sep, bits = text.partition("/")
    if not sep or not bits.isascii() or not bits.isdigit() or "%" in addr:
        return None
    strict_why = None
    if ":" not in addr:
        parts = addr.split(".")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts):
            return None
        if any(len(p) > 1 and p.startswith("0") for p in parts) or (len(bits) > 1 and bits.startswith("0")):
            strict_why = "must not have leading 0s in IP or prefix length"
        addr = ".".join(str(int(p)) for p in parts)
    elif len(bits) > 1 and bits.startswith("0"):
        strict_why = "must not have leading 0s in IP or prefix length"
    try:
        exact = ipaddress.ip_network(f"{addr}/{int(bits)}", strict=False)
        host = ipaddress.ip_address(addr)
    except ValueError:
        return None
    if strict_why is None and isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped is not None:
        strict_why = "must not have an IPv4-mapped IPv6 address"
    if strict_why is None and host != exact.network_address:
        strict_why = f"must not have bits set beyond the prefix length (the network is {exact})"
    return exact, strict_why


def ip_block_problems(block: Any, kube_version: str) -> list[tuple[tuple[str | int, ...], str]]:
    """(key path inside the ipBlock, why) for each part of an ipBlock the API server refuses."""
    if not isinstance(block, dict) or not isinstance(block.get("cidr"), str):
        return []
    strict = model.at_least(kube_version, model.STRICT_CIDR_MIN_VERSION)
    parsed = _sloppy_network(block["cidr"])
    if parsed is None:
        return [(("cidr",), "is not a valid CIDR (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    network, why = parsed
    problems: list[tuple[tuple[str | int, ...], str]] = []
    if strict and why:
        problems.append((("cidr",), why))
    for i, text in enumerate(block.get("except") or []):
        one = _sloppy_network(text) if isinstance(text, str) else None
        if one is None:
            problems.append((("except", i), "is not a valid CIDR"))
            continue
        if strict and one[1]:
            problems.append((("except", i), one[1]))
        inner = one[0]
        if inner.version != network.version or not inner.subnet_of(network) or inner.prefixlen <= network.prefixlen:  # type: ignore[arg-type]
            problems.append((("except", i), f"must be a strict subset of cidr {block['cidr']}"))
    return problems


def _ip_blocks(node: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(key path, value) of every `ipBlock` under node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ipBlock":
                yield path + (key,), value
            else:
                yield from _ip_blocks(value, path + (key,))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _ip_blocks(item, path + (i,))


def _jh051(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("networkPolicy.enabled", False):
        return
    roots: list[tuple[tuple[str | int, ...], Any]] = [(("networkPolicy",), ctx.get("networkPolicy"))]
    for role in model.enabled_roles(ctx.values):
        roots.append((("handlers", role, "networkPolicy"), ((ctx.get("handlers") or {}).get(role) or {}).get("networkPolicy")))
    for root, node in roots:
        for path, block in _ip_blocks(node, root):
            for sub, why in ip_block_problems(block, ctx.kube_version):
                where = path + sub
                yield Hit([where], f"{dotted(list(where))}={_at(block, sub)!r} {why}: the API server of Kubernetes "
                          f"{ctx.kube_version} refuses the NetworkPolicies, so the release fails to install",
                          "give the network address and its prefix length, e.g. 10.0.0.0/24 (or 10.0.0.5/32 for one "
                          "host), with except entries strictly inside it")


def _at(block: Any, sub: tuple[str | int, ...]) -> Any:
    for key in sub:
        block = block[key]
    return block
