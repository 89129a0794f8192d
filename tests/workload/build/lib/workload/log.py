"""Structured logging: one JSON object per line on stdout, one per lifecycle event."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

_lock = threading.Lock()
_context: dict[str, Any] = {}


def bind(**fields: Any) -> None:
    """Add fields (role, handler, ...) to every later line."""
    _context.update(fields)


def event(name: str, /, level: str = "info", **fields: Any) -> None:
    """Write `{"ts":…, "level":…, "event": name, …}` and flush at once."""
    record = {"ts": round(time.time(), 3), "level": level, "event": name, **_context, **fields}
    line = json.dumps(record, default=str, separators=(",", ":"))
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def error(message: str) -> None:
    """A human-readable error on stderr (for commands an operator runs by hand)."""
    sys.stderr.write(f"workload: error: {message}\n")
    sys.stderr.flush()
