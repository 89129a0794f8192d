"""The tool as users get it: the wheel and the sdist, installed into a fresh venv outside
the repository, check / grace / render a user's values files exactly as the checkout does,
against the chart packaged in the wheel or another one given with --chart."""

from __future__ import annotations

import filecmp
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from packaging_support import REPO, USER_FILES, clean_env, run

sys.path.insert(0, str(REPO))
from generator import __version__  # noqa: E402

# one xdist worker builds the wheel and sdist once (make test runs pytest -n 2 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("packaging")


_REFERENCE: dict[tuple[str, ...], object] = {}


def checkout(args: list[str | Path], cwd: Path, helm: Path | None = None):
    """The same command run from the checkout's source (`generator`); each command is run
    once per session (the wheel and the sdist are compared with the same reference)."""
    key = (str(cwd), str(helm), *map(str, args))
    if key not in _REFERENCE or helm:
        _REFERENCE[key] = _checkout(args, cwd, helm)
    return _REFERENCE[key]


def _checkout(args: list[str | Path], cwd: Path, helm: Path | None = None):
    extra = {"PYTHONPATH": str(REPO)}
    if helm:
        extra["JOBHANDLERS_HELM"] = str(helm)
    return run([sys.executable, "-c", "import sys; from generator.cli import main; sys.exit(main())", *args],
               cwd=cwd, env=clean_env(**extra))


def tool(bindir: Path, args: list[str | Path], cwd: Path, helm: Path | None = None):
    """The installed console script, in a user's shell (helm on PATH, if given)."""
    env = clean_env()
    if helm:
        env["PATH"] = f"{helm.parent}{':'}{env['PATH']}"
    return run([bindir / "jobhandlers", *args], cwd=cwd, env=env)


def test_installed_package_is_jobhandlers_with_its_chart(installed: Path, user_dir: Path) -> None:
    py = installed / "python"
    proc = run([py, "-c", "import json, jobhandlers, jobhandlers.charts as c; "
                          "print(json.dumps([jobhandlers.__file__, str(c.DEFAULT_DIR), c.IN_CHECKOUT]))"],
               cwd=user_dir, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    module, chart_dir, in_checkout = json.loads(proc.stdout)
    assert "site-packages" in module and not module.startswith(str(REPO))
    assert chart_dir == str(Path(module).parent / "chart") and not in_checkout
    for name in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/_helpers.tpl",
                 "templates/handlers/workload.yaml"):
        assert (Path(chart_dir) / name).read_bytes() == (REPO / "chart" / name).read_bytes(), name
    # the old import name is gone: nothing claims the top-level `generator`
    proc = run([py, "-c", "import jobhandlers.check, sys; import generator"], cwd=user_dir, env=clean_env(),
               traceback_ok=True)
    assert "No module named 'generator'" in proc.stderr


def test_version_names_tool_and_chart(installed: Path, user_dir: Path) -> None:
    chart_version = re.search(r"^version:\s*(\S+)", (REPO / "chart/Chart.yaml").read_text(), re.M).group(1)
    assert chart_version == __version__, "the tool and the chart are released with one version"
    proc = tool(installed, ["--version"], user_dir)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"jobhandlers {__version__} (chart jobhandlers {chart_version},")
    assert proc.stdout == checkout(["--version"], user_dir).stdout


def test_wheel_and_sdist_carry_the_version(dist: dict[str, Path], installed: Path, user_dir: Path) -> None:
    """pyproject.toml takes its version from `__version__` (one source): the artifacts' names and
    the installed distribution's metadata say it."""
    assert dist["wheel"].name == f"jobhandlers-{__version__}-py3-none-any.whl"
    assert dist["sdist"].name == f"jobhandlers-{__version__}.tar.gz"
    proc = run([installed / "python", "-c", "import importlib.metadata as m; print(m.version('jobhandlers'))"],
               cwd=user_dir, env=clean_env())
    assert proc.stdout.strip() == __version__, proc.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_equals_the_checkout(installed: Path, user_dir: Path, fmt: str) -> None:
    files = sorted(USER_FILES)
    for args in ([*files], ["good.yaml"], ["warning.yaml"], ["policy.yaml"], ["missing.yaml"]):
        mine = tool(installed, ["check", "--format", fmt, *args], user_dir)
        ref = checkout(["check", "--format", fmt, *args], user_dir)
        assert (mine.returncode, mine.stdout, mine.stderr) == (ref.returncode, ref.stdout, ref.stderr), args
    # the findings are real ones, not an empty agreement
    text = tool(installed, ["check", *files], user_dir)
    assert text.returncode == 1
    assert "policy.yaml:4:5: error JH001" in text.stdout
    assert "schema.yaml:4:3: error JHS001 [drain.bufferSeconds]" in text.stdout
    assert "unknown key `bufferSecs`" in text.stdout
    assert "warning.yaml:3:5: warning JH010" in text.stdout
    assert tool(installed, ["check", "missing.yaml"], user_dir).returncode == 2


def test_grace_equals_the_checkout(installed: Path, user_dir: Path) -> None:
    for name, code in (("good.yaml", 0), ("policy.yaml", 1), ("schema.yaml", 1)):
        mine = tool(installed, ["grace", name, "--kube-version", "1.20", "--kube-version", "1.34"], user_dir)
        ref = checkout(["grace", name, "--kube-version", "1.20", "--kube-version", "1.34"], user_dir)
        assert (mine.returncode, mine.stdout) == (ref.returncode, ref.stdout), name
        assert mine.returncode == code, mine.stdout


@pytest.fixture(scope="session")
def other_chart(tmp_path_factory: pytest.TempPathFactory, helm_binary: Path) -> dict[str, Path]:
    """Other chart versions, as `helm package` makes them and as a directory:
    strict (9.9.9): schema refuses `pullPolicy: IfNotPresent`, so a check against it fails;
    bumped (9.9.8): only the version differs, so it renders like chart/ with another label;
    current: chart/ itself, packaged."""
    root = tmp_path_factory.mktemp("charts")
    out: dict[str, Path] = {}
    for key, version in (("strict", "9.9.9"), ("bumped", "9.9.8")):
        copy = root / key / "jobhandlers"
        shutil.copytree(REPO / "chart", copy)
        meta = copy / "Chart.yaml"
        meta.write_text(re.sub(r"^version:.*$", f"version: {version}", meta.read_text(), flags=re.M))
        if key == "strict":
            schema = json.loads((copy / "values.schema.json").read_text())
            schema["properties"]["image"]["properties"]["pullPolicy"]["enum"] = ["Always"]
            (copy / "values.schema.json").write_text(json.dumps(schema, indent=2))
        out[f"{key}-dir"] = copy
    for src in (out["strict-dir"], out["bumped-dir"], REPO / "chart"):
        proc = run([helm_binary, "package", src, "-d", root], cwd=root)
        assert proc.returncode == 0, proc.stderr
    out["strict"] = root / "jobhandlers-9.9.9.tgz"
    out["bumped"] = root / "jobhandlers-9.9.8.tgz"
    out["current"] = next(p for p in root.glob("jobhandlers-*.tgz") if "9.9." not in p.name)
    return out


def test_check_and_grace_with_another_chart(installed: Path, user_dir: Path, other_chart: dict[str, Path]) -> None:
    for chart in (other_chart["strict-dir"], other_chart["strict"]):
        mine = tool(installed, ["check", "--chart", chart, "good.yaml"], user_dir)
        ref = checkout(["check", "--chart", chart, "good.yaml"], user_dir)
        assert (mine.returncode, mine.stdout) == (ref.returncode, ref.stdout)
        assert mine.returncode == 1 and "good.yaml:2:1: error JHS001 [image.pullPolicy]" in mine.stdout
        assert tool(installed, ["grace", "--chart", chart, "good.yaml"], user_dir).returncode == 1
    ok = tool(installed, ["check", "--chart", other_chart["current"], "good.yaml"], user_dir)
    assert ok.returncode == 0, ok.stdout
    bad = tool(installed, ["check", "--chart", user_dir / "good.yaml", "good.yaml"], user_dir)
    assert bad.returncode == 2 and "--chart" in bad.stderr


def test_render_with_chart_equals_the_checkout(installed: Path, user_dir: Path, other_chart: dict[str, Path],
                                               helm_binary: Path, tmp_path: Path) -> None:
    args = ["good.yaml", "warning.yaml", "--kube-version", "1.20", "--kube-version", "1.34"]
    for chart in ("current", "bumped"):
        mine_out, ref_out = tmp_path / f"mine-{chart}", tmp_path / f"ref-{chart}"
        mine = tool(installed, ["render", "--chart", other_chart[chart], "--out", mine_out, *args], user_dir,
                    helm=helm_binary)
        ref = checkout(["render", "--chart", other_chart[chart], "--out", ref_out, *args], user_dir,
                       helm=helm_binary)
        assert mine.returncode == ref.returncode == 0, mine.stdout + mine.stderr + ref.stderr
        files = sorted(str(p.relative_to(mine_out)) for p in mine_out.rglob("*.yaml"))
        assert files == sorted(str(p.relative_to(ref_out)) for p in ref_out.rglob("*.yaml"))
        assert any(f.startswith("good/1.34/deployment-") for f in files), files
        _, mismatch, errors = filecmp.cmpfiles(mine_out, ref_out, files, shallow=False)
        assert not mismatch and not errors, mismatch + errors
        want = "jobhandlers-9.9.8" if chart == "bumped" else "jobhandlers-" + other_chart["current"].stem.split("-", 1)[1]
        deployment = next(mine_out.glob("good/1.34/deployment-*.yaml")).read_text()
        assert f"helm.sh/chart: {want}" in deployment
    # the packaged chart renders the same objects as the checkout's chart/
    out = tmp_path / "packaged"
    mine = tool(installed, ["render", "--out", out, *args], user_dir, helm=helm_binary)
    assert mine.returncode == 0, mine.stderr
    assert not filecmp.dircmp(out, tmp_path / "mine-current").diff_files
    # without helm: exit 2 and a message, no traceback
    nohelm = tool(installed, ["render", "--out", tmp_path / "x", "good.yaml"], user_dir)
    if shutil.which("helm", path=clean_env()["PATH"]) is None:
        assert nohelm.returncode == 2 and "put helm on PATH" in nohelm.stderr
