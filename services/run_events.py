"""A run's events as it runs, for the clients that follow it (``GET .../events``).

What a run says while it runs is appended to a Redis stream of its own (``run-events:<id>``):
``delta`` events (``{"text": ...}``, the pieces of text its model writes, in order; a
``reset`` when what it wrote is void and it writes again) and, once it has ended, ``end``.
A workflow run has a stream of its own, which its steps write to: ``step_started`` and
``step_ended`` (``{"step", "tool", "run_id"}``, and the step's ``status`` at its end) and
their ``delta`` events (with the ``step`` that wrote them). A stream is kept
``RETENTION_SECONDS`` after its run's end, then expires. Each entry's id (Redis's,
``<ms>-<n>``) is the event's id: a client that lost its connection asks for what came after
the last id it saw (``Last-Event-ID``).

The stream is a view: the ended run's record in SQL stays the source of truth, and the
endpoint answers the run's end from it (``done`` with the status record, or ``error``), not
from the stream. So a run whose events were never written (an inline run, a run that ended
before this existed, or whose ``end`` was lost with its worker) still ends its stream: a
follower looks at the run's status when it has waited a while (``LOOK_EVERY`` seconds, then
less often).

A follower holds no Redis connection while it waits: every append also publishes the run's
id on one channel, and one subscription per process wakes the followers of that run
(``services.queue.Waiters``, as for callers waiting on a run's end). Without Redis (the
embedded default) the streams live in this process, which runs all the jobs.

Appending is best effort: a run does not fail because its events could not be written (a
follower then sees the end only, from SQL).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import redis
from flask import Flask, current_app

from services.queue import Waiters
from services.redis import redis_client

log = logging.getLogger(__name__)

DELTA, RESET, END = "delta", "reset", "end"
STEP_STARTED, STEP_ENDED = "step_started", "step_ended"
# How long a run's events are kept after its end.
RETENTION_SECONDS = 3600
# The most entries a stream keeps (a run writing more keeps its latest: Redis trims).
MAX_EVENTS = 20_000
# How often a follower that has heard nothing looks at the run's status.
LOOK_EVERY = 2.0
EVENTS_CHANNEL = "runs:events"
_EVENT_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")


@dataclass(frozen=True)
class Event:
    id: str
    kind: str
    data: dict


def _key(run_id: str) -> str:
    return f"run-events:{run_id}"


def event_position(event_id: str | None) -> tuple[int, int] | None:
    """An event id's place in its stream (``<ms>-<n>``), or None for anything else (an id
    no stream gave: a client's ``Last-Event-ID`` is read, never trusted)."""
    found = _EVENT_ID.fullmatch(event_id or "")
    return (int(found[1]), int(found[2])) if found else None


class RedisRunEvents:
    def __init__(self, client: redis.Redis):
        self.redis = client
        db = client.connection_pool.connection_kwargs.get("db", 0)
        self.waiters = Waiters(client, channel=f"{EVENTS_CHANNEL}:{db}")

    def append(self, run_id: str, kind: str, data: dict | None = None) -> bool:
        """Append an event; False when Redis could not take it (logged)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(
            _key(run_id),
            {"kind": kind, "data": json.dumps(data or {})},
            maxlen=MAX_EVENTS,
            approximate=True,
        )
        if kind == END:
            pipe.expire(_key(run_id), RETENTION_SECONDS)
        pipe.publish(self.waiters.channel, run_id)
        try:
            pipe.execute()
        except redis.RedisError as error:
            log.warning("could not write a %s event of run %s: %s", kind, run_id, error)
            return False
        return True

    def after(self, run_id: str, last: str | None) -> list[Event]:
        """The run's events after the one whose id is ``last`` (all of them for None)."""
        start = f"({last}" if event_position(last) else "-"
        return [
            Event(entry_id.decode(), fields[b"kind"].decode(), json.loads(fields[b"data"]))
            for entry_id, fields in self.redis.xrange(_key(run_id), start, "+")
        ]

    def follow(self, run_id: str, last: str | None, seconds: float) -> Iterator[list[Event]]:
        """The run's events after ``last``, in batches as they come, for ``seconds``; an
        empty batch each ``LOOK_EVERY`` seconds nothing came (the caller looks at the run's
        status, and keeps idle connections alive)."""
        deadline = time.monotonic() + seconds
        with self.waiters.watching(run_id) as woken:
            while time.monotonic() < deadline:
                woken.clear()
                try:
                    events = self.after(run_id, last)
                except redis.RedisError as error:  # read again after a while, from ``last``
                    log.warning("could not read the events of run %s: %s", run_id, error)
                    events = []
                if events:
                    last = events[-1].id
                    yield events
                    continue
                if not woken.wait(min(LOOK_EVERY, max(0.0, deadline - time.monotonic()))):
                    yield []


class LocalRunEvents:
    """The embedded default's: in this process, which runs the jobs as well."""

    def __init__(self):
        self._lock = threading.Condition()
        self._streams: dict[str, list[Event]] = {}
        self._expires: dict[str, float] = {}
        self._count = 0

    def append(self, run_id: str, kind: str, data: dict | None = None) -> bool:
        with self._lock:
            self._forget_expired()
            self._count += 1
            stream = self._streams.setdefault(run_id, [])
            stream.append(Event(f"{int(time.time() * 1000)}-{self._count}", kind, data or {}))
            del stream[:-MAX_EVENTS]
            if kind == END:
                self._expires[run_id] = time.monotonic() + RETENTION_SECONDS
            self._lock.notify_all()
        return True

    def after(self, run_id: str, last: str | None) -> list[Event]:
        after = event_position(last) or (0, 0)
        with self._lock:
            stream = self._streams.get(run_id, [])
            return [event for event in stream if event_position(event.id) > after]

    def follow(self, run_id: str, last: str | None, seconds: float) -> Iterator[list[Event]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self._lock:
                events = self.after(run_id, last)
                if not events:
                    self._lock.wait(min(LOOK_EVERY, max(0.0, deadline - time.monotonic())))
                    events = self.after(run_id, last)
            if events:
                last = events[-1].id
            yield events

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for run_id in [run_id for run_id, at in self._expires.items() if at <= now]:
            self._streams.pop(run_id, None)
            del self._expires[run_id]


class TextWriter:
    """The text a run's model writes, appended to the run's events as ``delta`` events: the
    first piece at once (a follower sees the answer start), then what came within
    ``GATHER_SECONDS`` of the last append as one (a provider sends a piece per token: an
    append each cost a round trip per token). A workflow step's text goes to its workflow
    run's stream, named by its ``step``.

    The deltas add up to the text output: whitespace before the text is left out, and
    whitespace at its end is held until more text follows it (the output is trimmed).
    ``restart`` voids the text so far (a ``reset`` event: the answer is being written
    again); ``close`` appends what is left, once the model is done. Text Redis could not
    take is sent again with the next piece."""

    GATHER_SECONDS = 0.1

    def __init__(
        self, run_id: str, events: RedisRunEvents | LocalRunEvents, step: str | None = None
    ):
        self.run_id = run_id
        self.events = events
        self._step = {"step": step} if step is not None else {}
        self._pending: list[str] = []
        self._held = ""  # whitespace at the end of what was sent: sent with what follows
        self._started = False  # whether any text was sent since the start or restart
        self._sent = 0.0

    def __call__(self, piece: str) -> None:
        self._pending.append(piece)
        if time.monotonic() - self._sent >= self.GATHER_SECONDS:
            self._send()

    def restart(self) -> None:
        self._pending.clear()
        self._held = ""
        if self._started:
            self.events.append(self.run_id, RESET, dict(self._step))
            self._started = False

    def close(self) -> None:
        self._send()

    def _send(self) -> None:
        text = self._held + "".join(self._pending)
        self._pending.clear()
        if not self._started:
            text = text.lstrip()
        body = text.rstrip()
        self._held = text[len(body) :]
        if not body:
            return
        self._sent = time.monotonic()  # a refusal too: tried again a gathering later
        if not self.events.append(self.run_id, DELTA, {**self._step, "text": body}):
            self._pending[:0] = [text]  # sent with what follows: a gap, never a hole
            self._held = ""
            return
        self._started = True


def run_events() -> RedisRunEvents | LocalRunEvents:
    return current_app.extensions["run_events"]


def text_writer(run) -> TextWriter:
    """Where a queued run's text goes: its own stream, or its workflow run's for a step."""
    if run.workflow_run_id is not None:
        return TextWriter(run.workflow_run_id, run_events(), step=run.step_id)
    return TextWriter(run.id, run_events())


def step_event(run, kind: str) -> None:
    """A workflow step's start or end (``STEP_STARTED``, ``STEP_ENDED``), on its workflow
    run's stream."""
    data = {"step": run.step_id, "tool": run.tool_slug, "run_id": run.id}
    if kind == STEP_ENDED:
        data["status"] = run.status
    run_events().append(run.workflow_run_id, kind, data)


def init_app(app: Flask) -> None:
    client = redis_client(app)
    app.extensions["run_events"] = (
        RedisRunEvents(client) if client is not None else LocalRunEvents()
    )
