"""Which chart the tool uses: chart/ in the checkout, --chart PATH (directory or .tgz)."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest

from generator import __version__, charts
from unit_support import REPO, run_jh


def test_checkout_uses_chart_dir() -> None:
    assert charts.DEFAULT_DIR == REPO / "chart" and charts.IN_CHECKOUT
    assert charts.active() == REPO / "chart"


def test_version_prints_tool_and_chart() -> None:
    version = re.search(r"^version:\s*(\S+)", (REPO / "chart/Chart.yaml").read_text(), re.M).group(1)
    proc = run_jh("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"jobhandlers {__version__} (chart jobhandlers {version}, appVersion ")


def test_resolve_directory_and_archive(tmp_path: Path) -> None:
    archive = tmp_path / "c.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(REPO / "chart" / "Chart.yaml", arcname="jobhandlers/Chart.yaml")
    unpacked = charts.resolve(archive)
    assert unpacked.name == "jobhandlers" and (unpacked / "Chart.yaml").is_file()
    assert charts.resolve(REPO / "chart") == REPO / "chart"
    try:
        assert charts.use(archive).name == "jobhandlers" and charts.active() != REPO / "chart"
    finally:
        charts.use(None)
    assert charts.active() == REPO / "chart"


@pytest.mark.parametrize("kind", ["missing", "not-a-chart", "bad-archive", "escaping"])
def test_bad_chart_is_exit_2(tmp_path: Path, kind: str) -> None:
    target = tmp_path / kind
    if kind == "not-a-chart":
        target.mkdir()
    elif kind == "bad-archive":
        target.write_text("not a tar")
    elif kind == "escaping":
        with tarfile.open(target, "w:gz") as tar:
            info = tarfile.TarInfo("../evil/Chart.yaml")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x: "))
    values = tmp_path / "v.yaml"
    values.write_text("image:\n  tag: \"2\"\n")
    for cmd in (["check", "--chart", str(target), str(values)], ["grace", "--chart", str(target), str(values)]):
        proc = run_jh(*cmd)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "--chart" in proc.stderr
    assert not (tmp_path.parent / "evil").exists()


def test_the_wheel_lists_every_package_of_generator() -> None:
    """pyproject.toml lists the packages by name: a new folder of generator/ must be added there,
    or the wheel ships without it (tests/packaging builds the wheel; this fails first, and fast)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("jobhandlers",) + p.parent.relative_to(REPO / "generator").parts)
             for p in (REPO / "generator").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"


def test_generated_suites_import_helm_from_the_package() -> None:
    """`from jobhandlers import helm` (every generated suite) is render/helm.py."""
    import generator
    from generator.render import helm

    assert generator.helm is helm
