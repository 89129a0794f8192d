"""generator.render.matrix (`jobhandlers render`): one normalized file per object, byte-stable, atomic,
--check finds staleness."""

from __future__ import annotations

import io
from pathlib import Path

from generator.render import matrix as rmod
from generator.render.matrix import dump, object_files, render, tree_diff

from unit_support import run_jh

VERSIONS = ("1.17", "1.34")


def test_dump_sorts_keys_and_uses_literal_blocks() -> None:
    text = dump({"b": 1, "a": {"z": [{"y": 1, "x": 2}], "s": "line1\nline2", "t": "yes", "n": "1"}})
    assert text == "a:\n  n: '1'\n  s: |-\n    line1\n    line2\n  t: 'yes'\n  z:\n  - x: 2\n    y: 1\nb: 1\n"


def test_object_files_names_and_collisions() -> None:
    objs = [{"kind": "Deployment", "metadata": {"name": "demo-web"}},
            {"kind": "Deployment", "metadata": {"name": "demo-web"}},
            {"kind": "PodDisruptionBudget", "metadata": {"name": "demo-web"}}]
    assert sorted(object_files(objs)) == ["deployment-demo-web-2.yaml", "deployment-demo-web.yaml",
                                          "poddisruptionbudget-demo-web.yaml"]


def _examples(tmp_path: Path) -> list[Path]:
    ex = tmp_path / "examples"
    ex.mkdir()
    (ex / "defaults.yaml").write_text("{}\n")
    (ex / "plain.yaml").write_text("migration:\n  useHelmHooks: false\n")
    return sorted(ex.glob("*.yaml"))


def test_render_is_byte_stable_and_check_detects_staleness(tmp_path: Path) -> None:
    examples = _examples(tmp_path)
    out = tmp_path / "rendered"
    log = io.StringIO()
    first = render(examples, out, jobs=2, versions=VERSIONS, out=log)
    assert first.ok and first.files > 0
    assert log.getvalue().count("render ") == 2  # one progress line per example
    files = sorted(p.relative_to(out) for p in out.rglob("*.yaml"))
    assert Path("defaults/1.34/deployment-demo-jobhandlers-job.yaml") in files
    assert any(p.name.startswith("job-demo-jobhandlers-migration-") for p in files if p.parts[0] == "plain")
    snapshot = {p: (out / p).read_bytes() for p in files}
    check = render(examples, out, check=True, jobs=1, versions=VERSIONS, out=io.StringIO())
    assert check.ok and check.stale == []
    # edit one file, drop one, add one: all three reported, nothing rewritten
    target = out / "defaults" / "1.34" / "deployment-demo-jobhandlers-job.yaml"
    target.write_text(target.read_text().replace("replicas: 1", "replicas: 2"))
    (out / "plain" / "1.17" / "service-demo-jobhandlers-web.yaml").unlink()
    (out / "defaults" / "1.17" / "extra.yaml").write_text("x: 1\n")
    check = render(examples, out, check=True, jobs=2, versions=VERSIONS, out=io.StringIO())
    assert not check.ok
    assert check.stale == ["defaults/1.17/extra.yaml (obsolete)", "defaults/1.34/deployment-demo-jobhandlers-job.yaml "
                           "(differs)", "plain/1.17/service-demo-jobhandlers-web.yaml (missing)"]
    again = render(examples, out, jobs=2, versions=VERSIONS, out=io.StringIO())
    assert again.ok
    assert {p: (out / p).read_bytes() for p in sorted(p.relative_to(out) for p in out.rglob("*.yaml"))} == snapshot


def test_failed_render_leaves_the_tree_intact(tmp_path: Path) -> None:
    examples = _examples(tmp_path)
    out = tmp_path / "rendered"
    assert render(examples, out, jobs=2, versions=VERSIONS, out=io.StringIO()).ok
    before = {p: p.read_bytes() for p in out.rglob("*.yaml")}
    bad = examples[0].parent / "deadlock.yaml"
    bad.write_text("database:\n  createdByRelease: true\n")  # the chart fails on this
    result = render(examples + [bad], out, jobs=2, versions=VERSIONS, out=io.StringIO())
    assert not result.ok
    assert result.errors and all(e.startswith("deadlock.yaml @ kube ") for e in result.errors)
    assert "createdByRelease" in result.errors[0]
    assert {p: p.read_bytes() for p in out.rglob("*.yaml")} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rendered-")]  # temp tree removed


def test_tree_diff_on_missing_tree(tmp_path: Path) -> None:
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "a.yaml").write_text("a\n")
    assert tree_diff(tmp_path / "new", tmp_path / "old") == ["a.yaml (missing)"]


def test_cli_render_check_and_failure(tmp_path: Path) -> None:
    examples = _examples(tmp_path)
    args = ["--examples", str(examples[0].parent), "--out", str(tmp_path / "r"), "--kube-version", "1.34"]
    proc = run_jh("render", "--jobs", "2", *args)
    assert proc.returncode == 0, proc.stderr
    assert "render defaults:" in proc.stdout and "render plain:" in proc.stdout
    assert run_jh("render", "--check", *args).returncode == 0
    next((tmp_path / "r").rglob("*.yaml")).write_text("changed\n")
    proc = run_jh("render", "--check", *args)
    assert proc.returncode == 1 and "(differs)" in proc.stdout
    (examples[0].parent / "zz.yaml").write_text("database:\n  createdByRelease: true\n")
    proc = run_jh("render", *args)
    assert proc.returncode == 1
    assert "render FAILED: zz.yaml @ kube 1.34" in proc.stderr and "left unchanged" in proc.stderr
    assert run_jh("render", "--jobs", "0").returncode == 2


def test_rendered_tree_default_location() -> None:
    assert rmod.RENDERED_DIR == Path(__file__).resolve().parents[2] / "rendered"
