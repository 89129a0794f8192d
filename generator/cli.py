"""The `jobhandlers` console script: render, check, grace, gen-tests.
Exit codes: 0 ok (warnings allowed), 1 policy/schema/render failure or stale, 2 unusable input.
Never a traceback: unexpected errors are reported on one line with exit 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import __version__, charts, model

EXIT_OK, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line error (its default), never raising."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"jobhandlers: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _kube_version(text: str) -> str:
    try:
        return model.minor_version(text)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"invalid kube version {text!r} (use e.g. 1.34)") from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (documented in the README)."""
    p = _Parser(prog="jobhandlers", description="Render, check and test the jobhandlers Helm chart.")
    p.add_argument("--version", action="version", version=_version_text(),
                   help="print the tool's version and the version of the chart it ships with")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("render", help="render values-examples/ x kube versions into rendered/")
    r.add_argument("--check", action="store_true", help="render to a temp dir and fail when rendered/ is stale")
    r.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel helm processes")
    r.add_argument("--out", type=Path, default=None, help="output tree (default: rendered/)")
    r.add_argument("--examples", type=Path, default=None, help="directory of values examples")
    r.add_argument("--kube-version", type=_kube_version, action="append", default=None,
                   help="render only these kube versions (default: the whole matrix)")
    r.add_argument("values", nargs="*", type=Path,
                   help="values files to render instead of the examples (each into <out>/<file stem>/)")

    c = sub.add_parser("check", help="policy-check values files")
    c.add_argument("values", nargs="+", help="values files")
    c.add_argument("--kube-version", type=_kube_version, default=model.DEFAULT_KUBE_VERSION)
    c.add_argument("--format", choices=["text", "json", "github"], default="text")
    c.add_argument("--platform", type=_platform, action="append", default=[], metavar="NAME[=SECONDS]",
                   help="warn (JH021) when a role's grace exceeds what this platform honours; repeatable: "
                        + ", ".join(_platform_names()))
    c.add_argument("--render", action="store_true",
                   help="also render with helm and validate every object with kubernetes-validate (strict)")
    c.add_argument("--server", action="store_true",
                   help="also render and send every object to your cluster as a server-side dry run (admission "
                        "included: Pod Security, quotas, policies); refusals are JHK findings")
    c.add_argument("--kubeconfig", metavar="PATH", default=None, help="with --server: the kubeconfig file")
    c.add_argument("--context", metavar="NAME", default=None, help="with --server: the kubeconfig context")
    c.add_argument("--namespace", "-n", metavar="NS", default=None,
                   help="with --server: the release namespace (default: the context's, else default)")
    c.add_argument("--from-version", metavar="VERSION", default=None,
                   help="list what to change before upgrading from this chart release (renamed or removed "
                        "keys, values it accepted that this chart refuses); docs/upgrading.md")

    g = sub.add_parser("grace", help="show the computed grace periods of a values file")
    g.add_argument("values", help="values file")
    g.add_argument("--kube-version", type=_kube_version, action="append", default=None,
                   help="kube version(s) for the probe-level grace (default: the whole matrix)")

    for cmd in (r, c, g):
        cmd.add_argument("--chart", metavar="PATH", default=None,
                         help="use this chart (a directory or a `helm package` .tgz) instead of the "
                              f"one shipped with the tool ({charts.describe(charts.DEFAULT_DIR)})")

    t = sub.add_parser("gen-tests", help="generate pytest files for values files (default: tests/generated/ "
                                         "from values-examples/)")
    t.add_argument("--check", action="store_true", help="fail when the output directory is stale")
    t.add_argument("--out", type=Path, default=None, help="output directory (default: tests/generated/)")
    t.add_argument("--examples", type=Path, default=None, help="directory of values examples")
    t.add_argument("--kube-version", type=_kube_version, action="append", default=None,
                   help="test only these kube versions (default: the whole matrix, or from the file's "
                        "`# kube-versions: >=X.Y` comment on)")
    t.add_argument("values", nargs="*", type=Path,
                   help="values files to generate tests for (one test_example_<name>.py each); with --live: "
                        "VALUES [JOBS] (JOBS default: <values stem>.jobs.yaml beside it)")
    t.add_argument("--live", action="store_true",
                   help="write a pytest suite that installs VALUES on a live cluster and checks install, rollout "
                        "and eviction with jobs in flight, a waiting pod's stop and uninstall (needs --out)")
    t.add_argument("--max-job-seconds", type=int, default=None, metavar="N",
                   help="--live: cap the test jobs' length at N seconds (quick runs)")
    t.add_argument("--from", dest="upgrade_from", default=None, metavar="CHART",
                   help="--live: add an upgrade test that installs CHART (a chart folder, a .tgz, oci://... or "
                        "repo/name: what helm install takes) and upgrades it to the tool's chart with jobs in flight")
    t.add_argument("--from-version", default=None, metavar="VERSION",
                   help="--live, with --from: the chart version (helm's --version, for oci:// and repo charts)")
    t.add_argument("--from-values", type=Path, default=None, metavar="FILE",
                   help="--live: the values the release runs before the upgrade (an older image.tag, or the old "
                        "chart's keys; default: VALUES). Alone, without --from: the same chart, other values")
    return p


def _version_text() -> str:
    """`jobhandlers --version`: the tool's version and the shipped chart's name-version."""
    meta = charts.metadata(charts.DEFAULT_DIR)
    return (f"jobhandlers {__version__} (chart {meta.get('name', '?')} {meta.get('version', '?')}, "
            f"appVersion {meta.get('appVersion', '?')})")


def _safe(text: str) -> str:
    """text printable as UTF-8: lone surrogates (a YAML "\\ud800", a non-UTF-8 file name)
    escaped as \\udcff."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _examples(directory: Path | None) -> list[Path] | None:
    return sorted(directory.glob("*.yaml")) if directory is not None else None


def _platform(text: str):  # noqa: ANN202 - argparse type
    """--platform NAME[=SECONDS] -> (Platform, limit); argparse turns the ValueError into exit 2."""
    from .platforms import parse_platform
    try:
        return parse_platform(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _platform_names() -> list[str]:
    from .platforms import PLATFORMS
    return [p.name if p.limit_seconds is not None else f"{p.name}=SECONDS" for p in PLATFORMS]


def cmd_check(args: argparse.Namespace) -> int:
    """jobhandlers check."""
    from .check.full import check_files
    from .findings import exit_code, render_findings

    from . import upgrades

    if args.from_version is not None and args.from_version not in upgrades.releases():
        known = ", ".join(upgrades.releases()) or "none"
        print(_safe(f"jobhandlers check: --from-version {args.from_version}: not a release this chart "
                    f"upgrades from (chart/lifecycle.yaml upgrades: {known})"), file=sys.stderr)
        return EXIT_INPUT
    server, unusable = None, ()
    if args.server:
        from .check.server import ServerUnusable, Target
        server, unusable = Target(args.kubeconfig, args.context, args.namespace), (ServerUnusable,)
    elif args.kubeconfig or args.context or args.namespace:
        print("jobhandlers check: --kubeconfig, --context and --namespace need --server", file=sys.stderr)
        return EXIT_INPUT
    try:
        findings = check_files(args.values, args.kube_version, render=args.render, platforms=args.platform,
                               from_version=args.from_version, server=server)
    except unusable as exc:  # the cluster or kubeconfig cannot be used: one line, exit 2
        print(_safe(f"jobhandlers check --server: {exc}"), file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(render_findings(findings, len(args.values), args.format))
    if args.from_version is not None and args.format == "text":
        sys.stdout.write(upgrades.summary(findings, args.from_version))
    return exit_code(findings)


def cmd_grace(args: argparse.Namespace) -> int:
    """jobhandlers grace."""
    from .findings import exit_code, render_findings
    from .grace import report
    from .schema import validate
    from .values.full import load_values
    from .values.merge import merged

    vf = load_values(args.values)
    problems = vf.findings or validate(vf)
    if problems:
        sys.stdout.write(render_findings(problems, 1, "text"))
        return exit_code(problems) or EXIT_FAIL
    text, ok = report(merged(vf.data), args.kube_version or list(model.KUBE_VERSIONS))
    sys.stdout.write(f"{vf.path}\n\n{text}")
    return EXIT_OK if ok else EXIT_FAIL


def cmd_render(args: argparse.Namespace) -> int:
    """jobhandlers render."""
    from .render import helm
    from .render import matrix as rmod

    if args.jobs < 1:
        print("jobhandlers render: --jobs must be >= 1", file=sys.stderr)
        return EXIT_INPUT
    examples = _examples(args.examples)
    if examples is not None and not examples:
        print(_safe(f"jobhandlers render: no *.yaml in {args.examples}"), file=sys.stderr)
        return EXIT_INPUT
    if args.values:
        missing = [str(v) for v in args.values if not v.is_file()]
        if missing:
            print(_safe(f"jobhandlers render: no such values file: {', '.join(missing)}"), file=sys.stderr)
            return EXIT_INPUT
        examples = (examples or []) + list(args.values)
    elif examples is None and not helm.examples():
        print(_safe(f"jobhandlers render: no values files given and no *.yaml in {helm.EXAMPLES_DIR}"),
              file=sys.stderr)
        return EXIT_INPUT
    out = args.out or rmod.RENDERED_DIR
    res = rmod.render(examples, out, check=args.check, jobs=args.jobs,
                     versions=args.kube_version or model.KUBE_VERSIONS)
    for err in res.errors:
        print(_safe(f"render FAILED: {err}"), file=sys.stderr)
    if res.errors:
        print(f"render: {out} left unchanged", file=sys.stderr)
        return EXIT_INPUT if res.helm_missing else EXIT_FAIL
    if args.check:
        for s in res.stale:
            print(_safe(f"stale: {out.name}/{s}"))
        if res.stale:
            print(f"render --check: {len(res.stale)} stale file(s); run `make render`")
            return EXIT_FAIL
        print(f"render --check: {out.name}/ is up to date ({res.files} files, {res.seconds:.1f} s)")
        return EXIT_OK
    print(f"render: wrote {res.files} files into {out.name}/ in {res.seconds:.1f} s")
    return EXIT_OK


def cmd_gen_tests(args: argparse.Namespace) -> int:
    """jobhandlers gen-tests."""
    from . import gentests
    from .render import helm

    if args.live:
        return _gen_live(args)
    if args.upgrade_from or args.from_version or args.from_values or args.max_job_seconds is not None:
        print("jobhandlers gen-tests: --from, --from-version, --from-values and --max-job-seconds go with --live",
              file=sys.stderr)
        return EXIT_INPUT
    examples = _examples(args.examples)
    if args.values:
        missing = [str(v) for v in args.values if not v.is_file()]
        if missing:
            print(_safe(f"jobhandlers gen-tests: no such values file: {', '.join(missing)}"), file=sys.stderr)
            return EXIT_INPUT
        examples = (examples or []) + list(args.values)
    if not (examples if examples is not None else helm.examples()):
        where = args.examples if args.examples is not None else helm.EXAMPLES_DIR
        print(_safe(f"jobhandlers gen-tests: no values files given and no *.yaml in {where}"), file=sys.stderr)
        return EXIT_INPUT
    out = args.out or gentests.GENERATED_DIR
    res = gentests.gen_tests(examples, out, check=args.check, versions=args.kube_version or model.KUBE_VERSIONS)
    for err in res.errors:
        print(_safe(f"gen-tests FAILED: {err}"), file=sys.stderr)
    if res.errors:
        return EXIT_FAIL
    if args.check:
        for s in res.stale:
            print(_safe(f"stale: {s}"))
        if res.stale:
            print(f"gen-tests --check: {len(res.stale)} stale file(s); run `{gentests.regenerate_command(out)}`")
            return EXIT_FAIL
        print(_safe(f"gen-tests --check: {gentests.display_path(out)}/ is up to date"))
        return EXIT_OK
    for w in res.written:
        print(_safe(f"wrote {w}"))
    print(f"gen-tests: {len(res.written)} file(s) changed")
    return EXIT_OK


def _gen_live(args: argparse.Namespace) -> int:
    """jobhandlers gen-tests --live VALUES [JOBS] --out DIR."""
    from .findings import render_findings
    from .live.generate import UpgradeFrom, generate

    if not 1 <= len(args.values) <= 2 or args.out is None or args.check or args.examples or args.kube_version:
        print("jobhandlers gen-tests --live: give VALUES [JOBS] and --out DIR (no --check, --examples, "
              "--kube-version)", file=sys.stderr)
        return EXIT_INPUT
    if args.max_job_seconds is not None and args.max_job_seconds < 1:
        print("jobhandlers gen-tests --live: --max-job-seconds must be >= 1", file=sys.stderr)
        return EXIT_INPUT
    if args.from_version and not args.upgrade_from:
        print("jobhandlers gen-tests --live: --from-version needs --from CHART", file=sys.stderr)
        return EXIT_INPUT
    upgrade = None
    if args.upgrade_from or args.from_values:
        upgrade = UpgradeFrom(args.upgrade_from, args.from_version, args.from_values)
    res = generate(args.values[0], args.values[1] if len(args.values) == 2 else None, args.out, args.max_job_seconds,
                   upgrade)
    if res.findings:
        sys.stderr.write(render_findings(res.findings, 1 + (len(args.values) == 2), "text"))
    if res.exit_code:
        return EXIT_INPUT
    for w in res.written:
        print(_safe(f"wrote {w}"))
    print(f"gen-tests --live: {len(res.written)} file(s) changed; run: pytest {args.out}")
    return EXIT_OK


COMMANDS = {"check": cmd_check, "grace": cmd_grace, "render": cmd_render, "gen-tests": cmd_gen_tests}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        charts.use(getattr(args, "chart", None))
    except charts.ChartError as exc:
        print(_safe(f"jobhandlers {args.command}: --chart {exc}"), file=sys.stderr)
        return EXIT_INPUT
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("jobhandlers: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the contract is "never a traceback"
        print(_safe(f"jobhandlers {args.command}: internal error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
