"""One scenario = one namespace (restricted PSA), one database, one helm release, one
timeline; plus the operations the tests perform on it."""

from __future__ import annotations

import datetime as dt
import secrets
import time
from pathlib import Path
from typing import Any

from .client import Client
from .cluster import Kube, job_state, parse_time, pod_ready, restart_count
from .diagnostics import container_line, dump_namespace
from .helm import CHART, Helm, HelmResult, deep_merge, write_values
from .jobs import JobsDb
from . import pool
from .observe import Timeline, is_handler_pod
from .postgres import Postgres
from .progress import Progress
from .waits import wait_until

RELEASE = "jh"
WORKLOAD_IMAGE = "jobhandlers/workload"
POSTGRES_IMAGE = "jobhandlers/postgres:15"


def base_values(pg_host: str, database: str, password: str) -> dict[str, Any]:
    """Small, fast lifecycle settings every scenario starts from (overridden per test)."""
    small = {"requests": {"cpu": "10m", "memory": "64Mi"}}
    return {
        "image": {"repository": WORKLOAD_IMAGE, "tag": "1", "pullPolicy": "IfNotPresent"},
        "database": {"host": pg_host, "port": 5432, "name": database, "user": database, "password": password},
        "migration": {"backoffLimit": 0, "activeDeadlineSeconds": 300,
                      "waitForDatabase": {"timeoutSeconds": 60, "intervalSeconds": 1}},
        "waitForMigrations": {"timeoutSeconds": 300, "intervalSeconds": 1},
        "heartbeat": {"intervalSeconds": 1},
        "readiness": {"maxAgeSeconds": 10, "periodSeconds": 5, "failureThreshold": 1, "timeoutSeconds": 2},
        "startupProbe": {"periodSeconds": 1, "failureThreshold": 120, "timeoutSeconds": 2},
        "drain": {"runtimeMultiplier": 1.0, "bufferSeconds": 10, "preStopSeconds": 3},
        "handlers": {
            "web": {"replicas": 1, "maxJobRuntimeSeconds": 5, "resources": small,
                    "env": [{"name": "WORKLOAD_POLL_SECONDS", "value": "0.5"}]},
            "job": {"replicas": 1, "maxJobRuntimeSeconds": 30, "resources": small,
                    "env": [{"name": "WORKLOAD_POLL_SECONDS", "value": "0.5"},
                            {"name": "WORKLOAD_LEASE_SECONDS", "value": "10"},
                            {"name": "WORKLOAD_CONCURRENCY", "value": "4"}]},
        },
    }


class Scenario:
    """Everything one test needs; `close()` removes it again."""

    def __init__(self, kube: Kube, helm: Helm, pg: Postgres, namespace: str, workdir: Path,
                 progress: Progress, pykube_client: Any = None):
        self.kube = kube
        self.helm = helm
        self.pg = pg
        self.namespace = namespace
        self.release = RELEASE
        self.database = namespace.replace("-", "_")
        self.password = secrets.token_hex(12)
        self.workdir = workdir
        self.progress = progress
        self.pykube = pykube_client
        self.db = JobsDb(pg, self.database)
        self.timeline = Timeline(kube, namespace)
        self.values: dict[str, Any] = {}
        self._client: Client | None = None
        self._n = 0

    # ---- lifecycle of the scenario itself ----
    def open(self) -> "Scenario":
        self.pg.create_database(self.database, self.password)
        self.timeline.start()
        return self

    def close(self, failed: bool, delete_namespace: bool = True) -> None:
        if failed:
            dump_namespace(self.kube, self.namespace, self.helm.status(self.release, self.namespace))
        self.timeline.stop()
        try:
            self.force_remove_pods()
        except Exception as exc:  # cleanup must not hide the result
            print(f"warning: pods of {self.namespace} not removed: {exc}")
        if delete_namespace:
            self.kube.delete_namespace(self.namespace)
        try:
            self.pg.drop_database(self.database)
        except Exception as exc:  # cleanup must not hide the result
            print(f"warning: could not drop database {self.database}: {exc}")

    def force_remove_pods(self, timeout: float = 60) -> None:
        """Scale every Deployment to 0 (nothing is recreated), drop the Jobs, then delete the
        pods with grace 0: cleanup never waits out a drain grace of minutes."""
        for dep in self.kube.apps.list_namespaced_deployment(self.namespace).items:
            self.kube.apps.patch_namespaced_deployment_scale(dep.metadata.name, self.namespace,
                                                             {"spec": {"replicas": 0}})
        for sts in self.kube.apps.list_namespaced_stateful_set(self.namespace).items:
            self.kube.apps.patch_namespaced_stateful_set_scale(sts.metadata.name, self.namespace,
                                                               {"spec": {"replicas": 0}})
        self.kube.batch.delete_collection_namespaced_job(self.namespace, propagation_policy="Background")

        def gone() -> bool:
            pods = self.kube.pods(self.namespace)
            for pod in pods:
                self.kube._ignore_404(self.kube.core.delete_namespaced_pod, pod["metadata"]["name"],
                                      self.namespace, grace_period_seconds=0)
            return not pods
        wait_until(gone, timeout, f"every pod of {self.namespace} to be deleted", interval=1)

    # ---- helm ----
    def values_for(self, *overrides: dict) -> dict[str, Any]:
        return deep_merge(base_values(self.pg.host, self.database, self.password), *overrides)

    def _values_file(self, values: dict) -> Path:
        self._n += 1
        # every values file of a scenario passes here: with a node pool, its pods go there
        return write_values(self.workdir / f"values-{self._n}.yaml", pool.place(values))

    def install(self, *overrides: dict, timeout_s: int = 300, wait: bool = True, chart: Path = CHART) -> HelmResult:
        """helm install of `chart` (HEAD's by default, or an extracted release's)."""
        self.values = self.values_for(*overrides)
        return self.helm.install(self.release, self.namespace, [self._values_file(self.values)], timeout_s, wait, chart)

    def upgrade(self, *overrides: dict, timeout_s: int = 300, chart: Path = CHART) -> HelmResult:
        self.values = self.values_for(*overrides)
        return self.helm.upgrade(self.release, self.namespace, [self._values_file(self.values)], timeout_s, chart)

    # ---- objects ----
    def deployments(self) -> dict[str, dict]:
        """role -> its workload: a Deployment, or a StatefulSet (handlers.<role>.kind)."""
        return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in self.kube.workloads(self.namespace)}

    def handler_pods(self, role: str | None = None, live_only: bool = True) -> list[dict]:
        sel = f"app.kubernetes.io/instance={self.release}" + (f",app.kubernetes.io/component={role}" if role else "")
        pods = [p for p in self.kube.pods(self.namespace, sel) if is_handler_pod(p)]
        if live_only:
            pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return pods

    def hook_jobs(self) -> list[dict]:
        return [j for j in self.kube.jobs(self.namespace)
                if "helm.sh/hook" in ((j["metadata"].get("annotations")) or {})]

    def migration_jobs(self) -> list[dict]:
        return [j for j in self.kube.jobs(self.namespace)
                if (j["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "migration"]

    def grace(self, role: str) -> int:
        return int(self.deployments()[role]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])

    def web_base(self) -> str:
        for svc in self.kube.core.list_namespaced_service(self.namespace).items:
            if (svc.metadata.labels or {}).get("app.kubernetes.io/component") == "web":
                return f"http://{svc.metadata.name}:{svc.spec.ports[0].port}"
        raise AssertionError(f"no web Service in namespace {self.namespace}")

    def client(self) -> Client:
        if self._client is None:
            image = f"{WORKLOAD_IMAGE}:1"
            self._client = Client(self.kube, self.namespace, self.web_base(), image).start()
        return self._client

    # ---- conditions ----
    def all_handlers_ready(self) -> bool:
        """Every Deployment at its replica count with only Ready, up-to-date pods."""
        deps = self.deployments()
        if not deps:
            return False
        for role, dep in deps.items():
            want = int(dep["spec"].get("replicas") or 0)
            st = dep.get("status") or {}
            if int(st.get("observedGeneration") or 0) < int(dep["metadata"]["generation"]):
                return False
            if int(st.get("updatedReplicas") or 0) != want or int(st.get("readyReplicas") or 0) != want:
                return False
            if dep.get("kind") == "StatefulSet" and st.get("currentRevision") != st.get("updateRevision"):
                return False
            pods = self.handler_pods(role, live_only=False)
            if len(pods) != want or not all(pod_ready(p) for p in pods):
                return False
        return True

    def wait_handlers_ready(self, timeout: float = 180) -> None:
        wait_until(self.all_handlers_ready, timeout, "every handler workload to be fully Ready",
                   describe=self.describe_pods)
        if self.pykube is not None:  # and the same through pytest-helm-charts' own wait
            from pytest_helm_charts.k8s.deployment import wait_for_deployments_to_run
            names = [d["metadata"]["name"] for d in self.deployments().values() if d.get("kind") != "StatefulSet"]
            if names:  # it refuses an empty list (a release of StatefulSets only)
                wait_for_deployments_to_run(self.pykube, names, self.namespace, 30)

    def describe_pods(self) -> str:
        parts = []
        for p in self.kube.pods(self.namespace):
            parts.append(f"{p['metadata']['name']}:{(p.get('status') or {}).get('phase')}"
                         f"/ready={pod_ready(p)}/restarts={restart_count(p)}")
        return "pods: " + ", ".join(parts)

    def wait_job(self, name: str, timeout: float) -> str:
        """Our own Job wait: all conditions are read (see cluster.job_state)."""
        def done() -> str | None:
            job = self.kube.to_dict(self.kube.batch.read_namespaced_job(name, self.namespace))
            state = job_state(job)
            return state if state != "running" else None
        return wait_until(done, timeout, f"Job {name} to finish")

    def restart_role(self, role: str) -> float:
        """`kubectl rollout restart` of one role; returns the local time it was requested."""
        dep = self.deployments()[role]
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": now}}}}}
        t = time.time()
        if dep.get("kind") == "StatefulSet":
            self.kube.apps.patch_namespaced_stateful_set(dep["metadata"]["name"], self.namespace, patch)
        else:
            self.kube.apps.patch_namespaced_deployment(dep["metadata"]["name"], self.namespace, patch)
        return t

    def wait_rollout(self, role: str, old_uids: set[str], timeout: float) -> None:
        """The role's Deployment is fully updated and Ready, and every old pod is gone."""
        def done() -> bool:
            live = {p["metadata"]["uid"] for p in self.handler_pods(role, live_only=False)}
            return self.all_handlers_ready() and not (live & old_uids)
        wait_until(done, timeout, f"the rollout of role {role} (old pods gone, new pods Ready)",
                   describe=self.describe_pods)

    def restart_counts(self, role: str = "job") -> dict[str, int]:
        """uid -> container restarts of the role's current pods."""
        return {pod["metadata"]["uid"]: restart_count(pod) for pod in self.handler_pods(role)}

    def restarts_since(self, before: dict[str, int], role: str = "job") -> dict[str, int]:
        """pod name -> container restarts since `before` (restart_counts at a test's start; a pod
        created since counts from 0). Not the install's whole timeline (handler_restarts): on a
        shared install a handler that restarted while it started under load, before any test,
        failed every test after it, and their reruns (22a twice in stop 33's rehearsal)."""
        return {pod["metadata"]["name"]: restart_count(pod) - before.get(pod["metadata"]["uid"], 0)
                for pod in self.handler_pods(role)}

    def handler_restarts(self) -> dict[str, int]:
        """pod -> highest restart count seen on the timeline (handler pods only)."""
        from .observe import max_restarts
        return max_restarts(self.timeline, is_handler_pod)

    def restart_report(self, restarts: dict[str, int]) -> str:
        """The counts, then why each restarted pod restarted: its containers' last termination
        and the kubelet's events for it (Unhealthy: which probe failed and how; Killing; BackOff).
        An assertion's message is all a rerun leaves in the log (the RERUN line)."""
        lines = [str(restarts)]
        restarted = {name for name, n in restarts.items() if n}
        try:
            pods = {pod["metadata"]["name"]: pod for pod in self.kube.pods(self.namespace)}
            events = self.kube.events(self.namespace)
        except Exception as exc:  # the report must never hide the assertion
            return f"{restarts} (no reasons: {exc!r})"
        for name in sorted(restarted):
            lines += [f"{name}/{container_line(st).strip()}"
                      for st in ((pods.get(name) or {}).get("status") or {}).get("containerStatuses") or []
                      if st.get("restartCount")]
            lines += [f"{name}: {e.get('reason')} x{e.get('count') or 1}: {(e.get('message') or '')[:200]}"
                      for e in events if (e.get("involvedObject") or {}).get("name") == name
                      and e.get("reason") in ("Unhealthy", "Killing", "BackOff")]
        return "; ".join(lines)


def job_completed_at(job: dict) -> float | None:
    st = job.get("status") or {}
    return parse_time(st.get("completionTime"))
