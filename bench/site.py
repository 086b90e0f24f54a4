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
import json
import os
import sys
import time
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.harness import (  # noqa: E402
    BATCHES_WRITTEN,
    RESULTS_DIR,
    SetupFailed,
    add_service_options,
    flask,
    flush_redis,
    psycopg_url,
    report_header,
    reset_database,
    stopping_early,
)
from bench.loadgen import (  # noqa: E402
    add_load_options,
    gunicorn,
    load_generator,
    measure_interleaved,
    print_invalid,
    print_ratio_table,
    ratio_report,
    request_errors,
    server_report,
)
from bench.site_dashboard import bench_dashboard, print_dashboard  # noqa: E402
from bench.site_pages import (  # noqa: E402
    LABELS,
    TARGETS,
    Counting,
    SitePythonLoad,
    SiteRequest,
    SiteWrk,
    form_token,
    site_env,
    site_requests,
    verify,
)

RESULTS_FILE = RESULTS_DIR / "site.json"
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/bench_site"
REDIS_URL = "redis://127.0.0.1:6379/11"  # api_overhead 14, workflows 13, engines 12
DEFAULT_CLASSES = ("sync", "web")


def set_up_site(args) -> None:
    """A fresh database (``bench_site``) with the schema, and an empty Redis db (11)."""
    reset_database(args.database_url)
    flush_redis(args.redis_url)
    flask(site_env(args), "db", "upgrade")


def web_runs(args) -> dict[str, int]:
    """The site's runs in the database by status."""
    import psycopg

    with psycopg.connect(psycopg_url(args.database_url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM runs WHERE source = 'web' GROUP BY status"
        ).fetchall()
    return dict(rows)


def redis_keys(args) -> int:
    """Keys in the Redis db (the allowance's counters, the limiter's windows)."""
    import redis

    return redis.Redis.from_url(args.redis_url, socket_timeout=5).dbsize()


# --------------------------------------------------------------------------- the run


def bench_worker_class(worker_class: str, loadgen, args) -> dict:
    """Measure bare Flask and the site under one worker class, both servers up at once and
    the targets taking turns; then check the runs recorded."""
    print(f"\n== worker class {worker_class} ==", flush=True)
    bare = gunicorn("bare", "bench.hello_app:app", worker_class, args, dict(os.environ))
    site = gunicorn("site", "wsgi:app", worker_class, args, site_env(args))
    try:
        bare.launch()
        site.launch()
        bare.wait_ready("/hello")
        site.wait_ready("/tools/")
        hello = SiteRequest("GET", "/hello")
        verify(bare.port, "bare", hello)
        token, cookies = form_token(site.port)
        requests = site_requests(token, cookies)
        for target, request in requests.items():
            verify(site.port, target, request)
        targets = {"bare": (bare, hello)}
        targets.update({target: (site, request) for target, request in requests.items()})
        time.sleep(BATCHES_WRITTEN)  # the checks' runs are written in batches
        runs_before = sum(web_runs(args).values())
        keys_before = redis_keys(args)
        sent = Counting(loadgen)
        results = measure_interleaved(targets, sent, args)
    finally:
        bare.stop()
        site.stop()
    time.sleep(BATCHES_WRITTEN)
    runs = web_runs(args)
    recorded = sum(runs.values()) - runs_before
    return {
        "results": results,
        "runs": {
            "sent": sent.requests,
            "recorded": recorded,
            "by_status": runs,
            "redis_keys_added": redis_keys(args) - keys_before,
        },
    }


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
        **report_header(),
        "load_generator": loadgen.name,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "connections": args.connections,
        "gunicorn": server_report(args),
        "labels": LABELS,
        "targets": TARGETS,
        "results": {
            worker_class: ratio_report(measured["results"], TARGETS)
            for worker_class, measured in by_class.items()
        },
        "runs": {worker_class: measured["runs"] for worker_class, measured in by_class.items()},
        "dashboard": dashboard,
        "error": error,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_load_options(
        parser, "measure this worker class (repeatable; default: sync and web, the Procfile's)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help="the JSON report")
    parser.add_argument(
        "--dashboard", choices=("also", "only", "skip"), default="also",
        help="the account dashboard's scenario (1,000,000 ledger rows): after the pages "
        "(also), alone (only) or not at all (skip)",
    )  # fmt: skip
    parser.add_argument(
        "--dashboard-requests", type=int, default=200, help="timed requests per dashboard target"
    )
    add_service_options(parser, DATABASE_URL, REDIS_URL)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Set up, measure every worker class, print the tables, write the JSON; return the status."""
    args = parse_args(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        loadgen = load_generator(args, SiteWrk, SitePythonLoad)
    except SetupFailed as failed:
        print(f"SETUP FAILED: {failed}", file=sys.stderr)
        return 2
    if not isinstance(loadgen, SiteWrk):
        print("wrk is missing (as root: apt-get install -y wrk): the Python load generator "
              "saturates near 2,000 requests/s, so ratios to bare Flask come out high")  # fmt: skip
    print(f"load generator: {loadgen.name}; {args.duration:g} s x {args.connections} connections")
    by_class: dict[str, dict] = {}
    dashboard: dict | None = None
    with stopping_early() as stopped:
        set_up_site(args)
        print(f"site set up: {args.database_url}, {args.redis_url}")
        if args.dashboard != "only":
            for worker_class in args.worker_class or DEFAULT_CLASSES:
                by_class[worker_class] = bench_worker_class(worker_class, loadgen, args)
        if args.dashboard != "skip":
            dashboard = bench_dashboard(args)
    for worker_class, measured in by_class.items():
        print_table(worker_class, measured, args)
    if dashboard is not None:
        print_dashboard(dashboard)
    with contextlib.suppress(OSError):
        write_json(args, loadgen, by_class, stopped.error, dashboard)
        print(f"\nresults: {args.output} (load generator: {loadgen.name})")
    if stopped.error:
        return 2
    invalid = request_errors({wc: measured["results"] for wc, measured in by_class.items()})
    for worker_class, measured in by_class.items():
        mismatch = runs_mismatch(measured["runs"])
        if mismatch:
            invalid[f"{worker_class}/runs"] = mismatch
    for target, result in (dashboard or {}).get("results", {}).items():
        if result["errors"]:
            invalid[f"dashboard/{target}"] = result["errors"]
    if invalid:
        print_invalid(
            "requests failed during measured runs (non-2xx or socket errors) or runs went "
            f"unrecorded: {invalid}"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
