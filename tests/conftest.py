"""Top-level pytest configuration shared by every test directory (kept light).

Only reports which helm binaries the run uses; suites own their fixtures.
"""

from __future__ import annotations

from generator import helm


def pytest_report_header() -> list[str]:
    """Name the helm binaries in the header, so a run says what it tested."""
    lines = []
    for major in (4, 3):
        try:
            lines.append(f"helm{major}: {helm.find_helm(major)}")
        except helm.HelmNotFoundError as exc:
            lines.append(f"helm{major}: {exc}")
    return lines
