"""The kind-switch guard (JH061, chart/templates/_kindswitch.tpl) through real `helm upgrade`s
against the validation API server: switching `handlers.job.kind` while this release's workload of
the other kind still runs is refused, and nothing changes; the two-step way (the old kind with
replicas 0, its pods gone) and the acknowledgement (`kindSwitch.allowOverlap`) go through.

No controller runs next to this API server, so a workload's status is whatever the test writes
to its status subresource, and a "draining" pod is a pod the test created for the old workload's
owner and deleted while a finalizer holds it (it stays with a deletionTimestamp, as a pod in its
grace period does).
"""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator import charts
from helm_release import HelmFailed, HelmRelease
from kubeapi import ApiServer

CHART = charts.CHECKOUT_DIR
OTHER = {"Deployment": "StatefulSet", "StatefulSet": "Deployment"}
HOLD = "jobhandlers.test/hold"
_n = itertools.count(1)


def _values(tmp: Path, **job: Any) -> Path:
    path = tmp / f"values-{next(_n)}.yaml"
    path.write_text(yaml.safe_dump({"handlers": {"job": job}}), encoding="utf-8")
    return path


def _release(api: ApiServer, tmp: Path, kind: str) -> tuple[HelmRelease, str]:
    """A release whose job role runs as `kind` with 2 replicas; and that workload's name."""
    rel = HelmRelease(api, f"ks-{next(_n)}", tmp / "helm")
    rel.install(CHART, _values(tmp, kind=kind, replicas=2))
    [name] = [n for k, n in rel.manifest() if k == kind and n.endswith("-job")]
    return rel, name


def _uids(rel: HelmRelease) -> dict[tuple[str, str], str]:
    return {key: obj["metadata"]["uid"] for key, obj in rel.objects().items()}


def _refused(rel: HelmRelease, values: Path, *more: str) -> str:
    with pytest.raises(HelmFailed) as exc:
        rel.helm("upgrade", rel.name, str(CHART), "-f", str(values), "--no-hooks", *more)
    return str(exc.value)


def _set_status_replicas(api: ApiServer, rel: HelmRelease, kind: str, name: str, replicas: int) -> None:
    api.kubectl("patch", "-n", rel.namespace, kind.lower(), name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"replicas": replicas}}))


def _draining_pod(api: ApiServer, rel: HelmRelease, kind: str, name: str) -> str:
    """A pod owned as the old workload's own (its ReplicaSet's, or the StatefulSet's), deleted
    but held by a finalizer: what a pod in its grace period looks like to `lookup`."""
    owner = ({"kind": "ReplicaSet", "name": f"{name}-5d4f8b7c9"} if kind == "Deployment"
             else {"kind": "StatefulSet", "name": name})
    pod = f"{name}-0" if kind == "StatefulSet" else f"{name}-5d4f8b7c9-x2k4q"
    api.kubectl("create", "serviceaccount", "default", "-n", rel.namespace, check=False)
    api.kubectl("apply", "-n", rel.namespace, "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "finalizers": [HOLD],
                     "ownerReferences": [{"apiVersion": "apps/v1", **owner, "uid": str(uuid.uuid4()),
                                          "controller": True}]},
        "spec": {"containers": [{"name": "job", "image": "example.invalid/job:1"}]}}))
    api.kubectl("delete", "pod", pod, "-n", rel.namespace, "--wait=false")
    return pod


def _release_pod(api: ApiServer, rel: HelmRelease, pod: str) -> None:
    api.kubectl("patch", "pod", pod, "-n", rel.namespace, "--type=json",
                "-p", json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
    api.kubectl("wait", "--for=delete", f"pod/{pod}", "-n", rel.namespace, "--timeout=30s")


@pytest.mark.parametrize("old", ["Deployment", "StatefulSet"])
def test_a_switch_is_refused_while_the_old_kind_runs_and_passes_in_two_steps(
        api: ApiServer, tmp_path: Path, old: str) -> None:
    new = OTHER[old]
    rel, name = _release(api, tmp_path, old)
    before = _uids(rel)

    # one step: refused with the rule's words, the state of the old workload, the fix and the key
    msg = _refused(rel, _values(tmp_path, kind=new, replicas=2))
    for words in (f"handlers.job.kind={new}", f"this release's {old} {name} still runs (spec.replicas 2, "
                  "status.replicas 0)", "both kinds run at once", "3–27 s in kind scenario 25b",
                  f"1. handlers.job.kind: {old} with handlers.job.replicas: 0",
                  f"app.kubernetes.io/instance={rel.name},app.kubernetes.io/component=job",
                  f"2. handlers.job.kind: {new} with its replicas",
                  "handlers.job.kindSwitch.allowOverlap: true", "(jobhandlers check: JH061)"):
        assert words in msg, (words, msg)
    assert "`" not in msg, msg
    # nothing changed: same objects (uids), still revision 1
    assert _uids(rel) == before
    assert len(json.loads(rel.helm("history", rel.name, "-o", "json"))) == 1
    # helm's server-side dry run sees it too (lookup runs there); a client-side one cannot
    assert "(jobhandlers check: JH061)" in _refused(rel, _values(tmp_path, kind=new), "--dry-run=server")

    # step 1: the old kind scaled to 0; while its status still counts pods, still refused
    rel.upgrade(CHART, _values(tmp_path, kind=old, replicas=0))
    _set_status_replicas(api, rel, old, name, 2)
    assert "(spec.replicas 0, status.replicas 2)" in _refused(rel, _values(tmp_path, kind=new))
    # status 0 but a pod still terminating (draining): still refused
    _set_status_replicas(api, rel, old, name, 0)
    pod = _draining_pod(api, rel, old, name)
    assert "(replicas 0, but 1 of its pods are still there, 1 of them terminating (draining))" in \
        _refused(rel, _values(tmp_path, kind=new))
    # the pod gone: step 2 switches
    _release_pod(api, rel, pod)
    rel.upgrade(CHART, _values(tmp_path, kind=new, replicas=2))
    after = rel.objects()
    assert (new, name) in after and (old, name) not in after, sorted(after)


@pytest.mark.parametrize("old", ["Deployment", "StatefulSet"])
def test_the_acknowledgement_lets_a_one_step_switch_through(api: ApiServer, tmp_path: Path, old: str) -> None:
    new = OTHER[old]
    rel, name = _release(api, tmp_path, old)
    rel.upgrade(CHART, _values(tmp_path, kind=new, replicas=2, kindSwitch={"allowOverlap": True}))
    after = rel.objects()
    assert (new, name) in after and (old, name) not in after, sorted(after)
    # the next upgrade without it: nothing of the other kind is left, so nothing to refuse
    rel.upgrade(CHART, _values(tmp_path, kind=new, replicas=3))


def test_another_releases_workload_of_the_same_name_is_not_ours(api: ApiServer, tmp_path: Path) -> None:
    """Only this release's workload counts (meta.helm.sh/release-name): an object of the other kind
    with the chart's name that helm does not manage here is left alone, and so is the switch."""
    rel, name = _release(api, tmp_path, "Deployment")
    api.kubectl("annotate", "-n", rel.namespace, "deployment", name, "meta.helm.sh/release-name=someone-else",
                "--overwrite")
    # helm would refuse to take over a Deployment another release owns; a StatefulSet is a new object
    rel.upgrade(CHART, _values(tmp_path, kind="StatefulSet", replicas=2))
