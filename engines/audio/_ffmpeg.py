"""Running ffmpeg and measuring media with it: what every audio and video engine shares.

Everything runs through the static ffmpeg inside ``imageio-ffmpeg``. There is no ffprobe: a
file is measured from what ``ffmpeg -i`` prints about it. Inputs are bounded (``MAX_SECONDS``
of media), ffmpeg runs without a shell in a temporary folder with a timeout, reads only the
demuxers of common media formats from local files (an uploaded playlist cannot make it fetch
anything), and a file it cannot read becomes an EngineError naming ffmpeg's complaint.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.base import EngineError, ProviderUnavailable
from engines.blob import Blob

MAX_SECONDS = 30 * 60
# Demuxers ffmpeg may use on an input: common audio and video containers only.
_DEMUXERS = "wav,mp3,ogg,flac,mov,mp4,matroska,webm,aac,avi,mpegts,asf,aiff,caf,w64,amr,mpeg"


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def ffmpeg_executable() -> str | None:
    """The static ffmpeg shipped by imageio-ffmpeg, or None when it is not installed."""
    if not _has_module("imageio_ffmpeg"):
        return None
    import imageio_ffmpeg

    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:
        return None


# --- running ffmpeg -----------------------------------------------------------------------


@contextmanager
def _workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="media-") as folder:
        yield Path(folder)


def _input(path: Path) -> list[str]:
    """Arguments that open ``path`` as an input, with the demuxer and protocol whitelists."""
    return ["-format_whitelist", _DEMUXERS, "-protocol_whitelist", "file", "-i", str(path)]


def _run(arguments: list[str], folder: Path, *, timeout: float, loglevel: str = "error") -> str:
    """Run ffmpeg in ``folder`` and answer what it logged.

    Raises EngineError when ffmpeg refuses the input (with its last complaint) and
    ProviderUnavailable when ffmpeg is missing or runs past ``timeout`` seconds.
    """
    executable = ffmpeg_executable()
    if executable is None:
        raise ProviderUnavailable("Audio and video tools need the imageio-ffmpeg package.")
    command = [executable, "-hide_banner", "-nostdin", "-nostats", "-loglevel", loglevel, "-y"]
    try:
        result = subprocess.run(
            [*command, *arguments], cwd=folder, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise ProviderUnavailable("ffmpeg took too long on this file; try a shorter one.") from None
    log = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        raise EngineError(f"ffmpeg could not process the file: {_complaint(log, folder)}")
    return log


def _complaint(log: str, folder: Path) -> str:
    """ffmpeg's most telling error line, without our temporary paths."""
    lines = [line.strip() for line in log.replace(str(folder) + "/", "").splitlines()]
    lines = [re.sub(r"^\[[^\]]+\] ", "", line) for line in lines if line]
    for line in reversed(lines):
        if "Invalid data" in line or "not on whitelist" in line or "No such" in line:
            return line
    return lines[-1] if lines else "unknown error"


def _save(blob: Blob, folder: Path, name: str) -> Path:
    if not blob.data:
        raise EngineError("The file is empty.")
    path = folder / name
    path.write_bytes(blob.data)
    return path


def _timeout(seconds: float, factor: float = 1.0) -> float:
    return 60 + factor * seconds


# --- measuring media ----------------------------------------------------------------------


@dataclass(frozen=True)
class Media:
    """What ``ffmpeg -i`` tells about a file."""

    container: str
    duration: float
    bitrate_kbps: int | None
    audio_codec: str | None = None
    sample_rate: int | None = None
    channels: int | None = None
    channel_layout: str | None = None
    video_codec: str | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    rotation: int = 0


_DURATION_RE = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_TIME_RE = re.compile(r"time=(\d+):(\d\d):(\d\d(?:\.\d+)?)")
_STREAM_RE = re.compile(r"^\s*Stream #0:\d+\S*: (Audio|Video): (\w+)(.*)$", re.MULTILINE)
_LAYOUT_CHANNELS = {"mono": 1, "stereo": 2, "2.1": 3, "quad": 4, "5.0": 5, "5.1": 6, "7.1": 8}


def _seconds(match: re.Match[str]) -> float:
    hours, minutes, seconds = match.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def probe(path: Path, folder: Path, *, need: str = "audio") -> Media:
    """Measure a media file; ``need`` ("audio", "video" or "any") names the stream it must have.

    Raises EngineError for a file ffmpeg cannot read, one without the stream needed, and one
    longer than MAX_SECONDS.
    """
    try:
        log = _run(
            [*_input(path), "-t", "0", "-f", "null", "-"], folder, timeout=60, loglevel="info"
        )
    except EngineError:
        raise EngineError(f"The file is not {_kind(need)} in a format this tool reads.") from None
    head = log.split("Stream mapping:", 1)[0]
    container = re.search(r"Input #0, (.+?), from ", head)
    streams = {kind: (codec, rest) for kind, codec, rest in reversed(_STREAM_RE.findall(head))}
    if need == "any" and not streams or need != "any" and need.capitalize() not in streams:
        raise EngineError(f"The file holds no {need} stream." if streams else "The file is empty.")
    duration = _DURATION_RE.search(head)
    seconds = _seconds(duration) if duration else _decoded_seconds(path, folder)
    if seconds > MAX_SECONDS:
        raise EngineError(f"The file is longer than {MAX_SECONDS // 60} minutes.")
    bitrate = re.search(r"bitrate: (\d+) kb/s", head)
    facts: dict[str, Any] = {
        "container": container.group(1) if container else "unknown",
        "duration": seconds,
        "bitrate_kbps": int(bitrate.group(1)) if bitrate else None,
    }
    if "Audio" in streams:
        facts.update(_audio_facts(*streams["Audio"]))
    if "Video" in streams:
        facts.update(_video_facts(*streams["Video"], head))
    return Media(**facts)


def _decoded_seconds(path: Path, folder: Path) -> float:
    """The length of a file whose header does not give it (a streamed WebM): copy it to null."""
    log = _run(
        [*_input(path), "-c", "copy", "-f", "null", "-"], folder, timeout=120, loglevel="info"
    )
    times = list(_TIME_RE.finditer(log))
    return _seconds(times[-1]) if times else 0.0


def _audio_facts(codec: str, rest: str) -> dict[str, Any]:
    rate = re.search(r", (\d+) Hz", rest)
    layout = re.search(r" Hz, ([^,]+)", rest)
    name = layout.group(1).strip() if layout else None
    channels = None
    if name:
        counted = re.match(r"(\d+) channels", name)
        channels = int(counted.group(1)) if counted else _LAYOUT_CHANNELS.get(name.split("(")[0])
    return {
        "audio_codec": codec,
        "sample_rate": int(rate.group(1)) if rate else None,
        "channels": channels,
        "channel_layout": name,
    }


def _video_facts(codec: str, rest: str, head: str) -> dict[str, Any]:
    size = re.search(r", (\d{1,5})x(\d{1,5})", rest)
    fps = re.search(r", ([\d.]+) (?:fps|tbr)", rest)
    rotation = re.search(r"rotation of (-?[\d.]+) degrees", head)
    width, height = (int(size.group(1)), int(size.group(2))) if size else (None, None)
    turned = round(float(rotation.group(1))) % 360 if rotation else 0
    if turned in (90, 270) and width and height:
        width, height = height, width  # players show the picture turned
    return {
        "video_codec": codec,
        "width": width,
        "height": height,
        "fps": float(fps.group(1)) if fps else None,
        "rotation": turned,
    }


def _kind(need: str) -> str:
    return {"audio": "audio", "video": "a video"}.get(need, "audio or video")
