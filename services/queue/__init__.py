"""Where queued runs go: RQ on Redis, or an in-process worker in the embedded default.

Both give the same behaviour: ``enqueue`` a job function with its arguments, ``wait`` up to
some seconds for a run to finish, and ``finished`` (called by the job) to wake the waiter.
``on_failure(job_id)`` is called when the job dies or times out without finishing its run:
RQ calls it from its failure callback (also for a job its cleanup finds abandoned by a dead
worker); the in-process worker, which installs no signal handlers, from a timer (the
thread's late result is then discarded by the run's state).

``job_state(job_id)`` tells the sweep (services/sweeper.py) whether a job is ``WAITING`` in
the queue, ``WORKING`` in a live worker within its time, or ``LOST``. An RQ worker started by
``flask worker`` holds a ``JobLease`` while it runs a job: a short-lived Redis key it keeps
renewing, so a worker killed mid-job is known within the lease's lifetime (RQ's own record
of a started job outlives a dead SimpleWorker by the job's whole timeout).

The package's modules, each for one concern: ``names`` (the queues, ``queue_for`` and the
job states), ``leases`` (``JobLease``, ``LeaseKeeper``), ``waiters`` (callers waiting for a
run's end, woken through Redis), ``rq`` (``RQDispatcher``) and ``in_process``
(``InProcessDispatcher``). This module picks the app's dispatcher, and its names are the ones
callers import (``from services.queue import dispatcher``).
"""

from flask import Flask, current_app

from services.queue.in_process import InProcessDispatcher, JobAbandoned
from services.queue.leases import JobLease, LeaseKeeper, lease_key
from services.queue.names import (
    CPU_QUEUES,
    DEFAULT_QUEUE,
    IO_QUEUE,
    IO_QUEUES,
    IO_WEB_QUEUE,
    LOST,
    QUEUES,
    WAITING,
    WEB_QUEUE,
    WORKING,
    queue_for,
)

# ``_rq_failed`` is named here too: the jobs RQ holds name their failure callback by its
# import path, and those enqueued before the package was split say services.queue._rq_failed.
from services.queue.rq import RQDispatcher, _rq_failed
from services.queue.waiters import DONE_CHANNEL, Waiters, done_channel
from services.redis import redis_client

__all__ = [
    "CPU_QUEUES",
    "DEFAULT_QUEUE",
    "DONE_CHANNEL",
    "IO_QUEUE",
    "IO_QUEUES",
    "IO_WEB_QUEUE",
    "LOST",
    "QUEUES",
    "WAITING",
    "WEB_QUEUE",
    "WORKING",
    "InProcessDispatcher",
    "JobAbandoned",
    "JobLease",
    "LeaseKeeper",
    "RQDispatcher",
    "Waiters",
    "_rq_failed",
    "dispatcher",
    "done_channel",
    "init_app",
    "lease_key",
    "queue_for",
]


def dispatcher() -> RQDispatcher | InProcessDispatcher:
    return current_app.extensions["dispatcher"]


def init_app(app: Flask) -> None:
    client = redis_client(app)
    app.extensions["dispatcher"] = (
        RQDispatcher(app, client) if client is not None else InProcessDispatcher(app)
    )
