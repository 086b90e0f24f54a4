"""Callers waiting for runs to end (``Prefer: wait``), woken through Redis.

A run's end is published on a channel and its done-key set (``RQDispatcher.finished`` in
``services.queue.rq``); ``Waiters`` keeps one subscription per process and wakes the callers
of this process waiting on that run. ``services.run_events`` uses it for a run's followers.
"""

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator

import redis

from services import parking

log = logging.getLogger(__name__)

_DONE_TTL = 300
# A run's end is published on this channel (its id; a channel of its own per Redis database,
# as channels are the whole server's), and its done-key set for 5 minutes.
DONE_CHANNEL = "runs:done"
# A waiter looks at the done-key this often, besides being woken by the channel: it may
# have missed a message while its process's subscription was being made again.
_LOOK_EVERY = 2.0
# A process's listener for ended runs stops after this long without a waiter.
_LISTEN_IDLE = 60.0


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
