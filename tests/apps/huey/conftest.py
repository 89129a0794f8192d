"""Fixtures of the huey app tests (tests/apps/app_fixtures.py): a real PostgreSQL, a fresh
database per test, and the unmodified app (Django + huey from requirements.txt) run as
subprocesses from its own venv (`make app-venv`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app_fixtures import define  # noqa: E402
from hyapp import HERE, VENV, App  # noqa: E402

define(globals(), name="huey", here=HERE, venv=VENV, entry="django-admin", app_cls=App,
       v2_glob="none", migrations_dir="jhtasks/migrations", db_prefix="hy")
