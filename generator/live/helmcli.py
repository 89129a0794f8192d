"""helm as the live suite runs it: install, upgrade, test and uninstall of one release,
each timed; the binary is the tool's (helm.find_helm: JOBHANDLERS_HELM, bin/helm or PATH)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..render import helm as helm_mod


@dataclass(frozen=True)
class HelmRun:
    """One helm command: its exit code, output and wall time."""

    args: tuple[str, ...]
    rc: int
    output: str
    seconds: float

    def check(self, what: str) -> "HelmRun":
        """AssertionError with helm's output when it failed."""
        if self.rc != 0:
            raise AssertionError(f"{what} failed (exit {self.rc}, {self.seconds:.0f} s): {self.output[-3000:]}")
        return self


class Helm:
    """helm against one cluster and namespace, for one release of one chart."""

    def __init__(self, chart: Path, release: str, namespace: str, kubeconfig: str | None,
                 context: str | None = None) -> None:
        self.binary = str(helm_mod.find_helm(4))
        self.chart, self.release, self.namespace = chart, release, namespace
        self.common = ["-n", namespace] + (["--kubeconfig", kubeconfig] if kubeconfig else []) + \
            (["--kube-context", context] if context else [])

    def run(self, args: Sequence[str], timeout: float) -> HelmRun:
        """helm ARGS in the release's namespace."""
        t0 = time.monotonic()
        try:
            p = subprocess.run([self.binary, *args, *self.common], capture_output=True, text=True,
                               timeout=timeout + 60, check=False)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out = 124, f"helm {args[0]} still running after {timeout + 60:.0f} s: {exc}"
        return HelmRun(tuple(args), rc, out, round(time.monotonic() - t0, 1))

    def install(self, values: Sequence[Path], timeout: int, extra: Sequence[str] = (),
                chart: str | Path | None = None) -> HelmRun:
        """helm install --wait (of the release's chart, or `chart`: a path, oci://... or repo/name)."""
        return self.run(["install", self.release, str(chart or self.chart), *self._values(values), *extra,
                         "--wait", "--timeout", f"{timeout}s"], timeout)

    def upgrade(self, values: Sequence[Path], timeout: int, extra: Sequence[str] = ()) -> HelmRun:
        """helm upgrade --wait (the release's chart unless `extra` names another)."""
        return self.run(["upgrade", self.release, str(self.chart), *self._values(values), *extra,
                         "--wait", "--timeout", f"{timeout}s"], timeout)

    def test(self, timeout: int = 300) -> HelmRun:
        """helm test --logs."""
        return self.run(["test", self.release, "--logs", "--timeout", f"{timeout}s"], timeout)

    def uninstall(self, timeout: int) -> HelmRun:
        """helm uninstall --wait."""
        return self.run(["uninstall", self.release, "--wait", "--timeout", f"{timeout}s"], timeout)

    @staticmethod
    def _values(values: Sequence[Path]) -> list[str]:
        return [a for v in values for a in ("-f", str(v))]
