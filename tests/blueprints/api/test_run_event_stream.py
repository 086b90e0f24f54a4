"""GET /v1/tools/run/{run_id}/events: a run's events as server-sent events (services/run_events.py,
blueprints/api/events.py), on Redis and in the embedded default's process."""

import threading
import time

import pytest

import jobs.runs
from extensions import db
from services.run_events import DELTA, END, run_events
from tests.helpers import auth, needs_pg, needs_redis, sse_events

DISPATCH = "/v1/tools/run"


def _events(response) -> list[tuple[str, str, dict]]:
    return sse_events(response.get_data(as_text=True))


def _submit(client, raw, slug="word-counter", **inputs) -> str:
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": slug, **(inputs or {"text": "one two three"})},
    )
    assert response.status_code == 202, response.get_json()
    db.session.commit()
    return response.get_json()["run_id"]


def _stream(client, raw, run_id, last=None):
    headers = auth(raw) | ({"Last-Event-ID": last} if last else {})
    return client.get(f"/v1/tools/run/{run_id}/events", headers=headers)


@needs_pg
@needs_redis
def test_an_ended_run_replays_its_text_then_done_with_its_status_record(app, client, make_key):
    raw = make_key()
    run_id = _submit(client, raw)
    for piece in ("Hello", ", ", "world"):
        run_events().append(run_id, DELTA, {"text": piece})
    jobs.runs.run_tool_job(run_id)  # the job, here: it ends the run, and its events

    response = _stream(client, raw, run_id)

    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    events = _events(response)
    assert [kind for _, kind, _ in events] == ["delta", "delta", "delta", "done"]
    assert "".join(data["text"] for _, kind, data in events if kind == "delta") == "Hello, world"
    status = client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()
    assert events[-1][2] == status and status["status"] == "succeeded"
    ids = [event_id for event_id, _, _ in events]
    assert len(set(ids)) == 4 and ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))

    # A client that saw the second piece picks up after it.
    resumed = _events(_stream(client, raw, run_id, last=ids[1]))
    assert [(i, kind) for i, kind, _ in resumed] == [(ids[2], "delta"), (ids[3], "done")]
    # An id no stream gave is read as none: everything again.
    assert len(_events(_stream(client, raw, run_id, last="9-x; event: done"))) == 4


@needs_pg
@needs_redis
def test_a_follower_gets_the_text_as_it_is_written_then_the_end(app, client, make_key):
    raw = make_key()
    run_id = _submit(client, raw)
    response = client.get(f"/v1/tools/run/{run_id}/events", headers=auth(raw), buffered=False)
    chunks = iter(response.response)
    assert next(chunks).startswith(b": following run")  # the headers went at once

    def work():
        with app.app_context():
            run_events().append(run_id, DELTA, {"text": "first"})
            time.sleep(0.3)
            jobs.runs.run_tool_job(run_id)

    writer = threading.Thread(target=work)
    started = time.monotonic()
    writer.start()
    first = next(chunks).decode()
    assert "event: delta" in first and '"first"' in first
    assert time.monotonic() - started < 1.0  # woken, not found by a look every 2 s
    rest = b"".join(chunks).decode()
    writer.join(5)
    assert "event: done" in rest and '"status":"succeeded"' in rest


@needs_pg
@needs_redis
def test_a_failed_run_ends_with_an_error_event_holding_its_problem(app, client, make_key):
    raw = make_key()
    run_id = _submit(client, raw)
    jobs.runs.fail_abandoned_run(run_id)

    ((_, kind, problem),) = _events(_stream(client, raw, run_id))

    assert kind == "error"
    assert problem["status"] == 500 and problem["code"] == "internal_error"
    assert problem["detail"] and problem["type"].endswith("/docs/problems/internal-error")


@needs_pg
@needs_redis
def test_a_run_that_wrote_no_events_still_ends_from_its_record(app, client, make_key):
    """An inline run, or one whose end event was lost: the stream looks at the run."""
    raw = make_key()
    inline = client.post(
        DISPATCH, headers=auth(raw), json={"slug": "word-counter", "text": "a b"}
    ).get_json()
    events = _events(_stream(client, raw, inline["run_id"]))
    assert [kind for _, kind, _ in events] == ["done"]
    assert events[0][2]["output"] == inline["output"]

    run_id = _submit(client, raw)
    jobs.runs.run_tool_job(run_id)
    db.session.commit()
    app.extensions["redis"].delete(f"run-events:{run_id}")  # as if never written
    assert [kind for _, kind, _ in _events(_stream(client, raw, run_id))] == ["done"]


def test_another_accounts_run_or_none_is_a_404(app, client, make_key):
    raw, other = make_key(), make_key()
    response = client.post(
        DISPATCH, headers=auth(other), json={"slug": "word-counter", "text": "a"}
    )
    run_id = response.get_json()["run_id"]
    for unknown in (run_id, "01a226f0-35b2-7b84-add3-8fb69124e287"):
        refused = _stream(client, raw, unknown)
        assert refused.status_code == 404
        assert refused.get_json()["code"] == "run_not_found"
    assert _stream(client, "svc_" + "x" * 40, run_id).status_code == 401


def test_the_embedded_default_keeps_the_events_in_its_process(embedded_app):
    from services import accounts, keys

    with embedded_app.app_context():
        account = accounts.create_account("stream@example.com", "pro")
        _, raw = keys.create_key(account, "k")
        db.session.commit()
        client = embedded_app.test_client()
        response = client.post(
            DISPATCH,
            headers={**auth(raw), "Prefer": "respond-async"},
            json={"slug": "word-counter", "text": "a b c"},
        )
        run_id = response.get_json()["run_id"]
        run_events().append(run_id, DELTA, {"text": "x"})
        deadline = time.monotonic() + 10
        while client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()[
            "status"
        ] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        events = _events(client.get(f"/v1/tools/run/{run_id}/events", headers=auth(raw)))
        assert events[-1][1] == "done" and events[-1][2]["output"]["words"] == 3
        assert END not in [kind for _, kind, _ in events]


STORIES = "We met at school and he once sailed a bathtub across the lake."


@needs_pg
@needs_redis
def test_a_providers_text_reaches_followers_as_it_is_written(provider_in_env, app, make_key):
    """The fake provider streams its answer a word at a time; the deltas put together are
    the run's output, and a JSON tool (no free text) sends none, only done."""
    client = app.test_client()
    raw = make_key()
    run_id = _submit(client, raw, "toast-speech-writer", stories=STORIES)
    jobs.runs.run_tool_job(run_id)

    events = _events(_stream(client, raw, run_id))

    kinds = [kind for _, kind, _ in events]
    assert kinds[-1] == "done" and set(kinds[:-1]) == {"delta"}
    text = "".join(data["text"] for _, kind, data in events if kind == "delta")
    assert text == events[-1][2]["output"]["text"] and text.strip()
    assert provider_in_env.calls("/v1/chat/completions")[-1].json["stream"] is True

    run_id = _submit(client, raw, "search-intent-classifier", query="buy running shoes size 42")
    jobs.runs.run_tool_job(run_id)
    assert [kind for _, kind, _ in _events(_stream(client, raw, run_id))] == ["done"]


# --- POST /v1/tools/run with "stream": true ----------------------------------------------------


@needs_pg
@needs_redis
def test_a_streamed_inline_run_answers_its_end_as_an_event(app, client, make_key):
    raw = make_key()
    response = client.post(
        DISPATCH, headers=auth(raw), json={"slug": "word-counter", "text": "a b", "stream": True}
    )
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    ((_, kind, record),) = _events(response)
    assert kind == "done" and record["status"] == "succeeded" and record["output"]["words"] == 2
    status = client.get(f"/v1/tools/run/{record['run_id']}/status", headers=auth(raw))
    assert status.get_json() == record
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 1  # admitted and counted once, as any run


def _post_streamed(client, raw):
    """A streamed run of a provider's writing tool, its answer unread (the stream's start)."""
    return client.post(
        DISPATCH,
        headers=auth(raw),
        json={"slug": "toast-speech-writer", "stories": STORIES, "stream": True},
        buffered=False,
    )


@needs_pg
@needs_redis
def test_a_streamed_queued_run_sends_the_providers_text_then_done(provider_in_env, app, make_key):
    client = app.test_client()
    raw = make_key()
    response = _post_streamed(client, raw)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    chunks = iter(response.response)
    run_id = next(chunks).decode().split("run ", 1)[1].strip()  # ": following run <id>"

    def work():
        with app.app_context():
            jobs.runs.run_tool_job(run_id)  # the worker, here

    worker = threading.Thread(target=work)
    worker.start()
    body = b"".join(chunks).decode()
    worker.join(10)

    events = sse_events(body)
    kinds = [kind for _, kind, _ in events]
    assert kinds[-1] == "done" and kinds[:-1] and set(kinds[:-1]) == {"delta"}
    text = "".join(data["text"] for _, kind, data in events if kind == "delta")
    assert text == events[-1][2]["output"]["text"]
    run = db.session.get(jobs.runs.Run, run_id, populate_existing=True)
    assert run.notify is False  # its reader had the end: no webhook event


@needs_pg
@needs_redis
def test_a_bad_stream_flag_or_a_refusal_before_the_run_is_a_problem_document(app, client, make_key):
    raw = make_key()
    bad = client.post(
        DISPATCH, headers=auth(raw), json={"slug": "word-counter", "text": "a", "stream": "yes"}
    )
    assert bad.status_code == 422 and bad.mimetype == "application/problem+json"
    assert bad.get_json()["errors"] == {"stream": ["Must be a boolean."]}
    unknown = client.post(
        DISPATCH, headers=auth(raw), json={"slug": "no-such-tool", "stream": True}
    )
    assert unknown.status_code == 404 and unknown.mimetype == "application/problem+json"


# --- the embedded model, an error mid-stream, a client that goes away -------------------


@pytest.fixture
def embedded_writer(monkeypatch):
    """A stand-in embedded model (no provider here) that writes each of its answers a word
    at a time, as the real one streams its tokens, and rewrites where it should not."""
    from engines.base import note_model
    from engines.models import local_llm, providers

    answers = ["A bakery in London ships throughout Europe.", "A bakery in York ships to Paris."]

    def complete(messages, *, on_text=None, **options):
        text = answers.pop(0)
        for piece in text.split(" "):
            if on_text is not None:
                on_text(piece + " ")
        note_model("test.gguf")
        return providers.Completion(text, "test.gguf", "stop", embedded=True)

    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "name", lambda: "test.gguf")
    monkeypatch.setattr(local_llm, "model_name", lambda: "test.gguf")
    monkeypatch.setattr(local_llm, "complete", complete)
    return answers


@needs_pg
@needs_redis
def test_an_embedded_answer_refused_by_its_checks_ends_with_an_error_after_its_text(
    app, client, make_key, embedded_writer
):
    """Its text streams as it is written, but is not final: asked again, the text restarts
    (``reset``); refused again, the stream ends with embedded_model_unfit, never done."""
    raw = make_key()
    run_id = _submit(client, raw, "text-rewriter", text="A bakery in Leeds ships nationwide.")
    jobs.runs.run_tool_job(run_id)

    events = _events(_stream(client, raw, run_id))

    kinds = [kind for _, kind, _ in events]
    assert kinds == ["delta"] * kinds.index("reset") + ["reset"] + ["delta"] * (
        len(kinds) - kinds.index("reset") - 2
    ) + ["error"]
    # What was sent of the first answer before it was refused (the rest, gathered, was voided
    # unsent), then the whole second one, trimmed as an output is.
    first = "".join(d["text"] for _, k, d in events[: kinds.index("reset")])
    assert first and "A bakery in London ships throughout Europe.".startswith(first)
    second = "".join(d["text"] for _, k, d in events[kinds.index("reset") :] if k == "delta")
    assert second == "A bakery in York ships to Paris."
    problem = events[-1][2]
    assert (problem["status"], problem["code"]) == (503, "embedded_model_unfit")
    status = client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()
    assert status["status"] == "failed" and status["output"] is None


@needs_pg
@needs_redis
def test_a_client_that_goes_away_does_not_cancel_its_run(provider_in_env, app, make_key):
    client = app.test_client()
    raw = make_key()
    response = _post_streamed(client, raw)
    run_id = next(iter(response.response)).decode().split("run ", 1)[1].strip()
    response.close()  # the client hangs up before the run has started

    jobs.runs.run_tool_job(run_id)

    status = client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).get_json()
    assert status["status"] == "succeeded" and status["output"]["text"]
    replay = _events(_stream(client, raw, run_id))  # and reads it later, whole
    assert replay[-1][1] == "done" and replay[-1][2] == status


def test_the_text_writer_sends_what_adds_up_to_the_output(app):
    """Whitespace around the text is left out, pieces within the gathering time go as one,
    a restart voids the text (once something was sent), a step's text names its step."""
    from services.run_events import LocalRunEvents, TextWriter

    events = LocalRunEvents()
    writer = TextWriter("r1", events)
    writer.GATHER_SECONDS = 60
    for piece in ("\n  Hello", " ", "world", "  \n"):
        writer(piece)
    writer.restart()
    writer.restart()  # nothing sent since: nothing to void
    writer("  Again ")
    writer.close()
    sent = [(e.kind, e.data) for e in events.after("r1", None)]
    assert sent == [
        ("delta", {"text": "Hello"}),
        ("reset", {}),
        ("delta", {"text": "Again"}),
    ]
    writer = TextWriter("r1", events)
    writer.GATHER_SECONDS = 60
    writer("\n")  # whitespace alone is held, not sent
    writer("One")
    writer(" two ")
    writer.close()
    assert [e.data for e in events.after("r1", None)][3:] == [{"text": "One"}, {"text": " two"}]

    step = TextWriter("w1", events, step="outline")
    step("Draft")
    step.restart()
    assert [e.data for e in events.after("w1", None)] == [
        {"step": "outline", "text": "Draft"},
        {"step": "outline"},
    ]


@needs_pg
@needs_redis
def test_a_streamed_run_with_an_idempotency_key_streams_and_a_retry_follows_the_same_run(
    provider_in_env, app, make_key
):
    client = app.test_client()
    raw = make_key()
    body = {"slug": "toast-speech-writer", "stories": STORIES, "stream": True}
    headers = {**auth(raw), "Idempotency-Key": "toast-1"}
    first = client.post(DISPATCH, headers=headers, json=body, buffered=False)
    run_id = next(iter(first.response)).decode().split("run ", 1)[1].strip()  # not held back
    first.close()  # the connection breaks before the run has even started

    retried = client.post(DISPATCH, headers=headers, json=body, buffered=False)
    assert retried.status_code == 200 and retried.mimetype == "text/event-stream"
    assert retried.headers["Idempotent-Replayed"] == "true"
    chunks = iter(retried.response)
    assert next(chunks).decode() == f": following run {run_id}\n\n"  # the same run
    jobs.runs.run_tool_job(run_id)
    rest = b"".join(chunks).decode()
    assert "event: delta" in rest and "event: done" in rest
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 1  # it ran once


@needs_pg
@needs_redis
def test_a_stream_that_breaks_off_ends_with_an_error_event_naming_where_it_was(
    app, client, make_key, monkeypatch
):
    """A backing service failing mid-stream never leaves the client hanging after its 200:
    an ``error`` event says so, its id the last event's, and following again resumes."""
    raw = make_key()
    run_id = _submit(client, raw)
    run_events().append(run_id, DELTA, {"text": "written"})

    def database_down(*args):
        raise ConnectionError("the database went away")

    monkeypatch.setattr("blueprints.api.events._ended", database_down)
    events = _events(_stream(client, raw, run_id))

    (delta_id, _, _), (error_id, kind, problem) = events
    assert kind == "error" and error_id == delta_id
    assert (problem["status"], problem["code"]) == (503, "service_unavailable")
    monkeypatch.undo()
    jobs.runs.run_tool_job(run_id)
    resumed = _events(_stream(client, raw, run_id, last=error_id))
    assert [kind for _, kind, _ in resumed] == ["done"]


def test_text_redis_could_not_take_goes_with_the_next_piece(app):
    from services.run_events import LocalRunEvents, TextWriter

    class Flaky(LocalRunEvents):
        fail = True

        def append(self, run_id, kind, data=None):
            if self.fail:
                self.fail = False
                return False
            return super().append(run_id, kind, data)

    events = Flaky()
    writer = TextWriter("r2", events)
    writer("One ")  # refused
    writer("two")
    writer.close()
    assert "".join(e.data["text"] for e in events.after("r2", None)) == "One two"


@needs_pg
@needs_redis
def test_cancel_ends_a_followers_stream_at_once_with_the_canceled_record(app, client, make_key):
    raw = make_key()
    run_id = _submit(client, raw)  # queued: no worker here
    response = client.get(f"/v1/tools/run/{run_id}/events", headers=auth(raw), buffered=False)
    chunks = iter(response.response)
    next(chunks)

    def cancel():
        time.sleep(0.2)
        with app.app_context():
            app.test_client().post(f"/v1/tools/run/{run_id}/cancel", headers=auth(raw))

    canceler = threading.Thread(target=cancel)
    started = time.monotonic()
    canceler.start()
    rest = b"".join(chunks).decode()
    canceler.join(5)
    assert time.monotonic() - started < 1.5  # its end event, not a look at the record
    assert "event: done" in rest and '"status":"canceled"' in rest


@needs_pg
@needs_redis
def test_an_idle_stream_gets_a_comment_line_while_its_run_waits(app, client, make_key, monkeypatch):
    """Proxies cut a silent connection: a run waiting in the queue keeps its stream alive
    with comment lines, however seldom its record is looked at."""
    monkeypatch.setattr("blueprints.api.events.KEEP_ALIVE_SECONDS", 0.3)
    monkeypatch.setattr("blueprints.api.events.LOOK_FIRST", 60.0)  # never, here
    monkeypatch.setattr("services.run_events.LOOK_EVERY", 0.1)
    monkeypatch.setattr("blueprints.api.events.FOLLOW_SECONDS", 5.0)  # no hanging test
    raw = make_key()
    run_id = _submit(client, raw)  # queued: no worker here
    response = client.get(f"/v1/tools/run/{run_id}/events", headers=auth(raw), buffered=False)
    chunks = iter(response.response)
    next(chunks)

    assert [next(chunks).decode() for _ in range(2)] == [": keep-alive\n\n"] * 2
    jobs.runs.run_tool_job(run_id)
    rest = b"".join(chunks).decode()
    assert "event: done" in rest and '"status":"succeeded"' in rest
