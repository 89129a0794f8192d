"""releases.yaml and the release tags agree, and a release extracts to its own chart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import releases
from releases import Release


@pytest.mark.parametrize("release", releases.releases(), ids=lambda r: r.version)
def test_tag_and_recorded_commit_agree(release: Release) -> None:
    """Where the clone has the tag, it names the recorded commit; either way the commit exists."""
    tagged = releases.tag_commit(release)
    if tagged is not None:
        assert tagged == release.commit, f"{release.tag} is {tagged}, releases.yaml says {release.commit}"
    assert releases.resolve(release) == release.commit


@pytest.mark.parametrize("release", releases.releases(), ids=lambda r: r.version)
def test_release_extracts_its_own_chart(release: Release, tmp_path: Path) -> None:
    """The extracted Chart.yaml carries the release's version, and its examples are there."""
    root = releases.extract(release, tmp_path)
    assert yaml.safe_load((root / "chart" / "Chart.yaml").read_text())["version"] == release.version
    names = releases.examples(release)
    assert names and all((root / "values-examples" / n).is_file() for n in names)


def test_a_missing_commit_fails_with_the_fix() -> None:
    """No silent skip: a commit the clone lacks is an error that says what to do."""
    with pytest.raises(releases.ReleaseError, match="fetch --unshallow"):
        releases.resolve(Release("0.0.0", "0" * 40))
