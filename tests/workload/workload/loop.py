"""The work loop every role shares: schema gate, heartbeat, drain, SIGTERM handling.

One tick = one `iteration()`; the heartbeat is touched only after an iteration that raised
nothing (at most once per interval), so a loop stuck on caught exceptions or stalled by a
blocking job stops heartbeating while the process stays alive.
"""

from __future__ import annotations

import os
import sys

import psycopg

from workload import db, log, migrations
from workload.config import Settings
from workload.lifecycle import Lifecycle
from workload.state import StateDir


class Loop:
    """Base class of the roles; subclasses implement iteration() and in-flight handling."""

    role = "loop"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.state = StateDir(settings.state_dir, settings.heartbeat_interval)
        self.life = Lifecycle(self.state)
        self.conn: psycopg.Connection | None = None
        self._claiming: bool | None = None
        self._announced = False
        self._erroring = False

    # ---- hooks -------------------------------------------------------------------
    def iteration(self, claiming: bool) -> None:
        """One tick of work; raise to mark the tick unhealthy."""

    def in_flight(self) -> int:
        """Units of work that must finish before a clean exit."""
        return 0

    def abandon(self) -> None:
        """Drain deadline reached: hand unfinished work back (best effort)."""

    def on_stop(self) -> None:
        """Called once when SIGTERM arrives (after the `draining` event)."""

    # ---- machinery -----------------------------------------------------------------
    def connection(self) -> psycopg.Connection:
        """The loop's connection, reconnecting after a failure."""
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.conn = db.connect(self.settings.database_url, self.settings.connect_timeout, app=f"workload-{self.role}")
        return self.conn

    def reset_connection(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
        self.conn = None

    def schema_gate(self) -> int:
        """Refuse to run against another schema revision than this image's head."""
        target = migrations.head(self.settings.version)
        try:
            current = migrations.current_revision(self.connection())
        except (db.Unreachable, psycopg.Error) as exc:
            code, message = db.UNREACHABLE, f"database unreachable: {exc}"
        else:
            code, message = migrations.describe(current, target, migrations.pre_deploy_head(self.settings.version))
        if code == db.AHEAD and os.environ.get("JOBHANDLERS_SCHEMA_ACCEPT_AHEAD", "") == "1" \
                and migrations.compatible_ahead(current, target):
            log.event("schema_ahead_accepted", level="warning", message=message)
            log.error(f"{self.role}: warning: {message}; accepted (expand-only, JOBHANDLERS_SCHEMA_ACCEPT_AHEAD=1)")
            return db.OK
        if code != db.OK:
            log.event("schema_mismatch", level="error", message=message, exit_code=code)
            log.error(f"{self.role}: refusing to start: {message}")
        return code

    def may_claim(self) -> bool:
        """Claim only when not stopping and neither marker exists; log every change."""
        reason = None
        if self.life.stopping:
            reason = "sigterm"
        elif self.state.stopping():
            reason = "stopping-marker"
        elif self.state.draining():
            reason = "drain-marker"
        claiming = reason is None
        if claiming != self._claiming:
            if claiming:
                log.event("claiming_resumed" if self._claiming is False else "claiming")
            else:
                log.event("claiming_paused", reason=reason)
            self._claiming = claiming
        return claiming

    def finish(self, code: int) -> int:
        log.event("exit", exit_code=code, level="info" if code == 0 else "warning")
        self.reset_connection()
        return code

    def run(self) -> int:
        """Start, loop until a clean drain (0) or the drain deadline (1)."""
        log.bind(role=self.role, handler=self.settings.handler_id)
        self.state.prepare()
        if self.settings.start_drained:
            self.state.set_drain(True)
        self.life.install()
        log.event("starting", version=self.settings.version, pid=os.getpid(),
                  schema_head=migrations.head(self.settings.version))
        code = self.schema_gate()
        if code != db.OK:
            return self.finish(code)
        log.event("started")
        seen_usr2 = 0
        while True:
            if self.life.usr2 != seen_usr2:
                seen_usr2 = self.life.usr2
                log.event("sigusr2", drain=self.state.draining())
            if self.life.stopping:
                if not self._announced:
                    self._announced = True
                    log.event("draining", signal=self.life.stop_signal, in_flight=self.in_flight(),
                              deadline_seconds=self.settings.drain_deadline)
                    self.on_stop()
                if self.in_flight() == 0:
                    log.event("drained", seconds=round(self.life.since_stop(), 3))
                    return self.finish(0)
                if self.life.forced or self.life.since_stop() >= self.settings.drain_deadline:
                    log.event("drain_deadline", level="warning", in_flight=self.in_flight(),
                              forced=self.life.forced, seconds=round(self.life.since_stop(), 3))
                    self.abandon()
                    return self.finish(1)
            try:
                self.iteration(self.may_claim())
            except Exception as exc:  # a caught error: the loop survives, the heartbeat stops
                log.event("loop_error", level="error", error=f"{type(exc).__name__}: {exc}".strip()[:500])
                self._erroring = True
                if isinstance(exc, (psycopg.OperationalError, db.Unreachable)):
                    self.reset_connection()
            else:
                if self._erroring:
                    log.event("loop_recovered")
                    self._erroring = False
                try:
                    self.state.beat()
                    self.state.set_busy(self.in_flight() > 0)
                except OSError as exc:
                    log.event("heartbeat_error", level="error", error=str(exc))
            if self.life.stopping and self.in_flight() == 0:
                continue  # the last job just ended: exit now, not after a poll interval
            self.life.wait(self.next_wait())

    def next_wait(self) -> float:
        """Seconds until the next tick (the poll interval unless something is due)."""
        return self.settings.poll


def run_role(loop: Loop) -> int:
    """Run a role, turning an unexpected crash into a logged exit 1 (no traceback)."""
    try:
        return loop.run()
    except KeyboardInterrupt:
        return loop.finish(1)
    except Exception as exc:  # noqa: BLE001 - last line of defence
        log.event("crash", level="error", error=f"{type(exc).__name__}: {exc}")
        print(f"workload: {loop.role}: crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return loop.finish(1)
