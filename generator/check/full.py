"""`jobhandlers check`, the full path: load with positions → schema → policy rules and keys of
earlier releases (→ helm render + kubernetes-validate, rendered.py; → a server-side dry run,
server.py) for each values file, in one process. Returns findings; never raises on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .. import upgrades
from ..findings import ERROR, Finding
from ..platforms import Platform
from ..rules import check as check_rules
from ..schema import validate as check_schema
from ..values.full import load_values
from ..values.merge import merged


def check_file(path: str | Path, kube_version: str, render: bool = False,
               platforms: Sequence[tuple[Platform, int]] = (), from_version: str | None = None,
               server: Any = None) -> list[Finding]:
    """All findings for one values file; with `from_version`, the CHANGELOG lines of the
    releases after it only (upgrades.annotate); with `server` (a server.Target), the render's
    server-side dry run there (server.ServerUnusable when the cluster cannot be used)."""
    vf = load_values(path)
    if not vf.ok:
        return vf.findings
    values = merged(vf.data)  # once: the schema and the rules read the same merge
    findings = upgrades.deprecated(vf, from_version)
    findings += check_schema(vf, values=values)
    findings += check_rules(vf, kube_version, platforms, values)
    if render and not any(f.severity == ERROR for f in findings):
        from .rendered import check_rendered
        findings += check_rendered(vf, Path(path), kube_version)
    if server is not None and not any(f.severity == ERROR for f in findings):
        from .server import check_server  # the kubernetes client: only with --server
        findings += check_server(vf, str(path), kube_version, server)
    return upgrades.annotate(findings, from_version)


def check_files(paths: Sequence[str | Path], kube_version: str, render: bool = False,
                platforms: Sequence[tuple[Platform, int]] = (), from_version: str | None = None,
                server: Any = None) -> list[Finding]:
    """All findings for several values files."""
    out: list[Finding] = []
    seen: set[Finding] = set()
    for p in paths:
        for f in check_file(p, kube_version, render, platforms, from_version, server):
            if f.rule == "JHS002":  # a broken chart schema is reported once, not per file
                if f in seen:
                    continue
                seen.add(f)
            out.append(f)
    return out
