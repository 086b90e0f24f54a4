"""The chaos run of issue 34 (``bench/faults.py chaos``): a mixed load under a rotation of
faults, then what was left behind, counted.

On a private PostgreSQL and a private Redis with an append-only file (``faults_records``'s
``deployment``), the Procfile's web command and worker, an OpenAI-compatible fake provider
and a webhook receiver on loopback:

- the load, for ``--duration`` seconds, from ``--clients`` clients: each sends an async run
  of a provider tool every 2 s (``Prefer: respond-async``, its own ``Idempotency-Key``,
  announced by a webhook) and a workflow run every 10 s, and inline tool runs
  (``word-counter``) in between;
- the faults, in turn and evenly spread (``--rounds`` times each): a web worker SIGKILLed,
  the RQ worker SIGKILLed (and started again), Redis shut down and started 2 s later (its
  append-only file kept), PostgreSQL stopped at once (``-m immediate``) and started 2 s
  later, the web command's master SIGKILLed (and the command started again);
- then, once the worker has settled what it can: answered runs without a row, runs charged
  twice, runs left queued or running, async runs that ended with other than one webhook
  event, 5xx answers other than the outages' 503s, the calls the quota counts against the
  ledger's rows, and idempotency keys left in flight.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import redis
import sqlalchemy as sa

from bench.faults_records import (
    QUICK_MAINTENANCE,
    calls_counted,
    deployment,
    find_key_id,
    new_key,
    worker,
)
from bench.harness import (
    BATCHES_WRITTEN,
    SAMPLE_TEXT,
    WebServer,
    fetch,
    loopback_web_args,
    procfile_command,
    save_results,
)
from tests.fakes import FakeOpenAI
from tests.fakes.webhook_receiver import Receiver

FAULTS = ("kill-web-worker", "kill-rq-worker", "redis-restart", "pg-crash", "kill-web-master")
ASYNC_TOOL = "code-explainer"  # llm.chat on the provider, queued
WORKFLOW = "review-insights"  # three steps, two on the provider
# What the sweeps and leases need before the count (quick settings, as faults_records').
SETTLE = {**QUICK_MAINTENANCE, "RUN_SUBMIT_GRACE_SECONDS": "3", "JOB_LEASE_SECONDS": "6"}


@dataclass
class Answers:
    statuses: Counter = field(default_factory=Counter)  # (kind, status) -> count
    inline: list[str] = field(default_factory=list)  # run ids answered 200
    queued: list[str] = field(default_factory=list)  # run ids answered 202
    workflows: list[str] = field(default_factory=list)  # workflow run ids answered 202
    broken: int = 0  # connections that broke (a killed process's)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, status: int, answer: dict) -> None:
        with self.lock:
            self.statuses[(kind, status)] += 1
            run_id = answer.get("run_id") if isinstance(answer, dict) else None
            if run_id and status in (200, 202):
                {"inline": self.inline, "async": self.queued, "workflow": self.workflows}[
                    kind
                ].append(run_id)


# The mix, per client: an async run at most every ASYNC_EVERY seconds and a workflow run every
# WORKFLOW_EVERY (they queue work for one worker, at the pace of the soak), inline runs
# in between.
ASYNC_EVERY = 2.0
WORKFLOW_EVERY = 10.0


def _requests(raw_key: str):
    """The three kinds of request, in the mix: (kind, path, headers, body)."""
    auth = {"X-SVC-API-Key": raw_key, "Content-Type": "application/json", "Connection": "close"}
    inline = json.dumps({"input": SAMPLE_TEXT}).encode()
    queued = json.dumps({"slug": ASYNC_TOOL, "input": "def add(a, b):\n    return a + b\n"})
    flow = json.dumps({"workflow_id": WORKFLOW, "input": SAMPLE_TEXT}).encode()
    next_async = next_workflow = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= next_async:
            next_async = now + ASYNC_EVERY
            headers = {**auth, "Prefer": "respond-async", "Idempotency-Key": str(uuid.uuid4())}
            yield "async", "/v1/tools/run", headers, queued.encode()
        elif now >= next_workflow:
            next_workflow = now + WORKFLOW_EVERY
            yield "workflow", "/v1/workflows/run", auth, flow
        else:
            yield "inline", "/v1/public/tools/word-counter/run", auth, inline


def _load(port: int, raw_key: str, stop: threading.Event, answers: Answers) -> None:
    for kind, path, headers, body in _requests(raw_key):
        if stop.is_set():
            return
        try:
            answer = fetch(port, "POST", path, headers, body, timeout=15)
            answers.add(kind, answer.status, answer.json() or {})
        except (OSError, http.client.HTTPException):
            with answers.lock:
                answers.broken += 1
            time.sleep(0.05)


@dataclass
class ChaosResult:
    duration: float
    answers: Answers
    faults: list[str]
    counts: dict

    def lines(self) -> list[str]:
        by_kind = Counter()
        for (kind, _status), count in self.answers.statuses.items():
            by_kind[kind] += count
        statuses = ", ".join(
            f"{kind} {status}: {count}"
            for (kind, status), count in sorted(self.answers.statuses.items())
        )
        return [
            f"load: {self.duration:.0f} s; inline {by_kind['inline']}, async {by_kind['async']}, "
            f"workflow {by_kind['workflow']} requests; broken connections {self.answers.broken}",
            f"answers: {statuses}",
            "faults: " + "; ".join(self.faults),
            *(f"{name}: {value}" for name, value in self.counts.items()),
        ]

    @property
    def sound(self) -> bool:
        counts = self.counts
        return (
            counts["answered runs without a row"] == 0
            and counts["runs charged twice"] == 0
            and counts["runs left queued or running"] == 0
            and counts["ended async runs without exactly one webhook event"] == 0
            and counts["5xx other than 503"] == 0
            and counts["calls counted less ledger rows"] == 0
            and counts["idempotency keys left in flight"] == 0
        )


def chaos(seconds: float = 480, clients: int = 4, rounds: int = 2) -> ChaosResult:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        provider = stack.enter_context(FakeOpenAI())
        receiver = Receiver()  # started
        stack.callback(receiver.stop)
        env, postgres, redis_server, port = stack.enter_context(
            deployment(
                str(folder),
                AI_BASE_URL=provider.base_url,
                AI_API_KEY="sk-chaos",
                FETCH_ALLOW_PRIVATE="1",
                **SETTLE,
            )
        )
        raw_key = new_key(env)
        web_args = loopback_web_args(procfile_command("web"), env, port)
        server = WebServer(web_args, env, port, folder / "web.log").start()
        stack.callback(lambda: server.stop())
        _set_webhook(port, raw_key, receiver.url)
        workers = [stack.enter_context(worker(env, folder, "worker-0"))]
        io_workers = [stack.enter_context(worker(env, folder, "worker-io-0", "worker-io"))]
        notes: list[str] = []

        def kill_web_worker():
            victim = server.children()[0]
            os.kill(victim, signal.SIGKILL)
            notes.append(f"web worker {victim} SIGKILLed")

        def kill_rq_worker():
            # Each kind of the Procfile's workers: the compute one and the I/O one.
            for kind, started in (("worker", workers), ("worker-io", io_workers)):
                victim = started[-1].process
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(victim.pid, signal.SIGKILL)
                victim.wait(10)
                name = f"{kind}-{len(started)}"
                started.append(stack.enter_context(worker(env, folder, name, kind)))
            notes.append("RQ workers (both kinds) SIGKILLed, others started")

        def restart_redis():
            redis_server.stop()
            time.sleep(2)
            redis_server.start()
            notes.append("Redis shut down, started 2 s later (AOF)")

        def crash_postgres():
            postgres.crash()
            time.sleep(2)
            postgres.start()
            notes.append("PostgreSQL stopped -m immediate, started 2 s later")

        def kill_web_master():
            nonlocal server
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait(10)
            time.sleep(1)  # its workers notice their master is gone and leave
            # Those that have not (a busy machine) still hold the port: the rest of the group
            # goes too (they are the init process's children now, no longer the master's).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server = WebServer(web_args, env, port, folder / "web-2.log").start()
            notes.append("web command's master SIGKILLed, the command started again")

        faults = [kill_web_worker, kill_rq_worker, restart_redis, crash_postgres, kill_web_master]
        answers, stop = Answers(), threading.Event()
        threads = [
            threading.Thread(target=_load, args=(port, raw_key, stop, answers), daemon=True)
            for _ in range(clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        schedule = faults * rounds
        gap = seconds / (len(schedule) + 1)
        for index, fault in enumerate(schedule, 1):
            time.sleep(max(0.0, started + gap * index - time.monotonic()))
            fault()
        time.sleep(max(0.0, started + seconds - time.monotonic()))
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        duration = time.monotonic() - started
        time.sleep(BATCHES_WRITTEN)
        _settle(env, 300)
        counts = _count(env, port, raw_key, answers, receiver)
        _keep_logs(folder)
        return ChaosResult(duration, answers, notes, counts)


LOGS = Path(tempfile.gettempdir()) / "svc-chaos-logs"


def _keep_logs(folder: Path) -> None:
    """The processes' logs, kept in LOGS (outside the repository) for a look at what failed."""
    LOGS.mkdir(exist_ok=True)
    for log in folder.glob("*.log"):
        (LOGS / log.name).write_bytes(log.read_bytes())


def _set_webhook(port: int, raw_key: str, url: str) -> None:
    body = json.dumps({"url": url}).encode()
    headers = {"X-SVC-API-Key": raw_key, "Content-Type": "application/json"}
    answer = fetch(port, "PUT", "/v1/webhook", headers, body)
    if answer.status != 200:
        raise RuntimeError(f"PUT /v1/webhook answered {answer.status}")


def _settle(env: dict, seconds: float) -> float:
    """Wait until no run is queued or running, nothing is journaled or in flight, and every
    webhook delivery has ended (or ``seconds`` pass); returns the time taken."""
    started = time.monotonic()
    client = redis.Redis.from_url(env["REDIS_URL"])
    engine = sa.create_engine(env["DATABASE_URL"])
    try:
        while time.monotonic() - started < seconds:
            with contextlib.suppress(Exception), engine.connect() as connection:
                unfinished = connection.scalar(
                    sa.text(
                        "SELECT (SELECT count(*) FROM runs WHERE status IN ('queued', 'running'))"
                        " + (SELECT count(*) FROM workflow_runs"
                        "    WHERE status IN ('queued', 'running'))"
                        " + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')"
                    )
                )
                in_flight = sum(
                    client.zcard(name) for name in ("runs:inflight", "runs:submitting")
                ) + client.xlen("runs:journal")
                if unfinished == 0 and in_flight == 0:
                    break
            time.sleep(1)
        time.sleep(11)  # an idempotency lease (10 s) outlives its dead process this long
        return time.monotonic() - started
    finally:
        client.close()
        engine.dispose()


def _count(env: dict, port: int, raw_key: str, answers: Answers, receiver: Receiver) -> dict:
    key_id = find_key_id(env, raw_key)
    engine = sa.create_engine(env["DATABASE_URL"])
    try:
        with engine.connect() as connection:

            def ids(sql: str, run_ids: list[str]) -> set[str]:
                return set(connection.scalars(sa.text(sql), {"ids": run_ids}))

            runs = ids("SELECT id FROM runs WHERE id = ANY(:ids)", answers.inline + answers.queued)
            flows = ids("SELECT id FROM workflow_runs WHERE id = ANY(:ids)", answers.workflows)
            missing = len(set(answers.inline + answers.queued) - runs)
            missing += len(set(answers.workflows) - flows)
            twice = connection.scalar(
                sa.text(
                    "SELECT count(*) FROM (SELECT run_id FROM usage_events"
                    " GROUP BY run_id HAVING count(*) > 1) AS charged"
                )
            )
            left = connection.scalar(
                sa.text(
                    "SELECT (SELECT count(*) FROM runs WHERE status IN ('queued', 'running'))"
                    " + (SELECT count(*) FROM workflow_runs WHERE status IN ('queued', 'running'))"
                )
            )
            left_by = connection.execute(
                sa.text(
                    "SELECT status, workflow_run_id IS NOT NULL, started_at IS NOT NULL, count(*)"
                    " FROM runs WHERE status IN ('queued', 'running') GROUP BY 1, 2, 3"
                )
            ).all()
            ended = ids(
                "SELECT id FROM runs WHERE id = ANY(:ids)"
                " AND status IN ('succeeded', 'failed', 'canceled')",
                answers.queued,
            )
            ledger = connection.scalar(
                sa.text("SELECT count(*) FROM usage_events WHERE api_key_id = :key"),
                {"key": key_id},
            )
    finally:
        engine.dispose()
    events: dict[str, set[str]] = {}
    for received in receiver.requests:
        with contextlib.suppress(ValueError, AttributeError):
            run_id = json.loads(received.body).get("run_id")
            events.setdefault(run_id, set()).add(received.headers.get("webhook-id"))
    not_one = sum(len(events.get(run_id, ())) != 1 for run_id in ended)
    server_errors = sum(
        count
        for (_kind, status), count in answers.statuses.items()
        if status >= 500 and status != 503
    )
    client = redis.Redis.from_url(env["REDIS_URL"])
    try:
        busy = sum(
            json.loads(client.get(name) or b"{}").get("state") == "busy"
            for name in client.scan_iter("idem:*")
        )
    finally:
        client.close()
    calls = calls_counted(port, raw_key)
    return {
        "answered runs without a row": missing,
        "runs charged twice": twice,
        "runs left queued or running": left,
        "of which (status, a workflow step, started)": [tuple(row) for row in left_by],
        "ended async runs without exactly one webhook event": not_one,
        "5xx other than 503": server_errors,
        "calls counted today": calls,
        "ledger rows": ledger,
        "calls counted less ledger rows": calls - ledger,
        "idempotency keys left in flight": busy,
    }


def add_commands(commands) -> None:
    command = commands.add_parser("chaos", help="a mixed load under a rotation of faults")
    command.set_defaults(func=_chaos_command)
    command.add_argument("--duration", type=float, default=480, help="seconds of load")
    command.add_argument("--clients", type=int, default=4, help="clients of each process")
    command.add_argument("--rounds", type=int, default=2, help="times each fault comes")


def _chaos_command(args) -> int:
    result = chaos(args.duration, args.clients, args.rounds)
    print("\n".join(result.lines()))
    save_results(
        "faults-chaos.json",
        {
            "duration": round(result.duration),
            "answers": {f"{k} {s}": c for (k, s), c in result.answers.statuses.items()},
            "broken_connections": result.answers.broken,
            "faults": result.faults,
            **result.counts,
        },
    )
    return 0 if result.sound else 1
