"""The Celery app, configured from Django's settings (CELERY_* keys), as Celery's own
"First steps with Django" does it."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jhcelery.settings")
app = Celery("jhcelery")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
