"""Which chart the tool works against: the one it ships with, or `--chart PATH`.

- In the checkout (the editable venv, or `python -m pytest` from the repository), the
  shipped chart is `chart/` beside `generator/`.
- Installed from the wheel, it is the copy packaged as `jobhandlers/chart/` (schema,
  values.yaml, templates, Chart.yaml), of the version the wheel was built with.
- `--chart PATH` (a chart directory or a `helm package` .tgz) makes another chart version
  the active one for check, grace and render: `use()` sets it, everything that reads the
  schema, the defaults or renders asks `active()`.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# As strings, so that `check`'s fast path (fastcheck.py) starts without pathlib; the Path
# forms (PACKAGED_DIR, CHECKOUT_DIR, DEFAULT_DIR) are made on first use by __getattr__.
_HERE = os.path.dirname(os.path.realpath(__file__))
PACKAGED_PATH = os.path.join(_HERE, "chart")                  # site-packages/jobhandlers/chart (wheel)
CHECKOUT_PATH = os.path.join(os.path.dirname(_HERE), "chart")  # <repo>/chart (checkout, editable install)
DEFAULT_PATH = PACKAGED_PATH if os.path.isfile(os.path.join(PACKAGED_PATH, "Chart.yaml")) else CHECKOUT_PATH
# True when running from the repository (rendered/, values-examples/, bin/ are beside us).
IN_CHECKOUT = DEFAULT_PATH == CHECKOUT_PATH
_PATHS = {"PACKAGED_DIR": PACKAGED_PATH, "CHECKOUT_DIR": CHECKOUT_PATH, "DEFAULT_DIR": DEFAULT_PATH}


def __getattr__(name: str) -> Path:
    """PACKAGED_DIR, CHECKOUT_DIR and DEFAULT_DIR as Paths (PEP 562: made when first asked for)."""
    if name in _PATHS:
        from pathlib import Path

        value = Path(_PATHS[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_active: Path | None = None


class ChartError(Exception):
    """--chart names something that is not a chart directory or a chart archive."""


def active() -> Path:
    """The chart directory in use: `use()`'s, else the shipped one."""
    return _active or __getattr__("DEFAULT_DIR")


def use(path: str | Path | None) -> Path:
    """Make `path` (a chart directory or a .tgz from `helm package`) the active chart;
    None restores the shipped one. Returns the chart directory; raises ChartError."""
    global _active
    _active = None if path is None else resolve(path)
    return active()


def resolve(path: str | Path) -> Path:
    """A chart directory for `path`: the directory itself, or a .tgz unpacked into a
    temporary directory that is removed when the process exits."""
    import tarfile
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        if not (p / "Chart.yaml").is_file():
            raise ChartError(f"{p}: not a chart directory (no Chart.yaml)")
        return p.resolve()
    if p.is_file() and tarfile.is_tarfile(p):
        return _unpack(p)
    if not p.exists():
        raise ChartError(f"{p}: no such chart directory or archive")
    raise ChartError(f"{p}: not a chart directory or a .tgz made by `helm package`")


def _unpack(archive: Path) -> Path:
    import atexit
    import shutil
    import tarfile
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp(prefix="jh-chart-"))
    atexit.register(shutil.rmtree, tmp, True)
    try:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # 3.11.4+: no absolute paths, links out, devices
                tar.extractall(tmp, filter="data")
            else:
                for member in tar.getmembers():
                    target = (tmp / member.name).resolve()
                    if not (member.isfile() or member.isdir()) or not target.is_relative_to(tmp.resolve()):
                        raise ChartError(f"{archive}: refusing archive member {member.name!r}")
                tar.extractall(tmp)
    except (tarfile.TarError, OSError) as exc:
        raise ChartError(f"{archive}: cannot unpack: {exc}") from exc
    found = sorted(c.parent for c in tmp.glob("*/Chart.yaml"))
    if len(found) != 1:
        raise ChartError(f"{archive}: expected one <name>/Chart.yaml in the archive, found {len(found)}")
    return found[0]


def metadata(chart_dir: Path | None = None) -> dict[str, str]:
    """name, version and appVersion from Chart.yaml (top-level scalars only; no YAML
    parser, so `--version` stays instant)."""
    meta: dict[str, str] = {}
    try:
        text = ((chart_dir or active()) / "Chart.yaml").read_text(encoding="utf-8")
    except OSError:
        return meta
    for key in ("name", "version", "appVersion"):
        m = re.search(rf"^{key}:\s*['\"]?([^'\"\s#]+)", text, re.M)
        if m:
            meta[key] = m.group(1)
    return meta


def describe(chart_dir: Path | None = None) -> str:
    """`jobhandlers-0.1.0` style name of a chart."""
    meta = metadata(chart_dir)
    return f"{meta.get('name', '?')}-{meta.get('version', '?')}"
