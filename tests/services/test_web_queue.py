"""The site's runs wait behind the API's: in the embedded default's in-process queue, and
for an RQ worker, which takes the API queue before the web queue."""

import threading

import pytest

from services.queue import (
    CPU_QUEUES,
    DEFAULT_QUEUE,
    IO_QUEUE,
    IO_QUEUES,
    IO_WEB_QUEUE,
    QUEUES,
    WEB_QUEUE,
    InProcessDispatcher,
)
from tests.helpers import embedded_app_at


@pytest.fixture
def app(tmp_path):
    """The embedded default as ``make run`` serves it (no SERVER_NAME): another app than
    conftest's (a SQLite file and no Redis, the in-process queue under test), so ``app`` is
    redefined here rather than given ``app_settings``."""
    with embedded_app_at(tmp_path / "embedded.db", SERVER_NAME=None) as app:
        yield app


def test_the_in_process_queue_takes_api_jobs_before_web_jobs(app):
    queue = InProcessDispatcher(app, workers=1)
    order, first_started, release = [], threading.Event(), threading.Event()

    def hold():
        first_started.set()
        release.wait(10)

    def job(name):
        order.append(name)

    def ignore(job_id):
        pass

    queue.enqueue(hold, job_id="hold", timeout=30, on_failure=ignore)
    assert first_started.wait(10)
    # While the one thread is busy: two web runs, then two API runs.
    for name, which in (("web-1", WEB_QUEUE), ("web-2", WEB_QUEUE),
                        ("api-1", DEFAULT_QUEUE), ("api-2", DEFAULT_QUEUE)):  # fmt: skip
        queue.enqueue(job, name, job_id=name, timeout=30, on_failure=ignore, queue=which)
    release.set()
    for _ in range(200):
        if len(order) == 4:
            break
        threading.Event().wait(0.05)
    assert order == ["api-1", "api-2", "web-1", "web-2"]


def test_workers_listen_to_the_api_queue_first():
    assert CPU_QUEUES == (DEFAULT_QUEUE, WEB_QUEUE)
    assert IO_QUEUES == (IO_QUEUE, IO_WEB_QUEUE)
    assert QUEUES == CPU_QUEUES + IO_QUEUES


def test_the_in_process_queue_runs_io_jobs_side_by_side(app):
    """The embedded default: jobs that wait on a provider are not held to the two compute
    threads; twenty of them wait at once (a barrier of twenty opens), while the compute
    lane keeps its two threads."""
    queue = InProcessDispatcher(app, workers=2)
    barrier, passed = threading.Barrier(20, timeout=10), []

    def wait_on_provider(n):
        barrier.wait()  # raises BrokenBarrierError unless all twenty wait at once
        passed.append(n)

    for n in range(20):
        queue.enqueue(
            wait_on_provider, n, job_id=f"io-{n}", timeout=30, on_failure=lambda job_id: None,
            queue=IO_QUEUE,
        )  # fmt: skip
    for _ in range(200):
        if len(passed) == 20:
            break
        threading.Event().wait(0.05)
    assert sorted(passed) == list(range(20))
    assert sum(thread.name.startswith("run-worker") for thread in queue.threads) == 0
