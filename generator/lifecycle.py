"""The chart's lifecycle data (chart/lifecycle.yaml): version gates, kinds, null-value
fallbacks and the rules' words. The chart reads the same file (templates/_lifecycle.tpl),
so a gate or a rule's text exists once; model.py and rules/ take theirs from here."""

from __future__ import annotations

import os

import yaml

from . import chartcache, charts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE_NAME = "lifecycle.yaml"


def _load() -> dict[str, Any]:
    """The data file of the chart the tool ships with (parsed once, at import; taken from
    `_chartcache` when that was built from this chart: no YAML parse at start-up)."""
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


def sync_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """values.schema.json with the lists it shares with this data set from it: the drain-mode
    and workload-kind enums, and oneProbeHandler (no two handler kinds in one probe block)."""
    modes, kinds = DATA["drain"]["modes"], DATA["workloadKinds"]
    handlers = DATA["probe"]["handlerKinds"]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            enum = node.get("enum")
            if isinstance(enum, list) and "marker" in enum:  # drain.mode, handlers.<role>.drain.mode
                node["enum"] = list(modes)
            elif isinstance(enum, list) and "Deployment" in enum:
                node["enum"] = list(kinds)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    pairs = [[a, b] for i, a in enumerate(handlers) for b in handlers[i + 1:]]
    schema["definitions"]["oneProbeHandler"]["not"]["anyOf"] = [{"required": p} for p in pairs]
    return schema


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
    if want == text:
        return 0
    if "--check" in args:
        print(f"{path}: its drain modes, workload kinds or probe handler kinds differ from "
              f"chart/lifecycle.yaml. Fix: run `python -m generator.lifecycle` (make render).", file=sys.stderr)
        return 1
    atomic.write_text(path, want)
    print(f"lifecycle: wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
