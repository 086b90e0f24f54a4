"""bench/site.py's dashboard scenario on a short run: the seeded account's figures checked
by the bench itself, and the report's shape (never its speed)."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import HAVE_PG, HAVE_REDIS, ROOT

BENCH = ROOT / "bench" / "site.py"


def test_help_names_the_dashboard_options():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--dashboard {also,only,skip}" in done.stdout and "--dashboard-requests" in done.stdout


@pytest.mark.skipif(not (HAVE_PG and HAVE_REDIS), reason="needs PostgreSQL and Redis")
def test_the_dashboard_scenario_reports_each_target(tmp_path, site_bench_alone):
    output = tmp_path / "site.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--dashboard", "only", "--dashboard-requests", "5",
         "--loadgen", "python", "--output", str(output)],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["error"] is None and report["results"] == {}
    dashboard = report["dashboard"]
    assert (dashboard["ledger_rows"], dashboard["keys"], dashboard["days"]) == (1_000_000, 20, 30)
    assert set(dashboard["results"]) == {"dashboard", "filtered", "csv"}
    for target, result in dashboard["results"].items():
        assert result["requests"] == 5 and result["errors"] == 0, target
        assert 0 < result["p50_ms"] <= result["p90_ms"] <= result["p99_ms"] <= result["max_ms"]
    assert "1,000,000 ledger rows over 30 days and 20 keys" in done.stdout
    assert "GET /account/ (30 days, every key)" in done.stdout
