"""``flask --app app worker``: the RQ worker of the Procfile, with the app context."""

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
from rq.exceptions import StopRequested
from rq.scheduler import RQScheduler

from extensions import db
from services import sweeper
from services.queue import QUEUES, JobLease
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
            self.queues,
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
# The API's queue first: the site's runs wait while it has work (services/queue.py).
@click.option("--queue", "queues", multiple=True, default=list(QUEUES), show_default=True)
@with_appcontext
def worker_cli(queues):
    """Run an RQ worker with the app context, and the periodic sweep of stale runs."""
    app = current_app._get_current_object()
    client = redis_client(app)
    if client is None:
        raise click.ClickException(
            "REDIS_URL is not set: the embedded default runs jobs inside the web process."
        )
    sweeper.start_maintenance(app)
    connection = worker_connection(app)

    def new_worker() -> LeasedWorker:
        worker = LeasedWorker(
            [Queue(name, connection=connection) for name in queues],
            connection=connection,
            maintenance_interval=int(app.config["RQ_MAINTENANCE_SECONDS"]),
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
            worker.work(with_scheduler=True)
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
