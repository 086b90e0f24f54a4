"""audio.inspect: facts about a recording (levels, loudness) or its waveform as a PNG."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engines.audio._ffmpeg import (
    Media,
    _input,
    _run,
    _save,
    _timeout,
    _workspace,
    probe,
)
from engines.base import Engine, EngineError, operations_schema
from engines.blob import Blob

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
    params_schema = operations_schema("info", "waveform")

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
        # showwavespic keeps every sample until the end: at 16 kHz half an hour is 115 MB in
        # ffmpeg (at 48 kHz it was 345 MB; a picture a few thousand pixels wide shows no more).
        waves = (
            f"[0:a]aformat=channel_layouts=mono,aresample=16000,showwavespic=s={width}x{height}"
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
