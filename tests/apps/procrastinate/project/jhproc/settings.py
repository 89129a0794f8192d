"""Settings of the procrastinate test app: PostgreSQL (psycopg 3) from DATABASE_URL,
procrastinate's Django add-on and the `jhtasks` app. No web server, no lifecycle code:
every lifecycle behaviour comes from Django and procrastinate themselves."""

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
INSTALLED_APPS = ["procrastinate.contrib.django", "jhtasks"]
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "jobhandlers-procrastinate-test-app")  # no web, no sessions
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
_log_level = os.environ.get("PROCRASTINATE_LOG_LEVEL", "INFO")
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                            "level": _log_level}},
    "loggers": {
        "procrastinate": {"handlers": ["stderr"], "level": _log_level},
        "procrastinate.blueprints": {"level": "WARNING"},
    },
}
# The worker's own heartbeat made visible to a liveness probe: procrastinate's worker
# updates its heartbeat row every 10 s from its event loop and logs it at DEBUG
# ("Updating heartbeat of worker N"). With WORKER_HEARTBEAT_LOG set, those DEBUG lines of
# procrastinate.worker (and only they) go to that file, so its age is the age of the event
# loop's last sign of life: a busy worker (sync jobs run in threads) keeps it fresh, a
# wedged loop lets it go stale. `procrastinate healthchecks` runs in a separate process and
# only checks the database, so it cannot see a wedged worker. Configuration only: no code
# of ours runs in the worker. delay=True: a process that never logs as the worker (the
# probes, migrate, shell) never touches the file.
_heartbeat_log = os.environ.get("WORKER_HEARTBEAT_LOG", "")
if _heartbeat_log:
    LOGGING["handlers"]["heartbeat"] = {
        "class": "logging.handlers.RotatingFileHandler", "filename": _heartbeat_log, "delay": True,
        "maxBytes": 65536, "backupCount": 1, "level": "DEBUG", "formatter": "plain"}
    LOGGING["loggers"]["procrastinate.worker"] = {"handlers": ["heartbeat"], "level": "DEBUG"}
