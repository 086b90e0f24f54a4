"""What each local engine costs on a fixed input, and what a queued run adds on top.

Engines (each on an input generated on the spot; nothing is downloaded or committed):
OCR seconds per page, speech-to-text and text-to-speech real-time factors, the embedded text
model's tokens per second, video encode seconds, extractive summary and keyword extraction
time, PDF text extraction pages per second and image operations per second. Each engine is
warmed once (its model load timed on its own and reported), then timed ``--repeat`` times;
the figure is the median. Engines that are not installed are reported as such and skipped.

Queued-run overhead: trivial tool runs (``word-counter``) submitted one at a time with
``Prefer: respond-async`` to an idle worker: a real RQ worker process (``flask --app app
worker``) on PostgreSQL and Redis, and the embedded default's in-process worker (SQLite, no
Redis). The time from submit to start and to finish comes from each run's own timestamps.
See ``bench/README.md``.

Exit status: 0 when every measured engine and run succeeded (skipped engines included),
1 when a measurement failed (its figures are missing), 2 when setup failed or the run was
interrupted. Inputs are made with the tests' generators (``tests/engines/fixtures.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

# Run as a script, Python puts bench/ first on the path, where this file would shadow the
# project's ``engines`` package: the repository root goes there instead.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.engines_cases import (  # noqa: E402
    ESPEAK_VOICE,
    Measure,
    Result,
    bench_images,
    bench_llm,
    bench_ocr,
    bench_pdf,
    bench_stt,
    bench_text_tool,
    bench_tts,
    bench_video_edit,
    bench_video_render,
    engines_missing,
    llm_missing,
    stt_missing,
    tts_missing,
)
from bench.engines_queue import bench_queue  # noqa: E402
from bench.harness import (  # noqa: E402
    BUSY_WARNING,
    RESULTS_DIR,
    ROOT,
    SetupFailed,
    add_service_options,
    background_cpu,
    report_header,
    stopping_early,
)

RESULTS_FILE = RESULTS_DIR / "engines.json"
DEFAULT_REPEAT = 3
DEFAULT_QUEUE_RUNS = 50
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/bench_engines"
REDIS_URL = "redis://127.0.0.1:6379/12"  # api_overhead.py uses 14, workflows.py 13


def nothing_missing() -> str | None:
    return None


@dataclass(frozen=True)
class Case:
    key: str
    engine: str
    measure: Measure
    missing: Callable[[], str | None] = nothing_missing


# Every case, cheapest first. eSpeak NG goes before Piper, whose voice lookup loads it.
CASES = (
    Case("summarize", "extractive summary (sumy TextRank)",
         bench_text_tool("text-summarizer", sentences=5), engines_missing("summarize.extractive")),
    Case("keywords", "keyword extraction (YAKE)", bench_text_tool("keyword-extractor"),
         engines_missing("seo.keywords")),
    Case("pdf", "PDF text extraction (pypdf)", bench_pdf, engines_missing("documents.extract")),
    Case("images", "image processing (Pillow)", bench_images,
         engines_missing("images.process", "images.filter", "images.analyze")),
    Case("ocr", "OCR (RapidOCR PP-OCR, onnxruntime)", bench_ocr, engines_missing("ocr.text")),
    Case("tts-espeak", "text to speech (eSpeak NG fallback)",
         bench_tts(ESPEAK_VOICE, "_espeak"), lambda: tts_missing("espeak")),
    Case("tts-piper", "text to speech (Piper, joe-medium)",
         bench_tts("en_US-joe-medium", "_piper"), lambda: tts_missing("piper")),
    Case("stt", "speech to text (faster-whisper tiny.en)", bench_stt, stt_missing),
    Case("llm", "embedded text model (xllamacpp)", bench_llm, llm_missing),
    Case("video-render", "narrated slideshow (ffmpeg x264)", bench_video_render,
         engines_missing("video.render")),
    Case("video-trim", "video trim (ffmpeg x264)",
         bench_video_edit("video-trimmer", start_s=2, end_s=8), engines_missing("video.edit")),
    Case("video-gif", "video to GIF (ffmpeg)",
         bench_video_edit("video-to-gif", start_s=1, duration_s=5, fps=10, width=480),
         engines_missing("video.edit")),
    Case("queue-rq", "queued run, RQ worker process", bench_queue("rq")),
    Case("queue-embedded", "queued run, embedded in-process queue", bench_queue("embedded")),
)  # fmt: skip
CASE_KEYS = tuple(case.key for case in CASES)


def run_case(
    case: Case, args: argparse.Namespace, say: Callable[[str], None]
) -> tuple[Result, str | None]:
    """Measure one case; return its result and a setup failure message, if any."""
    result = Result(case.key, case.engine)
    try:
        reason = case.missing()
    except Exception as error:  # an engine's check that cannot even run
        reason = f"{type(error).__name__}: {error}"
    if reason:
        result.status, result.detail = "not installed", reason
        say(f"  {case.key}: not installed ({reason})")
        return result, None
    say(f"  {case.key} ...")
    started = time.perf_counter()
    try:
        case.measure(result, args)
    except SetupFailed as failed:
        result.status, result.detail = "failed", f"setup failed: {failed}"
        return result, str(failed)
    except Exception as error:
        result.status, result.detail = "failed", f"{type(error).__name__}: {error}"
        say(f"  {case.key}: FAILED {result.detail}")
        return result, None
    for name in ("load_s", "warmup_s"):
        if getattr(result, name) is not None:
            setattr(result, name, round(getattr(result, name), 4))
    say(f"  {case.key}: done in {time.perf_counter() - started:.1f} s")
    return result, None


def number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def print_table(results: list[Result]) -> None:
    """Engine, figure, value and unit, with each engine's input on its first row."""
    print(f"\n{'engine':<16}{'figure':<44}{'value':>9}  {'unit':<9}input")
    for result in results:
        if result.status != "ok":
            label = "not installed" if result.status == "not installed" else "FAILED"
            print(f"{result.case:<16}{label}: {result.detail.splitlines()[0][:140]}")
            continue
        rows = []
        if result.load_s is not None:
            rows.append(("model load", result.load_s, "s"))
        if result.warmup_s is not None:
            rows.append(("first run (warm-up, not counted)", result.warmup_s, "s"))
        rows += [(figure.name, figure.value, figure.unit) for figure in result.figures]
        for index, (name, value, unit) in enumerate(rows):
            first = index == 0
            line = (
                f"{result.case if first else '':<16}{name:<44}{number(value):>9}  {unit:<9}"
                f"{result.input if first else ''}"
            )
            print(line.rstrip())


def write_json(path: Path, args: argparse.Namespace, results: list[Result], busy: float) -> dict:
    report = {
        **report_header(),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "machine_busy_pct_before": busy,
        "repeat": args.repeat,
        "queue_runs": args.queue_runs,
        "results": {result.case: asdict(result) for result in results},
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", type=lambda value: [key.strip() for key in value.split(",") if key.strip()],
        help=f"comma-separated cases to run (default: all): {', '.join(CASE_KEYS)}",
    )  # fmt: skip
    parser.add_argument(
        "--repeat", type=int, default=DEFAULT_REPEAT,
        help=f"measured runs per engine after one warm-up; the median is reported "
        f"(default {DEFAULT_REPEAT})",
    )  # fmt: skip
    parser.add_argument(
        "--queue-runs", type=int, default=DEFAULT_QUEUE_RUNS,
        help=f"queued runs measured per queue (default {DEFAULT_QUEUE_RUNS})",
    )  # fmt: skip
    parser.add_argument(
        "--json-only", action="store_true",
        help="print only the JSON report on stdout (no progress, no table)",
    )  # fmt: skip
    parser.add_argument(
        "--output", type=Path, default=RESULTS_FILE,
        help=f"where to write the JSON report (default {RESULTS_FILE.relative_to(ROOT)})",
    )  # fmt: skip
    add_service_options(parser, DATABASE_URL, REDIS_URL, " of queue-rq")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(CASE_KEYS))
    if unknown:
        parser.error(f"--only: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASE_KEYS)}")
    if args.repeat < 1 or args.queue_runs < 1:
        parser.error("--repeat and --queue-runs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure the chosen cases, print the table, write the JSON; return the exit status."""
    import logging

    args = parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)  # also where the worker logs
    logging.basicConfig(level=logging.WARNING)  # the app's INFO lines would drown the table
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    def say(line: str) -> None:
        if not args.json_only:
            print(line, flush=True)

    busy, busiest = background_cpu()
    say(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {busy:.0f}% busy")
    if busy > BUSY_WARNING:
        say("  WARNING: something else is running; figures will be slow and noisy. Busiest:\n    "
            + "\n    ".join(busiest))  # fmt: skip
    chosen = [case for case in CASES if not args.only or case.key in args.only]
    results: list[Result] = []
    setup_failed = False
    with stopping_early() as stopped:
        for case in chosen:  # a case whose setup fails does not stop the others
            result, setup_error = run_case(case, args, say)
            results.append(result)
            if setup_error:
                setup_failed = True
                print(f"\nSETUP FAILED ({case.key}):\n{setup_error}\n", file=sys.stderr)
    report = write_json(args.output, args, results, busy)
    if args.json_only:
        print(json.dumps(report, indent=2))
    else:
        print_table(results)
        print(f"\nmedian of {args.repeat} runs after one warm-up; results: {args.output}")
    if setup_failed or stopped.error:
        return 2
    return 1 if any(result.status == "failed" for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
