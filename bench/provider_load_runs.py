"""``bench/provider_load.py``'s async and sync scenarios: N provider-backed runs submitted at
once (``Prefer: respond-async``, then the ``runs`` table read until all have ended; or
``Prefer: wait=60``), what the processes and services used meanwhile (``Sampler``), and
their table and goals.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bench.harness import (
    Group,
    cpu_seconds,
    database_name,
    fetch,
    group_cpu_seconds,
    percentile,
    psycopg_url,
    rss_mb,
)

STORIES = "We met at school and he once sailed a bathtub across the lake."
ENDED = ("succeeded", "failed", "canceled")
BENCH_NAME = "provider_load-bench"  # the bench's own connections, left out of the counts
# The goals, for 2 s latency, 300 runs and one I/O worker.
GOAL_LATENCY, GOAL_RUNS = 2.0, 300
GOAL_WALL_S, GOAL_PEAK, GOAL_RSS_MB, GOAL_CPU_MS = 10.0, 200, 400, 5.0
SYNC_RUNS, SYNC_WAIT = 200, 60


def redis_client(url: str):
    """A client of ``url`` named so that the counts of clients leave it out."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, client_name=BENCH_NAME)


def pg_connect(url: str):
    """An autocommit psycopg connection to ``url``, named so that the counts leave it out."""
    import psycopg

    return psycopg.connect(psycopg_url(url), autocommit=True, application_name=BENCH_NAME)


class Sampler(threading.Thread):
    """Every 0.2 s until stopped: the largest I/O worker RSS, the database's connections
    (the bench's own left out) and the Redis clients (of the db, and server-wide)."""

    def __init__(self, io_pids: list[int], database_url: str, redis_url: str):
        super().__init__(daemon=True)
        self.io_pids, self.database_url, self.redis_url = io_pids, database_url, redis_url
        self.rss = self.pg = self.redis_db = self.redis_all = 0
        self.errors: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        from sqlalchemy.engine import make_url

        database = database_name(self.database_url)
        db_index = int(make_url(self.redis_url).database or 0)
        client = redis_client(self.redis_url)
        with pg_connect(self.database_url) as conn:
            while not self._halt.is_set():
                self.rss = max([self.rss, *(rss_mb(pid) for pid in self.io_pids)])
                try:
                    count = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = %s AND application_name <> %s",
                        (database, BENCH_NAME),
                    ).fetchone()[0]
                    self.pg = max(self.pg, count)
                    clients = client.client_list()
                    mine = sum(
                        1
                        for c in clients
                        if int(c.get("db", -1)) == db_index and c.get("name") != BENCH_NAME
                    )
                    self.redis_db = max(self.redis_db, mine)
                    connected = client.info("clients")["connected_clients"]
                    self.redis_all = max(self.redis_all, connected)
                except Exception as error:  # a sample missed is not worth ending the bench
                    if len(self.errors) < 5:
                        self.errors.append(f"{type(error).__name__}: {error}")
                self._halt.wait(0.2)

    def stop(self) -> Sampler:
        self._halt.set()
        self.join(10)
        return self


def post_run(
    port: int, headers: dict, body: bytes, timeout: float
) -> tuple[float, float, int, dict]:
    """One POST /v1/tools/run: (wall clock sent, seconds to answer, status, JSON body);
    status 0 for a broken connection."""
    sent, began = time.time(), time.monotonic()
    try:
        answer = fetch(port, "POST", "/v1/tools/run", headers, body, timeout=timeout)
        status, data = answer.status, answer.json()
        if data is None:
            data = {"raw": answer.body[:200].decode(errors="replace")}
    except (OSError, http.client.HTTPException) as error:
        status, data = 0, {"error": f"{type(error).__name__}: {error}"}
    return sent, time.monotonic() - began, status, data


def send_all(count: int, threads: int, port: int, headers: dict, body: bytes,
             timeout: float) -> list[tuple[float, float, int, dict]]:  # fmt: skip
    """``count`` POSTs at once from ``threads`` threads."""
    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        futures = [pool.submit(post_run, port, headers, body, timeout) for _ in range(count)]
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def wait_until_ended(conn, run_ids: list[str], timeout: float) -> int:
    """Poll the runs table every 0.1 s until every run has ended; the runs still open."""
    deadline = time.monotonic() + timeout
    ended = 0
    while time.monotonic() < deadline:
        ended = conn.execute(
            "SELECT count(*) FROM runs WHERE id = ANY(%s) AND status = ANY(%s)",
            (run_ids, list(ENDED)),
        ).fetchone()[0]
        if ended >= len(run_ids):
            return 0
        time.sleep(0.1)
    return len(run_ids) - ended


def async_scenario(count: int, latency: float, args, raw_key: str, fake, port: int,
                   web: Group, io: list[Group]) -> dict:  # fmt: skip
    """Submit ``count`` runs at once with respond-async and wait until they have ended."""
    headers = {
        "X-SVC-API-Key": raw_key,
        "Content-Type": "application/json",
        "Prefer": "respond-async",
    }
    body = json.dumps({"slug": args.tool, "stories": STORIES}).encode()
    timeout = max(120.0, count * latency / 50 + 60)
    fake.reset_peak()
    io_pids = [p.pid for p in io]
    sampler = Sampler(io_pids, args.database_url, args.redis_url)
    sampler.start()
    load = os.getloadavg()[0]
    io_cpu0 = sum(cpu_seconds(pid) for pid in io_pids)
    web_cpu0 = group_cpu_seconds(web.pid)
    bench_cpu0 = time.process_time()
    with pg_connect(args.database_url) as conn:
        answers = send_all(count, args.clients, port, headers, body, timeout=60)
        first_sent = min(a[0] for a in answers)
        submitted_s = max(a[0] + a[1] for a in answers) - first_sent
        run_ids = [a[3]["run_id"] for a in answers if a[2] == 202 and "run_id" in a[3]]
        left = timeout - (time.time() - first_sent)
        open_runs = wait_until_ended(conn, run_ids, left) if run_ids else 0
        io_cpu = sum(cpu_seconds(pid) for pid in io_pids) - io_cpu0
        web_cpu = group_cpu_seconds(web.pid) - web_cpu0
        bench_cpu = time.process_time() - bench_cpu0
        sampler.stop()
        rows = conn.execute(
            "SELECT status, extract(epoch FROM created_at)::float8, "
            "extract(epoch FROM finished_at)::float8 FROM runs WHERE id = ANY(%s)",
            (run_ids,),
        ).fetchall()
    refused: dict[str, int] = {}
    for _, _, status, answer in answers:
        if status != 202 or "run_id" not in answer:
            reason = str(status) if status else answer.get("error", "?")
            refused[reason] = refused.get(reason, 0) + 1
    statuses: dict[str, int] = {}
    for status, _, _ in rows:
        statuses[status] = statuses.get(status, 0) + 1
    done = [(created, finished) for _, created, finished in rows if finished is not None]
    last_finished = max((finished for _, finished in done), default=None)
    wall = (last_finished - first_sent) if last_finished is not None and not open_runs else None
    took = [finished - created for created, finished in done]
    return {
        "runs": count,
        "latency": latency,
        "wall": wall,
        "submitted_s": submitted_s,
        "rate": (len(done) / wall) if wall else None,
        "peak": fake.peak_in_flight,
        "p50": percentile(took, 50),
        "p95": percentile(took, 95),
        "rss": sampler.rss,
        "io_cpu_ms": io_cpu * 1000 / count,
        "web_cpu_ms": web_cpu * 1000 / count,
        "succeeded": statuses.get("succeeded", 0),
        "failed": statuses.get("failed", 0),
        "other": {k: v for k, v in statuses.items() if k not in ("succeeded", "failed")},
        "open": open_runs,
        "refused": refused,
        "ideal": latency,
        "pg": sampler.pg,
        "redis_db": sampler.redis_db,
        "redis_all": sampler.redis_all,
        "sample_errors": sampler.errors,
        "timeout": timeout,
        "bench_cpu": bench_cpu,
        "load": load,
    }


def sync_scenario(tool: str, raw_key: str, fake, port: int) -> dict:
    """``SYNC_RUNS`` runs at once with ``Prefer: wait=60`` from as many threads."""
    headers = {
        "X-SVC-API-Key": raw_key,
        "Content-Type": "application/json",
        "Prefer": f"wait={SYNC_WAIT}",
    }
    body = json.dumps({"slug": tool, "stories": STORIES}).encode()
    fake.reset_peak()
    began = time.monotonic()
    answers = send_all(SYNC_RUNS, SYNC_RUNS, port, headers, body, timeout=SYNC_WAIT + 30)
    wall = time.monotonic() - began
    statuses: dict[str, int] = {}
    for _, _, status, answer in answers:
        label = str(status) if status else answer.get("error", "broken")
        statuses[label] = statuses.get(label, 0) + 1
    seconds = [a[1] for a in answers]
    return {
        "with_output": sum(1 for a in answers if a[2] == 200 and a[3].get("output") is not None),
        "accepted": sum(1 for a in answers if a[2] == 202),
        "statuses": statuses,
        "p50": percentile(seconds, 50),
        "p95": percentile(seconds, 95),
        "wall": wall,
        "peak": fake.peak_in_flight,
    }


# --------------------------------------------------------------------------- printing

COLUMNS = (
    ("N", 6),
    ("latency", 8),
    ("wall s", 8),
    ("runs/s", 8),
    ("peak", 6),
    ("p50 s", 7),
    ("p95 s", 7),
    ("io RSS MB", 10),
    ("io CPU ms/run", 14),
    ("web CPU ms/run", 15),
    ("ok", 6),
    ("failed", 7),
    ("ideal s", 8),
    ("pg conns", 9),
    ("redis db/all", 13),
)


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_header() -> None:
    print("".join(f"{name:>{width}}" for name, width in COLUMNS))


def print_row(r: dict) -> None:
    cells = (
        str(r["runs"]),
        f"{r['latency']:g}",
        number(r["wall"]),
        number(r["rate"], 1),
        str(r["peak"]),
        number(r["p50"]),
        number(r["p95"]),
        number(r["rss"], 0),
        number(r["io_cpu_ms"]),
        number(r["web_cpu_ms"]),
        str(r["succeeded"]),
        str(r["failed"]),
        f"{r['ideal']:g}",
        str(r["pg"]),
        f"{r['redis_db']}/{r['redis_all']}",
    )
    print("".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True)))
    notes = [
        f"all {r['runs']} submits answered in {r['submitted_s']:.2f} s",
        f"the bench's own process (clients and fake provider) used {r['bench_cpu']:.1f} s CPU",
        f"machine load average before: {r['load']:.2f}",
    ]
    if r["open"]:
        notes.append(f"{r['open']} runs not ended after {r['timeout']:.0f} s")
    if r["refused"]:
        notes.append(f"submits not accepted: {r['refused']}")
    if r["other"]:
        notes.append(f"other statuses: {r['other']}")
    if r["sample_errors"]:
        notes.append(f"samples missed: {r['sample_errors']}")
    print(f"{'':>6}  " + "; ".join(notes), flush=True)


def verdict(ok: bool) -> str:
    """A goal's verdict."""
    return "met" if ok else "not met"


def goals_line(r: dict, io_workers: int) -> str:
    """The scenario against the issue's goals (set for 2 s, N=300, one I/O worker)."""
    checks = [
        f"wall <= {GOAL_WALL_S:g} s "
        f"{verdict(r['wall'] is not None and r['wall'] <= GOAL_WALL_S)} ({number(r['wall'])})",
        f"peak in flight >= {GOAL_PEAK} {verdict(r['peak'] >= GOAL_PEAK)} ({r['peak']})",
        f"worker RSS <= {GOAL_RSS_MB} MB {verdict(r['rss'] <= GOAL_RSS_MB)} ({r['rss']:.0f})",
        f"worker CPU/run <= {GOAL_CPU_MS:g} ms "
        f"{verdict(r['io_cpu_ms'] <= GOAL_CPU_MS)} ({r['io_cpu_ms']:.2f})",
    ]
    applies = r["latency"] == GOAL_LATENCY and r["runs"] == GOAL_RUNS and io_workers == 1
    scope = "goal scenario" if applies else "for reference: the goals are set for 2 s, N=300, 1 I/O"
    return f"N={r['runs']} latency {r['latency']:g} s ({scope}): " + "; ".join(checks)


def print_sync(r: dict) -> None:
    print(
        f"\nsync: {SYNC_RUNS} runs at once with Prefer: wait={SYNC_WAIT} at 2 s latency: "
        f"{r['with_output']} answered 200 with an output, {r['accepted']} answered 202; "
        f"answer time p50 {r['p50']:.2f} s, p95 {r['p95']:.2f} s (all in {r['wall']:.2f} s); "
        f"peak in flight at the provider {r['peak']}; statuses {r['statuses']}",
        flush=True,
    )
