"""Values merged the way helm coalesces them: user values over the chart defaults. The
defaults come precomputed from charts/_cache.py when it was built from the active chart, else
from its values.yaml through the full reader (full.py, imported only then)."""

from __future__ import annotations

from .. import charts
from ..charts import cache as chartcache
from .file import ValuesFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Mapping


def _copy(value: Any) -> Any:
    """A deep copy of plain YAML data (dicts, lists, scalars): 4-5x cheaper than copy.deepcopy,
    which keeps a memo for cycles and shared objects that values never hold."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def coalesce(defaults: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing: user values over chart defaults, tables merged recursively, a user
    `null` deletes the key, a user scalar replaces a default table."""
    out: dict[str, Any] = _copy(dict(user))
    for key, dval in defaults.items():
        if key in out:
            uval = out[key]
            if uval is None:
                del out[key]
            elif isinstance(uval, dict) and isinstance(dval, dict):
                out[key] = coalesce(dval, uval)
        else:
            out[key] = _copy(dval)
    return out


_defaults_cache: dict[str, ValuesFile] = {}


def chart_defaults(chart_dir: Path | None = None) -> ValuesFile:
    """The chart's values.yaml (default: the active chart's), loaded once."""
    chart_dir = chart_dir or charts.active()
    key = str(chart_dir)
    if key not in _defaults_cache:
        display = _display(chart_dir / "values.yaml")
        cache = chartcache.load(chart_dir)
        if cache is not None:  # precomputed from exactly this values.yaml (no positions)
            _defaults_cache[key] = ValuesFile(path=display, data=cache.DEFAULTS)
        else:
            from .full import load_values
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
