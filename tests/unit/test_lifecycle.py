"""chart/lifecycle.yaml is the one source: the chart and the tool take their gates, kinds,
fallbacks and rules from it, and nothing else in the chart names a version or a rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from generator import charts, lifecycle, model, refdocs, rules

CHART = charts.CHECKOUT_DIR
TEMPLATES = sorted(p for p in (CHART / "templates").rglob("*") if p.is_file())
TEXT = {p: p.read_text(encoding="utf-8") for p in TEMPLATES}


def _all_text() -> str:
    return "\n".join(TEXT.values())


def test_every_rule_has_one_check_and_one_entry():
    assert set(rules._CHECKS) == set(lifecycle.RULES)
    assert [r.id for r in rules.RULES] == list(lifecycle.RULES)
    for rule_id, meta in lifecycle.RULES.items():
        assert re.fullmatch(r"JH\d{3}", rule_id)
        assert meta["severity"] in ("error", "warning"), rule_id
        assert meta["title"] and meta["when"] and meta["fix"], rule_id
        assert isinstance(meta["chart"], bool), rule_id


def test_the_rules_the_chart_refuses_are_exactly_those_marked_chart():
    named = set(re.findall(r"\(jobhandlers check: (JH\d{3})\)", (CHART / "templates" / "_checks.tpl").read_text()))
    assert named == set(lifecycle.chart_rules())
    # every refusal lives in _checks.tpl (collected and reported at once), nowhere else
    for path, text in TEXT.items():
        if path.name not in ("_checks.tpl", "checks.yaml", "_lifecycle.tpl"):
            assert "{{- fail" not in text and "{{ fail" not in text, path


def test_every_gate_the_chart_asks_for_exists_and_every_gate_is_used():
    asked = set(re.findall(r'include "jobhandlers\.gate(?:\.version)?" \(list [^ ]+ "(\w+)"\)', _all_text()))
    assert asked == set(lifecycle.GATES)


def test_no_version_literal_outside_the_data():
    """Every semverCompare goes through jobhandlers.gate (or the user's startupProbe.minKubeVersion)."""
    for path, text in TEXT.items():
        for line in text.splitlines():
            if "kubeAtLeast" in line and "define" not in line and "include \"jobhandlers.kubeAtLeast\"" in line:
                assert "minKubeVersion" in line or "gate.version" in line, (path, line)
            if "semverCompare" in line:
                assert path.name == "_lifecycle.tpl", (path, line)
            assert not re.search(r'MinKubeVersion" -}}\d', line), (path, line)


def test_gates_are_well_formed_and_the_model_takes_them():
    for name, gate in lifecycle.GATES.items():
        assert re.fullmatch(r"1\.\d+", str(gate["minKubeVersion"])), name
        assert gate["below"], name
    assert model.GRPC_PROBE_MIN_VERSION == lifecycle.min_version("grpcProbe")
    assert model.ORDINAL_MIN_VERSION == lifecycle.min_version("podIndexLabel")
    assert model.DEFAULT_KUBE_VERSION in model.KUBE_VERSIONS


def test_drain_fallback_matches_the_values_defaults():
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["drain"]
    for key, value in lifecycle.DATA["drain"]["fallback"].items():
        assert defaults[key] == value, key
    assert defaults["mode"] in lifecycle.DATA["drain"]["modes"]


def test_schema_lists_come_from_the_data():
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert lifecycle.sync_schema(json.loads(json.dumps(schema))) == schema
    pairs = schema["definitions"]["oneProbeHandler"]["not"]["anyOf"]
    kinds = lifecycle.DATA["probe"]["handlerKinds"]
    assert len(pairs) == len(kinds) * (len(kinds) - 1) // 2


def test_schema_sync_follows_a_new_handler_kind():
    """Adding a handler kind is one data entry: the schema's pairs grow with it."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    saved = list(lifecycle.DATA["probe"]["handlerKinds"])
    try:
        lifecycle.DATA["probe"]["handlerKinds"].append("sleepy")
        pairs = lifecycle.sync_schema(schema)["definitions"]["oneProbeHandler"]["not"]["anyOf"]
    finally:
        lifecycle.DATA["probe"]["handlerKinds"][:] = saved
    assert {"required": ["exec", "sleepy"]} in pairs and {"required": ["heartbeat", "sleepy"]} in pairs


def test_reference_docs_are_fresh():
    path = Path(charts.CHECKOUT_DIR).parent / "docs" / "rules.md"
    assert path.read_text(encoding="utf-8") == refdocs.rules_markdown(), "run python -m generator.refdocs"
    for rule_id in lifecycle.RULES:
        assert f"| {rule_id} |" in path.read_text()
