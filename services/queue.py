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

import contextlib
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from queue import PriorityQueue

import redis
from flask import Flask, current_app
from rq import Callback, Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from sqlalchemy import event
from sqlalchemy.orm import Session
from werkzeug.utils import import_string

from engines.base import stop_signal
from services import clock, parking
from services.redis import redis_client

log = logging.getLogger(__name__)

# Two kinds of queue, each with its own kind of worker (the Procfile's ``worker`` and
# ``worker-io``). The compute queues: local engines that keep a core busy (OCR, speech, the
# embedded model, ffmpeg, images), one job at a time per worker process. The I/O queues: runs
# that wait on the network (a model provider's answer, a webhook receiver), hundreds at once
# per worker process (``flask worker --io``: greenlets). A tool's run goes where its engine
# says (``Engine.waits_on_network``, read by ``queue_for``).
DEFAULT_QUEUE = "default"
# The site's runs: workers take them only when the API's queue is empty, so that anonymous
# traffic never delays API clients.
WEB_QUEUE = "web"
IO_QUEUE = "io"
IO_WEB_QUEUE = "io-web"
CPU_QUEUES = (DEFAULT_QUEUE, WEB_QUEUE)
IO_QUEUES = (IO_QUEUE, IO_WEB_QUEUE)
QUEUES = CPU_QUEUES + IO_QUEUES


def queue_for(waits_on_network: bool, *, site: bool = False) -> str:
    """The queue of a job that waits on the network or computes, for the API (and webhooks,
    workflows) or for the site's visitors (``site``), whose jobs wait behind the API's."""
    if waits_on_network:
        return IO_WEB_QUEUE if site else IO_QUEUE
    return WEB_QUEUE if site else DEFAULT_QUEUE


_DONE_TTL = 300
# A run's end is published on this channel (its id; a channel of its own per Redis database,
# as channels are the whole server's), and its done-key set for 5 minutes.
DONE_CHANNEL = "runs:done"
# A waiter looks at the done-key this often, besides being woken by the channel: it may
# have missed a message while its process's subscription was being made again.
_LOOK_EVERY = 2.0
# A process's listener for ended runs stops after this long without a waiter.
_LISTEN_IDLE = 60.0

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


class LeaseKeeper:
    """The leases of the many jobs one process runs at once (the I/O worker), kept
    together: each set in the round trip that starts its job (``hold``, into the caller's
    pipeline), all renewed in one round trip every third of ``seconds``, and dropped in
    batches every ``drop_every`` seconds (``drop``), by one loop (``keep``: a greenlet of
    that process). A dropped lease outlives its job by at most ``drop_every`` seconds,
    which changes nothing: the sweep fails only runs that have not ended."""

    drop_every = 0.5

    def __init__(self, client: redis.Redis, seconds: float):
        self.redis = client
        self.seconds = seconds
        self._deadlines: dict[str, float] = {}
        self._dropped: set[str] = set()
        self._stop = threading.Event()

    def __len__(self) -> int:
        return len(self._deadlines)

    def hold(self, job_id: str, timeout: float, pipeline: redis.client.Pipeline) -> None:
        deadline = time.time() + timeout
        self._deadlines[job_id] = deadline
        self._dropped.discard(job_id)  # a job run again before its last lease was dropped
        pipeline.set(lease_key(job_id), repr(deadline), ex=math.ceil(self.seconds))

    def drop(self, job_id: str) -> None:
        if self._deadlines.pop(job_id, None) is not None:
            self._dropped.add(job_id)

    def keep(self) -> None:
        """Renew and drop until ``stop``; then drop what is left."""
        renewed = time.monotonic()
        while not self._stop.wait(self.drop_every):
            try:
                if time.monotonic() - renewed >= self.seconds / 3:
                    renewed = time.monotonic()
                    self._write(renew=True)
                else:
                    self._write(renew=False)
            except redis.RedisError as error:  # the next pass tries again
                log.warning("could not renew or drop %d lease(s): %s", len(self), error)
        with contextlib.suppress(redis.RedisError):
            self._write(renew=False)

    def stop(self) -> None:
        self._stop.set()

    def _write(self, *, renew: bool) -> None:
        dropped, self._dropped = self._dropped, set()
        held = list(self._deadlines.items()) if renew else []
        if not dropped and not held:
            return
        pipe = self.redis.pipeline(transaction=False)
        for job_id, deadline in held:
            pipe.set(lease_key(job_id), repr(deadline), ex=math.ceil(self.seconds))
        if dropped:
            pipe.delete(*(lease_key(job_id) for job_id in dropped))
        try:
            pipe.execute()
        except redis.RedisError:
            self._dropped |= dropped  # dropped on the next pass (else they expire)
            raise


def done_channel(client: redis.Redis) -> str:
    return f"{DONE_CHANNEL}:{client.connection_pool.connection_kwargs.get('db', 0)}"


def _done_key(run_id: str) -> str:
    return f"run-done:{run_id}"


class Waiters:
    """The callers of this process waiting for runs to end (``Prefer: wait``), woken by one
    subscription to ``DONE_CHANNEL`` per process.

    A waiter holds no Redis connection while it waits (each once held one for a blocking
    pop: two hundred waiting callers were two hundred connections): it registers an event,
    looks at the run's done-key (the run may have ended already), and sleeps on the event,
    looking again every ``_LOOK_EVERY`` seconds. One listener thread (a greenlet under
    gevent) reads the channel and sets the events of the runs that ended.
    """

    def __init__(self, client: redis.Redis, channel: str | None = None):
        self.client = client
        self.channel = channel or done_channel(client)
        self._lock = threading.Lock()
        # A run's id -> the events of the callers waiting on it.
        self._events: dict[str, set[threading.Event]] = {}
        self._listening: tuple[int, threading.Event] | None = None  # (pid, subscribed)

    def wait(self, run_id: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        try:
            with self.watching(run_id) as event:
                while True:
                    if self.client.exists(_done_key(run_id)):
                        return True
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    event.wait(min(left, _LOOK_EVERY))
        except redis.RedisError as error:
            log.warning("stopped waiting for run %s: %s", run_id, error)
            return False

    @contextlib.contextmanager
    def watching(self, run_id: str) -> Iterator[threading.Event]:
        """An event of the caller's own, set each time ``run_id`` is published on the
        channel, while the caller is parked (it holds no place of the web worker's)."""
        event = self._register(run_id)
        try:
            with parking.parked():
                self._listen()
                yield event
        finally:
            self._unregister(run_id, event)

    def waiting(self) -> int:
        """How many runs have callers waiting here."""
        with self._lock:
            return len(self._events)

    def _register(self, run_id: str) -> threading.Event:
        event = threading.Event()
        with self._lock:
            self._events.setdefault(run_id, set()).add(event)
        return event

    def _unregister(self, run_id: str, event: threading.Event) -> None:
        with self._lock:
            events = self._events[run_id]
            events.discard(event)
            if not events:
                del self._events[run_id]

    def _listen(self) -> None:
        """Start this process's listener if it has none (a forked process starts its own),
        and let it subscribe (up to a second) before the caller first looks."""
        with self._lock:
            listening = self._listening
            if listening is None or listening[0] != os.getpid():
                listening = (os.getpid(), threading.Event())
                self._listening = listening
                thread = threading.Thread(
                    target=self._read, args=(listening[1],), name="run-waiters", daemon=True
                )
                thread.start()
        listening[1].wait(1.0)

    def _read(self, subscribed: threading.Event) -> None:
        """The listener: until nobody has waited here for ``_LISTEN_IDLE`` seconds."""
        self._idle_since = time.monotonic()
        while not self._idle_out():
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self.channel)
                subscribed.set()
                while not self._idle_out():
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._wake(message["data"].decode())
            except (redis.RedisError, OSError) as error:
                # The waiters look at their done-keys meanwhile; Redis's own outage shows
                # there first.
                log.warning("run waiters: the subscription failed (%s); subscribing again", error)
                time.sleep(1.0)
            finally:
                pubsub.close()

    def _idle_out(self) -> bool:
        """Whether the listener should end: nobody waited for ``_LISTEN_IDLE`` seconds (the
        next waiter starts another), or this is a forked copy of the process."""
        with self._lock:
            if self._events:
                self._idle_since = time.monotonic()
            mine = self._listening is not None and self._listening[0] == os.getpid()
            if mine and time.monotonic() - self._idle_since <= _LISTEN_IDLE:
                return False
            if mine:
                self._listening = None
            return True

    def _wake(self, run_id: str) -> None:
        with self._lock:
            waiting = list(self._events.get(run_id, ()))
        for woken in waiting:
            woken.set()


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
            job_id=job_id,
            job_timeout=timeout,
            result_ttl=600,
            failure_ttl=86400,
            meta={"on_failure": f"{on_failure.__module__}.{on_failure.__qualname__}"},
            on_failure=Callback(_rq_failed),
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
            job_id=job_id,
            job_timeout=timeout,
            result_ttl=600,
            failure_ttl=86400,
            meta={"on_failure": f"{on_failure.__module__}.{on_failure.__qualname__}"},
            on_failure=Callback(_rq_failed),
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


def _rq_failed(job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's failure callback (also on a job timeout): hand the job id to its handler."""
    import_string(job.meta["on_failure"])(job.id)


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


def dispatcher() -> RQDispatcher | InProcessDispatcher:
    return current_app.extensions["dispatcher"]


def init_app(app: Flask) -> None:
    client = redis_client(app)
    app.extensions["dispatcher"] = (
        RQDispatcher(app, client) if client is not None else InProcessDispatcher(app)
    )
