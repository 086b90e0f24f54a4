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
- ``tool-back``: the same page for a returning visitor (the cookies of a visitor who has
  run a tool: the session and ``svc_visitor``, which the site gives with a first run),
- ``run``:    ``POST /tools/word-counter/`` with ``HX-Request: true`` as the page's form sends
  it (its CSRF token and the session cookie it belongs to, read once from the page), each
  request a new visitor and device: no ``svc_visitor`` cookie, and a user agent of its own,
  so the five free runs a day never refuse; the address cap (``WEB_ADDRESS_DAILY_CAP``) is
  set out of reach in the server's environment.

Then (``--dashboard also``, the default; ``only`` for it alone, ``skip`` without it) the
account dashboard: an account with 1,000,000 ledger rows over 30 days and 20 keys (made with
``INSERT ... SELECT generate_series``) and the daily rollups that match them; its owner signs
in, the answers are checked (the chart's and the table's figures add up to the ledger), and
``GET /account/``, a filtered htmx request and the CSV are timed one request at a time
(p50, p90, p99; the goal is a p50 under 100 ms).

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

from config import Config  # noqa: E402

# How long after its answer an inline run's row is surely in the database: its batch is
# written within twice RUN_RECORD_DELAY (services/recorder.py).
BATCHES_WRITTEN = 2 * Config.RUN_RECORD_DELAY + 0.3

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
    # Required outside development; the bench reaches it on loopback, which is trusted.
    "PUBLIC_BASE_URL": "http://127.0.0.1",
    # Every run comes from 127.0.0.1: the address's cap (20 a day) must never bind.
    "WEB_ADDRESS_DAILY_CAP": "1000000000",
}
TOOL = "word-counter"
SEARCH = "image"
SESSION_COOKIE = "svc_session"  # config.py's SESSION_COOKIE_NAME
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
    """The tool page's CSRF token and the cookies of a visitor who has run a tool: the
    session (which the token belongs to) from a first visit, and ``svc_visitor``, which the
    site gives with a visitor's first run. GET the page once, then run the tool once."""
    from urllib.parse import urlencode

    status, headers, text = fetch(port, Request("GET", f"/tools/{TOOL}/", _browser()))
    token = re.search(r'name="csrf_token" value="([^"]+)"', text)
    cookies = _cookies(headers)
    if status != 200 or not token or SESSION_COOKIE not in cookies:
        raise SetupFailed(
            f"GET /tools/{TOOL}/ gave no form token and session (status {status}, cookies "
            f"{headers.get('set-cookie')}):\n{text[:2000]}"
        )
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": _cookie(cookies)}
    body = urlencode({"csrf_token": token.group(1), "website": "", "text": SAMPLE_TEXT})
    status, headers, text = fetch(port, Request("POST", f"/tools/{TOOL}/", _browser(**form), body))
    cookies.update(_cookies(headers))
    if status != 200 or "svc_visitor" not in cookies:
        raise SetupFailed(
            f"a first run gave no visitor cookie (status {status}, cookies "
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
                    "Cookie": f"{SESSION_COOKIE}={cookies[SESSION_COOKIE]}",
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


# --------------------------------------------------------------------------- the dashboard

# An account with this many ledger rows over DASHBOARD_DAYS days and DASHBOARD_KEYS keys
# (the scenario), and its daily rollups; its owner signs in and the dashboard is
# asked for one request at a time: the figure is the median (p50) time of an answer.
DASHBOARD_EMAIL = "dashboard@bench.example"
DASHBOARD_PASSWORD = "bench dashboard passphrase"
DASHBOARD_LEDGER_ROWS = 1_000_000
DASHBOARD_KEYS = 20
DASHBOARD_DAYS = 30
DASHBOARD_WEB_RUNS_A_DAY = 40
DASHBOARD_TARGET_MS = 100.0
DASHBOARD_LABELS = {
    "dashboard": "GET /account/ (30 days, every key)",
    "filtered": "GET /account/?key=…&days=7&metric=credits (htmx)",
    "csv": "GET /account/usage.csv",
}


def seed_dashboard_account() -> dict:
    """The dashboard's account (Pro, its owner able to sign in), its keys, a ledger of
    ``DASHBOARD_LEDGER_ROWS`` rows spread over the last ``DASHBOARD_DAYS`` UTC days and the
    keys, made with INSERT ... SELECT generate_series, and the rollups that match it (as
    the recorder keeps them), plus the account's web runs of each day; returns what the
    answers must show."""
    import psycopg

    run_command(
        flask_command(
            "accounts", "create", DASHBOARD_EMAIL, "--plan", "pro",
            "--password", DASHBOARD_PASSWORD,
        ),
        site_env(),
    )  # fmt: skip
    with psycopg.connect(SITE_ENV["DATABASE_URL"], autocommit=True) as conn:
        (account_id,) = conn.execute(
            "SELECT m.account_id FROM memberships m JOIN users u ON u.id = m.user_id"
            " WHERE u.email = %s",
            (DASHBOARD_EMAIL,),
        ).fetchone()
        conn.execute("UPDATE accounts SET free_calls_used = 100 WHERE id = %s", (account_id,))
        conn.execute(
            "INSERT INTO api_keys (id, account_id, name, key_hash, hint, sandbox,"
            " webhook_secret, created_at)"
            " SELECT gen_random_uuid()::text, %(account)s, 'key ' || n,"
            " encode(sha256(gen_random_uuid()::text::bytea), 'hex'),"
            " 'svc_' || lpad(n::text, 4, '0') || '…bnch', false, 'whsec_bench', now()"
            " FROM generate_series(1, %(keys)s) AS n",
            {"account": account_id, "keys": DASHBOARD_KEYS},
        )
        started = time.monotonic()
        conn.execute(
            "INSERT INTO usage_events (account_id, api_key_id, tool_slug, credits, free_call,"
            " created_at)"
            " SELECT %(account)s, keys.ids[1 + n %% %(keys)s],"
            " CASE WHEN n %% 3 = 0 THEN 'summarizer' ELSE 'word-counter' END,"
            " CASE WHEN n %% 3 = 0 THEN 2 ELSE 1 END, false,"
            " (date_trunc('day', now() AT TIME ZONE 'UTC')"
            "  - (n / %(keys)s %% %(days)s) * interval '1 day'"
            "  + (n * 37 %% 86400) * interval '1 second') AT TIME ZONE 'UTC'"
            " FROM generate_series(1, %(rows)s) AS n,"
            " (SELECT array_agg(id ORDER BY name) AS ids FROM api_keys"
            "  WHERE account_id = %(account)s) AS keys",
            {"account": account_id, "keys": DASHBOARD_KEYS, "days": DASHBOARD_DAYS,
             "rows": DASHBOARD_LEDGER_ROWS},
        )  # fmt: skip
        conn.execute(
            "INSERT INTO usage_daily (account_id, day, api_key_id, source, calls, credits,"
            " free_calls)"
            " SELECT account_id, (created_at AT TIME ZONE 'UTC')::date, api_key_id, 'api',"
            " count(*), sum(credits), sum(CASE WHEN free_call THEN 1 ELSE 0 END)"
            " FROM usage_events WHERE account_id = %(account)s GROUP BY 1, 2, 3"
            " UNION ALL"
            " SELECT %(account)s, (now() AT TIME ZONE 'UTC')::date - d, '', 'web', %(web)s, 0, 0"
            " FROM generate_series(0, %(days)s - 1) AS d",
            {"account": account_id, "days": DASHBOARD_DAYS, "web": DASHBOARD_WEB_RUNS_A_DAY},
        )
        conn.execute("ANALYZE usage_events")
        conn.execute("ANALYZE usage_daily")
        seconds = time.monotonic() - started
        ledger, rolled = conn.execute(
            "SELECT (SELECT count(*) FROM usage_events WHERE account_id = %(account)s),"
            " (SELECT sum(calls) FROM usage_daily WHERE account_id = %(account)s"
            "  AND source = 'api')",
            {"account": account_id},
        ).fetchone()
        (key_id,) = conn.execute(
            "SELECT id FROM api_keys WHERE account_id = %s ORDER BY name LIMIT 1", (account_id,)
        ).fetchone()
    if ledger != DASHBOARD_LEDGER_ROWS or rolled != ledger:
        raise SetupFailed(f"the dashboard's ledger has {ledger} rows, its rollups {rolled} calls")
    print(f"dashboard account: {ledger:,} ledger rows over {DASHBOARD_DAYS} days and "
          f"{DASHBOARD_KEYS} keys, with their rollups, made in {seconds:.1f} s")  # fmt: skip
    return {
        "account_id": account_id,
        "key_id": key_id,
        "calls": ledger + DASHBOARD_DAYS * DASHBOARD_WEB_RUNS_A_DAY,
    }


def dashboard_session(port: int) -> str:
    """Sign the dashboard's owner in through the login form; the Cookie header to send."""
    from urllib.parse import urlencode

    status, headers, text = fetch(port, Request("GET", "/account/login", _browser()))
    token = re.search(r'name="csrf_token" value="([^"]+)"', text)
    if status != 200 or not token:
        raise SetupFailed(f"GET /account/login gave no form (status {status}):\n{text[:2000]}")
    cookies = _cookies(headers)
    body = urlencode(
        {"csrf_token": token.group(1), "email": DASHBOARD_EMAIL, "password": DASHBOARD_PASSWORD}
    )
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": _cookie(cookies)}
    status, headers, text = fetch(port, Request("POST", "/account/login", _browser(**form), body))
    cookies.update(_cookies(headers))
    if status != 302:
        raise SetupFailed(f"signing in to the dashboard answered {status}:\n{text[:2000]}")
    return _cookie(cookies)


def _cookies(headers: dict) -> dict[str, str]:
    return dict(c.split(";", 1)[0].split("=", 1) for c in headers.get("set-cookie", []))


def _cookie(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in sorted(cookies.items()))


def dashboard_requests(cookie: str, key_id: str) -> dict[str, Request]:
    signed_in = _browser(Cookie=cookie)
    query = f"key={key_id}&days=7&metric=credits"
    return {
        "dashboard": Request("GET", "/account/", signed_in),
        "filtered": Request("GET", f"/account/?{query}", {**signed_in, "HX-Request": "true"}),
        "csv": Request("GET", "/account/usage.csv", signed_in),
    }


def check_dashboard(port: int, requests: dict[str, Request], seeded: dict) -> None:
    """The dashboard shows every call of the seeded ledger (the chart's bars add up to it,
    the table's cells too), and the CSV holds a row per key and day."""
    status, _, text = fetch(port, requests["dashboard"], timeout=60)
    bars = sum(int(value) for value in re.findall(r'<rect [^>]*data-value="(\d+)"', text))
    cells = sum(int(v) for v in re.findall(r'<td data-day="[^"]+" data-source="\w+">(\d+)<', text))
    if status != 200 or bars != seeded["calls"] or cells != seeded["calls"]:
        raise SetupFailed(
            f"GET /account/ answered {status}: the chart shows {bars} calls and the table "
            f"{cells}, the ledger holds {seeded['calls']}:\n{text[:2000]}"
        )
    status, _, text = fetch(port, requests["csv"], timeout=60)
    rows = len(text.strip().splitlines()) - 1
    expected = DASHBOARD_DAYS * (DASHBOARD_KEYS + 1)
    if status != 200 or rows != expected:
        raise SetupFailed(f"the CSV answered {status} with {rows} rows, not {expected}")
    status, _, text = fetch(port, requests["filtered"], timeout=60)
    if status != 200 or "usage-chart" not in text or "<html" in text:
        raise SetupFailed(f"the htmx filter answered {status}:\n{text[:2000]}")


def time_requests(port: int, request: Request, count: int) -> dict:
    """``count`` requests one after the other on one keep-alive connection: the answers'
    times in milliseconds (p50, p90, p99, max) and how many were not 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, errors = [], 0
    try:
        for _ in range(count):
            started = time.perf_counter()
            conn.request(request.method, request.path, headers=request.headers)
            response = conn.getresponse()
            response.read()
            times.append((time.perf_counter() - started) * 1000)
            errors += response.status != 200
    finally:
        conn.close()
    times.sort()

    def percentile(p: float) -> float:
        return round(times[min(len(times) - 1, int(p / 100 * len(times)))], 2)

    return {
        "requests": count,
        "errors": errors,
        "p50_ms": percentile(50),
        "p90_ms": percentile(90),
        "p99_ms": percentile(99),
        "max_ms": round(times[-1], 2),
    }


def bench_dashboard(args) -> dict:
    """Seed the dashboard's account, serve the site with the Procfile's web command's worker
    class, sign in, check the answers, warm up, then time each target."""
    print("\n== the account dashboard ==", flush=True)
    seeded = seed_dashboard_account()
    site = Server("dashboard", "wsgi:app", "web", args.workers, args.threads)
    site.env = site_env()
    try:
        site.start()
        site.wait_until_ready("/account/login")
        requests = dashboard_requests(dashboard_session(site.port), seeded["key_id"])
        check_dashboard(site.port, requests, seeded)
        for request in requests.values():
            time_requests(site.port, request, 10)  # warm-up
        timed = {
            target: time_requests(site.port, request, args.dashboard_requests)
            for target, request in requests.items()
        }
    finally:
        site.stop()
    return {
        "ledger_rows": DASHBOARD_LEDGER_ROWS,
        "keys": DASHBOARD_KEYS,
        "days": DASHBOARD_DAYS,
        "target_p50_ms": DASHBOARD_TARGET_MS,
        "results": timed,
    }


def print_dashboard(measured: dict) -> None:
    print(
        f"\n== dashboard: {measured['ledger_rows']:,} ledger rows, {measured['keys']} keys, "
        f"{measured['days']} days (one request at a time; goal: p50 under "
        f"{measured['target_p50_ms']:g} ms) =="
    )
    print(f"{'target':<52} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}  goal")
    for target, result in measured["results"].items():
        met = "met" if result["p50_ms"] < measured["target_p50_ms"] else "MISSED"
        print(
            f"{DASHBOARD_LABELS[target]:<52} {result['p50_ms']:>8.1f} {result['p90_ms']:>8.1f} "
            f"{result['p99_ms']:>8.1f} {result['max_ms']:>8.1f}  {met}"
        )


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
        time.sleep(BATCHES_WRITTEN)  # the checks' runs are written in batches
        runs_before = sum(web_runs().values())
        keys_before = redis_keys()
        sent = Counting(loadgen, "run")
        results = measure_interleaved(targets, sent, args)
    finally:
        bare.stop()
        site.stop()
    time.sleep(BATCHES_WRITTEN)
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


def write_json(
    args, loadgen, by_class: dict, error: str | None, dashboard: dict | None = None
) -> None:
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
        "dashboard": dashboard,
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
        "--dashboard", choices=("also", "only", "skip"), default="also",
        help="the account dashboard's scenario (1,000,000 ledger rows): after the pages "
        "(also), alone (only) or not at all (skip)",
    )  # fmt: skip
    parser.add_argument(
        "--dashboard-requests", type=int, default=200, help="timed requests per dashboard target"
    )
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
    dashboard: dict | None = None
    error = None
    signal.signal(signal.SIGTERM, interrupt)
    try:
        set_up_site()
        print(f"site set up: database {DATABASE}, Redis db 11")
        if args.dashboard != "only":
            for worker_class in args.worker_class or DEFAULT_CLASSES:
                by_class[worker_class] = bench_worker_class(worker_class, loadgen, args)
        if args.dashboard != "skip":
            dashboard = bench_dashboard(args)
    except SetupFailed as failed:
        error = str(failed)
        print(f"\nSETUP FAILED:\n{failed}", file=sys.stderr)
    except KeyboardInterrupt:
        error = "interrupted"
        print("\ninterrupted", file=sys.stderr)
    for worker_class, measured in by_class.items():
        print_table(worker_class, measured, args)
    if dashboard is not None:
        print_dashboard(dashboard)
    with contextlib.suppress(OSError):
        write_json(args, loadgen, by_class, error, dashboard)
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
    for target, result in (dashboard or {}).get("results", {}).items():
        if result["errors"]:
            invalid[f"dashboard/{target}"] = result["errors"]
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
