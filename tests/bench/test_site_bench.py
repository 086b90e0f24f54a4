"""bench/site.py on a short run: the report's shape and sense, never its speed."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import HAVE_PG, HAVE_REDIS, ROOT

BENCH = ROOT / "bench" / "site.py"
TARGETS = ("bare", "tools", "search", "tool", "tool-back", "run")


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_help_names_every_option():
    done = run_bench("--help")
    assert done.returncode == 0, done.stderr
    for option in ("--duration", "--rounds", "--connections", "--worker-class", "--loadgen",
                   "--output"):  # fmt: skip
        assert option in done.stdout


@pytest.mark.skipif(not (HAVE_PG and HAVE_REDIS), reason="needs PostgreSQL and Redis")
def test_short_run_reports_every_target_and_counts_the_runs(tmp_path, site_bench_alone):
    output = tmp_path / "site.json"
    done = run_bench(
        "--duration", "1", "--rounds", "1", "--warmup", "1", "--connections", "4",
        "--worker-class", "sync", "--output", str(output),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["error"] is None
    results = report["results"]["sync"]
    assert tuple(results) == TARGETS
    for target, result in results.items():
        assert result["rps"] > 0 and result["requests"] > 0, target
        assert result["non_2xx"] == 0 and result["socket_errors"] == 0, target
        assert result["ratio_to_bare"] > 0
        assert isinstance(result["meets_target"], bool) == (target in report["targets"])
    assert results["bare"]["ratio_to_bare"] == 1.0
    runs = report["runs"]["sync"]
    assert 0 < runs["sent"] <= runs["recorded"] <= runs["sent"] + 4 * 2
    assert set(runs["by_status"]) == {"succeeded"}
    # The table names each target, its figures and its goal.
    for label in report["labels"].values():
        assert label in done.stdout
    assert done.stdout.count(">= 0.30") == 3 and ">= 0.10" in done.stdout
