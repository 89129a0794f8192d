"""The Celery test app's Django project; `celery -A jhcelery` finds the Celery app here."""

from .celery import app

__all__ = ["app"]
