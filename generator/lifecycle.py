"""The chart's lifecycle data (chart/lifecycle.yaml): version gates, kinds, null-value
fallbacks and the rules' words. The chart reads the same file (templates/_lifecycle.tpl),
so a gate or a rule's text exists once; model/ and rules/ take theirs from here."""

from __future__ import annotations

import os

import yaml

from . import charts
from .charts import cache as chartcache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE_NAME = "lifecycle.yaml"


def _load() -> dict[str, Any]:
    """The data file of the chart the tool ships with (parsed once, at import; taken from
    charts/_cache.py when that was built from this chart: no YAML parse at start-up)."""
    cache = chartcache.load(charts.DEFAULT_PATH)
    if cache is not None:  # its key covers lifecycle.yaml, so a matching cache has LIFECYCLE
        return cache.LIFECYCLE
    path = os.path.join(charts.DEFAULT_PATH, FILE_NAME)
    with open(path, encoding="utf-8") as fh:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(fh, Loader=loader)  # noqa: S506 - a safe loader


DATA: dict[str, Any] = _load()
GATES: dict[str, dict[str, Any]] = DATA["gates"]
RULES: dict[str, dict[str, Any]] = DATA["rules"]


def min_version(gate: str) -> str:
    """The first Kubernetes minor where a gated field is rendered."""
    return str(GATES[gate]["minKubeVersion"])


def chart_rules() -> list[str]:
    """The rule ids the chart refuses at render, in id order."""
    return sorted(rule_id for rule_id, rule in RULES.items() if rule.get("chart"))


def sync_schema(schema: dict[str, Any], data: dict[str, Any] | None = None) -> dict[str, Any]:
    """values.schema.json with the lists it shares with this data set from it: the drain-mode
    and workload-kind enums, oneProbeHandler (no two handler kinds in one probe block), and the
    keys of earlier releases (`deprecations`), accepted so that the chart's JH060 words reach
    the user instead of a schema error."""
    data = DATA if data is None else data
    modes, kinds = data["drain"]["modes"], data["workloadKinds"]
    handlers = data["probe"]["handlerKinds"]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            enum = node.get("enum")
            if isinstance(enum, list) and "marker" in enum:  # drain.mode, handlers.<role>.drain.mode
                node["enum"] = list(modes)
            elif isinstance(enum, list) and "Deployment" in enum:
                node["enum"] = list(kinds)
            props = node.get("properties")
            if isinstance(props, dict):  # drop the deprecated keys: the table below adds them again
                for key in [k for k, v in props.items() if isinstance(v, dict) and v.get("deprecated")]:
                    del props[key]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    pairs = [[a, b] for i, a in enumerate(handlers) for b in handlers[i + 1:]]
    schema["definitions"]["oneProbeHandler"]["not"]["anyOf"] = [{"required": p} for p in pairs]
    for entry in data.get("deprecations") or []:
        _deprecated_key(schema, entry)
    return schema


def _deprecated_key(schema: dict[str, Any], entry: dict[str, Any]) -> None:
    """Accept `entry["path"]` (dotted, `*` any key) in the schema as a deprecated key of any type."""
    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        """The object schema a node stands for: through `$ref`, and the branch of an anyOf
        (a role or null) that has properties."""
        while isinstance(node.get("$ref"), str):  # "#/definitions/role"
            target: Any = schema
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        if "properties" not in node:
            for branch in node.get("anyOf") or node.get("oneOf") or []:
                found = resolve(branch)
                if "properties" in found:
                    return found
        return node

    *parents, last = str(entry["path"]).split(".")
    node = resolve(schema)
    try:
        for seg in parents:
            node = resolve(node["additionalProperties"] if seg == "*" else node["properties"][seg])
    except (KeyError, TypeError):
        raise ValueError(f"chart/lifecycle.yaml deprecations: {entry['path']} has no parent object in "
                         f"values.schema.json") from None
    new = f"renamed to {entry['newPath']}" if entry.get("newPath") else "removed"
    node.setdefault("properties", {})[last] = {
        "deprecated": True, "description": f"{new} in chart {entry['since']}: {entry['fix']} (JH060)"}


def main(argv: list[str] | None = None) -> int:
    """`python -m generator.lifecycle [--check]`: write (or check) the schema's shared lists."""
    import json
    import sys

    from . import atomic

    args = sys.argv[1:] if argv is None else argv
    path = charts.CHECKOUT_DIR / "values.schema.json"
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    want = json.dumps(sync_schema(json.loads(text)), indent=2, ensure_ascii=False) + "\n"
    return atomic.write_or_check(
        path, want, text, "--check" in args,
        f"{path}: its drain modes, workload kinds or probe handler kinds differ from "
        "chart/lifecycle.yaml. Fix: run `python -m generator.lifecycle` (make render).",
        f"lifecycle: wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
