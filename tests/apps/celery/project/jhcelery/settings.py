"""Settings of the Celery test app: PostgreSQL (psycopg 3) from DATABASE_URL for Django (the
task records), RabbitMQ (or Redis) from CELERY_BROKER_URL for Celery, and the `jhtasks` app. No web
server, no lifecycle code: every lifecycle behaviour comes from Django and Celery."""

from __future__ import annotations

import json
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


def flag(name: str, default: bool) -> bool:
    """A boolean from the environment: 1/true/yes or 0/false/no."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value not in ("1", "true", "yes", "0", "false", "no"):
        raise ImproperlyConfigured(f"{name}={value!r}: give true or false")
    return value in ("1", "true", "yes")


_url = os.environ.get("DATABASE_URL", "")
if not _url:
    raise ImproperlyConfigured("DATABASE_URL is not set: give postgresql://user:password@host:port/db")

DATABASES = {"default": database_from_url(_url)}
INSTALLED_APPS = ["jhtasks"]
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "jobhandlers-celery-test-app")  # no web, no sessions
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Celery (jhcelery/celery.py reads the CELERY_* keys). The broker is RabbitMQ (py-amqp).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "amqp://guest:guest@localhost:5672//")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "jobs"
CELERY_TASK_IGNORE_RESULT = True  # no result backend: jhtasks_taskrun is the record
# Late acks: a message is acked when its task has finished, not when it starts. A worker
# killed mid-task (SIGKILL after the grace, OOM, node loss) then leaves the message unacked
# and RabbitMQ redelivers it: the task runs again (at least once) instead of vanishing (at
# most once, Celery's default). Our tasks are idempotent; a run twice is visible in
# jhtasks_taskrun, a lost one only as a missing row. CELERY_TASK_ACKS_LATE=false restores
# Celery's default for the contrast.
CELERY_TASK_ACKS_LATE = flag("CELERY_TASK_ACKS_LATE", True)
# Messages held per worker = multiplier × concurrency (reserved in memory, unacked).
CELERY_WORKER_PREFETCH_MULTIPLIER = int(os.environ.get("CELERY_WORKER_PREFETCH_MULTIPLIER", "4"))
# kombu's transport options as JSON, e.g. for Redis (tests/apps/celery/README.md, "Redis
# transport"): {"visibility_timeout": 3600}. Unset: kombu's defaults.
CELERY_BROKER_TRANSPORT_OPTIONS = json.loads(os.environ.get("CELERY_BROKER_TRANSPORT_OPTIONS") or "{}")
# Logging is Celery's own (the worker's --loglevel); Django adds nothing.
LOGGING_CONFIG = None
