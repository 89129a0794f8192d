"""generator.findings: exit codes and the text / json / github formats."""

from __future__ import annotations

import json

from generator.findings import (
    ERROR, INPUT, POLICY, SCHEMA, WARNING, Finding, exit_code, render_findings,
)

F1 = Finding("b.yaml", 4, 5, "JH001", ERROR, POLICY, "handlers.job.terminationGracePeriodSeconds",
             "grace 60 below 340", "set it to at least 340")
F2 = Finding("a.yaml", 2, 3, "JH010", WARNING, POLICY, "handlers.job.resources", "no requests", "add requests")
F3 = Finding("c,d.yaml", 0, 0, "JHY005", ERROR, INPUT, "", "file not found", "pass a file")


def test_exit_codes() -> None:
    assert exit_code([]) == 0
    assert exit_code([F2]) == 0  # warnings allowed
    assert exit_code([F1, F2]) == 1
    assert exit_code([Finding("x", 1, 1, "JHS001", ERROR, SCHEMA)]) == 1
    assert exit_code([F1, F3]) == 2


def test_text_format() -> None:
    out = render_findings([F1, F2], 2, "text")
    assert out.splitlines() == [
        "a.yaml:2:3: warning JH010 [handlers.job.resources] no requests",
        "    fix: add requests",
        "b.yaml:4:5: error JH001 [handlers.job.terminationGracePeriodSeconds] grace 60 below 340",
        "    fix: set it to at least 340",
        "FAILED: 2 file(s) checked, 1 error(s), 1 warning(s)",
    ]
    assert render_findings([], 3, "text") == "ok: 3 file(s) checked, 0 error(s), 0 warning(s)\n"


def test_json_format_is_stable() -> None:
    out = render_findings([F1, F2, F3], 3, "json")
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["exit_code"] == 2
    assert doc["summary"] == {"files": 3, "errors": 2, "warnings": 1}
    assert [f["rule"] for f in doc["findings"]] == ["JH010", "JH001", "JHY005"]
    assert set(doc["findings"][0]) == {"file", "line", "col", "rule", "severity", "category", "path",
                                       "message", "fix"}
    assert out == render_findings([F3, F2, F1], 3, "json")  # order independent, byte-stable


def test_github_format() -> None:
    out = render_findings([F1, F3], 2, "github").splitlines()
    assert out[0] == ("::error file=b.yaml,line=4,col=5,title=JH001::handlers.job.terminationGracePeriodSeconds: "
                      "grace 60 below 340 Fix: set it to at least 340")
    # property values escape , and : ; no line for a positionless finding
    assert out[1] == "::error file=c%2Cd.yaml,title=JHY005::file not found Fix: pass a file"
    warn = render_findings([F2], 1, "github")
    assert warn.startswith("::warning file=a.yaml,line=2,col=3,title=JH010::")
    multi = Finding("x", 1, 1, "JHY001", ERROR, INPUT, "", "50% bad\nline", "")
    assert render_findings([multi], 1, "github") == "::error file=x,line=1,col=1,title=JHY001::50%25 bad%0Aline\n"


def test_location() -> None:
    assert F1.location == "b.yaml:4:5" and F3.location == "c,d.yaml"
    assert Finding("x", 3, 0, "R").location == "x:3"


def test_text_finding_stays_on_one_printable_line() -> None:
    """A key with a line break or a lone surrogate cannot split or break the output."""
    f = Finding("v.yaml", 1, 1, "JHS001", ERROR, SCHEMA, "a\nb", "unknown key `\ud800\r`", "remove\u2028it")
    text = render_findings([f], 1, "text")
    assert text.splitlines()[0] == "v.yaml:1:1: error JHS001 [a\\nb] unknown key `\\ud800\\r`"
    assert text.splitlines()[1] == "    fix: remove\\u2028it"
    text.encode("utf-8")
    render_findings([f], 1, "github").encode("utf-8")
