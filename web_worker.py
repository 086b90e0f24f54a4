"""The web command's gunicorn worker: gevent; each request read in full, then run by one of
a fixed set of long-lived greenlets.

With threads (gunicorn's ``gthread``: 2 workers x 4 threads), eight clients that sent half a
request, or a couple of hundred that sent nothing, held every thread and left every other
request unanswered (issue 13); so could eight callers waiting for queued runs (``Prefer:
wait``, up to 60 s). Here a connection is a greenlet: a client that is slow to send, a
request waiting for its queued run (a Redis BLPOP), a tool fetching a page and a model call
wait without holding a thread, and psycopg 3, redis-py (hiredis) and the app's background
threads (``services/recorder.py``) cooperate once gevent has patched the standard library
(the worker patches it before it loads the app; psycopg then waits with the patched
``poll``).

What this class adds to gunicorn's ``gevent`` worker:

- **A bound on how long a client may take to send a request.** gunicorn's own bounds only
  the request line and headers (``--keep-alive`` seconds, 2 by default, counted from the
  connection's start even once bytes are flowing), never the body, which the app reads as
  it goes. Here a new connection that has sent no byte of its first request within
  ``FIRST_REQUEST_IDLE`` seconds (2, or ``--keep-alive`` if shorter) is closed, and a
  connection that has sent no byte of its next request after ``--keep-alive`` seconds (the
  Procfile: 65, longer than the idle timeouts of common clients and routers, so that a
  client reusing a connection never races its close); once a request's first byte has come, its
  headers and whole body must have arrived within ``WEB_REQUEST_TIMEOUT`` seconds (default
  20), else the client is answered ``408`` and the connection closed. The body is read
  (into memory, or a spooled temporary file past 1 MiB) before the app is called, so the
  app never waits for a client. A body announced larger than the app's
  ``MAX_CONTENT_LENGTH`` is not read (the app answers ``413`` and the connection is closed);
  a chunked body that grows past it is answered ``413`` at once. ``Expect: 100-continue`` is
  answered before the body is read.
- **Problem documents for what gunicorn refuses to read** (a malformed request line or
  header, a bad chunk, a request line or headers over gunicorn's limits, an unknown
  transfer coding): the status gunicorn chose, with its message as the ``detail`` of an
  ``application/problem+json`` answer like the app's, instead of gunicorn's HTML page.
- **At most ``--threads`` requests working in the app at once per worker** (the
  Procfile: 32), each run by one of a set of long-lived greenlets; a request read in full
  waits its turn. The bound keeps a worker's database pool (5 connections, 10 more on
  demand) and its Redis connections from being overrun by a burst. A request that waits
  for its queued run (``Prefer: wait``, up to 60 s) is **parked** meanwhile
  (``services.parking``): it holds no database or Redis connection while it waits, and its
  place goes to another request (a greenlet is started to take it), so two hundred callers
  waiting for slow model runs leave the other requests their 32 places. Parked requests are
  bounded by ``--worker-connections``, like every connection.

Use: ``gunicorn --worker-class web_worker.BufferedGeventWorker --threads 32 ... wsgi:app``
(the Procfile's web command). Needs ``gevent`` (requirements.txt).
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import ssl
import tempfile
import time
from collections import deque
from http import HTTPStatus

import gevent
from gevent.hub import Waiter, get_hub, getcurrent
from gevent.local import local
from gunicorn.http.body import Body, ChunkedReader, LengthReader
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.ggevent import GeventWorker

TIMEOUT_SETTING = "WEB_REQUEST_TIMEOUT"
DEFAULT_TIMEOUT = 20.0
# Used when the app has no MAX_CONTENT_LENGTH of its own (config.py sets 25 MiB).
DEFAULT_MAX_BODY = 25 * 1024 * 1024
# A body up to this size stays in memory; a larger one goes to a temporary file.
SPOOL_IN_MEMORY = 1024 * 1024
READ_SIZE = 64 * 1024
# How long a new connection may wait before its first request begins (a client or router
# that opens one sends at once; idle connections cost a slot of ``--worker-connections``).
FIRST_REQUEST_IDLE = 2.0
# The problem code of each status gunicorn answers a request it could not read with
# (``handle_error``); each has its page (blueprints/api/problem_types.py).
ERROR_PAGE_CODES = {
    400: "bad_request",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_headers_too_large",
    500: "internal_error",
    501: "transfer_coding_not_supported",
}
# gunicorn's error page: its status line, and its message after the heading.
_ERROR_PAGE = re.compile(rb"^HTTP/1\.1 (\d{3}) .*?</h1>\s*(.*?)\s*</body>", re.S)


def request_timeout() -> float:
    """``WEB_REQUEST_TIMEOUT`` in seconds (a positive number), or the default."""
    value = os.environ.get(TIMEOUT_SETTING, "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"{TIMEOUT_SETTING}={value!r} is not a number of seconds") from None
    if not 0 < seconds < float("inf"):
        raise SystemExit(f"{TIMEOUT_SETTING}={value!r} must be a positive number of seconds")
    return seconds


class _Expired(Exception):
    """Thrown into a connection's greenlet when its client took too long to send."""


class _ClientSocket:
    """The client's socket, telling the request's timer when the first bytes of a request
    arrive. Everything but ``recv`` goes straight to the socket."""

    __slots__ = ("_sock", "sendall", "timer", "deadline", "requests")

    def __init__(self, sock):
        self._sock = sock
        self.sendall = sock.sendall  # every answer: spare it ``__getattr__``
        self.timer: _RequestTimer | None = None
        # When the request being read must have fully arrived (monotonic clock).
        self.deadline = 0.0
        self.requests = 0  # requests read on this connection so far

    def recv(self, size: int, *flags) -> bytes:
        data = self._sock.recv(size, *flags)
        timer = self.timer
        if timer is not None and data:
            timer.started()
        return data

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


class _RequestTimer:
    """Bounds gunicorn's wait for the next request's line and headers (what the worker's
    ``timeout_ctx`` returns): ``idle`` seconds until its first byte, then ``total`` seconds
    from that byte. When either runs out the wait ends without a request (gunicorn then
    closes the connection). One timer of the event loop, re-armed at the first byte
    (``gevent.Timeout`` objects cost ten times as much, and this runs for every request)."""

    __slots__ = ("sock", "idle", "total", "timer", "expired")

    def __init__(self, sock, idle: float, total: float):
        self.sock = sock
        self.idle = idle
        self.total = total
        self.timer = None
        self.expired = _Expired()

    def __enter__(self) -> _RequestTimer:
        loop = get_hub().loop
        if isinstance(self.sock, _ClientSocket):
            self.sock.timer = self
            self.sock.deadline = time.monotonic() + self.idle + self.total
            # Fires after ``idle`` seconds; ``again`` re-arms it for ``total``.
            self.timer = loop.timer(self.idle, self.total)
        else:  # a TLS socket is not wrapped: one bound for the whole request
            self.timer = loop.timer(self.total)
        self.timer.start(getcurrent().throw, self.expired)
        return self

    def started(self) -> None:
        """The first bytes of the request came: it has ``total`` seconds from now."""
        self.sock.timer = None
        self.sock.deadline = time.monotonic() + self.total
        self.timer.again(getcurrent().throw, self.expired)

    def __exit__(self, kind, value, traceback) -> bool:
        self.timer.close()
        if isinstance(self.sock, _ClientSocket):
            self.sock.timer = None
        return value is self.expired  # ours ran out: no request (others propagate)


class BufferedGeventWorker(GeventWorker):
    """gunicorn's gevent worker with bounded request reads (see the module's docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.request_timeout = request_timeout()
        self._max_body: int | None = None

    @classmethod
    def check_config(cls, cfg, log) -> None:
        request_timeout()  # a bad setting stops the master, not every worker in turn
        if not cfg.keepalive:
            log.warning(
                "--keep-alive 0: gunicorn then waits for a request's headers without a bound"
            )

    def init_process(self):
        self._connection = local()  # this greenlet's client socket (timeout_ctx has none)
        super().init_process()

    def run(self):
        # Requests read in full that wait for one of the app's greenlets, and the mailboxes
        # of the app's greenlets that wait for a request, the last one idle at the end: it
        # takes the next request (its Redis connection and stack are the warmest, and a
        # worker uses as few of them as it has requests at once).
        self._waiting: deque = deque()
        self._idle: list[Waiter] = []
        # The app's greenlets, and how many of them are parked (waiting for a queued run,
        # their place given to a greenlet started for it).
        self._greenlets = self._parked = 0
        for _ in range(max(self.cfg.threads, 1)):
            self._spawn_app_greenlet()
        from services import parking

        parking.install(self._park)
        super().run()

    def _spawn_app_greenlet(self) -> None:
        self._greenlets += 1
        gevent.spawn(self._serve_requests)

    @contextlib.contextmanager
    def _park(self):
        """The request of this app greenlet waits (``services.parking``): a new greenlet
        takes its place meanwhile; once the wait is over, this one finishes its request and
        the app has one greenlet too many, which ends after its request."""
        self._parked += 1
        self._spawn_app_greenlet()
        try:
            yield
        finally:
            self._parked -= 1

    def _serve_requests(self) -> None:
        """One of the app's long-lived greenlets: run the requests handed over, one by one.
        (Waiters woken from the event loop: ``AsyncResult`` cost three times as much.)"""
        loop = get_hub().loop
        while True:
            if self._greenlets - self._parked > max(self.cfg.threads, 1):
                self._greenlets -= 1  # a parked request's place was taken: this one ends
                return
            if self._waiting:
                args, waiter = self._waiting.popleft()
            else:
                mailbox = Waiter()
                self._idle.append(mailbox)
                args, waiter = mailbox.get()
            try:
                result = GeventWorker.handle_request(self, *args)
            except Exception as error:  # StopIteration and OSError included: gunicorn's
                loop.run_callback(waiter.throw, error)  # connection greenlet handles them
            else:
                loop.run_callback(waiter.switch, result)

    def _run_in_app_greenlet(self, *args):
        """Hand a request to an idle app greenlet (or queue it); return what gunicorn's
        ``handle_request`` returned there, or raise what it raised."""
        waiter = Waiter()
        if self._idle:
            get_hub().loop.run_callback(self._idle.pop().switch, (args, waiter))
        else:
            self._waiting.append((args, waiter))
        return waiter.get()

    def handle(self, listener, client, addr):
        if not isinstance(client, ssl.SSLSocket):
            client = _ClientSocket(client)
        self._connection.sock = client
        super().handle(listener, client, addr)

    def timeout_ctx(self):
        # gunicorn enters it around each wait for a request line and headers.
        sock, idle = self._connection.sock, self.cfg.keepalive
        if not getattr(sock, "requests", 1):
            idle = min(idle, FIRST_REQUEST_IDLE)
        return _RequestTimer(sock, idle, self.request_timeout)

    def max_body(self) -> int:
        """The app's ``MAX_CONTENT_LENGTH`` (bodies larger than that are refused anyway)."""
        if self._max_body is None:
            config = getattr(self.wsgi, "config", None) or {}
            self._max_body = int(config.get("MAX_CONTENT_LENGTH") or DEFAULT_MAX_BODY)
        return self._max_body

    def handle_request(self, listener_name, req, sock, addr):
        if isinstance(sock, _ClientSocket):
            sock.requests += 1
        reader = getattr(req.body, "reader", None)
        length = reader.length if isinstance(reader, LengthReader) else None
        if length or isinstance(reader, ChunkedReader):
            if length is not None and length > self.max_body():
                req.force_close()  # the app answers 413; its body is not read
            else:
                deadline = getattr(sock, "deadline", 0.0) or time.monotonic() + self.request_timeout
                req.body, size = self._read_body(req, sock, length, deadline)
                if length is None:
                    # Read whole, a chunked body is handed on as one of declared length: the
                    # app bounds it as it bounds any other (413 past an endpoint's limit).
                    req.headers = [
                        (name, value)
                        for name, value in req.headers
                        if name not in ("TRANSFER-ENCODING", "CONTENT-LENGTH")
                    ]
                    req.headers.append(("CONTENT-LENGTH", str(size)))
        return self._run_in_app_greenlet(listener_name, req, sock, addr)

    def handle_error(self, req, client, addr, exc):
        """gunicorn's answer to a request it could not read (or that failed outside the
        app), as a problem document: gunicorn logs it and picks the status and message, on
        a stand-in for the client; the client gets them as ``application/problem+json``."""
        page = _ErrorPage()
        super().handle_error(req, page, addr, exc)
        req = req or getattr(exc, "req", None)  # a header gunicorn refused: the request so far
        found = _ERROR_PAGE.match(page.data)
        status = int(found[1]) if found else 500
        if status not in ERROR_PAGE_CODES:  # one a later gunicorn may answer
            status = 400 if status < 500 else 500
        detail = html.unescape(found[2].decode("latin-1")) if found else ""
        if not detail:  # gunicorn says nothing of a failure of its own (500)
            detail = (
                "The request could not be read as HTTP."
                if status < 500
                else "The server failed to answer this request."
            )
        answer = _problem_answer(status, ERROR_PAGE_CODES[status], detail, self._base_url(),
                                 _header(req, "X-REQUEST-ID"))  # fmt: skip
        with gevent.Timeout(1, False), contextlib.suppress(OSError):  # the client went away
            client.sendall(answer)

    def _base_url(self) -> str:
        """This service's address as the app writes it (for a problem's type URI): its
        ``PUBLIC_BASE_URL``, never the request's Host (another app: none, the URI is then
        relative)."""
        config = getattr(self.wsgi, "config", None) or {}
        return config.get("PUBLIC_BASE_URL") or ""

    def _read_body(self, req, sock, length: int | None, deadline: float) -> tuple[Body, int]:
        """The whole body and its size, read by ``deadline`` (else 408 and the connection
        closed)."""
        if req._expected_100_continue:
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            req._expected_100_continue = False  # gunicorn would send it again
        if length is not None and length <= SPOOL_IN_MEMORY:
            spool = io.BytesIO()
        else:
            # It outlives this call: it becomes the request's body (freed with the request).
            spool = tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY, dir=self.cfg.tmp_upload_dir)  # noqa: SIM115
        limit, size = self.max_body(), 0
        timer, expired = get_hub().loop.timer(max(deadline - time.monotonic(), 0.001)), _Expired()
        timer.start(getcurrent().throw, expired)
        try:
            while chunk := req.body.read(READ_SIZE):
                size += len(chunk)
                if size > limit:  # chunked, and longer than the app takes
                    spool.close()
                    _answer_and_close(
                        sock, 413, "payload_too_large", f"The body is larger than {limit} bytes.",
                        self._base_url(), _header(req, "X-REQUEST-ID"),
                    )  # fmt: skip
                spool.write(chunk)
        except _Expired as error:
            if error is not expired:
                raise
            spool.close()
            self.log.info("%s %s: the body did not arrive within %g s; connection closed",
                          req.method, req.path, self.request_timeout)  # fmt: skip
            _answer_and_close(
                sock, 408, "request_timeout",
                f"The request was not received in full within {self.request_timeout:g} s.",
                self._base_url(), _header(req, "X-REQUEST-ID"),
            )  # fmt: skip
        finally:
            timer.close()
        if length is not None and size < length:
            spool.close()
            raise NoMoreData(b"")  # the client went away mid-body: gunicorn closes quietly
        spool.seek(0)
        return Body(spool), size


class _ErrorPage:
    """Stands in for the client while gunicorn writes its error page; keeps what it wrote."""

    def __init__(self):
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0  # gunicorn then writes with one ``sendall``

    def sendall(self, data: bytes) -> None:
        self.data += data


def _header(req, name: str) -> str | None:
    """The request's header ``name`` (upper case, as gunicorn keeps them), or None; also
    when gunicorn could not read the request far enough to have it."""
    return next((value for key, value in getattr(req, "headers", None) or () if key == name), None)


def _answer_and_close(
    sock, status: int, code: str, detail: str, base_url: str, request_id: str | None
):
    """Answer ``status`` with a problem document as the app writes them (best effort, one
    second at most), then end the connection (gunicorn closes it on StopIteration)."""
    with gevent.Timeout(1, False):
        sock.sendall(_problem_answer(status, code, detail, base_url, request_id))
    raise StopIteration


def _problem_answer(
    status: int, code: str, detail: str, base_url: str, request_id: str | None
) -> bytes:
    """A whole HTTP answer that closes the connection: ``status`` with a problem document
    as the app writes them, and its request id (the caller's ``X-Request-Id`` when the app
    would take it: ``request_id``)."""
    try:
        from app import request_id_for
        from blueprints.api.problems import problem_type_uri
    except ImportError:  # another app than this project's

        def problem_type_uri(code: str, base_url: str) -> str:
            return "about:blank"

        def request_id_for(incoming: str | None) -> str:
            return os.urandom(16).hex()

    reason = HTTPStatus(status).phrase
    request_id = request_id_for(request_id)
    document = {
        "code": code,
        "detail": detail,
        "request_id": request_id,
        "status": status,
        "title": reason,
        "type": problem_type_uri(code, base_url),
    }
    body = json.dumps(document, separators=(",", ":")).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/problem+json\r\nContent-Length: {len(body)}\r\n"
        f"X-Request-Id: {request_id}\r\n\r\n"
    )
    return head.encode() + body
