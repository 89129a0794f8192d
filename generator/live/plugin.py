"""The pytest side of a generated live suite: options, fixtures and the closing table.
The generated conftest.py imports it (`from jobhandlers.live.plugin import *`).

Options: --context (the kubeconfig context; the kubeconfig is pytest-helm-charts'
`kube_config`: --kube-config or KUBECONFIG), --max-job-seconds (cap the jobs' length for
a quick run), --chart (another chart than the tool's), --live-report (the JSON file)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Iterator

import pytest

from .. import charts
from . import report
from .checks import Live
from .helmcli import Helm
from .kube import Kube

__all__ = ["pytest_addoption", "pytest_runtest_makereport", "pytest_terminal_summary", "live_results", "live_factory"]

_RESULTS = report.Results()
_META: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("jobhandlers-live")
    g.addoption("--context", default=None, help="kubeconfig context (default: its current context)")
    g.addoption("--max-job-seconds", type=int, default=None,
                help="cap the jobs' length (default: the generated cap, else maxJobRuntimeSeconds)")
    g.addoption("--chart", default=None, help="chart directory or .tgz (default: the chart shipped with the tool)")
    g.addoption("--live-report", default="live-results.json", help="where to write the measured numbers as JSON")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    name = getattr(item.function, "live_test", None) if hasattr(item, "function") else None
    if name and rep.when == "call":
        _RESULTS.outcome(name, rep.passed)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _RESULTS.rows:
        return
    path = Path(config.getoption("--live-report"))
    _RESULTS.write_json(path, _META)
    terminalreporter.write_sep("=", "jobhandlers live: measured numbers (seconds)")
    terminalreporter.write_line(_RESULTS.table())
    terminalreporter.write_line(f"JSON: {path}")


@pytest.fixture(scope="session")
def live_results() -> report.Results:
    """The numbers of every live test of the session."""
    return _RESULTS


@pytest.fixture(scope="module")
def live_factory(request: pytest.FixtureRequest, kube_config: str) -> Iterator[Any]:
    """make(expect, values) -> Live: a scratch namespace (Pod Security restricted) that is
    removed after the module, with the release uninstalled first when a test left it."""
    made: list[Live] = []
    opt = request.config.getoption

    def make(expect: dict[str, Any], values: list[Path]) -> Live:
        context = opt("--context")
        kube = Kube(kube_config or None, context)
        namespace = f"jhlive-{expect['name'][:30].rstrip('-')}-{secrets.token_hex(3)}"
        kube.create_namespace(namespace)
        chart = Path(opt("--chart")) if opt("--chart") else charts.DEFAULT_DIR
        helm = Helm(chart, expect["release"], namespace, kube_config or None, context)
        cap = opt("--max-job-seconds") or expect.get("max_job_seconds")
        live = Live(kube, helm, namespace, expect["release"], values, expect, _RESULTS, cap)
        _META.update({"values": [str(v) for v in values], "namespace": namespace, "cluster": kube.version(),
                      "chart": charts.describe(chart)})
        made.append(live)
        return live

    yield make
    for live in made:
        if live.installed:
            live.helm.uninstall(live.max_grace + 60)
        live.kube.delete_namespace(live.namespace)
