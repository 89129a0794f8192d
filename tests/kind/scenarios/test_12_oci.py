"""The chart as a product: `helm package` (version from Chart.yaml), `helm push` to a real OCI
registry running here (the CNCF distribution registry, bin/registry from its Go module), and
a release installed from oci:// — not from the folder — then upgraded to a newer pushed
version. Both versions are signed with a throwaway key (tests/oci/test-key.sh), `helm push`
uploads their provenance files, and the install and the upgrade run with `--verify --keyring`."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from jhkind.helm import ROOT
from jhkind.scenario import Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]
REGISTRY = Path(os.environ.get("JOBHANDLERS_REGISTRY") or ROOT / "bin" / "registry")
KEY_NAME = "jobhandlers test key"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """A distribution registry on a free localhost port; yields host:port."""
    if not REGISTRY.is_file():
        pytest.fail(f"{REGISTRY} missing: run `make tools` (it builds the pinned registry)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "registry.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(tmp_path / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"}}))
    proc = subprocess.Popen([str(REGISTRY), "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0
        wait_until(up, 30, "the registry to listen")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def package(sc: Scenario, dest: Path, key: Path, version: str | None = None) -> Path:
    """helm package the chart (optionally as another version) into dest, signed with the key
    tests/oci/test-key.sh made in `key` (the .prov beside the .tgz)."""
    dest.mkdir(parents=True, exist_ok=True)
    args = ["package", str(ROOT / "chart"), "-d", str(dest), "--sign", "--key", KEY_NAME,
            "--keyring", str(key / "secring.gpg")]
    if version:
        args += ["--version", version]
    res = sc.helm.run(args, timeout=120).check("helm package")
    return Path(res.stdout.strip().rsplit(" ", 1)[-1])


def test_12_install_from_oci_and_upgrade_to_a_newer_pushed_version(scenario: Scenario, registry: str,
                                                                   tmp_path: Path) -> None:
    sc, p = scenario, scenario.progress
    chart = yaml.safe_load((ROOT / "chart" / "Chart.yaml").read_text())
    base = chart["version"]
    newer = f"{base}-next.1" if "-" not in base else f"{base}.1"
    key = tmp_path / "key"
    subprocess.run([str(ROOT / "tests/oci/test-key.sh"), str(key), KEY_NAME], check=True, capture_output=True)
    verify = ["--verify", "--keyring", str(key / "pubring.gpg")]
    with p.phase(f"helm package --sign {base} and {newer}, helm push to oci://{registry}/charts"):
        for tgz in (package(sc, tmp_path / "dist", key), package(sc, tmp_path / "dist", key, newer)):
            assert Path(f"{tgz}.prov").is_file(), f"helm package --sign wrote no {tgz}.prov"
            sc.helm.run(["push", str(tgz), f"oci://{registry}/charts", "--plain-http"], timeout=120).check("helm push")
    sc.values = sc.values_for({})
    values = sc._values_file(sc.values)
    ref = f"oci://{registry}/charts/jobhandlers"
    with p.phase(f"helm install {ref} --version {base} --verify"):
        res = sc.helm.run(["install", sc.release, ref, "--version", base, "--plain-http", *verify, "-n", sc.namespace,
                           "-f", str(values), "--wait", "--timeout", "300s"], timeout=420).check("helm install oci")
        sc.wait_handlers_ready(90)
    p.fact("install_from_oci_seconds", round(res.seconds, 1))
    assert sc.helm.history(sc.release, sc.namespace)[-1]["chart"] == f"jobhandlers-{base}"
    with p.phase(f"helm upgrade {ref} --version {newer} --verify"):
        sc.helm.run(["upgrade", sc.release, ref, "--version", newer, "--plain-http", *verify, "-n", sc.namespace,
                     "-f", str(values), "--wait", "--timeout", "300s"], timeout=420).check("helm upgrade oci")
        sc.wait_handlers_ready(90)
    history = sc.helm.history(sc.release, sc.namespace)
    p.fact("chart_versions", [h["chart"] for h in history])
    assert [h["chart"] for h in history] == [f"jobhandlers-{base}", f"jobhandlers-{newer}"]
    assert sum(sc.handler_restarts().values()) == 0
