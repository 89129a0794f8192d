"""The real helm binary (bin/helm) against the kind cluster."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]
CHART = ROOT / "chart"


@dataclass
class HelmResult:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    started: float  # epoch seconds when helm was started
    ended: float

    def check(self, what: str) -> "HelmResult":
        if self.rc != 0:
            raise AssertionError(f"{what} failed (exit {self.rc}) after {self.seconds:.1f}s:\n{self.stderr}\n{self.stdout}")
        return self


class Helm:
    """`helm` with --kubeconfig and -n fixed; values written to files, never --set strings."""

    def __init__(self, kubeconfig: str, binary: str | None = None):
        self.kubeconfig = kubeconfig
        self.binary = binary or os.environ.get("JOBHANDLERS_HELM") or str(ROOT / "bin" / "helm")
        if not Path(self.binary).is_file():
            raise FileNotFoundError(f"{self.binary} not found: run `make tools` first")

    def run(self, args: list[str], timeout: float = 900) -> HelmResult:
        cmd = [self.binary, *args, "--kubeconfig", self.kubeconfig]
        started = time.time()
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return HelmResult(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0, started, time.time())

    def _values_args(self, values_files: list[Path]) -> list[str]:
        out: list[str] = []
        for f in values_files:
            out += ["-f", str(f)]
        return out

    def install(self, release: str, namespace: str, values_files: list[Path], timeout_s: int = 300,
                wait: bool = True, chart: Path = CHART) -> HelmResult:
        args = ["install", release, str(chart), "-n", namespace, *self._values_args(values_files),
                "--timeout", f"{timeout_s}s"]
        if wait:
            args.append("--wait")
        return self.run(args, timeout=timeout_s + 60)

    def upgrade(self, release: str, namespace: str, values_files: list[Path], timeout_s: int = 300,
                chart: Path = CHART) -> HelmResult:
        args = ["upgrade", release, str(chart), "-n", namespace, *self._values_args(values_files),
                "--wait", "--timeout", f"{timeout_s}s"]
        return self.run(args, timeout=timeout_s + 60)

    def status(self, release: str, namespace: str) -> dict:
        res = self.run(["status", release, "-n", namespace, "-o", "json"], timeout=60)
        return json.loads(res.stdout) if res.rc == 0 else {"error": res.stderr}

    def manifest(self, release: str, namespace: str) -> str:
        """`helm get manifest`: the release's current objects, hooks excluded."""
        return self.run(["get", "manifest", release, "-n", namespace], timeout=60).check("helm get manifest").stdout

    def history(self, release: str, namespace: str) -> list[dict]:
        res = self.run(["history", release, "-n", namespace, "-o", "json"], timeout=60)
        return json.loads(res.stdout) if res.rc == 0 else []


def write_values(path: Path, values: dict) -> Path:
    """Write a values file (atomically) and return its path."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(values, sort_keys=False))
    tmp.replace(path)
    return path


def deep_merge(base: dict, *overrides: dict) -> dict:
    """Values-style merge: dicts merge recursively, everything else replaces."""
    out = json.loads(json.dumps(base))
    for over in overrides:
        for key, value in over.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = deep_merge(out[key], value)
            else:
                out[key] = json.loads(json.dumps(value))
    return out
