"""The API server fixture: one etcd + kube-apiserver per pytest session (see kubeapi.py).

Every test of this folder is in the xdist group `apiserver` (`make test` runs pytest with
`--dist loadgroup`), so one worker runs them all against one server; it is torn down, its
directory removed, at the end of the session.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# the parity property draws values as tests/unit's does (fuzz_support, schema_values)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))

from kubeapi import ApiServer, ApiServerError, missing_binaries, BUILD_HINT


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put this folder's tests in the xdist group `apiserver` (one worker, one server)."""
    for item in items:
        if "tests/apiserver/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group("apiserver"))


@pytest.fixture(scope="session")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A running validation API server (Kubernetes 1.37); a missing binary fails with the fix."""
    missing = missing_binaries()
    if missing:
        pytest.fail(f"missing {', '.join(map(str, missing))}: {BUILD_HINT}", pytrace=False)
    workdir = tmp_path_factory.mktemp("kube-apiserver")
    try:
        server = ApiServer.start(workdir)
    except ApiServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    with server:
        yield server
