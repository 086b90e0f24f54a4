"""Audio output formats and the encode, tempo and cut helpers audio.edit and video.edit share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.audio._ffmpeg import (
    Media,
    check_result,
    probe,
    result_limit,
)
from engines.base import EngineError
from engines.blob import Blob

# --- audio formats ------------------------------------------------------------------------


@dataclass(frozen=True)
class AudioFormat:
    content_type: str
    codec: str
    muxer: str
    extension: str
    lossy: bool


AUDIO_FORMATS = {
    "mp3": AudioFormat("audio/mpeg", "libmp3lame", "mp3", "mp3", True),
    "wav": AudioFormat("audio/wav", "pcm_s16le", "wav", "wav", False),
    "ogg": AudioFormat("audio/ogg", "libvorbis", "ogg", "ogg", True),
    "opus": AudioFormat("audio/ogg", "libopus", "ogg", "opus", True),
    "flac": AudioFormat("audio/flac", "flac", "flac", "flac", False),
    "m4a": AudioFormat("audio/mp4", "aac", "ipod", "m4a", True),
    "m4r": AudioFormat("audio/mp4", "aac", "ipod", "m4r", True),  # an iPhone ringtone
}
# The format that keeps an input's codec when the tool is asked to keep the input's format.
_FORMAT_OF_CODEC = {"mp3": "mp3", "vorbis": "ogg", "opus": "opus", "flac": "flac", "aac": "m4a"}
SAMPLE_RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
_OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
BITRATES = (32, 48, 64, 96, 128, 160, 192, 256, 320)


def _format_for(media: Media, requested: str | None) -> str:
    if requested:
        return requested
    codec = media.audio_codec or ""
    return "wav" if codec.startswith("pcm_") else _FORMAT_OF_CODEC.get(codec, "mp3")


def _sample_rate(fmt: str, rate: int) -> int:
    if fmt == "opus" and rate not in _OPUS_RATES:
        rates = ", ".join(str(r) for r in _OPUS_RATES)
        raise EngineError(f"Opus supports only these sample rates: {rates}.")
    return rate


def _encode_audio(fmt: str, bitrate: int | None) -> list[str]:
    spec = AUDIO_FORMATS[fmt]
    arguments = ["-vn", "-map_metadata", "-1", "-c:a", spec.codec]
    if spec.lossy:
        arguments += ["-b:a", f"{bitrate or 128}k"]
    return [*arguments, *result_limit(), "-f", spec.muxer]


def _audio_result(path: Path, folder: Path, fmt: str, stem: str) -> dict[str, Any]:
    check_result(path)
    media = probe(path, folder)
    data = path.read_bytes()
    return {
        "audio": Blob(
            data, AUDIO_FORMATS[fmt].content_type, f"{stem}.{AUDIO_FORMATS[fmt].extension}"
        ),
        "format": fmt,
        "duration_s": round(media.duration, 2),
        "bytes": len(data),
    }


def _tempo_filters(speed: float) -> list[str]:
    """``atempo`` steps for a speed factor (one step takes 0.5 to 2 and keeps the pitch)."""
    steps = []
    while speed > 2.0:
        steps.append(2.0)
        speed /= 2.0
    while speed < 0.5:
        steps.append(0.5)
        speed /= 0.5
    return [*(f"atempo={step}" for step in steps), f"atempo={speed:.6g}"]


def _cut(start: float, end: float | None, media: Media) -> tuple[float, float]:
    """Check a start and end (None: the end of the file) against the file's length."""
    stop = media.duration if end is None else min(end, media.duration)
    if start >= media.duration:
        raise EngineError(
            f"The start ({start:g} s) is past the end of the file ({media.duration:.2f} s)."
        )
    if stop <= start:
        raise EngineError("The end must come after the start.")
    return start, stop
