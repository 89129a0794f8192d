"""Where a key path is in a round-trip (ruamel) document: the positions every finding carries.
Needs ruamel's node types only; the full reader (full.py) and ValuesFile.position use it."""

from __future__ import annotations

from typing import Any, Sequence

from ruamel.yaml.comments import CommentedMap, CommentedSeq


def plain_key(key: Any) -> str:
    """YAML 1.1 keys as go-yaml/JSON render them: true -> 'true', 1 -> '1'."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def locate(doc: Any, path: Sequence[str | int]) -> tuple[int, int, bool]:
    """1-based position of the deepest existing element of `path` in a round-trip doc."""
    line, col, found = 1, 1, True
    node = doc
    if node is None:
        return 1, 1, False
    for part in path:
        if isinstance(node, CommentedMap):
            key = _find_key(node, part)
            if key is _MISSING:
                return line, col, False
            pos = node.lc.key(key)
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            pos = node.lc.item(part)
            node = node[part]
        else:
            return line, col, False
        if pos and pos[0] is not None:
            line, col = pos[0] + 1, pos[1] + 1
    return line, col, found


_MISSING = object()


def _find_key(node: CommentedMap, part: str | int) -> Any:
    if part in node:
        return part
    for k in node:
        if plain_key(k) == str(part):
            return k
    return _MISSING
