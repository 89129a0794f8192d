"""`jobhandlers check`: load → schema → policy rules and keys of earlier releases (→ helm render
+ kubernetes-validate) for each values file, in one process. Returns findings; never raises on
bad input."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import helm, model, upgrades
from .findings import ERROR, INPUT, RENDER, WARNING, Finding
from .platforms import Platform
from .findings import dotted
from .schema import validate as check_schema
from .rules import check as check_rules
from .values import ValuesFile, load_values

# kubernetes-validate ships schemas from this version on.
KUBE_VALIDATE_MIN_VERSION = "1.25"


def check_file(path: str | Path, kube_version: str, render: bool = False,
               platforms: Sequence[tuple[Platform, int]] = (), from_version: str | None = None,
               server: Any = None) -> list[Finding]:
    """All findings for one values file; with `from_version`, the CHANGELOG lines of the
    releases after it only (upgrades.annotate); with `server` (a server.Target), the render's
    server-side dry run there (server.ServerUnusable when the cluster cannot be used)."""
    vf = load_values(path)
    if not vf.ok:
        return vf.findings
    findings = upgrades.deprecated(vf, from_version)
    findings += check_schema(vf)
    findings += check_rules(vf, kube_version, platforms)
    if render and not any(f.severity == ERROR for f in findings):
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


def _obj_name(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind', '?')}/{(obj.get('metadata') or {}).get('name', '?')}"


def _key_paths(node: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, key) of a plain values mapping, depth first."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield prefix + (k,), k
            yield from _key_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _key_paths(v, prefix + (i,))


def guess_position(vf: ValuesFile, message: str, obj_path: list[str | int]) -> tuple[int, int, str]:
    """Where in the values file a rendered object's error most likely comes from: the key
    the error names (an unexpected field, or the last key of its path) when the file has
    exactly one key of that name; else the top of the file."""
    names = re.findall(r"'([^']+)' was unexpected", message)
    names += [p for p in reversed(obj_path) if isinstance(p, str)][:1]
    for name in names:
        hits = [path for path, key in _key_paths(vf.data) if key == name]
        if len(hits) == 1:
            line, col, _ = vf.position(hits[0])
            return line, col, dotted(hits[0])
    return 1, 1, ""


def render_objects(vf: ValuesFile, path: Path, kube_version: str) -> tuple[list[dict[str, Any]], list[Finding]]:
    """helm template's objects for the file, or no objects and the finding saying why not."""
    try:
        return helm.render([path], kube_version=kube_version), []
    except helm.HelmNotFoundError as exc:
        return [], [Finding(vf.path, 0, 0, "JHR004", ERROR, INPUT, "", f"cannot render: {exc}",
                            "run `make tools` or set JOBHANDLERS_HELM")]
    except helm.HelmError as exc:
        return [], [Finding(vf.path, 1, 1, "JHR001", ERROR, RENDER, "", f"helm template failed: {exc}",
                            "fix the value the chart's message names")]


def check_rendered(vf: ValuesFile, path: Path, kube_version: str) -> list[Finding]:
    """Render with helm for kube_version and validate every object with kubernetes-validate
    (strict: unknown fields are errors)."""
    import kubernetes_validate  # slow import: only with --render

    objects, failed = render_objects(vf, path, kube_version)
    if failed:
        return failed
    if not model.at_least(kube_version, KUBE_VALIDATE_MIN_VERSION):
        return [Finding(vf.path, 1, 1, "JHR003", WARNING, RENDER, "",
                        f"kubernetes-validate has no schemas for Kubernetes {kube_version}; rendered "
                        f"{len(objects)} objects were not validated",
                        f"validate with --kube-version >= {KUBE_VALIDATE_MIN_VERSION} as well")]
    findings: list[Finding] = []
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, kube_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            obj_path = list(getattr(exc, "absolute_path", []))
            where = dotted(obj_path)
            line, col, vpath = guess_position(vf, exc.message, obj_path)
            findings.append(Finding(vf.path, line, col, "JHR002", ERROR, RENDER, vpath,
                                    f"{_obj_name(obj)} invalid for Kubernetes {kube_version} at "
                                    f"{where or '(root)'}: {exc.message}",
                                    "fix the values (or the chart) so the object matches the API"))
        except kubernetes_validate.SchemaNotFoundError as exc:
            findings.append(Finding(vf.path, 1, 1, "JHR002", ERROR, RENDER, "",
                                    f"{_obj_name(obj)}: {exc.message}",
                                    "use an apiVersion this Kubernetes version serves"))
        except Exception as exc:  # noqa: BLE001 - e.g. VersionNotSupportedError
            findings.append(Finding(vf.path, 1, 1, "JHR002", ERROR, RENDER, "",
                                    f"{_obj_name(obj)}: cannot validate: {exc}", "use a supported --kube-version"))
    return findings
