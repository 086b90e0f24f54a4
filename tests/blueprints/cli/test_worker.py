"""``flask worker``: a new RQ worker takes over from one that ended on an error."""

import os
import signal
import time

import pytest
import redis
from rq import Queue
from rq.exceptions import StopRequested

from blueprints.cli.worker import LeasedWorker, work_until_stopped
from services.redis import worker_connection
from tests.helpers import deployment_env, needs_pg, needs_redis, start_worker, stop_worker


class _Worker:
    """Stands for a LeasedWorker: its ``work`` ends as scripted."""

    def __init__(self, ending):
        self.ending = ending
        self.stop_asked = False

    runs_scheduler = True

    def work(self, with_scheduler):
        assert with_scheduler
        if self.ending == "stop":
            self.stop_asked = True  # as request_stop sets it before RQ's loop returns
        elif isinstance(self.ending, Exception):
            raise self.ending


def _run(endings, sleep=None):
    made, waits = [], []

    def new_worker():
        made.append(_Worker(endings[len(made)]))
        if made[-1].ending == "unmade":
            raise redis.ConnectionError("refused")  # RQ names its connection when made
        return made[-1]

    work_until_stopped(new_worker, sleep=sleep or waits.append)
    return made, waits


def test_a_worker_that_ended_on_an_error_is_replaced_until_a_stop_is_asked_for():
    endings = [
        None,  # RQ: "found an unhandled exception, quitting" (a Redis error after a job)
        redis.ConnectionError("refused"),  # Redis gone while the worker started or ended
        redis.TimeoutError("slow"),
        "unmade",
        None,
        "stop",
    ]
    made, waits = _run(endings)
    assert len(made) == 6
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]  # doubled while the errors go on


def test_the_wait_between_workers_stops_growing_at_30_seconds():
    made, waits = _run([None] * 8 + ["stop"])
    assert waits[-3:] == [30.0, 30.0, 30.0]
    assert len(made) == 9


def test_a_stop_asked_for_while_starting_or_waiting_ends_the_command():
    made, _ = _run([StopRequested()])
    assert len(made) == 1

    def stopped(_seconds):
        raise StopRequested()  # SIGTERM while waiting: the last worker's handler raises

    made, _ = _run([None, "stop"], sleep=stopped)
    assert len(made) == 1


def test_a_sigterm_while_waiting_ends_the_command_whatever_the_last_worker_left_installed():
    """RQ's handler only takes note of a stop while its worker says it is busy; one that
    ended mid-job left it installed, and the stop was lost: the next worker ran on."""
    noted = []
    before = signal.signal(signal.SIGTERM, lambda *_: noted.append("noted"))
    try:
        made, _ = _run([None, "stop"], sleep=lambda _s: os.kill(os.getpid(), signal.SIGTERM))
        assert len(made) == 1  # no worker after the stop
        assert noted == []
        # The handler the command found is back once it ends.
        os.kill(os.getpid(), signal.SIGTERM)
        assert noted == ["noted"]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_stop_noted_by_the_last_worker_after_it_returned_ends_the_command():
    """A SIGTERM between the worker's return and the command's own handlers reaches the
    worker's handler, which only takes note (``stop_asked``)."""

    class NotedLate(_Worker):
        reads = 0

        @property
        def stop_asked(self):  # noted after the command first looked
            self.reads += 1
            return self.reads > 1

        @stop_asked.setter
        def stop_asked(self, value):
            pass

    made = []

    def new_worker():
        made.append(NotedLate(None))
        return made[-1]

    work_until_stopped(new_worker, sleep=lambda _s: pytest.fail("waited"))
    assert len(made) == 1


@needs_pg
@needs_redis
def test_an_idle_worker_waits_for_jobs_without_read_timeouts(tmp_path):
    """RQ's blocking wait for a job lasts minutes; on the app's client (5 s reads) an idle
    worker logged "Timeout reading from socket" every few seconds."""
    log_path = tmp_path / "worker.log"
    process = start_worker(deployment_env(), log_path)
    try:
        time.sleep(12)  # past the app client's 5 s read timeout twice
        assert process.poll() is None, log_path.read_text()[-3000:]
    finally:
        stop_worker(process, log_path)
    log = log_path.read_text()
    assert "Listening on" in log or "*** Listening" in log, log[-3000:]
    assert "Timeout reading from socket" not in log, log[-3000:]


def test_the_workers_connection_reads_longer_than_its_blocking_wait(app):
    if app.extensions.get("redis") is None:
        pytest.skip("needs Redis")
    connection = worker_connection(app)
    worker = LeasedWorker([Queue("api", connection=connection)], connection=connection)
    timeout = connection.connection_pool.connection_kwargs["socket_timeout"]
    assert timeout > worker.dequeue_timeout
    assert app.extensions["redis"].connection_pool.connection_kwargs["socket_timeout"] == 5
