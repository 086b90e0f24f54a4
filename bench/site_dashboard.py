"""``bench/site.py``'s account dashboard scenario: an account on Pro with 1,000,000 ledger
rows over the last 30 UTC days and 20 keys (``INSERT ... SELECT generate_series``) and the
daily rollups that match them; its owner signs in through the login form, the answers are
checked (the chart's bars and the table's cells add up to the ledger's calls, the CSV has a
row per day, key and source) and each target is timed one request at a time on a keep-alive
connection under the Procfile's web command's worker class.
"""

from __future__ import annotations

import http.client
import re
import time
from urllib.parse import urlencode

from bench.harness import SetupFailed, flask, percentile, psycopg_url
from bench.loadgen import Request, gunicorn
from bench.site_pages import browser, cookie_header, cookies_set, site_env

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


def seed_dashboard_account(args) -> dict:
    """The dashboard's account (Pro, its owner able to sign in), its keys, a ledger of
    ``DASHBOARD_LEDGER_ROWS`` rows spread over the last ``DASHBOARD_DAYS`` UTC days and the
    keys, made with INSERT ... SELECT generate_series, and the rollups that match it (as
    the recorder keeps them), plus the account's web runs of each day; returns what the
    answers must show."""
    import psycopg

    env = site_env(args)
    flask(
        env, "accounts", "create", DASHBOARD_EMAIL, "--plan", "pro", "--password",
        DASHBOARD_PASSWORD,
    )  # fmt: skip
    with psycopg.connect(psycopg_url(env["DATABASE_URL"]), autocommit=True) as conn:
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
    answer = Request("GET", "/account/login", browser()).send(port)
    token = re.search(r'name="csrf_token" value="([^"]+)"', answer.text)
    if answer.status != 200 or not token:
        raise SetupFailed(
            f"GET /account/login gave no form (status {answer.status}):\n{answer.text[:2000]}"
        )
    cookies = cookies_set(answer)
    body = urlencode(
        {"csrf_token": token.group(1), "email": DASHBOARD_EMAIL, "password": DASHBOARD_PASSWORD}
    )
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie_header(cookies)}
    answer = Request("POST", "/account/login", browser(**form), body).send(port)
    cookies.update(cookies_set(answer))
    if answer.status != 302:
        raise SetupFailed(
            f"signing in to the dashboard answered {answer.status}:\n{answer.text[:2000]}"
        )
    return cookie_header(cookies)


def dashboard_requests(cookie: str, key_id: str) -> dict[str, Request]:
    signed_in = browser(Cookie=cookie)
    query = f"key={key_id}&days=7&metric=credits"
    return {
        "dashboard": Request("GET", "/account/", signed_in),
        "filtered": Request("GET", f"/account/?{query}", {**signed_in, "HX-Request": "true"}),
        "csv": Request("GET", "/account/usage.csv", signed_in),
    }


def check_dashboard(port: int, requests: dict[str, Request], seeded: dict) -> None:
    """The dashboard shows every call of the seeded ledger (the chart's bars add up to it,
    the table's cells too), and the CSV holds a row per key and day."""
    answer = requests["dashboard"].send(port, timeout=60)
    text = answer.text
    bars = sum(int(value) for value in re.findall(r'<rect [^>]*data-value="(\d+)"', text))
    cells = sum(int(v) for v in re.findall(r'<td data-day="[^"]+" data-source="\w+">(\d+)<', text))
    if answer.status != 200 or bars != seeded["calls"] or cells != seeded["calls"]:
        raise SetupFailed(
            f"GET /account/ answered {answer.status}: the chart shows {bars} calls and the "
            f"table {cells}, the ledger holds {seeded['calls']}:\n{text[:2000]}"
        )
    answer = requests["csv"].send(port, timeout=60)
    rows = len(answer.text.strip().splitlines()) - 1
    expected = DASHBOARD_DAYS * (DASHBOARD_KEYS + 1)
    if answer.status != 200 or rows != expected:
        raise SetupFailed(f"the CSV answered {answer.status} with {rows} rows, not {expected}")
    answer = requests["filtered"].send(port, timeout=60)
    if answer.status != 200 or "usage-chart" not in answer.text or "<html" in answer.text:
        raise SetupFailed(f"the htmx filter answered {answer.status}:\n{answer.text[:2000]}")


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
    return {
        "requests": count,
        "errors": errors,
        "p50_ms": round(percentile(times, 50), 2),
        "p90_ms": round(percentile(times, 90), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "max_ms": round(max(times), 2),
    }


def bench_dashboard(args) -> dict:
    """Seed the dashboard's account, serve the site with the Procfile's web command's worker
    class, sign in, check the answers, warm up, then time each target."""
    print("\n== the account dashboard ==", flush=True)
    seeded = seed_dashboard_account(args)
    site = gunicorn("dashboard", "wsgi:app", "web", args, site_env(args))
    try:
        site.start("/account/login")
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
