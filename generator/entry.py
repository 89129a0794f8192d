"""The `jobhandlers` console script: `check` on clean files answers from check/fast.py
(no argparse, ruamel or jsonschema import); everything else is the full CLI (cli.py)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["check"]:
        from .check.fast import run

        try:
            code = run(args[1:])
        except KeyboardInterrupt:
            print("jobhandlers: interrupted", file=sys.stderr)
            return 130
        except Exception:  # noqa: BLE001 - the full path decides and reports
            code = None
        if code is not None:
            return code
    from .cli import main as full

    return full(args)


if __name__ == "__main__":
    sys.exit(main())
