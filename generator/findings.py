"""Findings (one problem at one place) and their text / json / github renderings."""

from __future__ import annotations

import re
from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Iterable

# Categories, in decreasing order of how unusable the input is.
INPUT = "input"  # the file cannot be used at all (missing, not YAML, not a mapping): exit 2
SCHEMA = "schema"  # violates chart/values.schema.json: exit 1
POLICY = "policy"  # a JH0xx lifecycle rule: exit 1 for errors, warnings do not fail
RENDER = "render"  # helm or kubernetes-validate refused the rendered manifests: exit 1

ERROR = "error"
WARNING = "warning"

JSON_FORMAT_VERSION = 1


class Finding(namedtuple("Finding", ['file', 'line', 'col', 'rule', 'severity', 'category', 'path', 'message', 'fix'], defaults=(ERROR, POLICY, "", "", "",))):
    """One problem: where it is (file:line:col and the key path), what, and the fix."""

    __slots__ = ()
    # file: str
    # line: int  — 1-based; 0 when the problem has no position (e.g. missing file)
    # col: int  — 1-based; 0 when unknown
    # rule: str  — stable id: JH001…, JHY001…, JHS001, JHR001…
    # severity: str = ERROR
    # category: str = POLICY
    # path: str = ""  — dotted key path, e.g. handlers.job.terminationGracePeriodSeconds
    # message: str = ""
    # fix: str = ""

    @property
    def location(self) -> str:
        """file:line:col (file:line, or file, when the position is unknown)."""
        if self.line <= 0:
            return self.file
        if self.col <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


def dotted(path: Iterable[str | int]) -> str:
    """('handlers', 'web', 'env', 0) -> 'handlers.web.env[0]'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def exit_code(findings: Iterable[Finding]) -> int:
    """2 when any input is unusable, 1 when any error, else 0 (warnings allowed)."""
    found = list(findings)
    if any(f.category == INPUT for f in found):
        return 2
    if any(f.severity == ERROR for f in found):
        return 1
    return 0


# Line breaks, other control characters and lone surrogates (from a YAML "\ud800"): they
# would split a finding over lines or make it unprintable as UTF-8.
_UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")


def one_line(text: str) -> str:
    """text with line breaks, control characters and lone surrogates escaped (\\n, \\x00, \\ud800)."""
    def esc(m: re.Match[str]) -> str:
        c = m.group()
        return {"\n": "\\n", "\r": "\\r"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
    return _UNSAFE.sub(esc, text)


def format_text(findings: list[Finding], files_checked: int) -> str:
    """Human output: one `file:line:col: severity RULE [path] message` line plus its fix."""
    lines: list[str] = []
    for f in findings:
        where = f" [{one_line(f.path)}]" if f.path else ""
        lines.append(one_line(f"{f.location}: {f.severity} {f.rule}") + f"{where} {one_line(f.message)}")
        if f.fix:
            lines.append(f"    fix: {one_line(f.fix)}")
    errors = sum(1 for f in findings if f.severity == ERROR)
    warnings = sum(1 for f in findings if f.severity == WARNING)
    status = "ok" if errors == 0 else "FAILED"
    lines.append(f"{status}: {files_checked} file(s) checked, {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines) + "\n"


def format_json(findings: list[Finding], files_checked: int) -> str:
    """Stable machine output (documented in the README), keys sorted, one object."""
    import json

    doc = {
        "version": JSON_FORMAT_VERSION,
        "exit_code": exit_code(findings),
        "summary": {
            "files": files_checked,
            "errors": sum(1 for f in findings if f.severity == ERROR),
            "warnings": sum(1 for f in findings if f.severity == WARNING),
        },
        "findings": [
            f._asdict() for f in findings
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _gh_data(text: str) -> str:
    """Escape a workflow-command message."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return one_line(text)


def _gh_prop(text: str) -> str:
    """Escape a workflow-command property value."""
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(findings: list[Finding], files_checked: int) -> str:
    """GitHub Actions annotations: `::error file=…,line=…,col=…,title=JH001::message`."""
    out: list[str] = []
    for f in findings:
        props = [f"file={_gh_prop(f.file)}"]
        if f.line > 0:
            props.append(f"line={f.line}")
        if f.col > 0:
            props.append(f"col={f.col}")
        props.append(f"title={_gh_prop(f.rule)}")
        where = f"{f.path}: " if f.path else ""
        fix = f" Fix: {f.fix}" if f.fix else ""
        out.append(f"::{f.severity} {','.join(props)}::{_gh_data(where + f.message + fix)}")
    return "\n".join(out) + ("\n" if out else "")


FORMATTERS = {"text": format_text, "json": format_json, "github": format_github}


def render_findings(findings: list[Finding], files_checked: int, fmt: str) -> str:
    """Render findings, sorted by file, line, column, rule."""
    return FORMATTERS[fmt](sorted(findings), files_checked)
