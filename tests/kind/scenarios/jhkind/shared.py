"""One install shared by the tests of a module (a Galaxy costs minutes of a 2-core machine):
its namespace, database and scenario, built once by a module fixture (`open_shared`), and
each test's own progress and summary entry on it (`per_test`). Each test checks what it needs
first, so any of them also runs alone."""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any, Callable, Iterator

from .cluster import RESTRICTED_LABELS, Kube
from .diagnostics import dump_namespace
from .helm import Helm, HelmResult
from .postgres import Postgres
from .progress import Progress, recorded
from .scenario import Scenario


class Shared:
    """A module's install: its scenario, how its helm install went (None until it ran), what the
    install was (for the failure message), anything the module keeps beside it (`extra`), and
    clean-ups to run before the scenario is closed (its pods still there) and after."""

    def __init__(self, sc: Scenario, what: str):
        self.sc, self.what = sc, what
        self.install: HelmResult | None = None
        self.extra: dict[str, Any] = {}
        self.before_close: list[Callable[[], None]] = []
        self.after_close: list[Callable[[], None]] = []

    def failed(self) -> bool:
        return self.install is None or self.install.rc != 0


@contextlib.contextmanager
def open_shared(kube: Kube, helm: Helm, postgres: Postgres, workdir: Path, prefix: str, name: str,
                what: str) -> Iterator[Shared]:
    """A namespace jh-<prefix>-<hex> (Pod Security restricted) + database + Scenario; after the
    module: its before_close hooks, the scenario closed (dumped when the install failed: a
    failed test dumped it already) and the namespace deleted, then its after_close hooks."""
    namespace = f"jh-{prefix}-{secrets.token_hex(2)}"
    progress = Progress(name)
    kube.create_namespace(namespace, dict(RESTRICTED_LABELS))
    shared = Shared(Scenario(kube, helm, postgres, namespace, workdir, progress).open(), what)
    try:
        yield shared
    finally:
        with progress.phase("cleanup"):
            _run_all(shared.before_close, namespace)
            shared.sc.close(shared.failed(), delete_namespace=True)
            _run_all(shared.after_close, namespace)


def _run_all(hooks: list[Callable[[], None]], namespace: str) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception as exc:  # cleanup must not hide the result
            print(f"warning: cleanup of {namespace}: {exc!r}")


@contextlib.contextmanager
def per_test(request: Any, shared: Shared, summary: dict) -> Iterator[Scenario]:
    """The shared scenario with this test's own Progress (phases and facts in the summary);
    the install's failure fails the test; a failed test dumps the namespace."""
    sc = shared.sc
    assert shared.install is not None, f"{shared.what}: not run"
    shared.install.check(shared.what)
    sc.progress = Progress(request.node.name.removeprefix("test_")[:24])
    with recorded(summary, request.node.name, sc.progress, request.node):
        try:
            yield sc
        finally:
            rep = getattr(request.node, "rep_call", None)
            if rep is None or rep.failed:
                dump_namespace(sc.kube, sc.namespace, sc.helm.status(sc.release, sc.namespace))
