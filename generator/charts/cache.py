"""The precomputed chart data (`_cache.py`, built by precompute.py), used only when it was
built from this chart: the key is a checksum of values.yaml, values.schema.json and
lifecycle.yaml."""

from __future__ import annotations

import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType


def chart_key(chart_dir: str | os.PathLike[str]) -> str:
    """CRC-32 and size of the chart's values.yaml, values.schema.json and lifecycle.yaml (what
    check depends on). A cache key, not a signature: zlib loads in a fraction of hashlib's time, and
    `make test` compares the whole generated module with a fresh build anyway."""
    parts = []
    for name in ("values.yaml", "values.schema.json", "lifecycle.yaml"):
        with open(os.path.join(chart_dir, name), "rb") as fh:
            data = fh.read()
        parts.append(f"{zlib.crc32(data):08x}-{len(data)}")
    return "crc32:" + ":".join(parts)


def load(chart_dir: str | os.PathLike[str]) -> ModuleType | None:
    """The `_cache` module when it matches `chart_dir`, else None (stale, missing, another
    chart, or a chart without the files)."""
    try:
        from . import _cache
    except ImportError:
        return None
    try:
        key = chart_key(chart_dir)
    except OSError:
        return None
    return _cache if getattr(_cache, "CHART_KEY", None) == key else None
