"""The state directory shared with the chart's probes: heartbeat, drain and stopping files."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

HEARTBEAT = "heartbeat"
DRAIN = "drain"
STOPPING = "stopping"


class StateDir:
    """Marker files in JOBHANDLERS_STATE_DIR (an emptyDir: the root filesystem stays read-only)."""

    def __init__(self, path: Path, heartbeat_interval: float) -> None:
        self.path = path
        self.interval = heartbeat_interval
        self._last_beat = 0.0

    def prepare(self) -> None:
        """Create the directory; drop the previous container's heartbeat and stopping files
        (the emptyDir outlives a container restart; `drain` is operator state and stays)."""
        self.path.mkdir(parents=True, exist_ok=True)
        for name in (HEARTBEAT, STOPPING):
            (self.path / name).unlink(missing_ok=True)

    def _write(self, name: str) -> None:
        """Create or refresh a file atomically (temp file + rename)."""
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            os.fchmod(fd, 0o644)
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

    def set_stopping(self) -> None:
        self._write(STOPPING)
