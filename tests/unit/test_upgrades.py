"""Keys of earlier releases (generator/upgrades.py, templates/_deprecations.tpl): a renamed or
removed key fails `check` and the render alike, with the old path, the new one and the fix,
collected with every other problem; `check --from-version` lists what to change."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator import charts, lifecycle, upgrades
from generator.render import helm
from generator.findings import Finding

from deprecation_support import ENTRIES, chart_with_deprecations
from unit_support import run_jh

VALUES = """\
handlers:
  job:
    runtimeSeconds: 100
  web:
    runtimeSeconds: 20
legacyProbe: {path: /x}
image:
  tag: "1@sha256:abababababababababababababababababababababababababababababababab"
"""


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return chart_with_deprecations(tmp_path_factory.mktemp("deprecations"))


@pytest.fixture()
def values(tmp_path: Path) -> Path:
    path = tmp_path / "old.yaml"
    path.write_text(VALUES, encoding="utf-8")
    return path


def test_the_render_fails_once_with_every_old_key(chart: Path, values: Path) -> None:
    with pytest.raises(helm.HelmRenderError) as err:
        helm.render_text([values], chart=chart)
    message = err.value.message
    assert "4 problems in the values" in message, message
    for old, new in (("handlers.job.runtimeSeconds", "renamed to handlers.job.maxJobRuntimeSeconds"),
                     ("handlers.web.runtimeSeconds", "renamed to handlers.web.maxJobRuntimeSeconds"),
                     ("legacyProbe", "removed")):
        assert f"jobhandlers: {old} was {new} in chart 0.3.0. Fix: " in message, message
    assert message.count("(jobhandlers check: JH060)") == 3
    assert "move the number to handlers.<role>.maxJobRuntimeSeconds" in message
    assert "CHANGELOG: `image.tag` must be a tag" in message  # the refusal next to them, with its line


def test_check_reports_each_old_key_at_its_line(chart: Path, values: Path) -> None:
    proc = run_jh("check", "--chart", str(chart), "--format", "json", str(values))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = [Finding(**f) for f in json.loads(proc.stdout)["findings"]]
    jh060 = sorted((f.line, f.path, f.message) for f in found if f.rule == "JH060")
    assert jh060 == [(3, "handlers.job.runtimeSeconds",
                      "`handlers.job.runtimeSeconds` was renamed to `handlers.job.maxJobRuntimeSeconds` in chart 0.3.0"),
                     (5, "handlers.web.runtimeSeconds",
                      "`handlers.web.runtimeSeconds` was renamed to `handlers.web.maxJobRuntimeSeconds` in chart 0.3.0"),
                     (6, "legacyProbe", "`legacyProbe` was removed in chart 0.3.0")]
    assert {f.rule for f in found} == {"JH060", "JH028"}, found  # accepted by the schema: no JHS001


def test_from_version_lists_what_to_change(chart: Path, values: Path) -> None:
    proc = run_jh("check", "--chart", str(chart), "--from-version", "0.2.0", str(values))
    assert proc.returncode == 1
    assert proc.stdout.count(" error JH060 ") == 3 and "refused since chart 0.3.0, earlier releases rendered it and the API server refused it; CHANGELOG:" in proc.stdout
    assert "upgrading from chart 0.2.0: 4 value(s) to change first, 4 of them" in proc.stdout, proc.stdout


def test_an_unknown_from_version_is_unusable_input(values: Path) -> None:
    proc = run_jh("check", "--from-version", "0.0.9", str(values))
    assert proc.returncode == 2 and "not a release this chart upgrades from" in proc.stderr
    assert proc.stdout == ""


def test_the_real_chart_has_no_such_keys(values: Path) -> None:
    """Without the entries the same keys are unknown keys (the schema), not JH060."""
    proc = run_jh("check", "--format", "json", str(values))
    rules = sorted({f["rule"] for f in json.loads(proc.stdout)["findings"]})
    assert proc.returncode == 1 and rules == ["JH028", "JHS001"], proc.stdout


def test_the_schema_accepts_exactly_the_deprecated_keys(chart: Path) -> None:
    """sync_schema adds each old path as `deprecated: true`, and drops it again with its entry."""
    schema = json.loads((chart / "values.schema.json").read_text())
    role = schema["definitions"]["role"]["properties"]
    assert role["runtimeSeconds"]["deprecated"] is True and schema["properties"]["legacyProbe"]["deprecated"]
    again = lifecycle.sync_schema(json.loads(json.dumps(schema)), {**lifecycle.DATA, "deprecations": []})
    assert "runtimeSeconds" not in again["definitions"]["role"]["properties"]
    assert "legacyProbe" not in again["properties"]


def test_a_deprecation_without_a_parent_in_the_schema_is_refused() -> None:
    schema = json.loads((charts.CHECKOUT_DIR / "values.schema.json").read_text())
    with pytest.raises(ValueError, match="no parent object"):
        lifecycle.sync_schema(schema, {**lifecycle.DATA, "deprecations": [{**ENTRIES[0], "path": "nope.x.y"}]})


@pytest.mark.parametrize(("pattern", "text", "hit"), [
    ("*env[*].name", "handlers.web.env[0].name", True), ("*env[*].name", "env[12].name", True),
    ("*env[*].name", "envX", False), ("image.tag", "image.tags", False), ("*replicas", "handlers.job.replicas", True)])
def test_glob_match(pattern: str, text: str, hit: bool) -> None:
    assert upgrades.glob_match(pattern, text) is hit


def test_refusal_entries_are_well_formed() -> None:
    """Every refusal names rules, paths, a since release and its CHANGELOG line; its message is a regex."""
    for entry in lifecycle.DATA["refusals"]:
        assert entry["rules"] and entry["paths"] and entry["changelog"] and re.compile(entry.get("message") or "")
        assert any(upgrades.version_key(str(entry["since"])) > upgrades.version_key(r) for r in upgrades.releases())
