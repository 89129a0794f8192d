"""The state directory shared with the chart's probes: heartbeat, drain, stopping and busy files."""

from __future__ import annotations

import os
import time
from pathlib import Path

HEARTBEAT = "heartbeat"
DRAIN = "drain"
STOPPING = "stopping"
BUSY = "busy"  # present while work runs (scaleIn.preferIdle's default busyPath)


class StateDir:
    """Marker files in JOBHANDLERS_STATE_DIR (an emptyDir: the root filesystem stays read-only)."""

    def __init__(self, path: Path, heartbeat_interval: float) -> None:
        self.path = path
        self.interval = heartbeat_interval
        self._last_beat = 0.0
        self._seq = 0
        self._busy = False

    def prepare(self) -> None:
        """Create the directory; drop the previous container's heartbeat and stopping files
        (the emptyDir outlives a container restart; `drain` is operator state and stays)."""
        self.path.mkdir(parents=True, exist_ok=True)
        for name in (HEARTBEAT, STOPPING, BUSY):
            (self.path / name).unlink(missing_ok=True)

    def _write(self, name: str) -> None:
        """Create or refresh a file atomically (temp file + rename). Lock-free (no tempfile
        module), because the SIGTERM handler calls it."""
        self._seq += 1
        tmp = self.path / f".{name}.{os.getpid()}.{self._seq}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, f"{time.time():.3f} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.path / name)

    def beat(self, force: bool = False) -> bool:
        """Touch the heartbeat unless it was touched less than an interval ago."""
        now = time.monotonic()
        if not force and self._last_beat and now - self._last_beat < self.interval:
            return False
        self._write(HEARTBEAT)
        self._last_beat = now
        return True

    def exists(self, name: str) -> bool:
        return (self.path / name).exists()

    def draining(self) -> bool:
        """True when the operator's drain marker is present."""
        return self.exists(DRAIN)

    def stopping(self) -> bool:
        return self.exists(STOPPING)

    def set_drain(self, on: bool) -> None:
        """Enter (write `drain`) or leave (remove it) drain mode."""
        self.path.mkdir(parents=True, exist_ok=True)
        if on:
            self._write(DRAIN)
        else:
            (self.path / DRAIN).unlink(missing_ok=True)

    def set_busy(self, on: bool) -> None:
        """Write `busy` when work starts running, remove it when none runs (a syscall per change)."""
        if on == self._busy:
            return
        if on:
            self._write(BUSY)
        else:
            (self.path / BUSY).unlink(missing_ok=True)
        self._busy = on

    def set_stopping(self) -> None:
        self._write(STOPPING)
