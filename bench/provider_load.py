"""Provider-backed runs in flight: how many queued runs of a provider tool the I/O worker
keeps waiting on the provider at once, and what that costs.

    .venv/bin/python bench/provider_load.py [--runs 300 --latency 2] [--sync]

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

The processes' logs go to a temporary folder outside the repository (its path is
printed); lines with ERROR or Traceback in them are counted at the end. Every process
group started is stopped at the end (SIGTERM, SIGKILL after 15 s), also on errors and
Ctrl-C. Exit status: 0 (a bench reports, it does not assert), 2 when setup failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from faults import (
    ROOT,
    SetupFailed,
    WebServer,
    create_key,
    expand,
    free_port,
    loopback_web_args,
    procfile_command,
    product_env,
    request,
)

sys.path.insert(0, str(ROOT))
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

STORIES = "We met at school and he once sailed a bathtub across the lake."
ENDED = ("succeeded", "failed", "canceled")
BENCH_NAME = "provider_load-bench"  # the bench's own connections, left out of the counts
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The goals, for 2 s latency, 300 runs and one I/O worker.
GOAL_LATENCY, GOAL_RUNS = 2.0, 300
GOAL_WALL_S, GOAL_PEAK, GOAL_RSS_MB, GOAL_CPU_MS = 10.0, 200, 400, 5.0
SYNC_RUNS, SYNC_WAIT = 200, 60


# --------------------------------------------------------------------------- setup


def reset_database(url: str) -> None:
    """Drop and create the database ``url`` names (as bench/engines.py does)."""
    import psycopg
    from sqlalchemy.engine import make_url

    target = make_url(url)
    name = target.database or ""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise SetupFailed(f"--database-url must name a plain database (got {name!r})")
    admin = target.set(drivername="postgresql", database="postgres")
    try:
        with psycopg.connect(
            admin.render_as_string(hide_password=False), autocommit=True, connect_timeout=5
        ) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.Error as error:
        raise SetupFailed(f"PostgreSQL at {admin.render_as_string()} refused: {error}") from None


def redis_client(url: str):
    """A client of ``url`` named so that the counts of clients leave it out."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, client_name=BENCH_NAME)


def flush_redis(url: str) -> None:
    import redis

    try:
        redis_client(url).flushdb()
    except redis.RedisError as error:
        raise SetupFailed(f"Redis at {url} refused: {error}") from None


def pg_connect(url: str):
    """An autocommit psycopg connection to ``url``, named so that the counts leave it out."""
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return psycopg.connect(plain, autocommit=True, application_name=BENCH_NAME)


def local_command(command: str, env: dict) -> list[str]:
    """A Procfile command's words, with ``python`` as this interpreter and ``flask`` or
    ``gunicorn`` taken from its environment."""
    args = expand(command, env)
    if args[0] == "python":
        args[0] = sys.executable
    elif args[0] in ("flask", "gunicorn"):
        local = Path(sys.executable).with_name(args[0])
        if local.exists():
            args[0] = str(local)
    return args


def start_process(args: list[str], env: dict, log_path: Path) -> subprocess.Popen:
    """``args`` in its own process group, its output to ``log_path``."""
    with log_path.open("w") as log:
        return subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_for_workers(redis_url: str, workers: dict[str, subprocess.Popen], logs: Path,
                     timeout: float = 90) -> None:  # fmt: skip
    """Wait until every worker process is registered in Redis (``rq:workers``)."""
    client = redis_client(redis_url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in workers.items():
            if process.poll() is not None:
                raise SetupFailed(
                    f"the {name} process exited ({process.returncode}):\n"
                    f"{log_tail(logs / f'{name}.log')}"
                )
        if client.scard("rq:workers") >= len(workers):
            return
        time.sleep(0.2)
    raise SetupFailed(f"the workers did not register within {timeout:.0f} s")


def stop_groups(processes: list[subprocess.Popen], grace: float = 15) -> None:
    """SIGTERM each process group, then SIGKILL what is left after ``grace`` seconds."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    for process in processes:  # the leader, or children it left behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


@contextlib.contextmanager
def deployment(latency: float, args, raw_key: str, logs: Path, processes: list):
    """The fake provider at ``latency``, the web command and the workers, ready; yields
    ``(fake, port, web_process, io_processes)``. Stops them all on the way out."""
    flush_redis(args.redis_url)
    with FakeOpenAI() as fake:
        fake.latency = latency
        port = free_port()
        env = product_env(args.database_url, args.redis_url, port, AI_BASE_URL=fake.base_url)
        started: list[subprocess.Popen] = []
        try:
            tag = f"{latency:g}s"
            web = WebServer(
                loopback_web_args(procfile_command("web"), env, port),
                env,
                port,
                logs / f"web-{tag}.log",
            )
            workers: dict[str, subprocess.Popen] = {}
            try:
                web.start()
            finally:
                if web.process is not None:
                    started.append(web.process)
                    processes.append(web.process)
            for name, count in (("worker", args.cpu_workers), ("worker-io", args.io_workers)):
                command = local_command(procfile_command(name), env)
                for i in range(count):
                    label = f"{name}-{i}-{tag}"
                    process = start_process(command, env, logs / f"{label}.log")
                    started.append(process)
                    processes.append(process)
                    workers[label] = process
            wait_for_workers(args.redis_url, workers, logs)
            io = [p for label, p in workers.items() if label.startswith("worker-io")]
            yield fake, port, web.process, io
        finally:
            stop_groups(started)


# --------------------------------------------------------------------------- measuring


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process ``pid`` alone (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime summed over the processes of the group ``pgid``."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(entry)) == pgid:
                    total += cpu_seconds(int(entry))
    return total


def rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` in MB (0 when it is gone)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


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

        database = make_url(self.database_url).database
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


def percentile(values: list[float], p: float) -> float:
    """Nearest rank (0 for no values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else 0.0


def post_run(
    port: int, headers: dict, body: bytes, timeout: float
) -> tuple[float, float, int, dict]:
    """One POST /v1/tools/run: (wall clock sent, seconds to answer, status, JSON body);
    status 0 for a broken connection."""
    sent, began = time.time(), time.monotonic()
    try:
        status, raw = request(port, "POST", "/v1/tools/run", headers, body, timeout=timeout)
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = {"raw": raw[:200].decode(errors="replace")}
    except (OSError, http.client.HTTPException) as error:
        status, answer = 0, {"error": f"{type(error).__name__}: {error}"}
    return sent, time.monotonic() - began, status, answer


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


# --------------------------------------------------------------------------- scenarios


def async_scenario(count: int, latency: float, args, raw_key: str, fake, port: int,
                   web: subprocess.Popen, io: list[subprocess.Popen]) -> dict:  # fmt: skip
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


def goals_line(r: dict, io_workers: int) -> str:
    """The scenario against the issue's goals (set for 2 s, N=300, one I/O worker)."""

    def verdict(ok: bool) -> str:
        return "met" if ok else "not met"

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


def count_log_problems(logs: Path) -> None:
    """Lines with ERROR or Traceback in each log."""
    print(f"\nlogs: {logs}")
    for path in sorted(logs.glob("*.log")):
        text = path.read_text(errors="replace").splitlines()
        errors = sum(1 for line in text if "ERROR" in line)
        tracebacks = sum(1 for line in text if "Traceback" in line)
        print(f"  {path.name}: {len(text)} lines, {errors} with ERROR, {tracebacks} Traceback")


# --------------------------------------------------------------------------- the CLI


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, nargs="+", default=[2.0, 0.2])
    parser.add_argument("--runs", type=int, nargs="+", default=[40, 300, 1000])
    parser.add_argument(
        "--database-url", default="postgresql://postgres@127.0.0.1:5432/provider_load"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--io-workers", type=int, default=1)
    parser.add_argument("--cpu-workers", type=int, default=1)
    parser.add_argument("--clients", type=int, default=256, help="threads submitting")
    parser.add_argument("--sync", action="store_true", help="also the Prefer: wait=60 run")
    parser.add_argument("--tool", default="toast-speech-writer", help="an llm.chat tool")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` runs
    logs = Path(tempfile.mkdtemp(prefix="provider-load-"))
    print(f"logs of the processes: {logs}", flush=True)
    processes: list[subprocess.Popen] = []
    results: list[dict] = []
    latencies = list(args.latency)
    if args.sync and GOAL_LATENCY not in latencies:
        latencies.append(GOAL_LATENCY)  # a deployment for the sync run alone
    try:
        reset_database(args.database_url)
        flush_redis(args.redis_url)
        raw_key = create_key(product_env(args.database_url, args.redis_url, 0))
        print(
            f"tool {args.tool}; {args.io_workers} I/O and {args.cpu_workers} CPU worker(s); "
            f"{args.clients} client threads; {args.database_url}; {args.redis_url}",
            flush=True,
        )
        print_header()
        for latency in latencies:
            with deployment(latency, args, raw_key, logs, processes) as (fake, port, web, io):
                if latency in args.latency:
                    for count in args.runs:
                        result = async_scenario(count, latency, args, raw_key, fake, port, web, io)
                        print_row(result)
                        results.append(result)
                if args.sync and latency == GOAL_LATENCY:
                    sync = sync_scenario(args.tool, raw_key, fake, port)
        if args.sync:
            print_sync(sync)
        print()
        for result in results:
            print(goals_line(result, args.io_workers))
    except SetupFailed as failed:
        print(f"SETUP FAILED:\n{failed}", file=sys.stderr)
        return 2
    finally:
        stop_groups(processes)
    count_log_problems(logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
