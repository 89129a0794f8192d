"""The cluster, through the kubernetes client: namespaces, pods of a release, exec,
eviction, and a watch that keeps the last state of every pod (to measure exits)."""

from __future__ import annotations

import calendar
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"


def ts(value: Any) -> float | None:
    """A Kubernetes timestamp (datetime or RFC 3339 text) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        return float(calendar.timegm(time.strptime(value.replace("Z", "")[:19], "%Y-%m-%dT%H:%M:%S")))
    return value.timestamp()


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 1.0,
             describe: Callable[[], str] | None = None) -> Any:
    """check() until truthy; AssertionError naming `what` (and describe()) after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            extra = f": {describe()}" if describe else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(interval)


def restarts(pod: Any) -> int:
    """Restarts of every container and init container of a pod."""
    st = pod.status
    return sum(c.restart_count or 0 for c in (st.container_statuses or []) + (st.init_container_statuses or []))


def ready(pod: Any) -> bool:
    """The pod's Ready condition is True and it is not being deleted."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def ready_at(pod: Any) -> float | None:
    """When the pod last became Ready."""
    for c in pod.status.conditions or []:
        if c.type == "Ready" and c.status == "True":
            return ts(c.last_transition_time)
    return None


class Kube:
    """One cluster (a kubeconfig and an optional context)."""

    def __init__(self, kubeconfig: str | None, context: str | None = None) -> None:
        self.api = config.new_client_from_config(config_file=kubeconfig, context=context)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)
        # exec swaps its client's request method: a client of its own
        self._exec = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig, context=context))

    def version(self) -> str:
        """The API server's version."""
        return client.VersionApi(self.api).get_code().git_version

    def create_namespace(self, name: str) -> None:
        """A namespace under Pod Security `restricted`."""
        body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=dict(RESTRICTED)))
        self.core.create_namespace(body)

    def delete_namespace(self, name: str) -> None:
        """Delete the namespace (not waiting for its finalization)."""
        try:
            self.core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def pods(self, namespace: str, selector: str = "") -> list[Any]:
        """Pods of the namespace matching the label selector."""
        return list(self.core.list_namespaced_pod(namespace, label_selector=selector).items)

    def role_pods(self, namespace: str, release: str, role: str, live_only: bool = True) -> list[Any]:
        """Handler pods of one role of the release (not being deleted, with live_only)."""
        pods = self.pods(namespace, f"{INSTANCE}={release},{COMPONENT}={role}")
        return [p for p in pods if not live_only or p.metadata.deletion_timestamp is None]

    def exec(self, namespace: str, pod: str, container: str, argv: list[str], timeout: float) -> tuple[int, str, str]:
        """Run argv in a container: (exit code, stdout, stderr)."""
        resp = stream(self._exec.connect_get_namespaced_pod_exec, pod, namespace, command=argv, container=container,
                      stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
        out, err = [], []
        deadline = time.monotonic() + timeout
        try:
            while resp.is_open():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"`{' '.join(argv)}` in {pod}/{container} ran longer than {timeout:.0f} s")
                resp.update(timeout=1)
                if resp.peek_stdout():
                    out.append(resp.read_stdout())
                if resp.peek_stderr():
                    err.append(resp.read_stderr())
            rc = resp.returncode
        finally:
            resp.close()
        return (rc if rc is not None else -1), "".join(out), "".join(err)

    def role_template(self, namespace: str, release: str, role: str) -> dict[str, Any]:
        """The pod template of a role's Deployment or StatefulSet, as a plain dict."""
        sel = f"{INSTANCE}={release},{COMPONENT}={role}"
        for lister in (self.apps.list_namespaced_deployment, self.apps.list_namespaced_stateful_set):
            for item in lister(namespace, label_selector=sel).items:
                if item.metadata.deletion_timestamp is None:
                    return self.api.sanitize_for_serialization(item.spec.template)
        raise AssertionError(f"no Deployment or StatefulSet of role {role} in release {release}")

    def run_job(self, namespace: str, manifest: dict[str, Any], container: str, timeout: float) -> tuple[int, str]:
        """Create the Job, wait for it to end (at most timeout s), and delete it: (the container's
        exit code, its log: stdout and stderr together, as the kubelet keeps them)."""
        name = manifest["metadata"]["name"]
        self.batch.create_namespaced_job(namespace, manifest)
        try:
            def ended() -> Any:
                conds = self.batch.read_namespaced_job_status(name, namespace).status.conditions or []
                return next((c.type for c in conds if c.type in ("Complete", "Failed") and c.status == "True"), None)
            how = wait_for(f"Job {name} to end", ended, timeout, interval=1)
            pods = self.pods(namespace, f"job-name={name}")
            if not pods:
                return -1, f"Job {name} {how} without a pod"
            pod = pods[0]
            term = next((cs.state.terminated for cs in pod.status.container_statuses or []
                         if cs.name == container and cs.state and cs.state.terminated), None)
            try:
                log = self.core.read_namespaced_pod_log(pod.metadata.name, namespace, container=container)
            except ApiException as exc:
                log = f"(no log: {exc.reason})"
            rc = int(term.exit_code) if term is not None else (0 if how == "Complete" else -1)
            return rc, log
        finally:
            try:
                self.batch.delete_namespaced_job(name, namespace, propagation_policy="Background")
            except ApiException as exc:
                if exc.status != 404:
                    raise

    def evict(self, namespace: str, pod: str) -> None:
        """Evict a pod through the Eviction API (the PDB decides; 429 when it refuses)."""
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=namespace))
        self.core.create_namespaced_pod_eviction(pod, namespace, body)

    def gone(self, namespace: str, pod: str, uid: str | None = None) -> bool:
        """The pod object no longer exists (with uid: no pod of that name has it; a
        StatefulSet's replacement keeps the name)."""
        try:
            found = self.core.read_namespaced_pod(pod, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return uid is not None and found.metadata.uid != uid

    def leftovers(self, namespace: str) -> list[str]:
        """Every object a release could leave behind in the namespace, as kind/name."""
        found: list[str] = []
        lists = [("Pod", self.core.list_namespaced_pod), ("Job", self.batch.list_namespaced_job),
                 ("Deployment", self.apps.list_namespaced_deployment),
                 ("StatefulSet", self.apps.list_namespaced_stateful_set),
                 ("Service", self.core.list_namespaced_service), ("Secret", self.core.list_namespaced_secret),
                 ("ConfigMap", self.core.list_namespaced_config_map),
                 ("PodDisruptionBudget", self.policy.list_namespaced_pod_disruption_budget),
                 ("ServiceAccount", self.core.list_namespaced_service_account)]
        for kind, lister in lists:
            for item in lister(namespace).items:
                name = item.metadata.name
                if kind == "ServiceAccount" and name == "default":
                    continue
                if kind == "ConfigMap" and name == "kube-root-ca.crt":
                    continue
                found.append(f"{kind}/{name}")
        return found


@dataclass
class PodTrace:
    """What a watch saw of one pod: name, role, when SIGTERM was sent, when its containers
    ended and how, and when the object was gone."""

    name: str
    role: str
    uid: str = ""
    created: float | None = None
    sigterm_at: float | None = None
    grace: int | None = None
    finished_at: float | None = None
    exit_codes: dict[str, int] = field(default_factory=dict)
    gone_at: float | None = None
    restarts: int = 0

    @property
    def exit_seconds(self) -> float | None:
        """SIGTERM to the last container's end (or to the object's removal)."""
        end = self.finished_at if self.finished_at is not None else self.gone_at
        if self.sigterm_at is None or end is None:
            return None
        return round(end - self.sigterm_at, 1)


class PodRecorder:
    """A background watch over the release's pods, keeping a PodTrace per pod uid."""

    def __init__(self, kube: Kube, namespace: str, release: str) -> None:
        self.kube, self.namespace, self.release = kube, namespace, release
        self.traces: dict[str, PodTrace] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PodRecorder":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        version: str | None = None  # resumed from the last event: no deletion falls between two watches
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                kwargs = {"resource_version": version} if version else {}
                for ev in w.stream(self.kube.core.list_namespaced_pod, self.namespace,
                                   label_selector=f"{INSTANCE}={self.release}", timeout_seconds=5, **kwargs):
                    if ev["type"] == "ERROR":
                        version = None  # 410 Gone: list again
                        break
                    self._see(ev["type"], ev["object"])
                    version = ev["object"].metadata.resource_version
                    if self._stop.is_set():
                        break
            except Exception:  # noqa: BLE001 - a broken watch is restarted (listing again)
                version = None
                time.sleep(1)
            finally:
                w.stop()

    def _see(self, kind: str, pod: Any) -> None:
        md = pod.metadata
        with self._lock:
            t = self.traces.setdefault(md.uid, PodTrace(md.name, (md.labels or {}).get(COMPONENT, ""), md.uid))
            t.created = ts(md.creation_timestamp)
            if md.deletion_timestamp is not None and md.deletion_grace_period_seconds is not None:
                t.grace = int(md.deletion_grace_period_seconds)
                if t.sigterm_at is None:
                    t.sigterm_at = ts(md.deletion_timestamp) - t.grace
            t.restarts = restarts(pod)
            for cs in pod.status.container_statuses or []:
                term = cs.state.terminated if cs.state else None
                if term is not None:
                    t.exit_codes[cs.name] = int(term.exit_code)
                    end = ts(term.finished_at)
                    if end is not None and (t.finished_at is None or end > t.finished_at):
                        t.finished_at = end
            if kind == "DELETED" and t.gone_at is None:
                t.gone_at = time.time()

    def of(self, uids: set[str]) -> list[PodTrace]:
        """The traces of these pod uids."""
        with self._lock:
            return [self.traces[u] for u in sorted(uids) if u in self.traces]
