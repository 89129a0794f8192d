"""`.ci/budget.py`: the table .ci/run prints at its end, and which overruns fail the run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ci_budget", ROOT / ".ci" / "budget.py")
budget = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(budget)


def _stages(tmp_path: Path, **seconds: float) -> Path:
    path = tmp_path / "stages"
    path.write_text("".join(f"{name.replace('_', '-')} {s} 0\n" for name, s in seconds.items()))
    return path


def test_under_budget_passes_and_prints_every_stage(tmp_path, capsys):
    assert budget.main(["budget.py", str(_stages(tmp_path, test_kind_main=1500, images=8))]) == 0
    out = capsys.readouterr().out
    for name in budget.BUDGETS:
        assert name in out
    assert f"under by {budget.BUDGETS['test-kind-main'][0] - 1500} s" in out
    assert "did not run" in out


def test_check_stage_over_the_fail_ratio_fails_and_comes_first(tmp_path, capsys):
    over = budget.BUDGETS["test-kind-nodes"][0] * 1.6
    assert budget.main(["budget.py", str(_stages(tmp_path, test_kind_nodes=over, test_cpu=700))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("test-kind-nodes") and "FAILS the run" in out[1]
    assert "test-kind-nodes" in out[-1]


def test_check_stage_over_but_within_the_ratio_is_reported_only(tmp_path, capsys):
    assert budget.main(["budget.py", str(_stages(tmp_path, test_wait=budget.BUDGETS["test-wait"][0] * 1.4))]) == 0
    assert "over by" in capsys.readouterr().out


def test_builds_many_times_over_budget_only_report(tmp_path, capsys):
    """A cold machine: the builds take 10-20x their warm budget; that is not a failure."""
    assert budget.main(["budget.py", str(_stages(tmp_path, kind_node_image=1000, tools=1200))]) == 0
    assert "FAILS" not in capsys.readouterr().out


def test_unbudgeted_stage_and_slow_scenarios_are_shown(tmp_path, capsys):
    stages = _stages(tmp_path, new_stage=5)
    scenarios = tmp_path / "kind-scenarios.json"
    scenarios.write_text(json.dumps({"test_16a": {"passed": True, "seconds": budget.SCENARIO_BUDGET + 100},
                                     "test_1": {"passed": True, "seconds": 10}}))
    assert budget.main(["budget.py", str(stages), str(scenarios)]) == 0
    out = capsys.readouterr().out
    assert "new-stage" in out and "no budget" in out
    assert "scenario test_16a" in out and "test_1 " not in out


def test_a_stage_run_twice_keeps_its_last_time():
    assert budget.read_stages("kind-up 30 0\nkind-up 12 0\nbroken line\n") == {"kind-up": (12.0, 0)}


def test_a_failed_stage_says_so(tmp_path, capsys):
    path = tmp_path / "stages"
    path.write_text("kind-up 11 2\n")
    assert budget.main(["budget.py", str(path)]) == 0  # the run fails on the stage itself, not on time
    assert "the stage failed, exit 2" in capsys.readouterr().out


def test_markdown_has_every_stage_and_scenario_slowest_first(tmp_path):
    stages = _stages(tmp_path, test_kind_main=1500, venv=20)
    scenarios = tmp_path / "s.json"
    scenarios.write_text(json.dumps({
        "test_fast": {"passed": True, "seconds": 10, "phases": {"install": 8, "cleanup": 2}},
        "test_slow": {"passed": False, "seconds": 400, "phases": {"a": 1, "rollout": 300, "install": 90}},
    }))
    out = tmp_path / "times.md"
    assert budget.main(["budget.py", str(stages), str(scenarios), "--markdown", str(out)]) == 0
    text = out.read_text()
    assert f"| test-kind-main | check | {budget.BUDGETS['test-kind-main'][0]} | 1500 |" in text and "| venv |" in text
    assert text.index("test_slow") < text.index("test_fast")
    assert "| test_slow | 400 (failed) | rollout 300; install 90 |" in text
    assert "did not run" not in text
