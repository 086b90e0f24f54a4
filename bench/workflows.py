"""What the workflow engine costs beyond its tools, and how fast its webhook arrives.

1. Per-step overhead: a workflow of N trivial local steps (``whitespace-cleaner`` chained,
   each step's text feeding the next) runs through the engine (quota reservation, step rows,
   the queue, conditional moves, the final output); the same N tool calls are also timed
   directly. Overhead per step = (start → completed, minus the direct tool time) / N.
2. Webhook latency: the run's completion (its ``finished_at``) → the signed
   ``workflow.completed`` delivery arriving at a local receiver, through the real
   ``jobs.webhooks.emit`` and delivery job.

The app is the embedded default's engine: the in-process queue (2 worker threads) on SQLite,
or with ``--store postgres`` on PostgreSQL (``--database-url``, by default
``bench_workflows``, dropped and created) and a Redis db (``--redis-url``, by default db 13:
the quota counters) — still the in-process queue, so the figures are the engine's and not a
worker process's start-up. Targets: ≤ 10 ms per step, webhook p50 < 500 ms. See
``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.harness import add_service_options, percentile, reset_database  # noqa: E402

TOOL = "whitespace-cleaner"
TEXT = "  The   quick brown   fox\t jumps over\n\n\n the lazy dog.  " * 4
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/bench_workflows"
REDIS_URL = "redis://127.0.0.1:6379/13"
TARGET_STEP_MS = 10
TARGET_WEBHOOK_P50_MS = 500


def chain_workflow(directory: Path, steps: int) -> None:
    """A workflow file of ``steps`` whitespace cleaners, each fed by the one before."""
    lines = [
        "id: bench-chain",
        "name: Bench chain",
        "summary: Trivial local steps in a row, to measure the engine.",
        "input: {type: string, maxLength: 5000, description: Any text.}",
        "example: some text",
        "steps:",
    ]
    for index in range(steps):
        source = "/input" if index == 0 else f"/steps/s{index - 1}/output/text"
        lines += [
            f"- id: s{index}",
            f"  tool: {TOOL}",
            "  input:",
            f"    text: {{from: {source}, max_chars: 5000}}",
        ]
    lines += ["output:", f"  text: {{from: /steps/s{steps - 1}/output/text}}"]
    (directory / "bench-chain.yaml").write_text("\n".join(lines) + "\n")


def make_app(options: argparse.Namespace, workdir: Path):
    from sqlalchemy.engine import make_url

    from app import create_app
    from services.queue import InProcessDispatcher

    settings = {
        "ENV_NAME": "test",
        "SECRET_KEY": "bench",
        "SERVER_NAME": "bench.local",
        "FETCH_ALLOW_PRIVATE": True,
        "RUN_RECORD_DELAY": 0,
    }
    if options.store == "postgres":
        reset_database(options.database_url)
        database = make_url(options.database_url).set(drivername="postgresql+psycopg")
        settings |= {
            "SQLALCHEMY_DATABASE_URI": database.render_as_string(hide_password=False),
            "REDIS_URL": options.redis_url,
            "RATELIMIT_STORAGE_URI": "svc+" + options.redis_url,
        }
    else:
        settings |= {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{workdir / 'bench.db'}",
            "REDIS_URL": None,
            "RATELIMIT_STORAGE_URI": "memory://",
        }
    app = create_app(settings)
    if options.store == "postgres":
        app.extensions["redis"].flushdb()
    # The engine's own cost, whatever the deployment's queue: the in-process worker threads.
    app.extensions["dispatcher"] = InProcessDispatcher(app)
    with app.app_context():
        from flask_migrate import upgrade

        upgrade()
    return app


class Receiver:
    """A local webhook receiver noting when each event arrives."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.arrived:
                    receiver.arrivals[body["run_id"]] = time.time()
                    receiver.arrived.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait(self, run_id: str, seconds: float = 30) -> float:
        with self.arrived:
            if not self.arrived.wait_for(lambda: run_id in self.arrivals, seconds):
                raise RuntimeError(f"the webhook of run {run_id} never arrived")
            return self.arrivals[run_id]


def run_once(app, context, workflow, receiver: Receiver) -> tuple[float, float, float]:
    """One workflow run: (seconds from start to completed, its finished_at, webhook arrival)."""
    from extensions import db
    from jobs.workflows import enqueue_step
    from models import WorkflowRun
    from services import clock, workflows

    with app.app_context():
        run, _, _ = workflows.start(context, workflow, TEXT)
        queued = workflows.queued_steps(run)
        run_id = run.id
        db.session.commit()
        for step in queued:
            enqueue_step(step, run_id, first=True)
        arrival = receiver.wait(run_id)
        record = db.session.get(WorkflowRun, run_id)
        assert record.status == "succeeded", record.error
        finished = clock.as_utc(record.finished_at)
        elapsed = (finished - clock.as_utc(record.created_at)).total_seconds()
    return elapsed, finished.timestamp(), arrival


def direct_tool_seconds(steps: int, repeats: int = 20) -> float:
    """The median time of the same N tool calls made directly (no engine)."""
    from catalogue import load_catalogue
    from engines import run_tool

    tool = load_catalogue().get(TOOL)
    timings = []
    for _ in range(repeats):
        text = TEXT
        began = time.perf_counter()
        for _ in range(steps):
            text = run_tool(tool, tool.with_defaults({"text": text}))["text"]
        timings.append(time.perf_counter() - began)
    return statistics.median(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="steps in the chain (default 10)")
    parser.add_argument("--runs", type=int, default=30, help="workflow runs (default 30)")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    add_service_options(parser, DATABASE_URL, REDIS_URL, " of --store postgres")
    options = parser.parse_args()

    from catalogue import WorkflowCatalogue, load_workflows
    from extensions import db
    from services import accounts, keys

    with tempfile.TemporaryDirectory() as temporary:
        workdir = Path(temporary)
        chain_workflow(workdir, options.steps)
        app = make_app(options, workdir)
        workflow = load_workflows(workdir).get("bench-chain")
        built_in = app.extensions["workflows"].workflows
        app.extensions["workflows"] = WorkflowCatalogue({**built_in, "bench-chain": workflow})
        receiver = Receiver()
        with app.app_context():
            account = accounts.create_account("bench@example.com", "agency")
            key, raw = keys.create_key(account, "bench")
            key.webhook_url = receiver.url
            key.daily_override = 10_000_000
            db.session.commit()
            context = keys.resolve(raw)
        tool_seconds = direct_tool_seconds(options.steps)
        run_once(app, context, workflow, receiver)  # warm up (imports, connections)
        overheads, latencies = [], []
        for _ in range(options.runs):
            elapsed, finished, arrival = run_once(app, context, workflow, receiver)
            overheads.append((elapsed - tool_seconds) / options.steps * 1000)
            latencies.append((arrival - finished) * 1000)
        receiver.server.shutdown()

    step_p50, step_p99 = percentile(overheads, 50), percentile(overheads, 99)
    hook_p50, hook_p99 = percentile(latencies, 50), percentile(latencies, 99)
    print(f"workflow engine bench ({options.store}, in-process queue, {datetime.now(UTC):%F %T}Z)")
    direct = f"the same {options.steps} tool calls directly: {tool_seconds * 1000:.2f} ms"
    print(f"  chain of {options.steps} × {TOOL}, {options.runs} runs; {direct}")
    verdict = "PASS" if step_p50 <= TARGET_STEP_MS else "ABOVE"
    print(f"  engine overhead per step: p50 {step_p50:.2f} ms  p99 {step_p99:.2f} ms"
          f"  (target ≤ {TARGET_STEP_MS} ms: {verdict})")  # fmt: skip
    verdict = "PASS" if hook_p50 < TARGET_WEBHOOK_P50_MS else "ABOVE"
    print(f"  webhook completion → receiver: p50 {hook_p50:.1f} ms  p99 {hook_p99:.1f} ms"
          f"  (target p50 < {TARGET_WEBHOOK_P50_MS} ms: {verdict})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
