"""Benchmark: `jobhandlers check` against `helm lint --strict`, in the same run, two ways:
- per invocation (what pre-commit and CI do: one file, one process), with the tool
  installed from its wheel into a fresh venv (as users get it: compiled .pyc, no editable
  finder), on a clean values example and on a file with a finding;
- batch: 500 generated values files (valid and invalid mixed) in one process, against
  `helm lint --strict` on a sample of the same files."""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.render import helm  # noqa: E402

N_FILES = 500
N_LINT_SAMPLE = 20
N_INVOCATIONS = 15
JH = REPO / ".venv" / "bin" / "jobhandlers"
CLEAN_EXAMPLE = REPO / "values-examples" / "long-jobs.yaml"
GOAL_INVOCATION_MS = 60
GOAL_INVOCATION_RATIO = 2.5  # issue 33: one file >= 2.5x helm lint --strict

# (kind, template): valid files, policy violations, schema violations, unusable YAML.
VARIANTS: list[tuple[str, str]] = [
    ("valid", 'image:\n  tag: "{n}"\nhandlers:\n  job:\n    maxJobRuntimeSeconds: {rt}\n    replicas: {r}\n'),
    ("valid", 'drain:\n  runtimeMultiplier: 1.{d}\n  bufferSeconds: {b}\nhandlers:\n  web:\n    replicas: {r}\n'),
    ("valid", 'migration:\n  useHelmHooks: false\nreadiness:\n  maxAgeSeconds: {ra}\nliveness:\n  maxAgeSeconds: {la}\n'),
    ("policy", 'handlers:\n  job:\n    maxJobRuntimeSeconds: {rt}\n    terminationGracePeriodSeconds: {low}\n'),
    ("policy", 'image:\n  tag: latest\n'),
    ("policy", 'database:\n  createdByRelease: true\n'),
    ("schema", 'handlers:\n  web:\n    replicas: "{n}x"\n'),
    ("schema", 'drain:\n  bufferSecond: {b}\n'),
    ("yaml", 'handlers:\n  job:\n    replicas: 1\n   port: 2\n'),
    ("yaml", 'image:\n  tag: "1"\n  tag: "2"\n'),
]


def generate(directory: Path, n: int = N_FILES, seed: int = 7) -> list[tuple[Path, str]]:
    """n values files cycling through VARIANTS with random numbers."""
    rnd = random.Random(seed)
    files = []
    for i in range(n):
        kind, template = VARIANTS[i % len(VARIANTS)]
        rt = rnd.randint(10, 3600)
        text = template.format(n=rnd.randint(1, 9), rt=rt, r=rnd.randint(1, 5), d=rnd.randint(0, 9),
                               b=rnd.randint(10, 60), ra=rnd.randint(15, 60), la=rnd.randint(200, 900),
                               low=rnd.randint(1, rt))
        path = directory / f"values-{i:03d}-{kind}.yaml"
        path.write_text(text)
        files.append((path, kind))
    return files


def _wheel_venv(tmp: Path) -> Path:
    """A fresh venv with the jobhandlers wheel built from this checkout; its dependencies
    come from the dev venv's site-packages through a .pth line (no download, and none of
    the dev venv's .pth files, so no editable finder). Returns its `jobhandlers`."""
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "bin", "rendered", "tests", "bench-results",
                                                              "build", "dist", "*.egg-info", ".cache", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    purelib = subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "_jh_bench_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    wheel = next((tmp / "dist").glob("jobhandlers-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True)
    return venv / "bin" / "jobhandlers"


def _once(cmd: list[str]) -> tuple[float, int]:
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode
    return time.perf_counter() - t, rc


def per_invocation() -> dict[str, object]:
    """Median wall of one-file invocations, the three commands interleaved so that they
    share the machine's load."""
    with tempfile.TemporaryDirectory(prefix="jh-bench-inv-") as tmp_s:
        tmp = Path(tmp_s)
        jh = _wheel_venv(tmp)
        finding = tmp / "finding.yaml"
        finding.write_text(CLEAN_EXAMPLE.read_text() + "\nunknownKey: 1\n")  # JHS001
        cmds = {
            "check_clean": [str(jh), "check", str(CLEAN_EXAMPLE)],
            "check_finding": [str(jh), "check", str(finding)],
            "lint": [str(helm.find_helm()), "lint", "--strict", str(helm.CHART_DIR), "-f", str(CLEAN_EXAMPLE)],
        }
        expect = {"check_clean": 0, "check_finding": 1, "lint": 0}
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for name, cmd in cmds.items():  # warm the page cache
            _once(cmd)
        for _ in range(N_INVOCATIONS):
            for name, cmd in cmds.items():
                seconds, rc = _once(cmd)
                if rc != expect[name]:
                    raise SystemExit(f"{' '.join(cmd)} exited {rc}, expected {expect[name]}")
                times[name].append(seconds)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return {
        "invocations": N_INVOCATIONS,
        "example": CLEAN_EXAMPLE.name,
        "check_clean_ms": round(med["check_clean"], 1),
        "check_finding_ms": round(med["check_finding"], 1),
        "lint_ms": round(med["lint"], 1),
        "invocation_ratio": round(med["lint"] / med["check_clean"], 2),
        "goal_invocation_ms": GOAL_INVOCATION_MS,
        "goal_invocation_ratio": GOAL_INVOCATION_RATIO,
    }


def run() -> dict[str, object]:
    """Measure and return the results."""
    inv = per_invocation()
    with tempfile.TemporaryDirectory(prefix="jh-bench-check-") as tmp:
        files = generate(Path(tmp))
        t0 = time.perf_counter()
        proc = subprocess.run([str(JH), "check", "--format", "json", *[str(p) for p, _ in files]],
                              capture_output=True, text=True, check=False)
        check_wall = time.perf_counter() - t0
        if proc.returncode not in (0, 1, 2) or "Traceback" in proc.stderr:
            raise SystemExit(f"jobhandlers check failed: {proc.stderr}")
        report = json.loads(proc.stdout)
        flagged = {f["file"] for f in report["findings"] if f["severity"] == "error"}
        step = len(files) // N_LINT_SAMPLE
        sample = files[::step][:N_LINT_SAMPLE]
        lint_times: list[float] = []
        lint_fails = check_fails = 0
        for path, _kind in sample:
            t = time.perf_counter()
            try:
                helm.lint([path], strict=True)
                lint_failed = False
            except helm.HelmRenderError:
                lint_failed = True
            lint_times.append(time.perf_counter() - t)
            lint_fails += int(lint_failed)
            check_fails += int(str(path) in flagged)
    check_per_file = check_wall / len(files)
    lint_per_file = statistics.mean(lint_times)
    return {
        **inv,
        "files": len(files),
        "kinds": {k: sum(1 for _, kk in files if kk == k) for k in sorted({k for _, k in files})},
        "check_wall_seconds": round(check_wall, 3),
        "check_per_file_ms": round(check_per_file * 1000, 2),
        "check_errors_files": len(flagged),
        "lint_sample": len(sample),
        "lint_per_file_ms": round(lint_per_file * 1000, 2),
        "lint_min_ms": round(min(lint_times) * 1000, 2),
        "lint_max_ms": round(max(lint_times) * 1000, 2),
        "sample_refused_by_lint": lint_fails,
        "sample_refused_by_check": check_fails,
        "lint_projected_500_seconds": round(lint_per_file * len(files), 1),
        "ratio": round(lint_per_file / check_per_file, 1),
        "goal_ratio": 40,  # issue 33: a batch >= 40x
    }


def table(r: dict[str, object]) -> str:
    """The result as a table."""
    return "\n".join([
        f"per invocation, median of {r['invocations']} (one file, one process; tool installed from its wheel)",
        f"{'jobhandlers check ' + str(r['example']) + ' (clean: fast path)':<52}{r['check_clean_ms']:>9} ms",
        f"{'jobhandlers check, one finding (full path)':<52}{r['check_finding_ms']:>9} ms",
        f"{'helm lint --strict chart -f ' + str(r['example']):<52}{r['lint_ms']:>9} ms",
        f"ratio (helm lint / check, clean file): {r['invocation_ratio']}x   goal <= {r['goal_invocation_ms']} ms and "
        f">= {r['goal_invocation_ratio']}x",
        "",
        f"batch: check vs helm lint ({r['files']} values files: {r['kinds']})",
        f"{'tool':<34}{'files':>7}{'per file ms':>13}{'total s':>10}",
        f"{'jobhandlers check (one process)':<34}{r['files']:>7}{r['check_per_file_ms']:>13}{r['check_wall_seconds']:>10}",
        f"{'helm lint --strict (sample)':<34}{r['lint_sample']:>7}{r['lint_per_file_ms']:>13}"
        f"{r['lint_projected_500_seconds']:>10}  (projected for {r['files']}; min {r['lint_min_ms']} max {r['lint_max_ms']})",
        f"ratio (helm lint / check, per file): {r['ratio']}x   goal >= {r['goal_ratio']}x   "
        f"sample refused: helm lint {r['sample_refused_by_lint']}/{r['lint_sample']}, "
        f"check {r['sample_refused_by_check']}/{r['lint_sample']} (lint knows no JH policy rules)",
    ])


if __name__ == "__main__":
    result = run()
    print(table(result))
    print(json.dumps(result))
