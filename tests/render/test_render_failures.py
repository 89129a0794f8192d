"""Values the chart refuses at render time, with messages that name the numbers and the fix."""

from __future__ import annotations

import pytest

from generator import model
from generator.render import helm
from generator.invariants import role_container

DEFAULTS_JOB = model.computed_grace(300, 1.0, 30, 10)  # chart/values.yaml: handlers.job


def fail_message(**kwargs) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(**kwargs)
    return info.value.message


def test_too_short_grace_override_fails_naming_both_numbers():
    msg = fail_message(overrides={"handlers": {"job": {"terminationGracePeriodSeconds": 100}}})
    assert msg.startswith("jobhandlers: handlers.job.terminationGracePeriodSeconds=100 ")
    assert f"computed drain grace {DEFAULTS_JOB}" in msg
    assert f"at least {DEFAULTS_JOB}" in msg


def test_too_short_by_one_fails_and_equal_or_longer_renders():
    over = {"drain": {"runtimeMultiplier": 1.1}, "handlers": {"web": {"maxJobRuntimeSeconds": 100}}}
    computed = model.computed_grace(100, 1.1, 30, 10)
    assert computed == 150
    msg = fail_message(overrides={**over, "handlers": {"web": {"maxJobRuntimeSeconds": 100, "terminationGracePeriodSeconds": computed - 1}}})
    assert f"={computed - 1} " in msg and f"grace {computed} " in msg
    for explicit in (computed, 86400):
        objs = helm.render(overrides={**over, "handlers": {"web": {"maxJobRuntimeSeconds": 100, "terminationGracePeriodSeconds": explicit}}})
        (web,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"].endswith("-web")]
        assert web["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == explicit


def test_disabled_role_with_a_short_grace_renders():
    """A disabled role renders no pod, so its explicit grace is not checked (JH001 looks at
    enabled roles only; the chart used to refuse it: tests/unit/fixtures/parity/)."""
    over = {"handlers": {"job": {"enabled": False, "terminationGracePeriodSeconds": 30}}}
    objs = helm.render(overrides=over)
    assert [d["metadata"]["name"] for d in helm.by_kind(objs, "Deployment")] == ["demo-jobhandlers-web"]
    over["handlers"]["job"]["enabled"] = True
    assert f"computed drain grace {DEFAULTS_JOB}" in fail_message(overrides=over)


def test_database_created_by_release_with_hooks_fails():
    msg = fail_message(overrides={"database": {"createdByRelease": True}})
    assert "deadlock" in msg and "migration.useHelmHooks=false" in msg
    # the same database without hooks is fine (plain Job, hash-named)
    objs = helm.render(overrides={"database": {"createdByRelease": True}, "migration": {"useHelmHooks": False}})
    assert helm.by_kind(objs, "Job")


@pytest.mark.parametrize("version", ["1.16", "1.17"])
def test_forced_startup_probe_needs_the_feature_gate_below_118(version):
    msg = fail_message(kube_version=version, overrides={"startupProbe": {"force": True}})
    assert "startupProbe.featureGateEnabled=true" in msg and f"v{version}" in msg
    objs = helm.render(kube_version=version, overrides={"startupProbe": {"force": True, "featureGateEnabled": True}})
    for dep in helm.by_kind(objs, "Deployment"):
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert "startupProbe" in c and c["livenessProbe"]["initialDelaySeconds"] == 0


def test_force_without_gate_is_harmless_where_supported():
    objs = helm.render(kube_version="1.18", overrides={"startupProbe": {"force": True}})
    assert all("startupProbe" in role_container(d) for d in helm.by_kind(objs, "Deployment"))


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"handlers": {"web": {"replica": 2}}}, "/handlers/web"),
        ({"readines": {"maxAgeSeconds": 5}}, "readines"),
        ({"readiness": {"maxAgeSeconds": 0}}, "/readiness/maxAgeSeconds"),
        ({"drain": {"bufferSeconds": -1}}, "/drain/bufferSeconds"),
        ({"drain": {"runtimeMultiplier": 0.5}}, "/drain/runtimeMultiplier"),
        ({"migration": {"activeDeadlineSeconds": "900"}}, "/migration/activeDeadlineSeconds"),
        ({"migration": {"jobNameSuffix": "revision"}}, "/migration/jobNameSuffix"),
        ({"handlers": {"invoker": {"replicas": 2}}}, "/handlers/invoker"),
        ({"handlers": {"Invoker_1": {"command": ["x"], "maxJobRuntimeSeconds": 5}}}, "Invoker_1"),
        ({"handlers": {"migration": {"command": ["x"], "maxJobRuntimeSeconds": 5}}}, "invalid propertyName 'migration'"),
        ({"startupProbe": {"minKubeVersion": "v1.18"}}, "/startupProbe/minKubeVersion"),
    ],
    ids=["role-typo", "top-typo", "zero-age", "negative-buffer", "multiplier-below-1", "string-duration",
         "bad-suffix", "role-without-command", "bad-role-name", "reserved-role-name", "bad-min-version"],
)
def test_schema_rejects(overrides, path):
    msg = fail_message(overrides=overrides)
    assert "values don't meet the specifications of the schema" in msg
    assert path in msg, msg


def test_rollback_downgrade_hook_and_its_prerequisites():
    over = {"migration": {"onRollback": "downgrade"}, "commands": {"downgrade": ["workload", "downgrade"]}}
    objs = helm.render(overrides=over)
    (down,) = [j for j in helm.by_kind(objs, "Job") if j["metadata"]["name"].endswith("-downgrade")]
    assert down["metadata"]["annotations"]["helm.sh/hook"] == "pre-rollback"
    (c,) = down["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "downgrade" and c["command"] == ["workload", "downgrade"] and "args" not in c
    for kind in ("ServiceAccount", "Secret"):
        hooks = [o for o in helm.by_kind(objs, kind) if "helm.sh/hook" in (o["metadata"].get("annotations") or {})]
        assert hooks and all("pre-rollback" in o["metadata"]["annotations"]["helm.sh/hook"] for o in hooks), kind
    assert "downgrade" not in str([j["metadata"]["name"] for j in helm.by_kind(helm.render(), "Job")])
    msg = fail_message(overrides={"migration": {"onRollback": "downgrade"}})
    assert "without commands.downgrade" in msg and "JH022" in msg
    msg = fail_message(overrides={**over, "migration": {"onRollback": "downgrade", "useHelmHooks": False}})
    assert "only helm runs pre-rollback hooks" in msg


def test_every_problem_is_reported_at_once_and_check_finds_the_same(tmp_path):
    """GitLab checkConfig style: the chart collects every refusal and fails once, each line
    with its rule id; `jobhandlers check` reports (at least) the same ids first."""
    import json
    import re
    import subprocess
    import sys

    values = {
        "database": {"createdByRelease": True, "secretIsHook": False},
        "handlers": {"job": {"maxJobRuntimeSeconds": 600, "terminationGracePeriodSeconds": 5,
                             "drain": {"mode": "command"}}},
        "migration": {"onRollback": "downgrade"},
    }
    msg = fail_message(overrides=values)
    lines = [line for line in msg.splitlines() if line.startswith("- jobhandlers: ")]
    ids = [re.search(r"\(jobhandlers check: (JH\d{3})\)$", line).group(1) for line in lines]
    assert msg.startswith(f"jobhandlers: {len(lines)} problems in the values")
    assert sorted(set(ids)) == ["JH001", "JH004", "JH005", "JH020", "JH022"], msg
    path = tmp_path / "many.yaml"
    path.write_text(json.dumps(values))
    proc = subprocess.run([sys.executable, "-m", "generator.cli", "check", str(path), "--format", "json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    found = {f["rule"] for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"}
    assert set(ids) <= found, (ids, found)


def test_one_problem_is_one_line_without_a_header():
    msg = fail_message(overrides={"handlers": {"job": {"terminationGracePeriodSeconds": 5}}})
    assert msg.startswith("jobhandlers: handlers.job.terminationGracePeriodSeconds=5 ")
    assert "\n" not in msg.strip() and msg.rstrip().endswith("(jobhandlers check: JH001)")
