"""What the public site's pages cost, as a ratio to a bare Flask JSON endpoint.

One run measures, for each gunicorn worker class asked for (default ``sync`` and ``web``, the
Procfile's web command's worker class with its options; 2 workers each), side by side and
taking turns as ``bench/api_overhead.py`` does:

- ``bare``:   ``GET /hello`` of ``bench/hello_app.py`` (the baseline),
- ``tools``:  ``GET /tools/``, the whole catalogue page (about 460 tool cards),
- ``search``: ``GET /tools/?q=image`` with ``HX-Request: true``, the results fragment the
  live search swaps in,
- ``tool``:   ``GET /tools/word-counter/``, a tool page with its form and API panel, for a
  new visitor (no cookies: a first visit, a crawler),
- ``tool-back``: the same page for a returning visitor (the cookies of its first visit),
- ``run``:    ``POST /tools/word-counter/`` with ``HX-Request: true`` as the page's form sends
  it (its CSRF token and the session cookie it belongs to, read once from the page), each
  request a new visitor and device: no ``svc_visitor`` cookie, and a user agent of its own,
  so the five free runs a day never refuse; the address cap (``WEB_ADDRESS_DAILY_CAP``) is
  set out of reach in the server's environment.

It builds a fresh PostgreSQL database (``bench_site``) and uses Redis db 11, serves the
product with gunicorn on a free loopback port (``APP_ENV=production``), checks one answer of
each target, warms up, and loads it with wrk (installed with ``apt-get install -y wrk`` when
missing and run as root; else a Python keep-alive load generator). Afterwards it counts the
web runs recorded against the run requests sent. See ``bench/README.md``.

Exit status: 0 when every measured request succeeded (whether or not a target was met),
1 when a measured run had errors or the runs recorded do not match (the figures are then
invalid), 2 when setup failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages (bench/engines.py, ``engines``): the repository root goes there instead.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.api_overhead import (  # noqa: E402
    RESULTS_DIR,
    Measurement,
    PythonLoad,
    Request,
    Server,
    SetupFailed,
    Wrk,
    ensure_wrk,
    flask_command,
    git_commit,
    lua_string,
    measure_interleaved,
    print_ratio_table,
    procfile_web_worker,
    product_env,
    reset_database,
    round_ratios,
    run_command,
)

RESULTS_FILE = RESULTS_DIR / "site.json"
DATABASE = "bench_site"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/11"  # api_overhead 14, workflows 13, engines 12
SITE_ENV = {
    "DATABASE_URL": f"postgresql://postgres@127.0.0.1:5432/{DATABASE}",
    "REDIS_URL": REDIS_URL,
    "SECRET_KEY": "bench",
    "APP_ENV": "production",
    # Every run comes from 127.0.0.1: the address's cap (20 a day) must never bind.
    "WEB_ADDRESS_DAILY_CAP": "1000000000",
}
TOOL = "word-counter"
SEARCH = "image"
SAMPLE_TEXT = "Flask is a lightweight web framework. It keeps the core small and easy to extend."
WORKER_CLASSES = ("sync", "gthread", "web")
DEFAULT_CLASSES = ("sync", "web")
# Ratio to bare Flask that each page should keep (the targets; the run has none).
TARGETS = {"tools": 0.10, "search": 0.30, "tool": 0.30, "tool-back": 0.30}
LABELS = {
    "bare": "bare Flask GET /hello",
    "tools": "GET /tools/ (full page)",
    "search": f"GET /tools/?q={SEARCH} (htmx)",
    "tool": f"GET /tools/{TOOL}/ (first visit)",
    "tool-back": f"GET /tools/{TOOL}/ (returning)",
    "run": f"POST /tools/{TOOL}/ (a run)",
}
# A browser's user agent; each run request adds a part of its own (a new device).
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"


@dataclass
class SiteRequest(Request):
    """A request a load generator repeats; ``new_device`` gives each one a user agent of
    its own (the device counter hashes the address with it)."""

    new_device: bool = False


# --------------------------------------------------------------------------- setup


def site_env() -> dict[str, str]:
    """The environment of every product command and server."""
    return product_env(SITE_ENV)


def set_up_site() -> None:
    """A fresh ``bench_site`` database with the schema, and an empty Redis db 11."""
    try:
        import redis
    except ImportError as missing:
        raise SetupFailed(f"redis is not installed here: {missing}") from None
    reset_database(DATABASE)
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=5).flushdb()
    except redis.RedisError as error:
        raise SetupFailed(f"Redis at {REDIS_URL} refused: {error}") from None
    run_command(flask_command("db", "upgrade"), site_env())


def web_runs() -> dict[str, int]:
    """The site's runs in ``bench_site`` by status."""
    import psycopg

    url = SITE_ENV["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM runs WHERE source = 'web' GROUP BY status"
        ).fetchall()
    return dict(rows)


def redis_keys() -> int:
    """Keys in Redis db 11 (the allowance's counters, the limiter's windows)."""
    import redis

    return redis.Redis.from_url(REDIS_URL, socket_timeout=5).dbsize()


# --------------------------------------------------------------------------- requests


def fetch(port: int, request: Request, timeout: float = 10) -> tuple[int, dict, str]:
    """Send one request; return (status, headers, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        body = request.body.encode() if request.body else None
        conn.request(request.method, request.path, body=body, headers=request.headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        headers = {}
        for name, value in response.getheaders():
            headers.setdefault(name.lower(), []).append(value)
    finally:
        conn.close()
    return response.status, headers, text


def form_token(port: int) -> tuple[str, dict[str, str]]:
    """The tool page's CSRF token and the cookies a first visit gets (``session``, which the
    token belongs to, and ``svc_visitor``): GET it once."""
    status, headers, text = fetch(port, Request("GET", f"/tools/{TOOL}/", _browser()))
    token = re.search(r'name="csrf_token" value="([^"]+)"', text)
    cookies = dict(
        cookie.split(";", 1)[0].split("=", 1) for cookie in headers.get("set-cookie", [])
    )
    if status != 200 or not token or not {"session", "svc_visitor"} <= set(cookies):
        raise SetupFailed(
            f"GET /tools/{TOOL}/ gave no form token and cookies (status {status}, cookies "
            f"{headers.get('set-cookie')}):\n{text[:2000]}"
        )
    return token.group(1), cookies


def _browser(**more: str) -> dict[str, str]:
    return {"User-Agent": USER_AGENT, "Accept-Language": "en-GB,en;q=0.8", **more}


def site_requests(token: str, cookies: dict[str, str]) -> dict[str, SiteRequest]:
    """The measured requests of the site."""
    from urllib.parse import urlencode

    run_body = urlencode({"csrf_token": token, "website": "", "text": SAMPLE_TEXT})
    returning = "; ".join(f"{name}={value}" for name, value in sorted(cookies.items()))
    return {
        "tools": SiteRequest("GET", "/tools/", _browser()),
        "search": SiteRequest("GET", f"/tools/?q={SEARCH}", _browser(**{"HX-Request": "true"})),
        "tool": SiteRequest("GET", f"/tools/{TOOL}/", _browser()),
        "tool-back": SiteRequest("GET", f"/tools/{TOOL}/", _browser(Cookie=returning)),
        "run": SiteRequest(
            "POST",
            f"/tools/{TOOL}/",
            _browser(
                **{
                    "Content-Type": "application/x-www-form-urlencoded",
                    # The session the form's token belongs to; no visitor cookie: a new
                    # visitor, on a new device (new_device) each time.
                    "Cookie": f"session={cookies['session']}",
                    "HX-Request": "true",
                    "HX-Current-URL": f"http://127.0.0.1/tools/{TOOL}/",
                }
            ),
            run_body,
            new_device=True,
        ),
    }


def with_agent(request: Request, agent: str) -> Request:
    """``request`` with another user agent."""
    return Request(request.method, request.path, {**request.headers, "User-Agent": agent},
                   request.body)  # fmt: skip


def verify(port: int, target: str, request: SiteRequest) -> None:
    """Check that ``target`` answers what a visitor gets before measuring it (for the run:
    several in a row, each from a new device, all run)."""
    wanted, unwanted = {
        "bare": ('{"hello": "world"}', None),
        "tools": ('id="tool-results"', None),
        "search": (f"matching “{SEARCH}”", "<html"),
        "tool": ('id="run-form"', None),
        "tool-back": ('id="run-form"', None),
        "run": ("<h2>Result</h2>", "run-refused"),
    }[target]
    for attempt in range(1, 8 if request.new_device else 2):
        sent = request
        if request.new_device:
            sent = with_agent(request, f"{USER_AGENT} bench-verify/{uuid.uuid4().hex}")
        status, _, text = fetch(port, sent)
        if target == "bare":
            text = json.dumps(json.loads(text))
        problem = None
        if status != 200:
            problem = f"status {status}"
        elif wanted not in text:
            problem = f"{wanted!r} is not in the answer"
        elif unwanted and unwanted in text:
            problem = f"{unwanted!r} is in the answer"
        if problem:
            raise SetupFailed(
                f"{request.method} {request.path} is wrong before measuring (request "
                f"{attempt}: {problem}):\n{text[:3000]}"
            )


# --------------------------------------------------------------------------- load generators

# Each request a user agent of its own: the run's prefix (new every wrk run), the thread's
# number and a count.
WRK_NEW_DEVICE = """
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local sent = 0
function request()
  sent = sent + 1
  wrk.headers["User-Agent"] = {prefix} .. tid .. "-" .. sent
  return wrk.format()
end
"""


class SiteWrk(Wrk):
    """wrk as api_overhead.py runs it, plus a new user agent per request where asked."""

    def script(self, request: Request) -> str:
        script = super().script(request)
        if not getattr(request, "new_device", False):
            return script
        prefix = lua_string(f"{USER_AGENT} bench/{uuid.uuid4().hex[:12]}-")
        return script + WRK_NEW_DEVICE.replace("{prefix}", prefix)


class SitePythonLoad(PythonLoad):
    """The Python fallback, with a new user agent per request where asked."""

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        if not getattr(request, "new_device", False):
            return super().run(port, request, seconds, connections)
        prefix = f"{USER_AGENT} bench/{uuid.uuid4().hex[:12]}-"
        counter = iter(range(10**9))
        lock = threading.Lock()

        class Headers(dict):
            def items(self):  # http.client reads the headers through items()
                with lock:
                    number = next(counter)
                return [*super().items(), ("User-Agent", f"{prefix}{number}")]

        headers = Headers({k: v for k, v in request.headers.items() if k != "User-Agent"})
        varied = Request(request.method, request.path, headers, request.body)
        return super().run(port, varied, seconds, connections)


# --------------------------------------------------------------------------- the run


def bench_worker_class(worker_class: str, loadgen, args) -> dict:
    """Measure bare Flask and the site under one worker class, both servers up at once and
    the targets taking turns; then check the runs recorded."""
    print(f"\n== worker class {worker_class} ==", flush=True)
    bare = Server("bare", "bench.hello_app:app", worker_class, args.workers, args.threads)
    site = Server("site", "wsgi:app", worker_class, args.workers, args.threads)
    site.env = site_env()
    try:
        bare.start()
        site.start()
        bare.wait_until_ready("/hello")
        site.wait_until_ready("/tools/")
        hello = SiteRequest("GET", "/hello")
        verify(bare.port, "bare", hello)
        token, cookies = form_token(site.port)
        requests = site_requests(token, cookies)
        for target, request in requests.items():
            verify(site.port, target, request)
        targets = {"bare": (bare, hello)}
        targets.update({target: (site, request) for target, request in requests.items()})
        time.sleep(0.5)  # the checks' runs are written in batches (RUN_RECORD_DELAY)
        runs_before = sum(web_runs().values())
        keys_before = redis_keys()
        sent = Counting(loadgen, "run")
        results = measure_interleaved(targets, sent, args)
    finally:
        bare.stop()
        site.stop()
    time.sleep(0.5)
    runs = web_runs()
    recorded = sum(runs.values()) - runs_before
    return {
        "results": results,
        "runs": {
            "sent": sent.requests,
            "recorded": recorded,
            "by_status": runs,
            "redis_keys_added": redis_keys() - keys_before,
        },
    }


class Counting:
    """A load generator that adds up the requests of one target (warm-up included)."""

    def __init__(self, loadgen, target: str):
        self.loadgen, self.target, self.requests = loadgen, target, 0
        self.name = loadgen.name

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        measured = self.loadgen.run(port, request, seconds, connections)
        if getattr(request, "new_device", False):
            self.requests += measured.requests
        return measured


def print_table(worker_class: str, measured: dict, args) -> None:
    """One table per worker class: RPS, latency and the ratio to bare Flask with its target,
    then what the runs left behind."""
    print_ratio_table(worker_class, measured["results"], args, LABELS, TARGETS, widths=(40, 8))
    runs = measured["runs"]
    statuses = ", ".join(f"{n} {status}" for status, n in sorted(runs["by_status"].items()))
    print(
        f"runs: {runs['sent']} run requests answered, {runs['recorded']} web runs recorded "
        f"({runs['recorded'] - runs['sent']} more: in flight as a load run ended); in all "
        f"{statuses}; {runs['redis_keys_added']} Redis keys added"
    )


def runs_mismatch(runs: dict) -> str | None:
    """Why the recorded runs do not match the run requests answered, or None. More may be
    recorded than wrk counted: a request in flight when a load run ends is still served."""
    if runs["recorded"] < runs["sent"]:
        return f"{runs['recorded']} web runs recorded for {runs['sent']} run requests answered"
    if set(runs["by_status"]) - {"succeeded"}:
        return f"runs that did not succeed: {runs['by_status']}"
    return None


def write_json(args, loadgen, by_class: dict, error: str | None) -> None:
    """Write everything measured to ``--output`` (``bench/results/site.json``)."""
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
        "load_generator": loadgen.name,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "connections": args.connections,
        "gunicorn": {
            "workers": args.workers,
            "gthread_threads": args.threads,
            "web": " ".join([procfile_web_worker()[0], *procfile_web_worker()[1]]),
        },
        "labels": LABELS,
        "targets": TARGETS,
        "results": {},
        "runs": {},
        "error": error,
    }
    for worker_class, measured in by_class.items():
        results = measured["results"]
        bare = results.get("bare")
        report["runs"][worker_class] = measured["runs"]
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
    args.output.write_text(json.dumps(report, indent=2) + "\n")


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
    parser.add_argument(
        "--worker-class", action="append", choices=WORKER_CLASSES,
        help="measure this worker class (repeatable; default: sync and web, the Procfile's)",
    )  # fmt: skip
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help="the JSON report")
    parser.add_argument(
        "--loadgen", choices=("auto", "wrk", "python"), default="auto",
        help="auto: wrk when present (installed with apt-get when root), else python",
    )  # fmt: skip
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
    loadgen = SiteWrk(wrk, args.wrk_threads) if wrk else SitePythonLoad()
    if not wrk:
        print("wrk is missing (as root: apt-get install -y wrk): the Python load generator "
              "saturates near 2,000 requests/s, so ratios to bare Flask come out high")  # fmt: skip
    print(f"load generator: {loadgen.name}; {args.duration:g} s x {args.connections} connections")
    by_class: dict[str, dict] = {}
    error = None
    signal.signal(signal.SIGTERM, interrupt)
    try:
        set_up_site()
        print(f"site set up: database {DATABASE}, Redis db 11")
        for worker_class in args.worker_class or DEFAULT_CLASSES:
            by_class[worker_class] = bench_worker_class(worker_class, loadgen, args)
    except SetupFailed as failed:
        error = str(failed)
        print(f"\nSETUP FAILED:\n{failed}", file=sys.stderr)
    except KeyboardInterrupt:
        error = "interrupted"
        print("\ninterrupted", file=sys.stderr)
    for worker_class, measured in by_class.items():
        print_table(worker_class, measured, args)
    with contextlib.suppress(OSError):
        write_json(args, loadgen, by_class, error)
        print(f"\nresults: {args.output} (load generator: {loadgen.name})")
    if error:
        return 2
    invalid = {
        f"{worker_class}/{target}": result.errors
        for worker_class, measured in by_class.items()
        for target, result in measured["results"].items()
        if result.errors
    }
    for worker_class, measured in by_class.items():
        mismatch = runs_mismatch(measured["runs"])
        if mismatch:
            invalid[f"{worker_class}/runs"] = mismatch
    if invalid:
        print(
            "\n" + "!" * 72 + "\nINVALID BENCHMARK: requests failed during measured runs "
            f"(non-2xx or socket errors) or runs went unrecorded: {invalid}\n" + "!" * 72,
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
