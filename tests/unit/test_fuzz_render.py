"""Property: `jobhandlers render --examples DIR` (real helm, a subprocess) reports hostile
examples as render failures — exit 0/1/2, no traceback, no internal error (issue 12)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz_support import assert_no_crash, mutated_examples, random_bytes, run_subprocess, scaled, text_mutations
from unit_support import REPO

HELM = REPO / "bin" / "helm"
pytestmark = pytest.mark.skipif(not HELM.is_file(), reason="bin/helm missing: run `make tools`")


@settings(max_examples=scaled(6), deadline=None)
@given(st.lists(st.one_of(mutated_examples(), text_mutations(), random_bytes), min_size=1, max_size=3))
def test_render_any_examples(tmp_path_factory, files: list[bytes]) -> None:
    tmp = tmp_path_factory.mktemp("render")
    ex = tmp / "examples"
    ex.mkdir()
    for i, data in enumerate(files):
        (ex / f"fuzz-{i}.yaml").write_bytes(data)
    run = run_subprocess("render", "--examples", str(ex), "--out", str(tmp / "out"), "--kube-version", "1.34",
                         "--jobs", "4")
    assert_no_crash(run, timed=False)
    if run.rc != 0:
        assert "render FAILED: fuzz-" in run.err, run.err
