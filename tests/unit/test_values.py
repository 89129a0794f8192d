"""generator.values (full.py, merge.py): loading with positions, YAML 1.1, input errors as findings,
coalescing."""

from __future__ import annotations

from pathlib import Path

from generator.values.file import MAX_NODES
from generator.values.full import load_values, parse_values
from generator.values.merge import coalesce, merged


def _rules(text: str) -> list[tuple[str, int, int]]:
    return [(f.rule, f.line, f.col) for f in parse_values(text, "v.yaml").findings]


def test_plain_mapping_loads_with_positions() -> None:
    vf = parse_values("image:\n  tag: \"2\"\nhandlers:\n  job:\n    replicas: 3\n", "v.yaml")
    assert vf.ok and vf.data == {"image": {"tag": "2"}, "handlers": {"job": {"replicas": 3}}}
    assert vf.position(["handlers", "job", "replicas"]) == (5, 5, True)
    # a missing leaf reports the deepest existing key
    assert vf.position(["handlers", "job", "port"]) == (4, 3, False)
    assert vf.position(["drain"]) == (1, 1, False)


def test_sequence_item_positions() -> None:
    vf = parse_values("handlers:\n  web:\n    env:\n      - name: A\n      - name: B\n", "v.yaml")
    assert vf.position(["handlers", "web", "env", 1]) == (5, 9, True)


def test_yaml_11_semantics_like_helm() -> None:
    vf = parse_values("a: yes\nb: off\nc: 0755\non: x\nd: 2001-12-14\ne: 1.10\n", "v.yaml")
    assert vf.data == {"a": True, "b": False, "c": 493, "true": "x", "d": "2001-12-14", "e": 1.1}


def test_empty_file_is_no_overrides() -> None:
    for text in ("", "# only a comment\n", "---\n"):
        vf = parse_values(text, "v.yaml")
        assert vf.ok and vf.data == {}


def test_duplicate_key_is_a_finding_at_the_second_key() -> None:
    assert _rules("image:\n  tag: \"1\"\n  tag: \"2\"\n") == [("JHY002", 3, 3)]
    vf = parse_values("a: 1\na: 2\n", "v.yaml")
    assert 'duplicate key "a"' in vf.findings[0].message


def test_bad_indentation_is_a_syntax_finding_with_line() -> None:
    assert _rules("handlers:\n  job:\n    replicas: 1\n   port: 2\n") == [("JHY001", 4, 4)]
    assert _rules("a: [1, 2\n")[0][0] == "JHY001"
    assert _rules("a: 'unterminated\n")[0][0] == "JHY001"


def test_non_mapping_documents() -> None:
    assert _rules("- a\n- b\n") == [("JHY003", 1, 1)]
    assert _rules("just a string\n") == [("JHY003", 1, 1)]
    assert _rules("a: 1\n---\nb: 2\n") == [("JHY003", 3, 1)]


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    vf = parse_values("\n".join(lines) + "\n", "bomb.yaml")
    assert [f.rule for f in vf.findings] == ["JHY004"]
    assert str(MAX_NODES) in vf.findings[0].message


def test_harmless_aliases_are_expanded() -> None:
    vf = parse_values("x: &r {cpu: 1m}\nhandlers:\n  job:\n    resources:\n      requests: *r\n", "v.yaml")
    assert vf.ok and vf.data["handlers"]["job"]["resources"]["requests"] == {"cpu": "1m"}


def test_missing_and_non_utf8_files(tmp_path: Path) -> None:
    missing = load_values(tmp_path / "nope.yaml")
    assert [(f.rule, f.category) for f in missing.findings] == [("JHY005", "input")]
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"a: \xff\xfe\n")
    assert [f.rule for f in load_values(binary).findings] == ["JHY001"]
    directory = load_values(tmp_path)
    assert [f.rule for f in directory.findings] == ["JHY005"]


def test_coalesce_follows_helm() -> None:
    defaults = {"a": {"x": 1, "y": 2}, "b": 1, "c": {"k": 1}, "n": None}
    user = {"a": {"y": 3}, "b": None, "c": "scalar", "d": 4}
    assert coalesce(defaults, user) == {"a": {"x": 1, "y": 3}, "c": "scalar", "d": 4, "n": None}
    assert defaults == {"a": {"x": 1, "y": 2}, "b": 1, "c": {"k": 1}, "n": None}  # not mutated


def test_merged_uses_chart_defaults() -> None:
    values = merged({"handlers": {"job": {"maxJobRuntimeSeconds": 7}}})
    assert values["handlers"]["job"]["maxJobRuntimeSeconds"] == 7
    assert values["handlers"]["job"]["resources"]["requests"]["cpu"] == "100m"  # default kept
    assert values["drain"]["bufferSeconds"] == 30


def test_values_helm_cannot_read_are_input_findings() -> None:
    """.inf/.nan (no JSON for them), and scalars their tag cannot build, are exit-2 findings
    at the value (issue 12)."""
    assert _rules("drain:\n  runtimeMultiplier: -.inf\n") == [("JHY006", 2, 3)]
    assert _rules("a: [1, .nan]\n") == [("JHY006", 1, 8)]
    assert _rules("a:\n  b: !!int abc\n") == [("JHY001", 2, 6)]
    assert _rules("d: 0000-00-00 00:00:00\n") == [("JHY001", 1, 4)]
    assert _rules("a: '\x07'\n") == [("JHY001", 1, 5)]


def test_scalars_as_helm_reads_them() -> None:
    """!!binary is a string, an integer beyond float64 a string (go-yaml), 1e30 a number."""
    vf = parse_values("a: !!binary aGk=\nb: " + "9" * 400 + "\nc: 1" + "0" * 30 + "\n", "v.yaml")
    assert vf.data == {"a": "hi", "b": "9" * 400, "c": 10 ** 30}
