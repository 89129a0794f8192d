"""Launcher mode settings and the batch/v1 Job that runs one job (`workload run-job`).

The Job's name is derived from the job id (`<prefix>-job-<id>`), so creating it twice is
impossible: AlreadyExists means "a previous handler launched it, adopt it".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping

from workload.config import ConfigError, _number

LABEL_LAUNCHER = "workload.jobhandlers.io/launcher"
LABEL_JOB_ID = "workload.jobhandlers.io/job-id"
ANN_ATTEMPT = "workload.jobhandlers.io/attempt"
ANN_LAUNCHED_BY = "workload.jobhandlers.io/launched-by"
ENV_JOB_NAME = "WORKLOAD_LAUNCH_JOB_NAME"
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MODES = ("inprocess", "job")


@dataclass(frozen=True)
class LaunchSettings:
    """WORKLOAD_LAUNCH_* (see the README's launcher contract)."""

    image: str
    namespace: str
    prefix: str
    secret: str
    secret_key: str
    pull_policy: str
    deadline_slack: float
    sync: float
    cpu_request: str
    memory_request: str
    version: int

    @classmethod
    def from_env(cls, env: Mapping[str, str], version: int, default_namespace: str) -> "LaunchSettings":
        def need(name: str) -> str:
            value = env.get(name, "").strip()
            if not value:
                raise ConfigError(f"{name} is not set; launcher mode (WORKLOAD_LAUNCH=job) needs it")
            return value

        prefix = env.get("WORKLOAD_LAUNCH_PREFIX", "").strip() or "workload"
        if not _DNS.match(prefix) or len(prefix) > 40:
            raise ConfigError(f"WORKLOAD_LAUNCH_PREFIX={prefix!r} is not a DNS label of at most 40 characters "
                              "(lower-case letters, digits, '-')")
        namespace = env.get("WORKLOAD_LAUNCH_NAMESPACE", "").strip() or default_namespace
        if not namespace:
            raise ConfigError("WORKLOAD_LAUNCH_NAMESPACE is not set and the token's namespace file is missing")
        policy = env.get("WORKLOAD_LAUNCH_PULL_POLICY", "").strip() or "IfNotPresent"
        if policy not in ("Always", "IfNotPresent", "Never"):
            raise ConfigError(f"WORKLOAD_LAUNCH_PULL_POLICY={policy!r}; use Always, IfNotPresent or Never")
        return cls(image=need("WORKLOAD_LAUNCH_IMAGE"), namespace=namespace, prefix=prefix,
                   secret=need("WORKLOAD_LAUNCH_DB_SECRET"),
                   secret_key=env.get("WORKLOAD_LAUNCH_DB_SECRET_KEY", "").strip() or "DATABASE_URL",
                   pull_policy=policy,
                   deadline_slack=_number(env, "WORKLOAD_LAUNCH_DEADLINE_SLACK_SECONDS", 120.0, 1.0),
                   sync=_number(env, "WORKLOAD_LAUNCH_SYNC_SECONDS", 2.0, 0.05),
                   cpu_request=env.get("WORKLOAD_LAUNCH_CPU_REQUEST", "").strip() or "10m",
                   memory_request=env.get("WORKLOAD_LAUNCH_MEMORY_REQUEST", "").strip() or "48Mi",
                   version=version)

    @property
    def selector(self) -> str:
        return f"{LABEL_LAUNCHER}={self.prefix}"

    def job_name(self, job_id: int) -> str:
        return f"{self.prefix}-job-{job_id}"

    def owner(self, job_id: int) -> str:
        """The lease owner of a launched job: its Kubernetes Job, not a handler process."""
        return f"k8s-job:{self.job_name(job_id)}"


def job_manifest(ls: LaunchSettings, job_id: int, attempt: int, duration: float, launched_by: str) -> dict:
    """The Job: restartPolicy Never, backoffLimit 0, Pod Security `restricted`, no API token."""
    name = ls.job_name(job_id)
    labels = {LABEL_LAUNCHER: ls.prefix, LABEL_JOB_ID: str(job_id),
              "app.kubernetes.io/managed-by": "workload-launcher", "app.kubernetes.io/component": "launched-job"}
    container = {
        "name": "job",
        "image": ls.image,
        "imagePullPolicy": ls.pull_policy,
        "command": ["workload", "run-job", str(job_id)],
        "env": [
            {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": ls.secret, "key": ls.secret_key}}},
            {"name": "WORKLOAD_VERSION", "value": str(ls.version)},
            {"name": ENV_JOB_NAME, "value": name},
            {"name": "WORKLOAD_HANDLER_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "resources": {"requests": {"cpu": ls.cpu_request, "memory": ls.memory_request}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "state", "mountPath": "/run/jobhandlers"}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ls.namespace, "labels": labels,
                     "annotations": {ANN_ATTEMPT: str(attempt), ANN_LAUNCHED_BY: launched_by}},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(math.ceil(duration) + math.ceil(ls.deadline_slack)),
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 10,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                                {"name": "state", "emptyDir": {"sizeLimit": "1Mi"}}],
                },
            },
        },
    }
