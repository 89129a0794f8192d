"""The signed chart: `make package SIGN_KEY=… KEYRING=…` with a throwaway key made here
(tests/oci/test-key.sh; no key is committed) writes the chart and its provenance file, which
helm 4 (bin/helm) and helm 3 (bin/helm3) both verify and both refuse once a byte of the chart
changed or the keyring lacks the signer. Through an OCI registry (bin/registry on a free
localhost port, no cluster): `helm push` uploads the .prov as a layer of its own, and
`helm pull --verify` / `helm template --verify` / `helm install --verify` (the install's
own chart lookup) check it, with either major."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from packaging_support import HELM, REPO, run

pytestmark = pytest.mark.xdist_group("signing")

HELM3 = Path(os.environ.get("JOBHANDLERS_HELM3") or REPO / "bin" / "helm3")
REGISTRY = Path(os.environ.get("JOBHANDLERS_REGISTRY") or REPO / "bin" / "registry")
KEY_NAME = "jobhandlers test key"
VERSION = yaml.safe_load((REPO / "chart" / "Chart.yaml").read_text())["version"]
MAJORS = {"helm4": HELM, "helm3": HELM3}
PROV_MEDIA_TYPE = "application/vnd.cncf.helm.chart.provenance.v1.prov"


def helm(binary: Path, *args: str | Path, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """helm with its config, cache and data (registry logins, pulled charts) under `home`."""
    env = {**os.environ, "HELM_CONFIG_HOME": str(home / "config"), "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_DATA_HOME": str(home / "data")}
    return run([binary, *args], cwd=cwd or home, env=env, timeout=120)


def make_key(dest: Path, name: str) -> Path:
    """tests/oci/test-key.sh: dest/secring.gpg and dest/pubring.gpg of a new key named `name`."""
    proc = run([REPO / "tests/oci/test-key.sh", dest, name], cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == name
    return dest


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The signing key and another one (a keyring that does not hold the signer)."""
    for binary in (HELM, HELM3):
        assert binary.is_file(), f"{binary} missing: run `make tools`"
    assert shutil.which("gpg"), "gpg missing: run `make deps` (Debian's gnupg)"
    root = tmp_path_factory.mktemp("keys")
    return {"signer": make_key(root / "signer", KEY_NAME), "other": make_key(root / "other", "someone else")}


@pytest.fixture(scope="module")
def signed(keys: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The chart signed by `make package` (helm 4) and by `helm3 package --sign`: major -> tgz."""
    out: dict[str, Path] = {}
    dist = tmp_path_factory.mktemp("dist-helm4")
    proc = run(["make", "-s", "--no-print-directory", "package", f"DIST={dist}", f"SIGN_KEY={KEY_NAME}",
                f"KEYRING={keys['signer'] / 'secring.gpg'}"], cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out["helm4"] = dist / f"jobhandlers-{VERSION}.tgz"
    # make package prints what it wrote, the chart and its provenance file
    assert proc.stdout.splitlines()[-2:] == [str(out["helm4"]), f"{out['helm4']}.prov"], proc.stdout
    dist3 = tmp_path_factory.mktemp("dist-helm3")
    proc = helm(HELM3, "package", REPO / "chart", "-d", dist3, "--sign", "--key", KEY_NAME,
                "--keyring", keys["signer"] / "secring.gpg", home=dist3)
    assert proc.returncode == 0, proc.stderr
    out["helm3"] = dist3 / f"jobhandlers-{VERSION}.tgz"
    for tgz in out.values():
        assert tgz.is_file() and Path(f"{tgz}.prov").is_file(), sorted(p.name for p in tgz.parent.iterdir())
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("verifier", sorted(MAJORS))
@pytest.mark.parametrize("packager", sorted(MAJORS))
def test_signed_chart_verifies(signed: dict[str, Path], keys: dict[str, Path], packager: str, verifier: str,
                               tmp_path: Path) -> None:
    """Each major verifies what either major signed: the signer, the key, the chart's hash."""
    tgz = signed[packager]
    prov = Path(f"{tgz}.prov").read_text()
    assert prov.startswith("-----BEGIN PGP SIGNED MESSAGE-----") and f"version: {VERSION}" in prov
    assert f"jobhandlers-{VERSION}.tgz: sha256:{sha256(tgz)}" in prov
    proc = helm(MAJORS[verifier], "verify", tgz, "--keyring", keys["signer"] / "pubring.gpg", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"Signed by: {KEY_NAME} <test@jobhandlers.invalid>" in proc.stdout
    assert f"Chart Hash Verified: sha256:{sha256(tgz)}" in proc.stdout


@pytest.mark.parametrize("verifier", sorted(MAJORS))
def test_a_changed_byte_another_key_or_no_prov_fails(signed: dict[str, Path], keys: dict[str, Path],
                                                     verifier: str, tmp_path: Path) -> None:
    """One flipped byte of the chart, a keyring without the signer, a chart without its .prov:
    `helm verify` fails each time, saying why."""
    copy = tmp_path / "copy" / signed["helm4"].name
    copy.parent.mkdir()
    shutil.copy(signed["helm4"], copy)
    shutil.copy(f"{signed['helm4']}.prov", f"{copy}.prov")
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    pub, other = keys["signer"] / "pubring.gpg", keys["other"] / "pubring.gpg"
    verify = MAJORS[verifier]
    proc = helm(verify, "verify", copy, "--keyring", pub, home=tmp_path)
    assert proc.returncode == 1 and "sha256 sum does not match" in proc.stderr, proc.stderr
    proc = helm(verify, "verify", signed["helm4"], "--keyring", other, home=tmp_path)
    assert proc.returncode == 1 and "signature made by unknown entity" in proc.stderr, proc.stderr
    os.unlink(f"{copy}.prov")
    shutil.copy(signed["helm4"], copy)
    proc = helm(verify, "verify", copy, "--keyring", pub, home=tmp_path)
    assert proc.returncode == 1 and ".prov" in proc.stderr, proc.stderr


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A CNCF distribution registry (bin/registry, `make tools`) on a free localhost port."""
    assert REGISTRY.is_file(), f"{REGISTRY} missing: run `make tools` (it builds the pinned registry)"
    root = tmp_path_factory.mktemp("registry")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (root / "config.yml").write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"}, "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"}}))
    proc = subprocess.Popen([REGISTRY, "serve", root / "config.yml"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, "the registry did not listen in 30 s"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def manifest(host: str, repo: str, tag: str) -> dict:
    req = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{tag}",
                                 headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def pushed(registry: str, signed: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """oci:// references: the signed chart pushed by each major (`signed-helm4`, `signed-helm3`);
    `unsigned`, the chart pushed without a .prov; `swapped`, another chart of the same version
    pushed with the signed chart's .prov."""
    work = tmp_path_factory.mktemp("push")
    # not the signed bytes: helm 4 keeps pulled charts and their .prov by digest (HELM_CACHE_HOME/
    # content), so the signed chart's own bytes pushed without a .prov verify from that cache
    other = work / "other-chart" / "jobhandlers"
    shutil.copytree(REPO / "chart", other)
    with (other / "values.yaml").open("a") as fh:
        fh.write("\n# not what was signed\n")
    unsigned, swapped = work / "unsigned", work / "swapped"
    proc = helm(HELM, "package", other, "-d", unsigned, home=work)
    assert proc.returncode == 0, proc.stderr
    swapped.mkdir()
    shutil.copy(unsigned / signed["helm4"].name, swapped)
    shutil.copy(f"{signed['helm4']}.prov", swapped / f"{signed['helm4'].name}.prov")
    refs: dict[str, str] = {}
    for name, tgz, major in (("signed-helm4", signed["helm4"], HELM), ("signed-helm3", signed["helm4"], HELM3),
                             ("unsigned", unsigned / signed["helm4"].name, HELM),
                             ("swapped", swapped / signed["helm4"].name, HELM)):
        proc = helm(major, "push", tgz, f"oci://{registry}/{name}", "--plain-http", home=work)
        assert proc.returncode == 0, proc.stderr
        refs[name] = f"oci://{registry}/{name}/jobhandlers"
    return refs


@pytest.mark.parametrize("pusher", ["helm4", "helm3"])
def test_push_uploads_the_provenance(registry: str, pushed: dict[str, str], signed: dict[str, Path],
                                     pusher: str) -> None:
    """Both majors push the .prov beside the chart: a layer of the provenance media type."""
    layers = {layer["mediaType"]: layer["digest"] for layer in manifest(registry, f"signed-{pusher}/jobhandlers",
                                                                        VERSION)["layers"]}
    prov = Path(f"{signed['helm4']}.prov")
    assert layers[PROV_MEDIA_TYPE] == f"sha256:{sha256(prov)}"
    assert layers["application/vnd.cncf.helm.chart.content.v1.tar+gzip"] == f"sha256:{sha256(signed['helm4'])}"
    assert PROV_MEDIA_TYPE not in {layer["mediaType"] for layer in manifest(registry, "unsigned/jobhandlers",
                                                                            VERSION)["layers"]}


@pytest.mark.parametrize("major", sorted(MAJORS))
def test_pull_and_install_verify_from_oci(pushed: dict[str, str], signed: dict[str, Path], keys: dict[str, Path],
                                          major: str, tmp_path: Path) -> None:
    """`helm pull --verify` writes the chart and its .prov, byte for byte what was signed;
    `helm template --verify` (and helm 4's `helm install --dry-run=client --verify`: helm 3's
    asks a cluster first) renders from oci:// only with the signer's keyring."""
    binary, pub = MAJORS[major], keys["signer"] / "pubring.gpg"
    ref = pushed["signed-helm4" if major == "helm3" else "signed-helm3"]  # each pulls what the other pushed
    out = tmp_path / "pulled"
    out.mkdir()
    proc = helm(binary, "pull", ref, "--version", VERSION, "--plain-http", "--verify", "--keyring", pub,
                "-d", out, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"Signed by: {KEY_NAME}" in proc.stdout and f"Chart Hash Verified: sha256:{sha256(signed['helm4'])}" in proc.stdout
    name = signed["helm4"].name
    assert (out / name).read_bytes() == signed["helm4"].read_bytes()
    assert (out / f"{name}.prov").read_bytes() == Path(f"{signed['helm4']}.prov").read_bytes()
    proc = helm(binary, "template", "rel", ref, "--version", VERSION, "--plain-http", "--verify", "--keyring", pub,
                home=tmp_path)
    assert proc.returncode == 0 and "kind: Deployment" in proc.stdout, proc.stderr
    if major == "helm4":
        proc = helm(binary, "install", "rel", ref, "--version", VERSION, "--plain-http", "--verify", "--keyring", pub,
                    "--dry-run=client", home=tmp_path)
        assert proc.returncode == 0 and "STATUS: pending-install" in proc.stdout, proc.stderr


@pytest.mark.parametrize("major", sorted(MAJORS))
def test_verify_from_oci_refuses(pushed: dict[str, str], keys: dict[str, Path], major: str, tmp_path: Path) -> None:
    """Another keyring, a chart pushed without .prov, a chart swapped under a valid .prov: pull,
    template and (helm 4) a client-side install with --verify all fail."""
    binary, pub, other = MAJORS[major], keys["signer"] / "pubring.gpg", keys["other"] / "pubring.gpg"
    cases = [(pushed["signed-helm4"], other, "signature made by unknown entity"),
             (pushed["unsigned"], pub, "prov"),
             (pushed["swapped"], pub, "sha256 sum does not match")]
    for ref, keyring, why in cases:
        commands = [["pull", ref, "-d", tmp_path], ["template", "rel", ref]]
        if major == "helm4":
            commands.append(["install", "rel", ref, "--dry-run=client"])
        for cmd in commands:
            proc = helm(binary, *cmd, "--version", VERSION, "--plain-http", "--verify", "--keyring", keyring,
                        home=tmp_path)
            assert proc.returncode == 1 and why in proc.stderr, (cmd, keyring.parent.name, proc.stderr)
