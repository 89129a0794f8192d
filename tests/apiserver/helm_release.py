"""A helm release in the validation API server: install, upgrade, and what the server holds.

    rel = HelmRelease(api, "up-1", tmp)            # its own namespace and helm home
    rel.install(old_chart, old_values)             # helm install --no-hooks
    before = rel.objects()                         # (kind, name) -> the server's object
    rel.upgrade(new_chart, new_values)             # helm upgrade --no-hooks

No controller runs next to this API server, so nothing is scheduled and nothing rolls: a
workload whose pod template the upgrade changed is a workload a cluster would roll.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.render import helm

from kubeapi import ApiServer

Key = tuple[str, str]  # (kind, name)


class HelmFailed(AssertionError):
    """helm exited non-zero; the message is its stderr."""


@dataclass
class HelmRelease:
    """One release (`rel`) in namespace `namespace` of the API server, helm's state in `home`."""

    api: ApiServer
    namespace: str
    home: Path
    name: str = "rel"
    major: int = 4

    def helm(self, *args: str) -> str:
        """Run helm against the API server; a non-zero exit raises HelmFailed with stderr."""
        env = {**os.environ, "KUBECONFIG": str(self.api.kubeconfig),
               "HELM_CACHE_HOME": str(self.home / "cache"), "HELM_CONFIG_HOME": str(self.home / "config"),
               "HELM_DATA_HOME": str(self.home / "data")}
        proc = subprocess.run([str(helm.find_helm(self.major)), *args, "-n", self.namespace],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        if proc.returncode != 0:
            raise HelmFailed(f"helm {args[0]} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def install(self, chart: Path, values: Path) -> None:
        """helm install --no-hooks (the hooks need a node and a database)."""
        self.helm("install", self.name, str(chart), "-f", str(values), "--no-hooks", "--create-namespace")

    def upgrade(self, chart: Path, values: Path, *more: Path) -> None:
        """helm upgrade --no-hooks, with only this file's values (no --reuse-values), then `more` files."""
        self.helm("upgrade", self.name, str(chart), "-f", str(values), *(a for m in more for a in ("-f", str(m))),
                  "--no-hooks")

    def manifest(self) -> dict[Key, dict[str, Any]]:
        """The release's current manifest (hooks excluded), by kind and name."""
        return _by_key(helm.parse_manifests(self.helm("get", "manifest", self.name)))

    def hooks(self) -> dict[Key, dict[str, Any]]:
        """The release's hooks as rendered (not created: --no-hooks), by kind and name."""
        return _by_key(helm.parse_manifests(self.helm("get", "hooks", self.name)))

    def objects(self) -> dict[Key, dict[str, Any]]:
        """What the server holds for the release's manifest: each object, uid and spec included."""
        keys = sorted(self.manifest())
        if not keys:
            return {}
        names = [f"{kind}/{name}" for kind, name in keys]
        out = self.api.kubectl("get", "-n", self.namespace, "-o", "json", *names).stdout
        data = json.loads(out)
        return _by_key(data.get("items", [data]))


def _by_key(objects: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {(str(o["kind"]), str(o["metadata"]["name"])): o for o in objects}
