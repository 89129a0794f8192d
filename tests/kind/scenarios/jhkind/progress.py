"""Progress lines with phase timings, printed as they happen and kept for the summary."""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class Progress:
    """One scenario's clock: `phase()` times a block, `note()` prints a line."""

    name: str
    t0: float = field(default_factory=time.monotonic)
    phases: dict[str, float] = field(default_factory=dict)
    facts: dict[str, object] = field(default_factory=dict)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def note(self, message: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')} {self.name} +{self.elapsed():6.1f}s] {message}"
        print(line, flush=True)
        # Also to the real terminal, so `make test-kind` shows progress even when
        # pytest captures output (captured copies still appear in failure reports).
        if sys.stdout is not sys.__stdout__:
            sys.__stdout__.write(line + "\n")
            sys.__stdout__.flush()

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        start = time.monotonic()
        self.note(f"{label} ...")
        ok = False
        try:
            yield
            ok = True
        finally:
            took = time.monotonic() - start
            self.phases[label] = round(took, 2)
            self.note(f"{label} {'done' if ok else 'FAILED'} in {took:.1f}s")

    def fact(self, key: str, value: object) -> None:
        """Record a measured number (printed and kept for the summary)."""
        self.facts[key] = value
        self.note(f"{key} = {value}")
