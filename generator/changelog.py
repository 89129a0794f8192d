"""chart/Chart.yaml's `artifacthub.io/changes` annotation, generated from CHANGELOG.md's section
of the chart's version, and the release's versions held together: the chart's `version`, the
tool's `__version__` (pyproject.toml reads it) and that CHANGELOG section.
`python -m generator.changelog [--check]` (make changes / make test).

The section is Keep a Changelog's: `## <version> - <date>` (or `## Unreleased (next: <version>)`
before the release), then `### Added` / `Changed` / `Deprecated` / `Removed` / `Fixed` /
`Security` with one `- ` item each change. Each item is one annotation entry: the kind from its
heading, the description from its first sentence, absolute Markdown links as `links`."""

from __future__ import annotations

import re
import sys

import yaml

from . import __version__, atomic, charts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Keep a Changelog's headings, in its order; Artifact Hub's kinds are the same words, lower case
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_SENTENCE_END = re.compile(r"\.(?=\s+[A-Z`\"(]|\s*$)")
_BLOCK = re.compile(r"(?m)^  artifacthub\.io/changes: \|-?\n(?:    .*\n)*")


class ChangelogError(ValueError):
    """CHANGELOG.md has no usable section for the version, or the versions disagree."""


def changelog_path() -> Path:
    return charts.CHECKOUT_DIR.parent / "CHANGELOG.md"


def section(version: str, text: str | None = None) -> str:
    """The body of the CHANGELOG section of `version`: `## <version>`, `## <version> - <date>`
    or `## Unreleased (next: <version>)`."""
    text = changelog_path().read_text(encoding="utf-8") if text is None else text
    heads = {version, f"Unreleased (next: {version})"}
    for part in text.split("\n## ")[1:]:
        head, _, body = part.partition("\n")
        if head.strip() in heads or re.fullmatch(rf"{re.escape(version)} - \d{{4}}-\d{{2}}-\d{{2}}", head.strip()):
            return body
    raise ChangelogError(f"CHANGELOG.md has no section `## {version} - <date>` "
                         f"(or `## Unreleased (next: {version})`)")


def _items(body: str) -> list[tuple[str, str]]:
    """(heading, item text) for every top-level `- ` item of a section, nested lines included."""
    out: list[tuple[str, str]] = []
    heading = ""
    for line in body.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        elif line.startswith("- "):
            out.append((heading, line[2:]))
        elif line.startswith("  ") and out:
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
    return out


def describe(item: str) -> tuple[str, list[dict[str, str]]]:
    """An item's first sentence (its first paragraph up to the first full stop that ends a
    sentence, without it) with Markdown links as their text, and its absolute links."""
    first = re.split(r"\n\s*(?:- |\n)", item, maxsplit=1)[0]
    text = " ".join(first.split())
    end = _SENTENCE_END.search(text)
    sentence = text[:end.start()] if end else text.rstrip(":")
    links = [{"name": name, "url": url} for name, url in _LINK.findall(item) if re.match(r"https?://", url)]
    return _LINK.sub(r"\1", sentence), links


def changes(version: str, text: str | None = None) -> list[dict[str, object]]:
    """The Artifact Hub `changes` entries of a version's CHANGELOG section."""
    entries: list[dict[str, object]] = []
    for heading, item in _items(section(version, text)):
        if heading not in KINDS:
            raise ChangelogError(f"CHANGELOG.md {version}: the item `- {item.splitlines()[0][:60]}…` is under "
                                 f"{f'`### {heading}`' if heading else 'no heading'}; put it under one of "
                                 + ", ".join(f"`### {k}`" for k in KINDS))
        description, links = describe(item)
        entries.append({"kind": heading.lower(), "description": description, **({"links": links} if links else {})})
    if not entries:
        raise ChangelogError(f"CHANGELOG.md {version}: the section lists no change")
    return entries


def annotation(entries: list[dict[str, object]]) -> str:
    """The annotation's value: a YAML list, one entry a line group (Artifact Hub parses it)."""
    return yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=10**6)


def chart_yaml_with(chart_yaml: str, value: str) -> str:
    """Chart.yaml's text with its `artifacthub.io/changes` block replaced by `value`."""
    block = "  artifacthub.io/changes: |\n" + "".join(f"    {line}\n" for line in value.splitlines())
    if not _BLOCK.search(chart_yaml):
        raise ChangelogError("chart/Chart.yaml has no `  artifacthub.io/changes: |` block under `annotations:`")
    return _BLOCK.sub(lambda _: block, chart_yaml, count=1)


def versions_agree(chart_version: str, tool_version: str = __version__) -> None:
    """The chart and the tool are released together, with one version."""
    if chart_version != tool_version:
        raise ChangelogError(f"chart/Chart.yaml version {chart_version} is not the tool's {tool_version} "
                             "(generator/__init__.py `__version__`, which pyproject.toml reads): "
                             "release both with one version")


def main(argv: list[str] | None = None) -> int:
    """Write Chart.yaml's changes annotation, or with --check fail (exit 1) when it is stale."""
    args = sys.argv[1:] if argv is None else argv
    path = charts.CHECKOUT_DIR / "Chart.yaml"
    have = path.read_text(encoding="utf-8")
    version = charts.metadata(charts.CHECKOUT_DIR).get("version", "?")
    try:
        versions_agree(version)
        want = chart_yaml_with(have, annotation(changes(version)))
    except ChangelogError as exc:
        print(f"changelog: {exc}", file=sys.stderr)
        return 1
    return atomic.write_or_check(
        path, want, have, "--check" in args,
        f"{path}: `artifacthub.io/changes` is stale (CHANGELOG.md {version} changed). "
        "Fix: run `python -m generator.changelog` (make changes).",
        f"changelog: wrote the artifacthub.io/changes of {version} into {path}")


if __name__ == "__main__":
    raise SystemExit(main())
