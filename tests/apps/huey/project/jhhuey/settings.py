"""Settings of the huey test app: PostgreSQL (psycopg2) from DATABASE_URL for Django and,
through huey's own SqlHuey (peewee), for the queue; huey's Django integration and the
`jhtasks` app. No web server, no lifecycle code: every lifecycle behaviour comes from Django
and huey themselves."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured


def database_from_url(url: str) -> dict[str, Any]:
    """postgresql://user:password@host:port/name?opt=v -> a Django DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(f"DATABASE_URL must be postgresql://…, not {parts.scheme!r}://…")
    options: dict[str, Any] = {"connect_timeout": 5}
    options.update(parse_qsl(parts.query))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
    }


_url = os.environ.get("DATABASE_URL", "")
if not _url:
    raise ImproperlyConfigured("DATABASE_URL is not set: give postgresql://user:password@host:port/db")

DATABASES = {"default": database_from_url(_url)}
INSTALLED_APPS = ["huey.contrib.djhuey", "jhtasks"]
# huey's SQL storage on the same database (peewee's postgresql:// URL). Its tables are made
# by the jhtasks 0001 migration (huey's own create_tables), not at import time, so no
# consumer races another one's CREATE TABLE. Consumer options are run_huey's flags.
HUEY = {
    "huey_class": "huey.contrib.sql_huey.SqlHuey",
    "name": "jobs",
    "database": _url,
    "create_tables": False,
    "immediate": False,
}
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "jobhandlers-huey-test-app")  # no web, no sessions
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"huey": {"handlers": ["stderr"], "level": os.environ.get("HUEY_LOG_LEVEL", "INFO")}},
}
