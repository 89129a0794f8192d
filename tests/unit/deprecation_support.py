"""A copy of the chart with deprecation entries in its lifecycle.yaml (0.2.0 -> 0.3.0 renamed and
removed no key, so the real table is empty): the chart, its generated schema and the tool are
tested on these instead. `handlers.*.runtimeSeconds` stands for a renamed per-role key,
`legacyProbe` for a removed chart-wide one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from generator import charts, lifecycle

ENTRIES: list[dict[str, Any]] = [
    {"path": "handlers.*.runtimeSeconds", "newPath": "handlers.*.maxJobRuntimeSeconds", "since": "0.3.0",
     "fix": "move the number to handlers.<role>.maxJobRuntimeSeconds"},
    {"path": "legacyProbe", "newPath": None, "since": "0.3.0",
     "fix": "remove it: readinessProbe and livenessProbe take a handler per role"},
]


def chart_with_deprecations(dest: Path) -> Path:
    """The checkout's chart copied to `dest`, with ENTRIES as its deprecations and the schema
    synchronised from them (what `make render` does); returns the chart directory."""
    chart = dest / "chart"
    shutil.copytree(charts.CHECKOUT_DIR, chart)
    data = yaml.safe_load((chart / lifecycle.FILE_NAME).read_text(encoding="utf-8"))
    data["deprecations"] = ENTRIES
    (chart / lifecycle.FILE_NAME).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    schema_file = chart / "values.schema.json"
    schema = lifecycle.sync_schema(json.loads(schema_file.read_text(encoding="utf-8")), data)
    schema_file.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    return chart
