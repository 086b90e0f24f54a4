"""The site assistant: how often it finds the right tool, and how long an answer takes.

Quality: the golden set of the tests (``tests/services/assistant_golden.yaml``, questions
written as visitors ask them, each with its right tools): recall@1 (the right tool first)
and recall@5 (among the first five), on the embedded default's catalogue.

Latency: every golden question answered end to end by ``services.assistant.answers.answer``
(retrieval, the evidence threshold, the answer) in the app, ``--rounds`` times: in
retrieval-only mode (no provider), and with the tests' fake OpenAI-compatible provider on
loopback (``tests/fakes/openai_server.py``: a model that answers at once, so the figure is
what the assistant adds around the model's own time). p50 and p99 in milliseconds. Also the
cost of building the index once per process (the first question pays it; app start does not).

Runs in-process on SQLite in memory; needs no PostgreSQL or Redis. Prints a table and writes
``bench/results/assistant.json``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where its files would shadow the
# project's packages: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

import yaml  # noqa: E402

from bench.harness import RESULTS_DIR, ROOT, percentile  # noqa: E402

RESULTS_FILE = RESULTS_DIR / "assistant.json"
GOLDEN = ROOT / "tests" / "services" / "assistant_golden.yaml"


def make_app(**settings):
    from app import create_app

    return create_app(
        {
            "TESTING": True,
            "ENV_NAME": "test",
            "SECRET_KEY": "bench",
            "SQLALCHEMY_DATABASE_URI": "sqlite://",
            "REDIS_URL": None,
            "RATELIMIT_STORAGE_URI": "memory://",
            "SWEEP_INTERVAL_SECONDS": 0,
            **settings,
        }
    )


def quality(index, golden: list[dict]) -> dict:
    first = five = 0
    for question in golden:
        found = [hit.document.id.split(":", 1)[1] for hit in index.search(question["q"]).hits]
        first += bool(found) and found[0] in question["tools"]
        five += any(slug in question["tools"] for slug in found[:5])
    return {"questions": len(golden), "recall_at_1": first / len(golden),
            "recall_at_5": five / len(golden)}  # fmt: skip


def latency(app, golden: list[dict], rounds: int) -> dict:
    from services.assistant import answers

    timings, modes = [], {}
    with app.app_context():
        answers.answer(golden[0]["q"])  # warm
        for _ in range(rounds):
            for question in golden:
                started = time.perf_counter()
                found = answers.answer(question["q"])
                timings.append((time.perf_counter() - started) * 1000)
                modes[found.mode] = modes.get(found.mode, 0) + 1
    return {
        "answers": len(timings),
        "p50_ms": round(statistics.median(timings), 2),
        "p99_ms": round(percentile(timings, 99), 2),
        "modes": modes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="answers per question and mode")
    args = parser.parse_args()
    golden = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))

    app = make_app()
    from services.assistant import current_index

    with app.app_context():
        started = time.perf_counter()
        index = current_index()
        build_ms = (time.perf_counter() - started) * 1000
        found = quality(index, golden)
    retrieval = latency(app, golden, args.rounds)

    from tests.fakes import FakeOpenAI

    with FakeOpenAI() as fake:
        provider = latency(make_app(AI_BASE_URL=fake.base_url), golden, args.rounds)
        model_calls = len(fake.calls("/v1/chat/completions"))

    results = {
        "documents": len(index),
        "release_id": index.release_id,
        "index_build_ms": round(build_ms, 1),
        **found,
        "retrieval_only": retrieval,
        "fake_provider": {**provider, "model_calls": model_calls},
    }
    print(f"documents {results['documents']}, index built in {results['index_build_ms']} ms "
          "(by a process's first question, not at app start)")  # fmt: skip
    print(f"golden set: {found['questions']} questions, recall@1 {found['recall_at_1']:.2f}, "
          f"recall@5 {found['recall_at_5']:.2f}")  # fmt: skip
    print(f"{'mode':<16}{'answers':>8}{'p50 ms':>10}{'p99 ms':>10}  modes")
    for name, row in (("retrieval only", retrieval), ("fake provider", provider)):
        print(
            f"{name:<16}{row['answers']:>8}{row['p50_ms']:>10}{row['p99_ms']:>10}  {row['modes']}"
        )
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
