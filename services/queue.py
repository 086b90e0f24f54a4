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
"""

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import redis
from flask import Flask, current_app
from rq import Callback, Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from werkzeug.utils import import_string

from services import clock
from services.redis import redis_client

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"
_DONE_TTL = 300
# redis-py's socket timeout is 5 s; block in shorter slices so BLPOP never trips it.
_BLOCK_SLICE = 4

# What the queue knows of a job (``job_state``).
WAITING = "waiting"
WORKING = "working"
LOST = "lost"
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


def lease_key(job_id: str) -> str:
    return f"job-lease:{job_id}"


class JobLease:
    """A worker's claim on the job it runs: a Redis key holding the job's deadline (a Unix
    time), set before the job starts, renewed by a thread every third of ``seconds`` (set
    again if it went missing, say while Redis restarted) and deleted when the job ends."""

    def __init__(self, client: redis.Redis, job_id: str, timeout: float, seconds: float):
        self.redis = client
        self.key = lease_key(job_id)
        self.deadline = time.time() + timeout
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=f"lease-{job_id}", daemon=True)

    def __enter__(self) -> "JobLease":
        self._renew()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self.redis.delete(self.key)
        except redis.RedisError:  # it expires by itself
            log.warning("could not drop the lease %s", self.key)

    def _keep(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self._renew()
            except redis.RedisError as error:
                log.warning("could not renew the lease %s: %s", self.key, error)

    def _renew(self) -> None:
        self.redis.set(self.key, repr(self.deadline), ex=math.ceil(self.seconds))


class RQDispatcher:
    def __init__(self, app: Flask, redis):
        self.redis = redis
        self.queue = Queue(DEFAULT_QUEUE, connection=redis)

    def enqueue(
        self,
        job: Callable,
        *args,
        job_id: str,
        timeout: int,
        on_failure: Callable,
        awaited: bool = False,
    ) -> None:
        # ``awaited`` needs nothing here: the done-list a waiter blocks on expires by itself.
        self.queue.enqueue(
            job,
            *args,
            job_id=job_id,
            job_timeout=timeout,
            result_ttl=600,
            failure_ttl=86400,
            meta={"on_failure": f"{on_failure.__module__}.{on_failure.__qualname__}"},
            on_failure=Callback(_rq_failed),
        )

    def enqueue_in(
        self, seconds: float, job: Callable, *args, job_id: str, timeout: int, on_failure: Callable
    ) -> None:
        """``enqueue`` once ``seconds`` have passed (RQ's scheduler, which the worker runs).
        RQ keeps the time in whole seconds, cut down: the time is rounded up to the next
        second, so the job is never due early (a webhook retry 5 s ± 10 % after a failure
        came 4 s after it)."""
        self.queue.enqueue_at(
            datetime.fromtimestamp(math.ceil(time.time() + seconds), UTC),
            job,
            *args,
            job_id=job_id,
            job_timeout=timeout,
            result_ttl=600,
            failure_ttl=86400,
            meta={"on_failure": f"{on_failure.__module__}.{on_failure.__qualname__}"},
            on_failure=Callback(_rq_failed),
        )

    def finished(self, run_id: str) -> None:
        """Wake the waiter, if any. Best effort: a waiter that is not woken answers 202 and
        the caller polls, so an unreachable Redis must not fail the job that ended the run."""
        key = f"run-done:{run_id}"
        pipe = self.redis.pipeline()
        pipe.rpush(key, 1)
        pipe.expire(key, _DONE_TTL)
        try:
            pipe.execute()
        except redis.RedisError as error:
            log.warning("could not wake the waiter of run %s: %s", run_id, error)

    def wait(self, run_id: str, seconds: float) -> bool:
        """Whether the run finished within ``seconds``. Redis failing mid-wait counts as not
        yet: the caller answers 202 with the run's status URL instead of losing the run."""
        deadline = time.monotonic() + seconds
        key = f"run-done:{run_id}"
        try:
            while (left := deadline - time.monotonic()) > 0:
                if self.redis.blpop([key], timeout=min(_BLOCK_SLICE, max(left, 0.01))):
                    return True
        except redis.RedisError as error:
            log.warning("stopped waiting for run %s: %s", run_id, error)
        return False

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


def _rq_failed(job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's failure callback (also on a job timeout): hand the job id to its handler."""
    import_string(job.meta["on_failure"])(job.id)


class InProcessDispatcher:
    def __init__(self, app: Flask, workers: int = 2):
        self.app = app
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run-worker")
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        # The jobs of this process: waiting in the pool, and running (with their deadline).
        self._waiting: set[str] = set()
        self._running: dict[str, float] = {}
        # Jobs that raised (rare: a run's own failures are its state, not an exception).
        self._raised: set[str] = set()
        self.started_at = clock.now()
        self._maintenance_started = False
        self.maintenance = None  # services.sweeper.Maintenance, once started

    def enqueue(
        self,
        job: Callable,
        *args,
        job_id: str,
        timeout: int,
        on_failure: Callable,
        awaited: bool = False,
    ) -> None:
        with self._lock:
            if awaited:
                # Exists only while someone may wait: finished() or a waiter's timeout
                # removes it.
                self._done[job_id] = threading.Event()
            self._waiting.add(job_id)
        self._start_maintenance()
        self.pool.submit(self._work, job, args, job_id, timeout, on_failure)

    def _start_maintenance(self) -> None:
        """The sweep of stale runs, in the process that runs the jobs: started with its first
        job, so that a command-line process or a reloader's watcher never judges the jobs of
        the process that serves."""
        from services import sweeper

        with self._lock:
            if self._maintenance_started:
                return
            self._maintenance_started = True
        self.maintenance = sweeper.start_maintenance(self.app)

    def enqueue_in(
        self, seconds: float, job: Callable, *args, job_id: str, timeout: int, on_failure: Callable
    ) -> None:
        """``enqueue`` once ``seconds`` have passed (a timer: lost if the process stops)."""
        options = {"job_id": job_id, "timeout": timeout, "on_failure": on_failure}
        timer = threading.Timer(seconds, self.enqueue, (job, *args), options)
        timer.daemon = True
        timer.start()

    def _work(self, job, args, job_id: str, timeout: int, on_failure: Callable) -> None:
        with self._lock:
            self._waiting.discard(job_id)
            self._running[job_id] = time.monotonic() + timeout
        timer = threading.Timer(timeout, self._in_context, (on_failure, (job_id,)))
        timer.daemon = True
        timer.start()
        try:
            done = self._in_context(job, args)
        finally:
            timer.cancel()
            with self._lock:
                self._running.pop(job_id, None)
        if not done:  # as RQ does, the failure callback hears of a job that raised
            with self._lock:
                self._raised.add(job_id)
            self._in_context(on_failure, (job_id,))

    def _in_context(self, job: Callable, args: tuple) -> bool:
        """Run ``job`` in an app context; False (logged) if it raised."""
        try:
            with self.app.app_context():
                job(*args)
        except Exception:
            log.exception("in-process job %s failed", getattr(job, "__name__", job))
            return False
        return True

    def finished(self, run_id: str) -> None:
        with self._lock:
            event = self._done.pop(run_id, None)
        if event is not None:
            event.set()

    def wait(self, run_id: str, seconds: float) -> bool:
        with self._lock:
            event = self._done.get(run_id)
        if event is None:  # enqueued as awaited, so it has already finished
            return True
        if event.wait(seconds):
            return True
        with self._lock:
            self._done.pop(run_id, None)
        return False

    def job_state(self, job_id: str, created_at: datetime, grace: float) -> str:
        """``WAITING`` or ``WORKING`` (within its deadline plus ``grace``) for a job of this
        process; ``LOST`` for one that raised. A job it does not know is ``LOST`` when its
        run was created before this process started (the process that ran it is gone: one
        process serves the embedded default); a younger one is left alone (``WAITING``)."""
        with self._lock:
            if job_id in self._waiting:
                return WAITING
            if job_id in self._raised:
                return LOST
            deadline = self._running.get(job_id)
        if deadline is not None:
            return WORKING if time.monotonic() <= deadline + grace else LOST
        return LOST if clock.as_utc(created_at) < self.started_at else WAITING


def dispatcher() -> RQDispatcher | InProcessDispatcher:
    return current_app.extensions["dispatcher"]


def init_app(app: Flask) -> None:
    client = redis_client(app)
    app.extensions["dispatcher"] = (
        RQDispatcher(app, client) if client is not None else InProcessDispatcher(app)
    )
