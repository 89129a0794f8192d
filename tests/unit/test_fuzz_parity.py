"""Property (issue 22): `jobhandlers check` refuses a values file exactly when the chart does.

Two sources of values files, each on an old (< 1.29) and a new kube version: the values
examples (and chart/values.yaml) with one to four lifecycle settings changed
(fuzz_support.lifecycle_mutations), and files drawn from chart/values.schema.json itself
(schema_values.schema_values: every key the schema knows, a few at a time). check's
errors from the rules the chart also enforces at render time, from the schema or from the
input, are non-empty exactly when the real `helm template` fails. So a clean check means
helm renders, and what the chart refuses, check refuses. When helm renders, its roles,
graces and drain deadlines are the model's. Policy-only errors (JH002, JH003,
JH009 …: the chart renders those values, check refuses them) and warnings are aside. Keys of
earlier releases (JH060) ride on the mutated examples, against a chart with deprecation entries.

Seeded and bounded in `make test` (the "ci" profile), wider in `make fuzz`. Counter-examples
the property shrank to are kept in fixtures/parity/ and replayed below."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from fuzz_support import (PARITY_VERSIONS_NEW, PARITY_VERSIONS_OLD, assert_no_crash, lifecycle_mutations,
                          run_inprocess, scaled)
from generator import lifecycle, model
from generator.render import helm
from generator.invariants import deployments_by_role, env_value, pod_spec, role_container
from generator.values.full import load_values
from generator.values.merge import merged
from schema_values import schema_values
from deprecation_support import chart_with_deprecations

PARITY_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parity"
# Rules the chart enforces itself (chart/templates/_checks.tpl): `chart: true` in chart/lifecycle.yaml.
CHART_RULES = frozenset(lifecycle.chart_rules())

# fixture -> kube version -> helm renders it (and so check passes it); what each one was.
EXPECTED: dict[str, dict[str, bool]] = {
    # check passed, the chart refused: a disabled role's explicit grace below the computed
    # one. The chart was wrong (a disabled role renders no pod); now both pass it.
    "disabled-role-short-grace.yaml": {"1.20": True, "1.34": True},
    # check passed (a JH013 warning), the chart refused: two handlers in one probe block;
    # now values.schema.json refuses it for both.
    "two-handlers-role-readiness.yaml": {"1.20": False, "1.34": False},
    "two-handlers-chart-liveness.yaml": {"1.20": False, "1.34": False},
    # check passed (JH009 aside), the chart crashed: a null deleted a block or a formula key
    # the chart reads; values.schema.json now requires them.
    "null-image-block.yaml": {"1.20": False, "1.34": False},
    "null-drain-buffer.yaml": {"1.20": False, "1.34": False},
    # check passed, the chart refused: a grpc startupProbe where no startupProbe is rendered.
    "grpc-startup-probe-not-rendered.yaml": {"1.16": True, "1.20": False, "1.34": True},
    # drawn from values.schema.json: check passed, helm's YAML parse failed on a value the
    # chart wrote unquoted (now quoted) or a name no Kubernetes object can have (now a pattern).
    "image-repository-block-indicator.yaml": {"1.20": True, "1.37": True},
    "fullname-override-not-a-name.yaml": {"1.20": False, "1.37": False},
}


@pytest.fixture(scope="module", autouse=True)
def _helm() -> None:
    """The property needs the real helm: a failure, never a skip, without it."""
    try:
        helm.find_helm()
    except helm.HelmNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


def outcome(path: Path, version: str) -> tuple[list[str], str]:
    """(check's refusing errors as rule ids, helm's error message or "" when it renders)."""
    run = run_inprocess("check", str(path), "--format", "json", "--kube-version", version)
    assert_no_crash(run, timed=False)
    doc = json.loads(run.out)
    refusing = sorted({f["rule"] for f in doc["findings"] if f["severity"] == "error"
                       and (f["rule"] in CHART_RULES or f["rule"].startswith(("JHS", "JHY")))})
    if run.rc == 0:
        assert not refusing, run.out
    try:
        text = helm.render_text([path], kube_version=version)
    except helm.HelmRenderError as exc:
        return refusing, exc.message or "helm failed"
    assert_model_numbers(path, helm.parse_manifests(text))
    return refusing, ""


def assert_model_numbers(path: Path, objects: list[dict[str, Any]]) -> None:
    """What helm rendered has the model's roles, graces and drain deadlines (the numbers
    check and `jobhandlers grace` report)."""
    values = merged(load_values(path).data)
    rendered = deployments_by_role(objects)
    assert sorted(rendered) == model.enabled_roles(values), path.read_text()
    for role, deployment in rendered.items():
        grace = model.role_grace(values, role)
        got = (pod_spec(deployment)["terminationGracePeriodSeconds"],
               env_value(role_container(deployment), "DRAIN_DEADLINE_SECONDS"))
        assert got == (grace.effective, str(grace.drain_deadline)), (role, path.read_text())


def assert_parity(path: Path, version: str) -> bool:
    """check refuses exactly when helm does; returns whether helm renders."""
    refusing, helm_error = outcome(path, version)
    assert bool(refusing) == bool(helm_error), (
        f"kube {version}: check {'refuses (' + ', '.join(refusing) + ')' if refusing else 'passes'}, "
        f"helm {'refuses: ' + helm_error[:600] if helm_error else 'renders'}\n--- values:\n{path.read_text()}")
    return not helm_error


@settings(max_examples=scaled(25), deadline=None)
@given(lifecycle_mutations(), st.sampled_from(PARITY_VERSIONS_OLD), st.sampled_from(PARITY_VERSIONS_NEW))
def test_check_refuses_exactly_what_the_chart_refuses(case: tuple[str, dict[str, Any]], old: str, new: str) -> None:
    _, values = case
    with tempfile.TemporaryDirectory(prefix="jh-parity-") as tmp:
        path = Path(tmp) / "values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        for version in (old, new):
            event("helm renders" if assert_parity(path, version) else "both refuse")  # --hypothesis-show-statistics


@settings(max_examples=scaled(15), deadline=None)
@given(schema_values(), st.sampled_from(PARITY_VERSIONS_OLD), st.sampled_from(PARITY_VERSIONS_NEW))
def test_check_refuses_exactly_what_the_chart_refuses_schema_values(values: dict[str, Any], old: str,
                                                                    new: str) -> None:
    with tempfile.TemporaryDirectory(prefix="jh-parity-") as tmp:
        path = Path(tmp) / "values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False, allow_unicode=True), encoding="utf-8")
        for version in (old, new):
            event("helm renders" if assert_parity(path, version) else "both refuse")


def test_every_fixture_is_listed() -> None:
    assert sorted(p.name for p in PARITY_FIXTURES.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parity_fixture(name: str) -> None:
    for version, renders in EXPECTED[name].items():
        assert assert_parity(PARITY_FIXTURES / name, version) is renders, (name, version)


@pytest.fixture(scope="module")
def deprecated_chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart with two deprecation entries (deprecation_support: the real table is empty)."""
    return chart_with_deprecations(tmp_path_factory.mktemp("deprecations"))


@settings(max_examples=scaled(6), deadline=None)
@given(lifecycle_mutations(), st.sets(st.sampled_from(["web", "job"])), st.booleans(),
       st.sampled_from(PARITY_VERSIONS_OLD + PARITY_VERSIONS_NEW))
def test_check_and_the_chart_name_the_same_old_keys(deprecated_chart: Path, case: tuple[str, dict[str, Any]],
                                                    roles: set[str], legacy: bool, version: str) -> None:
    """Keys of earlier releases (JH060) in otherwise mutated values: check refuses exactly when the
    chart does, and when the chart's own checks run, both name the same old key paths."""
    _, values = case
    handlers = values.setdefault("handlers", {}) or {}
    values["handlers"] = handlers
    for role in sorted(roles):
        handlers[role] = {**(handlers.get(role) or {}), "runtimeSeconds": 60}
    if legacy:
        values["legacyProbe"] = {"path": "/x"}
    with tempfile.TemporaryDirectory(prefix="jh-parity-") as tmp:
        path = Path(tmp) / "values.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        run = run_inprocess("check", "--chart", str(deprecated_chart), str(path), "--format", "json",
                            "--kube-version", version)
        assert_no_crash(run, timed=False)
        found = json.loads(run.out)["findings"]
        refusing = {f["rule"] for f in found if f["severity"] == "error"
                    and (f["rule"] in CHART_RULES | {"JH060"} or f["rule"].startswith(("JHS", "JHY")))}
        try:
            helm.render_text([path], kube_version=version, chart=deprecated_chart)
            helm_error = ""
        except helm.HelmRenderError as exc:
            helm_error = exc.message or "helm failed"
        assert bool(refusing) == bool(helm_error), (refusing, helm_error[:600], path.read_text())
        if helm_error and "values don't meet the specifications" not in helm_error:  # the templates ran
            chart_paths = set(re.findall(r"jobhandlers: (\S+) was (?:renamed to \S+|removed) in chart", helm_error))
            assert chart_paths == {f["path"] for f in found if f["rule"] == "JH060"}, helm_error[:600]
            event(f"{len(chart_paths)} old keys")
