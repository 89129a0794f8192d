"""A fast, conservative reader of plain values files: libyaml (PyYAML's C parser, YAML 1.1
like helm) composes the document, and only the forms whose meaning is beyond doubt are
turned into data. Anything else raises `Unsure`, and the caller takes the full ruamel path
(full.py), which gives positions and the exact findings. So this reader never decides
anything the full reader would decide differently (tests/unit/test_fastcheck.py).

Refused (Unsure): more than one document, anchors and aliases, merge keys, duplicate keys,
non-string keys, tags other than str/int/float/bool/null, numbers other than plain decimals,
YAML 1.1 booleans other than true/false, line breaks other than \\n, and any parse error.
"""

from __future__ import annotations

import re
import sys

import yaml

from .file import MAX_BYTES, MAX_DEPTH, MAX_NODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


_T = "tag:yaml.org,2002:"
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
# Plain y/Y/n/N: booleans in YAML 1.1, strings to libyaml's resolver.
_YAML11_YN = frozenset({"y", "Y", "n", "N"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
# Unicode line breaks libyaml and ruamel may treat differently, tabs, BOM, control characters.
_ODD_TEXT = re.compile("[\r\t\x85\u2028\u2029\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_FLOAT_MAX = sys.float_info.max


class Unsure(Exception):
    """The fast reader will not decide this input: use the full one."""


def load(raw: bytes) -> dict[str, Any] | None:
    """Plain values data of a file's bytes (None for an empty document); raises Unsure."""
    if len(raw) > MAX_BYTES:
        raise Unsure("large")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unsure("not utf-8") from None
    if _ODD_TEXT.search(text):
        raise Unsure("odd characters")
    loader = yaml.CSafeLoader(text)
    try:
        if not loader.check_node():
            return None
        node = loader.get_node()
        if loader.check_node():
            raise Unsure("several documents")
    except Exception:  # noqa: BLE001 - YAMLError, RecursionError, MemoryError: the full reader reports
        raise Unsure("yaml error") from None
    finally:
        loader.dispose()
    if node.tag == _T + "null" and isinstance(node, yaml.ScalarNode) and node.value in _NULL:
        return None
    if not isinstance(node, yaml.MappingNode):
        raise Unsure("not a mapping")
    return _plain(node, set(), 0, [MAX_NODES])


def _plain(node: Any, seen: set[int], depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise Unsure("large")
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if id(node) in seen:  # an alias: the same node object twice
        raise Unsure("alias")
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _T + "seq":
            raise Unsure("tag")
        return [_plain(v, seen, depth + 1, budget) for v in node.value]
    if node.tag != _T + "map":
        raise Unsure("tag")
    out: dict[str, Any] = {}
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode) or knode.tag != _T + "str" or id(knode) in seen:
            raise Unsure("key")
        seen.add(id(knode))
        if knode.value in out or knode.value == "<<":
            raise Unsure("duplicate or merge key")
        out[knode.value] = _plain(vnode, seen, depth + 1, budget)
    return out


def _scalar(node: Any) -> Any:
    tag, value = node.tag, node.value
    if tag == _T + "str":
        if not node.style and value in _YAML11_YN:  # libyaml: str; YAML 1.1 (ruamel, helm): bool
            raise Unsure("y/n")
        return value
    if node.style:  # a quoted or block scalar with an explicit non-str tag: leave it to ruamel
        raise Unsure("tagged scalar")
    if tag == _T + "int" and _INT.fullmatch(value):
        number = int(value)
        if abs(number) > _FLOAT_MAX:
            raise Unsure("big int")
        return number
    if tag == _T + "float" and _FLOAT.fullmatch(value):
        real = float(value)
        if abs(real) > _FLOAT_MAX:  # 1e400 written out: infinite, which helm cannot use
            raise Unsure("infinite")
        return real
    if tag == _T + "bool" and value in _BOOL:
        return _BOOL[value]
    if tag == _T + "null" and value in _NULL:
        return None
    raise Unsure("scalar form")
