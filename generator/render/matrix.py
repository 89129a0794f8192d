"""`jobhandlers render`: every values example × every kube version, rendered with the real
helm into rendered/<example>/<kube-version>/<kind>-<name>.yaml, one normalized object per
file, written atomically (temp tree + rename), or compared against rendered/ (--check)."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

import yaml

from .. import charts, model
from . import helm

# Installed (no checkout): rendered/ in the current directory.
RENDERED_DIR = helm.REPO_ROOT / "rendered" if charts.IN_CHECKOUT else Path("rendered")


class _Dumper(yaml.CSafeDumper):  # type: ignore[misc,name-defined]
    """libyaml dumper: block style, multi-line strings as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    literal = "\n" in value and "\t" not in value and not any(
        line != line.rstrip() for line in value.split("\n"))
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if literal else None)


_Dumper.add_representer(str, _str)


def parse(text: str) -> list[dict[str, Any]]:
    """helm's multi-document output -> objects (libyaml; empty documents dropped)."""
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict) and d]


def dump(obj: Any) -> str:
    """One object as stable YAML text: keys sorted, block style, no line wrapping."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100000,
                     allow_unicode=True)


def object_files(objects: Sequence[dict[str, Any]]) -> dict[str, str]:
    """File name (`<kind>-<name>.yaml`, lower-case kind) -> normalized YAML, per object."""
    out: dict[str, str] = {}
    for obj in objects:
        kind = str(obj.get("kind", "unknown")).lower()
        name = str((obj.get("metadata") or {}).get("name", "unnamed"))
        base = f"{kind}-{name}"
        fname, n = f"{base}.yaml", 2
        while fname in out:
            fname, n = f"{base}-{n}.yaml", n + 1
        out[fname] = dump(obj)
    return out


@dataclass
class RenderResult:
    """Outcome of a render run."""

    ok: bool
    files: int = 0
    errors: list[str] = field(default_factory=list)
    helm_missing: bool = False
    stale: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _render_matrix(examples: Sequence[Path], versions: Sequence[str], dest: Path, jobs: int,
                   out: TextIO, render_fn: Callable[[Path, str], str]) -> RenderResult:
    """Render every (example, version) in parallel into dest; progress line per example."""
    t0 = time.monotonic()
    result = RenderResult(ok=True)
    lock = threading.Lock()
    per_example = {ex.stem: helm.example_versions(ex, versions) for ex in examples}
    remaining = {ex.stem: len(per_example[ex.stem]) for ex in examples}
    counts = {ex.stem: 0 for ex in examples}
    started = {ex.stem: t0 for ex in examples}

    def task(example: Path, version: str) -> tuple[str, str, int]:
        """Render one (example, version) and write its files (in the worker: I/O overlaps helm)."""
        files = object_files(parse(render_fn(example, version)))
        target = dest / example.stem / version
        target.mkdir(parents=True, exist_ok=True)
        for fname, text in files.items():
            with open(target / fname, "w", encoding="utf-8") as fh:
                fh.write(text)
        return example.stem, version, len(files)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(task, ex, v): (ex, v) for ex in examples for v in per_example[ex.stem]}
        for fut in as_completed(futures):
            ex, version = futures[fut]
            try:
                name, version, nfiles = fut.result()
            except helm.HelmError as exc:
                with lock:
                    result.ok = False
                    result.helm_missing |= isinstance(exc, helm.HelmNotFoundError)
                    result.errors.append(f"{ex.name} @ kube {version}: {exc}")
                    remaining[ex.stem] -= 1
                continue
            except Exception as exc:  # noqa: BLE001 - a parse error etc. is reported, not raised
                with lock:
                    result.ok = False
                    result.errors.append(f"{ex.name} @ kube {version}: {type(exc).__name__}: {exc}")
                    remaining[ex.stem] -= 1
                continue
            with lock:
                counts[name] += nfiles
                result.files += nfiles
                remaining[name] -= 1
                if remaining[name] == 0:
                    failed = any(e.startswith(f"{ex.name} @") for e in result.errors)
                    status = "FAILED" if failed else "ok"
                    print(f"render {name}: {len(versions)} kube versions, {counts[name]} files, "
                          f"done at {time.monotonic() - started[name]:.1f} s, {status}", file=out, flush=True)
    result.errors.sort()
    result.seconds = time.monotonic() - t0
    return result


def _default_render(example: Path, version: str) -> str:
    """`helm template` for one example and version (argv from helm.py, no temp files)."""
    cmd = helm.template_command([example], version)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=helm.DEFAULT_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        raise helm.HelmNotFoundError(f"cannot execute {cmd[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise helm.HelmRenderError(cmd, -1, f"helm timed out after {helm.DEFAULT_TIMEOUT:.0f} s") from exc
    if proc.returncode != 0:
        raise helm.HelmRenderError(cmd, proc.returncode, proc.stderr, proc.stdout)
    return proc.stdout


def tree_diff(new: Path, old: Path) -> list[str]:
    """Relative paths that differ between two trees, each with the reason."""
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} if root.is_dir() else set()

    a, b = files(new), files(old)
    stale = [f"{f} (missing)" for f in sorted(a - b)]
    stale += [f"{f} (obsolete)" for f in sorted(b - a)]
    stale += [f"{f} (differs)" for f in sorted(a & b) if not filecmp.cmp(new / f, old / f, shallow=False)]
    return sorted(stale)


def render(examples: Sequence[Path] | None = None, out_dir: Path = RENDERED_DIR, *, check: bool = False,
           jobs: int | None = None, versions: Sequence[str] = model.KUBE_VERSIONS, out: TextIO = sys.stdout,
           render_fn: Callable[[Path, str], str] = _default_render) -> RenderResult:
    """Render the matrix into a temp tree, then swap it in (or diff it with --check).
    A failure leaves out_dir untouched."""
    examples = list(examples if examples is not None else helm.examples())
    jobs = jobs or os.cpu_count() or 1
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-new-", dir=out_dir.parent))
    try:
        result = _render_matrix(examples, versions, tmp, jobs, out, render_fn)
        if not result.ok:
            return result
        if check:
            result.stale = tree_diff(tmp, out_dir)
            result.ok = not result.stale
            return result
        old = None
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}-old-{os.getpid()}")
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return result
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
