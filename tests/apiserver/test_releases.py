"""releases.yaml and the release tags agree, and a release extracts to its own chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from generator import charts, lifecycle, upgrades
from key_paths import schema_paths, values_paths
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


@pytest.mark.parametrize("release", releases.releases(), ids=lambda r: r.version)
def test_every_key_of_the_release_is_known_or_declared(release: Release, tmp_path: Path) -> None:
    """A key of the release's values.yaml or schema that this chart lacks is in chart/lifecycle.yaml
    `deprecations` (renamed or removed: the chart and check say what to write instead)."""
    old = releases.extract(release, tmp_path) / "chart"
    new = charts.CHECKOUT_DIR
    declared = [str(d["path"]) for d in lifecycle.DATA.get("deprecations") or []]

    def gone(before: set[str], after: set[str]) -> list[str]:
        return sorted(p for p in before - after
                      if not any(upgrades.glob_match(d, p) for d in declared))

    old_values = set(values_paths(yaml.safe_load((old / "values.yaml").read_text())))
    new_values = set(values_paths(yaml.safe_load((new / "values.yaml").read_text())))
    assert len(old_values) > 100 and not gone(old_values, new_values), gone(old_values, new_values)
    old_schema = schema_paths(json.loads((old / "values.schema.json").read_text()))
    new_schema = schema_paths(json.loads((new / "values.schema.json").read_text()))
    assert len(old_schema) > 100 and not gone(old_schema, new_schema), gone(old_schema, new_schema)
