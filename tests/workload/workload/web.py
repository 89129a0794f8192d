"""`workload web`: the HTTP API (threaded stdlib server) plus a heartbeat loop checking the DB.

  POST /jobs        {"kind": "sleep", "duration": 1.5, "priority": 0}  -> 201 {"id": n}
  GET  /jobs/<id>   the job                      GET /jobs, /counts   jobs per state
  POST /workflows   {"steps": 3, "kind": "sleep", "duration": 1}     -> 201 {"id": n}
  GET  /workflows/<id>                           GET /healthz   200 when the DB answers
Query-string parameters work too (`POST /jobs?kind=cpu&duration=2`).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import psycopg

from workload import db, log, queue, workflow
from workload.config import Settings
from workload.loop import Loop


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins in-flight requests
    block_on_close = True
    allow_reuse_address = True
    app: "WebRole"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # one structured line per request instead, below

    def _reply(self, status: int, body: Any) -> None:
        data = (json.dumps(body, default=str) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _params(self) -> dict[str, Any]:
        url = urlsplit(self.path)
        params: dict[str, Any] = dict(parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                raise ValueError(f"request body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise ValueError("request body must be a JSON object")
            params.update(body)
        return params

    def _dispatch(self, method: str) -> None:
        app = self.server.app
        app.requests_begin()  # counted until the reply is written: SIGTERM waits for it
        try:
            parts = [p for p in urlsplit(self.path).path.split("/") if p]
            try:
                status, body = app.route(method, parts, self._params if method == "POST" else dict)
            except ValueError as exc:
                status, body = 400, {"error": str(exc)}
            except (db.Unreachable, psycopg.Error) as exc:
                status, body = 503, {"error": f"database: {exc}"}
            if parts != ["healthz"]:
                log.event("http", method=method, path=self.path, status=status)
            self._reply(status, body)
        finally:
            app.requests_end()

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("POST")


def _number(params: dict[str, Any], key: str, default: float) -> float:
    try:
        return float(params.get(key, default))
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number") from None


class WebRole(Loop):
    """The web role: serves HTTP in threads; the work loop only proves the DB answers."""

    role = "web"

    def __init__(self, settings: Settings, host: str = "0.0.0.0", port: int = 8080) -> None:
        super().__init__(settings)
        self.server = _Server((host, port), _Handler)
        self.server.app = self
        self._active = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._serving = False

    def requests_begin(self) -> None:
        with self._lock:
            self._active += 1

    def requests_end(self) -> None:
        with self._lock:
            self._active -= 1

    def _db(self) -> psycopg.Connection:
        return db.connect(self.settings.database_url, self.settings.connect_timeout, app="workload-web")

    def route(self, method: str, parts: list[str], params_of: Any) -> tuple[int, Any]:
        """(status, JSON body) for one request."""
        if parts == ["healthz"]:
            with self._db() as conn:
                conn.execute("SELECT 1")
            return 200, {"ok": True, "stopping": self.life.stopping}
        if method == "POST" and parts in (["jobs"], ["workflows"]):
            params = params_of()
            kind = str(params.get("kind", "sleep"))
            duration = _number(params, "duration", 0.0)
            with self._db() as conn:
                if parts == ["jobs"]:
                    priority = params.get("priority")
                    job_id = queue.submit(conn, kind, duration, None if priority is None else int(priority),
                                          self.settings.version)
                    log.event("submitted", job=job_id, kind=kind, duration=duration)
                    return 201, {"id": job_id}
                if kind not in queue.KINDS:
                    raise ValueError(f"unknown job kind {kind!r}; use one of {', '.join(queue.KINDS)}")
                wid = workflow.submit(conn, int(_number(params, "steps", 1)), kind, duration)
                log.event("workflow_submitted", workflow=wid)
                return 201, {"id": wid}
        if method == "GET" and parts in (["jobs"], ["counts"]):
            with self._db() as conn:
                return 200, queue.counts(conn)
        if method == "GET" and len(parts) == 2 and parts[0] in ("jobs", "workflows"):
            if not parts[1].isdigit():
                raise ValueError(f"{parts[0][:-1]} id must be a number")
            with self._db() as conn:
                if parts[0] == "jobs":
                    found = queue.get(conn, int(parts[1]), self.settings.version)
                else:
                    cur = conn.execute("SELECT id, steps, state, current_step FROM workflows WHERE id = %s",
                                       (int(parts[1]),))
                    row = cur.fetchone()
                    found = dict(zip([d.name for d in cur.description or []], row)) if row else None
            return (200, found) if found else (404, {"error": "not found"})
        return 404, {"error": f"no route for {method} /{'/'.join(parts)}"}

    def run(self) -> int:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="http", daemon=True)
        # Serve only after the schema gate passed (the gate runs in Loop.run before started).
        return super().run()

    def iteration(self, claiming: bool) -> None:
        if self._thread is not None and not self._serving and not self.life.stopping:
            self._serving = True
            self._thread.start()
            log.event("listening", port=self.server.server_address[1])
        self.connection().execute("SELECT 1")

    def in_flight(self) -> int:
        return self._active

    def on_stop(self) -> None:
        """Stop accepting connections, wait for the requests being served."""
        if self._serving:
            self.server.shutdown()
        self.server.server_close()
