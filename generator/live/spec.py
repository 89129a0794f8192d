"""The job description of `gen-tests --live`: per role with jobs, how to submit a job of N
seconds and read its state, as commands run in a Ready pod of a role (`in`) or as a Kubernetes
Job from a role's pod template (`job`).

It is a YAML file of its own beside the values (values.schema.json forbids unknown keys,
so a `tests:` key would fail `helm install`). Read with the values loader (positions, YAML
1.1, every input problem a finding), validated against jobs.schema.json and against the
values; every problem is a Finding with file:line:col, key path and fix (exit 2)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import jsonschema

from .. import model
from ..findings import ERROR, INPUT, WARNING, Finding, dotted
from ..schema import _expand, _extra_keys, _fix_for
from ..values.file import ValuesFile
from ..values.full import load_values

SCHEMA_FILE = Path(__file__).with_name("jobs.schema.json")
STATES = ("queued", "running", "done", "failed")
DEFAULT_TIMEOUT = 60


@dataclass(frozen=True)
class Command:
    """A command run in container `container` of role `role`: in a Ready pod (mode exec) or
    as a Kubernetes Job from the role's pod template (mode job, optionally another image)."""

    role: str
    container: str
    argv: tuple[str, ...]
    mode: str = "exec"
    image: str = ""
    id_path: str = ""
    id_pattern: str = ""
    state_path: str = ""
    runs_path: str = ""
    states: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    timeout: int = DEFAULT_TIMEOUT

    def as_dict(self) -> dict[str, Any]:
        """A plain literal for the generated suite."""
        return {"role": self.role, "container": self.container, "argv": list(self.argv), "mode": self.mode,
                "image": self.image, "id_path": self.id_path,
                "id_pattern": self.id_pattern, "state_path": self.state_path, "runs_path": self.runs_path,
                "states": {k: list(v) for k, v in sorted(self.states.items())}, "timeout": self.timeout}


@dataclass(frozen=True)
class RoleJobs:
    """How to run and read one job of a role."""

    role: str
    job_seconds: int | None
    submit: Command
    state: Command


@lru_cache(maxsize=1)
def _validator() -> Any:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def default_path(values: Path) -> Path:
    """Where the description of `values` is looked for: <stem>.jobs.yaml beside it."""
    return values.with_name(values.stem + ".jobs.yaml")


def _schema_findings(vf: ValuesFile) -> list[Finding]:
    out: list[Finding] = []
    errors = [leaf for err in _validator().iter_errors(vf.data) for leaf in _expand(err)]
    for err in errors:
        path = list(err.absolute_path)
        keys = _extra_keys(err) if err.validator == "additionalProperties" else []
        for key in keys or [None]:
            kpath = path + [key] if key is not None else path
            line, col, _ = vf.position(kpath)
            if key is not None:
                msg, fix = f"unknown key `{key}`", f"remove `{key}` or correct its spelling (docs/tool.md lists the keys)"
            else:
                msg, fix = err.message[:200], _fix_for(err)
            out.append(Finding(vf.path, line, col, "JH065", ERROR, INPUT, dotted(kpath), msg, fix))
    return out


def _at(vf: ValuesFile, path: list[str | int], rule: str, message: str, fix: str,
        severity: str = ERROR) -> Finding:
    line, col, _ = vf.position(path)
    return Finding(vf.path, line, col, rule, severity, INPUT if severity == ERROR else "policy", dotted(path),
                   message, fix)


def _command(vf: ValuesFile, role: str, key: str, raw: Mapping[str, Any], roles: list[str],
             findings: list[Finding]) -> Command:
    base: list[str | int] = ["roles", role, key]
    mode = "job" if "job" in raw else "exec"
    how = "job" if mode == "job" else "in"
    where = str(raw.get(how) or "")
    if ("in" in raw) == ("job" in raw):
        findings.append(_at(vf, base, "JH067", f"{key} needs exactly one of `in` (run in a Ready pod of that role) and "
                            "`job` (run as a Kubernetes Job from that role's pod template)",
                            "keep `in: ROLE` where the exec API is allowed, else `job: ROLE`"))
    elif where not in roles:
        findings.append(_at(vf, base + [how], "JH066", f"`{how}: {where}` is not a role of the values file",
                            f"use one of {', '.join(roles)}"))
    if "image" in raw and mode != "job":
        findings.append(_at(vf, base + ["image"], "JH067", "`image` is for the Job form only: an exec runs in the "
                            "pod's own image", f"replace `in: {where}` with `job: {where}`, or remove `image`"))
    argv = tuple(str(a) for a in raw["command"])
    need = "{seconds}" if key == "submit" else "{id}"
    if not any(need in a for a in argv):
        findings.append(_at(vf, base + ["command"], "JH067", f"the {key} command never uses {need}",
                            f"put {need} where the command takes the job's "
                            f"{'length in seconds' if key == 'submit' else 'id'}"))
    if key == "submit":
        if bool(raw.get("id")) == bool(raw.get("idPattern")):
            findings.append(_at(vf, base, "JH067", "submit needs exactly one of `id` (JSON output) and `idPattern` "
                                "(text output)", "add `id: <dotted path>` or `idPattern: <regex with one group>`"))
        if raw.get("idPattern"):
            try:
                if re.compile(raw["idPattern"]).groups < 1:
                    raise re.error("no group")
            except re.error as exc:
                findings.append(_at(vf, base + ["idPattern"], "JH067", f"idPattern is not a regex with a group: {exc}",
                                    "use e.g. '(\\d+)' (the first group is the id)"))
    elif not raw.get("field"):
        findings.append(_at(vf, base, "JH067", "state needs `field`: the dotted path to the state in its JSON output",
                            "add e.g. `field: state`"))
    states = {k: tuple(v) for k, v in (raw.get("states") or {}).items()}
    return Command(role=where, container=str(raw.get("container") or where), argv=argv, mode=mode,
                   image=str(raw.get("image") or ""),
                   id_path=str(raw.get("id") or ""), id_pattern=str(raw.get("idPattern") or ""),
                   state_path=str(raw.get("field") or ""), runs_path=str(raw.get("runs") or ""),
                   states=states, timeout=int(raw.get("timeoutSeconds") or DEFAULT_TIMEOUT))


def load(path: Path, values: Mapping[str, Any], display: str | None = None) -> tuple[list[RoleJobs], list[Finding]]:
    """The description of `path` checked against the (merged) `values`: roles and findings.
    Errors are input findings (exit 2); JH068 (jobs longer than maxJobRuntimeSeconds) warns."""
    vf = load_values(path, display)
    if vf.findings:
        return [], [f._replace(fix="write the job description (docs/tool.md) or give its path as JOBS")
                    if f.rule == "JHY005" else f for f in vf.findings]
    findings = _schema_findings(vf)
    if findings:
        return [], findings
    roles = model.enabled_roles(values)
    out: list[RoleJobs] = []
    for role, raw in vf.data["roles"].items():
        if role not in roles:
            findings.append(_at(vf, ["roles", role], "JH066", f"`{role}` is not an enabled role of the values file",
                                f"use one of {', '.join(roles)}"))
            continue
        submit = _command(vf, role, "submit", raw["submit"], roles, findings)
        state = _command(vf, role, "state", raw["state"], roles, findings)
        seconds = raw.get("jobSeconds")
        limit = model.role_grace(values, role).max_job_runtime
        if seconds is not None and seconds > limit:
            findings.append(_at(vf, ["roles", role, "jobSeconds"], "JH068",
                                f"jobs of {seconds} s are longer than handlers.{role}.maxJobRuntimeSeconds={limit}: "
                                "the grace is too short for them and the rollout test will fail",
                                f"set handlers.{role}.maxJobRuntimeSeconds to at least {seconds}", WARNING))
        out.append(RoleJobs(role=role, job_seconds=seconds, submit=submit, state=state))
    return out, findings
