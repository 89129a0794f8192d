"""Values files drawn from chart/values.schema.json (issue 22's second source for the parity
property).

hypothesis-jsonschema's `from_schema` on the whole schema works but costs ~26 s to start and
~3 s per example: it re-canonicalises the role schema for every handler it draws. So objects
are walked here, once, with `$ref`, `allOf` and `anyOf` resolved; every leaf (numbers, strings
with their patterns and bounds, enums, `not`) is drawn by `from_schema`. Each object draws its
required keys and at most OPTIONAL_KEYS of its optional ones, so a document changes a few
settings at a time, as a user's file does; a key chart/values.yaml supplies is optional, as it
is for users (helm validates the values merged over the chart's). What the walk cannot express
(a probe has exactly one handler, minProperties) is filtered with the schema's own validator,
and so is the whole merged document: every file drawn is one helm's schema check passes.

Strings are printable: helm's YAML parser refuses C0/C1 control characters, U+2028/9 and
U+FFFE/F wherever the chart writes a value into YAML text (e.g. database.host in a hint), so
those are a limit of YAML the property leaves aside (docs/testing.md)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import jsonschema
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from generator.values.merge import chart_defaults, merged
from unit_support import REPO

SCHEMA_PATH = REPO / "chart" / "values.schema.json"
OPTIONAL_KEYS = 3  # optional keys drawn per object, at most
MAX_ITEMS = 2  # items per array (above minItems) and entries per free-form map
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")
_DOC_KEYS = ("description", "title", "examples", "default", "$comment", "$schema")
_SCALARS = st.one_of(st.integers(-5, 5), st.booleans(), st.text("ab-1", max_size=4))


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return _NOT_PRINTABLE.sub("?", value)
    if isinstance(value, list):
        return [_printable(v) for v in value]
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    return value


class _Walker:
    """Strategies for the sub-schemas of one schema document."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self.cls = jsonschema.validators.validator_for(schema)

    def _ref(self, ref: str) -> dict[str, Any]:
        node: Any = self.root
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node

    def resolved(self, node: dict[str, Any]) -> dict[str, Any]:
        """node with its $ref inlined (siblings win) and documentation keys dropped."""
        node = {k: v for k, v in node.items() if k not in _DOC_KEYS}
        while "$ref" in node:
            ref = node.pop("$ref")
            node = {**{k: v for k, v in self._ref(ref).items() if k not in _DOC_KEYS}, **node}
        return node

    def _validator(self, node: dict[str, Any]) -> Any:
        return self.cls({**node, "definitions": self.root.get("definitions", {})}).is_valid

    def strategy(self, node: Any, defaults: Any = None) -> st.SearchStrategy[Any]:
        """Values valid against node; `defaults` is what chart/values.yaml holds there."""
        if node is True or node == {}:
            return _SCALARS
        node = self.resolved(node)
        if "allOf" in node:
            rest = {k: v for k, v in node.items() if k != "allOf"}
            checks = [self._validator(sub) for sub in node["allOf"]]
            return self.strategy(rest, defaults).filter(lambda v: all(c(v) for c in checks))
        if "anyOf" in node:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return st.one_of([self.strategy({**rest, **self.resolved(b)}, defaults) for b in node["anyOf"]])
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            return self._object(node, defaults if isinstance(defaults, dict) else {})
        if kind == "array":
            items = self.strategy(node.get("items", True))
            low = node.get("minItems", 0)
            lists = st.lists(items, min_size=low, max_size=node.get("maxItems", low + MAX_ITEMS))
            return lists.filter(self._validator(node)) if node.get("uniqueItems") else lists
        return from_schema(node).map(_printable)

    def _object(self, node: dict[str, Any], defaults: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        props: dict[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        required = [k for k in node.get("required", []) if k in props and k not in defaults]
        optional = [k for k in props if k not in required]
        fields = {k: self.strategy(v, defaults.get(k)) for k, v in props.items()}
        names: st.SearchStrategy[str] | None = None
        if extra is not False and not props:
            pattern = {"type": "string", "minLength": 1, "maxLength": 12, **node.get("propertyNames", {})}
            names = from_schema(pattern).map(_printable)
        values = self.strategy(extra) if isinstance(extra, dict) else _SCALARS

        @st.composite
        def draw_object(draw: st.DrawFn) -> dict[str, Any]:
            out = {k: draw(fields[k]) for k in required}
            chosen = draw(st.lists(st.sampled_from(optional), unique=True, max_size=OPTIONAL_KEYS)) if optional else []
            for k in chosen:
                out[k] = draw(fields[k])
            if names is not None:
                low = node.get("minProperties", 0)
                out.update(draw(st.dictionaries(names, values, min_size=low, max_size=low + MAX_ITEMS)))
            return out

        if defaults:  # a file that leaves a default out is checked merged, below
            return draw_object()
        return draw_object().filter(self._validator(node))


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def schema_values() -> st.SearchStrategy[dict[str, Any]]:
    """Values documents valid against chart/values.schema.json."""
    doc = schema()
    valid = jsonschema.validators.validator_for(doc)(doc).is_valid
    return _Walker(doc).strategy(doc, chart_defaults().data).filter(lambda v: valid(merged(v)))
