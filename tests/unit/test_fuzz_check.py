"""Property: `jobhandlers check` prints only findings for any input — every line a rule id,
the file and a position — exits 0, 1 or 2, never a traceback or an internal error, in
under 2 s (issue 12). Inputs: arbitrary YAML, mutated examples, deep nesting, alias bombs,
random bytes. Profiles in fuzz_support ("ci" for make test, "fuzz" for make fuzz)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz_support import (BASE_NAMES, BASES, alias_bombs, check_bytes, deep_documents, mutated_examples,
                          random_bytes, run_inprocess, run_subprocess, scaled, scalars, set_value, text_mutations,
                          yaml_documents, assert_findings_text)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Load the chart defaults and schema once, so that the time bound measures the input."""
    run_inprocess("check", str(BASES and os.devnull))


@given(yaml_documents.map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_any_yaml_document(data: bytes) -> None:
    check_bytes(data)


@given(mutated_examples())
def test_mutated_examples(data: bytes) -> None:
    check_bytes(data)


@given(mutated_examples(), st.sampled_from(["json", "github"]))
def test_mutated_examples_other_formats(data: bytes, fmt: str) -> None:
    check_bytes(data, fmt)


@given(st.sampled_from(BASE_NAMES), st.data())
def test_every_key_of_every_example_takes_any_scalar(name: str, data: st.DataObject) -> None:
    base, paths = BASES[name]
    path = data.draw(st.sampled_from(paths), label="path")
    check_bytes(set_value(base, path, data.draw(scalars, label="scalar")))


@given(text_mutations())
def test_text_mutations(data: bytes) -> None:
    check_bytes(data)


@given(deep_documents())
def test_deep_nesting(data: bytes) -> None:
    check_bytes(data)


@settings(max_examples=scaled(25))
@given(alias_bombs())
def test_alias_bombs_do_not_hang(data: bytes) -> None:
    check_bytes(data)


@given(random_bytes)
def test_random_bytes(data: bytes) -> None:
    check_bytes(data)


@given(st.lists(st.sampled_from(BASE_NAMES), min_size=2, max_size=4), st.sampled_from(["---\n", "\n---\n", "...\n---\n"]))
def test_multiple_documents(names: list[str], sep: str) -> None:
    check_bytes(sep.encode().join(BASES[n][0] for n in names))


def test_several_files_in_one_run(tmp_path) -> None:
    """Hostile files next to good ones: each is reported under its own name."""
    files = {"ok.yaml": BASES[BASE_NAMES[0]][0], "bomb.yaml": b"a: &a [1,1,1,1,1,1,1,1,1,1]\n" + b"".join(
        f"a{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n".encode() for i in range(9)),
        "bin.yaml": b"\xff\xfe\x00", "deep.yaml": b"a: " + b"[" * 300 + b"]" * 300 + b"\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / n) for n in files]
    run = run_inprocess("check", *paths)
    assert run.rc == 2
    for p in paths[1:]:
        assert f"{p}:" in run.out


SUBPROCESS_SAMPLE = [
    b"drain:\n  runtimeMultiplier: .inf\n",
    b"a: " + b"[" * 200 + b"]" * 200 + b"\n",
    b"\xef\xbb\xbfimage: {tag: \x00}\n",
    b"\xff\xfe\xfd",
    b"a: 1\na: 2\n",
    b"image:\n\ttag: '1'\n",
    b"a: \"\\ud800\"\n",
    b"a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + b"".join(
        f"a{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n".encode() for i in range(9)),
    b"--- 1\n--- [2]\n",
    b"a:\n  b: !!bool maybe\n",
    b'"\\ud800": 1\n',
    b"drain:\n  bufferSeconds: 1e3\nx: &a 1\ny: &a 2\n",  # ruamel warnings stay off stderr
]


@pytest.mark.parametrize("data", SUBPROCESS_SAMPLE, ids=range(len(SUBPROCESS_SAMPLE)))
def test_subprocess_sample_never_prints_a_traceback(tmp_path, data: bytes) -> None:
    """The real console script on a few hostile inputs: findings on stdout, nothing on stderr."""
    path = tmp_path / "values.yaml"
    path.write_bytes(data)
    run = run_subprocess("check", str(path))
    assert_findings_text(run, str(path))
