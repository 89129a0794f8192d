"""A loaded values file (plain data as helm sees it, plus the round-trip document that knows
where every key is) and the limits every reader enforces. Imports no reader: the readers
(fast.py, full.py) import this module, never the other way round."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

    from ..findings import Finding

# Expanded node budget: a values file is a few hundred nodes; "billion laughs" is not.
MAX_NODES = 100_000
MAX_DEPTH = 64
MAX_BYTES = 4 * 1024 * 1024


class ValuesFile:
    """A loaded values file: plain data (JSON-like, as Helm sees it) plus the round-trip
    document that knows where every key is."""

    __slots__ = ("path", "data", "doc", "findings")

    def __init__(self, path: str, data: dict[str, Any] | None = None, doc: Any = None,
                 findings: list[Finding] | None = None) -> None:
        self.path = path
        self.data: dict[str, Any] = {} if data is None else data
        self.doc = doc  # ruamel CommentedMap, or None (an empty file, or read without positions)
        self.findings: list[Finding] = [] if findings is None else findings

    def __repr__(self) -> str:
        return f"ValuesFile(path={self.path!r}, findings={self.findings!r})"

    @property
    def ok(self) -> bool:
        """True when the file was usable (no input findings)."""
        return not self.findings

    def position(self, path: Sequence[str | int]) -> tuple[int, int, bool]:
        """1-based (line, col) of the deepest key of `path` present in the file, and whether
        the whole path was found. (1, 1, False) when nothing of it is in the file."""
        if self.doc is None:
            return 1, 1, False
        from .positions import locate
        return locate(self.doc, path)
