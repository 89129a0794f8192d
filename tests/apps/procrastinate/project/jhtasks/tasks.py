"""Tasks the lifecycle tests defer: a job that takes `seconds`, and one that never ends."""

from __future__ import annotations

import threading
import time

from django.utils import timezone
from procrastinate import JobContext
from procrastinate.contrib.django import app

from .models import TaskRun


@app.task(name="sleep_task", pass_context=True)
def sleep_task(context: JobContext, seconds: float) -> None:
    """Record the start, sleep `seconds` (a sync task: procrastinate runs it in a thread),
    record the finish. A run with a start row and no finish row was lost."""
    job_id = context.job.id or 0
    run = TaskRun.objects.create(job_id=job_id, task="sleep_task", seconds=seconds)
    time.sleep(seconds)
    TaskRun.objects.filter(pk=run.pk).update(finished_at=timezone.now())


@app.task(name="wedge", pass_context=True)
async def wedge(context: JobContext) -> None:
    """Record the start, then block the worker's event loop forever (a synchronous wait
    inside an async task): no job fetching, no heartbeat, no signal handling."""
    await TaskRun.objects.acreate(job_id=context.job.id or 0, task="wedge")
    threading.Event().wait()
