"""The task the lifecycle tests enqueue: a job that takes `seconds`."""

from __future__ import annotations

import os
import socket
import time

from django.utils import timezone
from huey.api import Task
from huey.contrib.djhuey import db_task

from .models import TaskRun


@db_task(context=True)
def sleep_task(seconds: float, task: Task | None = None) -> None:
    """Record the start, sleep `seconds`, record the finish. A run with a start row and no
    finish row was interrupted; huey does not re-enqueue it, so its job is lost."""
    run = TaskRun.objects.create(task_id=task.id if task else "", task="sleep_task", seconds=seconds,
                                 worker=f"{socket.gethostname()}:{os.getpid()}")
    time.sleep(seconds)
    TaskRun.objects.filter(pk=run.pk).update(finished_at=timezone.now())
