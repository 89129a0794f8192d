"""A fake batch/v1 API server for the launcher tests: Jobs in memory, and a "Job controller"
that runs each created Job's container command as a real `workload` subprocess (env resolved,
secretKeyRef from a dict) and sets Complete/Failed when it exits. Counts every create, so a
test can assert that each Job name was created exactly once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

HERE = Path(__file__).resolve().parent
_PATH = re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+))?$")


class FakeKube:
    """start() -> base URL; jobs, creates, conflicts, deletes; run_pods=False keeps Jobs pending."""

    def __init__(self, secrets: dict[str, dict[str, str]], base_env: dict[str, str], logdir: Path,
                 token: str = "t0ken") -> None:
        self.secrets = secrets
        self.base_env = base_env
        self.logdir = logdir
        self.token = token
        self.jobs: dict[tuple[str, str], dict] = {}
        self.procs: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self.creates: dict[str, int] = {}
        self.conflicts: dict[str, int] = {}
        self.deletes: list[tuple[str, str]] = []  # (name, propagationPolicy)
        self.bodies: dict[str, dict] = {}  # name -> the body of its first create
        self.hidden: set[str] = set()  # names left out of lists (a list taken just before their create)
        self.unauthorized = 0
        self.run_pods = True
        self.lock = threading.Lock()
        self._stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_a: Any) -> None:
                pass

            def _send(self, code: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _route(self) -> tuple[str, str | None, dict] | None:
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    fake.unauthorized += 1
                    self._send(401, {"kind": "Status", "reason": "Unauthorized", "message": "bad token"})
                    return None
                url = urlparse(self.path)
                m = _PATH.match(url.path)
                if not m:
                    self._send(404, {"kind": "Status", "reason": "NotFound", "message": url.path})
                    return None
                return m.group(1), m.group(2), parse_qs(url.query)

            def _body(self) -> dict:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else {}

            def do_POST(self) -> None:  # noqa: N802
                route = self._route()
                if route:
                    code, body = fake.create(route[0], self._body())
                    self._send(code, body)

            def do_GET(self) -> None:  # noqa: N802
                route = self._route()
                if not route:
                    return
                ns, name, query = route
                with fake.lock:
                    if name:
                        job = fake.jobs.get((ns, name))
                        if job is None:
                            self._send(404, {"kind": "Status", "reason": "NotFound", "message": name})
                        else:
                            self._send(200, job)
                        return
                    sel = dict(s.split("=", 1) for s in (query.get("labelSelector", [""])[0].split(",")) if s)
                    items = [j for (n, _), j in fake.jobs.items() if n == ns and
                             j["metadata"]["name"] not in fake.hidden and
                             all(j["metadata"]["labels"].get(k) == v for k, v in sel.items())]
                    self._send(200, {"kind": "JobList", "items": json.loads(json.dumps(items))})

            def do_DELETE(self) -> None:  # noqa: N802
                route = self._route()
                if not route:
                    return
                ns, name, _ = route
                opts = self._body()
                with fake.lock:
                    job = fake.jobs.pop((ns, name or ""), None)
                    proc = fake.procs.pop((ns, name or ""), None)
                if job is None:
                    self._send(404, {"kind": "Status", "reason": "NotFound", "message": name})
                    return
                if proc is not None and proc.poll() is None:
                    proc.kill()  # the garbage collector takes the pod with the Job
                fake.deletes.append((name or "", str(opts.get("propagationPolicy"))))
                self._send(200, {"kind": "Status", "status": "Success"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def start(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        threading.Thread(target=self._controller, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        with self.lock:
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.kill()

    def create(self, ns: str, body: dict) -> tuple[int, dict]:
        name = body["metadata"]["name"]
        with self.lock:
            if (ns, name) in self.jobs:
                self.conflicts[name] = self.conflicts.get(name, 0) + 1
                return 409, {"kind": "Status", "reason": "AlreadyExists", "message": f'jobs.batch "{name}" already exists'}
            self.creates[name] = self.creates.get(name, 0) + 1
            self.bodies.setdefault(name, json.loads(json.dumps(body)))
            job = json.loads(json.dumps(body))
            job["metadata"]["uid"] = f"uid-{name}-{self.creates[name]}"
            job["status"] = {}
            self.jobs[(ns, name)] = job
        return 201, job

    def _env(self, container: dict) -> dict[str, str]:
        env = dict(self.base_env)
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = item["value"]
            elif "secretKeyRef" in (item.get("valueFrom") or {}):
                ref = item["valueFrom"]["secretKeyRef"]
                env[item["name"]] = self.secrets[ref["name"]][ref["key"]]
            elif "fieldRef" in (item.get("valueFrom") or {}):
                env[item["name"]] = f"{container['name']}-pod"
        return env

    def _controller(self) -> None:
        """Start a process for every new Job, set its conditions when the process exits."""
        while not self._stop.wait(0.05):
            with self.lock:
                for key, job in self.jobs.items():
                    proc = self.procs.get(key)
                    if proc is None and self.run_pods and not job["status"]:
                        c = job["spec"]["template"]["spec"]["containers"][0]
                        assert c["command"][0] == "workload"
                        out = open(self.logdir / f"{key[1]}.log", "ab")
                        self.procs[key] = subprocess.Popen([sys.executable, "-m", "workload", *c["command"][1:]],
                                                           env=self._env(c), stdout=out, stderr=subprocess.STDOUT,
                                                           cwd=HERE)
                        out.close()
                        job["status"] = {"active": 1, "startTime": time.time()}
                    elif proc is not None and proc.poll() is not None and job["status"].get("active"):
                        ok = proc.returncode == 0
                        cond = {"type": "Complete" if ok else "Failed", "status": "True",
                                "reason": None if ok else "BackoffLimitExceeded",
                                "message": None if ok else "Job has reached the specified backoff limit"}
                        job["status"] = {"succeeded" if ok else "failed": 1, "conditions": [cond]}

    def fail_job(self, name: str, reason: str, ns: str) -> None:
        """Mark a Job Failed (e.g. DeadlineExceeded) and kill its pod, as the controller does."""
        with self.lock:
            proc = self.procs.get((ns, name))
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            self.jobs[(ns, name)]["status"] = {"failed": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": reason, "message": "Job was active longer than specified"}]}

    def running(self) -> int:
        with self.lock:
            return sum(1 for p in self.procs.values() if p.poll() is None)
