"""Validate values against the chart's values.schema.json (the very file helm uses) and map every
jsonschema error to file:line:col and the dotted key path."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import jsonschema
from jsonschema.exceptions import ValidationError

from . import charts
from .charts import cache as chartcache
from .findings import ERROR, INPUT, SCHEMA, Finding, dotted
from .values.file import ValuesFile
from .values.merge import merged

SCHEMA_FILE = charts.DEFAULT_DIR / "values.schema.json"  # the shipped chart's; validate() uses the active chart's


class SchemaUnavailable(Exception):
    """chart/values.schema.json is missing or not a valid JSON Schema."""


@lru_cache(maxsize=4)
def load_validator(schema_file: Path = SCHEMA_FILE) -> Any:
    """A jsonschema validator for the chart schema, of the draft the schema declares."""
    try:
        schema = json.loads(schema_file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SchemaUnavailable(f"{schema_file} not found") from exc
    except (OSError, ValueError) as exc:
        raise SchemaUnavailable(f"{schema_file}: {exc}") from exc
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaUnavailable(f"{schema_file}: invalid schema: {exc.message}") from exc
    return cls(schema)


def _extra_keys(err: ValidationError) -> list[str]:
    """Keys named by an additionalProperties error."""
    if not isinstance(err.instance, dict):
        return []
    props = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
    patterns = list((err.schema.get("patternProperties") or {}).keys()) if isinstance(err.schema, dict) else []
    return [k for k in err.instance if k not in props and not any(re.search(p, k) for p in patterns)]


def _fix_for(err: ValidationError, key: str | None = None) -> str:
    """A short, concrete fix for a schema error."""
    v = err.validator
    if v == "additionalProperties":
        return f"remove `{key}` or correct its spelling (see chart/values.yaml for the keys)"
    if v == "type":
        want = err.validator_value
        wants = want if isinstance(want, list) else [want]
        if "string" in wants and isinstance(err.instance, (int, float, bool)):
            return "quote the value (YAML reads 1.10 as the number 1.1 and yes/no as booleans)"
        return f"use a value of type {' or '.join(map(str, wants))}"
    if v == "required":
        return "add the missing key"
    if v == "enum":
        return f"use one of {', '.join(json.dumps(x) for x in err.validator_value)}"
    if v == "maximum" and err.validator_value == INT32_MAX:
        return f"use at most {INT32_MAX}: Kubernetes stores this field as a 32-bit integer and refuses more"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"use a value within the bound ({v} {err.validator_value})"
    if v == "pattern":
        words = _PATTERN_WORDS.get(err.validator_value)
        return words if words else f"match the pattern {err.validator_value}"
    return "see the key's description in chart/values.schema.json"


def _one_of_keys(err: ValidationError) -> list[str]:
    """The keys of a oneOf whose branches each require one key (exactly one of them must be set)."""
    branches = err.validator_value if err.validator == "oneOf" else None
    if not isinstance(branches, list) or not all(isinstance(b, dict) and list(b) == ["required"]
                                                   and len(b["required"]) == 1 for b in branches):
        return []
    return [b["required"][0] for b in branches]


INT32_MAX = 2147483647

# Patterns values.schema.json uses for Kubernetes names, in words.
_PATTERN_WORDS = {
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$":
        "use a Kubernetes label or annotation key: an optional DNS subdomain prefix and '/', then at most 63 "
        "letters, digits, '-', '_' or '.', starting and ending with a letter or digit (e.g. app.example.com/tier)",
    "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$":
        "use a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
        "letter or digit, or \"\" (quote it)",
    "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$":
        "use a Kubernetes name (DNS-1123 label): at most 63 lowercase letters, digits and '-', starting and "
        "ending with a letter or digit",
    "^[ -<>-~]+$":
        "use printable ASCII other than '=' (the API server refuses '=' and non-ASCII in a variable name)",
    "^[ -<>-~]*$":
        "use printable ASCII other than '=' (the API server refuses '=' and non-ASCII in a variable prefix)",
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$":
        "use a Kubernetes name (DNS-1123 label): lowercase letters, digits and '-', starting and "
        "ending with a letter or digit, or \"\" for the default",
    "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$":
        "use the name of a Kubernetes object (DNS-1123 subdomain): lowercase letters, digits, '-' "
        "and '.', starting and ending with a letter or digit, or \"\" for none",
}


def _together(err: ValidationError) -> list[str]:
    """Keys a `not: {anyOf: [{required: [a, b]}, ...]}` forbids together (e.g. two handlers in
    one probe, oneProbeHandler) that the value names, in its own order; [] otherwise."""
    if err.validator != "not" or not isinstance(err.instance, dict) or not isinstance(err.validator_value, dict):
        return []
    listed = {k for branch in err.validator_value.get("anyOf") or [] if isinstance(branch, dict)
              for k in branch.get("required") or []}
    return [k for k in err.instance if k in listed]


def _required_key(err: ValidationError) -> str | None:
    """The missing key of a `required` error, else None."""
    if err.validator != "required":
        return None
    m = re.match(r"'(.+)' is a required property$", err.message)
    return m.group(1) if m else None


def _nulled(vf: ValuesFile, err: ValidationError) -> list[Any] | None:
    """For a `required` error, the key path when the user's file sets that key to null (helm's
    coalescing deletes the chart's default then, like the merge here); else None."""
    key = _required_key(err)
    if key is None:
        return None
    key_path = list(err.absolute_path) + [key]
    node: Any = vf.data
    for part in key_path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return key_path if node is None else None


def _expand(err: ValidationError) -> list[ValidationError]:
    """anyOf/oneOf errors: when exactly one branch fits the value's type (e.g. role object
    vs null), report that branch's own errors instead of the whole value."""
    if err.validator in ("anyOf", "oneOf") and err.context:
        branches: dict[object, list[ValidationError]] = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        viable = [errs for errs in branches.values()
                  if not any(e.validator == "type" and not e.relative_path for e in errs)]
        if len(viable) == 1:
            return [leaf for sub in viable[0] for leaf in _expand(sub)]
    return [err]


@lru_cache(maxsize=4)
def _compiled(chart_dir: Path) -> Any:
    """The precomputed module (charts/_cache.py) when it was built from `chart_dir`, else None."""
    return chartcache.load(chart_dir)


def _passes_compiled(chart_dir: Path, data: Mapping[str, Any]) -> bool:
    """True when the compiled schema (the fast path's) accepts the merged values: jsonschema,
    which finds and places every error, would find none (tests/unit/test_fastcheck.py holds the
    two verdicts equal). False when it refuses them, or is not built from this chart."""
    cache = _compiled(chart_dir)
    if cache is None:
        return False
    try:
        cache.validate(data)
    except Exception:  # noqa: BLE001 - refused (JsonSchemaValueException) or unsure: jsonschema decides
        return False
    return True


def _touched(vf: ValuesFile, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The merged values under the top-level keys the file sets. The root schema relates no two
    keys (type, additionalProperties, required, properties), and the chart's own defaults pass
    it (tests/unit/test_schema.py), so every error lies under a key the file sets: jsonschema
    need not walk the other subtrees (the batch check's largest cost)."""
    if not isinstance(vf.data, Mapping) or not isinstance(data, Mapping):
        return data
    return {k: v for k, v in data.items() if k in vf.data}


def _artificially_missing(err: ValidationError, data: Mapping[str, Any]) -> bool:
    """A root `required` error for a key that _touched left out but the merged values have."""
    key = None if err.absolute_path else _required_key(err)
    return key is not None and isinstance(data, Mapping) and key in data


def validate(vf: ValuesFile, schema_file: Path | None = None,
             values: Mapping[str, Any] | None = None) -> list[Finding]:
    """Schema findings for one loaded values file, validated after merging over the chart
    defaults (like helm; `values`: that merge, when the caller has it). Each points at the
    deepest part of the key path in the file. Default schema: the active chart's
    (`charts.active()`, i.e. --chart or the shipped one)."""
    data = merged(vf.data) if values is None else values
    own = schema_file is None  # the active chart's schema, which its own defaults pass
    if own and _passes_compiled(charts.active(), data):
        return []
    schema_file = schema_file or charts.active() / "values.schema.json"
    try:
        validator = load_validator(schema_file)
    except SchemaUnavailable as exc:
        return [Finding(str(schema_file), 0, 0, "JHS002", ERROR, INPUT, "", f"chart schema unusable: {exc}",
                        "restore chart/values.schema.json")]
    findings: list[Finding] = []
    errors = [leaf for err in validator.iter_errors(_touched(vf, data) if own else data) for leaf in _expand(err)
              if not (own and _artificially_missing(leaf, data))]
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        path = list(err.absolute_path)
        if err.validator == "additionalProperties":
            for key in _extra_keys(err) or [None]:
                kpath = path + [key] if key is not None else path
                line, col, _ = vf.position(kpath)
                msg = f"unknown key `{key}`" if key is not None else err.message
                findings.append(Finding(vf.path, line, col, "JHS001", ERROR, SCHEMA, dotted(kpath), msg,
                                        _fix_for(err, key)))
            continue
        nulled = _nulled(vf, err)
        if nulled is not None:
            line, col, _ = vf.position(nulled)
            findings.append(Finding(
                vf.path, line, col, "JHS001", ERROR, SCHEMA, dotted(nulled),
                f"`{nulled[-1]}: null` deletes the chart's default {dotted(nulled)}, which the chart needs",
                f"remove the `{nulled[-1]}: null` line (set only the keys you want to change)"))
            continue
        line, col, found = vf.position(path)
        msg, fix = err.message, _fix_for(err)
        one = _one_of_keys(err)
        if one:
            names = " and ".join(f"`{k}`" for k in one)
            given = [k for k in one if isinstance(err.instance, dict) and k in err.instance]
            msg = f"{'both ' + names if given else 'neither ' + ' nor '.join(f'`{k}`' for k in one)}: " \
                  f"{str(err.schema.get('description', '')).rstrip('.') or 'exactly one is needed'}"
            fix = f"set exactly one of {names}"
        together = _together(err)
        if len(together) > 1:
            why = str(err.schema.get("description", "")).split(":")[0] if isinstance(err.schema, dict) else ""
            names = ", ".join(together[:-1]) + " and " + together[-1]
            msg = f"{names} together" + (f": {why[:1].lower()}{why[1:]}" if why else " are not allowed")
            fix = f"keep one of {', '.join(together)}"
        if len(msg) > 200:
            msg = msg[:197] + "..."
        if not found and path:
            msg += " (value from chart defaults)"
        findings.append(Finding(vf.path, line, col, "JHS001", ERROR, SCHEMA, dotted(path), msg, fix))
    return sorted(findings)
