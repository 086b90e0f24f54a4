"""Where queued runs go: RQ on Redis, or an in-process worker in the embedded default.

Both give the same behaviour: ``enqueue`` a job function with its arguments, ``wait`` up to
some seconds for a run to finish, and ``finished`` (called by the job) to wake the waiter.
``on_failure(job_id)`` is called when the job dies or times out without finishing its run:
RQ calls it from its failure callback; the in-process worker, which installs no signal
handlers, from a timer (the thread's late result is then discarded by the run's state).
"""

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from flask import Flask, current_app
from rq import Callback, Queue
from werkzeug.utils import import_string

from services.redis import redis_client

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"
_DONE_TTL = 300
# redis-py's socket timeout is 5 s; block in shorter slices so BLPOP never trips it.
_BLOCK_SLICE = 4


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
        """``enqueue`` once ``seconds`` have passed (RQ's scheduler, which the worker runs)."""
        self.queue.enqueue_in(
            timedelta(seconds=seconds),
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
        key = f"run-done:{run_id}"
        pipe = self.redis.pipeline()
        pipe.rpush(key, 1)
        pipe.expire(key, _DONE_TTL)
        pipe.execute()

    def wait(self, run_id: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        key = f"run-done:{run_id}"
        while (left := deadline - time.monotonic()) > 0:
            if self.redis.blpop([key], timeout=min(_BLOCK_SLICE, max(left, 0.01))):
                return True
        return False


def _rq_failed(job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's failure callback (also on a job timeout): hand the job id to its handler."""
    import_string(job.meta["on_failure"])(job.id)


class InProcessDispatcher:
    def __init__(self, app: Flask, workers: int = 2):
        self.app = app
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="run-worker")
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def enqueue(
        self,
        job: Callable,
        *args,
        job_id: str,
        timeout: int,
        on_failure: Callable,
        awaited: bool = False,
    ) -> None:
        if awaited:
            # Exists only while someone may wait: finished() or a waiter's timeout removes it.
            with self._lock:
                self._done[job_id] = threading.Event()
        self.pool.submit(self._work, job, args, job_id, timeout, on_failure)

    def enqueue_in(
        self, seconds: float, job: Callable, *args, job_id: str, timeout: int, on_failure: Callable
    ) -> None:
        """``enqueue`` once ``seconds`` have passed (a timer: lost if the process stops)."""
        options = {"job_id": job_id, "timeout": timeout, "on_failure": on_failure}
        timer = threading.Timer(seconds, self.enqueue, (job, *args), options)
        timer.daemon = True
        timer.start()

    def _work(self, job, args, job_id: str, timeout: int, on_failure: Callable) -> None:
        timer = threading.Timer(timeout, self._in_context, (on_failure, (job_id,)))
        timer.daemon = True
        timer.start()
        try:
            self._in_context(job, args)
        finally:
            timer.cancel()

    def _in_context(self, job: Callable, args: tuple) -> None:
        try:
            with self.app.app_context():
                job(*args)
        except Exception:
            log.exception("in-process job %s failed", getattr(job, "__name__", job))

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


def dispatcher() -> RQDispatcher | InProcessDispatcher:
    return current_app.extensions["dispatcher"]


def init_app(app: Flask) -> None:
    client = redis_client(app)
    app.extensions["dispatcher"] = (
        RQDispatcher(app, client) if client is not None else InProcessDispatcher(app)
    )
