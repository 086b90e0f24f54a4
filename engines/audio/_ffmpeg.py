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
# Decoding is bounded before it starts, from what ``ffmpeg -i`` reads in the headers, and
# ffmpeg is told to read no more than MAX_SECONDS of any input whatever they say (``_input``).
#
# Sound: the decoded samples, counted as 16-bit PCM (what a WAV result holds, and what the
# engine process reads back), at most what half an hour of 48 kHz stereo makes (345.6 MB):
# a 30-minute stereo recording always passes, one at 192 kHz in 7.1 would be 5.5 GB.
MAX_PCM_BYTES = MAX_SECONDS * 48_000 * 2 * 2
# Results are cut there too (ffmpeg's -fs), whatever the edit does to rate and channels.
MAX_RESULT_BYTES = MAX_PCM_BYTES + 1_000_000  # and 1 MB for headers
# Pictures: each decoded frame, at most DCI 4K (4096 x 2160; a UHD phone video passes). ffmpeg
# holds a few dozen frames at once to decode and encode: measured (bench/decoders.py), a 4K
# re-encode peaks near 1 GB in the ffmpeg process, a 144 MP frame at several GB.
MAX_VIDEO_SIDE = 4096
MAX_VIDEO_PIXELS = 4096 * 2160
# Frames x pixels a whole-video edit decodes and encodes: half an hour of 1080p at 30 fps
# (112 billion pixels; 7.5 minutes of 4K, 30 minutes of 720p at 60 fps). It bounds the time an
# encode takes, which grows with it (a 1000 fps stream of tiny frames stays cheap).
MAX_VIDEO_WORK = MAX_SECONDS * 30 * 1920 * 1080
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


def _input(path: Path, *, cut: bool = True) -> list[str]:
    """Arguments that open ``path`` as an input, with the demuxer and protocol whitelists,
    reading at most MAX_SECONDS of it (a header may understate the length) unless ``cut`` is
    False: for a caller that gives its own end with ``-to`` (an input ``-t`` would win)."""
    whitelists = ["-format_whitelist", _DEMUXERS, "-protocol_whitelist", "file"]
    # Decoders refuse frames past MAX_VIDEO_PIXELS, whatever the header said: ffmpeg decodes
    # a first frame even to describe a file (a PNG frame of 144 MP took 455 MB to probe).
    bounds = ["-max_pixels", str(MAX_VIDEO_PIXELS)]
    if cut:
        bounds = ["-t", str(MAX_SECONDS + 1), *bounds]
    return [*bounds, *whitelists, "-i", str(path)]


def result_limit() -> list[str]:
    """Output arguments that stop ffmpeg writing past MAX_RESULT_BYTES (see ``check_result``)."""
    return ["-fs", str(MAX_RESULT_BYTES)]


def check_result(path: Path) -> None:
    """Refuse a result that reached MAX_RESULT_BYTES (ffmpeg stopped there: it is cut)."""
    if path.is_file() and path.stat().st_size >= MAX_RESULT_BYTES:
        raise EngineError(
            f"The result would be larger than {MAX_RESULT_BYTES / 1e6:,.1f} MB, the most this "
            "tool returns: choose a compressed format, a lower sample rate or a shorter part."
        )


def _run(arguments: list[str], folder: Path, *, timeout: float, loglevel: str = "error") -> str:
    """Run ffmpeg in ``folder`` and answer what it logged.

    Raises EngineError when ffmpeg refuses the input (with its last complaint) and
    ProviderUnavailable when ffmpeg is missing or runs past ``timeout`` seconds.
    """
    result = _execute(arguments, folder, timeout=timeout, loglevel=loglevel)
    log = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        raise EngineError(f"ffmpeg could not process the file: {_complaint(log, folder)}")
    return log


def _execute(
    arguments: list[str], folder: Path, *, timeout: float, loglevel: str
) -> subprocess.CompletedProcess[bytes]:
    """Run ffmpeg in ``folder``; ProviderUnavailable when it is missing or too slow."""
    executable = ffmpeg_executable()
    if executable is None:
        raise ProviderUnavailable("Audio and video tools need the imageio-ffmpeg package.")
    command = [executable, "-hide_banner", "-nostdin", "-nostats", "-loglevel", loglevel, "-y"]
    try:
        return subprocess.run(
            [*command, *arguments], cwd=folder, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise ProviderUnavailable("ffmpeg took too long on this file; try a shorter one.") from None


def _complaint(log: str, folder: Path) -> str:
    """ffmpeg's most telling error line, without our temporary paths."""
    lines = [line.strip() for line in log.replace(str(folder) + "/", "").splitlines()]
    lines = [re.sub(r"^\[[^\]]+\] ", "", line) for line in lines if line]
    for line in reversed(lines):
        if "max pixel count" in line:  # a frame past MAX_VIDEO_PIXELS, the header notwithstanding
            return f"a frame is larger than {MAX_VIDEO_PIXELS:,} pixels"
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
_TOO_MANY_PIXELS_RE = re.compile(r"Picture size (\d+)x(\d+) exceeds specified max pixel count")
_TIME_RE = re.compile(r"time=(\d+):(\d\d):(\d\d(?:\.\d+)?)")
_STREAM_RE = re.compile(r"^\s*Stream #0:\d+\S*: (Audio|Video): (\w+)(.*)$", re.MULTILINE)
_LAYOUT_CHANNELS = {
    "mono": 1, "stereo": 2, "downmix": 2, "2.1": 3, "3.0": 3, "3.1": 4, "4.0": 4, "quad": 4,
    "4.1": 5, "5.0": 5, "5.1": 6, "6.0": 6, "hexagonal": 6, "6.1": 7, "7.0": 7, "7.1": 8,
    "octagonal": 8, "hexadecagonal": 16, "22.2": 24,
}  # fmt: skip


def _seconds(match: re.Match[str]) -> float:
    hours, minutes, seconds = match.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def probe(path: Path, folder: Path, *, need: str = "audio") -> Media:
    """Measure a media file; ``need`` ("audio", "video" or "any") names the stream it must have.

    Raises EngineError for a file ffmpeg cannot read, one without the stream needed, and one
    longer than MAX_SECONDS.
    """
    # Sound alone when sound is what the tool needs: a video stream is not decoded then.
    only = ["-vn", "-sn", "-dn"] if need == "audio" else []
    result = _execute(
        [*_input(path), "-t", "0", *only, "-f", "null", "-"], folder, timeout=60, loglevel="info"
    )
    log = result.stderr.decode(errors="replace")
    head = log.split("Stream mapping:", 1)[0]
    container = re.search(r"Input #0, (.+?), from ", head)
    streams = {kind: (codec, rest) for kind, codec, rest in reversed(_STREAM_RE.findall(head))}
    refused = _TOO_MANY_PIXELS_RE.search(log)  # the decoder's -max_pixels refusal
    if refused and need != "audio":
        width, height = int(refused.group(1)), int(refused.group(2))
        _check_picture(Media("", 0.0, None, width=width, height=height))
    missing = need == "any" and not streams or need != "any" and need.capitalize() not in streams
    if missing and streams:
        raise EngineError(f"The file holds no {need} stream.")
    if result.returncode != 0:
        raise EngineError(f"The file is not {_kind(need)} in a format this tool reads.")
    if missing:
        raise EngineError("The file is empty.")
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
    media = Media(**facts)
    if need == "audio":
        _check_sound(media)
    elif need == "video":
        _check_picture(media)
    return media


def _check_sound(media: Media) -> None:
    """Refuse sound that decodes to more than MAX_PCM_BYTES (from the header's length, rate
    and channels; a layout ffmpeg does not count is taken as 8 channels)."""
    rate, channels = media.sample_rate or 48_000, media.channels or 8
    pcm = media.duration * rate * channels * 2
    if pcm > MAX_PCM_BYTES:
        raise EngineError(
            f"The audio decodes to {pcm / 1e6:,.1f} MB of sound ({_minutes(media.duration)} at "
            f"{rate:,} Hz, {channels} channels); the most this tool decodes is "
            f"{MAX_PCM_BYTES / 1e6:,.1f} MB (30 minutes of 48 kHz stereo). Send a shorter "
            "recording, or one with fewer channels or a lower sample rate."
        )


def _check_picture(media: Media) -> None:
    """Refuse video frames larger than MAX_VIDEO_SIDE a side or MAX_VIDEO_PIXELS."""
    width, height = media.width or 0, media.height or 0
    if max(width, height) > MAX_VIDEO_SIDE or width * height > MAX_VIDEO_PIXELS:
        raise EngineError(
            f"The video is {width}x{height} ({width * height:,} pixels a frame); the most "
            f"this tool decodes is {MAX_VIDEO_PIXELS:,} pixels ({MAX_VIDEO_PIXELS // 2160}x2160) "
            f"and {MAX_VIDEO_SIDE} a side. Send a smaller video."
        )


def check_video_work(media: Media, seconds: float) -> None:
    """Refuse decoding and encoding ``seconds`` of ``media`` when that is more frames x
    pixels than MAX_VIDEO_WORK (the frame rate from the header, 30 fps when it gives none)."""
    fps = media.fps or 30.0
    work = seconds * fps * (media.width or 0) * (media.height or 0)
    if work > MAX_VIDEO_WORK:
        raise EngineError(
            f"{_minutes(seconds)} of {media.width}x{media.height} video at {fps:g} fps is "
            f"{work / 1e9:,.0f} billion pixels to decode; the most this tool decodes is "
            f"{MAX_VIDEO_WORK / 1e9:,.0f} billion (30 minutes of 1080p at 30 fps). Send a "
            "shorter or smaller video."
        )


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}:{rest:02d}"


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
    fps = re.search(r", ([\d.]+)(k?) (?:fps|tbr)", rest)  # ffmpeg writes 1000 fps as "1k fps"
    rotation = re.search(r"rotation of (-?[\d.]+) degrees", head)
    width, height = (int(size.group(1)), int(size.group(2))) if size else (None, None)
    turned = round(float(rotation.group(1))) % 360 if rotation else 0
    if turned in (90, 270) and width and height:
        width, height = height, width  # players show the picture turned
    return {
        "video_codec": codec,
        "width": width,
        "height": height,
        "fps": float(fps.group(1)) * (1000 if fps.group(2) else 1) if fps else None,
        "rotation": turned,
    }


def _kind(need: str) -> str:
    return {"audio": "audio", "video": "a video"}.get(need, "audio or video")
