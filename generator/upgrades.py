"""Values of earlier chart releases (chart/lifecycle.yaml `deprecations`, `refusals`, `upgrades`;
the chart reads the same tables in templates/_deprecations.tpl and templates/checks.yaml).

- A key an earlier release had and this chart renamed or removed is a JH060 finding: the old
  path, the new one and the fix, at the key's line.
- A finding from a rule or schema check that refuses what an earlier release accepted carries
  that release's CHANGELOG line in its fix.
- `check --from-version X` keeps only the CHANGELOG lines of releases after X and closes with a
  summary of what to change before upgrading from X.
"""

from __future__ import annotations

import re

from . import charts, lifecycle
from .findings import ERROR, POLICY, Finding, dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from .values.file import ValuesFile

RULE_ID = "JH060"


def data() -> dict[str, Any]:
    """The lifecycle data of the active chart (--chart's, else the shipped one)."""
    active = charts.active()
    if active == charts.DEFAULT_DIR:
        return lifecycle.DATA
    import yaml

    try:
        with open(active / lifecycle.FILE_NAME, encoding="utf-8") as fh:
            loaded = yaml.safe_load(fh)
    except OSError:
        return {}  # a chart from before lifecycle.yaml: no tables
    return loaded if isinstance(loaded, dict) else {}


def releases() -> list[str]:
    """The earlier releases this chart upgrades from (`upgrades`), oldest first."""
    return sorted((str(v) for v in data().get("upgrades") or {}), key=version_key)


def version_key(version: str) -> tuple[int, ...]:
    """'0.10.1' -> (0, 10, 1): release versions in order."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def glob_match(pattern: str, text: str) -> bool:
    """`*` matches any run of characters (dots and brackets too); everything else is literal,
    so `env[*].name` matches `env[0].name`."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), text) is not None


def recreations(version: str) -> list[dict[str, Any]]:
    """`upgrades.<version>.recreated`: the objects helm deletes and creates on the upgrade from
    `version` ({kind, name: a glob over the name after `<fullname>-`, why})."""
    return list(((data().get("upgrades") or {}).get(version) or {}).get("recreated") or [])


def recreation_declared(kind: str, short_name: str, declared: list[dict[str, Any]]) -> bool:
    """Whether `declared` (`recreations(version)`) names this object; `short_name` is its name
    after `<fullname>-`."""
    return any(d["kind"] == kind and glob_match(d["name"], short_name) for d in declared)


def _after(since: str, from_version: str | None) -> bool:
    return from_version is None or version_key(since) > version_key(from_version)


def find_paths(node: Any, pattern: list[str], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path in `node` matching a dotted pattern's segments (`*`: any key) whose value
    is not null (a null key is one Helm drops)."""
    if not pattern or not isinstance(node, dict):
        return
    head, rest = pattern[0], pattern[1:]
    for key, value in node.items():
        if head not in ("*", key):
            continue
        if rest:
            yield from find_paths(value, rest, prefix + (key,))
        elif value is not None:
            yield prefix + (key,)


def new_path(entry: dict[str, Any], found: tuple[str, ...]) -> str | None:
    """The entry's newPath with each `*` replaced by the key the old path's `*` matched."""
    if not entry.get("newPath"):
        return None
    wild = iter(k for k, p in zip(found, str(entry["path"]).split(".")) if p == "*")
    return ".".join(next(wild, "*") if p == "*" else p for p in str(entry["newPath"]).split("."))


def deprecated(vf: ValuesFile, from_version: str | None = None) -> list[Finding]:
    """JH060 for every renamed or removed key the file still sets."""
    findings: list[Finding] = []
    for entry in data().get("deprecations") or []:
        if not _after(str(entry["since"]), from_version):
            continue
        for found in find_paths(vf.data, str(entry["path"]).split(".")):
            old, new = dotted(found), new_path(entry, found)
            what = f"renamed to `{new}`" if new else "removed"
            line, col, _ = vf.position(found)
            findings.append(Finding(vf.path, line, col, RULE_ID, ERROR, POLICY, old,
                                    f"`{old}` was {what} in chart {entry['since']}", str(entry["fix"])))
    return findings


def refusal(finding: Finding, from_version: str | None = None) -> dict[str, Any] | None:
    """The `refusals` entry that explains an error finding, if it refuses what a release
    (after `from_version`) accepted."""
    if finding.severity != ERROR:
        return None
    for entry in data().get("refusals") or []:
        if (finding.rule in entry["rules"] and _after(str(entry["since"]), from_version)
                and any(glob_match(p, finding.path) for p in entry["paths"])
                and re.search(str(entry.get("message") or ""), finding.message)):
            return entry
    return None


def annotate(findings: list[Finding], from_version: str | None = None) -> list[Finding]:
    """The findings, each refusal's fix followed by its CHANGELOG line."""
    out = []
    for f in findings:
        entry = refusal(f, from_version)
        if entry is not None:
            f = f._replace(fix=f"{f.fix} ({note(entry)})")
        out.append(f)
    return out


def note(entry: dict[str, Any]) -> str:
    """What a refusal adds to a fix: since when, whether a cluster ever took it, the CHANGELOG line.
    (templates/_deprecations.tpl writes the same words.)"""
    took = ("an installed release may hold it" if entry.get("cluster") == "accepted"
            else "earlier releases rendered it and the API server refused it")
    return f"refused since chart {entry['since']}, {took}; CHANGELOG: {entry['changelog']}"


def summary(findings: list[Finding], from_version: str) -> str:
    """The closing line of `check --from-version`: how much to change, and how much of it is new."""
    errors = [f for f in findings if f.severity == ERROR]
    new = sum(1 for f in errors if f.rule == RULE_ID or refusal(f, from_version) is not None)
    return (f"upgrading from chart {from_version}: {len(errors)} value(s) to change first, {new} of them "
            f"renamed/removed keys or values {from_version} accepted; what the upgrade re-creates and "
            f"rolls: docs/upgrading.md\n")
