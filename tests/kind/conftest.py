"""Session fixtures for tests on the live kind cluster (smoke + scenarios).

The cluster must exist (``make kind-up``); a missing cluster is an error,
never a skip. Kubeconfig: $KUBECONFIG, else tests/kind/.work/kubeconfig.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest
from kubernetes import client, config

from kindtest import DEFAULT_KUBECONFIG, KIND_DIR, ROOT, wait_for

@pytest.fixture(scope="session")
def kind_cluster_name() -> str:
    """Name of the kind cluster under test."""
    return os.environ.get("KIND_CLUSTER_NAME", "jobhandlers")


@pytest.fixture(scope="session")
def kind_bin() -> str:
    """Path of the kind binary (make tools builds bin/kind)."""
    path = os.environ.get("KIND", str(ROOT / "bin" / "kind"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"kind binary {path} not found: run `make tools`")
    return path


@pytest.fixture(scope="session")
def kubeconfig_path() -> Path:
    """Kubeconfig of the live cluster; fails loudly when the cluster is absent."""
    path = Path(os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG)
    if not path.is_file():
        pytest.fail(f"no kubeconfig at {path}: run `make kind-up` first")
    return path


@pytest.fixture(scope="session")
def k8s_api(kubeconfig_path: Path) -> client.ApiClient:
    """ApiClient for the cluster, checked to answer."""
    api = config.new_client_from_config(config_file=str(kubeconfig_path))
    try:
        client.VersionApi(api).get_code(_request_timeout=10)
    except Exception as exc:  # noqa: BLE001 - any failure here means no usable cluster
        pytest.fail(f"cluster from {kubeconfig_path} does not answer ({exc}): run `make kind-up`")
    return api


@pytest.fixture(scope="session")
def core_v1(k8s_api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(k8s_api)


@pytest.fixture(scope="session")
def apps_v1(k8s_api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(k8s_api)


@pytest.fixture(scope="session")
def batch_v1(k8s_api: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(k8s_api)


@pytest.fixture(scope="session")
def load_image(kind_bin: str, kind_cluster_name: str) -> Callable[[str], str]:
    """Return a function that loads a local docker image into every node."""

    def load(image: str) -> str:
        result = subprocess.run(
            [kind_bin, "load", "docker-image", "--name", kind_cluster_name, image],
            capture_output=True, text=True, timeout=300,
        )
        if result.returncode != 0:
            pytest.fail(f"kind load docker-image {image} failed:\n{result.stderr}")
        return image

    return load


@pytest.fixture(scope="session")
def smoke_image(load_image: Callable[[str], str]) -> str:
    """The locally built smoke-agent image, loaded into the cluster."""
    result = subprocess.run(
        [str(KIND_DIR / "scripts" / "smoke-image.sh")], capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(f"building the smoke image failed:\n{result.stderr}")
    return load_image(result.stdout.strip())


@pytest.fixture
def namespace(core_v1: client.CoreV1Api, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (labels via indirect param)."""
    labels = getattr(request, "param", None) or {}
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    name = f"t-{stem}-{uuid.uuid4().hex[:5]}"
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))
    wait_for(
        lambda: any(sa.metadata.name == "default" for sa in core_v1.list_namespaced_service_account(name).items),
        60, f"default service account in {name}",
    )
    yield name
    core_v1.delete_namespace(name, propagation_policy="Background")


# KIND_DEADLINE (s since the epoch, .ci/run sets it): a test that has not started by then is not
# run. It is reported as SKIPPED with this reason (pytest's -ra summary), and .ci/run lists every
# such test in its last lines and fails nothing for it. Unset (make test-kind), every test runs.
DEADLINE_REASON = "not run: KIND_DEADLINE had passed"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Past KIND_DEADLINE: skip before any fixture is set up (a shared install is not started). A
    rerun (pytest-rerunfailures' execution_count > 1) always runs: a failure is never hidden as a skip."""
    deadline = os.environ.get("KIND_DEADLINE")
    if deadline and getattr(item, "execution_count", 1) <= 1 and time.time() > float(deadline):
        pytest.skip(f"{DEADLINE_REASON} {time.time() - float(deadline):.0f} s before it would start: {item.nodeid}")


# Scenarios that run first in their pass (in this order), then the rest in their numbers' order (1-8,
# the lifecycle basics, first): on a slow machine KIND_DEADLINE cuts the end of each pass. These prove
# what the open issues ask and nothing else proves: 22 (Galaxy's Kubernetes runner: rollout, SIGKILL,
# the node drain), 21 and 23 (launching roles on the reference workload, 2 min together), 26 (scale-in:
# preferIdle, the HPA, metrics-server).
FIRST = (22, 21, 23, 26)
# Where the `heavy` scenarios (16b, 22e: an install of their own each, 4-8 min) go in the main pass:
# after the lifecycle basics (1-8), before 10. Last (stop 45's rehearsal ci5), 22e started when the
# other lanes were nearly done and ran alone for its last 8 min (2834 s); first, they would add two
# Galaxy installs to the Galaxy lane's at the start, where the CPU is already saturated.
HEAVY_AFTER = 8


def _order(item: pytest.Item) -> tuple[int, float]:
    """FIRST's scenarios, then the scenario file's number: test_1_ < test_2_ < ... < test_10_ (file order is
    10, 11, ..., 1); the `heavy` ones after HEAVY_AFTER (since stop 45 they are in the main pass: each
    starts when a lane frees up, not after the whole pass). Stop 46 tried the longest files right after
    them (24, 17, 18, 25): slower (rehearsals ci8, ci9: 2942 s and 3238 s against ci7's 2812 s), and
    18a and 18b, side by side, timed out filling Celery's windows."""
    m = re.match(r"test_(\d+)", item.path.name)
    if not m:  # the smoke tests
        return (-1, 0)
    n = int(m.group(1))
    if item.get_closest_marker("heavy"):
        return (len(FIRST), HEAVY_AFTER + 0.5)
    return (FIRST.index(n), n) if n in FIRST else (len(FIRST), n)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """FIRST's scenarios, then the others in their numbers' order (the smoke tests first), the heavy ones
    after HEAVY_AFTER: the lifecycle basics (1-8) before the apps and the later features, so that under
    KIND_DEADLINE what is left out is the latest; a file's own order stays (the sort is stable)."""
    items.sort(key=_order)


# The lanes' tail. pytest-xdist's loadgroup (3.8.0) gives a lane more work while it holds at most 2
# pending tests, so each lane runs one test with up to 2 more queued behind it, and those stay its
# own: in stop 48's rehearsal ci12 one lane ran 24c, 24b and 25b (185-202 s each) one after the other
# for its last 400 s while the others had nothing left (0.4-0.6 of the 2 cores in use). One queued
# test per lane is the least a worker can run with (it starts a test only once it knows the next
# one, or is told to stop), so the last tests go to the lanes that free up first.
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class OneQueued(LoadGroupScheduling):
        def _reschedule(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return OneQueued(config, log)


# Why a scenario was rerun: pytest-rerunfailures' summary names it (-raR) but, under xdist, not its error.
# The controller gets every worker's report; the first lines of each rerun's error go to the terminal
# summary as "RERUN <nodeid>: <message>", which .ci/run's failure list prints (stop 46: ci7's 4a rerun
# left no reason anywhere).
_RERUNS: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "rerun":
        text = (report.longreprtext or "").strip().splitlines()
        message = next((line[1:].strip() for line in text if line.startswith("E ")), text[-1] if text else "?")
        _RERUNS.append(f"RERUN {report.nodeid}: {report.when}: {message[:600]}")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    if _RERUNS and not hasattr(config, "workerinput"):
        terminalreporter.section("why each rerun ran (the first attempt's error)")
        for line in _RERUNS:
            terminalreporter.write_line(line)
