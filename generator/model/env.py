"""The env of every container the chart renders: the chart's variables first, then the user's."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

from .migration import post_deploy_enabled
from .roles import _block, _role_spec, enabled_roles, role_kind

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

# The chart's own env variables, in the order it defines them before the user's env
# (chart/templates/_pod.tpl: "jobhandlers.handler.env", "jobhandlers.common.env").
ROLE_ENV: tuple[str, ...] = ("DATABASE_URL", "JOBHANDLERS_ROLE", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS",
                             "DRAIN_DEADLINE_SECONDS")
COMMON_ENV: tuple[str, ...] = ("DATABASE_URL", "JOBHANDLERS_STATE_DIR", "HEARTBEAT_INTERVAL_SECONDS")
START_DRAINED_ENV = "JOBHANDLERS_START_DRAINED"
ACCEPT_AHEAD_ENV = "JOBHANDLERS_SCHEMA_ACCEPT_AHEAD"
WAIT_TIMEOUT_ENV = "WAIT_TIMEOUT_SECONDS"

# a StatefulSet role's identity (_identity.tpl), right after JOBHANDLERS_ROLE; the ordinal from 1.28
IDENTITY_ENV: tuple[str, ...] = ("JOBHANDLERS_POD_NAME", "JOBHANDLERS_ORDINAL")
CHART_ENV_NAMES: frozenset[str] = frozenset(ROLE_ENV + IDENTITY_ENV + (START_DRAINED_ENV, ACCEPT_AHEAD_ENV,
                                                                       WAIT_TIMEOUT_ENV))


def _accept_ahead(values: Mapping[str, Any]) -> bool:
    return str(_block(values.get("waitForMigrations")).get("acceptAhead")).lower() == "true"


def handler_env_names(values: Mapping[str, Any], role: str) -> list[str]:
    """The chart's variables of a role's handler container, in order (before the user's env).
    A StatefulSet role's identity is listed whatever the version (JH025 judges the ordinal)."""
    names = list(ROLE_ENV)
    if role_kind(values, role) == "StatefulSet":
        at = names.index("JOBHANDLERS_ROLE") + 1  # _pod.tpl: the identity follows the role
        names[at:at] = IDENTITY_ENV
    if _role_spec(values, role).get("startDrained"):
        names.append(START_DRAINED_ENV)
    if _accept_ahead(values):
        names.append(ACCEPT_AHEAD_ENV)
    return names


def common_env_names(values: Mapping[str, Any]) -> list[str]:
    """The chart's variables of a container without a role (wait-for-database, migrate,
    downgrade, the helm test's schema-check), in order."""
    return list(COMMON_ENV) + ([ACCEPT_AHEAD_ENV] if _accept_ahead(values) else [])


class EnvContainer(namedtuple("EnvContainer", ['where', 'chart_env', 'user_env', 'env_from'])):
    """A rendered container that gets env: the chart's variables first, then the user's
    entries (each with the key path it comes from)."""

    __slots__ = ()
    # where: str  — e.g. "role web: wait-for-migrations", "migration Job: migrate"
    # chart_env: tuple[str, ...]
    # user_env: tuple[tuple[tuple[str | int, ...], Mapping[str, Any]], ...]
    # env_from: bool  — envFrom present: names the chart cannot know


def _entries(items: Any, *prefix: str | int) -> list[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    return [((*prefix, i), e) for i, e in enumerate(items if isinstance(items, list) else []) if isinstance(e, Mapping)]


def _own_containers(where: str, items: list[tuple[tuple[str | int, ...], Mapping[str, Any]]]) -> list[EnvContainer]:
    """extraInitContainers / sidecars: the user's containers as written (no chart env)."""
    return [EnvContainer(f"{where} {c.get('name')}", (), tuple(_entries(c.get("env"), *path, "env")),
                         bool(c.get("envFrom"))) for path, c in items]


def env_containers(values: Mapping[str, Any]) -> list[EnvContainer]:
    """Every container the chart renders with env, and what its env list holds (_pod.tpl,
    _wait-for-migrations.tpl, _migration.tpl, tests/test.yaml)."""
    out: list[EnvContainer] = []
    chart_env, chart_from = _entries(values.get("env"), "env"), bool(values.get("envFrom"))
    inits = _entries(values.get("extraInitContainers"), "extraInitContainers")
    sidecars = _entries(values.get("sidecars"), "sidecars")
    for role in enabled_roles(values):
        spec = _role_spec(values, role)
        user = tuple(chart_env + _entries(spec.get("env"), "handlers", role, "env"))
        env_from = chart_from or bool(spec.get("envFrom"))
        names = handler_env_names(values, role)
        out.append(EnvContainer(f"role {role}: {role}", tuple(names), user, env_from))
        if _block(values.get("waitForMigrations")).get("enabled", True):
            out.append(EnvContainer(f"role {role}: wait-for-migrations", (*names, WAIT_TIMEOUT_ENV), user, env_from))
        out += _own_containers(f"role {role}: init container", inits + _entries(
            spec.get("extraInitContainers"), "handlers", role, "extraInitContainers"))
        out += _own_containers(f"role {role}: sidecar", sidecars + _entries(spec.get("sidecars"), "handlers", role,
                                                                           "sidecars"))
    mig = _block(values.get("migration"))
    common = tuple(common_env_names(values))
    user = tuple(chart_env + _entries(mig.get("env"), "migration", "env"))
    env_from = chart_from or bool(mig.get("envFrom"))
    # Job -> (main container, (the chart's init container, its chart env) or None, the user's env)
    wait_db = ("wait-for-database", common) if _block(mig.get("waitForDatabase")).get("enabled", True) else None
    jobs = {"migration": ("migrate", wait_db, user)} if mig.get("enabled", True) else {}
    if jobs and mig.get("useHelmHooks", True) and str(mig.get("onRollback")) == "downgrade":
        jobs["downgrade"] = ("downgrade", wait_db, user)  # the pre-rollback hook: the same pod, its own container name
    if post_deploy_enabled(values):  # waits for the schema instead of the database; postDeploy.env comes last
        jobs["post-migration"] = ("post-migrate", ("wait-for-migrations", (*common, WAIT_TIMEOUT_ENV)),
                                  user + tuple(_entries(_block(mig.get("postDeploy")).get("env"),
                                                        "migration", "postDeploy", "env")))
    for job, (main, wait, job_user) in jobs.items():
        if wait:
            out.append(EnvContainer(f"{job} Job: {wait[0]}", wait[1], job_user, env_from))
        out.append(EnvContainer(f"{job} Job: {main}", common, job_user, env_from))
        out += _own_containers(f"{job} Job: init container", inits + _entries(
            mig.get("extraInitContainers"), "migration", "extraInitContainers"))
        out += _own_containers(f"{job} Job: sidecar", [(p, c) for p, c in sidecars if c.get("migration")]
                               + _entries(mig.get("sidecars"), "migration", "sidecars"))
    if _block(values.get("helmTest")).get("enabled", True):
        out.append(EnvContainer("helm test: schema-check", common, user, env_from))
    return out


def env_references(value: str) -> list[str]:
    """The names a Kubernetes env value refers to as $(NAME), in order ($$ escapes a $;
    an unclosed $( is literal), like Kubernetes' own expansion."""
    refs, i = [], 0
    while i < len(value) - 1:
        if value[i] == "$":
            if value[i + 1] == "$":
                i += 2
                continue
            if value[i + 1] == "(":
                end = value.find(")", i + 2)
                if end != -1:
                    refs.append(value[i + 2:end])
                    i = end + 1
                    continue
        i += 1
    return refs
