"""generator.rules: every policy rule with a failing and a passing values file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator import model
from generator.check.full import check_file
from generator.findings import ERROR, WARNING
from generator.rules import RULES, RULES_BY_ID, check
from generator.values.full import parse_values

from unit_support import RULE_FIXTURES

RULE_IDS = [r.id for r in RULES]


def _kube(path: Path) -> str:
    m = re.search(r"# kube-version: (\S+)", path.read_text())
    return m.group(1) if m else model.DEFAULT_KUBE_VERSION


def _expected(path: Path) -> list[tuple[int, str]]:
    """(line, rule) for every `# expect: JHxxx` marker in a fixture."""
    return [(n, rule) for n, line in enumerate(path.read_text().splitlines(), 1)
            for m in [re.search(r"# expect: (.*)", line)] if m for rule in re.findall(r"JH\d+", m.group(1))]


def test_rule_ids_are_stable_and_documented() -> None:
    assert RULE_IDS == sorted(set(RULE_IDS)) and RULE_IDS[0] == "JH001"
    for rule in RULES:
        assert rule.title and rule.doc and rule.fix, rule.id
    warnings = ("JH010", "JH012", "JH013", "JH014", "JH017", "JH018", "JH021", "JH024", "JH026", "JH029", "JH030",
                "JH038", "JH042", "JH043", "JH048", "JH049", "JH057", "JH058", "JH059", "JH070", "JH073", "JH074")
    assert all(RULES_BY_ID[r].severity == WARNING for r in warnings)
    assert all(r.severity == ERROR for r in RULES if r.id not in warnings)


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_failing_file_reports_exactly_this_rule_at_the_marked_lines(rule_id: str) -> None:
    path = RULE_FIXTURES / f"{rule_id}-fail.yaml"
    findings = check_file(path, _kube(path))
    assert sorted((f.line, f.rule) for f in findings) == sorted(_expected(path)), findings
    for f in findings:
        assert f.message and f.fix and f.path and f.col > 0


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_passing_file_is_clean(rule_id: str) -> None:
    path = RULE_FIXTURES / f"{rule_id}-pass.yaml"
    assert check_file(path, _kube(path)) == []


def test_chart_defaults_pass_every_rule_on_every_version() -> None:
    vf = parse_values("{}\n", "empty.yaml")
    for version in model.KUBE_VERSIONS:
        assert check(vf, version) == [], version


def test_jh001_numbers_come_from_the_model() -> None:
    vf = parse_values("drain:\n  runtimeMultiplier: 1.1\nhandlers:\n  job:\n    maxJobRuntimeSeconds: 100\n"
                      "    terminationGracePeriodSeconds: 149\n", "v.yaml")
    [finding] = check(vf, "1.34")
    assert finding.rule == "JH001"
    assert model.computed_grace(100, 1.1, 30, 10) == 150
    assert "computed grace 150" in finding.message and "at least 150" in finding.fix
    ok = parse_values("drain:\n  runtimeMultiplier: 1.1\nhandlers:\n  job:\n    maxJobRuntimeSeconds: 100\n"
                      "    terminationGracePeriodSeconds: 150\n", "v.yaml")
    assert check(ok, "1.34") == []


def test_jh007_depends_on_the_target_version() -> None:
    vf = parse_values("startupProbe:\n  force: true\n", "v.yaml")
    assert [f.rule for f in check(vf, "1.16")] == ["JH007"]
    assert check(vf, "1.18") == []


def test_jh008_only_when_the_file_requests_probe_grace() -> None:
    # the chart default (30) is simply not rendered below 1.25; only an explicit request is an error
    assert check(parse_values("{}\n", "v.yaml"), "1.20") == []
    assert [f.rule for f in check(parse_values("liveness:\n  terminationGracePeriodSeconds: 5\n", "v.yaml"),
                                  "1.20")] == ["JH008"]


def test_jh009_empty_and_null_tags() -> None:
    for text in ('image:\n  tag: ""\n', "image:\n  tag: null\n", "image:\n  tag: latest\n"):
        assert [f.rule for f in check(parse_values(text, "v.yaml"), "1.34")] == ["JH009"], text


def test_violation_from_defaults_points_at_the_users_key() -> None:
    # the user raised the runtime; the explicit grace in the same file is where it is reported
    vf = parse_values("handlers:\n  web:\n    terminationGracePeriodSeconds: 70\n    maxJobRuntimeSeconds: 31\n",
                      "v.yaml")
    [finding] = check(vf, "1.34")
    assert (finding.rule, finding.line, finding.path) == ("JH001", 3, "handlers.web.terminationGracePeriodSeconds")


def test_mistyped_values_do_not_crash_rules() -> None:
    vf = parse_values("liveness:\n  maxAgeSeconds: soon\nhandlers:\n  job:\n    maxJobRuntimeSeconds: long\n", "v.yaml")
    assert [f.rule for f in check(vf, "1.34")] == []  # the schema reports these


DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_jh009_not_with_a_digest() -> None:
    # repository@digest is pinned whatever the tag says
    for text in (f'image:\n  tag: ""\n  digest: {DIGEST}\n', f"image:\n  tag: latest\n  digest: {DIGEST}\n"):
        assert check(parse_values(text, "v.yaml"), "1.34") == [], text


@pytest.mark.parametrize(("tag", "digest_in_fix"), [
    (f"1@{DIGEST}", True), ("1:2", False), (".hidden", False), ("v1+build", False), ("a" * 129, False)])
def test_jh028_tags_that_are_not_tags(tag: str, digest_in_fix: bool) -> None:
    [finding] = check(parse_values(f"image:\n  tag: {tag!r}\n", "v.yaml"), "1.34")
    assert finding.rule == "JH028" and finding.path == "image.tag"
    assert (f"image.digest: {DIGEST!r}" in finding.fix) is digest_in_fix
    assert ("holds a digest" in finding.message) is digest_in_fix


def test_jh028_accepts_real_tags() -> None:
    for tag in ("2", "v1.2.3-rc.1", "1_2", "_x", "a" * 128):
        assert check(parse_values(f"image:\n  tag: {tag!r}\n", "v.yaml"), "1.34") == [], tag


@pytest.mark.parametrize(("version", "fires"), [("1.26", True), ("v1.26.9-eks-1", True), ("1.27", False)])
def test_jh029_only_below_127(version: str, fires: bool) -> None:
    vf = parse_values("handlers:\n  web:\n    pdb:\n      unhealthyPodEvictionPolicy: AlwaysAllow\n", "v.yaml")
    assert [f.rule for f in check(vf, version)] == (["JH029"] if fires else [])
    # the chart default AlwaysAllow is simply not rendered there: no finding for a file that does not ask
    assert check(parse_values("{}\n", "v.yaml"), version) == []


def test_jh029_a_role_override_wins_over_the_chart_wide_key() -> None:
    text = ("pdb:\n  unhealthyPodEvictionPolicy: AlwaysAllow\n"
            "handlers:\n  web:\n    pdb:\n      unhealthyPodEvictionPolicy: IfHealthyBudget\n")
    [finding] = check(parse_values(text, "v.yaml"), "1.26")
    assert finding.path == "pdb.unhealthyPodEvictionPolicy" and "role job " in finding.message


def test_jh030_only_for_failed_below_129() -> None:
    fail = parse_values("migration:\n  podReplacementPolicy: Failed\n", "v.yaml")
    assert [f.rule for f in check(fail, "1.28")] == ["JH030"] and check(fail, "1.29") == []
    other = parse_values("migration:\n  podReplacementPolicy: TerminatingOrFailed\n", "v.yaml")
    assert check(other, "1.28") == []
    off = parse_values("migration:\n  enabled: false\n  podReplacementPolicy: Failed\n", "v.yaml")
    assert check(off, "1.28") == []


@pytest.mark.parametrize(("version", "seconds", "fires"), [
    ("1.29", 5, True), ("1.30", 5, False), ("1.32", 0, True), ("1.33", 0, False)])
def test_jh031_sleep_action_by_version(version: str, seconds: int, fires: bool) -> None:
    text = ("migration:\n  sidecars:\n    - name: proxy\n      image: p:1\n      lifecycle:\n        preStop:\n"
            f"          sleep:\n            seconds: {seconds}\n")
    findings = [f for f in check(parse_values(text, "v.yaml"), version) if f.rule not in ("JH016", "JH074")]
    assert [(f.rule, f.path) for f in findings] == (
        [("JH031", "migration.sidecars[0].lifecycle.preStop.sleep.seconds")] if fires else [])


def test_jh032_quantities_are_compared_exactly() -> None:
    assert model.parse_quantity("128Mi") == 128 * 2**20 and model.parse_quantity("100m") * 10 == 1
    assert model.parse_quantity("0.125Gi") == model.parse_quantity("128Mi")
    assert model.parse_quantity("1e3") == model.parse_quantity("1k") == 1000
    with pytest.raises(ValueError):
        model.parse_quantity("12 MB")
    equal = parse_values("handlers:\n  job:\n    resources:\n      limits:\n        memory: 0.125Gi\n", "v.yaml")
    assert check(equal, "1.34") == []  # requests 128Mi == limits 0.125Gi
    over = parse_values("handlers:\n  job:\n    resources:\n      limits:\n        memory: 127Mi\n", "v.yaml")
    assert [(f.rule, f.path) for f in check(over, "1.34")] == [("JH032", "handlers.job.resources.limits.memory")]
    # own limits without requests (an empty-by-default role): Kubernetes uses the limit, no default is merged
    web = parse_values("handlers:\n  web:\n    resources:\n      limits:\n        memory: 16Mi\n", "v.yaml")
    assert check(web, "1.34") == []
def test_env_references_follow_kubernetes_expansion() -> None:
    assert model.env_references("$(A)/x-$(B_2)") == ["A", "B_2"]
    assert model.env_references("$$(A) $$$(B) $(C") == ["B"]  # $$ escapes; an unclosed $( is literal
    assert model.env_references("$A ${B} $") == []


def _jh026(text: str) -> list[str]:
    return [f.message for f in check(parse_values(text, "v.yaml"), "1.34") if f.rule == "JH026"]


def test_jh026_names_the_containers_where_a_reference_stays_literal() -> None:
    [msg] = _jh026("env:\n  - {name: X, value: '$(JOBHANDLERS_ROLE)-x'}\n")
    assert "in migration Job: wait-for-database, migration Job: migrate, helm test: schema-check (" in msg
    assert "(only in role job: job, role job: wait-for-migrations, role web: web" in msg
    # the chart's shared variables are defined in every container, before the user's env
    assert _jh026("env:\n  - {name: X, value: '$(JOBHANDLERS_STATE_DIR)/f'}\n  - {name: Y, value: '$(X)/g'}\n"
                  "migration:\n  env:\n    - {name: Z, value: '$(HEARTBEAT_INTERVAL_SECONDS)$(DATABASE_URL)'}\n") == []


def test_jh026_follows_what_the_chart_renders() -> None:
    # no migration Job, no helm test: a role variable in the chart-wide env is fine
    text = "env:\n  - {name: X, value: '$(DRAIN_DEADLINE_SECONDS)'}\n"
    assert _jh026(text)
    assert _jh026(text + "migration:\n  enabled: false\nhelmTest:\n  enabled: false\n") == []
    # WAIT_TIMEOUT_SECONDS exists in wait-for-migrations only
    [msg] = _jh026("handlers:\n  job:\n    env:\n      - {name: X, value: '$(WAIT_TIMEOUT_SECONDS)'}\n")
    assert "in role job: job (only in role job: wait-for-migrations)" in msg
    # envFrom may define names the chart cannot see, but never the chart's own
    src = "handlers:\n  job:\n    envFrom: [{configMapRef: {name: c}}]\n    env:\n      - {name: X, value: '$(%s)'}\n"
    assert _jh026(src % "FROM_CONFIGMAP") == [] and _jh026(src % "WAIT_TIMEOUT_SECONDS")


def test_jh026_reports_extra_containers_at_their_own_key() -> None:
    vf = parse_values("migration:\n  extraInitContainers:\n    - name: render\n      image: x:1\n      env:\n"
                      "        - {name: OUT, value: '$(JOBHANDLERS_STATE_DIR)/conf'}\n", "v.yaml")
    [f] = [f for f in check(vf, "1.34") if f.rule != "JH074"]  # the bare container's own finding
    assert (f.rule, f.line, f.path) == ("JH026", 6, "migration.extraInitContainers[0].env[0].value")
    assert "migration Job: init container render" in f.message


def test_jh076_judges_only_what_the_chart_renders() -> None:
    """A disabled role renders no container, so its privileged securityContext is no refusal."""
    text = "handlers:\n  web:\n    enabled: {}\n    securityContext:\n      privileged: true\n"
    assert "JH076" not in {f.rule for f in check(parse_values(text.format("false"), "v.yaml"), "1.37")}
    assert "JH076" in {f.rule for f in check(parse_values(text.format("true"), "v.yaml"), "1.37")}
