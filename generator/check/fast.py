"""`jobhandlers check FILE…`, the fast path: clean files answered without helm and without the
heavy imports.

Pre-commit and CI call check once per file or commit, so the start-up cost is the cost
(docs/benchmarks.md). This path reads each file with the conservative libyaml reader
(values/fast.py), validates it merged over the precomputed chart defaults with the compiled
schema (charts/_cache.py), and runs the same policy rules (rules/). Only when every file
passes all three (and sets no key of an earlier release, upgrades.py) does it answer, with
exactly what the full path prints for no findings. Any finding, any input it is unsure of, any
option it does not handle, a chart the cache was not built from, or JOBHANDLERS_FULL_CHECK=1:
it returns None and the full path (cli.py → full.py: ruamel with positions, jsonschema)
decides, so the findings and their positions never depend on which path ran.
"""

from __future__ import annotations

import os
import sys

_FORMATS = ("text", "json", "github")
_OPTIONS = ("--kube-version", "--format", "--platform")


def _parse(argv: list[str]) -> tuple[list[str], str | None, str, list[str]] | None:
    """files, kube version, format, platforms; None for anything argparse should see."""
    files: list[str] = []
    opts: dict[str, list[str]] = {o: [] for o in _OPTIONS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            files.append(arg)
        else:
            name, eq, value = arg.partition("=")
            if name not in opts:
                return None  # --render, --chart, --help, abbreviations, `--`, `-`
            if not eq:
                i += 1
                if i == len(argv) or argv[i].startswith("-"):
                    return None
                value = argv[i]
            opts[name].append(value)
        i += 1
    fmt = opts["--format"][-1] if opts["--format"] else "text"
    if not files or fmt not in _FORMATS:
        return None
    kube = opts["--kube-version"][-1] if opts["--kube-version"] else None
    return files, kube, fmt, opts["--platform"]


def run(argv: list[str]) -> int | None:
    """The exit code (0) when every file is clean; None to take the full path."""
    if os.environ.get("JOBHANDLERS_FULL_CHECK"):
        return None
    parsed = _parse(argv)
    if parsed is None:
        return None
    files, kube_text, fmt, platform_args = parsed
    from .. import charts, model
    from ..charts import cache as chartcache

    cache = chartcache.load(charts.DEFAULT_PATH)
    if cache is None:
        return None
    try:
        kube_version = model.minor_version(kube_text or model.DEFAULT_KUBE_VERSION)
    except (ValueError, IndexError):
        return None  # argparse reports it
    from ..platforms import parse_platform

    try:
        platforms = [parse_platform(p) for p in platform_args]
    except ValueError:
        return None
    from ..rules import check as check_rules
    from ..upgrades import deprecated
    from ..values.fast import load as load_fast
    from ..values.file import ValuesFile
    from ..values.merge import coalesce

    for path in files:
        try:
            with open(path, "rb") as fh:
                data = load_fast(fh.read()) or {}
            values = coalesce(cache.DEFAULTS, data)
            cache.validate(values)
            vf = ValuesFile(path=path, data=data)
            if check_rules(vf, kube_version, platforms, values) or deprecated(vf):
                return None
        except Exception:  # noqa: BLE001 - unsure, unreadable, invalid: the full path reports it
            return None
    from ..findings import render_findings

    try:
        sys.stdout.write(render_findings([], len(files), fmt))
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0
