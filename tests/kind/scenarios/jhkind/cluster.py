"""Kubernetes API access (the official Python client) with dict-shaped results."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from .waits import wait_until

RESTRICTED_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}


def parse_time(value: str | None) -> float | None:
    """RFC 3339 timestamp from the API (seconds or micro/nano precision) -> epoch seconds."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:  # trim nanoseconds to what fromisoformat accepts
        head, tail = text.split(".", 1)
        frac, _, zone = tail.partition("+")
        text = f"{head}.{frac[:6]}+{zone}"
    return dt.datetime.fromisoformat(text).timestamp()


@dataclass
class ExecResult:
    rc: int
    stdout: str
    stderr: str


class Kube:
    """The API clients of one cluster plus the operations the scenarios use."""

    def __init__(self, kubeconfig: str):
        self.kubeconfig = kubeconfig
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)
        self.version = client.VersionApi(self.api)
        self._exec_clients = threading.local()

    def to_dict(self, obj: Any) -> dict:
        return self.api.sanitize_for_serialization(obj)

    # ---- namespaces ----
    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        try:
            self.core.create_namespace(body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def delete_namespace(self, name: str, wait: float = 0) -> None:
        """Force-delete the pods (no drain waits during cleanup), then the namespace."""
        try:
            for pod in self.core.list_namespaced_pod(name).items:
                self._ignore_404(self.core.delete_namespaced_pod, pod.metadata.name, name, grace_period_seconds=0)
            self.core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        if wait:
            wait_until(lambda: not self.namespace_exists(name), wait, f"namespace {name} to be deleted", interval=1)

    def namespace_exists(self, name: str) -> bool:
        try:
            self.core.read_namespace(name)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise

    @staticmethod
    def _ignore_404(fn, *args, **kwargs) -> None:
        try:
            fn(*args, **kwargs)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # ---- objects ----
    def apply_objects(self, namespace: str, docs: list[dict]) -> None:
        """Create each object (409 = already there, kept)."""
        creators = {
            "Namespace": lambda d: self.core.create_namespace(d),
            "Service": lambda d: self.core.create_namespaced_service(namespace, d),
            "Secret": lambda d: self.core.create_namespaced_secret(namespace, d),
            "ConfigMap": lambda d: self.core.create_namespaced_config_map(namespace, d),
            "Pod": lambda d: self.core.create_namespaced_pod(namespace, d),
            "Deployment": lambda d: self.apps.create_namespaced_deployment(namespace, d),
            "StatefulSet": lambda d: self.apps.create_namespaced_stateful_set(namespace, d),
        }
        for doc in docs:
            if not doc:
                continue
            kind = doc["kind"]
            if kind not in creators:
                raise ValueError(f"apply_objects: unsupported kind {kind}")
            try:
                creators[kind](doc)
            except ApiException as exc:
                if exc.status != 409:
                    raise

    def pods(self, namespace: str, selector: str | None = None) -> list[dict]:
        items = self.core.list_namespaced_pod(namespace, label_selector=selector or "").items
        return [self.to_dict(p) for p in items]

    def pod(self, namespace: str, name: str) -> dict | None:
        try:
            return self.to_dict(self.core.read_namespaced_pod(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def deployments(self, namespace: str) -> list[dict]:
        return [self.to_dict(d) for d in self.apps.list_namespaced_deployment(namespace).items]

    def statefulsets(self, namespace: str) -> list[dict]:
        return [self.to_dict(d) for d in self.apps.list_namespaced_stateful_set(namespace).items]

    def workloads(self, namespace: str) -> list[dict]:
        """The namespace's Deployments and StatefulSets (each dict keeps its `kind`)."""
        out = []
        for kind, items in (("Deployment", self.deployments(namespace)), ("StatefulSet", self.statefulsets(namespace))):
            for d in items:
                d["kind"] = kind
                out.append(d)
        return out

    def pdbs(self, namespace: str) -> list[dict]:
        return [self.to_dict(d) for d in self.policy.list_namespaced_pod_disruption_budget(namespace).items]

    def jobs(self, namespace: str) -> list[dict]:
        return [self.to_dict(j) for j in self.batch.list_namespaced_job(namespace).items]

    def events(self, namespace: str) -> list[dict]:
        items = [self.to_dict(e) for e in self.core.list_namespaced_event(namespace).items]
        return sorted(items, key=event_time)

    def logs(self, namespace: str, pod: str, container: str | None = None, previous: bool = False,
             timestamps: bool = False) -> str:
        try:
            return self.core.read_namespaced_pod_log(
                pod, namespace, container=container, previous=previous, timestamps=timestamps
            )
        except ApiException as exc:
            return f"<no logs: {exc.status} {exc.reason}>"

    def exec(self, namespace: str, pod: str, command: list[str], container: str | None = None,
             timeout: float = 60) -> ExecResult:
        """Run a command in a container; return its exit code and output. `stream()` swaps the
        request method of the client it is given while it runs, so every thread execs through
        a client of its own: a concurrent call on the shared one would otherwise go out as a
        websocket ("Handshake status 200 OK"), e.g. two scenario variants run in threads."""
        core = getattr(self._exec_clients, "core", None)
        if core is None:
            core = self._exec_clients.core = client.CoreV1Api(config.new_client_from_config(config_file=self.kubeconfig))
        resp = stream(
            core.connect_get_namespaced_pod_exec, pod, namespace, command=command,
            container=container or "", stderr=True, stdin=False, stdout=True, tty=False,
            _preload_content=False,
        )
        out: list[str] = []
        err: list[str] = []
        deadline = time.monotonic() + timeout
        while resp.is_open() and time.monotonic() < deadline:
            resp.update(timeout=1)
            if resp.peek_stdout():
                out.append(resp.read_stdout())
            if resp.peek_stderr():
                err.append(resp.read_stderr())
        if resp.is_open():
            resp.close()
            raise TimeoutError(f"exec {command} in {namespace}/{pod} still running after {timeout}s")
        out.append(resp.read_stdout() or "")
        err.append(resp.read_stderr() or "")
        status = yaml.safe_load(resp.read_channel(3) or "{}") or {}
        resp.close()
        if status.get("status") == "Success":
            rc = 0
        else:
            causes = (status.get("details") or {}).get("causes") or []
            codes = [c.get("message") for c in causes if c.get("reason") == "ExitCode"]
            rc = int(codes[0]) if codes else 255
            if not codes:
                err.append(str(status.get("message", status)))
        return ExecResult(rc, "".join(out), "".join(err))

    def server_version(self) -> str:
        return self.version.get_code().git_version


def event_time(event: dict) -> float:
    """Best timestamp of a core/v1 Event (epoch seconds)."""
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if value:
            return parse_time(value) or 0.0
    return parse_time((event.get("metadata") or {}).get("creationTimestamp")) or 0.0


def condition(obj: dict, ctype: str) -> dict | None:
    """The status condition of that type (every condition is looked at, not just the first)."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def pod_ready(pod: dict) -> bool:
    cond = condition(pod, "Ready")
    return bool(cond and cond.get("status") == "True")


def restart_count(pod: dict) -> int:
    status = pod.get("status") or {}
    statuses = (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def job_state(job: dict) -> str:
    """'complete', 'failed' or 'running' from ALL conditions (not only the first one:
    on >= 1.31 a finished Job also carries SuccessCriteriaMet / FailureTarget)."""
    status = job.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in types:
        return "complete"
    if "Failed" in types:
        return "failed"
    return "running"
