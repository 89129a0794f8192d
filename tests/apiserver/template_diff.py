"""What changed in a pod template, as dotted paths that name containers and env variables
(`initContainers.wait-for-migrations.env.WAIT_TIMEOUT_SECONDS`), not list positions: a sidecar
placed first must not make every later path differ."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_NAMED_LISTS = {"containers", "initContainers", "env", "volumes", "volumeMounts", "ports"}


def flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a template as (path, value); lists of named items keyed by name."""
    if isinstance(node, dict):
        if not node:
            yield prefix, {}
        for key, value in node.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(node, list):
        last = prefix.rsplit(".", 1)[-1]
        named = last in _NAMED_LISTS and all(isinstance(i, dict) and "name" in i for i in node)
        if not node:
            yield prefix, []
        for index, item in enumerate(node):
            yield from flatten(item, f"{prefix}.{item['name']}" if named else f"{prefix}[{index}]")
    else:
        yield prefix, node


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The sorted paths whose leaf differs (added, removed or changed)."""
    a, b = dict(flatten(before)), dict(flatten(after))
    return sorted(p for p in a.keys() | b.keys() if a.get(p, ...) != b.get(p, ...))
