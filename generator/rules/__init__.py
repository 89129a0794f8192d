"""The lifecycle policy rules (chart/lifecycle.yaml `rules`): each has a stable id, a severity, a
one-line message, the fix and its documentation; every expected number comes from generator.model.
One module per concern (grace, probes, migration, pod, podsecurity, env, resources, networkpolicy,
launcher, autoscaling, scalein, scheduling); this one is the
registry and the runner."""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at every start (check/fast.py)
    from typing import Any, Callable, Iterable, Sequence

    from ..values.file import ValuesFile

from .. import lifecycle as _lc, platforms as plat
from ..findings import POLICY, Finding
from ..findings import dotted
from .base import Context, Hit, Rule, _Skip
from .autoscaling import _jh055, _jh056, _jh057, _jh058, _jh059, _jh072
from .grace import _jh001, _jh011, _jh012, _jh019, _jh020, _jh021, _jh029
from .probes import _jh002_all, _jh007, _jh008, _jh013, _jh014, _jh015
from .migration import _jh003, _jh004, _jh005, _jh006, _jh016, _jh022, _jh030, _jh035, _jh036, _jh037, _jh038
from .pod import _jh009, _jh010, _jh017, _jh018, _jh023, _jh024, _jh025, _jh026, _jh028, _jh031, _jh032, _restricted_problems  # noqa: F401 (tests import it from here)
from .pod import _jh061  # the chart judges it against the cluster; offline: nothing
from .launcher import _jh044, _jh045, _jh046, _jh047, _jh048, _jh049
from .networkpolicy import _jh041, _jh042, _jh043, _jh051
from .env import _jh050
from .resources import _jh052
from .podsecurity import _jh073, _jh074, _jh076
from .scalein import _jh070, _jh071
from .scheduling import _jh075


# Each rule's check; its severity, title, documentation and fix are in chart/lifecycle.yaml
# (`rules`), which the chart's render-time checks and docs/rules.md take them from too.
_CHECKS: dict[str, Callable[[Context], Iterable[Hit]]] = {
    "JH001": _jh001,
    "JH002": _jh002_all,
    "JH003": _jh003,
    "JH004": _jh004,
    "JH005": _jh005,
    "JH006": _jh006,
    "JH007": _jh007,
    "JH008": _jh008,
    "JH009": _jh009,
    "JH010": _jh010,
    "JH011": _jh011,
    "JH012": _jh012,
    "JH013": _jh013,
    "JH014": _jh014,
    "JH015": _jh015,
    "JH016": _jh016,
    "JH017": _jh017,
    "JH018": _jh018,
    "JH019": _jh019,
    "JH020": _jh020,
    "JH021": _jh021,
    "JH022": _jh022,
    "JH023": _jh023,
    "JH024": _jh024,
    "JH025": _jh025,
    "JH026": _jh026,
    "JH028": _jh028,
    "JH029": _jh029,
    "JH030": _jh030,
    "JH031": _jh031,
    "JH032": _jh032,
    "JH035": _jh035,
    "JH036": _jh036,
    "JH037": _jh037,
    "JH038": _jh038,
    "JH041": _jh041,
    "JH042": _jh042,
    "JH043": _jh043,
    "JH044": _jh044,
    "JH045": _jh045,
    "JH046": _jh046,
    "JH047": _jh047,
    "JH048": _jh048,
    "JH049": _jh049,
    "JH050": _jh050,
    "JH051": _jh051,
    "JH052": _jh052,
    "JH055": _jh055,
    "JH056": _jh056,
    "JH057": _jh057,
    "JH058": _jh058,
    "JH059": _jh059,
    "JH061": _jh061,
    "JH070": _jh070,
    "JH071": _jh071,
    "JH072": _jh072,
    "JH073": _jh073,
    "JH074": _jh074,
    "JH075": _jh075,
    "JH076": _jh076,
}
RULES: tuple[Rule, ...] = tuple(
    Rule(rule_id, meta["severity"], meta["title"], meta["when"], meta["fix"], _CHECKS[rule_id])
    for rule_id, meta in _lc.RULES.items())
RULES_BY_ID = {r.id: r for r in RULES}


def check(vf: ValuesFile, kube_version: str, platforms: Sequence[tuple[plat.Platform, int]] = (),
          values: Mapping[str, Any] | None = None) -> list[Finding]:
    """Run every rule on a loaded values file, merged over the chart defaults (or `values`:
    the merged values when the caller has them)."""
    if values is None:
        from ..values.merge import merged
        values = merged(vf.data)
    ctx = Context(values=values, user=vf.data, kube_version=kube_version, platforms=tuple(platforms))
    findings: list[Finding] = []
    for rule in RULES:
        try:
            hits = list(rule.check(ctx))
        except (_Skip, KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
            continue  # a mistyped or out-of-range value: the schema check reports it
        for hit in hits:
            findings.append(_locate(vf, rule, hit))
    return findings


def _locate(vf: ValuesFile, rule: Rule, hit: Hit) -> Finding:
    """Report at the first of the hit's key paths the file itself sets."""
    for path in hit.paths:
        line, col, found = vf.position(path)
        if found:
            return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(path), hit.message, hit.fix)
    line, col, _ = vf.position(hit.paths[0])
    return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(hit.paths[0]),
                   hit.message + " (from chart defaults)", hit.fix)
