"""Render-test fixtures: one `helm template` per (example, kube version) per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from generator.values.full import load_values
from generator.values.merge import merged
from render_helpers import EXAMPLES, RenderCache


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> RenderCache:
    """The session's render cache (helm 4 by default, helm 3 on request). Under xdist the
    workers share one rendering of the matrix (the session's base temp dir is theirs)."""
    assert EXAMPLES, "no values-examples/*.yaml found"
    if worker_id == "master":
        return RenderCache()
    return RenderCache(tmp_path_factory.getbasetemp().parent / "render-cache")


@pytest.fixture(scope="session")
def example_values() -> Callable[[Path], dict[str, Any]]:
    """example path -> chart defaults coalesced with the example (what helm renders from)."""
    cache: dict[Path, dict[str, Any]] = {}

    def get(example: Path) -> dict[str, Any]:
        if example not in cache:
            loaded = load_values(example)
            assert loaded.ok, [str(f) for f in loaded.findings]
            cache[example] = merged(loaded.data)
        return cache[example]

    return get
