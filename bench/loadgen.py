"""Loading gunicorn-served targets against bare Flask, as ``bench/api_overhead.py`` and
``bench/site.py`` do: the servers per worker class, the requests, the load generators (wrk
with a Lua script, or Python threads on keep-alive ``http.client`` connections), the targets
measured taking turns, and the table and JSON of their ratios to bare Flask.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field

from bench.harness import (
    BUSY_WARNING,
    RESULTS_DIR,
    Answer,
    SetupFailed,
    WebServer,
    background_cpu,
    cpu_ticks,
    expand,
    fetch,
    free_port,
    percentile,
    procfile_command,
)

WORKER_CLASSES = ("sync", "gthread", "web")


def procfile_web_worker() -> tuple[str, list[str]]:
    """The worker class of the Procfile's web command and its options that shape a worker
    (``--threads``, ``--worker-connections``), filled from the environment."""
    words = expand(procfile_command("web"), dict(os.environ))
    worker_class, options = "sync", []
    for name, value in zip(words, words[1:], strict=False):
        if name in ("--worker-class", "-k"):
            worker_class = value
        elif name in ("--threads", "--worker-connections"):
            options += [name, value]
    return worker_class, options


def gunicorn(name: str, app: str, worker_class: str, args, env: dict[str, str]) -> WebServer:
    """gunicorn serving ``app`` (``--workers``; ``--threads`` for gthread; ``web``: the
    Procfile's web command's worker class with its options) on a free loopback port, not
    started yet; its log is ``bench/results/gunicorn-NAME-CLASS.log``."""
    port = free_port()
    log_path = RESULTS_DIR / f"gunicorn-{name}-{worker_class}.log"
    options = []
    if worker_class == "web":  # the Procfile's web command's worker class, as it runs it
        worker_class, options = procfile_web_worker()
    elif worker_class == "gthread":
        options = ["--threads", str(args.threads)]
    command = [
        sys.executable, "-m", "gunicorn", app,
        "--bind", f"127.0.0.1:{port}",
        "--workers", str(args.workers),
        "--worker-class", worker_class,
        *options,
        "--timeout", "75",
        "--log-level", "warning",
    ]  # fmt: skip
    return WebServer(command, env, port, log_path, name=f"gunicorn ({name})")


@dataclass
class Request:
    """One HTTP request that a load generator repeats."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""

    def send(self, port: int, timeout: float = 10) -> Answer:
        """Send it once on a new connection."""
        return fetch(port, self.method, self.path, self.headers, self.body.encode(), timeout)


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
        samples = [value for per_thread in latencies for value in per_thread]
        return Measurement(
            requests=len(samples) + sum(f[1] for f in failures),
            seconds=round(elapsed, 3),
            rps=round(len(samples) / elapsed, 1),
            p50_ms=round(percentile(samples, 50) * 1000, 3),
            p99_ms=round(percentile(samples, 99) * 1000, 3),
            non_2xx=sum(f[0] for f in failures),
            socket_errors=sum(f[1] for f in failures),
        )


def load_generator(args, wrk: type = Wrk, python: type = PythonLoad):
    """wrk when ``--loadgen`` allows and it is there (installed with apt-get when root),
    else the Python one; SetupFailed when ``--loadgen wrk`` cannot have it."""
    path = ensure_wrk() if args.loadgen != "python" else None
    if args.loadgen == "wrk" and not path:
        raise SetupFailed("wrk is not installed and could not be installed")
    return wrk(path, args.wrk_threads) if path else python()


def add_load_options(parser: argparse.ArgumentParser, worker_classes_help: str) -> None:
    """The options of a bench that loads gunicorn-served targets against bare Flask."""
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
    parser.add_argument(
        "--worker-class", action="append", choices=WORKER_CLASSES, help=worker_classes_help
    )
    parser.add_argument(
        "--loadgen", choices=("auto", "wrk", "python"), default="auto",
        help="auto: wrk when present (installed with apt-get when root), else python",
    )  # fmt: skip


# --------------------------------------------------------------------------- measuring


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
            pids = server.children()
            before = [cpu_ticks(pid) for pid in pids]
            part = loadgen.run(server.port, request, args.duration / args.rounds, args.connections)
            for pid, start in zip(pids, before, strict=True):
                cpu[target][pid] = cpu[target].get(pid, 0) + cpu_ticks(pid) - start
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


def round_ratios(result: Measurement, bare: Measurement | None) -> list[float]:
    """The target's ratio to bare Flask in each round (their spread shows the noise)."""
    if bare is None:
        return []
    return [
        round(rps / bare_rps, 3)
        for rps, bare_rps in zip(result.round_rps, bare.round_rps, strict=True)
        if bare_rps
    ]


# --------------------------------------------------------------------------- reporting


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
    goal and each round's ratio."""
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


def ratio_report(results: dict[str, Measurement], targets: dict[str, float]) -> dict:
    """A worker class's targets for the JSON report: each one's figures, its ratio to bare
    Flask (over all rounds and per round) and whether it met its goal."""
    bare = results.get("bare")
    return {
        target: {
            **asdict(result),
            "ratio_to_bare": round(result.rps / bare.rps, 3) if bare and bare.rps else None,
            "round_ratios_to_bare": round_ratios(result, bare),
            "meets_target": (
                result.rps / bare.rps >= targets[target]
                if target in targets and bare and bare.rps
                else None
            ),
        }
        for target, result in results.items()
    }


def server_report(args) -> dict:
    """The gunicorn settings measured, for the JSON report."""
    web_class, options = procfile_web_worker()
    return {
        "workers": args.workers,
        "gthread_threads": args.threads,
        "web": " ".join([web_class, *options]),
    }


def request_errors(by_class: dict[str, dict[str, Measurement]]) -> dict[str, int]:
    """The measured requests that failed (non-2xx or socket errors), per worker class and
    target that had any."""
    return {
        f"{worker_class}/{target}": result.errors
        for worker_class, results in by_class.items()
        for target, result in results.items()
        if result.errors
    }


def print_invalid(what: str) -> None:
    """The run's figures are invalid: say so loudly (on stderr)."""
    print("\n" + "!" * 72 + f"\nINVALID BENCHMARK: {what}\n" + "!" * 72, file=sys.stderr)
