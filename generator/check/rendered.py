"""`jobhandlers check --render` (and `--server`'s render): helm template for the values file,
every object validated with kubernetes-validate (strict), each error placed at the values key
it most likely comes from."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from .. import model
from ..findings import ERROR, INPUT, RENDER, WARNING, Finding, dotted
from ..render import helm
from ..values.file import ValuesFile

# kubernetes-validate ships schemas from this version on.
KUBE_VALIDATE_MIN_VERSION = "1.25"


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
