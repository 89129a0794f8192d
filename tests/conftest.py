"""Top-level pytest configuration shared by every test directory (kept light).

Reports which helm binaries the run uses, and keeps `--dist loadgroup` working; suites own
their fixtures.
"""

from __future__ import annotations

import pytest

from generator.render import helm


def pytest_report_header() -> list[str]:
    """Name the helm binaries in the header, so a run says what it tested."""
    lines = []
    for major in (4, 3):
        try:
            lines.append(f"helm{major}: {helm.find_helm(major)}")
        except helm.HelmNotFoundError as exc:
            lines.append(f"helm{major}: {exc}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` sends every test of one `xdist_group` to one worker by the
    `@<group>` suffix xdist 3.8 adds to each nodeid on the worker. It writes `item._nodeid`,
    which pytest 9.2 no longer reads (the nodeid is `item._id`), so the groups were split over
    the workers and a module-scoped install ran once per worker. Add the suffix where xdist's
    did not land."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId  # pytest >= 9.2; older pytest honours xdist's own suffix

    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
