"""`jobhandlers gen-tests`: one pytest file per values file, from jinja2 templates, with every
expected value computed now by the policy model (model/).

The files import only the installed `jobhandlers` package and pytest, and render with the
user's helm (helm.find_helm), so `jobhandlers gen-tests my-values.yaml --out tests/` works
from the wheel; in this repository `make gen-tests` writes tests/generated/ from
values-examples/."""

from __future__ import annotations

import os
import pprint
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import jinja2

from . import atomic, charts, model
from .findings import exit_code
from .schema import validate as check_schema
from .render import helm
from .values.full import load_values
from .values.merge import merged

# Installed (no checkout): tests/generated/ in the current directory.
GENERATED_DIR = helm.REPO_ROOT / "tests" / "generated" if charts.IN_CHECKOUT else Path("tests/generated")
HEADER = "# generated — do not edit."
TEMPLATE = "test_example.py.j2"


class GenError(Exception):
    """An example cannot be turned into tests (unusable or schema-invalid values)."""


def _pyrepr(value: Any) -> str:
    """A stable Python literal (sorted dicts); a dict of dicts gets one entry per line."""
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        body = "".join(f"    {k!r}: {pprint.pformat(v, width=200, sort_dicts=True)},\n" for k, v in sorted(value.items()))
        return "{\n" + body + "}"
    return pprint.pformat(value, width=100, sort_dicts=True)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["pyrepr"] = _pyrepr
    return env


def generated_file_name(example: Path) -> str:
    """values-examples/argo-cd.yaml -> test_example_argo_cd.py."""
    return "test_example_" + re.sub(r"[^0-9a-zA-Z]+", "_", example.stem).strip("_").lower() + ".py"


def expectations(values: dict[str, Any], versions: Sequence[str]) -> dict[str, Any]:
    """Every value a generated test asserts, from the policy model."""
    migration = values.get("migration") or {}
    database = values.get("database") or {}
    migration_enabled = bool(migration.get("enabled", True))
    hook_mode = migration_enabled and bool(migration.get("useHelmHooks", True))
    roles = {}
    handlers = values.get("handlers") or {}
    for role in model.enabled_roles(values):
        g = model.role_grace(values, role)
        roles[role] = {"grace": g.effective, "drain_deadline": g.drain_deadline,
                       "pdb": bool(((handlers[role] or {}).get("pdb") or {}).get("enabled", True))}
    per_version = {
        v: {"startup_probe": model.startup_probe_rendered(values, v),
            "liveness_initial_delay": model.liveness_initial_delay(values, v),
            "probe_grace": model.probe_grace(values, v),
            "pdb_api_version": model.pdb_api_version(v)}
        for v in versions
    }
    probes = {v: {role: _probe_expectations(values, role, v) for role in model.enabled_roles(values)}
              for v in versions}
    pods = {v: {role: {"init_order": model.init_container_order(values, role, v),
                       "regular_sidecars": model.regular_sidecars(values, role, v),
                       "drain_mode": model.role_drain(values, role).mode,
                       "pre_stop": model.prestop_action(values, role, v),
                       "stop_signal": model.stop_signal_rendered(values, role, v),
                       "node_loss_toleration": model.node_loss_toleration(values, role)}
                for role in model.enabled_roles(values)} for v in versions}
    return {
        "probes": probes,
        "pods": pods,
        "versions": list(versions),
        "migration_enabled": migration_enabled,
        "hook_mode": hook_mode,
        "hook_weight": int(migration.get("hookWeight", -5)),
        "chart_secret_hook": hook_mode and not database.get("existingSecret")
        and bool(database.get("secretIsHook", True)),
        "wait_for_migrations": bool((values.get("waitForMigrations") or {}).get("enabled", True)),
        # what wait-for-migrations runs: commands.schemaWait (one process that polls) when set,
        # else the schemaCheck retry loop
        "schema_check": " ".join(str(x) for x in ((values.get("commands") or {}).get("schemaWait")
                                                   or (values.get("commands") or {}).get("schemaCheck") or [])),
        "image_tag": str((values.get("image") or {}).get("tag") or ""),
        "post_deploy": model.post_deploy_enabled(values),
        "post_migrate": " ".join(str(x) for x in (values.get("commands") or {}).get("postMigrate") or []),
        "roles": roles,
        "per_version": per_version,
    }


def _probe_expectations(values: dict[str, Any], role: str, version: str) -> dict[str, Any]:
    """kind -> what the rendered probe must be (None when it is not rendered)."""
    out: dict[str, Any] = {}
    for kind in model.PROBE_KINDS:
        p = model.resolve_probe(values, role, kind)
        rendered = p.enabled and (kind != "startup" or model.role_startup_probe_rendered(values, role, version))
        if not rendered:
            out[kind] = None
            continue
        out[kind] = {"handler": "exec" if p.handler == "heartbeat" else p.handler, "heartbeat": p.handler == "heartbeat",
                     "periodSeconds": p.period, "failureThreshold": p.failure, "timeoutSeconds": p.timeout,
                     "grace": model.rendered_probe_grace(p, version)}
        if kind == "liveness":
            out[kind]["initialDelaySeconds"] = model.role_liveness_initial_delay(values, role, version)
    return out


def _source_name(example: Path) -> str:
    """How the header names the values file: relative to the repository in the checkout,
    else to the current directory (absolute when outside both)."""
    base = helm.REPO_ROOT if charts.IN_CHECKOUT else Path.cwd()
    try:
        return example.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return example.resolve().as_posix()


def generate_one(example: Path, versions: Sequence[str] = model.KUBE_VERSIONS, *, test_dir: Path | None = None,
                 regenerate: str = "jobhandlers gen-tests") -> str:
    """The generated test module for one example, to be written into `test_dir` (the module
    finds the values file relative to itself; absolute when test_dir is None)."""
    vf = load_values(example)
    problems = vf.findings or check_schema(vf)
    if exit_code(problems):
        raise GenError("; ".join(f"{f.location}: {f.rule} {f.message}" for f in problems))
    target = example.resolve()
    from_test = Path(os.path.relpath(target, test_dir.resolve())).as_posix() if test_dir is not None else target.as_posix()
    ctx = expectations(merged(vf.data), versions)
    ctx.update(example=_source_name(example), example_from_test=from_test, regenerate=regenerate)
    return _env().get_template(TEMPLATE).render(**ctx)


def regenerate_command(out_dir: Path) -> str:
    """What the header tells a reader to run: `make gen-tests` for this repository's own
    tests/generated/, else the tool's command."""
    if charts.IN_CHECKOUT and out_dir.resolve() == GENERATED_DIR.resolve():
        return "make gen-tests"
    return "jobhandlers gen-tests"


@dataclass
class GenResult:
    """Outcome of gen-tests."""

    written: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No errors and (for --check) nothing stale."""
        return not self.errors and not self.stale


def _existing(out_dir: Path) -> dict[str, str]:
    """Generated files currently in out_dir (recognised by their header)."""
    found = {}
    for p in sorted(out_dir.glob("test_*.py")):
        text = p.read_text(encoding="utf-8")
        if text.startswith(HEADER):
            found[p.name] = text
    return found


def gen_tests(examples: Sequence[Path] | None = None, out_dir: Path = GENERATED_DIR, *, check: bool = False,
              versions: Sequence[str] = model.KUBE_VERSIONS) -> GenResult:
    """Generate (or, with check, compare) one test file per example; obsolete generated
    files are removed (reported stale with check)."""
    examples = list(examples if examples is not None else helm.examples())
    result = GenResult()
    wanted: dict[str, str] = {}
    names: dict[str, Path] = {}
    regenerate = regenerate_command(out_dir)
    for ex in examples:
        name = generated_file_name(ex)
        if name in names:
            result.errors.append(f"{ex}: its tests would be {name}, like those of {names[name]}; rename one of them")
            continue
        names[name] = ex
        try:
            wanted[name] = generate_one(ex, helm.example_versions(ex, versions), test_dir=out_dir,
                                        regenerate=regenerate)
        except GenError as exc:
            result.errors.append(f"{ex}: {exc}")
        except (jinja2.TemplateError, KeyError, TypeError, ValueError, ArithmeticError) as exc:
            result.errors.append(f"{ex}: cannot generate tests: {type(exc).__name__}: {exc}")
    if result.errors:
        return result
    existing = _existing(out_dir) if out_dir.is_dir() else {}
    rel = display_path(out_dir)
    for name in sorted(set(wanted) | set(existing)):
        if name not in existing:
            result.stale.append(f"{rel}/{name} (missing)")
        elif name not in wanted:
            result.stale.append(f"{rel}/{name} (obsolete)")
        elif existing[name] != wanted[name]:
            result.stale.append(f"{rel}/{name} (differs)")
    if check:
        return result
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(wanted.items()):
        if existing.get(name) != text:
            atomic.write_text(out_dir / name, text)
            result.written.append(f"{rel}/{name}")
    for name in sorted(set(existing) - set(wanted)):
        (out_dir / name).unlink()
        result.written.append(f"{rel}/{name} (removed)")
    result.stale = []
    return result


def display_path(path: Path) -> str:
    """path relative to the current directory when it is under it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
