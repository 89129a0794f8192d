"""Smoke tests on the live kind cluster: the properties the chart relies on."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from kubernetes import client

from kindtest import KIND_DIR, ROOT, wait_for

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]


def restricted_container(name: str, image: str, args: list[str], **extra) -> client.V1Container:
    """A container that satisfies the 'restricted' Pod Security Standard."""
    return client.V1Container(
        name=name, image=image, args=args, image_pull_policy="IfNotPresent",
        security_context=client.V1SecurityContext(
            allow_privilege_escalation=False, run_as_non_root=True, run_as_user=65534,
            capabilities=client.V1Capabilities(drop=["ALL"]),
            seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"),
        ),
        **extra,
    )


def pod(name: str, containers: list[client.V1Container], labels: dict | None = None,
        restart: str = "Never", grace: int | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(containers=containers, restart_policy=restart,
                              termination_grace_period_seconds=grace),
    )


def pod_phase(core: client.CoreV1Api, ns: str, name: str) -> str:
    return core.read_namespaced_pod(name, ns).status.phase


def wait_ready(core: client.CoreV1Api, ns: str, name: str, timeout: float = 120) -> client.V1Pod:
    def ready() -> client.V1Pod | None:
        p = core.read_namespaced_pod(name, ns)
        conds = {c.type: c.status for c in (p.status.conditions or [])}
        return p if conds.get("Ready") == "True" else None
    return wait_for(ready, timeout, f"pod {ns}/{name} Ready")


def wait_phase(core: client.CoreV1Api, ns: str, name: str, phases: set[str], timeout: float = 120) -> str:
    return wait_for(lambda: (ph := pod_phase(core, ns, name)) in phases and ph, timeout,
                    f"pod {ns}/{name} in phase {sorted(phases)}")


def test_nodes_ready(core_v1: client.CoreV1Api) -> None:
    nodes = core_v1.list_node().items
    assert nodes, "cluster has no nodes"
    for node in nodes:
        conds = {c.type: c.status for c in node.status.conditions}
        assert conds.get("Ready") == "True", f"node {node.metadata.name} not Ready: {conds}"
        assert node.status.node_info.kubelet_version.startswith("v1."), node.status.node_info


def test_node_addresses_match_their_containers(core_v1: client.CoreV1Api) -> None:
    """The API server reaches each kubelet (logs, exec) at the node's InternalIP: after
    dockerd restarts the node containers in another order it must follow their new IPs."""
    for node in core_v1.list_node().items:
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        ip = subprocess.run(["docker", "inspect", "-f",
                             "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                             node.metadata.name], capture_output=True, text=True, check=True).stdout.strip()
        assert internal == [ip], f"node {node.metadata.name}: API server has {internal}, container has {ip}"


def test_pod_from_local_image_runs(core_v1: client.CoreV1Api, namespace: str, smoke_image: str) -> None:
    probe = client.V1Probe(http_get=client.V1HTTPGetAction(path="/", port=8080), period_seconds=1)
    core_v1.create_namespaced_pod(namespace, pod("web", [
        restricted_container("web", smoke_image, ["serve"], readiness_probe=probe)], restart="Always"))
    ready = wait_ready(core_v1, namespace, "web")
    status = ready.status.container_statuses[0]
    assert status.image.endswith(smoke_image.split("/", 1)[1]), status.image
    assert status.restart_count == 0


def test_service_resolves_by_dns(core_v1: client.CoreV1Api, namespace: str, smoke_image: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("web", [
        restricted_container("web", smoke_image, ["serve"])], labels={"app": "web"}, restart="Always"))
    core_v1.create_namespaced_service(namespace, client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(selector={"app": "web"},
                                  ports=[client.V1ServicePort(port=80, target_port=8080)])))
    wait_ready(core_v1, namespace, "web")
    fqdn = f"web.{namespace}.svc.cluster.local"
    core_v1.create_namespaced_pod(namespace, pod("client", [
        restricted_container("client", smoke_image, ["lookup", fqdn, "http://web/"])]))
    phase = wait_phase(core_v1, namespace, "client", {"Succeeded", "Failed"})
    logs = core_v1.read_namespaced_pod_log("client", namespace)
    assert phase == "Succeeded", logs
    svc_ip = core_v1.read_namespaced_service("web", namespace).spec.cluster_ip
    assert f"resolved {fqdn} -> [{svc_ip}]" in logs, logs
    assert "got 200: ok web" in logs, logs


def _follow_logs(core: client.CoreV1Api, ns: str, name: str, sink: list[str]) -> threading.Thread:
    def run() -> None:
        try:
            resp = core.read_namespaced_pod_log(name, ns, follow=True, _preload_content=False)
            for chunk in resp.stream():
                sink.append(chunk.decode(errors="replace"))
        except Exception as exc:  # noqa: BLE001 - the stream ends when the pod is killed
            sink.append(f"\n[log stream ended: {exc}]")
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _delete_and_time(core: client.CoreV1Api, ns: str, name: str, timeout: float) -> float:
    t0 = time.monotonic()
    core.delete_namespaced_pod(name, ns)

    def gone() -> bool:
        try:
            core.read_namespaced_pod(name, ns)
            return False
        except client.ApiException as exc:
            if exc.status == 404:
                return True
            raise
    wait_for(gone, timeout, f"pod {ns}/{name} deleted", interval=0.25)
    return time.monotonic() - t0


def test_delete_sends_sigterm_and_honours_grace(core_v1: client.CoreV1Api, namespace: str,
                                                 smoke_image: str) -> None:
    grace = 10
    # 'stubborn' ignores SIGTERM: kubelet must wait the full grace period, then kill
    # 'prompt' exits 1 s after SIGTERM although its grace period is long
    core_v1.create_namespaced_pod(namespace, pod("stubborn", [
        restricted_container("main", smoke_image, ["trap-term"])], grace=grace))
    core_v1.create_namespaced_pod(namespace, pod("prompt", [
        restricted_container("main", smoke_image, ["trap-term", "1"])], grace=120))
    logs: dict[str, list[str]] = {"stubborn": [], "prompt": []}
    for name in logs:
        wait_phase(core_v1, namespace, name, {"Running"})
        wait_for(lambda n=name: "waiting for SIGTERM" in core_v1.read_namespaced_pod_log(n, namespace),
                 60, f"{name} to install its SIGTERM handler")
        _follow_logs(core_v1, namespace, name, logs[name])
    results: dict[str, float] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, _delete_and_time(
        core_v1, namespace, n, 180))) for n in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = {n: "".join(v) for n, v in logs.items()}
    print(f"deletion took: stubborn {results['stubborn']:.1f}s (grace {grace}s), prompt {results['prompt']:.1f}s")
    assert "SIGTERM received" in text["stubborn"], text["stubborn"]
    assert "SIGTERM received" in text["prompt"], text["prompt"]
    assert grace - 1 <= results["stubborn"] < grace + 30, f"stubborn pod gone after {results['stubborn']:.1f}s"
    assert results["prompt"] < 30, f"prompt pod took {results['prompt']:.1f}s although it exits 1s after SIGTERM"


def test_job_runs_to_completion(batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api,
                                namespace: str, smoke_image: str) -> None:
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="once"),
        spec=client.V1JobSpec(backoff_limit=0, template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"job": "once"}),
            spec=client.V1PodSpec(restart_policy="Never", containers=[
                restricted_container("main", smoke_image, ["sleep-exit", "2"])]))))
    batch_v1.create_namespaced_job(namespace, job)

    def finished() -> str | None:
        st = batch_v1.read_namespaced_job_status("once", namespace).status
        for c in st.conditions or []:
            if c.type in ("Complete", "Failed") and c.status == "True":
                return c.type
        return None
    assert wait_for(finished, 180, "job once to finish") == "Complete"
    assert batch_v1.read_namespaced_job_status("once", namespace).status.succeeded == 1
    pods = core_v1.list_namespaced_pod(namespace, label_selector="job=once").items
    assert len(pods) == 1
    assert "job done" in core_v1.read_namespaced_pod_log(pods[0].metadata.name, namespace)


@pytest.mark.parametrize("namespace", [{"pod-security.kubernetes.io/enforce": "restricted"}], indirect=True)
def test_restricted_namespace_rejects_privileged_pod(core_v1: client.CoreV1Api, namespace: str,
                                                     smoke_image: str) -> None:
    privileged = client.V1Container(name="main", image=smoke_image, args=["serve"],
                                    security_context=client.V1SecurityContext(privileged=True))
    with pytest.raises(client.ApiException) as exc:
        core_v1.create_namespaced_pod(namespace, pod("priv", [privileged]))
    assert exc.value.status == 403, exc.value
    assert "violates PodSecurity" in exc.value.body and "privileged" in exc.value.body, exc.value.body
    # the same pod made compliant is admitted: the rejection is the policy, not the namespace
    core_v1.create_namespaced_pod(namespace, pod("ok", [
        restricted_container("main", smoke_image, ["serve"])]), dry_run="All")


def test_kind_down_leaves_no_containers(tmp_path: Path, kind_bin: str) -> None:
    """Bring up a second, throwaway cluster with kind-up, then `make kind-down` it."""
    name = "jh-smoke-down"
    env = dict(os.environ, KIND=kind_bin, KIND_CLUSTER_NAME=name,
               KIND_KUBECONFIG=str(tmp_path / "kubeconfig"), KIND_READY_TIMEOUT="300", KIND_WORKERS="0")
    env.pop("KUBECONFIG", None)
    label = f"label=io.x-k8s.kind.cluster={name}"

    def containers() -> list[str]:
        out = subprocess.run(["docker", "ps", "-aq", "--filter", label],
                             capture_output=True, text=True, check=True).stdout
        return out.split()

    up = subprocess.run([str(KIND_DIR / "scripts" / "kind-up.sh")], env=env,
                        capture_output=True, text=True, timeout=900)
    assert up.returncode == 0, up.stderr[-3000:]
    assert containers(), f"kind-up created no containers labelled {label}"
    down = subprocess.run(["make", "-C", str(ROOT), "kind-down", f"KIND_CLUSTER_NAME={name}",
                           f"KIND_KUBECONFIG={tmp_path / 'kubeconfig'}"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert down.returncode == 0, down.stderr[-3000:]
    assert containers() == [], f"containers left after kind-down: {containers()}"
    assert not (tmp_path / "kubeconfig").exists(), "kind-down left the kubeconfig behind"
