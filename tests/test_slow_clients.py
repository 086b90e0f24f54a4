"""Slow and idle clients cannot starve the Procfile's web command (issue 13), and what it
cannot read as HTTP is answered with a problem document.

The real web command runs (read from the Procfile by ``bench/harness.py``, bound to a
loopback port) on the test database and Redis, with ``WEB_REQUEST_TIMEOUT`` shortened so
that the bound on a half-sent request can be seen within the test.
"""

import contextlib
import json
import re
import socket
import time

import pytest

from bench import faults, harness
from tests.helpers import deployment_env, free_port, needs_pg, needs_redis

# Limits that never refuse the test's few hundred requests.
UNLIMITED = {"per_minute_override": 1_000_000, "daily_override": 1_000_000}
REQUEST_TIMEOUT = 3  # seconds (WEB_REQUEST_TIMEOUT; the Procfile's default is 20)
# How much later than the bound a busy machine may close a connection.
SLACK = 1.5


@pytest.fixture
def web(app, tmp_path):
    """The Procfile's web command on a loopback port; yields the port."""
    with web_command(tmp_path, WEB_REQUEST_TIMEOUT=str(REQUEST_TIMEOUT)) as server:
        yield server.port


@contextlib.contextmanager
def web_command(folder, **settings: str):
    """The Procfile's web command on a loopback port, started (``bench/harness.py``'s
    ``WebServer``), with the deployment's environment and ``settings``; stopped after."""
    port = free_port()
    env = {**deployment_env(), "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}", **settings}
    args = harness.loopback_web_args(harness.procfile_command("web"), env, port)
    server = harness.WebServer(args, env, port, folder / "web.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def warm_up(port: int, raw: str) -> None:
    """Every worker has answered each kind of request once (the first loads the catalogue)."""
    latencies = faults.send_normal_requests(port, raw, 1.0, clients=2, timeout=10)
    assert latencies.failures == []


def exchange(port: int, data: bytes, *, until: bytes = b"", timeout: float = 5) -> bytes:
    """Send ``data`` on a new connection; read until the server closes it or ``until``
    has been read (or ``timeout`` passed)."""
    received = b""
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        while time.monotonic() < deadline and not (until and until in received):
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
    return received


@needs_pg
@needs_redis
def test_normal_requests_are_answered_while_slow_clients_hold_connections(web, make_key):
    raw = make_key("agency", **UNLIMITED)
    warm_up(web, raw)
    attacks = [
        faults.SlowClients(web, 16, faults.HALF_HEADERS),
        faults.SlowClients(web, 16, faults.HALF_BODY),
        faults.SlowClients(web, 32, b""),
    ]
    try:
        for attack in attacks:
            attack.start()
        # The 64 connections are kept open (reopened when closed) all along.
        latencies = faults.send_normal_requests(web, raw, 4.0, clients=2, timeout=5)
        for attack in attacks:
            attack.stop_reopening()
        for attack in attacks:
            attack.wait_closed(REQUEST_TIMEOUT + SLACK + 1)
    finally:
        for attack in attacks:
            attack.stop()

    assert latencies.total >= 12
    assert latencies.failures == []
    assert max(latencies.seconds) < 1.0, sorted(latencies.seconds)[-5:]
    half_sent = attacks[0].closed_after + attacks[1].closed_after
    assert None not in half_sent, half_sent
    # Closed once the bound had passed, not before it, and not long after it.
    assert min(half_sent) >= REQUEST_TIMEOUT - 0.5, half_sent
    assert max(half_sent) <= REQUEST_TIMEOUT + SLACK, half_sent
    # A request whose body stopped halfway is told so; idle connections are closed too.
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in attacks[1].first_bytes)
    assert None not in attacks[2].closed_after


@needs_pg
@needs_redis
def test_a_body_is_read_in_full_before_the_app_sees_it(web, make_key):
    """Chunked bodies, ``Expect: 100-continue`` and a body sent in pieces within the bound
    reach the app whole; a body announced larger than the app takes is refused unread."""
    raw = make_key("agency", **UNLIMITED)
    body = json.dumps({"slug": "word-counter", "input": "one two three"}).encode()
    head = (
        f"POST /v1/tools/run HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-API-Key: {raw}\r\n"
        "Content-Type: application/json\r\nConnection: close\r\n"
    ).encode()

    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
    chunked += b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:]))
    answer = exchange(web, chunked + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b'"words":3' in answer

    with socket.create_connection(("127.0.0.1", web), timeout=5) as sock:
        sock.sendall(head + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        for byte in range(0, len(body), 8):  # in pieces, well within the bound
            sock.sendall(body[byte : byte + 8])
            time.sleep(0.05)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b"100 Continue" not in answer and b'"words":3' in answer

    too_large = head + b"Content-Length: %d\r\n\r\n" % (100 * 1024 * 1024) + b"{"
    answer = exchange(web, too_large)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]


@needs_pg
@needs_redis
def test_a_chunked_body_is_bounded_as_one_of_declared_length(web, make_key):
    """5 MiB of chunked JSON for a text tool is a 413 naming the text limit (it was parsed,
    and refused as 422 on a field's length); over the worker's 25 MiB it is cut there."""
    raw = make_key("agency", **UNLIMITED)
    head = (
        f"POST /v1/tools/run HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-API-Key: {raw}\r\n"
        "Content-Type: application/json\r\nConnection: close\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    body = b'{"slug": "word-counter", "input": "' + b"a" * (5 * 1024 * 1024) + b'"}'
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(part), part)
        for part in (body[start : start + 65536] for start in range(0, len(body), 65536))
    )
    answer = exchange(web, head + chunks + b"0\r\n\r\n", timeout=15)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b'"code":"payload_too_large"' in answer and b"1 MiB" in answer


@needs_pg
@needs_redis
def test_waiting_for_queued_runs_holds_no_connection_of_others(web, make_key):
    """Requests waiting for their queued runs (no worker runs them here) leave the web
    command answering others at once."""
    raw = make_key("agency", **UNLIMITED)
    warm_up(web, raw)
    run = json.dumps({"slug": "abstractive-summarizer", "input": "A text to summarize."})
    request = (
        f"POST /v1/tools/run HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-API-Key: {raw}\r\n"
        f"Content-Type: application/json\r\nPrefer: wait=4\r\nConnection: close\r\n"
        f"Content-Length: {len(run)}\r\n\r\n{run}"
    ).encode()
    waiting = [socket.create_connection(("127.0.0.1", web), timeout=10) for _ in range(24)]
    try:
        for sock in waiting:
            sock.sendall(request)
        time.sleep(0.5)
        latencies = faults.send_normal_requests(web, raw, 2.0, clients=2, timeout=5)
        answers = []
        for sock in waiting:
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            answers.append(answer)
    finally:
        for sock in waiting:
            sock.close()
    assert latencies.failures == []
    assert max(latencies.seconds) < 1.0, sorted(latencies.seconds)[-5:]
    assert all(answer.startswith(b"HTTP/1.1 202 ") for answer in answers), answers[0][:300]


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP/1.1 answer with a ``Content-Length``: its head and body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {received!r}"
        received += chunk
    head, body = received.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed mid-body"
        body += chunk
    return head, body


@needs_pg
@needs_redis
def test_a_connection_reused_after_an_idle_pause_is_answered_on_the_same_socket(web, make_key):
    """The keep-alive outlasts the idle times of clients and routers (65 s): a client that
    polls every few seconds on one connection never races its close (gunicorn's default of
    2 s closed it as a poll every 2 s reused it: ``Server disconnected``)."""
    raw = make_key("agency", **UNLIMITED)
    request = (
        f"GET /v1/public/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-API-Key: {raw}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", web), timeout=10) as sock:
        for pause in (0, 3.2, 2.0):
            time.sleep(pause)
            sock.sendall(request)
            head, body = read_response(sock)
            assert head.startswith(b"HTTP/1.1 200 "), head
            assert json.loads(body)["key"]["sandbox"] is False


@needs_pg
@needs_redis
def test_a_new_connection_that_sends_nothing_is_closed_soon(web):
    """Only between requests may a connection idle that long: one that never starts its
    first request is closed after 2 s (it holds one of the worker's connections)."""
    started = time.monotonic()
    assert exchange(web, b"", timeout=10) == b""
    assert 1.5 <= time.monotonic() - started <= 2 + SLACK


@needs_pg
@needs_redis
@pytest.mark.parametrize(
    ("request_bytes", "status", "code", "said"),
    [
        (b"GARBAGE\r\n\r\n", 400, "bad_request", "Invalid Request Line"),
        (b"GET /v1/tools HTTP/9.9\r\nHost: x\r\n\r\n", 400, "bad_request", "HTTP Version"),
        (b"GET /v1/tools HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, "bad_request",
         "Invalid HTTP Header: 'Bad Header'"),
        (b"POST /v1/tools/run HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
         b"Content-Length: 7\r\n\r\n12345", 400, "bad_request", "CONTENT-LENGTH"),
        (b"POST /v1/tools/run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"ZZ\r\nabc\r\n0\r\n\r\n", 400, "bad_request", "Invalid chunk size"),
        (b"POST /v1/tools/run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br\r\n\r\n", 501,
         "transfer_coding_not_supported", "br"),
        (b"POST /v1/tools/run HTTP/1.1\r\nHost: x\r\nExpect: magic\r\nContent-Length: 2\r\n"
         b"\r\n{}", 417, "expectation_failed", "magic"),
        (b"GET /v1/tools?" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long",
         "Request Line is too large"),
        (b"GET /v1/tools HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n", 431,
         "request_headers_too_large", "Error parsing headers"),
    ],
    ids=["request-line", "version", "header", "two-lengths", "chunk", "coding", "expect",
         "long-line", "long-header"],
)  # fmt: skip
def test_what_gunicorn_cannot_read_is_answered_with_a_problem_document(
    web, request_bytes, status, code, said
):
    """gunicorn's own refusals, before the app is called, are problem documents as the
    app's are (they were HTML pages), each with its code's page."""
    answer = exchange(web, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer[:300]
    assert b"\r\nContent-Type: application/problem+json\r\n" in head + b"\r\n"
    assert b"\r\nConnection: close\r\n" in head + b"\r\n"
    problem = json.loads(body)
    assert problem["status"] == status and problem["code"] == code
    assert said in problem["detail"]
    assert re.fullmatch(r"[0-9a-f]{32}", problem["request_id"])
    assert f"\r\nX-Request-Id: {problem['request_id']}\r\n".encode() in head + b"\r\n"
    path = f"/docs/problems/{code.replace('_', '-')}"
    assert problem["type"] == f"http://127.0.0.1:{web}{path}"
    page = exchange(
        web, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    )
    assert page.startswith(b"HTTP/1.1 200 "), page[:300]


@needs_pg
@needs_redis
def test_a_refusal_before_the_app_keeps_the_callers_request_id(web):
    """As the app does, the caller's X-Request-Id names an answer the app never saw when it
    is one the app would take: gunicorn's (a bad chunk) and the worker's (a body that did
    not arrive in time)."""
    head = (
        b"POST /v1/tools/run HTTP/1.1\r\nHost: x\r\nX-Request-Id: trace-7.a_b\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    for body, code in ((b"ZZ\r\nabc\r\n0\r\n\r\n", "bad_request"), (b"10\r\n{", "request_timeout")):
        answer = exchange(web, head + body, timeout=REQUEST_TIMEOUT + 5)
        problem = json.loads(answer.partition(b"\r\n\r\n")[2])
        assert problem["code"] == code, answer[:300]
        assert problem["request_id"] == "trace-7.a_b"
        assert b"\r\nX-Request-Id: trace-7.a_b\r\n" in answer
