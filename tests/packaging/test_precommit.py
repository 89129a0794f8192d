"""The pre-commit hook (.pre-commit-hooks.yaml, id jobhandlers-check) with the real
pre-commit: a user's repository whose config names this hook repository; committing a good
values file passes, committing a bad one fails with the finding, and a YAML file the default
`files` pattern does not match is not checked."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from packaging_support import REPO, USER_FILES, clean_env, run

# one xdist worker builds the wheel and sdist once (make test runs pytest -n 2 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("packaging")

# What the hook repository needs to install the tool: the sdist's sources.
HOOK_REPO_FILES = [".pre-commit-hooks.yaml", "pyproject.toml", "README.md", "generator", "chart"]


def git(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = run(["git", *args], cwd=cwd, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def git_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    assert shutil.which("git"), "git not found"
    home = tmp_path_factory.mktemp("precommit-home")
    return clean_env(
        GIT_AUTHOR_NAME="user", GIT_AUTHOR_EMAIL="user@example.invalid",
        GIT_COMMITTER_NAME="user", GIT_COMMITTER_EMAIL="user@example.invalid",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(home / "cache"),  # pre-commit's own environments, not ~/.cache
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory, git_env: dict[str, str]) -> tuple[Path, str]:
    """This repository's working tree (what the hook needs of it) as a git repository, the
    way pre-commit gets a hook repository: by `repo:` URL and `rev:`."""
    d = tmp_path_factory.mktemp("hook-repo")
    for name in HOOK_REPO_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, d / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, d / name)
    git(["init", "-q", "-b", "main"], d, git_env)
    git(["add", "-A"], d, git_env)
    git(["commit", "-q", "-m", "hooks"], d, git_env)
    return d, git(["rev-parse", "HEAD"], d, git_env).stdout.strip()


def test_hook_definition() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "jobhandlers-check")
    assert hook["language"] == "python" and hook["entry"] == "jobhandlers check"


def test_commit_with_the_hook(tmp_path: Path, hook_repo: tuple[Path, str], git_env: dict[str, str]) -> None:
    repo_url, rev = hook_repo
    user = tmp_path / "user-repo"
    (user / "deploy").mkdir(parents=True)
    git(["init", "-q", "-b", "main"], user, git_env)
    config = {"repos": [{"repo": str(repo_url), "rev": rev, "hooks": [{"id": "jobhandlers-check"}]}]}
    (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    # not a values file by the default pattern, and not valid values either: must be left alone
    (user / "deploy" / "kustomization.yaml").write_text("resources: [a.yaml]\nimages: 3\n")
    git(["add", "-A"], user, git_env)
    pre_commit = [sys.executable, "-m", "pre_commit"]
    proc = run([*pre_commit, "install"], cwd=user, env=git_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # the first commit installs the hook's environment (pip install of the hook repository)
    proc = run(["git", "commit", "-m", "config"], cwd=user, env=git_env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "jobhandlers check" in proc.stdout + proc.stderr  # skipped: no values file yet

    (user / "deploy" / "values-prod.yaml").write_text(USER_FILES["good.yaml"])
    git(["add", "deploy/values-prod.yaml"], user, git_env)
    proc = run(["git", "commit", "-m", "good values"], cwd=user, env=git_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout + proc.stderr

    (user / "deploy" / "values-bad.yaml").write_text(USER_FILES["policy.yaml"])
    git(["add", "deploy/values-bad.yaml"], user, git_env)
    proc = run(["git", "commit", "-m", "bad values"], cwd=user, env=git_env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Failed" in out and "deploy/values-bad.yaml:4:5: error JH001" in out, out
    assert "kustomization.yaml" not in out
    log = git(["log", "--format=%s"], user, git_env).stdout.split()
    assert "bad" not in log  # the bad commit did not happen
