"""One row per task run: written when the task starts and when it finishes."""

from __future__ import annotations

from django.db import models


class TaskRun(models.Model):
    """A run of a `jhtasks` task (task_id is huey's task id)."""

    task_id = models.CharField(max_length=64)
    task = models.CharField(max_length=64)
    seconds = models.FloatField(default=0)
    worker = models.CharField(max_length=128, default="")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
