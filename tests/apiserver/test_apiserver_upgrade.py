"""`helm upgrade` from every earlier release (releases.yaml) to this chart, in the API server.

For each values example a release shipped: `helm install --no-hooks` the release's chart with
the release's file, then `helm upgrade --no-hooks` to this chart twice: with the same file (what
only the chart changes) and with this checkout's version of the file (what the example's own
changes add). chart/lifecycle.yaml `upgrades.<release>` declares every deletion, creation and
pod-template change, each with why; anything else fails, and so does a declaration nothing
needs any more. Adding the next release: one line in releases.yaml and its `upgrades` entry.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from generator import changelog, charts, lifecycle, upgrades
from generator.render import helm
from api_oracle import dry_run
from helm_release import HelmRelease, Key
from kubeapi import ApiServer, MINOR
import releases
from releases import Release
from template_diff import changed
from unit_support import run_jh

CHART = charts.CHECKOUT_DIR
EXAMPLES_DIR = helm.EXAMPLES_DIR
CASES = [(r, name) for r in releases.releases() for name in releases.examples(r)]
WORKLOADS = ("Deployment", "StatefulSet")
_ns = itertools.count(1)


@dataclass
class Upgrade:
    """What the API server held at each step of one example's upgrade."""

    installed: dict[Key, dict[str, Any]]
    same_values: dict[Key, dict[str, Any]]
    hooks_before: set[Key]
    hooks_after: set[Key]
    fullname: str
    head_values: dict[Key, dict[str, Any]] | None = None  # None: the example is gone or not for MINOR


def declared(release: Release) -> dict[str, Any]:
    """chart/lifecycle.yaml upgrades.<version>; a release without one fails with the fix."""
    entry = (lifecycle.DATA.get("upgrades") or {}).get(release.version)
    assert entry is not None, (f"chart/lifecycle.yaml has no `upgrades` entry for {release.version}: "
                               f"declare what the upgrade from it re-creates and rolls")
    return entry


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Release], Path]:
    """Each release's chart/ and values-examples/, extracted once per session."""
    cache: dict[str, Path] = {}

    def get(release: Release) -> Path:
        if release.version not in cache:
            cache[release.version] = releases.extract(release, tmp_path_factory.mktemp(f"release-{release.version}"))
        return cache[release.version]
    return get


@pytest.fixture(scope="session")
def upgraded(api: ApiServer, trees: Callable[[Release], Path],
             tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Upgrade]:
    """Run (once per session) one example's install and upgrades: with helm 4 both upgrades,
    with helm 3 (`major=3`: a release installed and upgraded by helm 3) the same-values one."""
    cache: dict[tuple[str, str, int], Upgrade] = {}

    def run(release: Release, name: str, major: int = 4) -> Upgrade:
        if (release.version, name, major) in cache:
            return cache[(release.version, name, major)]
        old = trees(release)
        rel = HelmRelease(api, f"up-{next(_ns)}", tmp_path_factory.mktemp("helm"), major=major)
        rel.install(old / "chart", old / "values-examples" / name)
        installed, hooks_before = rel.objects(), set(rel.hooks())
        rel.upgrade(CHART, old / "values-examples" / name)
        result = Upgrade(installed, rel.objects(), hooks_before, set(rel.hooks()), _fullname(installed))
        head = EXAMPLES_DIR / name
        if major == 4 and head.is_file() and MINOR in helm.example_versions(head):
            rel.upgrade(CHART, head, *_kind_switch_ack(release, name, tmp_path_factory))
            result.head_values = rel.objects()
        cache[(release.version, name, major)] = result
        return result
    return run


def _kind_switch_ack(release: Release, name: str, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A values file with `kindSwitch.allowOverlap: true` for each role whose kind the example's new
    version switches (its declared -Deployment/<role> and +StatefulSet/<role>, or the reverse):
    the chart refuses that one-step switch otherwise (JH061: the old workload still has replicas)."""
    changes = set((declared(release).get("examples") or {}).get(name, {}).get("changes", []))
    gone = {tuple(c[1:].split("/", 1)) for c in changes if c.startswith("-")}
    made = {tuple(c[1:].split("/", 1)) for c in changes if c.startswith("+")}
    roles = sorted(role for kind, role in gone
                   if kind in WORKLOADS and (WORKLOADS[1 - WORKLOADS.index(kind)], role) in made)
    if not roles:
        return []
    path = tmp_path_factory.mktemp("ack") / "kind-switch.yaml"
    path.write_text(yaml.safe_dump({"handlers": {r: {"kindSwitch": {"allowOverlap": True}} for r in roles}}))
    return [path]


def _fullname(objects: dict[Key, dict[str, Any]]) -> str:
    """The release's full name: the name of its handlers' ServiceAccount."""
    names = [name for kind, name in objects if kind == "ServiceAccount"]
    assert names, sorted(objects)
    return min(names, key=len)


def _short(fullname: str, key: Key) -> str:
    """Kind/name without the release's fullname; a cluster-scoped object's name also starts with
    its release's namespace (<namespace>-<fullname>-..., an admission policy), left out too."""
    name = key[1].removeprefix(fullname + "-")
    if name == key[1]:
        name = re.sub(rf"^[a-z0-9-]*?-{re.escape(fullname)}-", "", name)
    return f"{key[0]}/{name}"


def _same_objects(before: dict[Key, dict[str, Any]], after: dict[Key, dict[str, Any]]) -> list[str]:
    """Objects kept by kind and name whose uid changed (deleted and created in one upgrade)."""
    return [f"{k[0]}/{k[1]}" for k in before.keys() & after.keys()
            if before[k]["metadata"]["uid"] != after[k]["metadata"]["uid"]]


def _rolls(before: dict[Key, dict[str, Any]], after: dict[Key, dict[str, Any]]) -> dict[Key, list[str]]:
    """Each workload kept across the upgrade whose pod template changed: the changed paths."""
    out = {}
    for key in sorted(before.keys() & after.keys()):
        if key[0] in WORKLOADS:
            paths = changed(before[key]["spec"]["template"], after[key]["spec"]["template"])
            if paths:
                out[key] = paths
    return out


def _undeclared_paths(paths: list[str], rolls: list[dict[str, Any]]) -> list[str]:
    return [p for p in paths if not any(upgrades.glob_match(g, p) for r in rolls for g in r["paths"])]


@pytest.mark.parametrize("major", [4, 3], ids=["helm4", "helm3"])
@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r.version}-{n.removesuffix('.yaml')}" for r, n in CASES])
def test_upgrade_with_the_same_values(upgraded: Callable[..., Upgrade], release: Release, name: str,
                                      major: int) -> None:
    """Only the chart changes: helm upgrades in place (no immutable field refused), deletes and
    creates only what `recreated` declares, and changes pod templates only where `rolls` says why;
    with helm 4 and with helm 3 (its three-way merge patches, not server-side apply)."""
    entry = declared(release)
    up = upgraded(release, name, major)
    gone = {_short(up.fullname, k) for k in up.installed.keys() - up.same_values.keys()}
    new = {_short(up.fullname, k) for k in up.same_values.keys() - up.installed.keys()}

    def allowed(short: str) -> bool:
        kind, _, rest = short.partition("/")
        return upgrades.recreation_declared(kind, rest, entry["recreated"])
    assert all(map(allowed, gone | new)), f"{name}: deleted {sorted(gone)}, created {sorted(new)}, undeclared"
    assert len(gone) == len(new), f"{name}: deleted {sorted(gone)} but created {sorted(new)}"
    assert not _same_objects(up.installed, up.same_values)
    for key, paths in _rolls(up.installed, up.same_values).items():
        assert not _undeclared_paths(paths, entry["rolls"]), (
            f"{name}: {key[0]}/{key[1]} rolls for {_undeclared_paths(paths, entry['rolls'])}, "
            f"which chart/lifecycle.yaml upgrades.{release.version}.rolls does not explain")
    # the migration hook keeps its name (hook mode: fixed; before-hook-creation replaces it)
    jobs_before = {k for k in up.hooks_before if k[0] == "Job"}
    assert jobs_before == {k for k in up.hooks_after if k[0] == "Job"}, (up.hooks_before, up.hooks_after)


@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r.version}-{n.removesuffix('.yaml')}" for r, n in CASES])
def test_upgrade_to_the_examples_new_version(upgraded: Callable[..., Upgrade], release: Release,
                                             name: str) -> None:
    """Then the example's own new version: every deletion and creation is in `examples.<name>`."""
    entry = declared(release)
    up = upgraded(release, name)
    assert up.head_values is not None, f"{name} is no longer an example for {MINOR}: say so in upgrades.examples"
    changes = sorted({f"-{_short(up.fullname, k)}" for k in up.same_values.keys() - up.head_values.keys()}
                     | {f"+{_short(up.fullname, k)}" for k in up.head_values.keys() - up.same_values.keys()})
    want = (entry.get("examples") or {}).get(name, {})
    assert changes == sorted(want.get("changes", [])), f"{name}: {changes}"
    assert not want or want["why"]
    assert not _same_objects(up.same_values, up.head_values)


def test_every_declaration_is_still_needed(upgraded: Callable[..., Upgrade]) -> None:
    """Each declared re-creation, roll reason and example change says why and happens in some example."""
    for release in releases.releases():
        entry = declared(release)
        for item in [*entry["recreated"], *entry["rolls"], *(entry.get("examples") or {}).values()]:
            assert str(item.get("why") or "").strip(), item
        ups = {name: upgraded(release, name) for name in releases.examples(release)}
        paths = [p for up in ups.values() for ps in _rolls(up.installed, up.same_values).values() for p in ps]
        for roll in entry["rolls"]:
            assert any(upgrades.glob_match(g, p) for g in roll["paths"] for p in paths), roll
        shorts = {_short(up.fullname, k) for up in ups.values() for k in up.installed.keys() ^ up.same_values.keys()}
        for r in entry["recreated"]:
            assert any(upgrades.recreation_declared(s.partition("/")[0], s.partition("/")[2], [r])
                       for s in shorts), r
        assert set(entry.get("examples") or {}) <= set(ups)


def _previous(since: str) -> Release:
    """The newest release before `since`."""
    older = [r for r in releases.releases() if upgrades.version_key(r.version) < upgrades.version_key(since)]
    assert older, f"no release before {since} in releases.yaml"
    return max(older, key=lambda r: upgrades.version_key(r.version))


def _changelog_section(version: str) -> str:
    """The CHANGELOG.md section of a version (`## <version> - <date>` or `## Unreleased (next:
    <version>)`), whitespace collapsed."""
    return " ".join(changelog.section(version).split())


REFUSALS = lifecycle.DATA.get("refusals") or []


@pytest.mark.parametrize("entry", REFUSALS, ids=[f"{e['since']}-{e['rules'][0]}-{i}" for i, e in enumerate(REFUSALS)])
def test_refusal_of_what_the_previous_release_accepted(api: ApiServer, trees: Callable[[Release], Path],
                                                       tmp_path: Path, entry: dict[str, Any]) -> None:
    """The example of each `refusals` entry: the previous release renders it and the API server
    says what `cluster` says; this chart's render and check refuse it, check with the CHANGELOG
    line, which the CHANGELOG's section says in these words."""
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(entry["example"]), encoding="utf-8")
    previous = trees(_previous(str(entry["since"]))) / "chart"
    verdict = dry_run(api, helm.render_text([values], kube_version=MINOR, chart=previous))
    assert verdict.accepted is (entry["cluster"] == "accepted"), f"cluster: {entry['cluster']}, {verdict.explain()}"
    with pytest.raises(helm.HelmRenderError):
        helm.render_text([values], kube_version=MINOR, chart=CHART)
    proc = run_jh("check", "--kube-version", MINOR, "--format", "json", str(values))
    found = json.loads(proc.stdout)["findings"]
    noted = [f for f in found if f["rule"] in entry["rules"] and entry["changelog"] in f["fix"]]
    assert proc.returncode == 1 and noted, proc.stdout
    assert " ".join(str(entry["changelog"]).split()) in _changelog_section(str(entry["since"]))
