"""The kind harness's node pool (tests/kind/scenarios/jhkind/pool.py): what .ci/run's node pass adds
to every values file, rendered by the real helm: each chart pod lands on the pool's tainted workers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from generator.render import helm

POOL_PY = Path(__file__).resolve().parents[1] / "kind" / "scenarios" / "jhkind" / "pool.py"
spec = importlib.util.spec_from_file_location("jhkind_pool", POOL_PY)
assert spec and spec.loader
pool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pool)

WANT = {"key": pool.KEY, "operator": "Equal", "value": "nodes", "effect": "NoSchedule"}


def test_without_a_pool_values_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIND_NODE_POOL", raising=False)
    values = {"handlers": {"job": {"replicas": 2}}}
    assert pool.place(values) is values and pool.pod_placement() == {}


def test_every_chart_pod_goes_to_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIND_NODE_POOL", "nodes")
    values = {"handlers": {"web": {"nodeSelector": {"kubernetes.io/hostname": "w1"}},
                           "job": {"tolerations": [{"key": "x", "operator": "Exists"}]}, "extra": None},
              "migration": {"backoffLimit": 0}}
    placed = pool.place(values)
    assert placed["handlers"]["extra"] is None, "a role set to null stays null"
    assert placed["handlers"]["web"]["nodeSelector"] == {"kubernetes.io/hostname": "w1", pool.KEY: "nodes"}
    assert placed["handlers"]["job"]["tolerations"] == [{"key": "x", "operator": "Exists"}, WANT]
    assert placed["migration"]["backoffLimit"] == 0 and placed["migration"]["tolerations"] == [WANT]
    assert "nodeSelector" not in values["handlers"]["job"], "the caller's values are not changed"
    del placed["handlers"]["extra"]
    objs = helm.render(overrides=placed)
    pods = [o["spec"]["template"]["spec"] for o in objs if o["kind"] in ("Deployment", "StatefulSet", "Job")]
    assert len(pods) == 3
    for spec in pods:
        assert spec["nodeSelector"][pool.KEY] == "nodes" and WANT in spec["tolerations"]
