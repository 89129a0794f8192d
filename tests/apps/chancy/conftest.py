"""Fixtures of the chancy app tests (tests/apps/app_fixtures.py): a real PostgreSQL, a fresh
database per test, and the unmodified app (chancy from requirements.txt) run as
subprocesses from its own venv (`make app-venv`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app_fixtures import define  # noqa: E402
from chapp import HERE, VENV, App  # noqa: E402

define(globals(), name="chancy", here=HERE, venv=VENV, entry="chancy", app_cls=App,
       v2_glob="v*.py", migrations_dir="jhchancy/migrations", db_prefix="ch")
