"""gen-tests --live: the job description's findings (file:line:col, key path, fix, exit 2,
never a traceback), the generated suite's literals from the model, and the pieces of the
suite that need no cluster (reading a job's state, the closing table)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator import model
from generator.live import appjobs, generate, report, spec
from generator.values.full import load_values
from generator.values.merge import merged
from unit_support import REPO, run_jh

MINIMAL = REPO / "values-examples" / "minimal.yaml"
JOBS = REPO / "values-examples" / "jobs" / "minimal.yaml"

GOOD = """version: 1
roles:
  job:
    submit: {in: job, command: [workload, submit, --duration, "{seconds}"], id: ids.0}
    state: {in: web, command: [show, "{id}"], field: state, runs: attempts}
"""


def _gen(*args: str) -> subprocess.CompletedProcess[str]:
    return run_jh("gen-tests", "--live", *args)


def test_generates_a_suite_with_the_models_numbers(tmp_path: Path) -> None:
    proc = _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path), "--max-job-seconds", "30")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "test_live_minimal.py").read_text()
    ns: dict = {"__file__": str(tmp_path / "test_live_minimal.py")}
    exec(compile(text, "gen", "exec"), ns)  # noqa: S102 - our own generated module
    expect = ns["EXPECT"]
    values = merged(load_values(MINIMAL).data)
    for role in model.enabled_roles(values):
        g = model.role_grace(values, role)
        assert expect["roles"][role]["grace"] == g.effective
        assert expect["roles"][role]["max_job_runtime"] == g.max_job_runtime
        assert expect["roles"][role]["drain_deadline"] == g.drain_deadline
    assert expect["max_job_seconds"] == 30 and list(expect["job_roles"]) == ["job"]
    assert ns["VALUES"][0].resolve() == MINIMAL.resolve()
    assert (tmp_path / "conftest.py").read_text().startswith(generate.HEADER_LIVE)
    again = _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path), "--max-job-seconds", "30")
    assert again.returncode == 0 and "0 file(s) changed" in again.stdout


def test_generated_suite_collects(tmp_path: Path) -> None:
    assert _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path)).returncode == 0
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("test_install", "test_rollout", "test_eviction", "test_waiting", "test_uninstall"):
        assert name in proc.stdout


@pytest.mark.parametrize(("frm", "chart", "version", "values"), [
    (["--from", str(REPO / "chart")], REPO / "chart", None, MINIMAL),
    (["--from", "oci://registry.example/charts/jobhandlers", "--from-version", "0.3.0"],
     "oci://registry.example/charts/jobhandlers", "0.3.0", MINIMAL),
    (["--from-values", str(REPO / "values-examples" / "long-jobs.yaml")], None, None,
     REPO / "values-examples" / "long-jobs.yaml"),
])
def test_from_adds_an_upgrade_test(tmp_path: Path, frm: list[str], chart: object, version: str | None,
                                   values: Path) -> None:
    """--from/--from-values: test_upgrade, last, installs what they name (local paths relative
    to the suite, so it moves with it) before upgrading to the tool's chart."""
    proc = _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path / "out"), *frm)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    text = (out / "test_live_minimal.py").read_text()
    assert text.index("def test_uninstall") < text.index("def test_upgrade")
    # the suite imports the tool and nothing else of ours (tests/packaging/test_live_wheel.py)
    assert sorted(set(re.findall(r"^(?:from|import) ([\w.]+)", text, re.M))) == ["jobhandlers.live", "pathlib", "pytest"]
    assert "--from" in text.splitlines()[1]
    ns: dict = {"__file__": str(out / "test_live_minimal.py")}
    exec(compile(text, "gen", "exec"), ns)  # noqa: S102 - our own generated module
    got = ns["FROM_CHART"]
    assert (got.resolve() if isinstance(got, Path) else got) == (chart.resolve() if isinstance(chart, Path) else chart)
    assert [v.resolve() for v in ns["FROM_VALUES"]] == [values.resolve()]
    assert ns["EXPECT"]["upgrade"]["version"] == version
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(out)],
                          cwd=out, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "test_upgrade" in proc.stdout, proc.stdout + proc.stderr


def test_without_from_no_upgrade_test(tmp_path: Path) -> None:
    assert _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path)).returncode == 0
    text = (tmp_path / "test_live_minimal.py").read_text()
    assert "test_upgrade" not in text and "FROM_CHART" not in text


@pytest.mark.parametrize(("args", "message"), [
    (["--from", "/no/such/chart"], "/no/such/chart: error JH069 --from names no chart"),
    (["--from-version", "0.3.0"], "--from-version needs --from CHART"),
    (["--from-values", "/no/such/values.yaml"], "/no/such/values.yaml"),
])
def test_from_input_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path / "out"), *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_from_without_live_exits_2() -> None:
    proc = run_jh("gen-tests", "--from", str(REPO / "chart"))
    assert proc.returncode == 2 and "go with --live" in proc.stderr


@pytest.mark.parametrize(("text", "where", "rule"), [
    (GOOD.replace("version: 1", "version: 2"), ":1:1: error JH065 [version]", "JH065"),
    (GOOD.replace("field: state", "feld: state"), ":5:47: error JH065 [roles.job.state.feld] unknown key `feld`", "JH065"),
    (GOOD.replace("in: job,", "in: jobs,"), ":4:14: error JH066 [roles.job.submit.in]", "JH066"),
    (GOOD.replace("  job:", "  worker:"), ":3:3: error JH066 [roles.worker]", "JH066"),
    (GOOD.replace('"{seconds}"', '"30"'), ":4:23: error JH067 [roles.job.submit.command]", "JH067"),
    (GOOD.replace("{in: job,", "{in: job, job: job,"), ":4:5: error JH067 [roles.job.submit] submit needs exactly one "
     "of `in`", "JH067"),
    (GOOD.replace("{in: job,", "{"), ":4:5: error JH067 [roles.job.submit] submit needs exactly one of `in`", "JH067"),
    (GOOD.replace("{in: job,", "{job: jobs,"), ":4:14: error JH066 [roles.job.submit.job] `job: jobs` is not a role",
     "JH066"),
    (GOOD.replace("{in: web,", "{in: web, image: x,"), ":5:22: error JH067 [roles.job.state.image] `image` is for "
     "the Job form only", "JH067"),
    (GOOD.replace(", id: ids.0", ""), ":4:5: error JH067 [roles.job.submit]", "JH067"),
    (GOOD.replace("id: ids.0", "idPattern: '(x'"), "error JH067 [roles.job.submit", "JH067"),
    ("version: 1\nroles: [\n", ":3:1: error JHY001", "JHY001"),
    ("version: 1\nversion: 1\n", "error JHY002", "JHY002"),
])
def test_job_description_findings(write, text: str, where: str, rule: str, tmp_path: Path) -> None:
    jobs = write("jobs.yaml", text)
    proc = _gen(str(MINIMAL), str(jobs), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{jobs}{where}" in proc.stderr if where.startswith(":") else where in proc.stderr, proc.stderr
    assert "fix: " in proc.stderr
    assert not (tmp_path / "out").exists()


def test_missing_description_names_the_default_path(tmp_path: Path) -> None:
    proc = _gen(str(MINIMAL), "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "minimal.jobs.yaml: error JHY005 file not found" in proc.stderr
    assert "give its path as JOBS" in proc.stderr


def test_jobs_longer_than_max_runtime_warn_and_generate(write, tmp_path: Path) -> None:
    jobs = write("jobs.yaml", GOOD.replace("  job:\n", "  job:\n    jobSeconds: 900\n"))
    proc = _gen(str(MINIMAL), str(jobs), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "warning JH068 [roles.job.jobSeconds] jobs of 900 s are longer than handlers.job.maxJobRuntimeSeconds=300" \
        in proc.stderr


def test_foreign_conftest_is_kept(write, tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("# mine\n")
    proc = _gen(str(MINIMAL), str(JOBS), "--out", str(tmp_path))
    assert proc.returncode == 2 and "JH069" in proc.stderr
    assert (tmp_path / "conftest.py").read_text() == "# mine\n"


@pytest.mark.parametrize("args", [[str(MINIMAL)], [str(MINIMAL), str(JOBS), str(JOBS), "--out", "x"],
                                  [str(MINIMAL), "--out", "x", "--max-job-seconds", "0"]])
def test_bad_arguments_exit_2(args: list[str]) -> None:
    proc = _gen(*args)
    assert proc.returncode == 2 and proc.stderr


class _FakeKube:
    """role_pods and exec of kube.Kube, answering from a table."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers, self.calls = answers, []

    def role_pods(self, namespace, release, role):  # noqa: ANN001, ANN201
        cond = SimpleNamespace(type="Ready", status="True")
        return [SimpleNamespace(metadata=SimpleNamespace(name=f"{role}-0", deletion_timestamp=None),
                                status=SimpleNamespace(conditions=[cond]))]

    def exec(self, namespace, pod, container, argv, timeout):  # noqa: ANN001, ANN201
        self.calls.append((pod, container, argv))
        return 0, self.answers[argv[0]], ""


def test_reading_jobs_through_the_description() -> None:
    roles = {"w": {"submit": {"role": "web", "container": "web", "argv": ["sub", "{seconds}", '{"k": 1}'],
                              "id_path": "", "id_pattern": r"id=(\w+)", "timeout": 5},
                   "state": {"role": "web", "container": "web", "argv": ["get", "{id}"], "state_path": "r.status",
                             "runs_path": "r.n", "states": {"done": ["SUCCESS"], "running": ["STARTED"]},
                             "timeout": 5}}}
    kube = _FakeKube({"sub": "queued id=ab12\n", "get": json.dumps({"r": {"status": "SUCCESS", "n": 2}})})
    jobs = appjobs.AppJobs(kube, "ns", "rel", roles)  # type: ignore[arg-type]
    assert jobs.submit("w", 30) == "ab12"
    assert kube.calls[0] == ("web-0", "web", ["sub", "30", '{"k": 1}'])
    assert jobs.read("w", "ab12") == appjobs.JobState("done", "SUCCESS", 2)


def test_report_table_and_json(tmp_path: Path) -> None:
    r = report.Results()
    r.record("install", helm_install_seconds=41.2, restarts=0)
    r.outcome("install", True)
    r.record("rollout", job_exit_max_seconds=33.0)
    r.outcome("rollout", False)
    table = r.table()
    assert "install    passed  helm_install_seconds=41.2  restarts=0" in table
    assert "rollout    FAILED  job_exit_max_seconds=33" in table
    r.write_json(tmp_path / "r.json", {"namespace": "x"})
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["version"] == 1 and doc["tests"]["rollout"]["passed"] is False


def test_default_description_path() -> None:
    assert spec.default_path(Path("deploy/prod.yaml")) == Path("deploy/prod.jobs.yaml")


def test_job_form_is_generated_into_the_suite(write, tmp_path: Path) -> None:
    jobs = write("jobs.yaml", GOOD.replace("{in: job,", "{job: job, image: 'app:cli',"))
    proc = _gen(str(MINIMAL), str(jobs), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    roles, _ = spec.load(jobs, merged(load_values(MINIMAL).data))
    assert roles[0].submit.as_dict()["mode"] == "job" and roles[0].submit.image == "app:cli"
    assert roles[0].state.as_dict()["mode"] == "exec"


TEMPLATE = {
    "metadata": {"labels": {"app.kubernetes.io/name": "jobhandlers", "app.kubernetes.io/instance": "rel",
                            "app.kubernetes.io/component": "job", "app.kubernetes.io/version": "1"},
                 "annotations": {"checksum/config": "x"}},
    "spec": {
        "serviceAccountName": "rel-job", "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 400,
        "securityContext": {"runAsNonRoot": True},
        "initContainers": [{"name": "wait-for-migrations", "image": "app:1"},
                           {"name": "pgbouncer", "image": "pgb:1", "restartPolicy": "Always"}],
        "containers": [{"name": "job", "image": "app:1", "args": ["run"], "env": [{"name": "DATABASE_URL", "value": "u"}],
                        "readinessProbe": {"exec": {"command": ["x"]}}, "livenessProbe": {}, "startupProbe": {},
                        "lifecycle": {"preStop": {}}, "ports": [{"containerPort": 80}],
                        "volumeMounts": [{"name": "state", "mountPath": "/run/jobhandlers"}]},
                       {"name": "sidecar", "image": "side:1"}],
        "volumes": [{"name": "state", "emptyDir": {}}],
        "affinity": {"nodeAffinity": {"a": 1}, "podAntiAffinity": {"b": 2}},
        "topologySpreadConstraints": [{"maxSkew": 1}], "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "t"}],
    },
}


def test_job_manifest_from_a_roles_pod_template() -> None:
    from generator.live import jobform
    job = jobform.job_manifest("live-job-ab12", TEMPLATE, "job", ["cli", "submit", "30"], "", 60)
    spec = job["spec"]["template"]["spec"]
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 60 + jobform.START_SECONDS
    (main,) = spec["containers"]
    assert main["command"] == ["cli", "submit", "30"] and "args" not in main and main["image"] == "app:1"
    assert main["env"] == [{"name": "DATABASE_URL", "value": "u"}] and main["volumeMounts"]
    assert not {"readinessProbe", "livenessProbe", "startupProbe", "lifecycle", "ports"} & set(main)
    assert [c["name"] for c in spec["initContainers"]] == ["pgbouncer"]  # a native sidecar stays
    assert spec["restartPolicy"] == "Never" and spec["terminationGracePeriodSeconds"] == 30
    assert spec["affinity"] == {"nodeAffinity": {"a": 1}} and "topologySpreadConstraints" not in spec
    assert spec["nodeSelector"] and spec["tolerations"] and spec["serviceAccountName"] == "rel-job"
    assert spec["automountServiceAccountToken"] is False and spec["volumes"]
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels == {"app.kubernetes.io/name": "jobhandlers", "app.kubernetes.io/instance": "rel",
                      "app.kubernetes.io/component": jobform.LIVE_COMPONENT}
    assert TEMPLATE["spec"]["containers"][0]["args"] == ["run"]  # the template is not changed
    other = jobform.job_manifest("n", TEMPLATE, "job", ["x"], "app:cli", 5)
    assert other["spec"]["template"]["spec"]["containers"][0]["image"] == "app:cli"
    with pytest.raises(AssertionError, match="no container `web` .*it has job, sidecar"):
        jobform.job_manifest("n", TEMPLATE, "web", ["x"], "", 5)


class _FakeJobKube(_FakeKube):
    """role_template and run_job: the first Job fails, the next prints its output."""

    def role_template(self, namespace, release, role):  # noqa: ANN001, ANN201
        return TEMPLATE

    def run_job(self, namespace, manifest, container, timeout):  # noqa: ANN001, ANN201
        self.calls.append((manifest["metadata"]["name"], container, manifest["spec"]["template"]["spec"]["containers"][0]["command"]))
        if len(self.calls) == 1:
            return 1, "database not reachable"
        return 0, "Django noise\n" + json.dumps({"id": 7}) + "\n"


def test_submit_as_a_job_retries_a_failed_run(monkeypatch) -> None:
    monkeypatch.setattr(appjobs.time, "sleep", lambda s: None)
    roles = {"w": {"submit": {"role": "job", "container": "job", "argv": ["cli", "{seconds}"], "mode": "job",
                              "image": "", "id_path": "id", "id_pattern": "", "timeout": 5}}}
    kube = _FakeJobKube({})
    jobs = appjobs.AppJobs(kube, "ns", "rel", roles)  # type: ignore[arg-type]
    assert jobs.submit("w", 30) == "7" and jobs.as_jobs == 2
    assert [c[2] for c in kube.calls] == [["cli", "30"], ["cli", "30"]]
    assert kube.calls[0][0].startswith("live-job-") and kube.calls[0][0] != kube.calls[1][0]
