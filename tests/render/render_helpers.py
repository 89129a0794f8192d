"""Shared helpers of the render tests: the matrix, a per-session render cache, accessors.

(A module of its own, not conftest.py: tests/unit has a conftest.py too.)
"""

from __future__ import annotations

import fcntl
import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from generator import model
from generator.render import helm
from generator.invariants import migration_jobs, role_container

EXAMPLES: list[Path] = helm.examples()
VERSIONS: tuple[str, ...] = model.KUBE_VERSIONS
MATRIX: list[tuple[Path, str]] = [(e, v) for e in EXAMPLES for v in helm.example_versions(e, VERSIONS)]


def case_id(example: Path, version: str) -> str:
    """Parametrize id such as galaxy-1.25."""
    return f"{example.stem}-{version}"


MATRIX_IDS = [case_id(e, v) for e, v in MATRIX]
Objects = list[dict[str, Any]]


class RenderCache:
    """Renders every (example, version) of the matrix once per session and helm major:
    the first request for a major renders the whole matrix with one helm process per core.
    With `shared` (a directory every xdist worker of the session sees), one worker renders a
    major's matrix under a lock and the others read its result instead of rendering it again."""

    def __init__(self, shared: Path | None = None) -> None:
        self._objects: dict[tuple[str, str, int], Objects] = {}
        self._shared = shared

    def _render_matrix(self, major: int) -> dict[tuple[str, str, int], Objects]:
        binary = helm.find_helm(major)

        def one(case: tuple[Path, str]) -> Objects:
            return helm.render([case[0]], kube_version=case[1], helm_binary=binary)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            return {(str(e), v, major): objs for (e, v), objs in zip(MATRIX, pool.map(one, MATRIX))}

    def _prefetch(self, major: int) -> None:
        if self._shared is None:
            self._objects.update(self._render_matrix(major))
            return
        self._shared.mkdir(parents=True, exist_ok=True)
        result = self._shared / f"helm{major}-matrix.pickle"
        with open(self._shared / f"helm{major}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here, then read the result
            if not result.is_file():
                tmp = result.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(pickle.dumps(self._render_matrix(major)))
                tmp.replace(result)
            self._objects.update(pickle.loads(result.read_bytes()))

    def get(self, example: Path, version: str, major: int = 4) -> Objects:
        key = (str(example), version, major)
        if key not in self._objects and (example, version) in MATRIX:
            self._prefetch(major)
        if key not in self._objects:
            self._objects[key] = helm.render([example], kube_version=version, helm_binary=helm.find_helm(major))
        return self._objects[key]


def kinds(objects: Objects, kind: str) -> list[dict[str, Any]]:
    """Objects of one kind."""
    return helm.by_kind(objects, kind)


def named(objects: Objects, kind: str, name: str) -> dict[str, Any] | None:
    """The object of a kind and name, or None."""
    for obj in kinds(objects, kind):
        if obj["metadata"]["name"] == name:
            return obj
    return None


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    """metadata.annotations or {}."""
    return obj["metadata"].get("annotations") or {}


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """spec.template.spec of a Deployment or Job."""
    return obj["spec"]["template"]["spec"]


def env_map(container: dict[str, Any]) -> dict[str, Any]:
    """env name -> value (or the valueFrom dict)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def role_of(deployment: dict[str, Any]) -> str:
    """The role a Deployment runs (its component label)."""
    return deployment["metadata"]["labels"]["app.kubernetes.io/component"]


def main_container(deployment: dict[str, Any]) -> dict[str, Any]:
    """The handler container: the generated tests' accessor (generator.invariants), the one
    way every test finds it (by JOBHANDLERS_ROLE), named after the role."""
    container = role_container(deployment)
    assert container["name"] == role_of(deployment), container["name"]
    return container


def init_container(obj: dict[str, Any], name: str) -> dict[str, Any] | None:
    """An init container by name, or None."""
    for c in pod_spec(obj).get("initContainers") or []:
        if c["name"] == name:
            return c
    return None


def migration_job(objects: Objects) -> dict[str, Any] | None:
    """The (pre-deploy) migration Job, or None; never the post-deploy Job (commands.postMigrate)."""
    jobs = migration_jobs(objects)
    assert len(jobs) <= 1, [j["metadata"]["name"] for j in jobs]
    return jobs[0] if jobs else None


def deep_merge(*parts: dict[str, Any]) -> dict[str, Any]:
    """Values overrides merged left to right: maps key by key, anything else replaced."""
    out: dict[str, Any] = {}
    for part in parts:
        out = _merge2(out, part)
    return out


def _merge2(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge2(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
