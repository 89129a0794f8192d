"""What a Galaxy job costs its runner in time, from Galaxy's own records, the same for every
runner: the state changes in job_state_history (queued, running, ok), and the core job
metrics start_epoch / end_epoch, which the job script itself writes (`date +%s`, 1 s steps)
before and after the tool's command, in the handler (local runner) or the job pod (Kubernetes
runner). All clocks are the one host's (kind nodes and PostgreSQL)."""

from __future__ import annotations

import statistics
from typing import Any

from .scenario import Scenario

QUERY = """
SELECT j.id,
  (SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'queued'),
  (SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'running'),
  (SELECT extract(epoch FROM min(h.create_time)) FROM job_state_history h WHERE h.job_id = j.id AND h.state = 'ok'),
  (SELECT max(m.metric_value) FROM job_metric_numeric m WHERE m.job_id = j.id AND m.plugin = 'core'
     AND m.metric_name = 'start_epoch'),
  (SELECT max(m.metric_value) FROM job_metric_numeric m WHERE m.job_id = j.id AND m.plugin = 'core'
     AND m.metric_name = 'end_epoch')
FROM job j ORDER BY j.id
"""
KEYS = ("queued", "running", "ok", "tool_start", "tool_end")


def job_times(sc: Scenario, ids: set[int]) -> dict[int, dict[str, float | None]]:
    """Galaxy job id -> epoch seconds of queued, running, ok (job_state_history) and of the
    tool's start and end (core metrics; None until the handler has collected them)."""
    out = {}
    for row in sc.pg.sql(sc.database, QUERY):
        if int(row[0]) in ids:
            out[int(row[0])] = {k: float(v) if v not in (None, "") else None for k, v in zip(KEYS, row[1:])}
    return out


def _span(t: dict[str, float | None], a: str, b: str) -> float | None:
    return round(t[b] - t[a], 1) if t[a] is not None and t[b] is not None else None


def costs(times: dict[int, dict[str, float | None]]) -> dict[str, dict[int, float | None]]:
    """Per job: queued -> running (the runner started it: a local process, or a Kubernetes
    Job with a running pod), queued -> the job script's first command, the script's start ->
    end, its end -> `ok` (the handler noticed the end and collected the outputs), and queued ->
    `ok` in all. The script embeds the metadata step on the local runner (Galaxy's default
    embed_metadata_in_job), and the Kubernetes runner runs it in the handler after the Job:
    compare queued -> `ok` less the tool's own time for the whole overhead."""
    return {
        "queued_to_running_s": {i: _span(t, "queued", "running") for i, t in times.items()},
        "queued_to_tool_start_s": {i: _span(t, "queued", "tool_start") for i, t in times.items()},
        "tool_start_to_end_s": {i: _span(t, "tool_start", "tool_end") for i, t in times.items()},
        "tool_end_to_ok_s": {i: _span(t, "tool_end", "ok") for i, t in times.items()},
        "queued_to_ok_s": {i: _span(t, "queued", "ok") for i, t in times.items()},
    }


def spread(values: list[float]) -> dict[str, Any]:
    """n, min, median, max of the measured values (None ones left out)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return {"n": 0}
    return {"n": len(vals), "min": vals[0], "median": round(statistics.median(vals), 2), "max": vals[-1]}


def record(p: Any, sc: Scenario, ids: set[int], prefix: str = "cost") -> dict[str, dict[str, Any]]:
    """The costs of these jobs as facts (`<prefix>_per_job`, `<prefix>`: the spread of each);
    returns the spreads."""
    per_job = costs(job_times(sc, ids))
    p.fact(f"{prefix}_per_job", per_job)
    summary = {k: spread(list(v.values())) for k, v in per_job.items()}
    p.fact(prefix, summary)
    return summary
