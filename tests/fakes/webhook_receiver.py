"""A webhook receiver for tests: a threaded HTTP server on 127.0.0.1 that records every
request and answers as told.

``Receiver()`` starts serving (``stop()`` / ``start()`` take it down and bring it back on
the same port, so a sender meets a refused connection in between). ``answer(...)`` scripts
the next answers, each a ``Reply`` (status, headers, a delay before answering, a body);
once the script is spent every request gets ``default``. ``requests`` holds what arrived
(``Received``: path, headers with lower-case names, body, arrival time); ``by_id()`` is what
a receiver that deduplicates by ``webhook-id`` would have processed.
"""

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 204
    headers: dict = field(default_factory=dict)
    delay: float = 0
    body: bytes = b""


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict
    body: bytes
    at: float  # time.monotonic() on arrival


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        receiver: Receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = receiver._next_reply()
        receiver.requests.append(Received(self.path, headers, body, time.monotonic()))
        time.sleep(reply.delay)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the sender gave up waiting, as it should past its timeout

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass


class Receiver:
    def __init__(self, default: Reply | None = None):
        self.default = default or Reply()
        self.requests: list[Received] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.port = 0
        self._server = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def answer(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def start(self) -> None:
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.receiver = self
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, seconds: float = 10) -> list[Received]:
        deadline = time.monotonic() + seconds
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.requests

    def by_id(self) -> dict[str, Received]:
        """The first request of each ``webhook-id``: what a deduplicating receiver keeps."""
        kept: dict[str, Received] = {}
        for received in self.requests:
            kept.setdefault(received.headers["webhook-id"], received)
        return kept
