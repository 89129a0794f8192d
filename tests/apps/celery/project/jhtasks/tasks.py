"""The task the lifecycle tests submit: a job that takes `seconds`, recorded in PostgreSQL."""

from __future__ import annotations

import os
import socket
import time
import uuid

from celery import Task, shared_task
from django.utils import timezone

from .models import Job, TaskRun


@shared_task(bind=True)
def sleep_task(self: Task, seconds: float) -> None:
    """Record the start (worker, pod, RabbitMQ's redelivered flag), sleep, record the finish."""
    info = self.request.delivery_info or {}
    run = TaskRun.objects.create(task_id=self.request.id or "", seconds=seconds,
                                 worker=self.request.hostname or "", pod=socket.gethostname(),
                                 pid=os.getpid(), redelivered=bool(info.get("redelivered")))
    time.sleep(seconds)
    TaskRun.objects.filter(pk=run.pk).update(finished_at=timezone.now())


def submit(*seconds: float) -> list[str]:
    """Submit one sleep_task per entry through Celery's own API; record each as a Job."""
    ids = []
    for s in seconds:
        task_id = str(uuid.uuid4())
        Job.objects.create(task_id=task_id, seconds=s)  # recorded before the broker has it
        sleep_task.apply_async((s,), task_id=task_id)
        ids.append(task_id)
    return ids
