"""A minimal Kubernetes API client on urllib: in-cluster token, CA and namespace.

The token is read again for every request: a projected token (expirationSeconds) is
rotated by the kubelet in place, so a cached copy would expire under a long-lived handler.
`WORKLOAD_KUBE_API_URL` and `WORKLOAD_KUBE_SA_DIR` point it elsewhere (tests, or an app
that mounts its token at another path).
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from workload.config import ConfigError

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class ApiError(Exception):
    """The API server answered with an error status (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason


class KubeApi:
    """JSON requests to one API server with the pod's ServiceAccount token."""

    def __init__(self, base_url: str, sa_dir: Path, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.sa_dir = sa_dir
        self.timeout = timeout
        self._ssl: ssl.SSLContext | None = None
        if self.base_url.startswith("https:"):
            ca = sa_dir / "ca.crt"
            self._ssl = ssl.create_default_context(cafile=str(ca)) if ca.is_file() else ssl.create_default_context()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "KubeApi":
        """In-cluster settings (KUBERNETES_SERVICE_HOST/PORT), or WORKLOAD_KUBE_API_URL; raises ConfigError."""
        sa_dir = Path(env.get("WORKLOAD_KUBE_SA_DIR", "").strip() or SA_DIR)
        url = env.get("WORKLOAD_KUBE_API_URL", "").strip()
        if not url:
            host = env.get("KUBERNETES_SERVICE_HOST", "").strip()
            port = env.get("KUBERNETES_SERVICE_PORT", "").strip() or "443"
            if not host:
                raise ConfigError("KUBERNETES_SERVICE_HOST is not set: the launcher runs in a pod "
                                  "(or set WORKLOAD_KUBE_API_URL)")
            url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        if not (sa_dir / "token").is_file():
            raise ConfigError(f"no API token at {sa_dir}/token; enable handlers.job.launcher "
                              "(it mounts a projected token in the handler container) or set WORKLOAD_KUBE_SA_DIR")
        return cls(url, sa_dir)

    def namespace(self) -> str:
        """The pod's own namespace (the token's namespace file)."""
        try:
            return (self.sa_dir / "namespace").read_text().strip()
        except OSError:
            return ""

    def request(self, method: str, path: str, body: dict | None = None,
                query: Mapping[str, str] | None = None) -> dict[str, Any]:
        """One request; the decoded JSON answer, or ApiError."""
        url = self.base_url + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            req.add_header("Authorization", f"Bearer {(self.sa_dir / 'token').read_text().strip()}")
        except OSError as exc:
            raise ApiError(0, "NoToken", f"cannot read {self.sa_dir}/token: {exc.strerror}") from None
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                status = json.loads(raw)
            except ValueError:
                status = {}
            raise ApiError(exc.code, str(status.get("reason") or exc.reason),
                           str(status.get("message") or raw[:200].decode(errors="replace"))) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(0, "Unreachable", f"{self.base_url}: {reason}") from None
        return json.loads(raw) if raw else {}

    # ---- batch/v1 Jobs ----
    def _jobs(self, namespace: str) -> str:
        return f"/apis/batch/v1/namespaces/{urllib.parse.quote(namespace)}/jobs"

    def create_job(self, namespace: str, body: dict) -> dict:
        return self.request("POST", self._jobs(namespace), body)

    def get_job(self, namespace: str, name: str) -> dict | None:
        """The Job, or None when it does not exist."""
        try:
            return self.request("GET", f"{self._jobs(namespace)}/{urllib.parse.quote(name)}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list_jobs(self, namespace: str, selector: str) -> list[dict]:
        return list(self.request("GET", self._jobs(namespace), query={"labelSelector": selector}).get("items") or [])

    def delete_job(self, namespace: str, name: str, propagation: str = "Background") -> bool:
        """Delete the Job and (by propagation) its pods; False when it was already gone."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        try:
            self.request("DELETE", f"{self._jobs(namespace)}/{urllib.parse.quote(name)}", body)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def job_phase(job: dict) -> str:
    """'complete', 'failed' or 'active' from every condition of a batch/v1 Job."""
    conds = {c.get("type") for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in conds:
        return "complete"
    if "Failed" in conds:
        return "failed"
    return "active"


def failure_reason(job: dict) -> str:
    """The Failed condition's reason and message (e.g. DeadlineExceeded, BackoffLimitExceeded)."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Failed" and c.get("status") == "True":
            return f"{c.get('reason') or 'Failed'}: {c.get('message') or ''}".strip().rstrip(":")
    return "Failed"
