"""``GET /v1/tools/run/{run_id}/events``: a run's events as server-sent events (and the
same for workflow runs, ``blueprints.api.workflows``, whose steps add theirs).

Each event has an ``id:`` (its place in the run's stream, ``services.run_events``):

- ``delta``, ``{"text": "..."}``: a piece of the text its model writes, in order;
- ``reset``, ``{}``: the text so far is void (the answer is being written again: another
  model took over, or the answer failed its checks and is asked for once more);
- then one of ``done`` (exactly what ``GET /v1/tools/run/{run_id}/status`` answers for the
  ended run, canceled ones included) or ``error`` (the problem document the run's failure
  answers), and the stream ends.

From the run's start, or after the event whose id the client sends as ``Last-Event-ID`` (a
client that lost its connection picks up where it was). An ended run replays its events,
then ``done`` or ``error``; a run that writes no text (a tool without a model) sends only
that. A comment line at least every ``KEEP_ALIVE_SECONDS`` keeps proxies from cutting an
idle stream. The run's end is read from SQL, the run's record being the source of truth; the
stream holds the text. A run ended by cancel or by its job ends the stream at once (its
``end`` event); one whose ``end`` was lost, when the follower next looks at its record.

Following a run holds no database connection while it waits (the session is closed before
each wait) and no place of the web worker's (the follower is parked, as a caller waiting
with ``Prefer: wait``). A client that goes away does not cancel the run.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from flask import Response, stream_with_context

from blueprints.api.problems import Problem, problem_body
from extensions import db
from models import TERMINAL_STATES, Run, WorkflowRun
from services.run_events import END, Event, event_position, run_events

log = logging.getLogger(__name__)


def events_response(description: str, kinds: tuple[str, ...]) -> dict:
    """The OpenAPI description of a streamed answer whose events are ``kinds``."""
    return {
        "description": description,
        # One event, as OpenAPI 3.2 describes an event of text/event-stream (3.1 readers
        # such as Schemathesis take ``schema`` as the schema of each event): its data is
        # JSON text.
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "object",
                    "required": ["id", "event", "data"],
                    "properties": {
                        "id": {"type": "string"},
                        "event": {"type": "string", "enum": list(kinds)},
                        "data": {"type": "string", "contentMediaType": "application/json"},
                    },
                }
            }
        },
    }


RUN_EVENTS_RESPONSE = events_response(
    "The run's events as server-sent events (`text/event-stream`), each with an `id:`: "
    '`delta` (`{"text": ...}`, a piece of the text the model writes; the pieces add up to '
    "the output's `text`), `reset` (`{}`: the text so far is void, the answer is being "
    "written again), then `done` (the status record, as `GET /v1/tools/run/{run_id}/status` "
    "answers it) or `error` (the problem document of the run's failure), after which the "
    "stream ends. Comment lines keep an idle stream alive.",
    ("delta", "reset", "done", "error"),
)
LAST_EVENT_ID = {
    "in": "header",
    "name": "Last-Event-ID",
    "required": False,
    "schema": {"type": "string"},
    "description": "The id of the last event received: the stream goes on after it.",
}
KEEP_ALIVE_SECONDS = 10.0
# A follower that has heard nothing looks at the run's record (an end whose event was lost)
# after LOOK_FIRST seconds, then less and less often, up to every LOOK_MOST: a run waiting in
# the queue with hundreds of followers cost a query each every 2 s.
LOOK_FIRST, LOOK_MOST = 2.0, 16.0
_BROKE_OFF = Problem(
    503,
    "service_unavailable",
    "The stream broke off: a service it reads from failed. The run goes on; follow it again "
    "(GET its events with Last-Event-ID set to this event's id) or read its status.",
)
# How long one request follows a run that has not ended (the client reconnects after,
# with the last id): longer than a run's own timeout.
FOLLOW_SECONDS = 900.0


Followed = Run | WorkflowRun
# What ends a run's stream: ("done", its status record) or ("error", its problem document).
Ending = Callable[[Followed], tuple[str, dict]]


def event_stream(run: Followed, last_event_id: str | None, ending: Ending) -> Response:
    """The streamed answer following ``run`` (the caller's own tool or workflow run), ended
    by ``ending``."""
    run_id, model = run.id, type(run)
    last = last_event_id if event_position(last_event_id) else None
    # A run that has ended (one answered inline may not be written yet: it is the
    # recorder's) is answered as it is, not read again.
    had_ended = run if run.status in TERMINAL_STATES else None
    db.session.close()  # nothing is held while the stream waits

    sent = last  # the id of the last event sent

    def follow() -> Iterator[tuple[str, str]]:
        """(event id, text) of each event of the stream, and ("", comment) lines."""
        if had_ended is not None:
            end_id = "end"
            for event in run_events().after(run_id, last):
                if event.kind == END:
                    end_id = event.id
                    break
                yield event.id, _event(event.id, event.kind, event.data)
            yield end_id, _event(end_id, *ending(had_ended))
            return
        for step in follow_run(model, run_id, last, FOLLOW_SECONDS):
            if step.ended is not None:
                yield step.end_id, _event(step.end_id, *ending(step.ended))
                db.session.close()
                return
            if step.event is None:
                yield "", ": keep-alive\n\n"
            else:
                yield step.event.id, _event(step.event.id, step.event.kind, step.event.data)

    def generate() -> Iterator[str]:
        nonlocal sent
        yield ": following run " + run_id + "\n\n"  # the headers and a first line, at once
        try:
            for event_id, text in follow():
                yield text
                sent = event_id or sent
        except Exception:  # noqa: BLE001 - said to the client, who would otherwise hang
            # A backing service failed mid-stream: the stream ends with an error that says
            # so, its id the last event's (a client following again picks up after it).
            log.exception("the event stream of run %s broke off", run_id)
            db.session.close()
            yield _event(sent or "0-0", "error", problem_body(_BROKE_OFF))

    response = Response(stream_with_context(generate()), mimetype="text/event-stream")
    response.events_of = run_id  # the run it follows (an Idempotency-Key keeps that)
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # nginx and kin: pass each event on at once
    return response


@dataclass(frozen=True)
class FollowStep:
    """One step of following a run (``follow_run``): an ``event`` of its stream, or
    nothing (a keep-alive is due), or its end: the run ``ended``, read afresh, and the id
    of the event that said so (``end`` when its record did)."""

    event: Event | None = None
    ended: Followed | None = None
    end_id: str = "end"


def follow_run(
    model: type[Followed], run_id: str, last: str | None, seconds: float
) -> Iterator[FollowStep]:
    """Follow a run that had not ended, after the event ``last``, for up to ``seconds``:
    each of its events as it comes, a step with nothing each ``KEEP_ALIVE_SECONDS`` of
    silence, and last its end (from its ``end`` event, or from its record, looked at after
    ``LOOK_FIRST`` seconds of silence and then less and less often, up to every
    ``LOOK_MOST``: an end whose event was lost). Holds no database connection while it
    waits; the session is left open after the end (the caller reads the ended run, then
    closes it). Stops without an end when ``seconds`` run out."""
    written = looked = time.monotonic()
    look_every = LOOK_FIRST
    for batch in run_events().follow(run_id, last, seconds):
        for event in batch:
            if event.kind == END:
                ended = db.session.get(model, run_id, populate_existing=True)
                yield FollowStep(ended=ended, end_id=event.id)
                return
            yield FollowStep(event=event)
            written = looked = time.monotonic()
            look_every = LOOK_FIRST
        if batch:
            continue
        if time.monotonic() - looked >= look_every:
            ended = _ended(model, run_id)
            if ended is not None:
                yield FollowStep(ended=ended)
                return
            looked, look_every = time.monotonic(), min(2 * look_every, LOOK_MOST)
        if time.monotonic() - written >= KEEP_ALIVE_SECONDS:
            yield FollowStep()
            written = time.monotonic()


def status_ending(run: Followed) -> tuple[str, dict]:
    """A page's ending (the site's run pages): ``done`` or ``error`` with the run's status
    only; the page then asks for its own rendering of the end."""
    return ("error" if run.status == "failed" else "done"), {"status": run.status}


def _ended(model: type[Followed], run_id: str) -> Followed | None:
    """The run if it has ended (read afresh), else None; the session is closed after."""
    try:
        run = db.session.get(model, run_id, populate_existing=True)
        return run if run is not None and run.status in TERMINAL_STATES else None
    finally:
        db.session.close()


def _event(event_id: str, kind: str, data: dict) -> str:
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
