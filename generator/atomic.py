"""Write a generated file without ever leaving it half-written: a temp file in the same
directory, then a rename."""

from __future__ import annotations

import os
import sys
import tempfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically, mode 0644."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_or_check(path: Path, want: str, have: str, check: bool, stale: str, wrote: str) -> int:
    """The generated-file commands' one step: 0 when `have` is `want`; with `check`, print
    `stale` (what changed, and the fix) to stderr and return 1; else write `want` atomically,
    print `wrote` and return 0."""
    if want == have:
        return 0
    if check:
        print(stale, file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, want)
    print(wrote)
    return 0
