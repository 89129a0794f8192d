"""The key paths a chart release knows: its values.yaml's keys and its schema's properties
(through `$ref`, anyOf/allOf/oneOf, if/then/else, `*` for additionalProperties, `[]` for items)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 10


def values_paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every key of a values mapping, dotted."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield ".".join(prefix + (str(key),))
            yield from values_paths(value, prefix + (str(key),))


def schema_paths(schema: dict[str, Any]) -> set[str]:
    """Every property path a values.schema.json declares, dotted."""
    return {".".join(p) for p in _walk(schema, schema, ())}


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    target: Any = root
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _walk(root: dict[str, Any], node: Any, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if len(prefix) > MAX_DEPTH or not isinstance(node, dict):
        return
    node = _resolve(root, node)
    for key, value in (node.get("properties") or {}).items():
        yield prefix + (key,)
        yield from _walk(root, value, prefix + (key,))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(root, node["additionalProperties"], prefix + ("*",))
    if isinstance(node.get("items"), dict):
        yield from _walk(root, node["items"], prefix + ("[]",))
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in node.get(key) or []:
            yield from _walk(root, branch, prefix)
    for key in ("then", "else"):
        yield from _walk(root, node.get(key), prefix)
