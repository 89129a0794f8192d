"""Helpers for the property-based (Hypothesis) tests of the CLI: running it in-process and
as a subprocess, the "output is only findings" property, and strategies that build hostile
values files (YAML scalars of every form, mutated examples, deep nesting, alias bombs, bytes).

Profiles: "ci" (default, derandomized, bounded for `make test`) and "fuzz" (`make fuzz`,
10x the examples, random seeds). Choose one with HYPOTHESIS_PROFILE."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis import strategies as st
from ruamel.yaml import YAML

from generator import entry
from unit_support import JH, REPO

EXAMPLES_DIR = REPO / "values-examples"
CHART_VALUES = REPO / "chart" / "values.yaml"
FUZZ_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fuzz"
# Per input, the property's bound on CPU seconds (in-process: parsing and the rules). It is
# CPU time of this process, not wall time: stop 27's CI, beside a kind image load on 2 cores,
# stretched an ordinary input to 2.91 s of wall time. The bound catches what never ends (an
# alias bomb, a regex gone exponential); speed is measured in `make bench`, not here.
MAX_SECONDS = 5.0
# The console script as a subprocess adds an interpreter start and the imports, which a loaded
# 2-core machine stretches past 2 s (stop 27: 2.3-2.7 s beside a kind image load); this bound
# only catches what never ends (an alias bomb, a regex gone exponential), timeouts are not a test.
SUBPROCESS_MAX_SECONDS = 30.0

# ---- profiles ----------------------------------------------------------------------------
_COMMON: dict[str, Any] = dict(
    deadline=None,  # wall time is not a test (see MAX_SECONDS); the CPU bound is in assert_no_crash
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.large_base_example],
    print_blob=True,
)
settings.register_profile("ci", max_examples=50, derandomize=True, database=None, **_COMMON)
settings.register_profile("fuzz", max_examples=500, derandomize=False,
                          database=DirectoryBasedExampleDatabase(str(REPO / ".cache" / "hypothesis")), **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def scaled(n: int) -> int:
    """n examples under "ci", 10 n under "fuzz" (for tests that set their own budget)."""
    return n * 10 if settings.default.max_examples >= 500 else n


# ---- running the CLI ---------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One CLI run: exit code, stdout, stderr, seconds (CPU in-process, wall as a subprocess)."""

    rc: int
    out: str
    err: str
    seconds: float
    limit: float = MAX_SECONDS  # the time bound assert_no_crash holds it to


def run_inprocess(*args: str) -> Run:
    """cli.main(args) with stdout/stderr captured as strict UTF-8 streams (like a real
    terminal: a lone surrogate that cannot be printed is a crash here too); Python
    warnings count as stderr output."""
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", newline="\n")
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="strict", newline="\n")
    t0 = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rc = entry.main(list(args))  # the console script: the fast path, else the full CLI
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
        for w in caught:  # a real run prints warnings on stderr
            print(f"warning: {w.category.__name__}: {w.message}", file=err)
        out.flush()
        err.flush()
    seconds = time.process_time() - t0
    return Run(rc, out_b.getvalue().decode("utf-8"), err_b.getvalue().decode("utf-8"), seconds)


def run_subprocess(*args: str, cwd: Path = REPO, timeout: float = 120) -> Run:
    """The installed console script as a subprocess."""
    assert JH.is_file(), f"{JH} missing: run `make venv`"
    t0 = time.monotonic()
    proc = subprocess.run([str(JH), *args], cwd=cwd, capture_output=True, timeout=timeout, check=False)
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
               time.monotonic() - t0, SUBPROCESS_MAX_SECONDS)


# ---- the property ------------------------------------------------------------------------
RULE = r"(?:JH\d{3}|JH[SYR]\d{3})"
_NO_POSITION_RULES = {"JHY005", "JHS002", "JHR004"}


def _finding_line(file: str) -> re.Pattern[str]:
    return re.compile(rf"^(?P<file>{re.escape(file)}|\S+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?: "
                      rf"(?:error|warning) (?P<rule>{RULE})(?: \[[^\]\n]*\])? \S.*$")


_SUMMARY = re.compile(r"^(?:ok|FAILED): \d+ file\(s\) checked, \d+ error\(s\), \d+ warning\(s\)$")


def assert_no_crash(run: Run, timed: bool = True) -> None:
    """Exit code 0/1/2, no traceback, no internal error, within the time bound."""
    both = run.out + run.err
    assert run.rc in (0, 1, 2), f"exit {run.rc}\n{both}"
    assert "Traceback" not in both, both
    assert "internal error" not in both, both
    if timed:
        assert run.seconds < run.limit, f"took {run.seconds:.2f} s (bound {run.limit} s)"


def assert_findings_text(run: Run, file: str, n_lines: int | None = None) -> None:
    """stdout is only findings (rule id, file, position), their fixes and the summary line;
    stderr is empty."""
    assert_no_crash(run)
    assert run.err == "", run.err
    lines = run.out.split("\n")
    assert lines[-1] == "", repr(run.out[-200:])
    lines = lines[:-1]
    assert lines and _SUMMARY.match(lines[-1]), run.out
    pattern = _finding_line(file)
    findings = 0
    for line in lines[:-1]:
        if line.startswith("    fix: "):
            continue
        m = pattern.match(line)
        assert m, f"not a finding line: {line!r}"
        findings += 1
        if m["rule"] not in _NO_POSITION_RULES:
            assert m["file"] == file and m["line"] and m["col"], f"finding without a position: {line!r}"
            if n_lines is not None:
                assert 1 <= int(m["line"]) <= n_lines + 1, f"line out of range ({n_lines} lines): {line!r}"
    assert (run.rc == 0) == ("FAILED" not in lines[-1]) or run.rc == 2, run.out
    if run.rc != 0:
        assert findings, run.out


def assert_findings_json(run: Run, file: str) -> None:
    """--format json: one document whose exit_code is the process's, every finding placed."""
    assert_no_crash(run)
    doc = json.loads(run.out)
    assert doc["exit_code"] == run.rc
    for f in doc["findings"]:
        assert re.fullmatch(RULE, f["rule"]) and f["file"] and f["severity"] in ("error", "warning")
        if f["rule"] not in _NO_POSITION_RULES:
            assert f["file"] == file and f["line"] >= 1 and f["col"] >= 1, f


def assert_findings_github(run: Run) -> None:
    """--format github: one workflow command per line."""
    assert_no_crash(run)
    for line in run.out.splitlines():
        assert re.match(rf"^::(?:error|warning) file=[^,\n]*(?:,line=\d+)?(?:,col=\d+)?,title={RULE}::", line), line


def line_count(data: bytes) -> int:
    """Lines of a file as YAML counts them (\\n, \\r\\n, \\r, NEL, LS, PS)."""
    text = data.decode("utf-8", "replace")
    return max(1, len(re.split(r"\r\n|[\n\r\x85\u2028\u2029]", text)))


def check_bytes(data: bytes, fmt: str = "text", name: str = "values.yaml") -> Run:
    """Write data to a fresh file and run `jobhandlers check FILE` in-process on it; assert
    the property for the format."""
    with tempfile.TemporaryDirectory(prefix="jh-fuzz-") as tmp:
        path = os.path.join(tmp, name)
        with open(path, "wb") as fh:
            fh.write(data)
        run = run_inprocess("check", path, "--format", fmt)
        if fmt == "text":
            assert_findings_text(run, path, line_count(data))
        elif fmt == "json":
            assert_findings_json(run, path)
        else:
            assert_findings_github(run)
    return run


def grace_bytes(data: bytes) -> Run:
    """`jobhandlers grace FILE` in-process: findings (exit 1/2) or the grace report."""
    with tempfile.TemporaryDirectory(prefix="jh-fuzz-") as tmp:
        path = os.path.join(tmp, "values.yaml")
        with open(path, "wb") as fh:
            fh.write(data)
        run = run_inprocess("grace", path, "--kube-version", "1.16", "--kube-version", "1.34")
        assert_no_crash(run)
        assert run.err == "", run.err
        if run.out.startswith(f"{path}\n\n"):
            assert "terminationGracePeriodSeconds = ceil(" in run.out
        else:
            assert run.rc in (1, 2), run.out
            assert_findings_text(run, path, line_count(data))
    return run


def gen_tests_bytes(files: Sequence[bytes]) -> Run:
    """`jobhandlers gen-tests --check --examples DIR --out DIR2` in-process."""
    with tempfile.TemporaryDirectory(prefix="jh-fuzz-") as tmp:
        ex = Path(tmp) / "examples"
        ex.mkdir()
        for i, data in enumerate(files):
            (ex / f"fuzz-{i}.yaml").write_bytes(data)
        run = run_inprocess("gen-tests", "--check", "--examples", str(ex), "--out", str(Path(tmp) / "gen"))
        assert_no_crash(run, timed=False)
        assert run.seconds < MAX_SECONDS * max(1, len(files)), f"took {run.seconds:.2f} s"
    return run


# ---- strategies: YAML scalars ------------------------------------------------------------
SPECIAL_SCALARS: tuple[str, ...] = (
    # ints of every form (YAML 1.1 and 1.2)
    "0", "-0", "+5", "007", "0755", "0o17", "0x1F", "0X1f", "-0x1F", "0b1011", "1_000", "1__0", "1_000_000",
    "190:20:30", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1" + "0" * 30,
    "1" + "0" * 400, "-" + "9" * 400,
    # floats
    ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", "1.0e+300", "1.0e+400", "-1.0e-400",
    "1.10", "1e3", "1.5", "6.8523015e+5", "685.230_15e+03", "190:20:30.15", "0.", ".5", "1.0E-3",
    # booleans (1.1) and nulls
    "yes", "no", "Yes", "NO", "on", "off", "On", "OFF", "y", "n", "Y", "N", "true", "false", "True", "FALSE",
    "null", "Null", "NULL", "~", "", "''", '""',
    # timestamps
    "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2002-12-14", "2001-12-15T02:59:43.1Z",
    "2001-13-45", "9999-12-31T23:59:59.999999999Z", "0001-01-01",
    # tags
    "!!binary aGVsbG8=", "!!binary '!!!'", "!!binary", "!!str 1", "!!int '12'", "!!int abc", "!!float x",
    "!!float .inf", "!!bool maybe", "!!null x", "!!timestamp 2001-12-14", "!!timestamp nope", "!!set {a, b}",
    "!!omap [a: 1]", "!!pairs [a: 1, a: 2]", "!!map [1]", "!!seq {a: 1}", "!foo bar", "!<tag:x> 1",
    "!!python/object:os.system x", "!!python/name:os.system", "!!merge x", "!!value =", "=",
    # strings
    "latest", "'latest'", '"\\x00"', '"\\ud800"', '"\\U0010FFFF"', '"\\uFFFE"', '"\\e\\a\\0"', '"a\\nb"',
    "'it''s'", "x" * 300, '"' + "\\u2028" * 3 + '"', "|\n  block\n  text", ">-\n  folded", "|+\n",
    "[]", "{}", "[~]", "{a: }", "[1, [2, [3]]]", "{? a}", "*undefined", "&a", "&a 1", "? x", "- x",
    "@reserved", "`backtick", "%percent", "#comment", "a: b", "a #b", "\t1", "1\t", "'unterminated", "[1,",
)


def _int_forms(n: int) -> list[str]:
    forms = [str(n), f"{n:_}", hex(n), oct(n).replace("0o", "0"), oct(n), bin(n)]
    return forms + [f"+{n}"] if n >= 0 else forms


def _json_str(s: str) -> str:
    return json.dumps(s)


@st.composite
def _timestamps(draw: st.DrawFn) -> str:
    y, mo, d = draw(st.integers(0, 9999)), draw(st.integers(0, 13)), draw(st.integers(0, 32))
    base = f"{y:04d}-{mo:02d}-{d:02d}"
    if draw(st.booleans()):
        return base
    h, mi, s = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    frac = draw(st.sampled_from(["", ".1", ".10", ".123456789"]))
    tz = draw(st.sampled_from(["", "Z", "-05:00", " -5", "+14:00", "+99:99"]))
    sep = draw(st.sampled_from(["t", "T", " "]))
    return f"{base}{sep}{h:02d}:{mi:02d}:{s:02d}{frac}{tz}"


SAFE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)

scalars: st.SearchStrategy[str] = st.one_of(
    st.sampled_from(SPECIAL_SCALARS),
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70).flatmap(lambda n: st.sampled_from(_int_forms(n))),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    _timestamps(),
    st.text(max_size=30).map(_json_str),  # double-quoted, any code point (lone surrogates too)
    SAFE_TEXT.map(lambda s: "'" + s.replace("'", "''") + "'"),
    SAFE_TEXT,  # plain: whatever YAML makes of it
)


# ---- strategies: arbitrary YAML documents ------------------------------------------------
KEYS = st.one_of(st.sampled_from(["image", "tag", "handlers", "job", "web", "drain", "a", "<<", "?", "-",
                                  "1", "true", "null", "~", "[1]", "{a: 1}", "''", "\"\\t\""]), SAFE_TEXT)


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    seqs = st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
    maps = st.lists(st.tuples(KEYS, children), max_size=4).map(
        lambda kvs: "{" + ", ".join(f"{k}: {v}" for k, v in kvs) + "}")
    return st.one_of(seqs, maps)


flow_nodes = st.recursive(scalars, _flow, max_leaves=20)


@st.composite
def block_documents(draw: st.DrawFn, depth: int = 0) -> str:
    """A block mapping / sequence whose leaves are any scalars or flow nodes, with random
    indentation, anchors, aliases, comments and document markers."""
    anchors: list[str] = []

    def node(level: int) -> str:
        ind = "  " * level
        kind = draw(st.sampled_from(["map", "seq", "leaf"] if level < 4 else ["leaf"]))
        if kind == "leaf":
            if anchors and draw(st.integers(0, 5)) == 0:
                return " *" + draw(st.sampled_from(anchors)) + "\n"
            return " " + draw(st.one_of(scalars, flow_nodes)) + "\n"
        prefix = ""
        if draw(st.integers(0, 4)) == 0:
            name = f"a{len(anchors)}"
            anchors.append(name)
            prefix = f" &{name}"
        out = prefix + "\n"
        for _ in range(draw(st.integers(1, 4))):
            if kind == "map":
                out += f"{ind}{draw(KEYS)}:{node(level + 1)}"
            else:
                out += f"{ind}-{node(level + 1)}"
            if draw(st.integers(0, 6)) == 0:
                out += f"{ind}# {draw(SAFE_TEXT).replace(chr(10), ' ')}\n"
        return out

    body = ""
    for _ in range(draw(st.integers(1, 5))):
        body += f"{draw(KEYS)}:{node(1)}"
    head = draw(st.sampled_from(["", "---\n", "%YAML 1.1\n---\n", "%YAML 1.2\n---\n", "%TAG ! tag:x,2000:\n---\n"]))
    tail = draw(st.sampled_from(["", "...\n", "---\n", "---\nb: 1\n", "--- |\n  x\n"]))
    return head + body + tail


yaml_documents = st.one_of(block_documents(), flow_nodes, scalars)


# ---- strategies: mutations of the examples -----------------------------------------------
def _rt() -> YAML:
    y = YAML(typ="rt")
    y.version = (1, 1)  # type: ignore[assignment]
    y.width = 4096
    return y


def _key_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(prefix + (k,))
            out += _key_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append(prefix + (i,))
            out += _key_paths(v, prefix + (i,))
    return out


def _bases() -> dict[str, tuple[bytes, list[tuple[Any, ...]]]]:
    """Every values example and the chart defaults: text and key paths."""
    out = {}
    for p in sorted(EXAMPLES_DIR.glob("*.yaml")) + [CHART_VALUES]:
        data = p.read_bytes()
        out[p.name] = (data, _key_paths(_rt().load(data)))
    return out


BASES = _bases()
BASE_NAMES = sorted(BASES)
SENTINEL = "__JH_FUZZ_VALUE__"


def set_value(base: bytes, path: Sequence[Any], scalar: str) -> bytes:
    """The base text with the value at `path` replaced by the raw YAML text `scalar`
    (comments and layout kept)."""
    y = _rt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = y.load(base)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = SENTINEL
    buf = io.StringIO()
    y.dump(doc, buf)
    text = buf.getvalue()
    if "\n" in scalar:  # a block scalar: keep its lines indented under the key
        at = text.index(SENTINEL)
        line = text[text.rfind("\n", 0, at) + 1:at]
        scalar = scalar.replace("\n", "\n" + " " * (len(line) - len(line.lstrip()) + 2))
    return text.replace(SENTINEL, scalar, 1).encode("utf-8", "surrogatepass")


@st.composite
def mutated_examples(draw: st.DrawFn) -> bytes:
    """An example (or chart/values.yaml) with one to three keys set to any YAML scalar."""
    name = draw(st.sampled_from(BASE_NAMES))
    data, paths = BASES[name]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        try:
            data = set_value(data, path, draw(st.one_of(scalars, scalars, flow_nodes)))
        except Exception:  # noqa: BLE001 - the previous mutation broke the YAML: keep it as is
            break
    return data


@st.composite
def text_mutations(draw: st.DrawFn) -> bytes:
    """An example with bytes inserted, deleted, replaced, lines duplicated or tabbed."""
    data = bytearray(BASES[draw(st.sampled_from(BASE_NAMES))][0])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup-line", "tab", "bom", "nul", "doc"]))
        pos = draw(st.integers(0, len(data)))
        if op == "insert":
            data[pos:pos] = draw(st.sampled_from([b":", b"-", b"[", b"{", b"&a", b"*a", b"!!", b"? ", b"\n",
                                                 b"'", b'"', b"|", b">", b"#", b"%", b"@", b"\xff", b"\x85",
                                                 b"\xe2\x80\xa8", b"\r", b" "]))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 20))]
        elif op == "replace" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif op == "dup-line":
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end + 1
            data[start:start] = data[start:end]
        elif op == "tab":
            start = data.rfind(b"\n", 0, pos) + 1
            data[start:start] = b"\t"
        elif op == "bom":
            data[0:0] = b"\xef\xbb\xbf"
        elif op == "nul":
            data[pos:pos] = b"\x00"
        else:
            data[pos:pos] = b"\n---\n"
    return bytes(data)


# ---- strategies: deep, huge, binary ------------------------------------------------------
@st.composite
def deep_documents(draw: st.DrawFn) -> bytes:
    """Nesting of 1..400 levels: flow sequences/mappings, block mappings, block sequences,
    balanced or not."""
    n = draw(st.integers(1, 400))
    kind = draw(st.sampled_from(["flow-seq", "flow-map", "block-map", "block-seq", "mixed"]))
    closed = draw(st.booleans())
    if kind == "flow-seq":
        text = "a: " + "[" * n + ("]" * n if closed else "")
    elif kind == "flow-map":
        text = "a: " + "{a: " * n + "1" + ("}" * n if closed else "")
    elif kind == "block-map":
        text = "".join(" " * i + f"k{i}:\n" for i in range(n)) + " " * n + "k: 1"
    elif kind == "block-seq":
        text = "a:\n" + "".join(" " * (i + 1) + "-\n" for i in range(n)) + " " * (n + 2) + "1"
    else:
        text = "a: " + "".join("[{a: " for _ in range(n)) + ("1" + "}]" * n if closed else "")
    return (text + "\n").encode()


@st.composite
def alias_bombs(draw: st.DrawFn) -> bytes:
    """'Billion laughs': each level lists the previous one `width` times."""
    width, depth = draw(st.integers(2, 12)), draw(st.integers(2, 12))
    flow = draw(st.booleans())
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, depth):
        if flow:
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
        else:
            lines.append(f"a{i}: &a{i}\n" + "".join(f"  k{j}: *a{i - 1}\n" for j in range(width)).rstrip("\n"))
    return ("\n".join(lines) + "\n").encode()


random_bytes = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=100).map(lambda b: b"\xef\xbb\xbf" + b),
    st.binary(max_size=100).map(lambda b: b"image:\n  tag: " + b + b"\n"),
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.text(max_size=200).map(lambda s: s.encode("utf-16")),
)


# ---- strategies: lifecycle mutations (check vs helm parity) -------------------------------
# Typed values (dumped by PyYAML, so helm and check read the same types): the parity property
# is about the lifecycle rules, not YAML scalar forms (test_fuzz_check covers those).
PARITY_VERSIONS_OLD = ("1.16", "1.17", "1.18", "1.20", "1.25", "1.28")
PARITY_VERSIONS_NEW = ("1.34", "1.37")
_SECONDS = st.sampled_from([0, 1, 2, 5, 10, 15, 29, 30, 31, 45, 60, 120, 300, 301, 340, 3600, 86400])
_HANDLERS = {"exec": {"command": ["true"]}, "httpGet": {"path": "/", "port": 8080}, "tcpSocket": {"port": 8080},
             "grpc": {"port": 9090}, "heartbeat": {"maxAgeSeconds": 60}}
_ANY = st.one_of(_SECONDS, st.none(), st.booleans(), st.sampled_from([1.0, 1.1, 1.5, 0.5, -1, "", "x", "1.29"]))


def _probe_blocks() -> st.SearchStrategy[dict[str, Any]]:
    handlers = st.lists(st.sampled_from(sorted(_HANDLERS)), max_size=2, unique=True).map(
        lambda ks: {k: _HANDLERS[k] for k in ks})
    extra = st.fixed_dictionaries({}, optional={"enabled": st.booleans(), "periodSeconds": st.sampled_from([1, 2, 10, 30]),
                                                "failureThreshold": st.sampled_from([1, 3, 300]),
                                                "timeoutSeconds": st.sampled_from([1, 2, 5, 30]),
                                                "terminationGracePeriodSeconds": st.one_of(st.none(), _SECONDS)})
    return st.builds(lambda h, e: {**h, **e}, handlers, extra)


def _role_mutations(role: str) -> st.SearchStrategy[tuple[tuple[str, ...], Any]]:
    r = ("handlers", role)
    return st.one_of(
        st.tuples(st.just(r + ("enabled",)), st.booleans()),
        st.tuples(st.just(r + ("terminationGracePeriodSeconds",)), st.one_of(st.none(), _SECONDS)),
        st.tuples(st.just(r + ("maxJobRuntimeSeconds",)), st.sampled_from([1, 30, 60, 300, 14400])),
        st.tuples(st.just(r + ("command",)), st.sampled_from([None, ["handler"]])),
        st.tuples(st.just(r + ("drain",)), st.fixed_dictionaries(
            {"mode": st.sampled_from(["marker", "signal", "command", "none"])},
            optional={"command": st.sampled_from([[], ["quiesce"]]), "stopSignal": st.sampled_from([None, "SIGQUIT"]),
                      "waitForExit": st.booleans()})),
        st.tuples(st.sampled_from([r + (k,) for k in ("readinessProbe", "livenessProbe", "startupProbe")]),
                  _probe_blocks()),
        st.tuples(st.just(r + ("sidecars",)), st.sampled_from([[], [{"name": "proxy", "image": "proxy:1"}]])),
        st.tuples(st.just(r), st.none()),
    )


_GLOBAL_MUTATIONS: st.SearchStrategy[tuple[tuple[str, ...], Any]] = st.one_of(
    st.tuples(st.sampled_from([("drain", "bufferSeconds"), ("drain", "preStopSeconds")]), _SECONDS),
    st.tuples(st.just(("drain", "runtimeMultiplier")), st.sampled_from([1, 1.0, 1.1, 1.5, 2.5, 0.5])),
    st.tuples(st.just(("drain", "mode")), st.sampled_from(["marker", "signal", "command", "none"])),
    st.tuples(st.just(("drain", "command")), st.sampled_from([[], ["quiesce"]])),
    st.tuples(st.just(("drain", "stopSignal")), st.sampled_from([None, "SIGQUIT", "TERM"])),
    st.tuples(st.sampled_from([("drain", "stopSignalFeatureGate"), ("drain", "nativeSleep"), ("drain", "waitForExit"),
                               ("startupProbe", "force"), ("startupProbe", "featureGateEnabled"),
                               ("startupProbe", "enabled"), ("migration", "enabled"), ("migration", "useHelmHooks"),
                               ("database", "createdByRelease"), ("database", "secretIsHook"),
                               ("waitForMigrations", "enabled")]), st.booleans()),
    st.tuples(st.just(("startupProbe", "minKubeVersion")), st.sampled_from(["1.18", "1.20", "1.30"])),
    st.tuples(st.just(("migration", "onRollback")), st.sampled_from(["none", "downgrade"])),
    st.tuples(st.just(("commands", "downgrade")), st.sampled_from([None, ["migrate", "down"]])),
    st.tuples(st.just(("database", "existingSecret")), st.sampled_from(["", "db-secret"])),
    st.tuples(st.sampled_from([("readiness",), ("liveness",), ("startupProbe",)]), _probe_blocks()),
    st.tuples(st.just(("liveness", "terminationGracePeriodSeconds")), st.one_of(st.none(), _SECONDS)),
    st.tuples(st.just(("sidecars",)), st.sampled_from([[], [{"name": "proxy", "image": "proxy:1"}],
                                                        [{"name": "proxy", "image": "proxy:1", "migration": True}]])),
    st.tuples(st.sampled_from([("waitForMigrations", "timeoutSeconds"), ("migration", "activeDeadlineSeconds")]),
              _SECONDS),
    st.tuples(st.just(("image", "tag")), st.sampled_from(["2", "latest", ""])),
)


def set_path(values: dict[str, Any], path: Sequence[Any], value: Any) -> None:
    """values[path] = value, creating mappings on the way (a non-mapping on the way is replaced)."""
    node = values
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


@st.composite
def lifecycle_mutations(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(example name, its values with one to four lifecycle settings changed): roles enabled or
    removed, explicit graces, drain modes, probe blocks with 0-2 handlers, hooks, sidecars,
    gates; now and then any existing key set to a value of another type."""
    import copy

    name = draw(st.sampled_from(BASE_NAMES))
    values = copy.deepcopy(_plain(_rt().load(BASES[name][0])) or {})
    roles = sorted(set((values.get("handlers") or {})) | {"web", "job"})
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["role", "role", "global", "global", "any"]))
        if kind == "role":
            path, value = draw(_role_mutations(draw(st.sampled_from(roles))))
        elif kind == "global":
            path, value = draw(_GLOBAL_MUTATIONS)
        else:
            paths = [p for p in _key_paths(values) if all(isinstance(k, str) for k in p)]
            if not paths:
                continue
            path, value = draw(st.sampled_from(paths)), draw(_ANY)
        set_path(values, path, copy.deepcopy(value))
    return name, values


def _plain(node: Any) -> Any:
    """ruamel's round-trip nodes as plain dicts, lists and scalars."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return str(node)
