"""Earlier chart releases, by name: releases.yaml (version -> commit) and the git tag
`jobhandlers-<version>`, tag first. The chart and the values examples of a release come out
of git (`git archive`), never out of the working tree."""

from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
RELEASES_FILE = Path(__file__).with_name("releases.yaml")
TAG_PREFIX = "jobhandlers-"


class ReleaseError(RuntimeError):
    """A release's commit is not in this clone (a shallow clone: `git fetch --unshallow`)."""


@dataclass(frozen=True)
class Release:
    """One released chart version and the commit recorded for it."""

    version: str
    commit: str

    @property
    def tag(self) -> str:
        """The release's git tag (chart-releaser's <chart>-<version>)."""
        return TAG_PREFIX + self.version


def releases() -> list[Release]:
    """Every release of releases.yaml, in file order."""
    data = yaml.safe_load(RELEASES_FILE.read_text(encoding="utf-8"))
    return [Release(str(version), str(commit)) for version, commit in data.items()]


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run git in the repository (no check: the caller reads the exit code)."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=False)


def tag_commit(release: Release) -> str | None:
    """The commit the release's tag points to, or None when this clone has no such tag."""
    proc = git("rev-parse", "--verify", "-q", f"refs/tags/{release.tag}^{{commit}}")
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def resolve(release: Release) -> str:
    """The release's commit: its tag's, else the recorded one (which must be in the clone)."""
    commit = tag_commit(release) or release.commit
    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        raise ReleaseError(f"release {release.version}: commit {commit} is not in this clone "
                           f"(a shallow clone? `git fetch --unshallow --tags`)")
    return commit


def examples(release: Release) -> list[str]:
    """The file names of the values examples the release shipped."""
    out = git("ls-tree", "--name-only", resolve(release), "values-examples/").stdout.decode()
    return sorted(Path(line).name for line in out.splitlines() if line.endswith(".yaml"))


def extract(release: Release, dest: Path) -> Path:
    """The release's chart/ and values-examples/ written under `dest`; returns `dest`."""
    proc = git("archive", "--format=tar", resolve(release), "chart", "values-examples")
    if proc.returncode != 0:
        raise ReleaseError(f"git archive {release.version}: {proc.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest
