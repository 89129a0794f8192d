"""What every rule works with: the Context it reads, the Hit it yields, the Rule record."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any

KeyPath = tuple[str, ...]


class _Skip(Exception):
    """A value a rule needs is missing or mistyped (the schema check reports that)."""


class Hit(namedtuple("Hit", ['paths', 'message', 'fix'])):
    """One rule violation before it is located: the key paths it concerns (the first one
    present in the user's file is where it is reported), the message and the fix."""

    __slots__ = ()
    # paths: Sequence[KeyPath]
    # message: str
    # fix: str


class Context(namedtuple("Context", ['values', 'user', 'kube_version', 'platforms'], defaults=((),))):
    """What a rule sees: merged values (defaults + file), the file's own values, the target
    kube version."""

    __slots__ = ()
    # values: Mapping[str, Any]
    # user: Mapping[str, Any]
    # kube_version: str
    # platforms: tuple[tuple[plat.Platform, int], ...] = ()

    def get(self, dotted_path: str, default: Any = None) -> Any:
        """Merged value at a dotted path, or default."""
        node: Any = self.values
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def user_sets(self, dotted_path: str) -> bool:
        """True when the user's file itself sets the key to a non-null value."""
        node: Any = self.user
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return node is not None

    def num(self, dotted_path: str) -> float:
        """A numeric merged value; _Skip when missing or not a number."""
        value = self.get(dotted_path)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Skip(dotted_path)
        return value

    def flag(self, dotted_path: str, default: bool) -> bool:
        """A boolean merged value (default when missing); _Skip when mistyped."""
        value = self.get(dotted_path, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _Skip(dotted_path)
        return value

    def hook_mode(self) -> bool:
        """The migration runs as a pre-install/pre-upgrade hook."""
        return self.flag("migration.enabled", True) and self.flag("migration.useHelmHooks", True)


class Rule(namedtuple("Rule", ['id', 'severity', 'title', 'doc', 'fix', 'check'])):
    """A policy rule and its documentation."""

    __slots__ = ()
    # id: str
    # severity: str
    # title: str
    # doc: str  — what is wrong and why (README)
    # fix: str  — the generic fix (README); hits carry the concrete one
    # check: Callable[[Context], Iterable[Hit]]


def _p(text: str) -> KeyPath:
    return tuple(text.split("."))

