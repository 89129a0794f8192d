"""Bounded waits on conditions: poll a probe until it returns something truthy."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition did not hold within its timeout (an assertion failure of the scenario)."""


def wait_until(
    probe: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.5,
    describe: Callable[[], str] | None = None,
) -> T:
    """Return the first truthy probe() result; raise WaitTimeout naming `what` after `timeout` s.

    `describe()` is called on timeout to say what the state was instead.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
            last_error = None
        except WaitTimeout:
            raise
        except Exception as exc:  # transient API errors: keep polling until the deadline
            last_error = exc
        if time.monotonic() >= deadline:
            detail = describe() if describe else ""
            if last_error is not None:
                detail += f" (last error: {last_error!r})"
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}. {detail}".rstrip())
        time.sleep(interval)


def hold_for(probe: Callable[[], str | None], seconds: float, what: str, interval: float = 0.5) -> None:
    """Observation window: probe() returns None while the invariant holds, or a message
    describing the violation; fail at the first violation within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        problem = probe()
        if problem:
            raise AssertionError(f"{what}: {problem}")
        time.sleep(interval)
