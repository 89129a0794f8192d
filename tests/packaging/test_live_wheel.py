"""`jobhandlers gen-tests --live` as a user runs it from the wheel: `pip install
'jobhandlers[live]'` into a fresh venv outside the repository, the user's values and job
description copied there (my-values.yaml, my-values.jobs.yaml: the default JOBS path), the
suite generated and collected by that venv's pytest. The suites run on a cluster from such a
venv in kind scenario 24 (jhkind.wheel), which .ci/run runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from packaging_support import REPO, clean_env, install, run

pytestmark = pytest.mark.xdist_group("packaging")

VALUES = REPO / "values-examples" / "minimal.yaml"
JOBS = REPO / "values-examples" / "jobs" / "minimal.yaml"
SUITE = "live/test_live_my_values.py"


@pytest.fixture(scope="module")
def live_venv(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the wheel and its `live` extra."""
    return install("wheel", Path(f"{dist['wheel']}[live]"), tmp_path_factory.mktemp("venv-live"), installer="uv")


def _project(tmp: Path, values: Path, venv: Path, helm_path: str) -> Path:
    shutil.copy(values, tmp / "my-values.yaml")
    shutil.copy(JOBS, tmp / "my-values.jobs.yaml")
    proc = run([venv / "jobhandlers", "gen-tests", "--live", "my-values.yaml", "--out", "live",
                "--max-job-seconds", "20"], cwd=tmp, env=clean_env(PATH=helm_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"wrote {SUITE}" in proc.stdout, proc.stdout
    return tmp


def _helm_path(helm_binary: Path, tmp: Path) -> str:
    (tmp / "bin").mkdir()
    (tmp / "bin" / "helm").symlink_to(helm_binary)
    return f"{tmp / 'bin'}:/usr/local/bin:/usr/bin:/bin"


def test_live_suite_from_the_wheel_imports_only_the_tool(live_venv: Path, helm_binary: Path, tmp_path: Path) -> None:
    d = _project(tmp_path, VALUES, live_venv, _helm_path(helm_binary, tmp_path))
    text = (d / SUITE).read_text()
    imports = sorted(set(re.findall(r"^(?:from|import) ([\w.]+)", text, re.M)))
    assert imports == ["jobhandlers.live", "pathlib", "pytest"], imports
    assert str(REPO) not in text and "'../my-values.yaml'" in text
    proc = run([live_venv / "python", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "live"],
               cwd=d, env=clean_env(KUBECONFIG=str(d / "no-such-kubeconfig")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 tests collected" in proc.stdout, proc.stdout
    bad = run([live_venv / "jobhandlers", "gen-tests", "--live", "my-values.yaml", "missing.yaml", "--out", "x"],
              cwd=d, env=clean_env())
    assert bad.returncode == 2 and "missing.yaml: error JHY005 file not found" in bad.stderr, bad.stderr
