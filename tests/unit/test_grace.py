"""generator.grace: the report shows the model's numbers and their terms."""

from __future__ import annotations

from generator import model
from generator.grace import report
from generator.values.merge import merged


def test_report_rows_match_the_model() -> None:
    values = merged({"handlers": {"job": {"maxJobRuntimeSeconds": 1000}}, "drain": {"runtimeMultiplier": 1.5}})
    text, ok = report(values, ["1.20", "1.25"])
    assert ok
    g = model.role_grace(values, "job")
    assert g.computed == 1540
    job_row = next(line for line in text.splitlines() if line.startswith("job "))
    assert job_row.split()[:9] == ["job", "1000", "1.5", "30", "10", "1540", "-", "1540", str(g.drain_deadline)]
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line[:4] in ("1.20", "1.25")}
    assert rows["1.20"][1] == "-" and rows["1.25"][1] == "30"


def test_report_flags_explicit_below_computed() -> None:
    text, ok = report(merged({"handlers": {"web": {"terminationGracePeriodSeconds": 10}}}), ["1.34"])
    assert not ok and "BELOW computed (JH001)" in text
