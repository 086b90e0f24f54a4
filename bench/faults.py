"""Fault runs against the product as it is deployed: one subcommand per fault (issue 13).

    .venv/bin/python bench/faults.py kill-web|pg-crash [--duration 10] [--clients 16]
    .venv/bin/python bench/faults.py redis-loss [--limit 5]

are described in ``bench/faults_records.py``.

    .venv/bin/python bench/faults.py slow-clients [--with-gthread] [--database-url URL]
        [--redis-url URL] [--half-sent 32] [--idle 32] [--duration 10] [--clients 2]

``slow-clients``: starts the Procfile's ``web`` command (its ``${VAR:-default}`` filled from
the environment, bound to a free loopback port) on the embedded default (a SQLite file in a
temporary directory, no Redis) or on ``--database-url``/``--redis-url`` (default: the
environment's ``DATABASE_URL``/``REDIS_URL``; one account and key are added there with the
operator commands). It then keeps 32 connections that sent half a request (half of them
stopped inside the headers, half inside the body) and 32 that sent nothing open for
``--duration`` seconds (one the server closes is opened again), and meanwhile sends normal
requests, each on a new connection: ``GET /v1/health``, ``GET /v1/public/whoami`` and an
inline ``POST /v1/tools/run``, in turn. It prints how many were answered (2xx within
``--request-timeout``) and their p50/p99, and how long the server took to close the
half-sent and the idle connections. ``--with-gthread`` does the same with the web command
this Procfile had before (gunicorn's gthread worker), for comparison. Results also go to
``bench/results/faults-slow-clients.json``.

Only loopback addresses are used; every loop is bounded by time. Exit status: 0 when the
Procfile's command met the goal (every normal request answered, p99 under 1 s, every
half-sent connection closed within ``WEB_REQUEST_TIMEOUT`` plus a second), 1 when not, 2
when setup failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shlex
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench import faults_chaos, faults_records  # noqa: E402
from bench.harness import (  # noqa: E402
    LOOPBACK,
    RESULTS_DIR,
    ROOT,
    SAMPLE_TEXT,
    SetupFailed,
    WebServer,
    add_service_options,
    fetch,
    free_port,
    loopback_web_args,
    percentile,
    procfile_command,
    product_env,
    report_header,
)

# The web command of the Procfile before issue 13 (2 gthread workers x 4 threads).
GTHREAD_WEB_COMMAND = (
    "gunicorn --workers ${WEB_CONCURRENCY:-2} --worker-class gthread --threads "
    "${WEB_THREADS:-4} --timeout 75 --bind 0.0.0.0:${PORT:-5000} wsgi:app"
)
# What a client that stops halfway has sent: inside the headers, or inside the body.
HALF_HEADERS = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow-cli"
HALF_BODY = (
    b"POST /v1/tools/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b'Content-Length: 1000\r\n\r\n{"slug": "word-counter", "input": "half a bo'
)
# The goal (issue 13): normal requests keep a p99 under this while the clients are slow.
GOAL_P99_S = 1.0


# --------------------------------------------------------------------------- clients


def normal_requests(raw_key: str) -> list[tuple[str, str, dict, bytes]]:
    """What an ordinary client asks, in turn: health, whoami and an inline tool run."""
    auth = {"X-SVC-API-Key": raw_key}
    run = json.dumps({"slug": "word-counter", "input": SAMPLE_TEXT}).encode()
    return [
        ("GET", "/v1/health", {}, b""),
        ("GET", "/v1/public/whoami", auth, b""),
        ("POST", "/v1/tools/run", {**auth, "Content-Type": "application/json"}, run),
    ]


@dataclass
class Latencies:
    """Normal requests sent during an attack: each one's seconds, and which were answered."""

    seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def total(self) -> int:
        return len(self.seconds)

    @property
    def answered(self) -> int:
        return self.total - len(self.failures)

    def percentile(self, p: float) -> float:
        """Nearest rank over every request (an unanswered one counts as its timeout)."""
        return percentile(self.seconds, p)


def send_normal_requests(port: int, raw_key: str, seconds: float, clients: int = 2,
                         timeout: float = 5) -> Latencies:  # fmt: skip
    """``clients`` threads sending normal requests one after the other for ``seconds``."""
    found = Latencies()
    deadline = time.monotonic() + seconds
    requests = normal_requests(raw_key)

    def client(offset: int) -> None:
        turn = offset
        while time.monotonic() < deadline:
            method, path, headers, body = requests[turn % len(requests)]
            turn += 1
            began = time.monotonic()
            try:
                status = fetch(port, method, path, headers, body, timeout=timeout).status
                failure = None if 200 <= status < 300 else f"{method} {path}: {status}"
            except (OSError, http.client.HTTPException) as error:
                failure = f"{method} {path}: {type(error).__name__} {error}"
            took = time.monotonic() - began
            with found.lock:
                found.seconds.append(took)
                if failure:
                    found.failures.append(failure)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + timeout + 5)
    return found


class SlowClients:
    """``count`` connections that each send ``payload`` (half a request, or nothing) and then
    wait for the server to close them, kept open until ``stop_reopening``: one the server
    closes is opened again. ``closed_after`` holds, for the connections opened at the
    start, the seconds the server took to close each (None: not closed)."""

    def __init__(self, port: int, count: int, payload: bytes):
        self.port, self.count, self.payload = port, count, payload
        self.closed_after: list[float | None] = [None] * count
        self.first_bytes: list[bytes] = [b""] * count
        self.refused = 0
        self._reopen = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._opened = threading.Barrier(count + 1)

    def start(self, timeout: float = 10) -> SlowClients:
        """Open the connections; return once each has sent its payload."""
        self._reopen.set()
        self._threads = [
            threading.Thread(target=self._hold, args=(i,), daemon=True) for i in range(self.count)
        ]
        for thread in self._threads:
            thread.start()
        with contextlib.suppress(threading.BrokenBarrierError):
            self._opened.wait(timeout)
        return self

    def _connect(self) -> socket.socket | None:
        try:
            sock = socket.create_connection((LOOPBACK, self.port), timeout=2)
            if self.payload:
                sock.sendall(self.payload)
            sock.settimeout(0.25)
            return sock
        except OSError:
            self.refused += 1
            return None

    def _hold(self, index: int) -> None:
        first = True
        while not self._stop.is_set():
            sock = self._connect()
            opened = time.monotonic()
            if first:
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._opened.wait(10)
            if sock is None:
                self._stop.wait(0.1)
                continue
            with sock:
                closed = self._wait_for_close(sock, index if first else None)
            if first and closed:
                self.closed_after[index] = time.monotonic() - opened
            first = False
            if not self._reopen.is_set():
                return

    def _wait_for_close(self, sock: socket.socket, index: int | None) -> bool:
        """Read until the server closes the connection (True) or we stop (False)."""
        while not self._stop.is_set():
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:  # reset: closed too
                return True
            if not data:
                return True
            if index is not None and not self.first_bytes[index]:
                self.first_bytes[index] = data[:64]
        return False

    def stop_reopening(self) -> None:
        self._reopen.clear()

    def wait_closed(self, seconds: float) -> None:
        """Wait (at most ``seconds``) until the server has closed every first connection."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and None in self.closed_after:
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(2)


# --------------------------------------------------------------------------- slow-clients


@dataclass
class SlowClientsResult:
    command: str
    requests_total: int
    requests_answered: int
    p50_ms: float
    p99_ms: float
    failures: list[str]
    half_sent_closed_s: list[float | None]
    half_sent_408: int
    idle_closed_s: list[float | None]
    refused_connections: int
    met_goal: bool | None = None


def run_slow_clients(command: str, env: dict, port: int, raw_key: str, args,
                     log_path: Path) -> SlowClientsResult:  # fmt: skip
    """Start ``command``, attack it with slow clients while sending normal requests."""
    """Start ``command``, attack it with slow clients while sending normal requests."""
    server = WebServer(loopback_web_args(command, env, port), env, port, log_path).start()
    half_headers = half_body = idle = None
    try:
        send_normal_requests(port, raw_key, 1.0, clients=1)  # warm up
        half = args.half_sent
        half_headers = SlowClients(port, half - half // 2, HALF_HEADERS).start()
        half_body = SlowClients(port, half // 2, HALF_BODY).start()
        idle = SlowClients(port, args.idle, b"").start()
        latencies = send_normal_requests(
            port, raw_key, args.duration, clients=args.clients, timeout=args.request_timeout
        )
        for attack in (half_headers, half_body, idle):
            attack.stop_reopening()
        for attack in (half_headers, half_body, idle):
            attack.wait_closed(args.close_wait)
    finally:
        for attack in (half_headers, half_body, idle):
            if attack is not None:
                attack.stop()
        server.stop()
    half_sent = half_headers.closed_after + half_body.closed_after
    answers = half_headers.first_bytes + half_body.first_bytes
    return SlowClientsResult(
        command=shlex.join(server.args),
        requests_total=latencies.total,
        requests_answered=latencies.answered,
        p50_ms=round(latencies.percentile(50) * 1000, 1),
        p99_ms=round(latencies.percentile(99) * 1000, 1),
        failures=latencies.failures[:20],
        half_sent_closed_s=[None if s is None else round(s, 2) for s in half_sent],
        half_sent_408=sum(1 for answer in answers if answer.startswith(b"HTTP/1.1 408")),
        idle_closed_s=[None if s is None else round(s, 2) for s in idle.closed_after],
        refused_connections=half_headers.refused + half_body.refused + idle.refused,
    )


def closing_summary(closed: list[float | None], waited: float) -> str:
    done = [s for s in closed if s is not None]
    if not done:
        return f"none of {len(closed)} closed within {waited:g} s"
    spread = f"min {min(done):.1f} s, median {statistics.median(done):.1f} s, max {max(done):.1f} s"
    return f"{spread} ({len(done)} of {len(closed)} closed within {waited:g} s)"


def print_slow_clients(label: str, result: SlowClientsResult, args) -> None:
    print(f"\n{label}: {result.command}")
    print(
        f"  normal requests: {result.requests_answered}/{result.requests_total} answered "
        f"(2xx within {args.request_timeout:g} s); p50 {result.p50_ms:.1f} ms, "
        f"p99 {result.p99_ms:.1f} ms"
    )
    wait = args.duration + args.close_wait
    half_sent = closing_summary(result.half_sent_closed_s, wait)
    print(f"  half-sent connections closed by the server: {half_sent}; 408: {result.half_sent_408}")
    print(f"  idle connections closed by the server: {closing_summary(result.idle_closed_s, wait)}")
    if result.refused_connections:
        print(f"  slow-client connections refused: {result.refused_connections}")
    for failure in result.failures[:5]:
        print(f"  failed: {failure}")
    if result.met_goal is not None:
        print(f"  goal: {'PASS' if result.met_goal else 'MISSED'}")


def slow_clients(args) -> int:
    """The ``slow-clients`` subcommand."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    bound = float(os.environ.get("WEB_REQUEST_TIMEOUT") or 20)
    args.close_wait = args.close_wait if args.close_wait is not None else bound + 5
    commands = [("Procfile web command", procfile_command("web"))]
    if args.with_gthread:
        commands.append(("gthread web command (before issue 13)", GTHREAD_WEB_COMMAND))
    with tempfile.TemporaryDirectory(prefix="faults-") as scratch:
        database_url = args.database_url or f"sqlite:///{scratch}/faults.db"
        setup_env = product_env(database_url, args.redis_url)
        try:
            raw_key = faults_records.new_key(setup_env)
        except SetupFailed as failed:
            print(f"SETUP FAILED:\n{failed}", file=sys.stderr)
            return 2
        where = (
            "embedded default (SQLite, no Redis)"
            if not args.database_url
            else (f"{args.database_url} / {args.redis_url or 'no Redis'}")
        )
        print(
            f"slow-clients on {where}: {args.half_sent} half-sent + {args.idle} idle "
            f"connections for {args.duration:g} s, normal requests from {args.clients} clients"
        )
        results = {}
        for label, command in commands:
            port = free_port()
            env = product_env(database_url, args.redis_url, port)
            log_path = RESULTS_DIR / f"faults-slow-clients-{len(results)}.log"
            try:
                result = run_slow_clients(command, env, port, raw_key, args, log_path)
            except SetupFailed as failed:
                print(f"SETUP FAILED:\n{failed}", file=sys.stderr)
                return 2
            if command is commands[0][1]:
                closed = [s for s in result.half_sent_closed_s if s is not None]
                result.met_goal = (
                    result.requests_total > 0
                    and result.requests_answered == result.requests_total
                    and result.p99_ms < GOAL_P99_S * 1000
                    and len(closed) == len(result.half_sent_closed_s)
                    and max(closed, default=0) <= bound + 1
                )
            print_slow_clients(label, result, args)
            results[label] = result
    report = {
        **report_header(),
        "database": "embedded" if not args.database_url else "given",
        "redis": bool(args.redis_url),
        "web_request_timeout_s": bound,
        "options": {k: v for k, v in vars(args).items() if k != "func"},
        "results": {label: asdict(result) for label, result in results.items()},
    }
    out = RESULTS_DIR / "faults-slow-clients.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nresults: {out.relative_to(ROOT)}")
    return 0 if results[commands[0][0]].met_goal else 1


# --------------------------------------------------------------------------- the CLI


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    slow = commands.add_parser("slow-clients", help="half-sent and idle connections")
    slow.set_defaults(func=slow_clients)
    add_service_options(
        slow, os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL"),
        database_help="default: $DATABASE_URL, else a SQLite file (embedded default)",
        redis_help="default: $REDIS_URL, else none",
    )  # fmt: skip
    slow.add_argument("--half-sent", type=int, default=32, help="connections sending half")
    slow.add_argument("--idle", type=int, default=32, help="connections sending nothing")
    slow.add_argument("--duration", type=float, default=10, help="seconds of normal requests")
    slow.add_argument("--clients", type=int, default=2, help="threads sending normal requests")
    slow.add_argument(
        "--request-timeout",
        type=float,
        default=5,
        help="a normal request not answered in this many seconds failed",
    )
    slow.add_argument(
        "--close-wait",
        type=float,
        default=None,
        help="seconds to wait, after the normal requests, for the server to close "
        "the slow connections (default: WEB_REQUEST_TIMEOUT + 5)",
    )
    slow.add_argument(
        "--with-gthread",
        action="store_true",
        help="also measure the gthread web command of before, for comparison",
    )
    faults_records.add_commands(commands)  # the faults of what is recorded and counted
    faults_chaos.add_commands(commands)  # the mixed load under a rotation of faults
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
