"""A background poll: a daemon thread that calls poll() every `interval` s until stop(),
keeping what it raised in `errors` (the test reports them, never silently)."""

from __future__ import annotations

import threading
from typing import Self


class Poller:
    """Subclasses define poll(); start() returns self."""

    def __init__(self, interval: float):
        self.interval = interval
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # kept for the test to report
                self.errors.append(repr(exc)[:300])
            self._stop.wait(self.interval)

    def poll(self) -> None:
        raise NotImplementedError
