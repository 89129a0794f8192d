"""Signals and wake-ups: SIGTERM/SIGINT = drain and exit, SIGUSR2 = toggle drain mode.

Signal handlers only set flags, touch marker files and write one byte to a self-pipe, so the
work loop (which sleeps in select() on that pipe) wakes within the same tick. No locks are
taken inside a handler (a handler interrupting a lock holder in the same thread deadlocks).
"""

from __future__ import annotations

import os
import select
import signal
import time

from workload.state import StateDir


class Lifecycle:
    """Stop/drain requests coming from signals, and the loop's interruptible sleep."""

    def __init__(self, state: StateDir) -> None:
        self.state = state
        self.stop_at: float | None = None
        self.stop_signal: str | None = None
        self.forced = False
        self.usr2 = 0
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def install(self) -> None:
        """Install the handlers (main thread only)."""
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGUSR2, self._on_usr2)

    def _on_stop(self, signum: int, _frame: object) -> None:
        if self.stop_at is None:
            self.stop_at = time.monotonic()
            self.stop_signal = signal.Signals(signum).name
            try:
                self.state.set_stopping()
            except OSError:
                pass  # the loop still stops claiming: stop_at is set
        else:
            self.forced = True  # a second signal: requeue now and exit
        self.wake()

    def _on_usr2(self, _signum: int, _frame: object) -> None:
        try:
            self.state.set_drain(not self.state.draining())
        except OSError:
            pass
        self.usr2 += 1
        self.wake()

    @property
    def stopping(self) -> bool:
        return self.stop_at is not None

    def since_stop(self) -> float:
        return 0.0 if self.stop_at is None else time.monotonic() - self.stop_at

    def wake(self) -> None:
        """Make the current or next wait() return at once (thread- and signal-safe)."""
        try:
            os.write(self._write, b"x")
        except (BlockingIOError, OSError):
            pass

    def wait(self, timeout: float) -> None:
        """Sleep up to `timeout` seconds or until wake()."""
        ready, _, _ = select.select([self._read], [], [], max(0.0, timeout))
        if ready:
            try:
                while os.read(self._read, 4096):
                    pass
            except BlockingIOError:
                pass
