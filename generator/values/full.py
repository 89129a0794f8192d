"""The full values reader: ruamel.yaml round-trip, YAML 1.1 like Helm, with a position for
every key. Problems are returned as findings, never raised: a missing or unreadable file, a
YAML syntax error, a duplicate key, a non-mapping or multi-document file and an alias bomb all
become `Finding`s with file:line:col. (fast.py is the fast path's reader; merge.py merges.)
"""

from __future__ import annotations

import datetime
import math
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError, YAMLWarning
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scanner import RoundTripScanner, ScannerError

from ..findings import ERROR, INPUT, Finding, dotted
from .file import MAX_BYTES, MAX_DEPTH, MAX_NODES, ValuesFile
from .positions import locate, plain_key

_FLOAT_MAX = int(sys.float_info.max)


class _TooLarge(Exception):
    """The expanded document exceeds MAX_NODES or MAX_DEPTH."""


class _NotFinite(Exception):
    """A float helm cannot convert to JSON (.inf, -.inf, .nan), at `path`."""

    def __init__(self, path: tuple[str | int, ...], value: float) -> None:
        super().__init__(path, value)
        self.path = path
        self.value = value


class _TooDeep(ScannerError):
    """Flow and block collections nest deeper than MAX_DEPTH."""


class _Scanner(RoundTripScanner):
    """The round-trip scanner, refusing nesting deeper than MAX_DEPTH as it reads: its
    simple-key bookkeeping is quadratic in flow depth (400 levels of `[{` take seconds)."""

    def _check_depth(self) -> None:
        if len(self.flow_context) + len(self.indents) > MAX_DEPTH:
            raise _TooDeep(None, None, f"collections nest deeper than {MAX_DEPTH} levels",
                           self.reader.get_mark())

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:  # noqa: N803
        self._check_depth()
        super().fetch_flow_collection_start(TokenClass, to_push)

    def add_indent(self, column: int) -> bool:
        self._check_depth()
        return super().add_indent(column)


class _BadValue(ConstructorError):
    """A scalar the constructor cannot turn into its tag's type."""


class _Constructor(RoundTripConstructor):
    """The round-trip constructor, except that a value it cannot build (a timestamp in
    year 0, bad !!binary, an !!int that is not one) is a ConstructorError at its node."""

    def construct_non_recursive_object(self, node: Any, tag: str | None = None) -> Any:
        try:
            return super().construct_non_recursive_object(node, tag)
        except (MarkedYAMLError, RecursionError):
            raise
        except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1]
            raise _BadValue(None, None, f"{exc} (a {kind} value)", node.start_mark) from exc



def _yaml() -> YAML:
    y = YAML(typ="rt")
    # Kubernetes / Helm (sigs.k8s.io/yaml, go-yaml v2) read values as YAML 1.1:
    # yes/no/on/off are booleans, 0755 is octal.
    y.version = (1, 1)  # type: ignore[assignment]
    y.allow_duplicate_keys = False
    y.Constructor = _Constructor
    y.Scanner = _Scanner
    return y


def _mark_finding(file: str, rule: str, exc: MarkedYAMLError, prefix: str, fix: str) -> Finding:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    col = mark.column + 1 if mark is not None else 1
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    msg = f"{prefix}: {problem}" if problem else prefix
    if context and context not in msg:
        msg += f" ({context}"
        if exc.context_mark is not None and exc.problem_mark is not None:
            msg += f" at line {exc.context_mark.line + 1}"
        msg += ")"
    return Finding(file, line, col, rule, ERROR, INPUT, "", msg, fix)


def _to_plain(node: Any, budget: list[int], path: tuple[str | int, ...] = ()) -> Any:
    """Round-trip data -> the JSON-like data Helm sees (keys as strings, dates as strings),
    counting expanded nodes so that aliases cannot multiply the work."""
    budget[0] -= 1
    if budget[0] < 0 or len(path) > MAX_DEPTH:
        raise _TooLarge()
    if isinstance(node, Mapping):
        return {plain_key(k): _to_plain(v, budget, path + (plain_key(k),)) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_to_plain(v, budget, path + (i,)) for i, v in enumerate(node)]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        if abs(node) > _FLOAT_MAX:
            return str(node)  # go-yaml (so helm) reads an integer beyond float64 as a string
        return int(node)
    if isinstance(node, float):
        if not math.isfinite(node):
            raise _NotFinite(path, float(node))
        return float(node)
    if isinstance(node, (datetime.date, datetime.datetime)):
        return node.isoformat()
    if isinstance(node, str):
        return str(node)
    if isinstance(node, bytes):  # !!binary: go-yaml decodes it to a string, JSON makes it UTF-8
        return node.decode("utf-8", "replace")
    return str(node)


def load_values(path: str | Path, display: str | None = None) -> ValuesFile:
    """Load one values file; every problem becomes an input finding on the result."""
    name = display if display is not None else str(path)
    result = ValuesFile(path=name)
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        result.findings.append(Finding(name, 0, 0, "JHY005", ERROR, INPUT, "", "file not found",
                                       "pass an existing values file"))
        return result
    except OSError as exc:
        result.findings.append(Finding(name, 0, 0, "JHY005", ERROR, INPUT, "",
                                       f"cannot read file: {exc.strerror or exc}",
                                       "pass a readable values file"))
        return result
    if len(raw) > MAX_BYTES:
        result.findings.append(Finding(name, 1, 1, "JHY004", ERROR, INPUT, "",
                                       f"file is larger than {MAX_BYTES} bytes",
                                       "a values file is a few KiB; pass the right file"))
        return result
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.findings.append(Finding(name, 1, 1, "JHY001", ERROR, INPUT, "",
                                       f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8"))
        return result
    return parse_values(text, name)


def parse_values(text: str, name: str) -> ValuesFile:
    """Parse values text with positions (see load_values)."""
    result = ValuesFile(path=name)
    try:
        with warnings.catch_warnings():  # ruamel's notes (a reused anchor, 1e3) would go to stderr
            warnings.simplefilter("ignore", YAMLWarning)
            docs = list(_yaml().load_all(text))
    except _TooDeep as exc:
        result.findings.append(_mark_finding(name, "JHY004", exc, "document nests too deeply",
                                             "flatten the document"))
        return result
    except _BadValue as exc:
        result.findings.append(_mark_finding(name, "JHY001", exc, "cannot read value",
                                             "write the value in a form its type allows, or quote it"))
        return result
    except MarkedYAMLError as exc:
        if type(exc).__name__ == "DuplicateKeyError":
            result.findings.append(_mark_finding(
                name, "JHY002", exc, "duplicate key",
                "remove one of the two entries; YAML keeps only one and tools disagree which"))
        else:
            result.findings.append(_mark_finding(name, "JHY001", exc, "YAML syntax error",
                                                 "fix the YAML syntax (indentation, quoting, brackets)"))
        return result
    except ReaderError as exc:
        line, col = _line_col(text, exc.position)
        char = exc.character if isinstance(exc.character, int) else 0
        result.findings.append(Finding(name, line, col, "JHY001", ERROR, INPUT, "",
                                       f"unacceptable character U+{char:04X}: {exc.reason}",
                                       "remove the control character or escape it in a double-quoted string"))
        return result
    except YAMLError as exc:
        result.findings.append(Finding(name, 1, 1, "JHY001", ERROR, INPUT, "",
                                       f"YAML error: {' '.join(str(exc).split())}", "fix the YAML syntax"))
        return result
    except RecursionError:
        result.findings.append(Finding(name, 1, 1, "JHY004", ERROR, INPUT, "",
                                       "document nests too deeply", "flatten the document"))
        return result
    docs = [d for d in docs if d is not None] if len(docs) > 1 else docs
    if len(docs) > 1:
        line = 1
        if isinstance(docs[1], (CommentedMap, CommentedSeq)) and docs[1].lc.line is not None:
            line = docs[1].lc.line + 1
        result.findings.append(Finding(name, line, 1, "JHY003", ERROR, INPUT, "",
                                       f"{len(docs)} YAML documents; a values file is one mapping",
                                       "split the documents into separate values files"))
        return result
    doc = docs[0] if docs else None
    if doc is None:
        return result  # empty file: no overrides, like helm
    if not isinstance(doc, Mapping):
        line = doc.lc.line + 1 if isinstance(doc, CommentedSeq) and doc.lc.line is not None else 1
        kind = "a list" if isinstance(doc, list) else f"a scalar ({type(doc).__name__})"
        result.findings.append(Finding(name, line, 1, "JHY003", ERROR, INPUT, "",
                                       f"document is {kind}, not a mapping",
                                       "a values file is a mapping of keys, e.g. `image: {tag: \"1\"}`"))
        return result
    try:
        data = _to_plain(doc, [MAX_NODES])
    except (_TooLarge, RecursionError):
        result.findings.append(Finding(name, 1, 1, "JHY004", ERROR, INPUT, "",
                                       f"document expands to more than {MAX_NODES} nodes or "
                                       f"{MAX_DEPTH} levels (alias bomb?)",
                                       "do not nest aliases; write the values out"))
        return result
    except _NotFinite as exc:
        line, col, _ = locate(doc, exc.path)
        result.findings.append(Finding(name, line, col, "JHY006", ERROR, INPUT, dotted(exc.path),
                                       f"{exc.value} is not a number helm can use (values become JSON, "
                                       "which has no infinity or NaN)", "write a finite number"))
        return result
    result.doc = doc
    result.data = data
    return result


def _line_col(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset (lines as YAML breaks them)."""
    before = text[:max(0, position)]
    lines = before.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return len(lines), len(lines[-1]) + 1
