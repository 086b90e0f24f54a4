"""``bench/provider_load.py --streams``: runs sent with ``"stream": true`` and read to their
end as server-sent events, against a fake provider that writes each answer in pieces. The
first delta against the provider's first piece; N streams at once and N held open, while
``GET /v1/public/whoami`` is timed every 20 ms; their figures and goals.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from bench.harness import (
    LOOPBACK,
    Group,
    busy_share,
    cpu_seconds,
    fetch,
    group_cpu_seconds,
    machine_cpu,
    percentile,
)
from bench.provider_load_runs import STORIES, verdict

# The provider writes each answer in this many pieces over this many seconds.
STREAM_PIECES, STREAM_SECONDS = 20, 3.0
FIRST_DELTA_RUNS, FIRST_DELTA_CLIENTS = 20, 4
STREAM_DEADLINE = 180.0  # a stream not ended by then is left, and counted as failed
# The held streams: opened over RAMP_SECONDS, each answer written over HOLD_SECONDS, so that
# all of them are open at once for a while (whoami is timed then, not during admissions).
RAMP_SECONDS, HOLD_SECONDS = 10.0, 30.0
WHOAMI, WHOAMI_EVERY, WHOAMI_AT_ONCE = "/v1/public/whoami", 0.02, 100
# The goals for streams.
GOAL_FIRST_DELTA_S, GOAL_WHOAMI_P99_S = 0.3, 1.0


@dataclass
class Streamed:
    """One run sent with ``"stream": true`` and read to its end (wall clock times)."""

    marker: str  # in its input: the run's call at the provider holds it
    sent: float = 0.0
    status: int = 0  # 0: no answer
    answered: float | None = None  # its status line and headers came
    failure: str | None = None  # why it did not end with done: a status, an error, an event
    first_delta: float | None = None
    ended: float | None = None
    deltas: int = 0
    resets: int = 0  # reset events: the text so far void
    text: list[str] = field(default_factory=list)
    output: str | None = None  # the done record's output text


class OpenStreams:
    """How many streams are open (answered 200, not yet read to their end), and the most."""

    def __init__(self):
        self.now = self.peak = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            yield
        finally:
            with self._lock:
                self.now -= 1


def sse_events(response: http.client.HTTPResponse) -> Iterator[tuple[str, str]]:
    """(event, data) of each server-sent event as it arrives; ("", text) for a comment line
    (``: keep-alive``)."""
    kind, data = "", []
    for raw in iter(response.readline, b""):
        line = raw.decode().rstrip("\r\n")
        if line.startswith(":"):
            yield "", line[1:].strip()
            continue
        if line:
            name, _, value = line.partition(":")
            if name == "event":
                kind = value.strip()
            elif name == "data":
                data.append(value.removeprefix(" "))
            continue
        if kind or data:
            yield kind or "message", "\n".join(data)
        kind, data = "", []


def output_text(record: dict) -> str | None:
    output = record.get("output")
    return output.get("text") if isinstance(output, dict) else output


def problem_code(raw: bytes) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return json.loads(raw).get("code") or "?"
    return raw[:60].decode(errors="replace")


def read_events(response: http.client.HTTPResponse, run: Streamed, deadline: float) -> None:
    """Read ``run``'s events until done, error, the stream's end or ``deadline``."""
    for kind, data in sse_events(response):
        now = time.time()
        if kind == "delta":
            run.first_delta = run.first_delta or now
            run.deltas += 1
            run.text.append(json.loads(data).get("text", ""))
        elif kind == "reset":
            run.resets += 1
            run.text.clear()
        elif kind in ("done", "error"):
            run.ended = now
            if kind == "done":
                run.output = output_text(json.loads(data))
            else:
                run.failure = f"error event {problem_code(data.encode())}"
            return
        if time.monotonic() > deadline:
            run.failure = f"not ended within {STREAM_DEADLINE:g} s"
            return
    run.failure = "broken off (no done or error)"


def stream_run(port: int, raw_key: str, tool: str, opened: OpenStreams) -> Streamed:
    """One POST /v1/tools/run with ``"stream": true`` read to its end."""
    run = Streamed(marker=f"sb-{secrets.token_hex(6)}")
    headers = {"X-SVC-API-Key": raw_key, "Content-Type": "application/json"}
    stories = f"{STORIES} (bench {run.marker})"
    body = json.dumps({"slug": tool, "stories": stories, "stream": True}).encode()
    deadline = time.monotonic() + STREAM_DEADLINE
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    try:
        run.sent = time.time()
        conn.request("POST", "/v1/tools/run", body=body, headers=headers)
        response = conn.getresponse()
        run.status, run.answered = response.status, time.time()
        if response.status != 200:
            run.failure = f"HTTP {response.status} {problem_code(response.read())}"
            return run
        with opened.open():
            read_events(response, run, deadline)
    except (OSError, http.client.HTTPException, ValueError) as error:
        run.failure = type(error).__name__
    finally:
        conn.close()
    return run


def stream_all(count: int, threads: int, port: int, raw_key: str, tool: str,
               opened: OpenStreams, ramp: float = 0.0) -> list[Streamed]:  # fmt: skip
    """``count`` streamed runs from ``threads`` threads, each read to its end; ``ramp``:
    sent evenly over that many seconds rather than at once."""
    pool = ThreadPoolExecutor(max_workers=threads)
    started = time.monotonic()

    def send(index: int) -> Streamed:
        time.sleep(max(0.0, started + ramp * index / count - time.monotonic()))
        return stream_run(port, raw_key, tool, opened)

    try:
        futures = [pool.submit(send, index) for index in range(count)]
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def provider_first_pieces(fake) -> dict[str, float]:
    """Per marker, when the provider wrote the first piece of the call that held it."""
    with fake._lock:
        written = list(fake.first_piece_times)
    firsts: dict[str, float] = {}
    for recorded, when in written:
        found = re.search(rb"sb-[0-9a-f]{12}", recorded.body)
        if found:
            marker = found.group().decode()
            firsts[marker] = min(when, firsts.get(marker, when))
    return firsts


def spread(values: list[float], high: float = 95) -> tuple[float, float, float, int]:
    """p50, p``high``, max and count."""
    return percentile(values, 50), percentile(values, high), max(values, default=0.0), len(values)


def stream_figures(runs: list[Streamed], fake) -> dict:
    """What ``runs`` saw, and the provider's first pieces against their first deltas."""
    firsts = provider_first_pieces(fake)
    failures: dict[str, int] = {}
    for run in runs:
        if run.failure:
            failures[run.failure] = failures.get(run.failure, 0) + 1
    done = [run for run in runs if run.ended and not run.failure]
    delta_runs = [run for run in runs if run.first_delta]
    differ = [run for run in done if "".join(run.text) != run.output]
    return {
        "runs": len(runs),
        "opened": sum(1 for run in runs if run.status == 200),
        "done": len(done),
        "failures": failures,
        "lag": spread([r.first_delta - firsts[r.marker] for r in delta_runs if r.marker in firsts]),
        "to_answer": spread([run.answered - run.sent for run in runs if run.answered]),
        "to_first": spread([run.first_delta - run.sent for run in delta_runs]),
        "to_done": spread([run.ended - run.sent for run in done]),
        "deltas": sorted(run.deltas for run in done),
        "mismatches": len(differ),
        "differs": [("".join(run.text), run.output) for run in differ[:1]],
        "resets": sum(run.resets for run in runs),
        "answered": max((run.answered for run in runs if run.answered), default=None),
    }


class WhoamiProbe(threading.Thread):
    """``GET /v1/public/whoami`` with the key every ``WHOAMI_EVERY`` seconds until stopped,
    whether or not the last ones were answered (up to ``WHOAMI_AT_ONCE`` at once): each
    one's (wall clock when it was due, seconds from then to its answer), and the failures
    (not 2xx, or no answer). A slow answer does not hold back the next ones."""

    def __init__(self, port: int, raw_key: str):
        super().__init__(daemon=True)
        self.port, self.headers = port, {"X-SVC-API-Key": raw_key}
        self.samples: list[tuple[float, float]] = []
        self.failures: dict[str, int] = {}
        self._lock = threading.Lock()
        self._halt = threading.Event()

    def run(self) -> None:
        pool = ThreadPoolExecutor(max_workers=WHOAMI_AT_ONCE)
        due = time.monotonic()
        try:
            while not self._halt.is_set():
                pool.submit(self._call, time.time(), time.monotonic())
                due += WHOAMI_EVERY
                self._halt.wait(max(0.0, due - time.monotonic()))
        finally:
            pool.shutdown(wait=True)

    def _call(self, sent: float, due: float) -> None:
        try:
            status = fetch(self.port, "GET", WHOAMI, self.headers, timeout=10).status
            failure = None if 200 <= status < 300 else f"HTTP {status}"
        except (OSError, http.client.HTTPException) as error:
            failure = type(error).__name__
        with self._lock:
            self.samples.append((sent, time.monotonic() - due))
            if failure:
                self.failures[failure] = self.failures.get(failure, 0) + 1

    def stop(self) -> WhoamiProbe:
        self._halt.set()
        self.join(30)
        return self


def first_delta_scenario(args, raw_key: str, fake, port: int) -> dict:
    """``FIRST_DELTA_RUNS`` streamed runs, ``FIRST_DELTA_CLIENTS`` at a time."""
    fake.reset_peak()
    opened = OpenStreams()
    runs = stream_all(FIRST_DELTA_RUNS, FIRST_DELTA_CLIENTS, port, raw_key, args.tool, opened)
    return {**stream_figures(runs, fake), "peak_open": opened.peak, "peak": fake.peak_in_flight}


def many_streams_scenario(count: int, args, raw_key: str, fake, port: int,
                          web: Group, io: list[Group],
                          ramp: float = 0.0) -> dict:  # fmt: skip
    """``count`` streamed runs at once (or sent over ``ramp`` seconds) while whoami is asked
    every ``WHOAMI_EVERY`` s."""
    for _ in range(10):  # each web worker has answered whoami before it is timed
        with contextlib.suppress(OSError, http.client.HTTPException):
            fetch(port, "GET", WHOAMI, {"X-SVC-API-Key": raw_key}, timeout=10)
    fake.reset_peak()
    opened = OpenStreams()
    load = os.getloadavg()[0]
    web_cpu0, bench_cpu0 = group_cpu_seconds(web.pid), time.process_time()
    io_cpu0, machine0 = sum(cpu_seconds(p.pid) for p in io), machine_cpu()
    probe = WhoamiProbe(port, raw_key)
    probe.start()
    began = time.monotonic()
    runs = stream_all(count, count, port, raw_key, args.tool, opened, ramp)
    wall = time.monotonic() - began
    probe.stop()
    figures = stream_figures(runs, fake)
    answered = figures["answered"] or float("inf")
    return {
        **figures,
        "peak_open": opened.peak,
        "peak": fake.peak_in_flight,
        "wall": wall,
        "whoami": spread([seconds for _, seconds in probe.samples], 99),
        # While the streams were being admitted (their POSTs answered), then once all were.
        "whoami_submits": spread([t for sent, t in probe.samples if sent < answered], 99),
        "whoami_open": spread([t for sent, t in probe.samples if sent >= answered], 99),
        "whoami_failures": probe.failures,
        "web_cpu": group_cpu_seconds(web.pid) - web_cpu0,
        "io_cpu": sum(cpu_seconds(p.pid) for p in io) - io_cpu0,
        "bench_cpu": time.process_time() - bench_cpu0,
        "busy": busy_share(machine0, machine_cpu()),
        "load": load,
    }


# --------------------------------------------------------------------------- printing


def timing(values: tuple[float, float, float, int], unit: str = "ms") -> str:
    """A ``spread`` as p50/p95/max, in ms or s."""
    p50, p95, top, count = values
    if not count:
        return "none"
    scale, digits = (1000, 0) if unit == "ms" else (1, 2)
    shown = (f"{value * scale:.{digits}f}" for value in (p50, p95, top))
    return "p50 {} {unit}, p95 {} {unit}, max {} {unit}".format(*shown, unit=unit)


def whoami_line(values: tuple[float, float, float, int]) -> str:
    p50, p99, top, count = values
    return (
        f"{count} calls, p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {top * 1000:.0f} ms"
    )


def print_stream_runs(r: dict) -> None:
    """The per-run figures of a streams scenario."""
    deltas = r["deltas"]
    counts = (
        f"min {deltas[0]}, p50 {percentile(deltas, 50):.0f}, max {deltas[-1]}" if deltas else "-"
    )
    print(
        f"    client's first delta - provider's first piece: {timing(r['lag'])} "
        f"({r['lag'][3]} runs matched)\n"
        f"    submit -> answered (status and headers): {timing(r['to_answer'])}\n"
        f"    submit -> first delta: {timing(r['to_first'])}; "
        f"submit -> done: {timing(r['to_done'], 's')}\n"
        f"    deltas per run: {counts}; reset events: {r['resets']}; runs whose deltas put "
        f"together differ from the done output: {r['mismatches']}",
        flush=True,
    )
    for text, output in r["differs"]:
        print(f"      for one: deltas {text[:80]!r}, output {(output or '')[:80]!r}")


def print_streams(first: dict, many: dict | None, held: dict | None, tool: str) -> None:
    print(
        f'\nstreams: {tool} with "stream": true; the provider writes {STREAM_PIECES} pieces '
        f"over {STREAM_SECONDS:g} s (no latency before the first)"
    )
    print(
        f"  first delta, {first['runs']} runs {FIRST_DELTA_CLIENTS} at a time: "
        f"{first['opened']} answered 200, {first['done']} ended with done; "
        f"failed: {first['failures'] or 'none'}"
    )
    print_stream_runs(first)
    if many is not None:
        print_many(f"{many['runs']} streams at once", many)
    if held is not None:
        print_many(
            f"{held['runs']} streams held open (sent over {RAMP_SECONDS:g} s, each answer "
            f"written over {HOLD_SECONDS:g} s)",
            held,
        )


def print_many(title: str, many: dict) -> None:
    print(
        f"  {title}: {many['opened']} answered 200, {many['done']} "
        f"ended with done; refused or failed: {many['failures'] or 'none'}; at most "
        f"{many['peak_open']} open at once; all ended in {many['wall']:.2f} s; peak in flight "
        f"at the provider {many['peak']}"
    )
    print_stream_runs(many)
    print(
        f"    whoami meanwhile (one due every {WHOAMI_EVERY * 1000:.0f} ms): "
        f"{whoami_line(many['whoami'])}; failed: {many['whoami_failures'] or 'none'}\n"
        f"      sent while the streams' POSTs were being answered: "
        f"{whoami_line(many['whoami_submits'])}\n"
        f"      sent once every stream was answered: {whoami_line(many['whoami_open'])}"
    )
    print(
        f"    CPU: the web processes {many['web_cpu']:.1f} s, the I/O worker "
        f"{many['io_cpu']:.1f} s, the bench's own process (clients and fake provider) "
        f"{many['bench_cpu']:.1f} s; the machine's {os.cpu_count()} cores "
        f"{many['busy']:.0%} busy; machine load average before: {many['load']:.2f}",
        flush=True,
    )


def streams_goals_line(first: dict, many: dict | None, held: dict | None) -> str:
    """The streams scenarios against the issue's goals: the first delta; N streams none
    refused (at once, and held open); whoami p99 < 1 s while N are held open (the burst of
    N admissions at once is reported, not held to it)."""
    lag_max, matched = first["lag"][2], first["lag"][3]
    checks = [
        f"first delta <= {GOAL_FIRST_DELTA_S * 1000:.0f} ms after the provider's first piece "
        f"{verdict(matched == first['runs'] and lag_max <= GOAL_FIRST_DELTA_S)} "
        f"(max {lag_max * 1000:.0f} ms over {matched} of {first['runs']} runs)"
    ]
    for label, figures in (("at once", many), ("held open", held)):
        if figures is None:
            continue
        failed = sum(figures["failures"].values())
        checks.append(
            f"{figures['runs']} streams {label} with none refused or failed "
            f"{verdict(not failed and figures['opened'] == figures['runs'])} ({failed})"
        )
    if held is not None:
        p99 = held["whoami"][1]
        checks.append(
            f"whoami p99 < {GOAL_WHOAMI_P99_S:g} s while they are held open, none failed "
            f"{verdict(p99 < GOAL_WHOAMI_P99_S and not held['whoami_failures'])} "
            f"({p99 * 1000:.0f} ms, {sum(held['whoami_failures'].values())} failed; during "
            f"the burst of {many['runs'] if many else 0} admissions at once: "
            f"{many['whoami'][1] * 1000:.0f} ms)"
            if many is not None
            else f"whoami p99 < {GOAL_WHOAMI_P99_S:g} s while they are held open "
            f"{verdict(p99 < GOAL_WHOAMI_P99_S and not held['whoami_failures'])}"
        )
    return "streams: " + "; ".join(checks)
