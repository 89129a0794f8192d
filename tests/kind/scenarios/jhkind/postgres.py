"""The external PostgreSQL of the scenarios: a plain manifest in its own namespace, one
database and role per scenario, SQL run with psql inside the server pod."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .cluster import Kube
from .waits import wait_until

MANIFEST = Path(__file__).resolve().parent.parent / "postgres.yaml"
NAMESPACE = "jh-postgres"
SERVICE = "postgres"
ADMIN_USER = "postgres"
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
SEP = "\x1f"


@dataclass
class Postgres:
    """A running server: `sql()` runs as the superuser through the pod's local socket."""

    kube: Kube
    namespace: str = NAMESPACE

    @property
    def host(self) -> str:
        return f"{SERVICE}.{self.namespace}.svc.cluster.local"

    def pod_name(self) -> str:
        pods = [p for p in self.kube.pods(self.namespace, "app.kubernetes.io/name=postgres")
                if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
        if not pods:
            raise RuntimeError(f"no running postgres pod in namespace {self.namespace}")
        return pods[0]["metadata"]["name"]

    def sql(self, database: str, statement: str, timeout: float = 60) -> list[list[str]]:
        """Rows of the last statement's result, each a list of text fields."""
        res = self.kube.exec(self.namespace, self.pod_name(), [
            "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", SEP,
            "-h", "/var/run/postgresql", "-U", ADMIN_USER, "-d", database, "-c", statement,
        ], container="postgres", timeout=timeout)
        if res.rc != 0:
            raise RuntimeError(f"psql on {database} failed (exit {res.rc}): {res.stderr.strip()}\nSQL: {statement}")
        return [line.split(SEP) for line in res.stdout.splitlines() if line]

    def create_database(self, name: str, password: str) -> None:
        """A role and a database of the same name, owned by it."""
        if not _IDENT.match(name):
            raise ValueError(f"database name {name!r} is not a plain lower-case identifier")
        self.sql("postgres", f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        self.sql("postgres", f"CREATE DATABASE {name} OWNER {name}")

    def drop_database(self, name: str) -> None:
        self.sql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.sql("postgres", f"DROP ROLE IF EXISTS {name}")


def install(kube: Kube, timeout: float = 180) -> Postgres:
    """Apply postgres.yaml (idempotent) and wait until the server accepts queries."""
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    for doc in docs:
        if doc["kind"] == "Namespace":
            kube.apply_objects(NAMESPACE, [doc])
    kube.apply_objects(NAMESPACE, [d for d in docs if d["kind"] != "Namespace"])
    pg = Postgres(kube)
    wait_until(lambda: pg.sql("postgres", "SELECT 1") == [["1"]], timeout, "postgres to accept queries", interval=2)
    return pg
