"""Helpers shared by the kind tests (smoke and scenarios): paths and polling."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, TypeVar

import pytest
from kubernetes import client

KIND_DIR = Path(__file__).resolve().parent
ROOT = KIND_DIR.parents[1]
DEFAULT_KUBECONFIG = KIND_DIR / ".work" / "kubeconfig"
T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 1.0) -> T:
    """Poll ``check`` until it returns a truthy value; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except client.ApiException as exc:  # transient API errors while polling
            last_error = exc
        if time.monotonic() > deadline:
            detail = f" (last API error: {last_error.status} {last_error.reason})" if last_error else ""
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


