"""The API server fixtures: one etcd + kube-apiserver per minor and pytest session (see
kubeapi.py): `api` (1.37), `api_oldest` (1.29), and `server`, each of them in turn.

Every test of this folder is in the xdist group `apiserver` (`make test` runs pytest with
`--dist loadgroup`), so one worker runs them all against one server; it is torn down, its
directory removed, at the end of the session.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# the parity property draws values as tests/unit's does (fuzz_support, schema_values)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))

from kubeapi import MINORS, NEWEST, OLDEST, ApiServer, ApiServerError, missing_binaries, BUILD_HINT


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put this folder's tests in the xdist group `apiserver` (one worker, one server)."""
    for item in items:
        if "tests/apiserver/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group("apiserver"))


def _server(tmp_path_factory: pytest.TempPathFactory, minor: str) -> Iterator[ApiServer]:
    missing = missing_binaries((minor,))
    if missing:
        pytest.fail(f"missing {', '.join(map(str, missing))}: {BUILD_HINT}", pytrace=False)
    workdir = tmp_path_factory.mktemp(f"kube-apiserver-{minor}")
    try:
        server = ApiServer.start(workdir, minor=minor)
    except ApiServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    with server:
        yield server


@pytest.fixture(scope="session")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A running validation API server of the newest minor (1.37); a missing binary fails with the fix."""
    yield from _server(tmp_path_factory, NEWEST)


@pytest.fixture(scope="session")
def api_oldest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """The same for the oldest minor the version suite runs (1.29)."""
    yield from _server(tmp_path_factory, OLDEST)


def _of(request: pytest.FixtureRequest, minor: str) -> ApiServer:
    """The session's API server of `minor` (fixture api or api_oldest)."""
    return request.getfixturevalue({NEWEST: "api", OLDEST: "api_oldest"}[minor])


@pytest.fixture(scope="session", params=MINORS)
def server(request: pytest.FixtureRequest) -> ApiServer:
    """Each minor's API server in turn (a test run once per minor; `server.minor` says which)."""
    return _of(request, request.param)


@pytest.fixture
def servers(request: pytest.FixtureRequest) -> Callable[[str], ApiServer]:
    """minor -> that minor's API server (for tests parametrized by minor alongside other things)."""
    return lambda minor: _of(request, minor)
