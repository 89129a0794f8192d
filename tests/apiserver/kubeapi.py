"""A validation-only Kubernetes API server on localhost: etcd + kube-apiserver, no nodes.

    with ApiServer.start(workdir) as api:      # ~10 s: etcd, then kube-apiserver until /readyz
        api.kubectl("get", "ns")
    ApiServer.start(workdir, minor=OLDEST)     # the oldest minor of the version suite

The binaries are the ones the kind node image build produces (`make apiserver-bin` builds only
those, cached in /var/cache/jobhandlers). Nothing listens beyond 127.0.0.1; every port is a
free one picked at start; the data, certificates, keys and logs live in `workdir`. The admin
authenticates with a static bearer token in system:masters; the serving certificate is
kube-apiserver's own self-signed one (--cert-dir); the service-account signing key is
generated with openssl at start. Admission plugins are kube-apiserver's defaults (PodSecurity
included); the feature gates are the kind cluster's (tests/kind/scripts/kind-up.sh).
"""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

JH_CACHE = Path(os.environ.get("JH_CACHE", "/var/cache/jobhandlers"))
# The two minors the oracle runs (Makefile APISERVER_K8S, APISERVER_K8S_OLDEST): the newest, and
# the oldest one the version suite runs (tests/kind/build/k8s/v1.29: make test-kind-versions).
NEWEST, OLDEST = "1.37", "1.29"
MINORS = (NEWEST, OLDEST)
MINOR = NEWEST
K8S_BIN = JH_CACHE / f"k8s-bin-v{NEWEST}"
ETCD = JH_CACHE / "extras-bin" / "etcd"
# the newest minor's kube-apiserver is the node image's; the oldest one is built alone
KUBE_APISERVER = {NEWEST: K8S_BIN / "kube-apiserver", OLDEST: JH_CACHE / f"k8s-apiserver-v{OLDEST}" / "kube-apiserver"}
# one kubectl for both: a dry run is the server's, kubectl only sends the objects
KUBECTL = K8S_BIN / "kubectl"
BUILD_HINT = "run `make apiserver-bin` (builds kube-apiserver 1.37 and 1.29, kubectl and etcd into /var/cache/jobhandlers)"
# the kind cluster's gates (tests/kind/scripts/kind-up.sh), so both validate alike; a gate a minor
# does not know stops its kube-apiserver at start
FEATURE_GATES = {NEWEST: "ContainerStopSignals=true", OLDEST: ""}
START_TIMEOUT = 120.0


class ApiServerError(RuntimeError):
    """A binary is missing, or etcd / kube-apiserver did not come up (the log tail says why)."""


def missing_binaries(minors: tuple[str, ...] = MINORS) -> list[Path]:
    """The binaries this module needs (for these minors) that are not executable files."""
    need = (ETCD, KUBECTL, *(KUBE_APISERVER[m] for m in minors))
    return [p for p in need if not (p.is_file() and os.access(p, os.X_OK))]


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log file, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ApiServer:
    """A running etcd + kube-apiserver pair; `stop()` (or leaving the `with`) ends both."""

    workdir: Path
    port: int
    token: str
    kubeconfig: Path
    minor: str = NEWEST
    startup_seconds: float = 0.0
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)
    _logs: list[IO[bytes]] = field(default_factory=list, repr=False)

    @classmethod
    def start(cls, workdir: Path, timeout: float = START_TIMEOUT, minor: str = NEWEST) -> "ApiServer":
        """Start etcd and kube-apiserver (of `minor`) in `workdir` and wait until /readyz answers ok."""
        missing = missing_binaries((minor,))
        if missing:
            raise ApiServerError(f"missing {', '.join(map(str, missing))}: {BUILD_HINT}")
        t0 = time.monotonic()
        workdir.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(16)
        (workdir / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
        sa_key, sa_pub = workdir / "sa.key", workdir / "sa.pub"
        subprocess.run(["openssl", "genrsa", "-out", str(sa_key), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(sa_key), "-pubout", "-out", str(sa_pub)],
                       check=True, capture_output=True)
        etcd_client, etcd_peer, port = free_port(), free_port(), free_port()
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\n"
            f'clusters: [{{name: local, cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}}}]\n'
            f"users: [{{name: admin, user: {{token: {token}}}}}]\n"
            "contexts: [{name: local, context: {cluster: local, user: admin}}]\ncurrent-context: local\n")
        api = cls(workdir, port, token, kubeconfig, minor)
        gates = ["--feature-gates", FEATURE_GATES[minor]] if FEATURE_GATES[minor] else []
        try:
            api._spawn("etcd", [
                str(ETCD), "--data-dir", str(workdir / "etcd"), "--log-level", "warn",
                "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
                "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
                "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                "--initial-cluster", f"default=http://127.0.0.1:{etcd_peer}"])
            api._spawn("kube-apiserver", [
                str(KUBE_APISERVER[minor]), "--etcd-servers", f"http://127.0.0.1:{etcd_client}",
                "--bind-address", "127.0.0.1", "--secure-port", str(port),
                "--cert-dir", str(workdir / "certs"), "--token-auth-file", str(workdir / "tokens.csv"),
                "--authorization-mode", "RBAC",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", str(sa_pub), "--service-account-signing-key-file", str(sa_key),
                "--service-cluster-ip-range", "10.96.0.0/16", "--allow-privileged=true",  # as kubeadm
                *gates])
            api._wait_ready(t0 + timeout)
        except BaseException:
            api.stop()
            raise
        api.startup_seconds = time.monotonic() - t0
        return api

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "wb")
        self._logs.append(log)
        self._procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def _wait_ready(self, deadline: float) -> None:
        """Poll /readyz until it says exactly ok; fail early when a process exits."""
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        req = urllib.request.Request(f"https://127.0.0.1:{self.port}/readyz",
                                     headers={"Authorization": f"Bearer {self.token}"})
        while time.monotonic() < deadline:
            for proc, name in zip(self._procs, ("etcd", "kube-apiserver")):
                if proc.poll() is not None:
                    raise ApiServerError(f"{name} exited {proc.returncode}:\n{_tail(self.workdir / f'{name}.log')}")
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=2) as resp:
                    if resp.read().strip() == b"ok":
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise ApiServerError(f"kube-apiserver not ready in time:\n{_tail(self.workdir / 'kube-apiserver.log')}")

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this server; with `check`, a non-zero exit raises ApiServerError."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        proc = subprocess.run([str(KUBECTL), "--cache-dir", str(self.workdir / "kubectl-cache"), *args],
                              input=stdin, capture_output=True, text=True, env=env, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ApiServerError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def stop(self) -> None:
        """Terminate kube-apiserver, then etcd (SIGKILL after 10 s each); close the logs."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> "ApiServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

