"""One row per task run: written when the task starts and when it finishes."""

from __future__ import annotations

from django.db import models


class TaskRun(models.Model):
    """A run of a `jhtasks` task (job_id is procrastinate's job id)."""

    job_id = models.BigIntegerField()
    task = models.CharField(max_length=64)
    seconds = models.FloatField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
