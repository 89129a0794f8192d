"""generator.gentests: expected values from the model, header, freshness check, and the
generated file actually runs (and fails when the chart disagrees with the model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from generator import model
from generator.gentests import HEADER, expectations, gen_tests, generate_one, generated_file_name
from generator.values.merge import merged

from unit_support import REPO, run_jh


def test_expectations_come_from_the_model() -> None:
    values = merged({"handlers": {"job": {"maxJobRuntimeSeconds": 600}}, "migration": {"useHelmHooks": False}})
    exp = expectations(values, model.KUBE_VERSIONS)
    assert exp["hook_mode"] is False and exp["migration_enabled"] is True
    assert exp["roles"]["job"] == {"grace": 640, "drain_deadline": 615, "pdb": True}
    assert exp["per_version"]["1.17"] == {"startup_probe": False, "liveness_initial_delay": 300,
                                          "probe_grace": None, "pdb_api_version": "policy/v1beta1"}
    assert exp["per_version"]["1.25"]["probe_grace"] == 30
    assert exp["chart_secret_hook"] is False


def test_generated_file_name() -> None:
    assert generated_file_name(Path("values-examples/legacy-1.17.yaml")) == "test_example_legacy_1_17.py"


def test_generated_module_has_header_literals_and_compiles(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text("handlers:\n  job:\n    maxJobRuntimeSeconds: 60\n")
    text = generate_one(ex)
    assert text.startswith(HEADER)
    assert "'job': {'drain_deadline': 75, 'grace': 100, 'pdb': True}" in text
    assert "def test_migration_job_is_pre_install_pre_upgrade_hook" in text
    assert "def test_migration_job_name_is_hashed" not in text
    compile(text, "generated.py", "exec")


def test_gen_tests_check_detects_stale_missing_obsolete(tmp_path: Path) -> None:
    ex_dir, out = tmp_path / "ex", tmp_path / "gen"
    ex_dir.mkdir()
    (ex_dir / "a.yaml").write_text("{}\n")
    assert gen_tests(sorted(ex_dir.glob("*.yaml")), out, check=True).stale == ["%s/test_example_a.py (missing)" % out]
    res = gen_tests(sorted(ex_dir.glob("*.yaml")), out)
    assert res.ok and res.written
    assert gen_tests(sorted(ex_dir.glob("*.yaml")), out, check=True).stale == []
    (ex_dir / "a.yaml").write_text("drain:\n  bufferSeconds: 40\n")  # the example changed
    (out / "test_example_gone.py").write_text(HEADER + " old\n")
    (out / "test_handwritten.py").write_text("# not generated\n")  # never touched
    stale = gen_tests(sorted(ex_dir.glob("*.yaml")), out, check=True).stale
    assert stale == [f"{out}/test_example_a.py (differs)", f"{out}/test_example_gone.py (obsolete)"]
    gen_tests(sorted(ex_dir.glob("*.yaml")), out)
    assert sorted(p.name for p in out.iterdir()) == ["test_example_a.py", "test_handwritten.py"]


def test_invalid_example_is_refused(tmp_path: Path) -> None:
    ex_dir = tmp_path / "ex"
    ex_dir.mkdir()
    (ex_dir / "bad.yaml").write_text("drain:\n  bufferSeconds: many\n")
    res = gen_tests(sorted(ex_dir.glob("*.yaml")), tmp_path / "gen")
    assert not res.ok and "JHS001" in res.errors[0]
    proc = run_jh("gen-tests", "--examples", str(ex_dir), "--out", str(tmp_path / "gen"))
    assert proc.returncode == 1 and "gen-tests FAILED" in proc.stderr


def _pytest(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def test_generated_tests_pass_and_catch_a_model_disagreement(tmp_path: Path) -> None:
    ex = tmp_path / "ex.yaml"
    ex.write_text("migration:\n  useHelmHooks: false\n")
    gen = tmp_path / "test_example_ex.py"
    gen.write_text(generate_one(ex, ("1.17", "1.34")))
    proc = _pytest(gen)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the same file with a wrong literal (as if the chart disagreed with the model) must fail
    broken = tmp_path / "test_example_broken.py"
    broken.write_text(gen.read_text().replace("'grace': 340", "'grace': 341"))
    proc = _pytest(broken, "-k", "grace")
    assert proc.returncode == 1 and "340 == 341" in proc.stdout


def test_generated_tests_tell_the_post_deploy_job_apart(tmp_path: Path) -> None:
    """commands.postMigrate renders a second Job: the migration tests take the pre-deploy one,
    one more test the post-deploy one (GitOps mode here: both are hash-named plain Jobs)."""
    ex = tmp_path / "ex.yaml"
    ex.write_text("commands:\n  postMigrate: [workload, migrate]\nwaitForMigrations:\n  acceptAhead: true\n"
                  "migration:\n  useHelmHooks: false\n  postDeploy:\n    gitOps: plain\n")
    gen = tmp_path / "test_example_ex.py"
    gen.write_text(generate_one(ex, ("1.20", "1.34")))
    assert "POST_MIGRATE = 'workload migrate'" in gen.read_text()
    proc = _pytest(gen, "-rA")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "test_example_ex.py::test_post_deploy_job_waits_for_the_schema_and_the_rollout[1.34]" in proc.stdout, \
        proc.stdout[-3000:]


def test_values_files_kube_versions_and_relative_paths(tmp_path: Path) -> None:
    """`gen-tests VALUES… --out DIR --kube-version V`: one file per values file, the values
    found relative to the test file, only the versions asked for."""
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "prod.yaml").write_text("handlers:\n  job:\n    maxJobRuntimeSeconds: 60\n")
    proc = run_jh("gen-tests", "deploy/prod.yaml", "--out", "tests", "--kube-version", "1.20",
                  "--kube-version", "v1.34.2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote tests/test_example_prod.py" in proc.stdout
    text = (tmp_path / "tests" / "test_example_prod.py").read_text()
    assert "EXAMPLE = (Path(__file__).resolve().parent / '../deploy/prod.yaml').resolve()" in text
    assert "KUBE_VERSIONS = ['1.20', '1.34']" in text
    assert "from generator" not in text and "from jobhandlers import helm" in text
    ok = run_jh("gen-tests", "deploy/prod.yaml", "--out", "tests", "--kube-version", "1.20", "--kube-version", "1.34",
                "--check", cwd=tmp_path)
    assert ok.returncode == 0 and "gen-tests --check: tests/ is up to date" in ok.stdout, ok.stdout
    stale = run_jh("gen-tests", "deploy/prod.yaml", "--out", "tests", "--check", cwd=tmp_path)
    assert stale.returncode == 1 and "run `jobhandlers gen-tests`" in stale.stdout, stale.stdout


def test_missing_or_colliding_values_files(tmp_path: Path) -> None:
    proc = run_jh("gen-tests", "nope.yaml", "--out", "tests", cwd=tmp_path)
    assert proc.returncode == 2 and "no such values file: nope.yaml" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_jh("gen-tests", "--examples", "empty", "--out", "tests", cwd=tmp_path)
    assert proc.returncode == 2 and "no values files given and no *.yaml in empty" in proc.stderr
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "values.yaml").write_text("{}\n")
    proc = run_jh("gen-tests", "a/values.yaml", "b/values.yaml", "--out", "tests", cwd=tmp_path)
    assert proc.returncode == 1 and "test_example_values.py, like those of a/values.yaml" in proc.stderr
    assert not (tmp_path / "tests").exists()
