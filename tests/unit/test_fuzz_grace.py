"""Property: `jobhandlers grace` and `jobhandlers gen-tests --examples` survive any values
file: findings or their report, exit 0/1/2, no traceback, no internal error (issue 12)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz_support import (BASE_NAMES, BASES, alias_bombs, deep_documents, gen_tests_bytes, grace_bytes,
                          mutated_examples, random_bytes, run_inprocess, run_subprocess, scalars, set_value,
                          text_mutations, yaml_documents, assert_no_crash, scaled)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    run_inprocess("grace", str(next(iter(sorted(BASES)))))


@given(mutated_examples())
def test_grace_mutated_examples(data: bytes) -> None:
    grace_bytes(data)


@given(st.sampled_from(BASE_NAMES), st.data())
def test_grace_every_key_takes_any_scalar(name: str, data: st.DataObject) -> None:
    base, paths = BASES[name]
    path = data.draw(st.sampled_from(paths), label="path")
    grace_bytes(set_value(base, path, data.draw(scalars, label="scalar")))


@given(st.one_of(yaml_documents.map(lambda s: s.encode("utf-8", "surrogatepass")), text_mutations(),
                 deep_documents(), alias_bombs(), random_bytes))
def test_grace_any_input(data: bytes) -> None:
    grace_bytes(data)


@settings(max_examples=scaled(25))
@given(st.lists(st.one_of(mutated_examples(), text_mutations(), random_bytes), min_size=1, max_size=3))
def test_gen_tests_any_examples(files: list[bytes]) -> None:
    gen_tests_bytes(files)


def test_grace_subprocess(tmp_path) -> None:
    path = tmp_path / "v.yaml"
    path.write_bytes(b"drain:\n  runtimeMultiplier: .nan\n")
    assert_no_crash(run_subprocess("grace", str(path)))
