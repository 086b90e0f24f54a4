"""``flask --app app worker``: the RQ workers of the Procfile, with the app context.

Two kinds, each a Procfile process type a platform scales on its own:

- ``worker`` (``flask --app app worker``): the compute queues, one job at a time per process
  (``LeasedWorker``), for the engines that keep a core busy (OCR, speech, the embedded
  model, ffmpeg, images). Loaded models stay in the process between jobs.
- ``worker-io`` (``python -m gevent.monkey --module flask --app app worker --io``): the I/O
  queues, up to ``IO_WORKER_CONCURRENCY`` jobs at once per process (``IoWorker``), each in a
  greenlet, for the runs that wait on the network (a model provider's answer, a webhook
  receiver). gevent patches the standard library before anything is imported, so sockets,
  psycopg, redis-py and requests wait without holding the process.

Which queue a run goes to follows from its tool's engine (``services.queue.queue_for``).
"""

import contextlib
import ctypes
import logging
import os
import signal
import time

import click
import redis
from flask import current_app
from flask.cli import with_appcontext
from rq import Queue, SimpleWorker
from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.exceptions import DequeueTimeout, StopRequested
from rq.executions import Execution
from rq.scheduler import RQScheduler
from rq.timeouts import BaseDeathPenalty
from rq.utils import now as utcnow
from rq.worker.base import WorkerStatus

from extensions import db
from jobs import maintenance
from services.queue import CPU_QUEUES, IO_QUEUES, QUEUES, JobLease, LeaseKeeper
from services.redis import redis_client, worker_connection

log = logging.getLogger(__name__)

# The deadline a lease records for a job without a timeout of its own.
_NO_TIMEOUT_DEADLINE = 24 * 3600
# Waits before a new worker takes over from one that ended on an error: doubled each time
# up to the most, back to the first once a worker has run for a while.
_FIRST_WAIT, _MOST_WAIT, _RAN_A_WHILE = 1.0, 30.0, 60.0


class LeasedWorker(SimpleWorker):
    """SimpleWorker (runs jobs in its own process, so loaded models stay between jobs) that
    holds a ``JobLease`` on each job while it runs it: if the worker is killed, the lease
    lapses within ``lease_seconds`` and the sweep fails the job's run."""

    lease_seconds = 30.0
    # Whether it runs RQ's scheduler (delayed jobs: webhook retries), for every queue.
    runs_scheduler = True
    # Set when a stop is asked for (SIGTERM, Ctrl+C); RQ's own flag is set only mid-job.
    stop_asked = False

    def request_stop(self, signum, frame):
        self.stop_asked = True
        super().request_stop(signum, frame)

    def execute_job(self, job, queue):
        timeout = job.timeout if job.timeout and job.timeout > 0 else _NO_TIMEOUT_DEADLINE
        try:
            with JobLease(self.connection, job.id, timeout, self.lease_seconds):
                super().execute_job(job, queue)
        finally:
            # The worker keeps one app context for its life, so nothing else ends the job's
            # session: one that saw the database go (a restart, a failover) stayed in its
            # failed transaction, and every later job failed on it (PendingRollbackError)
            # until the worker was restarted. Each job starts on a fresh session; the pool
            # has dropped the dead connections already.
            db.session.remove()

    def _start_scheduler(
        self,
        burst=False,
        logging_level="INFO",
        date_format=DEFAULT_LOGGING_DATE_FORMAT,
        log_format=DEFAULT_LOGGING_FORMAT,
    ):
        """RQ's own, with a scheduler process that ends with this worker (RQ's outlived a
        SIGKILLed worker and kept the scheduler lock, so the worker that replaced it ran
        without one: webhook retries and delayed jobs waited)."""
        self.scheduler = WorkerBoundScheduler(
            # Every queue's, the I/O queues' included: the I/O worker runs no scheduler
            # (RQ's forks a process, which gevent's patched standard library kept from
            # stopping). Without any, the maintenance still queues overdue webhook attempts.
            [Queue(name, connection=self.connection) for name in QUEUES],
            connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            date_format=date_format,
            log_format=log_format,
            serializer=self.serializer,
        )
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            if burst:
                try:
                    self.scheduler.register_birth()
                    self.scheduler.enqueue_scheduled_jobs()
                finally:
                    self.scheduler.release_locks()
                    self.scheduler.register_death()
            else:
                self.scheduler.start()


class GreenletDeathPenalty(BaseDeathPenalty):
    """A job's timeout as a ``gevent.Timeout`` in the job's own greenlet: raised in that job
    alone, at its next wait (a provider that hangs is cut off at the run's timeout). RQ's
    own (SIGALRM, or an exception thrown into a thread) would reach the whole process."""

    def setup_death_penalty(self):
        import gevent

        self._deadline = None
        if self._timeout and self._timeout > 0:
            message = f"Task exceeded maximum timeout value ({self._timeout} seconds)"
            self._deadline = gevent.Timeout(self._timeout, self._exception(message))
            self._deadline.start()

    def cancel_death_penalty(self):
        if self._deadline is not None:
            self._deadline.close()


class IoWorker(LeasedWorker):
    """An RQ worker that runs up to ``concurrency`` jobs at once, each in a greenlet of this
    process, with the same job functions, leases, timeouts and failure callbacks as
    ``LeasedWorker`` (RQ records each job's execution; its timeout is the job's own, in
    its greenlet: ``GreenletDeathPenalty``). Needs a process gevent patched first.

    Per job it costs RQ's round trips to Redis less three: the execution's record, the
    job's start and its lease go in one (RQ's takes two, the lease a third); the leases of
    all jobs in flight are renewed and dropped together (``LeaseKeeper``); the job's last
    heartbeat (a field that its end overwrites in the next round trip) and the suspension
    check before each job (once a ``poll_seconds`` here) are left out.

    The loop takes a job only when a place is free, and looks for a stop every
    ``poll_seconds``. A stop (SIGTERM, Ctrl+C) takes no more jobs and gives those in flight
    ``stop_grace`` seconds to end; what is still in flight then is left to its lease, and
    the sweep of any worker fails its run once the lease lapses (as after a SIGKILL). A
    second signal stops at once."""

    death_penalty_class = GreenletDeathPenalty
    runs_scheduler = False
    poll_seconds = 1
    # RQ sends its worker heartbeat after every job (three round trips); once in this many
    # seconds is enough for a record that lives minutes.
    heartbeat_seconds = 10.0

    def __init__(self, *args, app, concurrency: int, stop_grace: float, **kwargs):
        import gevent.pool

        super().__init__(*args, **kwargs)
        # RQ logs three lines of its own per job: at hundreds of jobs a second, the job's own
        # line ("run ... ended ...") is the one kept.
        self.log_result_lifespan = False
        self.log.addFilter(_quiet_job_ends)
        self.app = app
        self.pool = gevent.pool.Pool(concurrency)
        self.stop_grace = stop_grace
        self._beaten = self._suspension_checked = 0.0
        self.leases: LeaseKeeper | None = None
        self._keeping = None

    def work(self, *args, **kwargs):
        import gevent

        self.leases = LeaseKeeper(self.connection, self.lease_seconds)
        self._keeping = gevent.spawn(self.leases.keep)
        return super().work(*args, **kwargs)

    def _install_signal_handlers(self):
        import gevent

        # A greenlet of their own: a Python handler would raise in whichever job's greenlet
        # happened to run.
        for signum in _STOP_SIGNALS:
            gevent.signal_handler(signum, self._ask_stop, signum)

    def _ask_stop(self, signum):
        if self.stop_asked:
            log.warning(
                "second stop signal: stopping now; %d job(s) in flight are left to their leases",
                len(self.pool),
            )
            os._exit(1)
        log.info("stop asked (signal %s): no more jobs; %d in flight", signum, len(self.pool))
        self.stop_asked = True
        self._stop_requested = True
        self._shutdown_requested_date = utcnow()
        with contextlib.suppress(redis.RedisError):
            self.set_shutdown_requested_date()

    def heartbeat(self, timeout=None, pipeline=None):
        since = time.monotonic() - self._beaten
        if timeout is None and pipeline is None and since < self.heartbeat_seconds:
            return
        self._beaten = time.monotonic()
        super().heartbeat(timeout, pipeline)

    def check_for_suspension(self, burst):
        if time.monotonic() - self._suspension_checked < self.poll_seconds:
            return
        self._suspension_checked = time.monotonic()
        super().check_for_suspension(burst)

    def dequeue_job_and_maintain_ttl(self, timeout, max_idle_time=None):
        """The next job, once a place is free; StopRequested once a stop is asked for."""
        import gevent

        wait = _FIRST_WAIT
        while not self._stop_requested:
            self.heartbeat()
            if self.should_run_maintenance_tasks:
                self.run_maintenance_tasks()
            if not self.pool.wait_available(timeout=self.poll_seconds):
                continue
            try:
                result = self.queue_class.dequeue_any(
                    self._ordered_queues,
                    self.poll_seconds,
                    connection=self.connection,
                    job_class=self.job_class,
                    serializer=self.serializer,
                    death_penalty_class=self.death_penalty_class,
                )
            except DequeueTimeout:
                continue
            except (redis.ConnectionError, redis.TimeoutError) as lost:
                log.error("could not reach Redis (%s); trying again in %.0f s", lost, wait)
                gevent.sleep(wait)
                wait = min(wait * 2, _MOST_WAIT)
                continue
            wait = _FIRST_WAIT
            if result is not None:
                job, _queue = result
                job.redis_server_version = self.get_redis_server_version()
                return result
        raise StopRequested()

    def execute_job(self, job, queue):
        """RQ's preparation of the job (``prepare_execution`` and ``prepare_job_execution``:
        its execution's record, its start) and its lease in one round trip; then the job in
        a greenlet of its own."""
        timeout = job.timeout if job.timeout and job.timeout > 0 else _NO_TIMEOUT_DEADLINE
        with self.connection.pipeline() as pipeline:
            heartbeat_ttl = self.get_heartbeat_ttl(job)
            execution = Execution.create(
                job, heartbeat_ttl, pipeline=pipeline, worker_name=self.name
            )
            self.executions[execution.id] = execution
            if self.get_state() != WorkerStatus.BUSY:
                self.set_state(WorkerStatus.BUSY, pipeline=pipeline)
            job.heartbeat(utcnow(), heartbeat_ttl, pipeline=pipeline)
            job.prepare_for_execution(self.name, pipeline=pipeline)
            pipeline.persist(job.key)
            if len(self.queues) == 1:
                pipeline.lrem(queue.intermediate_queue_key, 1, job.id)
            self.leases.hold(job.id, timeout, pipeline)
            pipeline.execute()
        self.pool.spawn(self._perform, job, queue, execution)

    def prepare_job_execution(self, job, remove_from_intermediate_queue=False):
        """Done with the execution's record, in ``execute_job``."""

    def handle_execution_ended(self, job, queue, heartbeat_ttl):
        job.ended_at = utcnow()

    def _perform(self, job, queue, execution):
        """A job's greenlet: its own app context (so its own database session, removed when
        the context ends), and RQ's handling of its end; then its lease is dropped."""
        with self.app.app_context():
            try:
                self.perform_job(job, queue, execution)
            except Exception:  # RQ reports the job's own failures; this is its bookkeeping
                log.exception("job %s: its end could not be recorded", job.id)
            finally:
                self.leases.drop(job.id)
                if not len(self.leases) and self.get_state() == WorkerStatus.BUSY:
                    with contextlib.suppress(redis.RedisError):
                        self.set_state(WorkerStatus.IDLE)

    def teardown(self):
        if len(self.pool):
            log.info(
                "waiting up to %.0f s for %d job(s) in flight",
                self.stop_grace,
                len(self.pool),
            )
            self.pool.join(timeout=self.stop_grace)
            if len(self.pool):
                log.warning(
                    "%d job(s) still in flight are left to their leases: the sweep fails "
                    "their runs once the leases lapse",
                    len(self.pool),
                )
        if self.leases is not None:
            self.leases.stop()
            self._keeping.join(timeout=5)
        super().teardown()


def _quiet_job_ends(record: logging.LogRecord) -> bool:
    """RQ's per-job lines at INFO ("Job OK", "Successfully completed ..."): dropped."""
    return not (
        record.levelno == logging.INFO
        and ("Job OK" in str(record.args) or str(record.msg).startswith("Successfully"))
    )


_PR_SET_PDEATHSIG = 1


class WorkerBoundScheduler(RQScheduler):
    """RQ's scheduler process, asked to stop (SIGTERM: it releases its locks) when the
    worker that started it dies, however it dies."""

    def start(self):
        self._worker_pid = os.getpid()
        return super().start()

    def work(self):
        # The handlers first: the lock was taken before this process was forked, and a
        # SIGTERM that came before them (the worker killed while this process was starting)
        # ended it at once, keeping the lock for another minute.
        self._install_signal_handlers()
        prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # Linux only
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != self._worker_pid:  # it died before the line above
            self.request_stop()
        super().work()  # stops at once, giving its locks back, if a stop was asked


@click.command("worker")
@click.option(
    "--io",
    "io",
    is_flag=True,
    help="Run the I/O queues, many jobs at once (start it with python -m gevent.monkey).",
)
# The API's queue first: the site's runs wait while it has work (services/queue/names.py).
@click.option("--queue", "queues", multiple=True, help="The queues (default: the kind's own).")
@with_appcontext
def worker_cli(io, queues):
    """Run an RQ worker with the app context, and the periodic sweep of stale runs."""
    app = current_app._get_current_object()
    client = redis_client(app)
    if client is None:
        raise click.ClickException(
            "REDIS_URL is not set: the embedded default runs jobs inside the web process."
        )
    if io:
        from gevent import monkey

        if not monkey.is_module_patched("socket"):
            raise click.ClickException(
                "The I/O worker needs gevent's standard library from the start: run "
                "python -m gevent.monkey --module flask --app app worker --io"
            )
        from engines.models import chain

        chain.embedded_fallback = False  # it would compute in a greenlet: see chain.py
    queues = list(queues) or list(IO_QUEUES if io else CPU_QUEUES)
    maintenance.start_maintenance(app)
    connection = worker_connection(app)

    def new_worker() -> LeasedWorker:
        options = {
            "connection": connection,
            "maintenance_interval": int(app.config["RQ_MAINTENANCE_SECONDS"]),
        }
        if io:
            options.update(
                app=app,
                concurrency=int(app.config["IO_WORKER_CONCURRENCY"]),
                stop_grace=float(app.config["IO_WORKER_STOP_GRACE_SECONDS"]),
            )
        worker = (IoWorker if io else LeasedWorker)(
            [Queue(name, connection=connection) for name in queues], **options
        )
        worker.lease_seconds = float(app.config["JOB_LEASE_SECONDS"])
        return worker

    work_until_stopped(new_worker)


def work_until_stopped(new_worker, sleep=time.sleep) -> None:
    """Run workers from ``new_worker()`` one after the other until a stop is asked for.

    RQ's worker waits out a Redis outage only while it waits for a job. Anywhere else (the
    heartbeat after a job, reporting the job's end, its start or its end as a worker) the
    error ends it: it logs "found an unhandled exception, quitting" and returns, or raises
    (so does making one: it names its connection in Redis).
    This process must outlive a Redis restart (a test saw its worker gone for good after
    one), so a new worker takes over, after a wait that grows while the errors go on.
    """
    wait = _FIRST_WAIT
    while True:
        started = time.monotonic()
        worker = None
        try:
            worker = new_worker()  # it names its connection in Redis
            worker.work(with_scheduler=worker.runs_scheduler)
            if worker.stop_asked:
                return
            reason = "the worker ended on an error"
        except (redis.ConnectionError, redis.TimeoutError) as lost:
            reason = f"Redis is unreachable ({lost})"
        except StopRequested:  # asked for while the worker was starting
            return
        if time.monotonic() - started >= _RAN_A_WHILE:
            wait = _FIRST_WAIT
        log.warning("%s; a new worker starts in %.0f s", reason, wait)
        # The last worker's handlers are still installed, and RQ's only takes note of a stop
        # while its worker says it is busy (one that ended mid-job still does): the stop was
        # lost, and the next worker ran on. While it waits, a stop ends the command.
        previous = {signum: signal.signal(signum, _stop) for signum in _STOP_SIGNALS}
        try:
            if getattr(worker, "stop_asked", False):  # asked for just before ours came in
                return
            sleep(wait)
        except StopRequested:
            return
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        wait = min(wait * 2, _MOST_WAIT)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _stop(_signum, _frame):
    raise StopRequested()
