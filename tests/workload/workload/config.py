"""Settings read from the environment (the chart's runtime contract plus test knobs)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


class ConfigError(Exception):
    """Unusable configuration: the message names the variable and the fix (exit 2)."""


def _number(env: Mapping[str, str], name: str, default: float, minimum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number; set it to a number of seconds >= {minimum:g}") from None
    if value < minimum:
        raise ConfigError(f"{name}={raw!r} is below {minimum:g}; set it to a value >= {minimum:g}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def database_url(env: Mapping[str, str] | None = None) -> str:
    """DATABASE_URL, or ConfigError when unset."""
    env = os.environ if env is None else env
    url = env.get("DATABASE_URL", "").strip()
    if not url:
        raise ConfigError("DATABASE_URL is not set; set it to a PostgreSQL URL, e.g. postgresql://user:pw@host:5432/db")
    return url


def image_version(env: Mapping[str, str] | None = None) -> int:
    """WORKLOAD_VERSION (1, 2 or 3; default 1): selects the schema head this build expects."""
    env = os.environ if env is None else env
    raw = env.get("WORKLOAD_VERSION", "1").strip() or "1"
    if raw not in ("1", "2", "3"):
        raise ConfigError(f"WORKLOAD_VERSION={raw!r} is not a known image version; set it to 1, 2 or 3")
    return int(raw)


@dataclass(frozen=True)
class Settings:
    """Everything a role needs; every duration is in seconds."""

    database_url: str
    version: int
    state_dir: Path
    heartbeat_interval: float
    drain_deadline: float
    start_drained: bool
    lease: float
    poll: float
    concurrency: int
    connect_timeout: float
    handler_id: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Read and validate the environment; raises ConfigError."""
        env = os.environ if env is None else env
        lease = _number(env, "WORKLOAD_LEASE_SECONDS", 30.0, 0.5)
        concurrency = _number(env, "WORKLOAD_CONCURRENCY", 2, 1)
        if concurrency != int(concurrency):
            raise ConfigError(f"WORKLOAD_CONCURRENCY={concurrency:g} is not a whole number; set it to 1, 2, ...")
        return cls(
            database_url=database_url(env),
            version=image_version(env),
            state_dir=Path(env.get("JOBHANDLERS_STATE_DIR", "").strip() or "/run/jobhandlers"),
            heartbeat_interval=_number(env, "HEARTBEAT_INTERVAL_SECONDS", 5.0, 0.0),
            drain_deadline=_number(env, "DRAIN_DEADLINE_SECONDS", 25.0, 0.0),
            start_drained=_flag(env, "JOBHANDLERS_START_DRAINED"),
            lease=lease,
            poll=_number(env, "WORKLOAD_POLL_SECONDS", 1.0, 0.01),
            concurrency=int(concurrency),
            connect_timeout=_number(env, "WORKLOAD_CONNECT_TIMEOUT", 5.0, 1.0),
            handler_id=env.get("WORKLOAD_HANDLER_ID", "").strip() or f"{socket.gethostname()}:{os.getpid()}",
        )
