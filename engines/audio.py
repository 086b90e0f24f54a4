"""Local audio and video editing with ffmpeg: trims, conversions, loudness, speed, frames.

Everything runs through the static ffmpeg inside ``imageio-ffmpeg``. There is no ffprobe: a
file is measured from what ``ffmpeg -i`` prints about it. Four engines, each a family of
operations that a tool picks with ``params.operation``:

- ``audio.edit``: audio in, audio out (trim, convert, loudness, speed, fades, join...);
- ``audio.inspect``: facts about a recording (levels, loudness) or its waveform as a PNG;
- ``video.edit``: video in; a video, a GIF or the audio track out;
- ``video.inspect``: facts about a video, a frame as a PNG, a contact sheet of frames.

Inputs are bounded (``MAX_SECONDS`` of media, ``MAX_CLIPS`` clips to join), ffmpeg runs
without a shell in a temporary folder with a timeout, reads only the demuxers of common media
formats from local files (an uploaded playlist cannot make it fetch anything), and a file it
cannot read becomes an EngineError naming ffmpeg's complaint.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.speech import ffmpeg_executable

MAX_SECONDS = 30 * 60
MAX_CLIPS = 8
MAX_VIDEO_SIDE = 4096
# Demuxers ffmpeg may use on an input: common audio and video containers only.
_DEMUXERS = "wav,mp3,ogg,flac,mov,mp4,matroska,webm,aac,avi,mpegts,asf,aiff,caf,w64,amr,mpeg"
_FONT_DIRECTORIES = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts")


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
    return [*arguments, "-f", spec.muxer]


def _audio_result(path: Path, folder: Path, fmt: str, stem: str) -> dict[str, Any]:
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


# --- audio.edit ---------------------------------------------------------------------------

_LOUDNESS_JSON_RE = re.compile(r"\{[^{}]*\"input_i\"[^{}]*\}", re.DOTALL)
_CLEANUP = {
    "light": "highpass=f=70,afftdn=nf=-20",
    "medium": "highpass=f=90,afftdn=nf=-25,agate=threshold=0.01:ratio=2:attack=5:release=200",
    "strong": "highpass=f=120,lowpass=f=9000,afftdn=nf=-30,"
    "agate=threshold=0.02:ratio=4:attack=5:release=150",
}
_CHANNEL_FILTERS = {
    "mono": "pan=mono|c0=0.5*c0+0.5*c1",
    "stereo": "aformat=channel_layouts=stereo",
    "left": "pan=mono|c0=c0",
    "right": "pan=mono|c0=c1",
}


class AudioEditEngine(Engine):
    """Audio in, audio out.

    Params: ``operation`` (trim, convert, normalize, speed, fade, join, silence, volume,
    ringtone, channels, cleanup). Inputs: ``audio`` (Blob) and, for join, ``audio_2`` to
    ``audio_8``; the operation's own settings (see each tool); ``format`` (null keeps the
    input's format where it can) and ``bitrate_kbps`` for lossy formats. Output: ``audio``
    (Blob), ``format``, ``duration_s``, ``original_duration_s``, ``bytes``, and what the
    operation measured (loudness before and after, seconds of silence removed...).
    """

    name = "audio.edit"
    requires = ("imageio_ffmpeg",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {
            "operation": {
                "enum": [
                    "trim", "convert", "normalize", "speed", "fade", "join", "silence",
                    "volume", "ringtone", "channels", "cleanup",
                ]
            },
        },
    }  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        with _workspace() as folder:
            source = _save(inputs["audio"], folder, "input.media")
            media = probe(source, folder)
            if operation == "join":
                return self._join(inputs, folder, source, media)
            fmt = _format_for(media, inputs.get("format"))
            extras: dict[str, Any] = {}
            if operation == "normalize":
                filters, extras = self._normalize(inputs, source, folder, media)
            else:
                filters = getattr(self, f"_{operation}")(inputs, media, extras)
            target = folder / f"output.{AUDIO_FORMATS[fmt].extension}"
            arguments = [*_input(source)]
            if filters:
                arguments += ["-af", ",".join(filters)]
            if inputs.get("sample_rate"):
                arguments += ["-ar", str(_sample_rate(fmt, inputs["sample_rate"]))]
            arguments += [*_encode_audio(fmt, inputs.get("bitrate_kbps")), str(target)]
            _run(arguments, folder, timeout=_timeout(media.duration))
            if not target.stat().st_size:
                raise EngineError("The result holds no audio: the edit removed everything.")
            result = _audio_result(target, folder, fmt, operation_stem(operation))
            if operation == "normalize":
                extras.update(self._measure_output(target, folder))
            if operation == "silence":
                extras["removed_s"] = round(max(media.duration - result["duration_s"], 0), 2)
        return {**result, "original_duration_s": round(media.duration, 2), **extras}

    @staticmethod
    def _trim(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        start, stop = _cut(inputs["start_s"], inputs.get("end_s"), media)
        extras.update(start_s=round(start, 3), end_s=round(stop, 3))
        return [f"atrim=start={start:.3f}:end={stop:.3f}", "asetpts=PTS-STARTPTS"]

    @staticmethod
    def _convert(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        extras["original_format"] = _format_for(media, None)
        return []

    @staticmethod
    def _speed(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        extras["speed"] = inputs["speed"]
        if media.duration / inputs["speed"] > MAX_SECONDS:
            raise EngineError(f"The result would be longer than {MAX_SECONDS // 60} minutes.")
        return _tempo_filters(inputs["speed"])

    @staticmethod
    def _fade(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        fade_in, fade_out = inputs["fade_in_s"], inputs["fade_out_s"]
        if fade_in + fade_out > media.duration:
            raise EngineError(
                f"The fades ({fade_in + fade_out:g} s together) are longer than the audio "
                f"({media.duration:.2f} s)."
            )
        extras.update(fade_in_s=fade_in, fade_out_s=fade_out)
        filters = []
        if fade_in:
            filters.append(f"afade=t=in:st=0:d={fade_in}")
        if fade_out:
            filters.append(f"afade=t=out:st={media.duration - fade_out:.3f}:d={fade_out}")
        return filters

    @staticmethod
    def _silence(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        threshold = f"{inputs['threshold_db']}dB"
        edges = (
            f"silenceremove=start_periods=1:start_threshold={threshold}:start_silence=0.05,"
            "areverse,"
            f"silenceremove=start_periods=1:start_threshold={threshold}:start_silence=0.05,"
            "areverse"
        )
        if inputs["mode"] == "edges":
            return [edges]
        pause = inputs["max_pause_s"]
        return [
            edges,
            f"silenceremove=stop_periods=-1:stop_duration={pause}:stop_threshold={threshold}"
            f":stop_silence={pause / 2:g}",  # kept at each side of a pause it shortens
        ]

    @staticmethod
    def _volume(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        extras["gain_db"] = inputs["gain_db"]
        filters = [f"volume={inputs['gain_db']}dB"]
        if inputs["prevent_clipping"]:
            filters.append("alimiter=limit=0.97:level=disabled")
        return filters

    @staticmethod
    def _ringtone(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        start = inputs["start_s"]
        start, stop = _cut(start, start + inputs["length_s"], media)
        fade = min(1.0, (stop - start) / 4)
        extras.update(start_s=round(start, 3), end_s=round(stop, 3))
        return [
            f"atrim=start={start:.3f}:end={stop:.3f}",
            "asetpts=PTS-STARTPTS",
            f"afade=t=in:st=0:d={fade:.3f}",
            f"afade=t=out:st={stop - start - 2 * fade:.3f}:d={2 * fade:.3f}",
        ]

    @staticmethod
    def _channels(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        layout = inputs["channels"]
        if layout in ("left", "right") and (media.channels or 1) < 2:
            raise EngineError(f"The audio is mono: it has no {layout} channel to keep.")
        extras.update(channels=1 if layout != "stereo" else 2, original_channels=media.channels)
        if layout == "mono" and (media.channels or 1) < 2:
            return ["aformat=channel_layouts=mono"]
        return [_CHANNEL_FILTERS[layout]]

    @staticmethod
    def _cleanup(inputs: dict[str, Any], media: Media, extras: dict[str, Any]) -> list[str]:
        extras["strength"] = inputs["strength"]
        return [_CLEANUP[inputs["strength"]]]

    @staticmethod
    def _normalize(
        inputs: dict[str, Any], source: Path, folder: Path, media: Media
    ) -> tuple[list[str], dict[str, Any]]:
        """Two-pass EBU R128 ``loudnorm``: measure, then correct linearly to the target."""
        target, peak = inputs["target_lufs"], inputs["true_peak_db"]
        settings = f"I={target}:TP={peak}:LRA=11"
        log = _run(
            [*_input(source), "-af", f"loudnorm={settings}:print_format=json", "-f", "null", "-"],
            folder,
            timeout=_timeout(MAX_SECONDS, 0.2),
            loglevel="info",
        )
        measured = _loudnorm_json(log)
        if float(measured["input_i"]) == float("-inf"):
            raise EngineError("The audio is silent: there is no loudness to normalize.")
        correction = (
            f"loudnorm={settings}:measured_I={measured['input_i']}"
            f":measured_TP={measured['input_tp']}:measured_LRA={measured['input_lra']}"
            f":measured_thresh={measured['input_thresh']}:offset={measured['target_offset']}"
            ":linear=true"
        )
        extras = {
            "target_lufs": target,
            "input_lufs": round(float(measured["input_i"]), 1),
            "input_true_peak_db": round(float(measured["input_tp"]), 1),
            "input_loudness_range_lu": round(float(measured["input_lra"]), 1),
        }
        # loudnorm works at 192 kHz; bring it back to the input's rate.
        return [correction, f"aresample={media.sample_rate or 48000}"], extras

    @staticmethod
    def _measure_output(target: Path, folder: Path) -> dict[str, Any]:
        log = _run(
            [*_input(target), "-af", "loudnorm=print_format=json", "-f", "null", "-"],
            folder,
            timeout=_timeout(MAX_SECONDS, 0.2),
            loglevel="info",
        )
        measured = _loudnorm_json(log)
        return {
            "output_lufs": round(float(measured["input_i"]), 1),
            "output_true_peak_db": round(float(measured["input_tp"]), 1),
        }

    @staticmethod
    def _join(inputs: dict[str, Any], folder: Path, first: Path, media: Media) -> dict[str, Any]:
        clips = [(first, media)]
        for index in range(2, MAX_CLIPS + 1):
            blob = inputs.get(f"audio_{index}")
            if blob is not None:
                path = _save(blob, folder, f"input{index}.media")
                clips.append((path, probe(path, folder)))
        if len(clips) < 2:
            raise EngineError("Send at least two clips to join (audio and audio_2).")
        total = sum(clip.duration for _, clip in clips)
        if total > MAX_SECONDS:
            raise EngineError(f"The clips together are longer than {MAX_SECONDS // 60} minutes.")
        crossfade = inputs["crossfade_s"]
        if crossfade and min(clip.duration for _, clip in clips) <= crossfade:
            raise EngineError("Every clip must be longer than the crossfade.")
        arguments: list[str] = []
        chains = []
        for index, (path, _) in enumerate(clips):
            arguments += _input(path)
            chains.append(
                f"[{index}:a]aformat=sample_fmts=fltp:sample_rates=44100:channel_layouts=stereo"
                f"[c{index}]"
            )
        if crossfade:
            joined = "c0"
            for index in range(1, len(clips)):
                chains.append(f"[{joined}][c{index}]acrossfade=d={crossfade}[x{index}]")
                joined = f"x{index}"
            graph = ";".join(chains)
            label = f"[{joined}]"
        else:
            streams = "".join(f"[c{index}]" for index in range(len(clips)))
            graph = ";".join([*chains, f"{streams}concat=n={len(clips)}:v=0:a=1[joined]"])
            label = "[joined]"
        fmt = inputs.get("format") or _format_for(media, None)
        target = folder / f"output.{AUDIO_FORMATS[fmt].extension}"
        arguments += ["-filter_complex", graph, "-map", label]
        arguments += [*_encode_audio(fmt, inputs.get("bitrate_kbps")), str(target)]
        _run(arguments, folder, timeout=_timeout(total))
        result = _audio_result(target, folder, fmt, "joined")
        return {
            **result,
            "original_duration_s": round(total, 2),
            "clips": len(clips),
            "crossfade_s": crossfade,
        }


def operation_stem(operation: str) -> str:
    """The file name (without extension) of an edit's result."""
    return {"trim": "trimmed", "convert": "converted", "normalize": "normalized"}.get(
        operation, operation
    )


def _loudnorm_json(log: str) -> dict[str, str]:
    found = _LOUDNESS_JSON_RE.findall(log)
    if not found:
        raise EngineError("ffmpeg could not measure the loudness of this audio.")
    return json.loads(found[-1])


# --- audio.inspect ------------------------------------------------------------------------

_HEX_COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")


class AudioInspectEngine(Engine):
    """Facts about a recording (``operation: info``) or its waveform (``operation: waveform``).

    info output: ``duration_s``, ``container``, ``codec``, ``sample_rate``, ``channels``,
    ``channel_layout``, ``bitrate_kbps``, ``bytes``, ``peak_db``, ``rms_db`` and
    ``loudness_lufs`` (EBU R128 integrated; null for silence). waveform inputs: ``width``,
    ``height``, ``color`` and ``background`` (#rrggbb or "transparent"); output: ``image``
    (PNG), ``width``, ``height``, ``duration_s``.
    """

    name = "audio.inspect"
    requires = ("imageio_ffmpeg",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {"operation": {"enum": ["info", "waveform"]}},
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        with _workspace() as folder:
            source = _save(inputs["audio"], folder, "input.media")
            media = probe(source, folder)
            if params["operation"] == "waveform":
                return self._waveform(inputs, source, folder, media)
            return self._info(inputs["audio"], source, folder, media)

    @staticmethod
    def _info(blob: Blob, source: Path, folder: Path, media: Media) -> dict[str, Any]:
        log = _run(
            [*_input(source), "-map", "0:a:0", "-af", "volumedetect,ebur128=framelog=quiet",
             "-f", "null", "-"],
            folder,
            timeout=_timeout(media.duration, 0.2),
            loglevel="info",
        )  # fmt: skip
        peak = re.search(r"max_volume: (-?[\d.]+|-inf) dB", log)
        mean = re.search(r"mean_volume: (-?[\d.]+|-inf) dB", log)
        loudness = re.search(r"I:\s+(-?[\d.]+|-inf) LUFS", log)
        return {
            "duration_s": round(media.duration, 2),
            "container": media.container,
            "codec": media.audio_codec,
            "sample_rate": media.sample_rate,
            "channels": media.channels,
            "channel_layout": media.channel_layout,
            "bitrate_kbps": media.bitrate_kbps,
            "bytes": len(blob.data),
            "peak_db": _decibels(peak),
            "rms_db": _decibels(mean),
            "loudness_lufs": _decibels(loudness, floor=-70),
            "has_video": media.video_codec is not None,
        }

    @staticmethod
    def _waveform(
        inputs: dict[str, Any], source: Path, folder: Path, media: Media
    ) -> dict[str, Any]:
        width, height = inputs["width"], inputs["height"]
        color, background = inputs["color"], inputs["background"]
        for value in (color, background):
            if value != "transparent" and not _HEX_COLOR_RE.match(value):
                raise EngineError(f"Colors are written #rrggbb; {value!r} is not.")
        if color == "transparent":
            raise EngineError("The waveform needs a color it can be seen in.")
        waves = (
            f"[0:a]aformat=channel_layouts=mono,showwavespic=s={width}x{height}"
            f":colors=0x{color[1:]}:scale=sqrt"
        )
        if background == "transparent":
            graph = f"{waves}[out]"
        else:
            graph = (
                f"{waves}[w];color=c=0x{background[1:]}:s={width}x{height}[b];"
                "[b][w]overlay=format=auto:shortest=1[out]"
            )
        target = folder / "waveform.png"
        _run(
            [*_input(source), "-filter_complex", graph, "-map", "[out]", "-frames:v", "1",
             str(target)],
            folder,
            timeout=_timeout(media.duration, 0.2),
        )  # fmt: skip
        return {
            "image": Blob(target.read_bytes(), "image/png", "waveform.png"),
            "width": width,
            "height": height,
            "duration_s": round(media.duration, 2),
        }


def _decibels(match: re.Match[str] | None, floor: float = -90) -> float | None:
    """A level ffmpeg printed; None at its floor (-90 dB for silence, -70 LUFS for loudness)."""
    if match is None or match.group(1) == "-inf":
        return None
    value = float(match.group(1))
    return None if value <= floor else value


# --- video.edit ---------------------------------------------------------------------------

# CRF values of libx264 for each quality setting (lower is better and larger).
VIDEO_QUALITY = {"high": 20, "balanced": 24, "small": 28, "smallest": 32}
_TRANSFORMS = {
    "rotate_90": "transpose=clock",
    "rotate_180": "hflip,vflip",
    "rotate_270": "transpose=cclock",
    "flip_horizontal": "hflip",
    "flip_vertical": "vflip",
}
_SUBTITLE_SIZES = {"small": 16, "medium": 22, "large": 30}
_SRT_TIME_RE = re.compile(r"\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}\s*-->\s*\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}")
MAX_GIF_SECONDS = 20


def _even(filters: list[str]) -> list[str]:
    """H.264 in yuv420p needs even sides."""
    return [*filters, "scale=trunc(iw/2)*2:trunc(ih/2)*2", "format=yuv420p"]


def _encode_video(quality: str = "balanced", audio: bool = True) -> list[str]:
    arguments = ["-c:v", "libx264", "-preset", "veryfast", "-crf", str(VIDEO_QUALITY[quality])]
    arguments += ["-c:a", "aac", "-b:a", "128k"] if audio else ["-an"]
    return [*arguments, "-map_metadata", "-1", "-movflags", "+faststart", "-f", "mp4"]


class VideoEditEngine(Engine):
    """Video in; a video (MP4, H.264 and AAC), a GIF or the audio track out.

    Params: ``operation`` (trim, gif, mute, extract_audio, compress, speed, transform,
    subtitles). Inputs: ``video`` (Blob) and the operation's settings (see each tool).
    Output: ``video`` (or ``image`` for a GIF, ``audio`` for the audio track), its
    ``duration_s``, ``width`` and ``height`` (not for audio), ``bytes`` and
    ``original_bytes``.
    """

    name = "video.edit"
    requires = ("imageio_ffmpeg",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {
            "operation": {
                "enum": [
                    "trim", "gif", "mute", "extract_audio", "compress", "speed", "transform",
                    "subtitles",
                ]
            }
        },
    }  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        with _workspace() as folder:
            source = _save(inputs["video"], folder, "input.media")
            media = probe(source, folder, need="video" if operation != "extract_audio" else "audio")
            if media.width and media.height and max(media.width, media.height) > MAX_VIDEO_SIDE:
                raise EngineError(f"The video is larger than {MAX_VIDEO_SIDE} pixels a side.")
            output = getattr(self, f"_{operation}")(inputs, source, folder, media)
        return {**output, "original_bytes": len(inputs["video"].data)}

    @staticmethod
    def _video_result(path: Path, folder: Path, stem: str) -> dict[str, Any]:
        media = probe(path, folder, need="video")
        data = path.read_bytes()
        return {
            "video": Blob(data, "video/mp4", f"{stem}.mp4"),
            "duration_s": round(media.duration, 2),
            "width": media.width,
            "height": media.height,
            "has_audio": media.audio_codec is not None,
            "bytes": len(data),
        }

    def _encode(
        self,
        source: Path,
        folder: Path,
        media: Media,
        *,
        stem: str,
        video_filters: list[str],
        audio_filters: list[str] | None = None,
        before: list[str] | None = None,
        quality: str = "balanced",
        length: float | None = None,
    ) -> dict[str, Any]:
        target = folder / "output.mp4"
        arguments = [*(before or []), *_input(source), "-map", "0:v:0", "-map", "0:a:0?"]
        arguments += ["-vf", ",".join(_even(video_filters))]
        if audio_filters:
            arguments += ["-af", ",".join(audio_filters)]
        arguments += [*_encode_video(quality), str(target)]
        seconds = media.duration if length is None else length
        _run(arguments, folder, timeout=_timeout(seconds, 4 + (media.height or 720) / 180))
        return self._video_result(target, folder, stem)

    def _trim(self, inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        start, stop = _cut(inputs["start_s"], inputs.get("end_s"), media)
        output = self._encode(
            source, folder, media, stem="trimmed", video_filters=[],
            before=["-ss", f"{start:.3f}", "-to", f"{stop:.3f}"], length=stop - start,
        )  # fmt: skip
        return {**output, "start_s": round(start, 3), "end_s": round(stop, 3)}

    def _compress(self, inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        height = inputs["max_height"]
        filters = [f"scale=-2:'min({height},ih)'"] if height else []
        output = self._encode(
            source, folder, media, stem="compressed", video_filters=filters,
            quality=inputs["quality"],
        )  # fmt: skip
        return {**output, "quality": inputs["quality"]}

    def _speed(self, inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        speed = inputs["speed"]
        if media.duration / speed > MAX_SECONDS:
            raise EngineError(f"The result would be longer than {MAX_SECONDS // 60} minutes.")
        # Keep the frame rate: sped-up frames are dropped, slowed-down ones repeated.
        retime = [f"setpts=PTS/{speed}", f"fps={media.fps or 30:g}"]
        output = self._encode(
            source, folder, media, stem="speed", video_filters=retime,
            audio_filters=_tempo_filters(speed), length=media.duration / speed,
        )  # fmt: skip
        return {**output, "speed": speed}

    def _transform(self, inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        output = self._encode(
            source, folder, media, stem="transformed",
            video_filters=[_TRANSFORMS[inputs["transform"]]], quality="high",
        )  # fmt: skip
        return {**output, "transform": inputs["transform"]}

    def _subtitles(self, inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        text = inputs["subtitles"].replace("\r\n", "\n").strip()
        cues = len(_SRT_TIME_RE.findall(text))
        if not cues:
            raise EngineError(
                "The subtitles have no cues: write SubRip (SRT) or WebVTT, e.g. "
                "'1\\n00:00:01,000 --> 00:00:03,000\\nHello'."
            )
        (folder / "subtitles.srt").write_text(text + "\n", encoding="utf-8")
        size = _SUBTITLE_SIZES[inputs["font_size"]]
        style = f"FontName=DejaVu Sans,FontSize={size},Outline=2,Shadow=0,MarginV=24"
        fonts = next((d for d in _FONT_DIRECTORIES if Path(d).is_dir()), None)
        burn = f"subtitles=filename=subtitles.srt:force_style='{style}'"
        if fonts:
            burn += f":fontsdir={fonts}"
        output = self._encode(source, folder, media, stem="subtitled", video_filters=[burn])
        return {**output, "cues": cues}

    @staticmethod
    def _mute(inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        target = folder / "output.mp4"
        copy = [*_input(source), "-map", "0:v:0", "-an", "-c:v", "copy", "-map_metadata", "-1"]
        _run([*copy, "-movflags", "+faststart", "-f", "mp4", str(target)], folder, timeout=120)
        return VideoEditEngine._video_result(target, folder, "muted")

    @staticmethod
    def _extract_audio(inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        fmt = inputs["format"]
        target = folder / f"output.{AUDIO_FORMATS[fmt].extension}"
        arguments = [*_input(source), "-map", "0:a:0", *_encode_audio(fmt, inputs["bitrate_kbps"])]
        _run([*arguments, str(target)], folder, timeout=_timeout(media.duration, 0.5))
        return _audio_result(target, folder, fmt, "audio")

    @staticmethod
    def _gif(inputs: dict[str, Any], source: Path, folder: Path, media: Media) -> dict:
        start = inputs["start_s"]
        length = inputs["duration_s"]
        start, stop = _cut(start, start + length, media)
        fps, width = inputs["fps"], inputs["width"]
        graph = (
            f"fps={fps},scale='min({width},iw)':-1:flags=lanczos,split[a][b];"
            "[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=4"
        )
        target = folder / "output.gif"
        arguments = ["-ss", f"{start:.3f}", "-to", f"{stop:.3f}", *_input(source), "-an"]
        arguments += ["-filter_complex", graph, "-loop", "0", "-f", "gif", str(target)]
        _run(arguments, folder, timeout=_timeout(stop - start, 10))
        data = target.read_bytes()
        from PIL import Image

        with Image.open(io.BytesIO(data)) as gif:
            size, frames = gif.size, gif.n_frames
        return {
            "image": Blob(data, "image/gif", "clip.gif"),
            "width": size[0],
            "height": size[1],
            "frames": frames,
            "duration_s": round(stop - start, 2),
            "bytes": len(data),
        }


# --- video.inspect ------------------------------------------------------------------------

MAX_SHEET_FRAMES = 36


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class VideoInspectEngine(Engine):
    """Facts about a video (``info``), one frame as a PNG (``frame``) or a contact sheet of
    evenly spaced frames with their times (``contact_sheet``)."""

    name = "video.inspect"
    requires = ("imageio_ffmpeg", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {"operation": {"enum": ["info", "frame", "contact_sheet"]}},
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        with _workspace() as folder:
            source = _save(inputs["video"], folder, "input.media")
            media = probe(source, folder, need="video")
            operation = params["operation"]
            if operation == "info":
                return self._info(inputs["video"], media)
            if operation == "frame":
                return self._frame(inputs, source, folder, media)
            return self._sheet(inputs, source, folder, media)

    @staticmethod
    def _info(blob: Blob, media: Media) -> dict[str, Any]:
        return {
            "duration_s": round(media.duration, 2),
            "container": media.container,
            "width": media.width,
            "height": media.height,
            "fps": round(media.fps, 3) if media.fps else None,
            "video_codec": media.video_codec,
            "audio_codec": media.audio_codec,
            "sample_rate": media.sample_rate,
            "channels": media.channels,
            "bitrate_kbps": media.bitrate_kbps,
            "rotation": media.rotation,
            "bytes": len(blob.data),
        }

    @staticmethod
    def _grab(
        source: Path, folder: Path, media: Media, at: float, name: str, width: int | None
    ) -> Path:
        target = folder / name
        # A seek past the last frame's start finds nothing: hold at the last frame.
        at = max(0.0, min(at, media.duration - 1 / (media.fps or 25)))
        filters = f"scale='min({width},iw)':-2" if width else "null"
        _run(
            ["-ss", f"{at:.3f}", *_input(source), "-map", "0:v:0", "-frames:v", "1",
             "-vf", filters, str(target)],
            folder,
            timeout=120,
        )  # fmt: skip
        if not target.is_file():
            raise EngineError(f"The video has no frame at {at:g} s.")
        return target

    def _frame(
        self, inputs: dict[str, Any], source: Path, folder: Path, media: Media
    ) -> dict[str, Any]:
        at = inputs["time_s"]
        if at >= media.duration:
            raise EngineError(
                f"The time ({at:g} s) is past the end of the video ({media.duration:.2f} s)."
            )
        path = self._grab(source, folder, media, at, "frame.png", None)
        from PIL import Image

        with Image.open(path) as image:
            width, height = image.size
        return {
            "image": Blob(path.read_bytes(), "image/png", "frame.png"),
            "width": width,
            "height": height,
            "time_s": at,
        }

    def _sheet(
        self, inputs: dict[str, Any], source: Path, folder: Path, media: Media
    ) -> dict[str, Any]:
        from PIL import Image, ImageDraw

        from engines.video import _font

        columns, rows = inputs["columns"], inputs["rows"]
        count = columns * rows
        if count > MAX_SHEET_FRAMES:
            raise EngineError(f"A contact sheet holds at most {MAX_SHEET_FRAMES} frames.")
        times = [media.duration * (index + 0.5) / count for index in range(count)]
        tiles = []
        for index, at in enumerate(times):
            name = f"tile{index:02d}.png"
            path = self._grab(source, folder, media, at, name, inputs["tile_width"])
            with Image.open(path) as tile:
                tiles.append(tile.convert("RGB"))
        width, height = tiles[0].size
        gap = 6
        sheet = Image.new(
            "RGB", (columns * (width + gap) + gap, rows * (height + gap) + gap), (24, 24, 28)
        )
        draw = ImageDraw.Draw(sheet)
        font = _font(max(10, width // 14))
        for index, (tile, at) in enumerate(zip(tiles, times, strict=True)):
            x = gap + (index % columns) * (width + gap)
            y = gap + (index // columns) * (height + gap)
            sheet.paste(tile.resize((width, height)), (x, y))
            label = _clock(at)
            box = draw.textbbox((0, 0), label, font=font)
            draw.rectangle((x, y, x + box[2] + 8, y + box[3] + 6), fill=(0, 0, 0))
            draw.text((x + 4, y + 2), label, font=font, fill="white")
        target = folder / "sheet.png"
        sheet.save(target, optimize=True)
        return {
            "image": Blob(target.read_bytes(), "image/png", "contact-sheet.png"),
            "width": sheet.width,
            "height": sheet.height,
            "frames": count,
            "times_s": [round(at, 2) for at in times],
            "duration_s": round(media.duration, 2),
        }


ENGINES = (AudioEditEngine(), AudioInspectEngine(), VideoEditEngine(), VideoInspectEngine())
