"""Rules on environment variable names: what the API server's validation accepts, per version.

k8s.io/apimachinery/pkg/util/validation: IsEnvVarName below Kubernetes 1.32 (a C-identifier-like
name, not `.`, `..` or `..`-prefixed), IsRelaxedEnvVarName from 1.32 (RelaxedEnvironmentVariable-
Validation, KEP-4369: any printable ASCII but `=`). The same for an envFrom `prefix`. The schema
holds the relaxed rule for the chart's own env lists; this rule covers every version and every
container, the user's sidecars and init containers included."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Iterator

from .. import model
from ..findings import dotted
from .base import Context, Hit

_STRICT = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_RELAXED = re.compile(r"[ -<>-~]+")


def env_name_problem(name: str, kube_version: str) -> str | None:
    """Why the API server of `kube_version` refuses `name` as a variable name (or prefix); None if it accepts."""
    if not _RELAXED.fullmatch(name):
        return "it must consist only of printable ASCII characters other than '='"
    if model.at_least(kube_version, model.RELAXED_ENV_NAMES_MIN_VERSION):
        return None
    if not _STRICT.fullmatch(name):
        return ("below Kubernetes 1.32 it must consist of letters, digits, '_', '-' or '.', and must not start "
                "with a digit")
    if name in (".", "..") or name.startswith(".."):
        return "it must not be '.' or '..', nor start with '..'"
    return None


def _names(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(key path, text) of every env[].name and envFrom[].prefix in the values, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("env", "envFrom") and isinstance(value, list):
                field = "name" if key == "env" else "prefix"
                for i, item in enumerate(value):
                    if isinstance(item, dict) and isinstance(item.get(field), str) and (item[field] or key == "env"):
                        yield path + (key, i, field), item[field]
            yield from _names(value, path + (key,))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _names(item, path + (i,))


def _jh050(ctx: Context) -> Iterator[Hit]:
    for path, name in _names(ctx.values):
        why = env_name_problem(name, ctx.kube_version)
        if why is None:
            continue
        what = "variable name" if path[-1] == "name" else "envFrom prefix"
        yield Hit([path], f"{dotted(list(path))}={name!r}: the API server of Kubernetes {ctx.kube_version} refuses this "
                  f"{what}: {why}, so no pod of the chart would be created",
                  "rename it to letters, digits and '_' (e.g. MY_SETTING): valid on every version; printable ASCII "
                  "other than '=' only from Kubernetes 1.32")
