"""Chart.yaml, values.yaml and values.schema.json: the contract files themselves."""

from __future__ import annotations

import json
from typing import Any, Iterator

import jsonschema
import pytest
from ruamel.yaml import YAML

from generator.render import helm

SCHEMA = json.loads((helm.CHART_DIR / "values.schema.json").read_text())
DEFAULTS = YAML(typ="safe").load((helm.CHART_DIR / "values.yaml").read_text())
# Objects whose keys Kubernetes owns, not the chart: left open on purpose.
# Kubernetes- or KEDA-typed objects passed through as given
OPEN = {"podSecurityContext", "containerSecurityContext", "securityContext", "affinity", "global", "scaleUp", "scaleDown",
        "advanced"}


def walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (key path, sub-schema) of the values schema."""
    for name, sub in (schema.get("properties") or {}).items():
        yield f"{path}.{name}", sub
        yield from walk(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield f"{path}.*", schema["additionalProperties"]
        yield from walk(schema["additionalProperties"], f"{path}.*")
    for sub in schema.get("anyOf", []):
        if "$ref" in sub:
            yield from walk(SCHEMA["definitions"][sub["$ref"].rsplit("/", 1)[1]], path)


KEYS = list(walk(SCHEMA))


def test_chart_yaml():
    chart = YAML(typ="safe").load((helm.CHART_DIR / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "jobhandlers"
    assert chart["kubeVersion"] == ">=1.16.0-0"


def test_schema_is_draft7_and_defaults_validate():
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    jsonschema.Draft7Validator(SCHEMA).validate(DEFAULTS)


def test_every_key_has_a_description():
    assert len(KEYS) > 80
    missing = [p for p, s in KEYS if not s.get("description")]
    assert not missing, missing


def test_every_duration_is_an_integer_with_a_minimum():
    durations = [(p, s) for p, s in KEYS if p.endswith("Seconds")]
    assert len(durations) >= 15
    bad = [p for p, s in durations if "integer" not in str(s.get("type")) or "minimum" not in s]
    assert not bad, bad


def test_chart_owned_objects_are_strict():
    loose = [p for p, s in KEYS if s.get("type") == "object" and "properties" in s and s.get("additionalProperties") is not False]
    assert not loose, loose
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["definitions"]["role"]["additionalProperties"] is False
    opened = {p.rsplit(".", 1)[1] for p, s in KEYS if s.get("type") == "object" and "properties" not in s and "additionalProperties" not in s}
    assert opened <= OPEN, opened - OPEN


def test_every_default_key_is_in_the_schema():
    def keys(data: Any, path: str = "") -> Iterator[str]:
        if isinstance(data, dict):
            for k, v in data.items():
                yield f"{path}.{k}"
                if k not in OPEN and not path.endswith((".resources", ".defaultResources", ".requests", ".limits", ".annotations")):
                    yield from keys(v, f"{path}.{k}")
    schema_paths = {p for p, _ in KEYS}
    generic = {p.replace(".handlers.web", ".handlers.*").replace(".handlers.job", ".handlers.*") for p in keys(DEFAULTS)}
    assert not generic - schema_paths, sorted(generic - schema_paths)


@pytest.mark.parametrize("example", helm.examples(), ids=lambda p: p.stem)
def test_examples_are_commented(example):
    lines = example.read_text().splitlines()
    # line 1: the editor modeline (completion and validation from the chart schema), then the title
    assert lines[0] == "# yaml-language-server: $schema=../chart/values.schema.json"
    assert (example.parent / lines[0].split("$schema=", 1)[1]).resolve() == helm.CHART_DIR / "values.schema.json"
    assert lines[1].startswith(f"# {example.name}")
    assert sum(1 for line in lines if line.lstrip().startswith("#")) >= 5
