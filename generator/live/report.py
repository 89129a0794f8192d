"""The live suite's measured numbers: one row per test, printed as a table at the end of
the session and written as JSON, so a user can paste them into a review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


class Results:
    """Numbers per test, in the order the tests ran."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def record(self, test: str, **numbers: Any) -> None:
        """Add numbers to a test's row (recorded before its assertions, so a failure keeps them)."""
        self.rows.setdefault(test, {}).update(numbers)

    def outcome(self, test: str, passed: bool) -> None:
        """Mark how the test ended."""
        self.rows.setdefault(test, {})["passed"] = passed

    def table(self) -> str:
        """A plain text table: test, result, then its numbers as key=value."""
        lines = ["test       result  numbers", "---------  ------  -------"]
        for test, row in self.rows.items():
            result = {True: "passed", False: "FAILED"}.get(row.get("passed"), "-")
            nums = "  ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k != "passed")
            lines.append(f"{test:<9}  {result:<6}  {nums}")
        return "\n".join(lines)

    def write_json(self, path: Path, meta: dict[str, Any]) -> None:
        """{"version": 1, meta..., "tests": {test: row}}."""
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"version": FORMAT_VERSION, **meta, "tests": self.rows}
        path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
