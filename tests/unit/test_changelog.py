"""generator/changelog.py: the Artifact Hub `changes` annotation from CHANGELOG.md, and one version
for the chart, the tool and the CHANGELOG (`python -m generator.changelog --check` in make test)."""

from __future__ import annotations

import pytest
import yaml

from generator import __version__, changelog, charts

TEXT = """# Changelog

## Unreleased (next: 9.1.0)

### Added

- Something new.

## 9.0.0 - 2026-01-02

### Added

- `check --x` (`--y`): does x; e.g. more. Second sentence here.
  Still the second.
  - a nested detail
- Links: [the docs](docs/a.md) and [upstream](https://example.org/u): both kept as text.

### Fixed

- The loop exits on SIGTERM:
  - nested

### Security

- Quoted.

## 8.0.0

- Old style, no headings.
"""


def test_entries_of_a_released_section() -> None:
    entries = changelog.changes("9.0.0", TEXT)
    assert entries == [
        {"kind": "added", "description": "`check --x` (`--y`): does x; e.g. more"},
        {"kind": "added", "description": "Links: the docs and upstream: both kept as text",
         "links": [{"name": "upstream", "url": "https://example.org/u"}]},
        {"kind": "fixed", "description": "The loop exits on SIGTERM"},
        {"kind": "security", "description": "Quoted"},
    ]
    # what Artifact Hub parses: a YAML list of kind/description(/links)
    assert yaml.safe_load(changelog.annotation(entries)) == entries


def test_unreleased_section_counts_for_its_next_version() -> None:
    assert changelog.changes("9.1.0", TEXT) == [{"kind": "added", "description": "Something new"}]


def test_items_without_a_kind_heading_or_a_missing_section_fail() -> None:
    with pytest.raises(changelog.ChangelogError, match="under no heading; put it under one of `### Added`"):
        changelog.changes("8.0.0", TEXT)
    with pytest.raises(changelog.ChangelogError, match=r"no section `## 7.0.0 - <date>`"):
        changelog.changes("7.0.0", TEXT)
    with pytest.raises(changelog.ChangelogError, match="under `### Notes`"):
        changelog.changes("9.0.0", TEXT.replace("### Fixed", "### Notes"))


def test_chart_yaml_block_is_replaced_in_place() -> None:
    chart = "name: x\nannotations:\n  a: b\n  artifacthub.io/changes: |\n    - old\n    - older\n  c: d\n"
    out = changelog.chart_yaml_with(chart, "- kind: added\n  description: New\n")
    assert out == ("name: x\nannotations:\n  a: b\n  artifacthub.io/changes: |\n    - kind: added\n"
                   "      description: New\n  c: d\n")
    with pytest.raises(changelog.ChangelogError, match="no `  artifacthub.io/changes: |` block"):
        changelog.chart_yaml_with("name: x\n", "- x\n")


def test_the_checkout_is_one_release() -> None:
    """Chart.yaml's version is the tool's, its CHANGELOG section is dated or next, and the
    annotation in Chart.yaml is what the section says (else `make changes`)."""
    version = charts.metadata(charts.CHECKOUT_DIR)["version"]
    assert version == __version__
    meta = yaml.safe_load((charts.CHECKOUT_DIR / "Chart.yaml").read_text(encoding="utf-8"))
    assert yaml.safe_load(meta["annotations"]["artifacthub.io/changes"]) == changelog.changes(version)
    assert changelog.main(["--check"]) == 0
    with pytest.raises(changelog.ChangelogError, match="is not the tool's"):
        changelog.versions_agree("0.0.1")
