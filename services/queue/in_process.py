"""The dispatcher without Redis (the embedded default): jobs on threads of this process.

The in-process worker installs no signal handlers: a job that outlives its timeout is given
up on by a timer, which calls its ``on_failure`` (the thread's late result is then discarded
by the run's state, and its late commits are refused: ``JobAbandoned``).
"""

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from queue import PriorityQueue

from flask import Flask
from sqlalchemy import event
from sqlalchemy.orm import Session

from engines.base import stop_signal
from services import clock
from services.queue.names import DEFAULT_QUEUE, IO_QUEUES, LOST, QUEUES, WAITING, WORKING

log = logging.getLogger(__name__)


class JobAbandoned(Exception):
    """Raised by a commit of a job the in-process queue gave up on (it ran out of time)."""


@dataclass(eq=False)
class _Job:
    call: Callable
    args: tuple
    job_id: str
    timeout: float
    on_failure: Callable
    # Set when the queue gives up on the job: its thread is replaced and its commits are
    # refused.
    abandoned: threading.Event = field(default_factory=threading.Event)
    # Set to stop its engine midway (``engines.base.stop_requested``: the embedded text
    # model stops generating): when the queue gives up on the job, and when its run is
    # canceled.
    stop: threading.Event = field(default_factory=threading.Event)
    # Its queue's place in QUEUES: a job of an earlier queue is taken first.
    priority: int = 0
    # Whether it runs on the threads of the I/O queues (it waits on the network).
    io: bool = False
    # Its place in line within its queue.
    sequence: int = field(default_factory=itertools.count().__next__)

    def __lt__(self, other: "_Job") -> bool:
        return (self.priority, self.sequence) < (other.priority, other.sequence)


# The job the current thread runs for the in-process queue (``_refuse_if_abandoned``).
_current = threading.local()


@event.listens_for(Session, "before_commit")
def _refuse_if_abandoned(session: Session) -> None:
    """A job the in-process queue gave up on writes nothing more: its run was failed and
    announced when it ran out of time, and a late end (a file, a ledger row) would
    contradict that. Its commits raise; its transaction is rolled back when it ends."""
    job = getattr(_current, "job", None)
    if job is not None and job.abandoned.is_set():
        raise JobAbandoned(f"job {job.job_id} ran out of time: its late writes are discarded")


@dataclass(eq=False)
class _Lane:
    """The threads of the in-process queue that take the jobs of one kind of queue."""

    name: str
    size: int  # threads taking jobs, at most (a replaced thread finishing aside not counted)
    eager: bool  # started at the first job (all ``size``), or one by one as jobs wait
    jobs: PriorityQueue = field(default_factory=PriorityQueue)
    taking: int = 0  # threads taking jobs now
    idle: int = 0  # of those, the ones waiting for a job
    pending: int = 0  # jobs put in ``jobs`` and not taken yet (counted with ``idle``)


class InProcessDispatcher:
    """Jobs on threads of this process (the embedded default): ``workers`` threads for the
    compute queues, and up to ``io_workers`` for the I/O queues (runs waiting on a model
    provider), started as their jobs come.

    A job that outlives its timeout is given up: a timer calls its ``on_failure`` (which
    fails and announces its run), asks its engine to stop (``engines.base.stop_signal``:
    the embedded text model stops generating) and starts a new thread in its place, so the
    queue never has fewer threads taking jobs; the old thread ends once the job returns,
    and what the job would still commit is refused (``JobAbandoned``).
    """

    def __init__(self, app: Flask, workers: int = 2, io_workers: int = 64):
        self.app = app
        self.workers = workers
        self._lanes = {
            False: _Lane("run-worker", workers, eager=True),
            True: _Lane("io-worker", io_workers, eager=False),
        }
        self._started = 0  # threads started so far (names them)
        # The threads taking jobs, and those finishing a job given up on.
        self.threads: set[threading.Thread] = set()
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        # The jobs of this process: waiting in the queue, and running (with their deadline).
        self._waiting: set[str] = set()
        self._running: dict[str, tuple[_Job, float]] = {}
        # Jobs that raised or ran out of time (a run's own failures are its state, not an
        # exception): their runs are the sweep's if their failure could not be recorded.
        self._raised: set[str] = set()
        self.started_at = clock.now()
        self._maintenance_started = False
        self.maintenance = None  # jobs.maintenance.Maintenance, once started

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
        with self._lock:
            if awaited:
                # Exists only while someone may wait: finished() or a waiter's timeout
                # removes it.
                self._done[job_id] = threading.Event()
        self._submit(self._job(job, args, job_id, timeout, on_failure, queue))

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
        """``enqueue`` once ``seconds`` have passed (a timer: lost if the process stops)."""
        queued = self._job(job, args, job_id, timeout, on_failure, queue)
        timer = threading.Timer(seconds, self._submit, (queued,))
        timer.daemon = True
        timer.start()

    @staticmethod
    def _job(call, args, job_id, timeout, on_failure, queue: str) -> _Job:
        queued = _Job(call, args, job_id, timeout, on_failure)
        queued.priority, queued.io = QUEUES.index(queue), queue in IO_QUEUES
        return queued

    def _submit(self, job: _Job) -> None:
        lane = self._lanes[job.io]
        with self._lock:
            self._waiting.add(job.job_id)
            if lane.eager:
                while lane.taking < lane.size:
                    self._start_thread(lane)
            elif lane.idle <= lane.pending and lane.taking < lane.size:
                self._start_thread(lane)
            lane.pending += 1
        self._start_maintenance()
        lane.jobs.put(job)

    def _start_thread(self, lane: _Lane) -> None:
        """One more thread taking ``lane``'s jobs (called with the lock held)."""
        self._started += 1
        lane.taking += 1
        lane.idle += 1
        thread = threading.Thread(
            target=self._serve, args=(lane,), name=f"{lane.name}-{self._started}"
        )
        thread.daemon = True
        self.threads.add(thread)
        thread.start()

    def _start_maintenance(self) -> None:
        """The sweep of stale runs, in the process that runs the jobs: started with its first
        job, so that a command-line process or a reloader's watcher never judges the jobs of
        the process that serves."""
        start = self.app.extensions.get("maintenance")  # jobs.maintenance, set by create_app
        with self._lock:
            if self._maintenance_started or start is None:
                return
            self._maintenance_started = True
        self.maintenance = start(self.app)

    def _serve(self, lane: _Lane) -> None:
        """A worker thread: run ``lane``'s jobs until one of them is given up on (a new
        thread took this one's place then)."""
        while True:
            job = lane.jobs.get()
            with self._lock:
                lane.idle -= 1
                lane.pending -= 1
            if not self._work(job):
                break
            with self._lock:
                lane.idle += 1
        with self._lock:
            self.threads.discard(threading.current_thread())

    def _work(self, job: _Job) -> bool:
        """Run ``job``; False when it ran out of time (this thread must end)."""
        started = time.monotonic()
        with self._lock:
            self._waiting.discard(job.job_id)
            self._running[job.job_id] = (job, started + job.timeout)
        timer = threading.Timer(job.timeout, self._give_up, (job,))
        timer.daemon = True
        timer.start()
        _current.job = job
        try:
            done = self._in_context(job.call, job.args, job)
        finally:
            _current.job = None
            timer.cancel()
            with self._lock:
                given_up = job.abandoned.is_set()
                if not given_up:
                    self._running.pop(job.job_id, None)
        if given_up:
            log.warning(
                "in-process job %s returned %.0f s after its timeout of %s s; what it would "
                "still have written was discarded",
                job.job_id,
                time.monotonic() - started - job.timeout,
                job.timeout,
            )
            return False
        if not done:  # as RQ does, the failure callback hears of a job that raised
            with self._lock:
                self._raised.add(job.job_id)
            self._in_context(job.on_failure, (job.job_id,))
        return True

    def _give_up(self, job: _Job) -> None:
        """The job ran out of time: a new thread takes its thread's place, the job is told to
        stop and may commit nothing more, and its failure callback fails its run."""
        with self._lock:
            running = self._running.get(job.job_id)
            if running is None or running[0] is not job:  # it ended meanwhile
                return
            job.abandoned.set()
            job.stop.set()
            del self._running[job.job_id]
            self._raised.add(job.job_id)
            lane = self._lanes[job.io]
            lane.taking -= 1  # its thread ends once the job returns
            self._start_thread(lane)
        log.warning("in-process job %s ran out of time (%s s)", job.job_id, job.timeout)
        self._in_context(job.on_failure, (job.job_id,))

    def _in_context(self, call: Callable, args: tuple, job: _Job | None = None) -> bool:
        """Run ``call`` in an app context (``job``'s, when it runs a job); False (logged)
        if it raised."""
        try:
            with self.app.app_context():
                if job is None:
                    call(*args)
                else:
                    with stop_signal(job.stop):
                        call(*args)
        except JobAbandoned:
            pass  # logged by _work
        except Exception:
            if job is not None and job.abandoned.is_set():
                log.info("in-process job %s, given up on, raised", job.job_id, exc_info=True)
            else:
                log.exception("in-process job %s failed", getattr(call, "__name__", call))
            return False
        return True

    def stop(self, job_id: str) -> None:
        """Stop the engine of a running job whose run was canceled (the embedded text model
        stops generating, and frees itself for the next run); the job then ends as usual,
        on its thread, and what it would write is refused by its run's ended state."""
        with self._lock:
            running = self._running.get(job_id)
        if running is not None:
            running[0].stop.set()

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
        process; ``LOST`` for one that raised or ran out of time. A job it does not know is
        ``LOST`` when its run was created before this process started (the process that ran
        it is gone: one process serves the embedded default); a younger one is left alone
        (``WAITING``)."""
        with self._lock:
            if job_id in self._waiting:
                return WAITING
            if job_id in self._raised:
                return LOST
            running = self._running.get(job_id)
        if running is not None:
            return WORKING if time.monotonic() <= running[1] + grace else LOST
        return LOST if clock.as_utc(created_at) < self.started_at else WAITING
