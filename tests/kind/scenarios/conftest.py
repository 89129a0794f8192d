"""Fixtures of the kind scenarios: the cluster (KUBECONFIG or the kind-up kubeconfig), the
images loaded into it, the external PostgreSQL, and one fresh Scenario per test
(restricted namespace + database + helm release), dumped on failure and removed after."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Iterator

import pytest

from jhkind import postgres as pg_mod
from jhkind import setup
from jhkind.helm import ROOT
from jhkind.cluster import RESTRICTED_LABELS, Kube
from jhkind.helm import Helm
from jhkind.progress import Progress, recorded
from jhkind.scenario import Scenario

RESULTS = ROOT / "bench-results"


def _fail(exc: Exception) -> None:
    pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def kind_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> str:
    """KUBECONFIG when given, else the kubeconfig `make kind-up` wrote (a missing one fails);
    a private copy, so helm keeps working while kind-up rewrites the original."""
    try:
        return setup.private_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
    except setup.SetupError as exc:
        _fail(exc)
        raise


@pytest.fixture(scope="session")
def kube_config(kind_kubeconfig: str) -> str:
    """pytest-helm-charts' kube_config, pointed at the kind cluster."""
    return kind_kubeconfig


@pytest.fixture(scope="session")
def kube(kind_kubeconfig: str) -> Kube:
    k = Kube(kind_kubeconfig)
    try:
        version = k.server_version()
    except Exception as exc:
        pytest.fail(f"cannot reach the cluster of {kind_kubeconfig}: {exc}", pytrace=False)
    Progress("session").note(f"cluster {kind_kubeconfig}: Kubernetes {version}")
    return k


@pytest.fixture(scope="session")
def helm(kind_kubeconfig: str) -> Helm:
    try:
        return Helm(kind_kubeconfig)
    except FileNotFoundError as exc:
        _fail(exc)
        raise


@pytest.fixture(scope="session")
def images_loaded(kind_cluster_name: str) -> list[str]:
    """Build the images when missing (`make image`) and `kind load` them into the cluster."""
    try:
        return setup.load_images(Progress("session"), kind_cluster_name)
    except setup.SetupError as exc:
        _fail(exc)
        raise


@pytest.fixture(scope="session")
def postgres(kube: Kube, images_loaded: list[str]) -> pg_mod.Postgres:
    p = Progress("session")
    with p.phase("external PostgreSQL (namespace jh-postgres)"):
        return pg_mod.install(kube)


@pytest.fixture(scope="session")
def scenario_summary() -> Iterator[dict]:
    """Per-scenario phase timings and facts, written to bench-results/kind-scenarios.json."""
    summary: dict = {}
    yield summary
    if summary:  # merged under a lock: parallel workers (make test-kind) each add theirs
        RESULTS.mkdir(exist_ok=True)
        with open(RESULTS / ".kind-scenarios.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = RESULTS / "kind-scenarios.json"
            try:
                merged = json.loads(path.read_text()) if path.is_file() else {}
            except ValueError:
                merged = {}
            merged.update(summary)
            tmp = RESULTS / f"kind-scenarios.json.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(merged, indent=2, default=str))
            tmp.replace(path)


@pytest.fixture(scope="session", autouse=True)
def live_progress(request) -> Iterator[None]:
    """Progress lines reach the terminal while the test runs, capture or not."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    reporter = request.config.pluginmanager.getplugin("terminalreporter")

    def emit(line: str) -> None:
        if capman is None or reporter is None or not capman.is_globally_capturing():
            return  # with -s the print() already reached the terminal
        with capman.global_and_fixture_disabled():
            reporter.write_line(line)

    Progress.terminal = emit
    yield
    Progress.terminal = None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@contextlib.contextmanager
def _open_scenario(request, kube: Kube, helm: Helm, postgres: pg_mod.Postgres, kube_cluster,
                   scenario_summary: dict, workdir: Path, tag: str = "") -> Iterator[Scenario]:
    """A fresh namespace (PSA restricted), database and release; dumped on failure, removed after.

    Cleanup waits until the scenario's pods are gone (force_remove_pods), not for the namespace:
    its finalization (≈ 10 s each under load, ≈ 3 min of the run) goes on in the background,
    and every namespace has a name of its own."""
    short = request.node.name.split("[")[0].removeprefix("test_")[:18].rstrip("_").replace("_", "-") + tag
    namespace = f"jh-{short}-{secrets.token_hex(2)}"
    progress = Progress(short)
    with progress.phase(f"namespace {namespace} + database"):
        kube.create_namespace(namespace, dict(RESTRICTED_LABELS))
        workdir.mkdir(parents=True, exist_ok=True)
        sc = Scenario(kube, helm, postgres, namespace, workdir, progress, kube_cluster.kube_client).open()
    with recorded(scenario_summary, request.node.name + (f"[{tag.lstrip('-')}]" if tag else ""), progress,
                  request.node):
        try:
            yield sc
        finally:
            rep = getattr(request.node, "rep_call", None)
            with progress.phase("cleanup"):
                sc.close(rep is None or rep.failed)


@pytest.fixture
def scenario(request, kube: Kube, helm: Helm, postgres: pg_mod.Postgres, kube_cluster,
             scenario_summary: dict, tmp_path: Path) -> Iterator[Scenario]:
    """A fresh namespace (PSA restricted), database and release for one test."""
    with _open_scenario(request, kube, helm, postgres, kube_cluster, scenario_summary, tmp_path) as sc:
        yield sc


@pytest.fixture
def scenario_pair(request, kube: Kube, helm: Helm, postgres: pg_mod.Postgres, kube_cluster,
                  scenario_summary: dict, tmp_path: Path) -> Iterator[tuple[Scenario, Scenario]]:
    """Two independent scenarios (namespaces -a and -b) for one test that runs two variants at once."""
    with _open_scenario(request, kube, helm, postgres, kube_cluster, scenario_summary, tmp_path / "a", "-a") as a, \
            _open_scenario(request, kube, helm, postgres, kube_cluster, scenario_summary, tmp_path / "b", "-b") as b:
        yield a, b
