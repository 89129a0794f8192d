"""The fast `check` path (check/fast.py, values/fast.py, the precomputed charts/_cache.py):
it answers for clean files without the heavy imports, and it never decides anything the
full path (ruamel + jsonschema, JOBHANDLERS_FULL_CHECK=1) would decide differently."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import BASE_NAMES, BASES, mutated_examples, set_value, scalars, text_mutations, yaml_documents
from generator import charts, cli, entry
from generator.charts import _cache, cache, precompute
from generator.check import fast as check_fast
from generator.schema import load_validator
from generator.values import fast as values_fast
from generator.values.full import parse_values
from generator.values.merge import coalesce, merged
from unit_support import REPO

EXAMPLES = sorted((REPO / "values-examples").glob("*.yaml"))
HEAVY = ("ruamel", "jsonschema", "argparse", "typing", "dataclasses", "pathlib", "hashlib", "fastjsonschema", "kubernetes")


def _run(main, args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue()


def _both(path: str, *opts: str) -> tuple[tuple[int, str], tuple[int, str]]:
    """(console-script entry, full CLI) results of `check path opts…`."""
    return _run(entry.main, ["check", path, *opts]), _run(cli.main, ["check", path, *opts])


def test_the_cache_matches_the_chart() -> None:
    assert cache.load(charts.DEFAULT_PATH) is _cache, "stale: run `make render`"
    assert _cache.DEFAULTS == parse_values((charts.DEFAULT_DIR / "values.yaml").read_text(), "v").data


def test_a_changed_chart_is_not_served_from_the_cache(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(charts.DEFAULT_DIR, chart)
    assert cache.load(chart) is _cache
    with (chart / "values.yaml").open("a") as fh:
        fh.write("\n# edited\n")
    assert cache.load(chart) is None
    shutil.copy(charts.DEFAULT_DIR / "values.yaml", chart / "values.yaml")
    with (chart / "lifecycle.yaml").open("a") as fh:
        fh.write("\n# edited\n")
    assert cache.load(chart) is None
    (chart / "values.schema.json").unlink()
    assert cache.load(chart) is None


def test_precompute_check_passes_and_is_deterministic() -> None:
    assert precompute.build(charts.DEFAULT_DIR) == precompute.OUT.read_text(encoding="utf-8")


def test_the_tool_takes_its_lifecycle_data_from_the_cache_and_it_equals_the_file() -> None:
    """lifecycle.yaml is parsed at build time; at start-up the tool reads the cache's copy."""
    import yaml

    from generator import lifecycle

    assert _cache.LIFECYCLE == yaml.safe_load((charts.DEFAULT_DIR / "lifecycle.yaml").read_text(encoding="utf-8"))
    assert lifecycle.DATA is _cache.LIFECYCLE


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_takes_the_fast_path_with_the_full_paths_answer(example: Path) -> None:
    assert _run(check_fast.run, [str(example)])[0] == 0, "the fast path should answer for a clean example"
    for fmt in ("text", "json", "github"):
        fast, full = _both(str(example), "--format", fmt)
        assert fast == full


@pytest.mark.parametrize("args", [
    ["--render"], ["--chart", str(REPO / "chart")], ["--help"], ["--kube"], ["--kube-version"],
    ["--kube-version", "x"], ["--format", "xml"], ["--platform", "nope"], ["--", "-x"], ["-"],
])
def test_options_it_does_not_handle_go_to_the_full_path(args: list[str]) -> None:
    assert check_fast.run([str(EXAMPLES[0]), *args]) is None


def test_options_it_handles(capsys: pytest.CaptureFixture[str]) -> None:
    ex = str(REPO / "values-examples" / "minimal.yaml")
    assert check_fast.run(["--kube-version=1.30.2", ex, "--format", "json", "--platform", "cluster-autoscaler"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == {"errors": 0, "files": 1, "warnings": 0}
    assert check_fast.run([ex, "--platform", "eks-upgrade=10"]) is None  # JH021 fires: full path reports it
    galaxy = str(REPO / "values-examples" / "long-jobs.yaml")
    assert check_fast.run(["--kube-version", "1.21", galaxy]) is None  # JH008 on 1.21


def test_the_env_switch_forces_the_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBHANDLERS_FULL_CHECK", "1")
    assert check_fast.run([str(EXAMPLES[0])]) is None


def test_findings_files_go_to_the_full_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("handlers:\n  job:\n    maxJobRuntimeSeconds: 3600\n    terminationGracePeriodSeconds: 30\n")
    assert check_fast.run([str(bad)]) is None
    (rc, out), full = _both(str(bad))
    assert (rc, out) == full and rc == 1 and "JH001" in out


def test_the_fast_path_imports_nothing_heavy() -> None:
    """The point of the fast path: measured by `make bench`, guarded here by what it imports."""
    # Modules already there at start-up (an editable install's finder imports pathlib) do not count.
    code = ("import sys; before = set(sys.modules); from generator.entry import main; "
            "rc = main(['check', 'values-examples/long-jobs.yaml']); "
            "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in %r)); sys.exit(rc)" % (HEAVY,))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout


def test_only_check_server_imports_the_kubernetes_client() -> None:
    """The full path (here: a file with findings, --render not given) leaves the client unloaded too."""
    code = ("import sys; from generator.cli import main; rc = main(['check', 'tests/unit/fixtures/rules/JH073-fail.yaml']); "
            "print('kubernetes' in sys.modules); sys.exit(0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "False", proc.stdout


# ---- properties: fast never disagrees with full --------------------------------------------
def _fast_load(data: bytes):
    try:
        return True, values_fast.load(data) or {}
    except values_fast.Unsure:
        return False, None


def _assert_reader_agrees(data: bytes) -> None:
    sure, fast = _fast_load(data)
    if not sure:
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pytest.fail("the fast reader read bytes that are not UTF-8")
    full = parse_values(text, "v.yaml")
    assert full.ok, f"the fast reader read what the full reader refuses: {full.findings}"
    assert fast == full.data


@given(yaml_documents.map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_the_reader_agrees_on_any_document(data: bytes) -> None:
    _assert_reader_agrees(data)


@given(st.one_of(mutated_examples(), text_mutations()))
def test_the_reader_agrees_on_mutated_examples(data: bytes) -> None:
    _assert_reader_agrees(data)


@given(st.sampled_from(BASE_NAMES), st.data())
def test_the_compiled_schema_agrees_with_jsonschema(name: str, data: st.DataObject) -> None:
    base, paths = BASES[name]
    doc = base
    for _ in range(data.draw(st.integers(1, 3))):
        try:
            doc = set_value(doc, data.draw(st.sampled_from(paths)), data.draw(scalars))
        except Exception:  # noqa: BLE001 - a mutation that broke the YAML
            break
    vf = parse_values(doc.decode("utf-8", "surrogatepass"), "v.yaml")
    if not vf.ok:
        return
    values = merged(vf.data)
    full_ok = not any(True for _ in load_validator(charts.DEFAULT_DIR / "values.schema.json").iter_errors(values))
    try:
        _cache.validate(coalesce(_cache.DEFAULTS, vf.data))
        fast_ok = True
    except _cache.JsonSchemaValueException:
        fast_ok = False
    assert fast_ok == full_ok


@given(st.one_of(mutated_examples(), text_mutations()), st.sampled_from(["text", "json", "github"]))
def test_the_console_script_answers_like_the_full_path(data: bytes, fmt: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="jh-fast-") as tmp:
        path = os.path.join(tmp, "values.yaml")
        with open(path, "wb") as fh:
            fh.write(data)
        fast, full = _both(path, "--format", fmt)
    assert fast == full
