"""Peer policy suites run on rendered/: kubeconform (built by `make tools`) with JSON schemas
converted offline from kubernetes-validate's bundled ones, and checkov (a test extra). Their
allow-list is tests/peer-suites-allow.yaml, one reason per entry."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

import kubernetes_validate

REPO = Path(__file__).resolve().parents[2]
RENDERED = REPO / "rendered"
ALLOW_FILE = REPO / "tests" / "peer-suites-allow.yaml"
KUBECONFORM = Path(os.environ.get("JOBHANDLERS_KUBECONFORM") or REPO / "bin" / "kubeconform")
_BUNDLED = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
_REF = re.compile(r"^(?:/api/_definitions\.json)?#/\$defs/(.+)$")


def bundled_versions() -> list[str]:
    """Kubernetes minors kubernetes-validate ships strict schemas for, e.g. ["1.25", ...]."""
    found = [m.group(1) for p in _BUNDLED.iterdir() if (m := re.fullmatch(r"v(\d+\.\d+)\.0-local-strict", p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def _rewrite(node: Any, used: set[str]) -> Any:
    """A copy of a schema node whose $refs into _definitions.json point at #/$defs/ instead."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            m = _REF.match(value) if key == "$ref" and isinstance(value, str) else None
            if m:
                used.add(m.group(1))
                out[key] = f"#/$defs/{m.group(1)}"
            else:
                out[key] = _rewrite(value, used)
        return out
    if isinstance(node, list):
        return [_rewrite(v, used) for v in node]
    return node


def standalone_schema(version: str, name: str) -> dict[str, Any] | None:
    """kubernetes-validate's strict schema file `name` (e.g. deployment-apps-v1.json) for `version`,
    made standalone: the definitions it reaches are copied under $defs, so kubeconform needs
    no other file. None when the kind has no schema there."""
    src = _BUNDLED / f"v{version}.0-local-strict"
    path = src / name
    if not path.is_file():
        return None
    defs = json.loads((src / "_definitions.json").read_text())["$defs"]
    used: set[str] = set()
    schema = _rewrite(json.loads(path.read_text()), used)
    out: dict[str, Any] = {}
    todo = list(used)
    while todo:
        key = todo.pop()
        if key in out:
            continue
        more: set[str] = set()
        out[key] = _rewrite(defs[key], more)
        todo.extend(more - out.keys())
    schema["$defs"] = out
    return schema


def schema_dir(version: str, kinds: set[str], cache: Path) -> Path:
    """A kubeconform schema tree for `version` holding the kinds given as file stems
    (deployment-apps-v1, ...), in cache/<hash>/: kubeconform's -schema-location template is
    <dir>/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json."""
    key = hashlib.sha256(f"{kubernetes_validate.__version__}|{version}|{sorted(kinds)}".encode()).hexdigest()[:16]
    root = cache / key
    target = root / f"v{version}.0-standalone-strict"
    if not (target / ".done").is_file():
        target.mkdir(parents=True, exist_ok=True)
        for stem in sorted(kinds):
            schema = standalone_schema(version, f"{stem}.json")
            if schema is not None:
                (target / f"{stem}.json").write_text(json.dumps(schema))
        (target / ".done").write_text("")
    return root


def schema_stem(obj: dict[str, Any]) -> str:
    """kubeconform's file stem of an object: kind, then the group's first label, then the version."""
    group, _, ver = obj["apiVersion"].rpartition("/")
    return obj["kind"].lower() + (f"-{group.split('.')[0]}" if group else "") + f"-{ver}"


def rendered_files(version: str) -> list[Path]:
    """Every rendered/<example>/<version>/*.yaml."""
    return sorted(RENDERED.glob(f"*/{version}/*.yaml"))


def rendered_objects(files: list[Path]) -> list[dict[str, Any]]:
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]


def allow_list() -> dict[str, list[dict[str, str]]]:
    """tests/peer-suites-allow.yaml: suite -> entries ({id, reason, ...})."""
    data = yaml.safe_load(ALLOW_FILE.read_text()) or {}
    for suite, entries in data.items():
        for entry in entries or []:
            assert entry.get("reason", "").strip(), f"{ALLOW_FILE.name}: {suite} entry {entry} has no reason"
    return data
