"""The task records: one row per submitted job, one per task run (start, finish)."""

from __future__ import annotations

from django.db import models


class Job(models.Model):
    """A submitted sleep_task (task_id is Celery's task id)."""

    task_id = models.CharField(max_length=64, unique=True)
    seconds = models.FloatField()
    submitted_at = models.DateTimeField(auto_now_add=True)


class TaskRun(models.Model):
    """A run of a job: written when the task starts and when it finishes. A job with two
    runs ran twice; a run with no finish on a worker that is gone was interrupted."""

    task_id = models.CharField(max_length=64, db_index=True)
    seconds = models.FloatField(default=0)
    worker = models.CharField(max_length=128, default="")   # Celery's node name (-n)
    pod = models.CharField(max_length=128, default="")      # the host (pod) it ran in
    pid = models.IntegerField(default=0)
    redelivered = models.BooleanField(default=False)        # RabbitMQ's redelivered flag
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
