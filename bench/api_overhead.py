"""What the product's API pipeline costs, as a ratio to a bare Flask JSON endpoint.

One run measures, for each gunicorn worker class (``sync``, ``gthread`` and ``web``: the worker
class of the Procfile's web command, with its ``--threads`` and ``--worker-connections``),
side by side:

- ``bare``:   ``GET /hello`` of ``bench/hello_app.py`` (the baseline),
- ``whoami``: the product's authenticated ``GET /v1/public/whoami``,
- ``tool``:   the product's inline local tool run ``POST /v1/tools/run``,
- ``mcp``:    the same run as an MCP ``tools/call`` of ``run_tool`` (``POST /v1/mcp``),
- ``mcp_list``: MCP's ``tools/list`` of the default tools.

Beside the ratios to bare Flask it prints what an MCP tool call costs against the REST run
of the same tool (goal: at most ``MCP_COST_GOAL`` times) and the latency of ``tools/list``
on one connection (goal: under ``LIST_GOAL_MS``).

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
import functools
import json
import os
import shutil
import sys
import time
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.api_overhead_probes import (  # noqa: E402
    PG_STATS_DELAY,
    print_profile,
    print_round_trips,
    probe_round_trips,
    profile_worker,
)
from bench.harness import (  # noqa: E402
    RESULTS_DIR,
    ROOT,
    SAMPLE_TEXT,
    SetupFailed,
    add_service_options,
    create_key,
    flask,
    flush_redis,
    percentile,
    product_env,
    report_header,
    reset_database,
    stopping_early,
)
from bench.loadgen import (  # noqa: E402
    WORKER_CLASSES,
    Measurement,
    Request,
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

RESULTS_FILE = RESULTS_DIR / "api_overhead.json"
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/bench_api"
REDIS_URL = "redis://127.0.0.1:6379/14"
# Ratio to bare Flask that each product target should keep (the targets).
TARGETS = {"whoami": 0.50, "tool": 0.35}
LABELS = {
    "bare": "bare Flask GET /hello",
    "whoami": "GET /v1/public/whoami",
    "tool": "POST /v1/tools/run",
    "mcp": "MCP tools/call run_tool",
    "mcp_list": "MCP tools/list",
}
# An MCP tool call may cost at most this many times the REST run of the same tool (the
# ratio of their requests per second, measured side by side); tools/list answers within
# LIST_GOAL_MS on one connection.
MCP_COST_GOAL = 2.0
LIST_GOAL_MS = 5.0
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


def set_up_product(args) -> tuple[str, str]:
    """Build the database, an Agency account and an unlimited key; return (key id, raw key)."""
    reset_database(args.database_url)
    flush_redis(args.redis_url)
    return create_key(functools.partial(flask, product_env(args.database_url, args.redis_url)))


def pick_tool(port: int, wanted: str | None) -> dict:
    """Choose the light inline tool to run: ``--tool`` or the catalogue's best fit."""
    answer = Request("GET", "/v1/tools").send(port)
    listing = answer.json()
    if answer.status != 200 or not isinstance(listing, dict) or "tools" not in listing:
        raise SetupFailed(f"GET /v1/tools answered {answer.status}: {answer.text[:2000]}")
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
    """The authenticated product requests that are measured."""
    auth = {"X-SVC-API-Key": raw_key}
    body = json.dumps({"slug": slug, "input": SAMPLE_TEXT})
    call = {"name": "run_tool", "arguments": {"slug": slug, "input": SAMPLE_TEXT}}
    return {
        "whoami": Request("GET", "/v1/public/whoami", auth),
        "tool": Request(
            "POST", "/v1/tools/run", {**auth, "Content-Type": "application/json"}, body
        ),
        "mcp": Request("POST", "/v1/mcp", {**auth, **MCP_HEADERS}, _rpc("tools/call", call)),
        "mcp_list": Request("POST", "/v1/mcp", {**auth, **MCP_HEADERS}, _rpc("tools/list")),
    }


def _rpc(method: str, params: dict | None = None) -> str:
    message = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def verify(port: int, target: str, request: Request, key_id: str = "") -> None:
    """Check one answer of ``target`` is the right one before measuring it."""
    answer = request.send(port)
    data = answer.json()
    problem = None
    if answer.status != 200 or not isinstance(data, dict):
        problem = f"status {answer.status}"
    elif target == "bare" and data != {"hello": "world"}:
        problem = "body is not {'hello': 'world'}"
    elif target == "whoami" and str((data.get("key") or {}).get("id")) != key_id:
        problem = f"key.id is not {key_id}"
    elif target == "tool" and data.get("status") != "succeeded":
        problem = f"status is {data.get('status')!r}, not 'succeeded'"
    elif target == "mcp" and (data.get("result") or {}).get("_meta", {}).get("status") != (
        "succeeded"
    ):
        problem = "the tool call's result is not a succeeded run"
    elif target == "mcp_list" and len((data.get("result") or {}).get("tools", [])) != 5:
        problem = "tools/list does not list the five default tools"
    if problem:
        raise SetupFailed(
            f"{request.method} {request.path} is wrong before measuring ({problem}):\n"
            f"{answer.text[:3000]}"
        )


# --------------------------------------------------------------------------- the run


def bench_worker_class(worker_class: str, loadgen, args, product: dict | None) -> dict:
    """Measure the bare app and (when set up) the product under one worker class, both
    servers up at once and the targets taking turns."""
    print(f"\n== worker class {worker_class} ==", flush=True)
    bare = gunicorn("bare", "bench.hello_app:app", worker_class, args, dict(os.environ))
    server = None
    try:
        bare.launch()
        if product is not None:
            env = product_env(args.database_url, args.redis_url)
            server = gunicorn("product", "wsgi:app", worker_class, args, env).launch()
        bare.wait_ready("/hello")
        hello = Request("GET", "/hello")
        verify(bare.port, "bare", hello)
        targets = {"bare": (bare, hello)}
        if server is not None:
            server.wait_ready("/v1/tools")
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
                    probe = probe_round_trips(server.port, request, args)
                    product["round_trips"][target] = probe
                    print_round_trips(target, probe)
            targets.update({target: (server, request) for target, request in requests.items()})
        results = measure_interleaved(targets, loadgen, args)
        if server is not None:
            product.setdefault("list_ms", {})[worker_class] = one_connection_ms(
                server.port, requests["mcp_list"]
            )
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


def one_connection_ms(port: int, request: Request, n: int = 200) -> dict:
    """``request``'s latency answered on one connection at a time (p50 and p99, ms)."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        answer = request.send(port)
        times.append((time.perf_counter() - started) * 1000)
        if answer.status != 200:
            raise SetupFailed(f"{request.path} answered {answer.status}: {answer.text[:500]}")
    return {"p50_ms": round(percentile(times, 50), 2), "p99_ms": round(percentile(times, 99), 2)}


def mcp_report(results: dict[str, Measurement], list_ms: dict | None) -> dict:
    """What an MCP tool call costs against the REST run (REST RPS / MCP RPS), and tools/list's
    latency on one connection."""
    tool, mcp = results.get("tool"), results.get("mcp")
    cost = round(tool.rps / mcp.rps, 3) if tool and mcp and mcp.rps else None
    return {
        "call_cost_vs_rest": cost,
        "call_cost_goal": MCP_COST_GOAL,
        "call_pass": cost is not None and cost <= MCP_COST_GOAL,
        "list_one_connection": list_ms,
        "list_goal_ms": LIST_GOAL_MS,
        "list_pass": bool(list_ms) and list_ms["p50_ms"] < LIST_GOAL_MS,
    }


def print_table(worker_class: str, results: dict[str, Measurement], args, product=None) -> None:
    """One table per worker class: RPS, latency and the ratio to bare Flask with its target;
    then MCP against REST."""
    print_ratio_table(worker_class, results, args, LABELS, TARGETS, widths=(26, 10))
    if "mcp" not in results:
        return
    report = mcp_report(results, (product or {}).get("list_ms", {}).get(worker_class))
    cost, listed = report["call_cost_vs_rest"], report["list_one_connection"] or {}
    verdict = "PASS" if report["call_pass"] else "ABOVE"
    print(f"  MCP tools/call costs {cost}x the REST run (goal <= {MCP_COST_GOAL}x: {verdict})")
    verdict = "PASS" if report["list_pass"] else "ABOVE"
    print(
        f"  MCP tools/list on one connection: p50 {listed.get('p50_ms')} ms, "
        f"p99 {listed.get('p99_ms')} ms (goal p50 < {LIST_GOAL_MS} ms: {verdict})"
    )


def write_json(args, loadgen, product: dict | None, by_class: dict, error: str | None) -> None:
    """Write everything measured to ``bench/results/api_overhead.json``."""
    report = {
        **report_header(),
        "load_generator": loadgen.name,
        "duration_s": args.duration,
        "connections": args.connections,
        "gunicorn": server_report(args),
        "tool_slug": (product or {}).get("tool_slug"),
        "targets": TARGETS,
        "results": {
            worker_class: ratio_report(results, TARGETS)
            for worker_class, results in by_class.items()
        },
        "mcp": {
            worker_class: mcp_report(results, (product or {}).get("list_ms", {}).get(worker_class))
            for worker_class, results in by_class.items()
            if "mcp" in results
        },
        "round_trips": (product or {}).get("round_trips", {}),
        "profiles": (product or {}).get("profiles", {}),
        "error": error,
    }
    RESULTS_FILE.write_text(json.dumps(report, indent=2) + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_load_options(
        parser,
        "measure only this worker class (repeatable; default: all three; web: the "
        "Procfile's web command's worker class and options)",
    )
    parser.add_argument("--tool", help="slug of the inline tool to run (default: picked)")
    parser.add_argument(
        "--no-probe", dest="probe", action="store_false",
        help="skip counting Redis commands and SQL work per product request",
    )  # fmt: skip
    parser.add_argument("--bare-only", action="store_true", help="skip the product")
    parser.add_argument(
        "--profile", action="store_true",
        help="after measuring, record one product worker with py-spy (extra, unmeasured runs)",
    )  # fmt: skip
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy", help="its path")
    add_service_options(parser, DATABASE_URL, REDIS_URL)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Set up, measure every worker class, print the tables, write the JSON; return the status."""
    args = parse_args(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        loadgen = load_generator(args)
    except SetupFailed as failed:
        print(f"SETUP FAILED: {failed}", file=sys.stderr)
        return 2
    if args.profile and not shutil.which(args.py_spy):
        print(f"SETUP FAILED: --profile needs py-spy ({args.py_spy} not found)", file=sys.stderr)
        return 2
    print(f"load generator: {loadgen.name}; {args.duration:g} s x {args.connections} connections")
    product = None
    by_class: dict[str, dict[str, Measurement]] = {}
    with stopping_early() as stopped:
        if not args.bare_only:
            key_id, raw_key = set_up_product(args)
            product = {"key_id": key_id, "raw_key": raw_key}
            if args.tool:
                product["tool_slug"] = args.tool
            print(f"product set up: {args.database_url}, {args.redis_url}, key {key_id}")
        for worker_class in args.worker_class or WORKER_CLASSES:
            by_class[worker_class] = bench_worker_class(worker_class, loadgen, args, product)
    for worker_class, results in by_class.items():
        print_table(worker_class, results, args, product)
    with contextlib.suppress(OSError):
        write_json(args, loadgen, product, by_class, stopped.error)
        print(f"\nresults: {RESULTS_FILE.relative_to(ROOT)} (load generator: {loadgen.name})")
    if stopped.error:
        return 2
    errors = request_errors(by_class)
    if errors:
        print_invalid(f"requests failed during measured runs (non-2xx or socket errors): {errors}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
