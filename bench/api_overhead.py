"""What the product's API pipeline costs, as a ratio to a bare Flask JSON endpoint.

One run measures, for each gunicorn worker class (``sync``, ``gthread`` and ``web``: the worker
class of the Procfile's web command, with its ``--threads`` and ``--worker-connections``),
side by side:

- ``bare``:   ``GET /hello`` of ``bench/hello_app.py`` (the baseline),
- ``whoami``: the product's authenticated ``GET /v1/public/whoami``,
- ``tool``:   the product's inline local tool run ``POST /v1/tools/run``.

It builds a fresh PostgreSQL database (``bench_api``) and uses Redis db 14, sets the product up
with the documented operator commands, serves each target with gunicorn (2 workers) on a free
loopback port, checks the answers, warms up, and loads it with wrk (or, when wrk is missing,
a Python keep-alive load generator). See ``bench/README.md``.

Exit status: 0 when every measured request succeeded (whether or not a target was met),
1 when a measured run had errors (the figures are then invalid), 2 when setup failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "api_overhead.json"

DATABASE = "bench_api"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/14"
PRODUCT_ENV = {
    "DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/{DATABASE}",
    "REDIS_URL": REDIS_URL,
    "SECRET_KEY": "bench",
    "APP_ENV": "production",
    # Required outside development; the bench reaches it on loopback, which is trusted.
    "PUBLIC_BASE_URL": "http://127.0.0.1",
}
EMAIL = "bench@example.com"
SAMPLE_TEXT = "Flask is a lightweight web framework. It keeps the core small and easy to extend."
WORKER_CLASSES = ("sync", "gthread", "web")
# Ratio to bare Flask that each product target should keep (the targets).
TARGETS = {"whoami": 0.50, "tool": 0.35}
# Machine CPU share (%) busy before a run, with the server idle, above which figures are suspect.
BUSY_WARNING = 15
LABELS = {
    "bare": "bare Flask GET /hello",
    "whoami": "GET /v1/public/whoami",
    "tool": "POST /v1/tools/run",
}


class SetupFailed(Exception):
    """The bench could not be set up; the message says what failed and how."""


def procfile_web_worker() -> tuple[str, list[str]]:
    """The worker class of the Procfile's web command and its options that shape a worker
    (``--threads``, ``--worker-connections``), with ``${NAME:-default}`` filled from the
    environment as the shell would."""
    command = next(
        (
            line.split(":", 1)[1]
            for line in (ROOT / "Procfile").read_text().splitlines()
            if line.split(":", 1)[0].strip() == "web"
        ),
        "",
    )

    def fill(found: re.Match) -> str:
        return os.environ.get(found.group(1)) or (found.group(2) or "")

    words = shlex.split(re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", fill, command))
    worker_class, options = "sync", []
    for name, value in zip(words, words[1:], strict=False):
        if name in ("--worker-class", "-k"):
            worker_class = value
        elif name in ("--threads", "--worker-connections"):
            options += [name, value]
    return worker_class, options


@dataclass
class Request:
    """One HTTP request that a load generator repeats."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


@dataclass
class Measurement:
    """What one measured load run produced."""

    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int
    worker_cpu_split: list[float] = field(default_factory=list)
    background_cpu_pct: float = -1.0
    # Requests/s of each round (the targets take turns, see ``measure_interleaved``).
    round_rps: list[float] = field(default_factory=list)

    @property
    def errors(self) -> int:
        """Every request that did not end in a 2xx/3xx answer."""
        return self.non_2xx + self.socket_errors


# --------------------------------------------------------------------------- setup


def run_command(args: list[str], env: dict[str, str] | None = None) -> str:
    """Run an operator command from the repository root; return stdout or raise SetupFailed."""
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SetupFailed(
            f"command failed (exit {done.returncode}): {' '.join(args)}\n"
            f"--- stdout\n{done.stdout.strip()}\n--- stderr\n{done.stderr.strip()}"
        )
    return done.stdout


def product_env(settings: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every product command and server runs with: ``settings`` (this
    bench's, by default) over the caller's, without what would point it elsewhere."""
    env = dict(os.environ)
    for name in ("FLASK_APP", "FLASK_ENV", "FLASK_DEBUG", "AI_BASE_URL", "AI_API_KEY"):
        env.pop(name, None)
    env.update(PRODUCT_ENV if settings is None else settings)
    return env


def reset_database(database: str = DATABASE) -> None:
    """Drop and create ``database`` (PostgreSQL, trust auth, user postgres): ``bench_api``
    by default."""
    try:
        import psycopg
    except ImportError as missing:
        raise SetupFailed(f"psycopg is not installed in this interpreter: {missing}") from None
    try:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {database}")
    except psycopg.Error as error:
        raise SetupFailed(f"PostgreSQL at {PG_ADMIN_URL} refused: {error}") from None


def flush_redis() -> None:
    """Empty Redis db 14 so that no counter of an earlier run is left."""
    try:
        import redis
    except ImportError as missing:
        raise SetupFailed(f"redis (the client) is not installed: {missing}") from None
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=5).flushdb()
    except redis.RedisError as error:
        raise SetupFailed(f"Redis at {REDIS_URL} refused: {error}") from None


def flask_command(*args: str) -> list[str]:
    """``flask --app app ARGS`` with this interpreter (the virtualenv's Flask)."""
    return [sys.executable, "-m", "flask", "--app", "app", *args]


def set_up_product() -> tuple[str, str]:
    """Build the database, an Agency account and an unlimited key; return (key id, raw key)."""
    env = product_env()
    commands = run_command(flask_command("--help"), env)
    missing = [group for group in ("accounts", "keys") if group not in commands]
    if missing:
        raise SetupFailed(
            f"`flask --app app --help` lists no {' or '.join(missing)} command group:\n{commands}"
        )
    reset_database()
    flush_redis()
    run_command(flask_command("db", "upgrade"), env)
    run_command(flask_command("accounts", "create", EMAIL, "--plan", "agency"), env)
    created = run_command(flask_command("keys", "create", EMAIL, "--name", "bench"), env)
    lines = [line.strip() for line in created.strip().splitlines() if line.strip()]
    found = re.search(r"Created (?:sandbox )?key (\S+) \(", created)
    if not lines or not found:
        raise SetupFailed(f"unexpected output of `keys create`:\n{created}")
    key_id, raw_key = found.group(1), lines[-1]
    # Limits are still evaluated on every request; they just never refuse during the bench.
    run_command(
        flask_command(
            "keys", "set-limits", key_id, "--per-minute", "100000000", "--daily", "100000000"
        ),
        env,
    )
    return key_id, raw_key


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A gunicorn process group serving one WSGI app on a loopback port."""

    def __init__(self, name: str, app: str, worker_class: str, workers: int, threads: int):
        self.name = name
        self.port = free_port()
        self.log_path = RESULTS_DIR / f"gunicorn-{name}-{worker_class}.log"
        options = []
        if worker_class == "web":  # the Procfile's web command's worker class, as it runs it
            worker_class, options = procfile_web_worker()
        elif worker_class == "gthread":
            options = ["--threads", str(threads)]
        self.args = [
            sys.executable, "-m", "gunicorn", app,
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(workers),
            "--worker-class", worker_class,
            *options,
            "--timeout", "75",
            "--log-level", "warning",
        ]  # fmt: skip
        self.env = product_env() if name == "product" else dict(os.environ)
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start gunicorn in its own process group (so that stop() reaches every worker)."""
        log = self.log_path.open("w")
        self.process = subprocess.Popen(
            self.args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()

    def wait_until_ready(self, path: str, timeout: float = 60.0) -> None:
        """Poll ``path`` until any HTTP answer comes back; raise SetupFailed if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SetupFailed(
                    f"gunicorn ({self.name}) exited with {self.process.returncode}: "
                    f"{' '.join(self.args)}\n--- {self.log_path}\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError, http.client.HTTPException):
                fetch(self.port, Request("GET", path), timeout=2)
                return
            time.sleep(0.2)
        raise SetupFailed(
            f"gunicorn ({self.name}) did not answer {path} within {timeout:.0f} s\n"
            f"--- {self.log_path}\n{self.log_tail()}"
        )

    def worker_pids(self) -> list[int]:
        """The pids of this master's worker processes (Linux /proc)."""
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    pids.append(int(stat.parent.name))
        return sorted(pids)

    def log_tail(self, lines: int = 40) -> str:
        """The end of gunicorn's log, for error messages."""
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        """Stop gracefully (SIGTERM), then kill the whole process group if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


def cpu_ticks(pids: list[int]) -> list[int]:
    """User + system CPU ticks consumed so far by each pid (0 for one that is gone)."""
    ticks = []
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks.append(int(fields[11]) + int(fields[12]))
        except (OSError, IndexError, ValueError):
            ticks.append(0)
    return ticks


# --------------------------------------------------------------------------- requests


def fetch(port: int, request: Request, timeout: float = 10) -> tuple[int, dict | None, str]:
    """Send one request; return (status, parsed JSON or None, raw text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        body = request.body.encode() if request.body else None
        conn.request(request.method, request.path, body=body, headers=request.headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
    finally:
        conn.close()
    try:
        return response.status, json.loads(text), text
    except ValueError:
        return response.status, None, text


def pick_tool(port: int, wanted: str | None) -> dict:
    """Choose the light inline tool to run: ``--tool`` or the catalogue's best fit."""
    status, listing, text = fetch(port, Request("GET", "/v1/tools"))
    if status != 200 or not isinstance(listing, dict) or "tools" not in listing:
        raise SetupFailed(f"GET /v1/tools answered {status}: {text[:2000]}")
    tools = listing["tools"]
    if wanted:
        for tool in tools:
            if tool.get("slug") == wanted:
                return tool
        raise SetupFailed(f"--tool {wanted}: no such slug in GET /v1/tools")

    def takes_text(tool: dict) -> bool:
        schema = tool.get("input_schema") or {}
        primary = (schema.get("properties") or {}).get(tool.get("primary_field"), {})
        return primary.get("type", "string") == "string"

    inline = [t for t in tools if t.get("queue") is False and t.get("available", True)]
    inline = [t for t in inline if takes_text(t)] or inline
    if not inline:
        raise SetupFailed('GET /v1/tools lists no tool with "queue": false (pass --tool SLUG)')

    def preference(tool: dict) -> int:
        slug, category = tool.get("slug", ""), str(tool.get("category", ""))
        if "word" in slug and "count" in slug:
            return 0
        if any(word in category for word in ("writing", "analysis")):
            return 1
        return 2

    return min(inline, key=preference)  # min() keeps catalogue order among equals


def product_requests(raw_key: str, slug: str) -> dict[str, Request]:
    """The two authenticated product requests that are measured."""
    auth = {"X-SVC-API-Key": raw_key}
    body = json.dumps({"slug": slug, "input": SAMPLE_TEXT})
    return {
        "whoami": Request("GET", "/v1/public/whoami", auth),
        "tool": Request(
            "POST", "/v1/tools/run", {**auth, "Content-Type": "application/json"}, body
        ),
    }


def verify(port: int, target: str, request: Request, key_id: str = "") -> None:
    """Check one answer of ``target`` is the right one before measuring it."""
    status, data, text = fetch(port, request)
    problem = None
    if status != 200 or not isinstance(data, dict):
        problem = f"status {status}"
    elif target == "bare" and data != {"hello": "world"}:
        problem = "body is not {'hello': 'world'}"
    elif target == "whoami" and str((data.get("key") or {}).get("id")) != key_id:
        problem = f"key.id is not {key_id}"
    elif target == "tool" and data.get("status") != "succeeded":
        problem = f"status is {data.get('status')!r}, not 'succeeded'"
    if problem:
        raise SetupFailed(
            f"{request.method} {request.path} is wrong before measuring ({problem}):\n{text[:3000]}"
        )


# --------------------------------------------------------------------------- load generators

WRK_SCRIPT = """
wrk.method = {method}
wrk.body = {body}
{headers}
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH_RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d status=%d socket=%d\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def lua_string(value: str) -> str:
    """A Lua string literal (JSON escapes are a subset Lua reads the same way)."""
    return json.dumps(value)


def ensure_wrk() -> str | None:
    """Path of wrk; install the Debian package when missing and allowed (root); else None."""
    found = shutil.which("wrk")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("wrk is missing: apt-get install -y wrk ...", flush=True)
    for args in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "wrk"]):
        if subprocess.run(args, capture_output=True).returncode != 0:
            return None
    return shutil.which("wrk")


class Wrk:
    """wrk with a Lua script that sets the request and prints a parseable summary."""

    name = "wrk"

    def __init__(self, path: str, threads: int):
        self.path = path
        self.threads = threads

    def script(self, request: Request) -> str:
        """The Lua script wrk sends ``request`` with (and reports its figures by)."""
        headers = "\n".join(
            f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in request.headers.items()
        )
        return WRK_SCRIPT.format(
            method=lua_string(request.method), body=lua_string(request.body), headers=headers
        )

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        """Load ``request`` for ``seconds`` on ``connections`` keep-alive connections."""
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
            lua.write(self.script(request))
        try:
            args = [
                self.path, f"-t{min(self.threads, connections)}", f"-c{connections}",
                f"-d{max(1, round(seconds))}s", "--latency", "-s", lua.name,
                f"http://127.0.0.1:{port}{request.path}",
            ]  # fmt: skip
            done = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60)
        finally:
            os.unlink(lua.name)
        found = re.search(
            r"BENCH_RESULT requests=(\d+) duration_us=(\d+) p50_us=(\d+) p99_us=(\d+) "
            r"status=(\d+) socket=(\d+)",
            done.stdout,
        )
        if done.returncode != 0 or not found:
            raise SetupFailed(f"wrk failed: {' '.join(args)}\n{done.stdout}\n{done.stderr}")
        requests, duration_us, p50, p99, status, sockets = map(int, found.groups())
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", done.stdout)
        if non_2xx:  # wrk's own line; the Lua figure is the same counter
            status = max(status, int(non_2xx.group(1)))
        seconds_taken = duration_us / 1e6
        return Measurement(
            requests=requests,
            seconds=round(seconds_taken, 3),
            rps=round(requests / seconds_taken, 1),
            p50_ms=round(p50 / 1000, 3),
            p99_ms=round(p99 / 1000, 3),
            non_2xx=status,
            socket_errors=sockets,
        )


class PythonLoad:
    """Fallback load generator: one thread per keep-alive ``http.client`` connection.

    Far weaker than wrk (the GIL caps it near a few thousand requests/s and it shares the two
    cores with the servers), so its ratios understate fast targets; prefer wrk.
    """

    name = "python (threads + http.client)"

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        """Load ``request`` for ``seconds`` on ``connections`` keep-alive connections."""
        latencies: list[list[float]] = [[] for _ in range(connections)]
        failures = [[0, 0] for _ in range(connections)]  # [non-2xx, socket errors]
        start = time.perf_counter()
        deadline = start + seconds
        body = request.body.encode() if request.body else None

        def worker(index: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                try:
                    conn.request(request.method, request.path, body=body, headers=request.headers)
                    response = conn.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException):
                    failures[index][1] += 1
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    continue
                latencies[index].append(time.perf_counter() - began)
                if not 200 <= response.status < 400:
                    failures[index][0] += 1
            conn.close()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        samples = sorted(value for per_thread in latencies for value in per_thread)
        requests = len(samples) + sum(f[1] for f in failures)

        def percentile(p: float) -> float:
            if not samples:
                return 0.0
            return samples[min(len(samples) - 1, int(len(samples) * p / 100))] * 1000

        return Measurement(
            requests=requests,
            seconds=round(elapsed, 3),
            rps=round(len(samples) / elapsed, 1),
            p50_ms=round(percentile(50), 3),
            p99_ms=round(percentile(99), 3),
            non_2xx=sum(f[0] for f in failures),
            socket_errors=sum(f[1] for f in failures),
        )


# --------------------------------------------------------------------------- round trips


class RedisMonitor:
    """Counts the commands clients send to Redis db 14 (MONITOR on a raw socket, in a thread).

    Commands that Lua scripts run are left out: they are not round trips.
    """

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.stopping = threading.Event()
        self.sock = socket.create_connection(("127.0.0.1", 6379), timeout=0.2)
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
                found = re.match(rb'\+[\d.]+ \[14 (?!lua)[^\]]*\] "([^"]+)"', line)
                if found:
                    name = found.group(1).decode().upper()
                    self.counts[name] = self.counts.get(name, 0) + 1

    def stop(self) -> dict[str, int]:
        """Stop listening; return the command counts."""
        time.sleep(0.3)  # let the last replies arrive
        self.stopping.set()
        self.thread.join(timeout=2)
        self.sock.close()
        return self.counts


PG_STATS_DELAY = 11  # seconds: PGSTAT_IDLE_INTERVAL (10 s) plus a margin


def postgres_counters() -> dict[str, int]:
    """Cumulative transaction and row counters of the bench database."""
    import psycopg

    columns = ("xact_commit", "xact_rollback", "tup_fetched", "tup_inserted", "tup_updated")
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT {', '.join(columns)} FROM pg_stat_database WHERE datname = %s", (DATABASE,)
        ).fetchone()
    return dict(zip(columns, row, strict=True))


def probe_round_trips(port: int, request: Request, count: int = 200) -> dict:
    """Send ``count`` requests one by one and count the Redis commands and SQL work per request.

    Not a measurement of speed: MONITOR slows Redis down. A PostgreSQL backend that goes idle
    publishes its statistics to ``pg_stat_database`` up to 10 s later (PostgreSQL 15+), hence
    the pauses before reading them.
    """
    time.sleep(PG_STATS_DELAY)
    sql_before = postgres_counters()
    monitor = RedisMonitor()
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
    sql_after = postgres_counters()
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


def profile_worker(
    server: Server, loadgen, request: Request, args: argparse.Namespace, out: Path
) -> dict:
    """Record the busiest worker with py-spy under load (extra, unmeasured); summarise it.

    The busiest, because a gthread worker may get no connection at all.
    """
    seconds = max(2, round(args.duration))
    load = threading.Thread(
        target=loadgen.run, args=(server.port, request, seconds + 2, args.connections)
    )
    load.start()
    pids = server.worker_pids()
    before = cpu_ticks(pids)
    time.sleep(1)
    used = [after - start for after, start in zip(cpu_ticks(pids), before, strict=True)]
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


def process_ticks() -> dict[int, tuple[int, str]]:
    """CPU ticks used so far and the command line of every process (Linux /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            found[int(stat.parent.name)] = (int(fields[11]) + int(fields[12]), command.strip())
    return found


def background_cpu(seconds: float = 1.0) -> tuple[float, list[str]]:
    """Share of the machine's CPU busy now (0-100; -1 if unknown) and the busiest processes."""

    def machine() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return sum(values), idle

    try:
        (total0, idle0), procs0 = machine(), process_ticks()
        time.sleep(seconds)
        (total1, idle1), procs1 = machine(), process_ticks()
    except (OSError, ValueError, IndexError):
        return -1.0, []
    if total1 == total0:
        return -1.0, []
    per_second = os.sysconf("SC_CLK_TCK") * seconds
    busiest = sorted(
        (
            (ticks - procs0[pid][0], pid, command)
            for pid, (ticks, command) in procs1.items()
            if pid in procs0 and ticks > procs0[pid][0]
        ),
        reverse=True,
    )[:3]
    names = [f"{100 * t / per_second:.0f}% pid {pid} {cmd[:60]}" for t, pid, cmd in busiest]
    return round(100 * (1 - (idle1 - idle0) / (total1 - total0)), 1), names


# --------------------------------------------------------------------------- the run


def measure_interleaved(targets: dict[str, tuple], loadgen, args) -> dict[str, Measurement]:
    """Measure every target, taking turns: ``--rounds`` rounds in which each target is
    loaded for its share of ``--duration``, so that the machine's drift (figures here move
    by a fifth from one minute to the next) falls on every target alike.

    ``targets`` maps a target to its (server, request); every server is already up. Each
    target is warmed up first. A target's figures add up its rounds: requests per second
    over all of them, and the median of the rounds' p50 and p99.
    """
    for server, request in targets.values():
        loadgen.run(server.port, request, args.warmup, args.connections)
    slices: dict[str, list[Measurement]] = {target: [] for target in targets}
    cpu: dict[str, dict[int, int]] = {target: {} for target in targets}
    busiest_seen = -1.0
    for _ in range(args.rounds):
        busy, busiest = background_cpu()
        if busy > BUSY_WARNING:
            print(
                f"  WARNING: the machine is {busy:.0f}% busy with no load applied: something "
                "else is running, these figures will be low and noisy. Busiest (% of one "
                "core):\n    " + "\n    ".join(busiest),
                flush=True,
            )
        busiest_seen = max(busiest_seen, busy)
        for target, (server, request) in targets.items():
            pids = server.worker_pids()
            before = cpu_ticks(pids)
            part = loadgen.run(server.port, request, args.duration / args.rounds, args.connections)
            for pid, after, start in zip(pids, cpu_ticks(pids), before, strict=True):
                cpu[target][pid] = cpu[target].get(pid, 0) + after - start
            slices[target].append(part)
    results = {}
    for target, parts in slices.items():
        requests, seconds = sum(p.requests for p in parts), sum(p.seconds for p in parts)
        result = Measurement(
            requests=requests,
            seconds=round(seconds, 3),
            rps=round(requests / seconds, 1) if seconds else 0.0,
            p50_ms=round(statistics.median(p.p50_ms for p in parts), 3),
            p99_ms=round(statistics.median(p.p99_ms for p in parts), 3),
            non_2xx=sum(p.non_2xx for p in parts),
            socket_errors=sum(p.socket_errors for p in parts),
            background_cpu_pct=busiest_seen,
            round_rps=[p.rps for p in parts],
        )
        used = list(cpu[target].values())
        if sum(used):
            result.worker_cpu_split = [round(100 * u / sum(used)) for u in used]
        flag = "  <-- ERRORS" if result.errors else ""
        print(
            f"  {target:<7} {result.rps:>9.1f} req/s  p50 {result.p50_ms:7.2f} ms  "
            f"p99 {result.p99_ms:7.2f} ms  errors {result.errors}{flag}",
            flush=True,
        )
        results[target] = result
    return results


def bench_worker_class(worker_class: str, loadgen, args, product: dict | None) -> dict:
    """Measure the bare app and (when set up) the product under one worker class, both
    servers up at once and the targets taking turns."""
    print(f"\n== worker class {worker_class} ==", flush=True)
    bare = Server("bare", "bench.hello_app:app", worker_class, args.workers, args.threads)
    server = None
    try:
        bare.start()
        if product is not None:
            server = Server("product", "wsgi:app", worker_class, args.workers, args.threads)
            server.start()
        bare.wait_until_ready("/hello")
        hello = Request("GET", "/hello")
        verify(bare.port, "bare", hello)
        targets = {"bare": (bare, hello)}
        if server is not None:
            server.wait_until_ready("/v1/tools")
            if "tool_slug" not in product:
                product["tool_slug"] = pick_tool(server.port, args.tool)["slug"]
                print(f"  tool: {product['tool_slug']}", flush=True)
            requests = product_requests(product["raw_key"], product["tool_slug"])
            for target, request in requests.items():
                verify(server.port, target, request, product["key_id"])
            if args.probe and "round_trips" not in product:
                product["round_trips"] = {}
                print(f"  counting round trips (about {4 * PG_STATS_DELAY} s) ...", flush=True)
                for target, request in requests.items():
                    probe = probe_round_trips(server.port, request)
                    product["round_trips"][target] = probe
                    print_round_trips(target, probe)
            targets.update({target: (server, request) for target, request in requests.items()})
        results = measure_interleaved(targets, loadgen, args)
        if server is not None and args.profile:
            for target, request in requests.items():
                out = RESULTS_DIR / f"profile-{worker_class}-{target}.txt"
                summary = profile_worker(server, loadgen, request, args, out)
                product.setdefault("profiles", {})[f"{worker_class}/{target}"] = summary
                if summary:
                    print_profile(target, summary, out)
    finally:
        bare.stop()
        if server is not None:
            server.stop()
    return results


def print_table(worker_class: str, results: dict[str, Measurement], args) -> None:
    """One table per worker class: RPS, latency and the ratio to bare Flask with its target."""
    print_ratio_table(worker_class, results, args, LABELS, TARGETS, widths=(26, 10))


def print_ratio_table(
    worker_class: str,
    results: dict[str, Measurement],
    args,
    labels: dict[str, str],
    targets: dict[str, float],
    *,
    widths: tuple[int, int],
) -> None:
    """A worker class's targets as a table: RPS, latency, the ratio to bare Flask with its
    goal and each round's ratio (bench/site.py prints its own with it)."""
    bare = results.get("bare")
    threads = f" x {args.threads} threads" if worker_class == "gthread" else ""
    if worker_class == "web":
        web_class, options = procfile_web_worker()
        threads = f" (the Procfile's: {web_class} {' '.join(options)})"
    print(f"\n{worker_class}: {args.workers} workers{threads}")
    label_width, rps_width = widths
    print(
        f"{'target':<{label_width}}{'RPS':>{rps_width}}{'p50 ms':>9}{'p99 ms':>9}{'vs bare':>9}  "
        f"{'goal':<15}{'rounds':<13}CPU split"
    )
    for target, result in results.items():
        ratio = result.rps / bare.rps if bare and bare.rps else 0.0
        goal = targets.get(target)
        verdict = f">= {goal:.2f} {'PASS' if ratio >= goal else 'BELOW'}" if goal else ""
        spread = round_ratios(result, bare)
        rounds = f"{min(spread):.2f}-{max(spread):.2f}" if spread and target != "bare" else ""
        split = "/".join(f"{share}%" for share in result.worker_cpu_split)
        if result.background_cpu_pct > BUSY_WARNING:
            split += f"  (machine {result.background_cpu_pct:.0f}% busy before: suspect)"
        print(
            f"{labels[target]:<{label_width}}{result.rps:>{rps_width}.0f}{result.p50_ms:>9.2f}"
            f"{result.p99_ms:>9.2f}{ratio:>8.2f}x  {verdict:<15}{rounds:<13}{split}"
        )


def round_ratios(result: Measurement, bare: Measurement | None) -> list[float]:
    """The target's ratio to bare Flask in each round (their spread shows the noise)."""
    if bare is None:
        return []
    return [
        round(rps / bare_rps, 3)
        for rps, bare_rps in zip(result.round_rps, bare.round_rps, strict=True)
        if bare_rps
    ]


def git_commit() -> str:
    """The commit the product was measured at (with ``+dirty`` for uncommitted changes)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        return head + ("+dirty" if dirty else "")
    return "unknown"


def write_json(args, loadgen, product: dict | None, by_class: dict, error: str | None) -> None:
    """Write everything measured to ``bench/results/api_overhead.json``."""
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
        "load_generator": loadgen.name,
        "duration_s": args.duration,
        "connections": args.connections,
        "gunicorn": {
            "workers": args.workers,
            "gthread_threads": args.threads,
            "web": " ".join([procfile_web_worker()[0], *procfile_web_worker()[1]]),
        },
        "tool_slug": (product or {}).get("tool_slug"),
        "targets": TARGETS,
        "results": {},
        "round_trips": (product or {}).get("round_trips", {}),
        "profiles": (product or {}).get("profiles", {}),
        "error": error,
    }
    for worker_class, results in by_class.items():
        bare = results.get("bare")
        report["results"][worker_class] = {
            target: {
                **asdict(result),
                "ratio_to_bare": round(result.rps / bare.rps, 3) if bare and bare.rps else None,
                "round_ratios_to_bare": round_ratios(result, bare),
                "meets_target": (
                    result.rps / bare.rps >= TARGETS[target]
                    if target in TARGETS and bare and bare.rps
                    else None
                ),
            }
            for target, result in results.items()
        }
    RESULTS_FILE.write_text(json.dumps(report, indent=2) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="measured seconds per target")
    parser.add_argument(
        "--rounds", type=int, default=5,
        help="turns the targets take, each measured for duration/rounds seconds a turn",
    )  # fmt: skip
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections")
    parser.add_argument("--wrk-threads", type=int, default=2, help="wrk -t")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per target")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gthread worker")
    parser.add_argument("--tool", help="slug of the inline tool to run (default: picked)")
    parser.add_argument(
        "--worker-class", action="append", choices=WORKER_CLASSES,
        help="measure only this worker class (repeatable; default: all three; web: the "
        "Procfile's web command's worker class and options)",
    )  # fmt: skip
    parser.add_argument(
        "--no-probe", dest="probe", action="store_false",
        help="skip counting Redis commands and SQL work per product request",
    )  # fmt: skip
    parser.add_argument("--bare-only", action="store_true", help="skip the product")
    parser.add_argument(
        "--loadgen", choices=("auto", "wrk", "python"), default="auto",
        help="auto: wrk when present (installed with apt-get when root), else python",
    )  # fmt: skip
    parser.add_argument(
        "--profile", action="store_true",
        help="after measuring, record one product worker with py-spy (extra, unmeasured runs)",
    )  # fmt: skip
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy", help="its path")
    return parser.parse_args(argv)


def interrupt(signum, frame) -> None:
    """Signal handler: turn SIGTERM into KeyboardInterrupt."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Set up, measure every worker class, print the tables, write the JSON; return the status."""
    args = parse_args(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    wrk = ensure_wrk() if args.loadgen != "python" else None
    if args.loadgen == "wrk" and not wrk:
        print("SETUP FAILED: wrk is not installed and could not be installed", file=sys.stderr)
        return 2
    loadgen = Wrk(wrk, args.wrk_threads) if wrk else PythonLoad()
    if args.profile and not shutil.which(args.py_spy):
        print(f"SETUP FAILED: --profile needs py-spy ({args.py_spy} not found)", file=sys.stderr)
        return 2
    print(f"load generator: {loadgen.name}; {args.duration:g} s x {args.connections} connections")
    product = None
    by_class: dict[str, dict[str, Measurement]] = {}
    error = None
    # SIGTERM ends the run like Ctrl-C does, so the finally blocks stop every server.
    signal.signal(signal.SIGTERM, interrupt)
    try:
        if not args.bare_only:
            key_id, raw_key = set_up_product()
            product = {"key_id": key_id, "raw_key": raw_key}
            if args.tool:
                product["tool_slug"] = args.tool
            print(f"product set up: database {DATABASE}, Redis db 14, key {key_id}")
        for worker_class in args.worker_class or WORKER_CLASSES:
            by_class[worker_class] = bench_worker_class(worker_class, loadgen, args, product)
    except SetupFailed as failed:
        error = str(failed)
        print(f"\nSETUP FAILED:\n{failed}", file=sys.stderr)
    except KeyboardInterrupt:
        error = "interrupted"
        print("\ninterrupted", file=sys.stderr)
    for worker_class, results in by_class.items():
        print_table(worker_class, results, args)
    with contextlib.suppress(OSError):
        write_json(args, loadgen, product, by_class, error)
        print(f"\nresults: {RESULTS_FILE.relative_to(ROOT)} (load generator: {loadgen.name})")
    if error:
        return 2
    errors = {
        f"{worker_class}/{target}": result.errors
        for worker_class, results in by_class.items()
        for target, result in results.items()
        if result.errors
    }
    if errors:
        print(
            "\n" + "!" * 72 + "\nINVALID BENCHMARK: requests failed during measured runs "
            f"(non-2xx or socket errors): {errors}\n" + "!" * 72,
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
