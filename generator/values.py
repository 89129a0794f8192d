"""Values files as the checker sees them: plain data (JSON-like, as Helm sees it) plus a
position for every key, merged over the chart defaults the way Helm coalesces values.

This module is the light front: the full reader (ruamel.yaml round-trip, YAML 1.1 like
Helm) is yamlload.py, imported only when a file is read with positions. The chart's
defaults come precomputed from `_chartcache.py` when it was built from this chart.
Problems are returned as findings, never raised: a missing file, a YAML syntax error, a
duplicate key, a non-mapping or multi-document file and an alias bomb all become
`Finding`s with file:line:col.
"""

from __future__ import annotations

import copy
from . import chartcache
from .findings import ERROR, INPUT, Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping, Sequence

# Expanded node budget: a values file is a few hundred nodes; "billion laughs" is not.
MAX_NODES = 100_000
MAX_DEPTH = 64
MAX_BYTES = 4 * 1024 * 1024


class ValuesFile:
    """A loaded values file: plain data (JSON-like, as Helm sees it) plus the round-trip
    document that knows where every key is."""

    __slots__ = ("path", "data", "doc", "findings")

    def __init__(self, path: str, data: dict[str, Any] | None = None, doc: Any = None,
                 findings: list[Finding] | None = None) -> None:
        self.path = path
        self.data: dict[str, Any] = {} if data is None else data
        self.doc = doc  # ruamel CommentedMap, or None (an empty file, or read without positions)
        self.findings: list[Finding] = [] if findings is None else findings

    def __repr__(self) -> str:
        return f"ValuesFile(path={self.path!r}, findings={self.findings!r})"

    @property
    def ok(self) -> bool:
        """True when the file was usable (no input findings)."""
        return not self.findings

    def position(self, path: Sequence[str | int]) -> tuple[int, int, bool]:
        """1-based (line, col) of the deepest key of `path` present in the file, and whether
        the whole path was found. (1, 1, False) when nothing of it is in the file."""
        if self.doc is None:
            return 1, 1, False
        from .yamlload import locate
        return locate(self.doc, path)

def load_values(path: str | Path, display: str | None = None) -> ValuesFile:
    """Load one values file; every problem becomes an input finding on the result."""
    name = display if display is not None else str(path)
    result = ValuesFile(path=name)
    from pathlib import Path

    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        result.findings.append(Finding(name, 0, 0, "JHY005", ERROR, INPUT, "", "file not found",
                                       "pass an existing values file"))
        return result
    except OSError as exc:
        result.findings.append(Finding(name, 0, 0, "JHY005", ERROR, INPUT, "",
                                       f"cannot read file: {exc.strerror or exc}",
                                       "pass a readable values file"))
        return result
    if len(raw) > MAX_BYTES:
        result.findings.append(Finding(name, 1, 1, "JHY004", ERROR, INPUT, "",
                                       f"file is larger than {MAX_BYTES} bytes",
                                       "a values file is a few KiB; pass the right file"))
        return result
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.findings.append(Finding(name, 1, 1, "JHY001", ERROR, INPUT, "",
                                       f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8"))
        return result
    return parse_values(text, name)


def parse_values(text: str, name: str) -> ValuesFile:
    """Parse values text with positions (the full reader, yamlload.parse_values)."""
    from .yamlload import parse_values as parse
    return parse(text, name)


def coalesce(defaults: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing: user values over chart defaults, tables merged recursively, a user
    `null` deletes the key, a user scalar replaces a default table."""
    out: dict[str, Any] = copy.deepcopy(dict(user))
    for key, dval in defaults.items():
        if key in out:
            uval = out[key]
            if uval is None:
                del out[key]
            elif isinstance(uval, dict) and isinstance(dval, dict):
                out[key] = coalesce(dval, uval)
        else:
            out[key] = copy.deepcopy(dval)
    return out


_defaults_cache: dict[str, ValuesFile] = {}


def chart_defaults(chart_dir: Path | None = None) -> ValuesFile:
    """The chart's values.yaml (default: the active chart's), loaded once."""
    from . import charts

    chart_dir = chart_dir or charts.active()
    key = str(chart_dir)
    if key not in _defaults_cache:
        display = _display(chart_dir / "values.yaml")
        cache = chartcache.load(chart_dir)
        if cache is not None:  # precomputed from exactly this values.yaml (no positions)
            _defaults_cache[key] = ValuesFile(path=display, data=cache.DEFAULTS)
        else:
            _defaults_cache[key] = load_values(chart_dir / "values.yaml", display=display)
    return _defaults_cache[key]


def merged(user: Mapping[str, Any], chart_dir: Path | None = None) -> dict[str, Any]:
    """User values coalesced over the chart defaults: what the templates and the model see."""
    return coalesce(chart_defaults(chart_dir).data, user)


def _display(path: Path) -> str:
    from pathlib import Path

    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
