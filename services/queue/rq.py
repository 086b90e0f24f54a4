"""The dispatcher on Redis: RQ's queues, whose jobs ``flask worker`` processes run.

RQ calls ``on_failure(job_id)`` from its failure callback (``_rq_failed``: also on a job
timeout, and for a job its cleanup finds abandoned by a dead worker). Callers waiting for a
run are woken through ``services.queue.waiters``; ``job_state`` reads RQ's record of the job
and its worker's lease (``services.queue.leases``).
"""

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

import redis
from flask import Flask
from rq import Callback, Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from werkzeug.utils import import_string

from services.queue.leases import lease_key
from services.queue.names import DEFAULT_QUEUE, LOST, QUEUES, WAITING, WORKING
from services.queue.waiters import _DONE_TTL, Waiters, _done_key

log = logging.getLogger(__name__)

_WAITING_STATUSES = frozenset(
    {
        JobStatus.CREATED,
        JobStatus.QUEUED,
        JobStatus.SCHEDULED,
        JobStatus.DEFERRED,
        JobStatus.RATE_LIMITED,
        JobStatus.READY_TO_ENQUEUE,
    }
)


class RQDispatcher:
    def __init__(self, app: Flask, redis):
        self.redis = redis
        self.queues = {name: Queue(name, connection=redis) for name in QUEUES}
        self.waiters = Waiters(redis)

    def enqueue(
        self,
        job: Callable,
        *args,
        job_id: str,
        timeout: int,
        on_failure: Callable,
        awaited: bool = False,
        queue: str = DEFAULT_QUEUE,
    ) -> None:
        # ``awaited`` needs nothing here: the done-key a waiter looks for expires by itself.
        self.queues[queue].enqueue(
            job,
            *args,
            **_job_options(job_id, timeout, on_failure),
        )

    def enqueue_in(
        self,
        seconds: float,
        job: Callable,
        *args,
        job_id: str,
        timeout: int,
        on_failure: Callable,
        queue: str = DEFAULT_QUEUE,
    ) -> None:
        """``enqueue`` once ``seconds`` have passed (RQ's scheduler, which the worker runs).
        RQ keeps the time in whole seconds, cut down: the time is rounded up to the next
        second, so the job is never due early (a webhook retry 5 s ± 10 % after a failure
        came 4 s after it)."""
        self.queues[queue].enqueue_at(
            datetime.fromtimestamp(math.ceil(time.time() + seconds), UTC),
            job,
            *args,
            **_job_options(job_id, timeout, on_failure),
        )

    def stop(self, job_id: str) -> None:
        """A canceled run's job: an RQ worker runs it to its end (what it then writes is
        refused: its run has ended), as stopping a work horse midway could lose the worker's
        other state."""

    def finished(self, run_id: str) -> None:
        """Wake the waiter, if any. Best effort: a waiter that is not woken answers 202 and
        the caller polls, so an unreachable Redis must not fail the job that ended the run."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(_done_key(run_id), 1, ex=_DONE_TTL)
        pipe.publish(self.waiters.channel, run_id)
        try:
            pipe.execute()
        except redis.RedisError as error:
            log.warning("could not wake the waiter of run %s: %s", run_id, error)

    def wait(self, run_id: str, seconds: float) -> bool:
        """Whether the run finished within ``seconds``. Redis failing mid-wait counts as not
        yet: the caller answers 202 with the run's status URL instead of losing the run."""
        return self.waiters.wait(run_id, seconds)

    def job_state(self, job_id: str, created_at: datetime, grace: float) -> str:
        """``WAITING`` while RQ holds the job unstarted; ``WORKING`` while it is started and
        its worker's lease is alive and within the job's deadline (plus ``grace``); else
        ``LOST`` (no such job, a job that ended without ending its run, a dead worker).
        ``created_at`` is not needed here: every process sees the same queue."""
        try:
            job = Job.fetch(job_id, connection=self.redis)
        except NoSuchJobError:
            return LOST
        status = job.get_status(refresh=False)
        if status in _WAITING_STATUSES:
            return WAITING
        if status == JobStatus.STARTED:
            deadline = self.redis.get(lease_key(job_id))
            if deadline is not None and time.time() <= float(deadline) + grace:
                return WORKING
        return LOST


def _job_options(job_id: str, timeout: int, on_failure: Callable) -> dict:
    """What RQ keeps with every job: its id and timeout, how long its result and failure are
    kept, and its failure handler by import path (``_rq_failed`` calls it)."""
    return {
        "job_id": job_id,
        "job_timeout": timeout,
        "result_ttl": 600,
        "failure_ttl": 86400,
        "meta": {"on_failure": f"{on_failure.__module__}.{on_failure.__qualname__}"},
        "on_failure": Callback(_rq_failed),
    }


def _rq_failed(job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's failure callback (also on a job timeout): hand the job id to its handler."""
    import_string(job.meta["on_failure"])(job.id)
