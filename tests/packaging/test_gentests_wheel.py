"""`jobhandlers gen-tests` as a user runs it: the wheel and pytest installed into a fresh venv
outside the repository, a values example copied into the user's project as my-values.yaml,
`jobhandlers gen-tests my-values.yaml --out tests/`, then that venv's pytest on the result
with the user's helm (on PATH, or JOBHANDLERS_HELM). Without helm the generated tests fail
with a message that says so; they never skip."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from packaging_support import REPO, clean_env, install, run

# one xdist worker builds the wheel once (make test runs pytest -n 2 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("packaging")

EXAMPLE = REPO / "values-examples" / "minimal.yaml"
GENERATED = "tests/test_example_my_values.py"
# no helm anywhere on it (the system directories only)
NO_HELM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _pytest_requirement() -> str:
    """The pytest pin of the project's test extra (pyproject.toml)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    return next(r for r in extras if re.match(r"pytest==", r))


@pytest.fixture(scope="module")
def user_venv(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv with the wheel and pytest (nothing else of this repository)."""
    return install("wheel", dist["wheel"], tmp_path_factory.mktemp("venv-gentests"), _pytest_requirement(),
                   installer="uv")


@pytest.fixture(scope="module")
def user_helm_path(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """PATH of a user whose helm is in their own bin directory (not this repository's)."""
    bindir = tmp_path_factory.mktemp("user-bin")
    (bindir / "helm").symlink_to(helm_binary)
    return f"{bindir}:{NO_HELM_PATH}"


@pytest.fixture(scope="module")
def project(user_venv: Path, user_helm_path: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's project with my-values.yaml and the tests generated for it."""
    d = tmp_path_factory.mktemp("user-gentests")
    shutil.copy(EXAMPLE, d / "my-values.yaml")
    proc = run([user_venv / "jobhandlers", "gen-tests", "my-values.yaml", "--out", "tests/"], cwd=d,
               env=clean_env(PATH=user_helm_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"wrote {GENERATED}" in proc.stdout, proc.stdout
    return d


def _pytest(venv: Path, cwd: Path, *args: str, **env: str):
    """The user's venv's pytest, in their project, with their environment."""
    return run([venv / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", *args], cwd=cwd,
               env=clean_env(**env), timeout=600)


def test_generated_tests_import_only_the_installed_package(project: Path, user_venv: Path) -> None:
    text = (project / GENERATED).read_text()
    imports = sorted(set(re.findall(r"^(?:from|import) ([\w.]+)", text, re.M)))
    assert imports == ["__future__", "jobhandlers", "jobhandlers.invariants", "pathlib", "pytest", "typing"], imports
    assert "Source: my-values.yaml (regenerate with `jobhandlers gen-tests`)" in text
    assert "EXAMPLE = (Path(__file__).resolve().parent / '../my-values.yaml').resolve()" in text
    assert str(REPO) not in text
    proc = run([user_venv / "jobhandlers", "gen-tests", "my-values.yaml", "--out", "tests/", "--check"], cwd=project,
               env=clean_env(PATH=NO_HELM_PATH))
    assert proc.returncode == 0 and "tests/ is up to date" in proc.stdout, proc.stdout + proc.stderr


def test_generated_tests_pass_with_the_users_helm_on_path(project: Path, user_venv: Path, user_helm_path: str) -> None:
    proc = _pytest(user_venv, project, "tests", PATH=user_helm_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    passed = int(re.search(r"(\d+) passed", out).group(1))
    assert passed >= 8 * 8, out[-2000:]  # 8 kube versions x at least 8 invariants
    assert not re.search(r"\d+ (?:skipped|failed|errors?)\b", out), out[-2000:]


def test_generated_tests_fail_clearly_without_helm(project: Path, user_venv: Path, helm_binary: Path) -> None:
    assert shutil.which("helm", path=NO_HELM_PATH) is None, f"a helm is installed in {NO_HELM_PATH}"
    proc = _pytest(user_venv, project, "tests", "-x", PATH=NO_HELM_PATH)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert ("helm not found on PATH (put helm on PATH or set JOBHANDLERS_HELM=/path/to/helm): these generated "
            "tests render my-values.yaml with the real helm") in out, out[-3000:]
    assert "skipped" not in out and "Traceback" not in out, out[-3000:]
    # JOBHANDLERS_HELM names the binary when it is not on PATH
    proc = _pytest(user_venv, project, "tests", "-k", "roles_rendered", PATH=NO_HELM_PATH,
                   JOBHANDLERS_HELM=str(helm_binary))
    assert proc.returncode == 0 and "8 passed" in proc.stdout, proc.stdout[-3000:]


def test_changed_values_make_the_tests_stale_and_fail(project: Path, user_venv: Path, user_helm_path: str,
                                                       tmp_path: Path) -> None:
    """The generated tests hold the chart to the numbers of the values they were generated
    from: after an edit, --check reports them stale and the grace test fails."""
    changed = tmp_path / "proj"
    shutil.copytree(project, changed)
    values = changed / "my-values.yaml"
    values.write_text(values.read_text() + "drain:\n  bufferSeconds: 44\n")
    proc = run([user_venv / "jobhandlers", "gen-tests", "my-values.yaml", "--out", "tests/", "--check"], cwd=changed,
               env=clean_env(PATH=NO_HELM_PATH))
    assert proc.returncode == 1 and f"stale: {GENERATED} (differs)" in proc.stdout, proc.stdout + proc.stderr
    proc = _pytest(user_venv, changed, "tests", "-k", "grace_and_drain_deadline and 1.34",
                   PATH=user_helm_path)
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:]
