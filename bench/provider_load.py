"""Provider-backed runs in flight: how many queued runs of a provider tool the I/O worker
keeps waiting on the provider at once, and what that costs.

    .venv/bin/python bench/provider_load.py [--runs 300 --latency 2] [--sync] [--streams [500]]

For each ``--latency`` (seconds every answer of the fake provider waits, as a real model's
generation time does) the bench starts an OpenAI-compatible fake provider
(``tests/fakes/openai_server.py``), the Procfile's ``web`` command on a free loopback port,
and its ``worker`` and ``worker-io`` commands (``--cpu-workers`` and ``--io-workers`` of
each), on a scratch PostgreSQL database (dropped and created at the start) and a Redis db
(flushed before each latency's processes start). Then, for each ``--runs`` N, it submits N
runs of ``--tool`` (an ``llm.chat`` tool) at once with ``Prefer: respond-async`` from
``--clients`` threads and waits, reading the ``runs`` table directly (never the API, which
would load the web processes), until every run has ended.

Per scenario it prints: the wall time (first submit to the last run's ``finished_at``), runs
per second, the most calls in flight at the provider at once, p50 and p95 of each run's
``finished_at - created_at``, the I/O worker's peak RSS and its CPU per run (the process
alone), the web processes' CPU per run, succeeded and failed counts, the ideal wall time
(the provider's latency alone: every run at once), the most PostgreSQL connections of the
database and the most Redis clients (of the db, and server-wide) seen during the scenario;
then a line against the issue's goals (2 s latency, N=300, one I/O worker: wall <= 10 s,
>= 200 in flight, RSS <= 400 MB, <= 5 ms of worker CPU per run).

``--sync`` also sends, at 2 s latency, 200 concurrent runs with ``Prefer: wait=60`` (200
threads) and prints how many were answered 200 with an output, how many 202, p50/p95 of
the answer time and the peak in flight at the provider.

``--streams [N]`` (N 500 unless given; ``--runs`` with no number leaves the scenarios above
out) starts one more deployment whose fake provider streams each answer in 20 pieces spread
over 3 s (no latency before the first) and sends runs with ``"stream": true``, each read to
its end as server-sent events (``delta`` events, then ``done`` or ``error``). First 20 runs,
4 at a time: per run, the time its first ``delta`` reached the client less the time the
provider wrote its first piece (the run is found at the provider by a marker in its input),
the submit to its first delta and to its ``done``, its deltas, and whether the deltas put
together are the ``done`` record's output text. Then N such runs at once (a thread each),
while ``GET /v1/public/whoami`` is sent every 20 ms whether or not the last was answered
(each one's time counted from when it was due). It prints the streams answered 200, those
that ended with ``done``, the refused or failed ones by kind (a status with its problem
code, a broken connection, an ``error`` event, a stream broken off), the most streams open
at once, the same per-run figures, whoami's p50/p99/max and failures (all, those sent
while the streams' POSTs were still being answered, and those after), the CPU the web
processes, the I/O worker and the bench used, and how busy the machine was; then a line
Then N more held open: sent evenly over 10 s (``RAMP_SECONDS``), each answer written over
30 s (``HOLD_SECONDS``), so that all N are open at once for a while, with the same figures.
Then a line against the issue's goals (first delta <= 300 ms after the provider's first
piece; N streams with none refused or failed, at once and held open; whoami p99 < 1 s while
N are held open; its p99 during the burst of N admissions at once is shown beside it).

The processes' logs go to a temporary folder outside the repository (its path is
printed); lines with ERROR or Traceback in them are counted at the end. Every process
group started is stopped at the end (SIGTERM, SIGKILL after 15 s), also on errors and
Ctrl-C. Exit status: 0 (a bench reports, it does not assert), 2 when setup failed or the
run was interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import tempfile
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.harness import (  # noqa: E402
    WebServer,
    add_service_options,
    create_key,
    flask,
    flush_redis,
    free_port,
    loopback_web_args,
    procfile_command,
    product_env,
    report_log_problems,
    reset_database,
    start_worker,
    stop_groups,
    stopping_early,
    wait_registered,
)
from bench.provider_load_runs import (  # noqa: E402
    BENCH_NAME,
    GOAL_LATENCY,
    async_scenario,
    goals_line,
    print_header,
    print_row,
    print_sync,
    sync_scenario,
)
from bench.provider_load_streams import (  # noqa: E402
    HOLD_SECONDS,
    RAMP_SECONDS,
    STREAM_PIECES,
    STREAM_SECONDS,
    first_delta_scenario,
    many_streams_scenario,
    print_streams,
    streams_goals_line,
)
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/provider_load"
REDIS_URL = "redis://127.0.0.1:6379/9"


@contextlib.contextmanager
def deployment(latency: float, args, logs: Path, tag: str | None = None):
    """The fake provider at ``latency``, the web command and the workers, ready; yields
    ``(fake, port, web, io_workers)``. Stops them all on the way out. ``tag`` names the logs
    (the latency unless given)."""
    flush_redis(args.redis_url, BENCH_NAME)
    with FakeOpenAI() as fake:
        fake.latency = latency
        port = free_port()
        env = product_env(args.database_url, args.redis_url, port, AI_BASE_URL=fake.base_url)
        tag = tag or f"{latency:g}s"
        web_args = loopback_web_args(procfile_command("web"), env, port)
        web = WebServer(web_args, env, port, logs / f"web-{tag}.log")
        started = [web]
        try:
            web.start()
            workers = []
            for kind, count in (("worker", args.cpu_workers), ("worker-io", args.io_workers)):
                for i in range(count):
                    label = f"{kind}-{i}-{tag}"
                    workers.append(start_worker(kind, env, logs / f"{label}.log", label))
                    started.append(workers[-1])
            wait_registered(args.redis_url, workers)
            io = [worker for worker in workers if worker.name.startswith("worker-io")]
            yield fake, port, web, io
        finally:
            stop_groups([group.process for group in started if group.process is not None])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, nargs="+", default=[2.0, 0.2])
    parser.add_argument(
        "--runs", type=int, nargs="*", default=[40, 300, 1000], help="none: no async runs"
    )
    add_service_options(parser, DATABASE_URL, REDIS_URL)
    parser.add_argument("--io-workers", type=int, default=1)
    parser.add_argument("--cpu-workers", type=int, default=1)
    parser.add_argument("--clients", type=int, default=256, help="threads submitting")
    parser.add_argument("--sync", action="store_true", help="also the Prefer: wait=60 run")
    parser.add_argument("--tool", default="toast-speech-writer", help="an llm.chat tool")
    parser.add_argument(
        "--streams",
        type=int,
        nargs="?",
        const=500,
        default=None,
        metavar="N",
        help="also the streamed runs: the first delta, then N streams at once (500)",
    )
    return parser.parse_args(argv)


def streams_scenarios(args, raw_key: str, logs: Path):
    """A deployment whose provider streams its answers slowly: the first-delta runs, then
    ``--streams`` runs at once (none for 0), then as many held open (sent over
    ``RAMP_SECONDS``, each answer written over ``HOLD_SECONDS``)."""
    with deployment(0.0, args, logs, tag="streams") as (fake, port, web, io):
        fake.stream_pieces, fake.stream_seconds = STREAM_PIECES, STREAM_SECONDS
        first = first_delta_scenario(args, raw_key, fake, port)
        many = held = None
        if args.streams:
            many = many_streams_scenario(args.streams, args, raw_key, fake, port, web, io)
            fake.stream_seconds = HOLD_SECONDS
            held = many_streams_scenario(
                args.streams, args, raw_key, fake, port, web, io, ramp=RAMP_SECONDS
            )
    return first, many, held


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="provider-load-"))
    print(f"logs of the processes: {logs}", flush=True)
    results: list[dict] = []
    latencies = list(args.latency) if args.runs else []
    if args.sync and GOAL_LATENCY not in latencies:
        latencies.append(GOAL_LATENCY)  # a deployment for the sync run alone
    with stopping_early() as stopped:  # every deployment is stopped on the way out
        reset_database(args.database_url)
        flush_redis(args.redis_url)
        env = product_env(args.database_url, args.redis_url)
        raw_key = create_key(functools.partial(flask, env))[1]
        print(
            f"tool {args.tool}; {args.io_workers} I/O and {args.cpu_workers} CPU worker(s); "
            f"{args.clients} client threads; {args.database_url}; {args.redis_url}",
            flush=True,
        )
        if args.runs:
            print_header()
        for latency in latencies:
            with deployment(latency, args, logs) as (fake, port, web, io):
                if latency in args.latency:
                    for count in args.runs:
                        result = async_scenario(count, latency, args, raw_key, fake, port, web, io)
                        print_row(result)
                        results.append(result)
                if args.sync and latency == GOAL_LATENCY:
                    sync = sync_scenario(args.tool, raw_key, fake, port)
        if args.streams is not None:
            first, many, held = streams_scenarios(args, raw_key, logs)
        if args.sync:
            print_sync(sync)
        if args.streams is not None:
            print_streams(first, many, held, args.tool)
        print()
        for result in results:
            print(goals_line(result, args.io_workers))
        if args.streams is not None:
            print(streams_goals_line(first, many, held))
    if stopped.error:
        return 2
    report_log_problems(logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
