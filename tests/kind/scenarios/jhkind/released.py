"""An earlier chart release on disk (tests/apiserver/releases.py extracts it from git by its
tag or recorded commit) and what chart/lifecycle.yaml `upgrades:` declares for upgrading from it
(read and matched by the tool's own `jobhandlers.upgrades`, as the server-side upgrade test does)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from jobhandlers import upgrades

from . import support


def _releases_module() -> ModuleType:
    """tests/apiserver/releases.py."""
    return support.load("tests/apiserver/releases.py")


def chart(version: str, dest: Path) -> Path:
    """The chart directory of release `version`, extracted under `dest`."""
    rel = _releases_module()
    release = next((r for r in rel.releases() if r.version == version), None)
    assert release is not None, f"release {version} is not in tests/apiserver/releases.yaml"
    return rel.extract(release, dest) / "chart"


def declared_recreations(version: str) -> list[dict]:
    """lifecycle.yaml upgrades.<version>.recreated: {kind, name glob after `<fullname>-`, why}."""
    return upgrades.recreations(version)


def is_declared(kind: str, name: str, fullname: str, declared: list[dict]) -> bool:
    """Whether lifecycle.yaml declares that helm deletes and re-creates this object."""
    return upgrades.recreation_declared(kind, name.removeprefix(f"{fullname}-"), declared)
