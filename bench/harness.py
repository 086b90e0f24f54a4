"""What the benches share, so that each does these things one way.

- where things are: the repository (``ROOT``), ``bench/results/`` (git-ignored), loopback;
- the services: a database dropped and created, a Redis db flushed, the ``--database-url``
  and ``--redis-url`` options, the environment of a production deployment on them, the
  operator commands (``flask --app app ...``) and an Agency key whose limits never refuse;
- the Procfile's processes (``web``, ``worker``, ``worker-io``) with ``${VAR:-default}``
  filled as the shell would, each started in its own process group (``Group``, and
  ``WebServer``, which waits until its URL answers) and stopped as a group: SIGTERM, then
  SIGKILL for whatever is left;
- their logs: the end of one for an error message, the lines with ERROR or Traceback in each;
- one HTTP request on a new loopback connection (``fetch``);
- what a process uses (CPU, RSS) and how busy the machine is;
- percentiles, the commit measured, the JSON reports, a run stopped early (a setup that
  failed, Ctrl-C, SIGTERM) still reporting what it measured.

A bench run as a script has ``bench/`` first on ``sys.path``, where its files would shadow
the project's packages (``bench/engines.py`` and ``engines``): each script puts the
repository root there instead and imports this module as ``bench.harness``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from config import Config

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
LOOPBACK = "127.0.0.1"
# The short text the benches run tools on.
SAMPLE_TEXT = "Flask is a lightweight web framework. It keeps the core small and easy to extend."
EMAIL = "bench@example.com"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Machine CPU share (%) busy before a measurement, with nothing loaded, above which its
# figures are suspect.
BUSY_WARNING = 15
# How long after its answer an inline run's rows are surely written by a process that is
# alive: its batch is written within twice RUN_RECORD_DELAY (services/recorder.py).
BATCHES_WRITTEN = 2 * Config.RUN_RECORD_DELAY + 0.3


class SetupFailed(Exception):
    """The bench could not be set up; the message says what failed and how."""


# --------------------------------------------------------------------------- the services


def add_service_options(
    parser: argparse.ArgumentParser,
    database_url: str | None,
    redis_url: str | None,
    what: str = "",
    *,
    database_help: str | None = None,
    redis_help: str | None = None,
) -> None:
    """``--database-url`` and ``--redis-url``, with these defaults; by default their help
    says the bench drops and creates the one and flushes the other (``what``: of what)."""
    database_help = database_help or (
        f"PostgreSQL database{what}, dropped and created (default {database_url})"
    )
    redis_help = redis_help or f"Redis database{what}, flushed (default {redis_url})"
    parser.add_argument("--database-url", default=database_url, help=database_help)
    parser.add_argument("--redis-url", default=redis_url, help=redis_help)


def psycopg_url(url: str, database: str | None = None) -> str:
    """``url`` as psycopg takes it (no ``+driver``), on ``database`` when given."""
    from sqlalchemy.engine import make_url

    target = make_url(url).set(drivername="postgresql")
    if database:
        target = target.set(database=database)
    return target.render_as_string(hide_password=False)


def admin_url(url: str) -> str:
    """The ``postgres`` database of the server ``url`` is on, as psycopg takes it."""
    return psycopg_url(url, "postgres")


def database_name(url: str) -> str:
    """The database ``url`` names."""
    from sqlalchemy.engine import make_url

    return make_url(url).database or ""


def reset_database(url: str) -> None:
    """Drop and create the database ``url`` names (the server's ``postgres`` db must answer)."""
    import psycopg

    name = database_name(url)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise SetupFailed(f"--database-url must name a plain database (got {name!r})")
    try:
        with psycopg.connect(admin_url(url), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.Error as error:
        raise SetupFailed(f"PostgreSQL at {admin_url(url)} refused: {error}") from None


def flush_redis(url: str, client_name: str | None = None) -> None:
    """Empty the Redis db ``url`` names, so that no counter of an earlier run is left."""
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=5, client_name=client_name).flushdb()
    except redis.RedisError as error:
        raise SetupFailed(f"Redis at {url} refused: {error}") from None


def product_env(
    database_url: str, redis_url: str | None = None, port: int | None = None, **extra: str
) -> dict[str, str]:
    """The environment of a production deployment on these services (no Redis without
    ``redis_url``), reached on loopback (at ``port`` when given): the caller's environment
    without what would point the product elsewhere, and ``extra`` over it."""
    env = dict(os.environ)
    for name in ("FLASK_APP", "FLASK_ENV", "FLASK_DEBUG", "AI_BASE_URL", "AI_API_KEY", "REDIS_URL"):
        env.pop(name, None)
    env.update(
        DATABASE_URL=database_url,
        SECRET_KEY=env.get("SECRET_KEY") or "bench",
        APP_ENV="production",
        # Required outside development; the bench reaches it on loopback, which is trusted.
        PUBLIC_BASE_URL=f"http://{LOOPBACK}" + (f":{port}" if port else ""),
        **extra,
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def flask(env: dict[str, str], *args: str) -> str:
    """Run the operator command ``flask --app app ARGS`` on ``env``; its output, or
    SetupFailed with what it printed."""
    command = [sys.executable, "-m", "flask", "--app", "app", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SetupFailed(
            f"command failed (exit {done.returncode}): flask --app app {shlex.join(args)}\n"
            f"--- stdout\n{done.stdout.strip()}\n--- stderr\n{done.stderr.strip()}"
        )
    return done.stdout


def create_key(run: Callable[..., str], email: str = EMAIL, name: str = "bench") -> tuple[str, str]:
    """Migrate, then an Agency account and a key whose per-minute limit and daily quota are
    evaluated on every request but never refuse: (key id, raw key). ``run`` runs an operator
    command (``functools.partial(flask, env)``, or in the bench's own process)."""
    run("db", "upgrade")
    run("accounts", "create", email, "--plan", "agency")
    created = run("keys", "create", email, "--name", name)
    found = re.search(r"Created (?:sandbox )?key (\S+) \(", created)
    lines = [line.strip() for line in created.strip().splitlines() if line.strip()]
    if not found or not lines:
        raise SetupFailed(f"unexpected output of `keys create`:\n{created}")
    run("keys", "set-limits", found.group(1), "--per-minute", "100000000", "--daily", "100000000")
    return found.group(1), lines[-1]


# --------------------------------------------------------------------------- the Procfile


def procfile_command(process: str = "web") -> str:
    """The Procfile's command line for ``process``."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, sep, command = line.partition(":")
        if sep and name.strip() == process:
            return command.strip()
    raise SetupFailed(f"the Procfile has no {process!r} process")


def expand(command: str, env: dict[str, str]) -> list[str]:
    """``command`` as the shell would run it: ``${NAME:-default}``, ``${NAME}`` and ``$NAME``
    filled from ``env``, then split into words."""

    def fill(found: re.Match) -> str:
        name = found.group(1) or found.group(3)
        value = env.get(name, "")
        if found.group(2) is not None and not value:
            return found.group(2)
        return value

    return shlex.split(re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", fill, command))


def _local(args: list[str]) -> list[str]:
    """``python`` as this interpreter, any other first word (``flask``, ``gunicorn``) from
    this interpreter's environment when it is there."""
    if args[0] == "python":
        return [sys.executable, *args[1:]]
    local = Path(sys.executable).with_name(args[0])
    return [str(local), *args[1:]] if local.exists() else args


def procfile_args(process: str, env: dict[str, str]) -> list[str]:
    """The words of the Procfile's ``process`` on ``env``, run with this interpreter."""
    return _local(expand(procfile_command(process), env))


def loopback_web_args(command: str, env: dict[str, str], port: int) -> list[str]:
    """The web command's words (run with this interpreter) with its ``--bind`` on the
    loopback ``port``."""
    args = _local(expand(command, {**env, "PORT": str(port)}))
    bound = False
    for i, arg in enumerate(args):
        if arg in ("--bind", "-b") and i + 1 < len(args):
            args[i + 1], bound = f"{LOOPBACK}:{port}", True
        elif arg.startswith("--bind="):
            args[i], bound = f"--bind={LOOPBACK}:{port}", True
    if not bound:
        raise SetupFailed(f"the web command has no --bind to move to the loopback: {command}")
    return args


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- process groups


def stop_groups(processes: list[subprocess.Popen], grace: float = 15) -> None:
    """SIGTERM each process's group, then SIGKILL what is left after ``grace`` seconds (the
    leader, or children it left behind)."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def log_tail(path: Path, lines: int = 30) -> str:
    """The end of a log, for an error message."""
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def report_log_problems(folder: Path) -> None:
    """Print, per log in ``folder``, its lines and those with ERROR or Traceback in them."""
    print(f"\nlogs: {folder}")
    for path in sorted(folder.glob("*.log")):
        text = path.read_text(errors="replace").splitlines()
        errors = sum(1 for line in text if "ERROR" in line)
        tracebacks = sum(1 for line in text if "Traceback" in line)
        print(f"  {path.name}: {len(text)} lines, {errors} with ERROR, {tracebacks} Traceback")


class Group:
    """A command in its own process group, so that a signal reaches every process it starts
    (gunicorn's workers, RQ's scheduler); its output goes to ``log_path``."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path, name: str = ""):
        self.args, self.env, self.log_path = args, env, log_path
        self.name = name or log_path.stem
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def launch(self) -> Group:
        """Start the command; do not wait for it."""
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                self.args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return self

    def check(self) -> None:
        """SetupFailed, with the end of its log, if the command has exited."""
        if self.process is not None and self.process.poll() is not None:
            raise SetupFailed(
                f"{self.name} exited with {self.process.returncode}: {shlex.join(self.args)}\n"
                f"--- {self.log_path}\n{log_tail(self.log_path, 40)}"
            )

    def children(self) -> list[int]:
        """The pids of the leader's child processes (gunicorn's workers; Linux /proc)."""
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    pids.append(int(stat.parent.name))
        return sorted(pids)

    def stop(self, grace: float = 15) -> None:
        """SIGTERM to the group, SIGKILL to what is left after ``grace`` seconds."""
        if self.process is not None:
            stop_groups([self.process], grace)


def start_worker(kind: str, env: dict[str, str], log_path: Path, name: str = "") -> Group:
    """The Procfile's ``kind`` of worker (``worker``: the compute queues; ``worker-io``:
    the I/O queues), started."""
    return Group(procfile_args(kind, env), env, log_path, name or kind).launch()


def wait_registered(redis_url: str, workers: list[Group], timeout: float = 90) -> None:
    """Wait until every worker is registered in Redis (``rq:workers``)."""
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for worker in workers:
                worker.check()
            if client.scard("rq:workers") >= len(workers):
                return
            time.sleep(0.2)
    finally:
        client.close()
    raise SetupFailed(f"the workers did not register within {timeout:.0f} s")


class WebServer(Group):
    """A web command (the Procfile's, or gunicorn serving an app) on a loopback ``port``."""

    def __init__(self, args: list[str], env: dict, port: int, log_path: Path, name: str = "web"):
        super().__init__(args, env, log_path, name)
        self.port = port

    def start(self, ready_path: str = "/v1/health", timeout: float = 60) -> WebServer:
        """Start the command and wait until ``ready_path`` answers."""
        self.launch()
        self.wait_ready(ready_path, timeout)
        return self

    def wait_ready(self, path: str, timeout: float = 60) -> None:
        """Poll ``path`` until it answers other than 5xx; SetupFailed (the server stopped)
        if the command exits or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            with contextlib.suppress(OSError, http.client.HTTPException):
                if fetch(self.port, "GET", path, timeout=10).status < 500:
                    return
            time.sleep(0.2)
        self.stop()
        raise SetupFailed(
            f"{self.name} did not answer {path} within {timeout:.0f} s\n"
            f"--- {self.log_path}\n{log_tail(self.log_path, 40)}"
        )


# --------------------------------------------------------------------------- HTTP


@dataclass
class Answer:
    """An HTTP answer: its status, headers (lower-case names, every value) and body."""

    status: int
    headers: dict[str, list[str]]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON, or None when it is not."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def fetch(port: int, method: str, path: str, headers: dict | None = None,
            body: bytes = b"", timeout: float = 10) -> Answer:  # fmt: skip
    """One request on a new loopback connection, its answer read whole."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        response = conn.getresponse()
        received = response.read()
        found: dict[str, list[str]] = {}
        for name, value in response.getheaders():
            found.setdefault(name.lower(), []).append(value)
        return Answer(response.status, found, received)
    finally:
        conn.close()


# --------------------------------------------------------------------------- CPU and memory


def cpu_ticks(pid: int) -> int:
    """User + system CPU clock ticks used so far by ``pid`` alone (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process ``pid`` alone (0 when it is gone)."""
    return cpu_ticks(pid) / CLOCK_TICKS


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


def machine_cpu() -> tuple[int, int]:
    """The machine's (busy, all) CPU time so far, in clock ticks (``/proc/stat``)."""
    with open("/proc/stat") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time that was busy between two ``machine_cpu``."""
    return (after[0] - before[0]) / max(1, after[1] - before[1])


def _process_ticks() -> dict[int, tuple[int, str]]:
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
    try:
        machine0, procs0 = machine_cpu(), _process_ticks()
        time.sleep(seconds)
        machine1, procs1 = machine_cpu(), _process_ticks()
    except (OSError, ValueError, IndexError):
        return -1.0, []
    if machine1[1] == machine0[1]:
        return -1.0, []
    per_second = CLOCK_TICKS * seconds
    busiest = sorted(
        (
            (ticks - procs0[pid][0], pid, command)
            for pid, (ticks, command) in procs1.items()
            if pid in procs0 and ticks > procs0[pid][0]
        ),
        reverse=True,
    )[:3]
    names = [f"{100 * t / per_second:.0f}% pid {pid} {cmd[:60]}" for t, pid, cmd in busiest]
    return round(100 * busy_share(machine0, machine1), 1), names


# --------------------------------------------------------------------------- figures, reports


def percentile(values: list[float], p: float) -> float:
    """Nearest rank, ``p`` from 0 to 100 (0 for no values): with 50 values, p99 is the
    largest and p50 the 26th."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else 0.0


def git_commit() -> str:
    """The commit measured (with ``+dirty`` for uncommitted changes)."""
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


def report_header() -> dict:
    """What every JSON report starts with: when, the commit and the machine's CPUs."""
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
    }


def save_results(name: str, figures: dict) -> Path:
    """``figures`` (with the time) as ``bench/results/NAME``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    figures = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **figures}
    path = RESULTS_DIR / name
    path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return path


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def sigterm_interrupts() -> None:
    """SIGTERM ends the run as Ctrl-C does (KeyboardInterrupt), so that every ``finally``
    stops what the bench started."""
    signal.signal(signal.SIGTERM, _interrupt)


class Stopped:
    """Why a run stopped early: ``error`` is None, what failed to set up, or "interrupted"."""

    error: str | None = None


@contextlib.contextmanager
def stopping_early() -> Iterator[Stopped]:
    """A setup that fails (SetupFailed) or an interruption (Ctrl-C, or SIGTERM) in the block
    is printed and noted in the ``Stopped`` it yields rather than raised, so that the run
    still reports what it measured before."""
    sigterm_interrupts()
    stopped = Stopped()
    try:
        yield stopped
    except SetupFailed as failed:
        stopped.error = str(failed)
        print(f"\nSETUP FAILED:\n{failed}", file=sys.stderr)
    except KeyboardInterrupt:
        stopped.error = "interrupted"
        print("\ninterrupted", file=sys.stderr)
