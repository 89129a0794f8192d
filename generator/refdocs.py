"""docs/rules.md, generated from chart/lifecycle.yaml (rules, version gates) and
generator/platforms.py (JH021's limits), so the reference never drifts from what the chart
and `jobhandlers check` do. `python -m generator.refdocs [--check]` (make render / make test)."""

from __future__ import annotations

import sys

from . import atomic, charts, lifecycle, platforms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rules_markdown() -> str:
    """The policy rules, the version gates and the platform limits, as one Markdown page."""
    cluster_ids = [rule_id for rule_id, rule in lifecycle.RULES.items() if rule.get("lookup")]
    chart_ids = [rule_id for rule_id in lifecycle.chart_rules() if rule_id not in cluster_ids]
    out = [
        "# Policy rules and version gates",
        "",
        "Generated from [`chart/lifecycle.yaml`](../chart/lifecycle.yaml) by "
        "`python -m generator.refdocs` (`make render`); `make test` fails when it is stale.",
        "",
        "## Rules",
        "",
        "`jobhandlers check` runs every rule and reports each finding with its file, line, key "
        "path, message and fix; errors exit 1, warnings do not fail it. The chart itself refuses "
        f"{', '.join(chart_ids)} at render, every problem in one message (GitLab checkConfig "
        "style, each line starting with `jobhandlers:` and ending with its rule id), so "
        "`helm install` refuses those values too, and `check` refuses them first."
        + (f" {', '.join(cluster_ids)} the chart judges against the cluster (helm's `lookup`: "
           "`helm install`/`upgrade` and `--dry-run=server` only; `helm template` and `check` cannot "
           "see it, chart column *refuses (cluster)*)." if cluster_ids else ""),
        "",
        "| id | severity | chart | title | fires when | fix |",
        "|---|---|---|---|---|---|",
    ]
    for rule_id, rule in lifecycle.RULES.items():
        out.append(f"| {rule_id} | {rule['severity']} | {('refuses (cluster)' if rule.get('lookup') else 'refuses') if rule.get('chart') else ''} | "
                   f"{_cell(rule['title'])} | {_cell(rule['when'])} | {_cell(rule['fix'])} |")
    out += [
        "",
        "## Version gates",
        "",
        "A field that a Kubernetes version drops, ignores or rejects is rendered only from the "
        "gate's version on (`semverCompare \">=V-0\"`, so vendor versions such as `v1.29.3-eks-1` "
        "match), with the fallback below it. The chart asks `jobhandlers.gate` "
        "(`chart/templates/_lifecycle.tpl`); the tool asks `generator/lifecycle.py`. "
        f"Without `--kube-version`, the tool assumes {lifecycle.DATA['kubeVersions']['default']}; "
        f"every example is rendered for {', '.join(lifecycle.DATA['kubeVersions']['matrix'])}.",
        "",
        "| gate | from | feature gate | KEP | stage there | below |",
        "|---|---|---|---|---|---|",
    ]
    for name, gate in sorted(lifecycle.GATES.items(), key=lambda kv: (tuple(
            int(p) for p in str(kv[1]["minKubeVersion"]).split(".")), kv[0])):
        out.append(f"| `{name}` | {gate['minKubeVersion']} | {_cell(gate.get('featureGate', ''))} | "
                   f"{_cell(gate.get('kep', ''))} | {_cell(gate.get('stage', ''))} | {_cell(gate['below'])} |")
    out += [
        "",
        "## Platform limits behind JH021",
        "",
        "`--platform NAME[=SECONDS]` (repeatable) or the values key `platforms` overrides a limit.",
        "",
        "| platform | what | limit | caps | above it | source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in platforms.PLATFORMS:
        name = p.name if p.limit_seconds is not None else f"{p.name}=SECONDS"
        limit = f"{p.limit_seconds} s" if p.limit_seconds is not None else "yours"
        out.append(f"| `{name}` | {_cell(p.title)} | {limit} | {p.what} | {_cell(p.consequence)} | <{p.source}> |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/rules.md, or with --check fail (exit 1) when it is stale."""
    args = sys.argv[1:] if argv is None else argv
    path: Path = charts.CHECKOUT_DIR.parent / "docs" / "rules.md"
    want = rules_markdown()
    have = path.read_text(encoding="utf-8") if path.is_file() else ""
    return atomic.write_or_check(
        path, want, have, "--check" in args,
        f"{path} is stale (chart/lifecycle.yaml or generator/platforms.py changed). "
        "Fix: run `python -m generator.refdocs` (make render).",
        f"refdocs: wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
