"""`jobhandlers grace`: per role, terminationGracePeriodSeconds and the terms it is made of,
DRAIN_DEADLINE_SECONDS, and the probe-level liveness grace per kube version."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from . import model


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain fixed-width table (numbers right-aligned)."""
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(headers))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)).rstrip()

    return "\n".join([fmt(cells[0]), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells[1:]])


def grace_rows(values: Mapping[str, Any]) -> list[model.Grace]:
    """The grace model of every enabled role."""
    return [model.role_grace(values, role) for role in model.enabled_roles(values)]


def report(values: Mapping[str, Any], kube_versions: Sequence[str]) -> tuple[str, bool]:
    """The grace report text, and whether every explicit grace is >= its computed value."""
    graces = grace_rows(values)
    rows = []
    ok = True
    for g in graces:
        note = ""
        if g.explicit is not None:
            note = "explicit" if g.explicit >= g.computed else "explicit, BELOW computed (JH001)"
            ok = ok and g.explicit >= g.computed
        rows.append([g.role, g.max_job_runtime, str(g.multiplier), g.buffer, g.pre_stop, g.computed,
                     g.explicit, g.effective, g.drain_deadline, note])
    parts = [
        "terminationGracePeriodSeconds = ceil(maxJobRuntimeSeconds * runtimeMultiplier) + bufferSeconds"
        " + preStopSeconds",
        "DRAIN_DEADLINE_SECONDS = max(1, effective - preStopSeconds - bufferSeconds // 2)",
        "",
        _table(["role", "maxJobRuntime", "multiplier", "buffer", "preStop", "computed", "explicit", "effective",
                "DRAIN_DEADLINE", "note"], rows),
        "",
        f"probe-level liveness grace (liveness.terminationGracePeriodSeconds, honoured from "
        f"{model.PROBE_GRACE_MIN_VERSION}):",
        "",
    ]
    vrows = [[v, model.probe_grace(values, v), "yes" if model.startup_probe_rendered(values, v) else "no",
              model.liveness_initial_delay(values, v)] for v in kube_versions]
    parts.append(_table(["kube", "probe grace", "startupProbe", "liveness initialDelay"], vrows))
    return "\n".join(parts) + "\n", ok
