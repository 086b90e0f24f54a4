"""What ``bench/api_overhead.py`` looks at beside the speed of its targets: the round trips
a product request makes (the Redis commands it sends, ``MONITOR``; the SQL transactions and
rows, ``pg_stat_database``) and, with ``--profile``, where a worker's request time goes
(py-spy's stacks of the busiest worker, summed by component and by the project's functions).
Neither is a measurement of speed: MONITOR slows Redis down, and py-spy the worker.
"""

from __future__ import annotations

import argparse
import http.client
import re
import socket
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench.harness import ROOT, admin_url, cpu_ticks, database_name
from bench.loadgen import Request

# --------------------------------------------------------------------------- round trips


class RedisMonitor:
    """Counts the commands clients send to the Redis db of ``redis_url`` (MONITOR on a raw
    socket, in a thread).

    Commands that Lua scripts run are left out: they are not round trips.
    """

    def __init__(self, redis_url: str):
        self.counts: dict[str, int] = {}
        self.stopping = threading.Event()
        where = urlsplit(redis_url)
        self.db = int(where.path.strip("/") or 0)
        self.sock = socket.create_connection(
            (where.hostname or "127.0.0.1", where.port or 6379), timeout=0.2
        )
        self.sock.sendall(b"MONITOR\r\n")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        buffer = b""
        while not self.stopping.is_set():
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\r\n")
            for line in lines:
                found = re.match(rb'\+[\d.]+ \[(\d+) (?!lua)[^\]]*\] "([^"]+)"', line)
                if found and int(found.group(1)) == self.db:
                    name = found.group(2).decode().upper()
                    self.counts[name] = self.counts.get(name, 0) + 1

    def stop(self) -> dict[str, int]:
        """Stop listening; return the command counts."""
        time.sleep(0.3)  # let the last replies arrive
        self.stopping.set()
        self.thread.join(timeout=2)
        self.sock.close()
        return self.counts


PG_STATS_DELAY = 11  # seconds: PGSTAT_IDLE_INTERVAL (10 s) plus a margin


def postgres_counters(database_url: str) -> dict[str, int]:
    """Cumulative transaction and row counters of the bench database (read from the
    server's ``postgres`` database, so that reading them counts in none)."""
    import psycopg

    columns = ("xact_commit", "xact_rollback", "tup_fetched", "tup_inserted", "tup_updated")
    with psycopg.connect(admin_url(database_url), autocommit=True) as conn:
        row = conn.execute(
            f"SELECT {', '.join(columns)} FROM pg_stat_database WHERE datname = %s",
            (database_name(database_url),),
        ).fetchone()
    return dict(zip(columns, row, strict=True))


def probe_round_trips(port: int, request: Request, args, count: int = 200) -> dict:
    """Send ``count`` requests one by one and count the Redis commands and SQL work per request.

    Not a measurement of speed: MONITOR slows Redis down. A PostgreSQL backend that goes idle
    publishes its statistics to ``pg_stat_database`` up to 10 s later (PostgreSQL 15+), hence
    the pauses before reading them.
    """
    time.sleep(PG_STATS_DELAY)
    sql_before = postgres_counters(args.database_url)
    monitor = RedisMonitor(args.redis_url)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = request.body.encode() if request.body else None
    try:
        for _ in range(count):
            conn.request(request.method, request.path, body=body, headers=request.headers)
            conn.getresponse().read()
    finally:
        conn.close()
        redis_counts = monitor.stop()
    time.sleep(PG_STATS_DELAY)
    sql_after = postgres_counters(args.database_url)
    return {
        "requests": count,
        "redis_per_request": {
            name: round(n / count, 2) for name, n in sorted(redis_counts.items())
        },
        "redis_commands_per_request": round(sum(redis_counts.values()) / count, 2),
        "sql_per_request": {
            name: round((sql_after[name] - sql_before[name]) / count, 2) for name in sql_after
        },
    }


def print_round_trips(target: str, probe: dict) -> None:
    """One line per target: Redis commands and SQL transactions/rows per request."""
    redis_detail = ", ".join(f"{name} {n:g}" for name, n in probe["redis_per_request"].items())
    sql = probe["sql_per_request"]
    print(
        f"  per {target} request: Redis {probe['redis_commands_per_request']:g} commands "
        f"({redis_detail or 'none'}); PostgreSQL {sql['xact_commit']:g} commits, "
        f"{sql['xact_rollback']:g} rollbacks, {sql['tup_fetched']:g} rows read, "
        f"{sql['tup_inserted']:g} inserted, {sql['tup_updated']:g} updated",
        flush=True,
    )


# --------------------------------------------------------------------------- profiling


def profile_worker(server, loadgen, request: Request, args: argparse.Namespace, out: Path) -> dict:
    """Record the busiest worker with py-spy under load (extra, unmeasured); summarise it.

    The busiest, because a gthread worker may get no connection at all.
    """
    seconds = max(2, round(args.duration))
    load = threading.Thread(
        target=loadgen.run, args=(server.port, request, seconds + 2, args.connections)
    )
    load.start()
    pids = server.children()
    before = [cpu_ticks(pid) for pid in pids]
    time.sleep(1)
    used = [cpu_ticks(pid) - start for pid, start in zip(pids, before, strict=True)]
    pid = pids[used.index(max(used))]
    spy = subprocess.run(
        [args.py_spy, "record", "--pid", str(pid), "--duration", str(seconds),
         "--format", "raw", "--output", str(out), "--nonblocking", "--idle", "--rate", "250"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=seconds + 60,
    )  # fmt: skip
    load.join()
    if spy.returncode != 0 or not out.exists():
        print(f"  py-spy failed ({spy.returncode}): {spy.stderr.strip()[-500:]}")
        return {}
    summary = summarise_profile(out)
    if not summary:
        print(f"  py-spy: no sample of worker {pid} was inside a request ({out.name})")
    return summary


# Libraries grouped into the parts of the stack that a reader of the figures thinks in.
COMPONENTS = {
    "flask": "Flask + Werkzeug",
    "werkzeug": "Flask + Werkzeug",
    "flask_smorest": "flask-smorest + marshmallow",
    "marshmallow": "flask-smorest + marshmallow",
    "apispec": "flask-smorest + marshmallow",
    "sqlalchemy": "SQLAlchemy + psycopg (PostgreSQL)",
    "flask_sqlalchemy": "SQLAlchemy + psycopg (PostgreSQL)",
    "psycopg": "SQLAlchemy + psycopg (PostgreSQL)",
    "psycopg_pool": "SQLAlchemy + psycopg (PostgreSQL)",
    "redis": "redis-py (Redis round trips)",
    "flask_limiter": "flask-limiter + limits",
    "limits": "flask-limiter + limits",
    "flask_login": "Flask-Login",
    "gunicorn": "gunicorn (HTTP parsing, socket I/O)",
}


def project_files() -> set[str]:
    """Paths of the project's own modules, relative to the repository root."""
    skip = {".venv", "migrations", "tests", "bench", ".git"}
    return {
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if not skip.intersection(path.relative_to(ROOT).parts)
    }


def summarise_profile(collapsed: Path, top: int = 10) -> dict:
    """Where a worker's request time goes, from py-spy's collapsed stacks (wall clock).

    Only samples taken inside the WSGI app count (time between requests is left out). Each
    sample is charged to the innermost frame that belongs to a library of ``COMPONENTS`` or to
    the project (standard-library frames charge their caller), giving ``components``; the
    project's own functions are also listed inclusively (nested calls overlap).
    """
    own = project_files()

    def where(frame: str) -> str | None:
        path = frame.rpartition(" (")[2].rpartition(":")[0]
        if path.endswith("__init__.py") and "/" not in path:
            return None
        if any(name == path or name.endswith("/" + path) for name in own):
            return "project: " + path
        if "/" in path:
            first = path.split("/")[0]
            return COMPONENTS.get(first, first)
        return None  # standard library or frozen module: charge the caller

    components: dict[str, int] = {}
    functions: dict[str, int] = {}
    in_requests = total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames, samples = stack.split(";"), int(count)
        total += samples
        if not any(frame.startswith("Flask.wsgi_app ") for frame in frames):
            continue
        in_requests += samples
        bucket = next(filter(None, (where(frame) for frame in reversed(frames))), "other")
        components[bucket] = components.get(bucket, 0) + samples
        for name in {f.rpartition(":")[0] + ")" for f in frames if "project:" in str(where(f))}:
            functions[name] = functions.get(name, 0) + samples
    if not in_requests:
        return {}

    def ranked(counts: dict[str, int]) -> list[list]:
        order = sorted(counts.items(), key=lambda item: -item[1])[:top]
        return [[name, round(100 * n / in_requests, 1)] for name, n in order]

    return {
        "samples": total,
        "in_requests_pct": round(100 * in_requests / total, 1),
        "components": ranked(components),
        "project_functions": ranked(functions),
    }


def print_profile(target: str, summary: dict, raw: Path) -> None:
    """Print what ``summarise_profile`` found."""
    print(
        f"  py-spy, one worker, {target}: {summary['in_requests_pct']}% of wall-clock samples "
        f"inside requests (raw stacks: {raw.relative_to(ROOT)})"
    )
    print("    innermost component (share of request time):")
    for name, share in summary["components"]:
        print(f"      {share:5.1f}%  {name}")
    print("    project functions (inclusive):")
    for name, share in summary["project_functions"]:
        print(f"      {share:5.1f}%  {name}")
