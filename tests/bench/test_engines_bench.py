"""bench/engines.py on cheap cases: the report's shape and sense, never its speed."""

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy.engine import make_url

from tests.helpers import HAVE_PG, HAVE_REDIS, PG_URL, REDIS_URL, ROOT

BENCH = ROOT / "bench" / "engines.py"
REPEAT = 2
QUEUE_RUNS = 3
# The embedded model made unavailable: the bench must say so and go on.
NO_MODEL = {"LOCAL_LLM_GGUF": "/nonexistent/model.gguf"}


def run_bench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_help_names_every_option_and_case():
    done = run_bench("--help")
    assert done.returncode == 0, done.stderr
    for option in ("--only", "--repeat", "--json-only", "--queue-runs", "--output"):
        assert option in done.stdout
    for case in ("ocr", "stt", "tts-piper", "tts-espeak", "llm", "queue-rq", "queue-embedded"):
        assert case in done.stdout


def test_unknown_case_is_refused():
    done = run_bench("--only", "summarize,teleport")
    assert done.returncode == 2
    assert "unknown case(s) teleport" in done.stderr


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One fast run in JSON mode: two text engines, the model made missing, both queues
    (the RQ one on a database of its own next to the test database, and the test Redis)."""
    output = tmp_path_factory.mktemp("bench") / "engines.json"
    cases = ["summarize", "keywords", "llm", "queue-embedded"]
    if HAVE_PG and HAVE_REDIS:
        cases.append("queue-rq")
    test_db = make_url(PG_URL)
    bench_db = test_db.set(database=f"{test_db.database}_bench")
    done = run_bench(
        "--only", ",".join(cases), "--repeat", str(REPEAT), "--queue-runs", str(QUEUE_RUNS),
        "--json-only", "--output", str(output),
        "--database-url", bench_db.render_as_string(hide_password=False),
        "--redis-url", REDIS_URL,
        env=NO_MODEL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)  # --json-only: nothing else on stdout
    assert printed == json.loads(output.read_text())
    return printed


def test_report_describes_the_run(report):
    assert report["repeat"] == REPEAT and report["queue_runs"] == QUEUE_RUNS
    assert report["cpus"] >= 1 and report["commit"]
    expected = {"summarize", "keywords", "llm", "queue-embedded"}
    assert set(report["results"]) - {"queue-rq"} == expected


@pytest.mark.parametrize("case", ["summarize", "keywords"])
def test_text_engines_report_a_median_of_their_runs(report, case):
    result = report["results"][case]
    assert result["status"] == "ok" and "2,0" in result["input"]  # about 2,000 words
    assert result["warmup_s"] > 0
    (figure,) = result["figures"]
    assert figure["name"] == "time per document" and figure["unit"] == "s"
    assert len(figure["samples"]) == REPEAT and all(s > 0 for s in figure["samples"])
    assert min(figure["samples"]) <= figure["value"] <= max(figure["samples"])


def test_an_engine_that_is_not_installed_is_skipped_with_its_reason(report):
    result = report["results"]["llm"]
    assert result["status"] == "not installed" and result["figures"] == []
    assert "LOCAL_LLM_GGUF" in result["detail"]


def queue_cases(report) -> list[str]:
    return [case for case in ("queue-embedded", "queue-rq") if case in report["results"]]


def test_queues_report_start_and_finish_percentiles(report):
    for case in queue_cases(report):
        result = report["results"][case]
        assert result["status"] == "ok", result["detail"]
        figures = {figure["name"]: figure for figure in result["figures"]}
        assert set(figures) == {
            "submit to start p50", "submit to start p99", "submit to finish p50",
            "submit to finish p99", "202 answer p50",
        }  # fmt: skip
        assert all(figure["unit"] == "ms" and figure["value"] > 0 for figure in figures.values())
        starts = figures["submit to start p50"]["samples"]
        finishes = figures["submit to finish p50"]["samples"]
        assert len(starts) == len(finishes) == QUEUE_RUNS
        assert all(0 < start <= finish for start, finish in zip(starts, finishes, strict=True))
        assert figures["submit to start p99"]["value"] == max(starts)  # 3 runs: p99 is the max


@pytest.mark.skipif(not (HAVE_PG and HAVE_REDIS), reason="needs PostgreSQL and Redis")
def test_the_rq_queue_ran_through_a_worker_process(report):
    assert "RQ SimpleWorker process" in report["results"]["queue-rq"]["input"]


def test_table_mode_prints_figures_and_skips(tmp_path):
    done = run_bench(
        "--only", "keywords,llm", "--repeat", "1", "--output", str(tmp_path / "e.json"),
        env=NO_MODEL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("engine"))
    assert all(column in header for column in ("figure", "value", "unit", "input"))
    assert any(line.startswith("keywords") and "words" in line for line in lines)
    assert any(line.strip().startswith("time per document") for line in lines)
    assert any(line.startswith("llm") and "not installed" in line for line in lines)


def test_a_setup_failure_exits_2_after_the_other_cases(tmp_path):
    output = tmp_path / "e.json"
    done = run_bench(
        "--only", "queue-rq,keywords", "--repeat", "1", "--json-only", "--output", str(output),
        "--database-url", "postgresql://postgres@127.0.0.1:1/nowhere",
    )  # fmt: skip
    assert done.returncode == 2
    assert "SETUP FAILED (queue-rq)" in done.stderr and "127.0.0.1:1" in done.stderr
    results = json.loads(output.read_text())["results"]
    assert results["queue-rq"]["status"] == "failed"
    assert results["queue-rq"]["detail"].startswith("setup failed: PostgreSQL")
    assert results["keywords"]["status"] == "ok"
