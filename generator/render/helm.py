"""The single helm helper: run the pinned helm binary, parse what it renders.

Every test and the `jobhandlers` tool render through this module, so the binary,
release name, namespace and chart path are chosen in exactly one place.

    from jobhandlers import helm     # or, inside the package: from .render import helm
    objs = helm.render(["values-examples/long-jobs.yaml"], kube_version="1.25")
    objs = helm.render([], kube_version="1.16", overrides={"drain": {"bufferSeconds": 60}})
    helm.render([...], helm_binary=helm.find_helm(3))     # helm 3 (parity test)

Failures raise `HelmRenderError` (helm ran and refused; `.stderr` holds helm's
message, `.message` the chart's own `fail` text when there is one) or
`HelmNotFoundError` (no binary: run `make tools`). Both derive from `HelmError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ruamel.yaml import YAML

from .. import charts, model

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = charts.DEFAULT_DIR  # the shipped chart; calls without chart= use charts.active() (--chart)
EXAMPLES_DIR = REPO_ROOT / "values-examples" if charts.IN_CHECKOUT else Path("values-examples")
# env var -> default path, per helm major version.
_BINARIES: dict[int, tuple[str, Path]] = {
    4: ("JOBHANDLERS_HELM", REPO_ROOT / "bin" / "helm"),
    3: ("JOBHANDLERS_HELM3", REPO_ROOT / "bin" / "helm3"),
}
DEFAULT_TIMEOUT = 120.0

PathLike = str | os.PathLike[str]


class HelmError(Exception):
    """Base of every error this module raises."""


class HelmNotFoundError(HelmError):
    """The helm binary is missing or not executable."""


@dataclass
class HelmRenderError(HelmError):
    """helm exited non-zero. `message` is the chart's `fail` text when present."""

    cmd: list[str]
    returncode: int
    stderr: str
    stdout: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The human part of helm's error (a chart `fail` message if any, else stderr)."""
        text = self.stderr.strip()
        match = re.search(r"(?:execution error at \([^)]*\)|error calling fail): (.*)", text, re.S)
        if match:
            text = match.group(1)
        text = re.sub(r"\s*Use --debug flag.*$", "", text, flags=re.S)
        return text.removeprefix("Error: ").strip()

    def __str__(self) -> str:
        return f"helm failed (exit {self.returncode}): {self.message}"


def find_helm(major: int = 4) -> Path:
    """Path of helm `major` (4 or 3): env JOBHANDLERS_HELM / JOBHANDLERS_HELM3, else
    <repo>/bin/helm / <repo>/bin/helm3 in the checkout; installed (no checkout), helm 4 is
    also looked up on PATH. Raises HelmNotFoundError."""
    if major not in _BINARIES:
        raise HelmNotFoundError(f"unsupported helm major version {major}; use 3 or 4")
    env, default = _BINARIES[major]
    if not os.environ.get(env) and not charts.IN_CHECKOUT and major == 4:
        found = shutil.which("helm")
        if found is None:
            raise HelmNotFoundError(f"helm not found on PATH (put helm on PATH or set {env}=/path/to/helm)")
        default = Path(found)
    path = Path(os.environ.get(env) or default)
    if not (path.is_file() and os.access(path, os.X_OK)):
        hint = "run `make tools`" if charts.IN_CHECKOUT else "put helm on PATH"
        raise HelmNotFoundError(f"helm {major} not found at {path} (set {env} or {hint})")
    return path


def template_command(
    values_files: Sequence[PathLike] = (),
    kube_version: str = model.DEFAULT_KUBE_VERSION,
    set_values: Sequence[str] = (),
    *,
    helm_binary: PathLike | None = None,
    chart: PathLike | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The argv of `helm template <RELEASE> <chart> -n <NS> -f ... --kube-version V --set ...`."""
    cmd = [str(helm_binary or find_helm(4)), "template", model.RELEASE_NAME, str(chart or charts.active()),
           "-n", model.NAMESPACE]
    for f in values_files:
        cmd += ["-f", str(f)]
    cmd += ["--kube-version", kube_version]
    for s in set_values:
        cmd += ["--set", s]
    return cmd + list(extra_args)


def _run(cmd: list[str], timeout: float) -> str:
    """Run helm, return stdout; raise HelmRenderError on non-zero exit."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise HelmNotFoundError(f"cannot execute {cmd[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise HelmRenderError(cmd, -1, f"helm timed out after {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise HelmRenderError(cmd, proc.returncode, proc.stderr, proc.stdout)
    return proc.stdout


def render_text(
    values_files: Sequence[PathLike] = (),
    kube_version: str = model.DEFAULT_KUBE_VERSION,
    set_values: Sequence[str] = (),
    *,
    overrides: Mapping[str, Any] | None = None,
    helm_binary: PathLike | None = None,
    chart: PathLike | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Run `helm template` and return its raw multi-document YAML.

    `overrides` is a values mapping written to a temporary file and applied after
    `values_files` (and before `set_values`, which helm applies last)."""
    files: list[PathLike] = list(values_files)
    with tempfile.TemporaryDirectory(prefix="jh-helm-") as tmp:
        if overrides:
            path = Path(tmp) / "overrides.yaml"
            with path.open("w") as fh:
                YAML(typ="safe", pure=True).dump(dict(overrides), fh)
            files.append(path)
        cmd = template_command(files, kube_version, set_values, helm_binary=helm_binary, chart=chart, extra_args=extra_args)
        return _run(cmd, timeout)


def parse_manifests(text: str) -> list[dict[str, Any]]:
    """Split helm's multi-document output into dicts (empty documents dropped)."""
    yaml = YAML(typ="safe")
    return [doc for doc in yaml.load_all(text) if isinstance(doc, dict) and doc]


def render(
    values_files: Sequence[PathLike] = (),
    kube_version: str = model.DEFAULT_KUBE_VERSION,
    set_values: Sequence[str] = (),
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """`render_text` parsed into a list of Kubernetes objects (dicts), in helm's order.
    Keyword arguments are those of `render_text`."""
    return parse_manifests(render_text(values_files, kube_version, set_values, **kwargs))


def lint(
    values_files: Sequence[PathLike] = (),
    *,
    strict: bool = True,
    kube_version: str | None = None,
    helm_binary: PathLike | None = None,
    chart: PathLike | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """`helm lint [--strict] <chart> -f ...`; returns stdout, raises HelmRenderError."""
    cmd = [str(helm_binary or find_helm(4)), "lint", str(chart or charts.active()), "-n", model.NAMESPACE]
    if strict:
        cmd.append("--strict")
    for f in values_files:
        cmd += ["-f", str(f)]
    if kube_version:
        cmd += ["--kube-version", kube_version]
    return _run(cmd, timeout)


def by_kind(objects: Iterable[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of one kind, in render order."""
    return [dict(o) for o in objects if o.get("kind") == kind]


def examples() -> list[Path]:
    """Every values example, sorted by name."""
    return sorted(EXAMPLES_DIR.glob("*.yaml"))


def example_versions(example: Path, versions: Sequence[str] = model.KUBE_VERSIONS) -> list[str]:
    """The matrix versions an example is rendered and tested on: all of them, unless the file
    says `# kube-versions: >=1.29` (it uses something the chart refuses below that)."""
    import re
    for line in Path(example).read_text(encoding="utf-8", errors="replace").splitlines()[:40]:
        m = re.match(r"#\s*kube-versions:\s*>=\s*(\d+\.\d+)\s*$", line)
        if m:
            return [v for v in versions if model.at_least(v, m.group(1))]
    return list(versions)
