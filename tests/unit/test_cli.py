"""The real console script: exit codes 0/1/2, formats, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unit_support import REPO, RULE_FIXTURES, run_jh

CLEAN = "image:\n  tag: \"2\"\n"


def test_clean_file_exits_0(write) -> None:
    proc = run_jh("check", str(write("ok.yaml", CLEAN)))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("ok: 1 file(s) checked")


def test_warning_only_exits_0() -> None:
    proc = run_jh("check", str(RULE_FIXTURES / "JH010-fail.yaml"))
    assert proc.returncode == 0
    assert "warning JH010" in proc.stdout


def test_policy_violation_exits_1_with_location() -> None:
    path = RULE_FIXTURES / "JH001-fail.yaml"
    proc = run_jh("check", str(path))
    assert proc.returncode == 1
    assert f"{path}:4:5: error JH001 [handlers.job.terminationGracePeriodSeconds]" in proc.stdout
    assert "fix: remove handlers.job.terminationGracePeriodSeconds" in proc.stdout


def test_schema_violation_exits_1(write) -> None:
    proc = run_jh("check", str(write("bad.yaml", "drain:\n  bufferSeconds: lots\n")))
    assert proc.returncode == 1
    assert ":2:3: error JHS001 [drain.bufferSeconds]" in proc.stdout


@pytest.mark.parametrize("text, rule", [
    ("a: 1\na: 2\n", "JHY002"),
    ("a:\n  b: 1\n c: 2\n", "JHY001"),
    ("- 1\n- 2\n", "JHY003"),
    ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n", "JHY004"),
])
def test_unusable_yaml_exits_2(write, text: str, rule: str) -> None:
    path = write("in.yaml", text)
    proc = run_jh("check", str(path), "--format", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert [f["rule"] for f in doc["findings"]] == [rule]
    assert doc["findings"][0]["line"] >= 1 and doc["exit_code"] == 2


def test_missing_file_exits_2_and_other_files_are_still_checked(write, tmp_path: Path) -> None:
    proc = run_jh("check", str(tmp_path / "missing.yaml"), str(RULE_FIXTURES / "JH009-fail.yaml"))
    assert proc.returncode == 2
    assert "missing.yaml: error JHY005 file not found" in proc.stdout
    assert "error JH009" in proc.stdout


def test_github_format() -> None:
    path = RULE_FIXTURES / "JH009-fail.yaml"
    proc = run_jh("check", "--format", "github", str(path))
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"::error file={path},line=2,col=3,title=JH009::image.tag: ")


def test_json_format_and_kube_version() -> None:
    path = RULE_FIXTURES / "JH008-fail.yaml"
    doc = json.loads(run_jh("check", "--format", "json", "--kube-version", "1.24", str(path)).stdout)
    assert [(f["rule"], f["line"], f["col"]) for f in doc["findings"]] == [("JH008", 3, 3)]
    doc = json.loads(run_jh("check", "--format", "json", "--kube-version", "v1.25.3", str(path)).stdout)
    assert doc["findings"] == [] and doc["exit_code"] == 0


def test_usage_errors_exit_2() -> None:
    for args in (["check"], ["check", "--kube-version", "latest", "x.yaml"], ["check", "--format", "xml", "x"],
                 ["nosuch"], []):
        proc = run_jh(*args)
        assert proc.returncode == 2, args
        assert "usage:" in proc.stderr


def test_grace_command() -> None:
    proc = run_jh("grace", "values-examples/minimal.yaml", "--kube-version", "1.20", "--kube-version", "1.34")
    assert proc.returncode == 0, proc.stdout
    assert "DRAIN_DEADLINE" in proc.stdout and "probe grace" in proc.stdout
    assert [line.split()[0] for line in proc.stdout.splitlines() if line[:4] in ("1.20", "1.34")] == ["1.20", "1.34"]


def test_grace_refuses_bad_input(write, tmp_path: Path) -> None:
    assert run_jh("grace", str(tmp_path / "none.yaml")).returncode == 2
    assert run_jh("grace", str(write("b.yaml", "drain: {bufferSeconds: x}\n"))).returncode == 1
    proc = run_jh("grace", str(RULE_FIXTURES / "JH001-fail.yaml"))
    assert proc.returncode == 1 and "BELOW computed (JH001)" in proc.stdout


def test_check_with_render_validates_objects(write) -> None:
    proc = run_jh("check", "--render", "--kube-version", "1.34", str(write("ok.yaml", CLEAN)))
    assert proc.returncode == 0, proc.stdout
    # a value the schema lets through (volumes are free-form) but the Kubernetes API refuses
    bad = write("badvol.yaml", CLEAN + "handlers:\n  job:\n    extraVolumes:\n      - name: v\n        emptyDir: {medium: 5}\n")
    proc = run_jh("check", "--render", "--kube-version", "1.34", str(bad))
    assert proc.returncode == 1, proc.stdout
    assert "JHR002" in proc.stdout and "Deployment/" in proc.stdout
    # strict: an unknown field inside a free-form value (a sidecar container) is refused
    unknown = write("sidecar.yaml", CLEAN + "handlers:\n  web:\n    sidecars:\n      - name: s\n        image: s:1\n"
                    "        imagePullPolice: Always\n")
    proc = run_jh("check", "--render", "--kube-version", "1.34", str(unknown))
    assert proc.returncode == 1, proc.stdout
    # mapped back to the values key it came from
    assert "sidecar.yaml:8:9: error JHR002 [handlers.web.sidecars[0].imagePullPolice]" in proc.stdout, proc.stdout
    old = run_jh("check", "--render", "--kube-version", "1.20", str(write("ok2.yaml", CLEAN)))
    assert old.returncode == 0 and "JHR003" in old.stdout


def test_check_examples_pass() -> None:
    examples = sorted(str(p) for p in (REPO / "values-examples").glob("*.yaml"))
    assert examples, "values-examples/ is empty"
    proc = run_jh("check", *examples)
    assert proc.returncode == 0, proc.stdout


def test_missing_helm_is_exit_2_without_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBHANDLERS_HELM", str(tmp_path / "no-helm"))
    proc = run_jh("check", "--render", str(RULE_FIXTURES / "JH001-pass.yaml"))
    assert proc.returncode == 2 and "JHR004" in proc.stdout and "no-helm" in proc.stdout
    ex = tmp_path / "ex"
    ex.mkdir()
    (ex / "a.yaml").write_text("{}\n")
    proc = run_jh("render", "--examples", str(ex), "--out", str(tmp_path / "r"), "--kube-version", "1.34")
    assert proc.returncode == 2 and "not found" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_unexpected_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from generator import cli

    def boom(args: object) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(cli.COMMANDS, "grace", boom)
    assert cli.main(["grace", "x.yaml"]) == 2
    err = capsys.readouterr().err
    assert err == "jobhandlers grace: internal error: RuntimeError: disk on fire\n"


def test_check_platform_flag_warns_and_bad_names_exit_2(tmp_path) -> None:
    import subprocess
    import sys
    values = tmp_path / "v.yaml"
    values.write_text("handlers:\n  job:\n    maxJobRuntimeSeconds: 3600\n")
    jh = [sys.executable, "-m", "generator.cli"]
    ok = subprocess.run(jh + ["check", str(values), "--platform", "aws-spot"], capture_output=True, text=True)
    assert ok.returncode == 0 and "warning JH021" in ok.stdout and "120 s" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run(jh + ["check", str(values), "--platform", "karpenter"], capture_output=True, text=True)
    assert bad.returncode == 2 and "karpenter" in bad.stderr and "Traceback" not in bad.stderr
