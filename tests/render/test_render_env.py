"""The env of every container the chart renders: the chart's own variables come first, then
the user's env, so a user's $(VAR) means the same in every container it is copied into
(Kubernetes expands $(VAR) in an env value only from names defined earlier in the same
container). The model (generator.model.env_containers, JH026) is held equal to the render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator import model
from generator.render import helm
from generator.values.full import load_values
from generator.values.merge import merged
from render_helpers import EXAMPLES

STATE = "/run/jobhandlers"
PROXY = {"name": "proxy", "image": "example/proxy:1", "migration": True, "env": [{"name": "P", "value": "1"}]}
RENDER_INIT = {"name": "render", "image": "example/render:1", "env": [{"name": "OUT", "value": "/tmp/conf"}]}
VALUES: dict[str, Any] = {
    "env": [{"name": "STATE_FILE", "value": "$(JOBHANDLERS_STATE_DIR)/f"}],
    "handlers": {"web": {"startDrained": True,
                         "env": [{"name": "DEADLINE", "value": "$(DRAIN_DEADLINE_SECONDS)s"},
                                 {"name": "AGAIN", "value": "$(STATE_FILE).2"}]}},
    "migration": {"onRollback": "downgrade", "env": [{"name": "BEAT", "value": "every $(HEARTBEAT_INTERVAL_SECONDS)s"}]},
    "commands": {"downgrade": ["workload", "downgrade"]},
    "waitForMigrations": {"acceptAhead": True},
    "sidecars": [PROXY],
    "extraInitContainers": [RENDER_INIT],
}


def expand(env: list[dict[str, Any]]) -> dict[str, str]:
    """Kubernetes' expansion of a container's env list: $(NAME) from names defined earlier
    (valueFrom entries count, with an unknown value), $$ -> $, otherwise literal."""
    out: dict[str, str] = {}
    for entry in env:
        value, text, i = str(entry.get("value", "")), "", 0
        while i < len(value):
            if value.startswith("$$", i):
                text, i = text + "$", i + 2
            elif value.startswith("$(", i) and value.find(")", i) != -1:
                end = value.find(")", i)
                name = value[i + 2:end]
                text, i = text + (out[name] if name in out else value[i:end + 1]), end + 1
            else:
                text, i = text + value[i], i + 1
        out[entry["name"]] = text if "value" in entry else f"<{entry['name']} from {next(iter(entry['valueFrom']))}>"
    return out


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


def containers(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """'<object name>/<container>' -> container, for every pod-bearing object."""
    out = {}
    for obj in objs:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job", "Pod"):
            spec = pod_spec(obj)
            for c in (spec.get("initContainers") or []) + spec["containers"]:
                out[f"{obj['metadata']['name']}/{c['name']}"] = c
    return out


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, Any]]:
    return containers(helm.render(overrides=VALUES, kube_version="1.34"))


# every container kind that gets the user's env: (rendered key, the chart's names before it)
ROLE = ["DATABASE_URL", "JOBHANDLERS_ROLE", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS",
        "DRAIN_DEADLINE_SECONDS", "JOBHANDLERS_START_DRAINED", "JOBHANDLERS_SCHEMA_ACCEPT_AHEAD"]
COMMON = ["DATABASE_URL", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS", "JOBHANDLERS_SCHEMA_ACCEPT_AHEAD"]
KINDS = {
    "handler": ("demo-jobhandlers-web/web", ROLE, ["STATE_FILE", "DEADLINE", "AGAIN"]),
    "wait-for-migrations": ("demo-jobhandlers-web/wait-for-migrations", ROLE + ["WAIT_TIMEOUT_SECONDS"],
                            ["STATE_FILE", "DEADLINE", "AGAIN"]),
    "wait-for-database": ("demo-jobhandlers-migration/wait-for-database", COMMON, ["STATE_FILE", "BEAT"]),
    "migrate": ("demo-jobhandlers-migration/migrate", COMMON, ["STATE_FILE", "BEAT"]),
    "downgrade": ("demo-jobhandlers-downgrade/downgrade", COMMON, ["STATE_FILE", "BEAT"]),
    "helm test": ("demo-jobhandlers-test/schema-check", COMMON, ["STATE_FILE", "BEAT"]),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_chart_variables_precede_the_users_env_and_resolve(rendered, kind: str) -> None:
    key, chart, user = KINDS[kind]
    env = rendered[key]["env"]
    assert [e["name"] for e in env] == chart + user, key
    values = expand(env)
    assert values["STATE_FILE"] == f"{STATE}/f"  # the chart-wide $(JOBHANDLERS_STATE_DIR) resolves everywhere
    if "DEADLINE" in values:  # the role's own env sees the role's variables
        assert values["DEADLINE"] == f"{values['DRAIN_DEADLINE_SECONDS']}s" and values["AGAIN"] == f"{STATE}/f.2"
    if "BEAT" in values:
        assert values["BEAT"] == "every 5s"


def test_extra_init_containers_and_sidecars_keep_their_env_as_written(rendered) -> None:
    for pod in ("demo-jobhandlers-web", "demo-jobhandlers-job", "demo-jobhandlers-migration"):
        assert rendered[f"{pod}/proxy"]["env"] == PROXY["env"]
        assert rendered[f"{pod}/render"]["env"] == RENDER_INIT["env"]


def test_procrastinate_heartbeat_log_resolves_in_the_wait_too() -> None:
    """The issue's case: the app's settings run in wait-for-migrations (its schema check) and
    open WORKER_HEARTBEAT_LOG; it must not reach them as the literal $(JOBHANDLERS_STATE_DIR)/..."""
    example = Path(helm.EXAMPLES_DIR / "procrastinate.yaml")
    got = containers(helm.render([example], kube_version="1.34"))
    for key in ("demo-jobhandlers-job/job", "demo-jobhandlers-job/wait-for-migrations"):
        assert expand(got[key]["env"])["WORKER_HEARTBEAT_LOG"] == f"{STATE}/worker-heartbeat.log", key


def _rendered_key(where: str, objs_by_suffix: dict[str, str]) -> str:
    """The model's container description -> '<object>/<container>'."""
    scope, name = where.split(": ", 1)
    name = name.split(" ")[-1]  # "init container render" -> "render"
    if scope.startswith("role "):
        return f"{objs_by_suffix[scope[5:]]}/{name}"
    if scope == "helm test":
        return f"{objs_by_suffix['test']}/{name}"
    return f"{objs_by_suffix[scope.removesuffix(' Job')]}/{name}"


def _version(example: Path) -> str:
    """1.34, or the example's lowest version when it needs a newer one (# kube-versions)."""
    versions = helm.example_versions(example)
    return "1.34" if "1.34" in versions else versions[0]


CASES = [(e.stem, [e], {}, _version(e)) for e in EXAMPLES] + [
    ("shaped-1.34", [], VALUES, "1.34"),
    ("shaped-1.28", [], {**VALUES, "sidecars": [{k: v for k, v in PROXY.items() if k != "migration"}]}, "1.28")]


@pytest.mark.parametrize("files, over, version", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_model_env_containers_equal_the_render(files: list[Path], over: dict[str, Any], version: str) -> None:
    objs = helm.render(files, kube_version=version, overrides=over)
    got = containers(objs)
    user: dict[str, Any] = {}
    for f in files:
        loaded = load_values(f)
        assert loaded.ok
        user = loaded.data
    values = merged({**user, **over})
    suffixes = {o["metadata"]["name"].removeprefix("demo-jobhandlers-"): o["metadata"]["name"]
                for o in objs if o["kind"] in ("Deployment", "StatefulSet", "Job", "Pod")}
    suffixes.update({k.split("-")[0]: v for k, v in suffixes.items() if k.startswith("migration-")})  # gitops hash
    seen = set()
    for c in model.env_containers(values):
        key = _rendered_key(c.where, suffixes)
        env = got[key].get("env") or []
        names = [e["name"] for e in env]
        assert names[:len(c.chart_env)] == list(c.chart_env), key
        assert env[len(c.chart_env):] == [e for _, e in c.user_env], key
        seen.add(key)
    # every rendered container that carries the user's env is in the model
    for key, container in got.items():
        if any(e["name"] == "DATABASE_URL" for e in container.get("env") or []):
            assert key in seen, key
