"""The fault runs of issue 13 about what is recorded and counted (subcommands of
``bench/faults.py``; the tests in ``tests/test_faults_records.py`` run the same code with
smaller figures).

- ``kill-web``: inline tool runs under load, one web worker SIGKILLed halfway; then every
  answered 200 is looked for in the database (its run and its ledger row), at the end of
  the load and again once a worker's maintenance has replayed the journal.
- ``pg-crash``: the same with the database crashed halfway (``pg_ctl stop -m immediate``,
  then started again), on a private PostgreSQL server.
- ``redis-loss``: a key with a daily quota of 5 spends it; Redis loses its data (FLUSHALL,
  then a fresh Redis); how many more calls are admitted.

The worker's faults (a database restart under it, a SIGKILL that left its scheduler behind)
are reproduced by ``tests/test_faults_database.py`` and ``tests/test_faults_worker.py``.

Each runs on private servers it starts (a PostgreSQL cluster in a temporary folder, a
redis-server on a free port: ``tests/fakes``), never the machine's shared ones, on loopback
only, every loop bounded in time.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import secrets
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import sqlalchemy as sa

from bench.harness import (
    BATCHES_WRITTEN,
    SAMPLE_TEXT,
    WebServer,
    create_key,
    fetch,
    flask,
    free_port,
    loopback_web_args,
    procfile_command,
    product_env,
    save_results,
    start_worker,
)
from tests.fakes.postgres_server import PrivatePostgres
from tests.fakes.redis_server import RedisServer

RUN_PATH = "/v1/public/tools/word-counter/run"
# The worker's maintenance, quicker than production's (15 s sweeps, a 20 s journal grace) so
# that a run takes seconds; the figures it prints are times, not these settings.
QUICK_MAINTENANCE = {
    "SWEEP_INTERVAL_SECONDS": "1",
    "RUN_JOURNAL_GRACE_SECONDS": "2",
    "RUN_INFLIGHT_GRACE_SECONDS": "3",
}


@contextlib.contextmanager
def deployment(aof_dir: str | None = None, **extra: str):
    """A private PostgreSQL and Redis (with an append-only file in ``aof_dir``), migrated,
    with the environment of a deployment on them: yields ``(env, postgres, redis_server,
    port)``."""
    postgres = PrivatePostgres().start()
    redis_server = RedisServer(aof_dir)
    redis_server.start()
    port = free_port()
    try:
        env = product_env(postgres.url, redis_server.url, port, **extra)
        yield env, postgres, redis_server, port
    finally:
        with contextlib.suppress(Exception):
            redis_server.stop()
        postgres.close()


@contextlib.contextmanager
def web(env: dict, port: int, folder: Path):
    """The Procfile's web command on the loopback ``port``, started; its log is web.log."""
    server = WebServer(
        loopback_web_args(procfile_command("web"), env, port), env, port, folder / "web.log"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def worker(env: dict, folder: Path, name: str = "worker", kind: str = "worker"):
    """The Procfile's ``kind`` of worker (``worker`` or ``worker-io``) with the quick
    maintenance, in its own process group; its log is ``name``.log."""
    process = start_worker(kind, {**env, **QUICK_MAINTENANCE}, folder / f"{name}.log", name)
    try:
        yield process
    finally:
        process.stop(grace=20)


def new_key(env: dict) -> str:
    """Migrate, then an Agency account and a key whose limits never refuse; the raw key."""
    email = f"faults-{secrets.token_hex(4)}@example.com"
    return create_key(functools.partial(flask, env), email, "faults")[1]


# --------------------------------------------------------------------------- the load


@dataclass
class LoadResult:
    answered: dict[int, int] = field(default_factory=dict)  # status -> count
    run_ids: list[str] = field(default_factory=list)  # of the 200s
    errors: int = 0  # connections that broke (a killed worker's)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int, run_id: str | None) -> None:
        with self.lock:
            self.answered[status] = self.answered.get(status, 0) + 1
            if status == 200 and run_id:
                self.run_ids.append(run_id)


def load(port: int, raw_key: str, seconds: float, clients: int, at_half=None) -> LoadResult:
    """``clients`` keep-alive clients running an inline tool for ``seconds``; ``at_half()``
    is called halfway (the fault)."""
    result = LoadResult()
    stop = threading.Event()
    body = json.dumps({"input": SAMPLE_TEXT}).encode()
    headers = {"X-SVC-API-Key": raw_key, "Content-Type": "application/json", "Connection": "close"}

    def client() -> None:
        # A connection per request, so that every web worker takes a share of the load.
        while not stop.is_set():
            try:
                answer = fetch(port, "POST", RUN_PATH, headers, body, timeout=10)
                run_id = json.loads(answer.body).get("run_id") if answer.status == 200 else None
                result.add(answer.status, run_id)
            except (OSError, http.client.HTTPException, ValueError):
                with result.lock:
                    result.errors += 1
                time.sleep(0.01)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(seconds / 2)
    if at_half is not None:
        at_half()
    time.sleep(seconds / 2)
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
    return result


def missing_rows(database_url: str, run_ids: list[str]) -> tuple[int, int]:
    """How many of ``run_ids`` have no ``runs`` row, and no ledger row."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            runs = set(
                connection.scalars(
                    sa.text("SELECT id FROM runs WHERE id = ANY(:ids)"), {"ids": run_ids}
                )  # fmt: skip
            )
            ledger = set(
                connection.scalars(
                    sa.text("SELECT run_id FROM usage_events WHERE run_id = ANY(:ids)"),
                    {"ids": run_ids},
                )
            )
    finally:
        engine.dispose()
    return len(set(run_ids) - runs), len(set(run_ids) - ledger)


def until_recorded(env: dict, run_ids: list[str], seconds: float) -> tuple[tuple, float]:
    """Poll until every run has its rows, and no journal entry or reservation in flight is
    left (or ``seconds`` pass): (missing, seconds taken)."""
    client = redis.Redis.from_url(env["REDIS_URL"])
    started = time.monotonic()
    try:
        while True:
            missing = missing_rows(env["DATABASE_URL"], run_ids)
            settled = not client.xlen("runs:journal") and not client.zcard("runs:inflight")
            if (missing == (0, 0) and settled) or time.monotonic() - started > seconds:
                return missing, time.monotonic() - started
            time.sleep(0.5)
    finally:
        client.close()


@dataclass
class RecordsResult:
    load: LoadResult
    fault: str
    missing_after_load: tuple[int, int]
    missing_after_replay: tuple[int, int]
    replay_seconds: float
    calls_counted: int
    ledger_rows: int

    @property
    def ok(self) -> int:
        return self.load.answered.get(200, 0)

    def lines(self) -> list[str]:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.load.answered.items()))
        return [
            f"fault: {self.fault}",
            f"answers: {statuses}; broken connections: {self.load.errors}",
            f"200s without a run row / ledger row at the end of the load: "
            f"{self.missing_after_load[0]} / {self.missing_after_load[1]}",
            f"... after the journal's replay ({self.replay_seconds:.1f} s): "
            f"{self.missing_after_replay[0]} / {self.missing_after_replay[1]}",
            f"calls the quota counted today: {self.calls_counted}; ledger rows: "
            f"{self.ledger_rows} (200s: {self.ok}; a run journaled as its worker died is "
            "recorded and counted though its answer never left)",
        ]


def calls_counted(port: int, raw_key: str) -> int:
    """The calls the key's quota counts today (whoami), or -1."""
    answer = fetch(port, "GET", "/v1/public/whoami", {"X-SVC-API-Key": raw_key})
    return answer.json()["usage"]["calls_today"] if answer.status == 200 else -1


def records_under_fault(fault: str, seconds: float = 10, clients: int = 8) -> RecordsResult:
    """``kill-web`` or ``pg-crash``: the load, the fault halfway, then the count."""
    with tempfile.TemporaryDirectory() as folder, deployment() as (env, postgres, _redis, port):
        folder = Path(folder)
        raw_key = new_key(env)
        notes: list[str] = []
        with web(env, port, folder) as server:

            def kill_one_worker() -> None:
                victim = server.children()[0]
                os.kill(victim, signal.SIGKILL)
                notes.append(f"SIGKILLed web worker {victim}")

            def crash_the_database() -> None:
                postgres.crash()
                notes.append("database crashed (pg_ctl stop -m immediate), started 2 s later")
                time.sleep(2)
                postgres.start()

            at_half = {"kill-web": kill_one_worker, "pg-crash": crash_the_database}[fault]
            result = load(port, raw_key, seconds, clients, at_half)
            time.sleep(BATCHES_WRITTEN)  # the surviving processes' last batches
            after_load = missing_rows(env["DATABASE_URL"], result.run_ids)
            journaled = redis.Redis.from_url(env["REDIS_URL"]).xlen("runs:journal")
            notes.append(f"journal entries left at the end of the load: {journaled}")
            with worker(env, folder):
                after_replay, took = until_recorded(env, result.run_ids, 60)
            counted = calls_counted(port, raw_key)
        ledger = _ledger_rows(env, raw_key)
        return RecordsResult(
            result, "; ".join(notes), after_load, after_replay, took, counted, ledger
        )


# --------------------------------------------------------------------------- quota


def redis_loss(limit: int = 5) -> dict:
    """Calls admitted for a key with a daily quota of ``limit``: before the loss, after a
    FLUSHALL, and on a fresh Redis."""
    with tempfile.TemporaryDirectory() as folder, deployment() as (env, _pg, redis_server, port):
        folder = Path(folder)
        raw_key = new_key(env)
        key_id = find_key_id(env, raw_key)
        flask(env, "keys", "set-limits", key_id, "--daily", str(limit))
        admitted = {}
        with web(env, port, folder):
            admitted["before the loss"] = _spend(port, raw_key, limit * 2)
            redis.Redis.from_url(redis_server.url).flushall()
            # The web processes' key cache (0.5 s), and their batches: the calls made just
            # before the loss are counted again from the database once written
            # (docs/operating/recording.md).
            time.sleep(max(0.6, BATCHES_WRITTEN))
            admitted["after FLUSHALL"] = _spend(port, raw_key, limit * 2)
        fresh = RedisServer()
        fresh.start()
        try:
            moved = {**env, "REDIS_URL": fresh.url}
            with web(moved, port, folder):
                admitted["on a fresh Redis"] = _spend(port, raw_key, limit * 2)
                admitted["whoami calls_today"] = calls_counted(port, raw_key)
        finally:
            fresh.stop()
        admitted["limit"] = limit
        return admitted


def _ledger_rows(env: dict, raw_key: str) -> int:
    return _scalar(env, "SELECT count(*) FROM usage_events WHERE api_key_id = :key",
                   key=find_key_id(env, raw_key))  # fmt: skip


def find_key_id(env: dict, raw_key: str) -> str:
    """The id of the key ``raw_key`` in the deployment's database."""
    return _scalar(env, "SELECT id FROM api_keys WHERE key_hash = encode(sha256(:raw), 'hex')",
                   raw=raw_key.encode())  # fmt: skip


def _scalar(env: dict, sql: str, **params):
    """One value from the deployment's database."""
    engine = sa.create_engine(env["DATABASE_URL"])
    try:
        with engine.connect() as connection:
            return connection.scalar(sa.text(sql), params)
    finally:
        engine.dispose()


def _spend(port: int, raw_key: str, times: int) -> int:
    body = json.dumps({"input": SAMPLE_TEXT}).encode()
    headers = {"X-SVC-API-Key": raw_key, "Content-Type": "application/json"}
    return sum(
        fetch(port, "POST", RUN_PATH, headers, body, timeout=10).status == 200 for _ in range(times)
    )


# --------------------------------------------------------------------------- the CLI


def add_commands(commands) -> None:
    """The subcommands of this module, on ``bench/faults.py``'s parser."""
    for name, about in (
        ("kill-web", "a web worker SIGKILLed under load: 200s against rows"),
        ("pg-crash", "the database crashed under load: 200s against rows"),
    ):
        command = commands.add_parser(name, help=about)
        command.set_defaults(func=_records_command, fault=name)
        command.add_argument("--duration", type=float, default=10, help="seconds of load")
        command.add_argument("--clients", type=int, default=16, help="concurrent clients")
    command = commands.add_parser("redis-loss", help="a day's quota after Redis lost its data")
    command.set_defaults(func=_redis_loss_command)
    command.add_argument("--limit", type=int, default=5, help="the key's daily quota")


def _records_command(args) -> int:
    result = records_under_fault(args.fault, args.duration, args.clients)
    print("\n".join(result.lines()))
    save_results(f"faults-{args.fault}.json", {
        "answered": result.load.answered, "broken_connections": result.load.errors,
        "missing_after_load": result.missing_after_load,
        "missing_after_replay": result.missing_after_replay,
        "replay_seconds": round(result.replay_seconds, 1), "calls_counted": result.calls_counted,
        "ledger_rows": result.ledger_rows, "fault": result.fault,
    })  # fmt: skip
    return 0 if result.missing_after_replay == (0, 0) else 1


def _redis_loss_command(args) -> int:
    admitted = redis_loss(args.limit)
    for label, count in admitted.items():
        print(f"{label}: {count}")
    save_results("faults-redis-loss.json", admitted)
    over = admitted["before the loss"] + admitted["after FLUSHALL"] + admitted["on a fresh Redis"]
    return 0 if over == args.limit else 1
