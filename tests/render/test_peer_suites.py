"""kubeconform, built from its Go module by `make tools`, validates every rendered manifest against
the strict JSON schemas of its Kubernetes version, converted offline from kubernetes-validate's
bundled ones (peer_suites.py). kubernetes-validate ships 1.25 and later, so the matrix versions
from 1.25 on are validated (older ones have no schema to convert)."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from generator import model
from peer_suites import (KUBECONFORM, RENDERED, REPO, allow_list, bundled_versions, rendered_files, rendered_objects,
                         schema_dir, schema_stem)

VERSIONS = [v for v in model.KUBE_VERSIONS if v in bundled_versions()]
LOCATION = "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"


def kubeconform(version: str, files: list[Path], cache: Path) -> dict:
    assert KUBECONFORM.is_file(), f"{KUBECONFORM} missing: run `make tools`"
    kinds = {schema_stem(o) for o in rendered_objects(files)}
    root = schema_dir(version, kinds, cache)
    proc = subprocess.run([str(KUBECONFORM), "-strict", "-summary", "-output", "json", "-kubernetes-version",
                           f"{version}.0", "-schema-location", f"{root}/{LOCATION}", *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def schema_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kubeconform-schemas")


def test_the_matrix_has_versions_to_validate():
    assert VERSIONS == ["1.25", "1.28", "1.34", "1.37"], VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_kubeconform_accepts_every_rendered_manifest(version, schema_cache):
    files = rendered_files(version)
    assert files, f"nothing rendered for {version}: run `make render`"
    allowed = [a for a in allow_list().get("kubeconform") or [] if version in a.get("versions", VERSIONS)]
    report = kubeconform(version, files, schema_cache)
    used, bad = set(), []
    for res in report["resources"]:
        if res["status"] == "statusValid":
            continue
        rel = str(Path(res["filename"]).relative_to(RENDERED))
        hits = [i for i, a in enumerate(allowed) if fnmatch.fnmatch(rel, a["file"]) and a["match"] in res["msg"]]
        used.update(hits) if hits else bad.append(f"{rel}: {res['status']}: {res['msg']}")
    assert not bad, "\n".join(bad)
    stale = [a for i, a in enumerate(allowed) if i not in used]
    assert not stale, f"allow-list entries no longer needed on {version}: {stale}"
    assert report["summary"]["skipped"] == 0, report["summary"]
    assert report["summary"]["valid"] + report["summary"]["invalid"] == len(rendered_objects(files))


def test_kubeconform_rejects_what_the_api_server_would(tmp_path, schema_cache):
    """The suite can fail: an unknown field and a wrong type in a rendered Deployment."""
    src = next(f for f in rendered_files("1.37") if f.name.startswith("deployment-"))
    bad = tmp_path / "deployment-bad.yaml"
    text = src.read_text()
    bad.write_text(text.replace("spec:\n", "spec:\n  replicaz: 2\n", 1).replace("protocol: TCP", "protocol: 6", 1))
    report = kubeconform("1.37", [bad], schema_cache)
    assert report["summary"]["invalid"] == 1, report
    msg = report["resources"][0]["msg"]
    assert "replicaz" in msg or "additional properties" in msg.lower(), msg


def test_allow_list_entries_give_reasons():
    for suite, entries in allow_list().items():
        for entry in entries:
            assert entry["reason"].strip() and len(entry["reason"]) > 20, (suite, entry)


# ---- checkov ------------------------------------------------------------------------------
CHECKOV = Path(os.environ.get("JOBHANDLERS_CHECKOV") or REPO / ".venv-checkov" / "bin" / "checkov")


def checkov(root: Path) -> list[dict]:
    """checkov's failed checks on every manifest under root (its kubernetes framework, offline)."""
    assert CHECKOV.is_file(), f"{CHECKOV} missing: run `make checkov-venv`"
    proc = subprocess.run([str(CHECKOV), "-d", str(root), "--framework", "kubernetes", "--quiet", "--compact",
                           "--skip-download", "--output", "json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1) and proc.stdout.strip(), f"checkov exit {proc.returncode}: {proc.stderr[-3000:]}"
    reports = json.loads(proc.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    return [f for r in reports if r.get("check_type") == "kubernetes" for f in r["results"]["failed_checks"]]


def unique_manifests(root: Path, into: Path) -> dict[str, list[str]]:
    """One copy of each distinct rendered file under `into` (at the relative path of its first
    occurrence): the matrix renders most objects byte for byte the same for every version (1044
    files, 236 distinct). Returns each copy's relative path -> every path with its content."""
    first: dict[bytes, str] = {}
    same: dict[str, list[str]] = {}
    for f in sorted(root.rglob("*.yaml")):
        rel, body = f.relative_to(root).as_posix(), f.read_bytes()
        if body not in first:
            first[body] = rel
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            (into / rel).write_bytes(body)
        same.setdefault(first[body], []).append(rel)
    return same


def test_checkov_passes_every_rendered_manifest(tmp_path):
    """Every example x kube version: each failed check is on the allow-list (check id and file
    glob, with its reason), and every entry still matches a finding. checkov reads each distinct
    file once; a finding holds for every file with the same content (4.4x less of checkov)."""
    allowed = allow_list().get("checkov") or []
    used, bad = set(), []
    same = unique_manifests(RENDERED, tmp_path)
    assert sum(map(len, same.values())) == len(list(RENDERED.rglob("*.yaml")))
    findings = checkov(tmp_path)
    assert all(f["file_path"].lstrip("/") in same for f in findings), "a finding outside the copied files"
    for f in (dict(f, file_path=rel) for f in findings for rel in same[f["file_path"].lstrip("/")]):
        rel = f["file_path"]
        hits = [i for i, a in enumerate(allowed) if a["id"] == f["check_id"] and fnmatch.fnmatch(rel, a["file"])]
        used.update(hits) if hits else bad.append(f"{rel}: {f['check_id']} {f['check_name']} ({f['resource']})")
    assert not bad, f"{len(bad)} checkov findings not on tests/peer-suites-allow.yaml:\n" + "\n".join(sorted(bad))
    stale = [a for i, a in enumerate(allowed) if i not in used]
    assert not stale, f"allow-list entries no longer needed: {stale}"


def test_checkov_fails_what_it_should(tmp_path):
    """The suite can fail: a rendered Deployment with a privileged, escalating container."""
    src = next(f for f in rendered_files("1.37") if f.name.startswith("deployment-"))
    doc = yaml.safe_load(src.read_text())
    doc["spec"]["template"]["spec"]["containers"][0]["securityContext"].update(
        allowPrivilegeEscalation=True, privileged=True)
    (tmp_path / src.name).write_text(yaml.safe_dump(doc))
    ids = {f["check_id"] for f in checkov(tmp_path)}
    assert {"CKV_K8S_16", "CKV_K8S_20"} <= ids, ids
