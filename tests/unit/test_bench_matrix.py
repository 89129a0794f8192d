"""The render benchmark (bench/render_bench.py) renders exactly the render matrix: the
(example, kube version) pairs of rendered/, which `jobhandlers render` writes (an example's
`# kube-versions: >=X.Y` limits both; the chart refuses the versions below it)."""

from __future__ import annotations

import importlib.util

from unit_support import REPO


def test_bench_matrix_is_the_render_matrix() -> None:
    spec = importlib.util.spec_from_file_location("render_bench", REPO / "bench" / "render_bench.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pairs = {(ex.stem, v) for ex, v in bench.matrix()}
    rendered = {(d.parent.name, d.name) for d in (REPO / "rendered").glob("*/*") if d.is_dir()}
    assert pairs == rendered
    assert ("pgbouncer-sidecar", "1.34") in pairs and ("pgbouncer-sidecar", "1.16") not in pairs
