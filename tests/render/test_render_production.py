"""Production fixes, each rendered across its version gate (issue 19): image.digest and valid
version labels (JH028), PDB unhealthyPodEvictionPolicy (JH029), the migration Job's
podReplacementPolicy (JH030), sleep actions where the API server takes them (JH031) and
default requests on every chart-owned container (JH032)."""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

from generator import model
from generator.render import helm
from generator.values.merge import merged

DIGEST = "sha256:" + "0123456789abcdef" * 4
# A label value: at most 63 characters, alphanumeric at both ends, [-_.A-Za-z0-9] between.
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
DOWNGRADE = {"migration": {"onRollback": "downgrade"}, "commands": {"downgrade": ["workload", "downgrade"]}}
# Around every gate: 1.26/1.27 (PDB policy), 1.28/1.29 (Job policy), 1.29/1.30 (sleep action),
# 1.32/1.33 (0-second sleep).
GATE_VERSIONS = ("1.20", "1.26", "1.27", "1.28", "1.29", "1.30", "1.32", "1.33", "1.34", "1.37")


def fail_message(**kwargs: Any) -> str:
    with pytest.raises(helm.HelmRenderError) as info:
        helm.render(**kwargs)
    return info.value.message


def pod_specs(objs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(object name, pod spec) of every Deployment, Job and Pod."""
    for obj in objs:
        if obj["kind"] in ("Deployment", "Job"):
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]
        elif obj["kind"] == "Pod":
            yield obj["metadata"]["name"], obj["spec"]


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("initContainers") or []) + list(spec["containers"])


def all_labels(objs: list[dict[str, Any]]) -> Iterator[tuple[str, str, str]]:
    for obj in objs:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        for k, v in (obj["metadata"].get("labels") or {}).items():
            yield where, k, v
        for k, v in (((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}).items():
            yield where + " (pod template)", k, v


# ---- image.digest -------------------------------------------------------------------------

def test_digest_renders_repository_at_digest_in_every_container():
    objs = helm.render(overrides={"image": {"tag": "2", "digest": DIGEST}, **DOWNGRADE})
    expected = model.image_reference(merged({"image": {"tag": "2", "digest": DIGEST}}), "1")
    assert expected == f"jobhandlers/workload@{DIGEST}"
    seen = {name: [c["image"] for c in containers(spec)] for name, spec in pod_specs(objs)}
    assert {"demo-jobhandlers-web", "demo-jobhandlers-job", "demo-jobhandlers-migration",
            "demo-jobhandlers-downgrade", "demo-jobhandlers-test"} <= set(seen)
    assert all(image == expected for images in seen.values() for image in images), seen
    versions = {v for _, k, v in all_labels(objs) if k == "app.kubernetes.io/version"}
    assert versions == {"2"}, "the tag still names the version label"


def test_without_digest_the_tag_is_used():
    objs = helm.render(overrides={"image": {"tag": "2"}})
    images = {c["image"] for _, spec in pod_specs(objs) for c in containers(spec)}
    assert images == {"jobhandlers/workload:2"}


@pytest.mark.parametrize("tag", ["1.2.3", "v1_2", "x" * 128, "_rc-1"])
def test_version_label_is_always_a_valid_label_value(tag: str):
    objs = helm.render(overrides={"image": {"tag": tag}})
    for where, key, value in all_labels(objs):
        assert len(value) <= 63 and LABEL_VALUE.fullmatch(value), (where, key, value)
    versions = {v for _, k, v in all_labels(objs) if k == "app.kubernetes.io/version"}
    assert versions == {model.version_label(tag)}


def test_digest_in_the_tag_is_refused_with_the_fix():
    msg = fail_message(overrides={"image": {"tag": f"1@{DIGEST}"}})
    assert msg.startswith("jobhandlers: image.tag=") and "holds a digest" in msg
    assert f"set image.digest={DIGEST} and image.tag=\"1\"" in msg and "(jobhandlers check: JH028)" in msg


@pytest.mark.parametrize("tag", ["1:2", ".1", "v1+build"])
def test_invalid_tags_are_refused(tag: str):
    msg = fail_message(overrides={"image": {"tag": tag}})
    assert "is not an image tag" in msg and "JH028" in msg


@pytest.mark.parametrize("digest", ["sha256:abc", "sha512:" + "a" * 64, DIGEST.upper(), "0" * 64])
def test_schema_rejects_malformed_digests(digest: str):
    msg = fail_message(overrides={"image": {"digest": digest}})
    assert "/image/digest" in msg and "does not match pattern" in msg


# ---- PDB unhealthyPodEvictionPolicy -------------------------------------------------------

PDB_CASES = [
    ({}, "chart default"),
    ({"pdb": {"unhealthyPodEvictionPolicy": "IfHealthyBudget"},
      "handlers": {"job": {"pdb": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}}}, "role override"),
    ({"pdb": {"unhealthyPodEvictionPolicy": None}}, "null: not rendered"),
]


@pytest.mark.parametrize("version", GATE_VERSIONS)
@pytest.mark.parametrize(("overrides", "_name"), PDB_CASES, ids=[c[1] for c in PDB_CASES])
def test_pdb_unhealthy_pod_eviction_policy_by_version(version: str, overrides: dict[str, Any], _name: str):
    values = merged(overrides)
    pdbs = {p["metadata"]["labels"]["app.kubernetes.io/component"]: p
            for p in helm.by_kind(helm.render(kube_version=version, overrides=overrides), "PodDisruptionBudget")}
    assert sorted(pdbs) == ["job", "web"]
    for role, pdb in pdbs.items():
        expected = model.pdb_unhealthy_pod_eviction_policy(values, role, version)
        assert pdb["spec"].get("unhealthyPodEvictionPolicy") == expected, (role, version)
    if overrides == {} and model.at_least(version, "1.27"):
        assert {p["spec"]["unhealthyPodEvictionPolicy"] for p in pdbs.values()} == {"AlwaysAllow"}


def test_pdb_policy_schema():
    msg = fail_message(overrides={"handlers": {"web": {"pdb": {"unhealthyPodEvictionPolicy": "Always"}}}})
    assert "/handlers/web/pdb/unhealthyPodEvictionPolicy" in msg


# ---- migration Job podReplacementPolicy ---------------------------------------------------

@pytest.mark.parametrize("version", ["1.20", "1.28", "1.29", "1.34", "1.37"])
@pytest.mark.parametrize("hooks", [True, False], ids=["hook", "plain"])
def test_migration_and_downgrade_jobs_wait_for_a_terminated_pod(version: str, hooks: bool):
    over = {**DOWNGRADE, "migration": {**DOWNGRADE["migration"], "useHelmHooks": hooks}} if hooks else {
        "migration": {"useHelmHooks": False}}
    jobs = helm.by_kind(helm.render(kube_version=version, overrides=over), "Job")
    assert len(jobs) == (2 if hooks else 1)
    expected = model.migration_pod_replacement_policy(merged(over), version)
    assert expected == ("Failed" if model.at_least(version, "1.29") else None)
    for job in jobs:
        assert job["spec"].get("podReplacementPolicy") == expected, job["metadata"]["name"]


def test_pod_replacement_policy_null_is_the_kubernetes_default():
    (job,) = helm.by_kind(helm.render(kube_version="1.34", overrides={"migration": {"podReplacementPolicy": None}}),
                          "Job")
    assert "podReplacementPolicy" not in job["spec"]
    (job,) = helm.by_kind(helm.render(kube_version="1.34", overrides={
        "migration": {"podReplacementPolicy": "TerminatingOrFailed"}}), "Job")
    assert job["spec"]["podReplacementPolicy"] == "TerminatingOrFailed"


# ---- sleep actions ------------------------------------------------------------------------

def sleeps(objs: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """(container, hook, seconds) of every sleep action rendered."""
    out = []
    for _, spec in pod_specs(objs):
        for c in containers(spec):
            for hook, handler in (c.get("lifecycle") or {}).items():
                if isinstance(handler, dict) and "sleep" in handler:
                    out.append((c["name"], hook, handler["sleep"].get("seconds")))
    return out


@pytest.mark.parametrize("version", GATE_VERSIONS)
@pytest.mark.parametrize("mode", model.DRAIN_MODES)
def test_zero_second_prestop_never_renders_a_zero_sleep(version: str, mode: str):
    """preStopSeconds 0: no `sleep: {seconds: 0}` on any version (rejected below 1.33, a no-op
    above); mode none has no preStop at all, the others keep their exec."""
    drain = {"mode": mode, "preStopSeconds": 0, **({"command": ["workload", "drain"]} if mode == "command" else {})}
    over = {"drain": drain}
    objs = helm.render(kube_version=version, overrides=over)
    assert sleeps(objs) == []
    values = merged(over)
    for dep in helm.by_kind(objs, "Deployment"):
        role = dep["metadata"]["labels"]["app.kubernetes.io/component"]
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        pre_stop = (c.get("lifecycle") or {}).get("preStop")
        action = model.prestop_action(values, role, version)
        assert (pre_stop is None) == (action is None), (role, pre_stop)
        if pre_stop is not None:
            assert list(pre_stop) == ["exec"], pre_stop


@pytest.mark.parametrize("version", GATE_VERSIONS)
def test_native_sleep_by_version(version: str):
    objs = helm.render(kube_version=version, overrides={"drain": {"mode": "none", "preStopSeconds": 3}})
    native = model.at_least(version, model.NATIVE_SLEEP_MIN_VERSION)
    assert sleeps(objs) == ([("job", "preStop", 3), ("web", "preStop", 3)] if native else [])


def sidecar(seconds: int) -> dict[str, Any]:
    return {"name": "proxy", "image": "proxy:1", "lifecycle": {"preStop": {"sleep": {"seconds": seconds}}}}


@pytest.mark.parametrize("version", GATE_VERSIONS)
@pytest.mark.parametrize("seconds", [0, 5])
def test_user_sleep_actions_render_only_where_valid(version: str, seconds: int):
    over = {"sidecars": [sidecar(seconds)]}
    valid = model.at_least(version, model.NATIVE_SLEEP_MIN_VERSION) and (
        seconds > 0 or model.at_least(version, model.SLEEP_ZERO_MIN_VERSION))
    if valid:
        assert sleeps(helm.render(kube_version=version, overrides=over)) == [("proxy", "preStop", seconds)] * 2
        return
    msg = fail_message(kube_version=version, overrides=over)
    assert msg.startswith("jobhandlers: sidecars: container proxy") and "(jobhandlers check: JH031)" in msg
    assert ("0-second" in msg) == model.at_least(version, model.NATIVE_SLEEP_MIN_VERSION)


def test_every_user_container_list_is_checked():
    for over in ({"handlers": {"job": {"sidecars": [sidecar(0)]}}}, {"migration": {"sidecars": [sidecar(0)]}},
                 {"extraInitContainers": [{**sidecar(0), "restartPolicy": "Always"}]}):
        msg = fail_message(kube_version="1.32", overrides=over)
        assert "lifecycle.preStop.sleep.seconds=0" in msg, over


# ---- default resources ----------------------------------------------------------------------

def test_every_chart_owned_container_has_requests():
    objs = helm.render(overrides=DOWNGRADE)
    values = merged(DOWNGRADE)
    owned = {"wait-for-migrations", "wait-for-database", "migrate", "downgrade", "schema-check", "web", "job"}
    seen = set()
    for name, spec in pod_specs(objs):
        for c in containers(spec):
            if c["name"] in owned or c["name"].startswith("request-"):
                seen.add(c["name"])
                assert c["resources"]["requests"], (name, c["name"])
                assert "limits" not in c["resources"], "no default limits"
    assert owned <= seen and any(n.startswith("request-") for n in seen)
    floor = values["defaultResources"]
    web = [c for _, s in pod_specs(objs) for c in s["containers"] if c["name"] == "web"]
    assert web and all(c["resources"] == floor for c in web)
    job = [c for _, s in pod_specs(objs) for c in s["containers"] if c["name"] == "job"]
    assert job[0]["resources"] == values["handlers"]["job"]["resources"], "a role's own block wins"


def test_own_limits_are_not_merged_with_default_requests():
    over = {"handlers": {"web": {"resources": {"limits": {"memory": "16Mi"}}}},
            "waitForMigrations": {"resources": {"requests": {"cpu": "1"}}}}
    objs = helm.render(overrides=over)
    (web,) = [d for d in helm.by_kind(objs, "Deployment") if d["metadata"]["name"].endswith("-web")]
    spec = web["spec"]["template"]["spec"]
    assert spec["containers"][0]["resources"] == {"limits": {"memory": "16Mi"}}
    (wait,) = [c for c in spec["initContainers"] if c["name"] == "wait-for-migrations"]
    assert wait["resources"] == {"requests": {"cpu": "1"}}


def test_default_resources_can_be_turned_off():
    objs = helm.render(overrides={"defaultResources": None})  # {} would merge with the default map
    for name, spec in pod_specs(objs):
        for c in containers(spec):
            if c["name"] != "job":
                assert "resources" not in c, (name, c["name"])


# ---- the API's own schemas, on both sides of every gate ----------------------------------

@pytest.mark.parametrize("version", ["1.26", "1.27", "1.28", "1.29", "1.32", "1.33", "1.37"])
def test_rendered_fixes_validate_strict(version: str):
    """kubernetes-validate (strict: an unknown field fails) on the version's own schemas: each new
    field appears only where the API has it."""
    import kubernetes_validate

    over: dict[str, Any] = {**DOWNGRADE, "image": {"tag": "2", "digest": DIGEST},
                            "drain": {"mode": "none", "preStopSeconds": 0}}
    if model.at_least(version, model.SLEEP_ZERO_MIN_VERSION):
        over["sidecars"] = [sidecar(0)]
    objs = helm.render(kube_version=version, overrides=over)
    assert any("unhealthyPodEvictionPolicy" in p["spec"] for p in helm.by_kind(objs, "PodDisruptionBudget")) == \
        model.at_least(version, "1.27")
    assert any("podReplacementPolicy" in j["spec"] for j in helm.by_kind(objs, "Job")) == model.at_least(version, "1.29")
    errors = []
    for obj in objs:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {'.'.join(map(str, exc.path))}: {exc.message}")
    assert not errors, "\n".join(errors)
