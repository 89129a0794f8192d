"""`jobhandlers gen-tests --live VALUES [JOBS] --out DIR`: a pytest suite that installs the
values on a live cluster and checks the lifecycle with the app's own jobs. Every number the
suite expects (graces, maxJobRuntimeSeconds, drain deadlines, timeouts) comes from model/."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic, model
from ..findings import Finding, exit_code
from ..gentests import HEADER, _env
from ..schema import validate as check_schema
from ..values.full import load_values
from ..values.merge import merged
from . import spec

CONFTEST = "conftest.py"
HEADER_LIVE = HEADER + " (jobhandlers gen-tests --live)"


@dataclass(frozen=True)
class UpgradeFrom:
    """--from CHART [--from-version V] [--from-values FILE]: what the upgrade test installs
    first. chart None: the tool's own chart (only the values differ)."""

    chart: str | None = None
    version: str | None = None
    values: Path | None = None

    def local_chart(self) -> Path | None:
        """The chart as a path when it is one (a folder or a .tgz), else None (oci://, repo/name)."""
        if self.chart is None or "://" in self.chart:
            return None
        path = Path(self.chart)
        return path if path.exists() or self.chart.startswith((".", "/")) or self.chart.endswith(".tgz") else None


@dataclass
class LiveResult:
    """What gen-tests --live wrote, or the findings that stopped it."""

    written: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)


def file_name(values: Path) -> str:
    """values/prod.yaml -> test_live_prod.py."""
    return "test_live_" + re.sub(r"[^0-9a-zA-Z]+", "_", values.stem).strip("_").lower() + ".py"


def expectations(values: dict[str, Any], roles: list[spec.RoleJobs], name: str,
                 max_job_seconds: int | None) -> dict[str, Any]:
    """Every literal the generated suite asserts against."""
    handlers = values.get("handlers") or {}
    release = "live"
    full = values.get("fullnameOverride") or f"{release}-jobhandlers"
    out_roles = {}
    for role in model.enabled_roles(values):
        g = model.role_grace(values, role)
        out_roles[role] = {"kind": model.role_kind(values, role), "object": f"{full}-{role}",
                           "replicas": int((handlers[role] or {}).get("replicas") or 1),
                           "grace": g.effective, "max_job_runtime": g.max_job_runtime,
                           "drain_deadline": g.drain_deadline}
    migration = values.get("migration") or {}
    wait = bool((values.get("waitForMigrations") or {}).get("enabled", True))
    job_roles = sorted(r.role for r in roles)
    return {
        "name": name, "release": release, "roles": out_roles, "max_job_seconds": max_job_seconds,
        "job_roles": {r.role: {"seconds": r.job_seconds, "submit": r.submit.as_dict(), "state": r.state.as_dict()}
                      for r in roles},
        "migration": bool(migration.get("enabled", True)),
        "install_timeout": int(migration.get("activeDeadlineSeconds") or 600) + 300,
        "waiting_role": (job_roles[0] if job_roles else sorted(out_roles)[0]) if wait else None,
    }


def _upgrade_findings(frm: UpgradeFrom) -> list[Finding]:
    """A local --from chart must be a chart folder or a .tgz; --from-values must load."""
    out: list[Finding] = []
    local = frm.local_chart()
    if local is not None and not ((local / "Chart.yaml").is_file() or (local.is_file() and local.suffix == ".tgz")):
        out.append(Finding(str(local), 0, 0, "JH069", "error", "input", "",
                           "--from names no chart: neither a folder with Chart.yaml nor a .tgz",
                           "give a chart folder, a packaged .tgz, oci://HOST/PATH/NAME or REPO/NAME"))
    if frm.values is not None:
        vf = load_values(frm.values)
        out += vf.findings
    return out


def _rel(path: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix()


def _upgrade_expect(frm: UpgradeFrom, out_dir: Path) -> dict[str, Any]:
    """What the generated upgrade test installs first: local paths relative to the suite."""
    local = frm.local_chart()
    return {"chart": {"local": _rel(local, out_dir)} if local is not None else {"ref": frm.chart} if frm.chart else None,
            "version": frm.version,
            "values": _rel(frm.values, out_dir) if frm.values is not None else None}


def _upgrade_code(up: dict[str, Any] | None) -> str:
    """FROM_CHART and FROM_VALUES of the generated suite (empty without --from/--from-values)."""
    if up is None:
        return ""
    chart = up["chart"]
    chart_expr = ("None  # the tool's own chart" if chart is None else
                  f"HERE / {chart['local']!r}" if "local" in chart else repr(chart["ref"]))
    values_expr = f"[HERE / {up['values']!r}]" if up["values"] else "VALUES"
    return f"FROM_CHART = {chart_expr}\nFROM_VALUES = {values_expr}\n"


def _suite_timeout(expect: dict[str, Any]) -> int:
    """Per test: install timeout, or the longest job plus the longest grace, with margin (the
    upgrade test installs and then upgrades: twice the install timeout)."""
    grace = max(r["grace"] for r in expect["roles"].values())
    longest = max([r["seconds"] or expect["roles"][k]["max_job_runtime"] for k, r in expect["job_roles"].items()] or [0])
    if expect["max_job_seconds"]:
        longest = min(longest, expect["max_job_seconds"])
    installs = 2 if expect.get("upgrade") else 1
    return max(installs * expect["install_timeout"], 2 * (longest + grace) + 600)


def generate(values_path: Path, jobs_path: Path | None, out_dir: Path, max_job_seconds: int | None = None,
             upgrade: UpgradeFrom | None = None) -> LiveResult:
    """Write test_live_<name>.py and conftest.py into out_dir; input problems as findings."""
    res = LiveResult()
    jobs_path = jobs_path or spec.default_path(values_path)
    vf = load_values(values_path)
    res.findings = vf.findings or check_schema(vf)
    if upgrade is not None:
        res.findings += _upgrade_findings(upgrade)
    if exit_code(res.findings):
        return res
    values = merged(vf.data)
    roles, found = spec.load(jobs_path, values)
    res.findings += found
    if exit_code(res.findings):
        return res
    name = re.sub(r"[^0-9a-z]+", "-", values_path.stem.lower()).strip("-") or "app"
    expect = expectations(values, roles, name, max_job_seconds)
    expect["upgrade"] = _upgrade_expect(upgrade, out_dir) if upgrade is not None else None
    rel = _rel(values_path, out_dir)
    env = _env()
    regenerate = f"jobhandlers gen-tests --live {values_path} {jobs_path} --out {out_dir}"
    if upgrade is not None:
        regenerate += "".join(f" {flag} {value}" for flag, value in (
            ("--from", upgrade.chart), ("--from-version", upgrade.version), ("--from-values", upgrade.values)) if value)
    if max_job_seconds:
        regenerate += f" --max-job-seconds {max_job_seconds}"
    texts = {
        file_name(values_path): env.get_template("test_live.py.j2").render(
            header=HEADER_LIVE, regenerate=regenerate, values_name=values_path.name, jobs_name=jobs_path.name,
            values_from_test=rel, expect=expect, timeout=_suite_timeout(expect),
            upgrade_code=_upgrade_code(expect["upgrade"])),
        CONFTEST: env.get_template("live_conftest.py.j2").render(header=HEADER_LIVE, regenerate=regenerate),
    }
    conftest = out_dir / CONFTEST
    if conftest.is_file() and not conftest.read_text(encoding="utf-8").startswith(HEADER):
        res.findings.append(Finding(str(conftest), 0, 0, "JH069", "error", "input", "",
                                    "a conftest.py not written by jobhandlers is in the output directory",
                                    "choose another --out, or import jobhandlers.live.plugin in your conftest.py"))
        return res
    out_dir.mkdir(parents=True, exist_ok=True)
    for fname, text in texts.items():
        target = out_dir / fname
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            atomic.write_text(target, text)
            res.written.append(target)
    return res
