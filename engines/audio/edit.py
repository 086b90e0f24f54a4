"""audio.edit: audio in, audio out (trim, convert, normalize, speed, fades, join, cleanup...)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engines.audio._ffmpeg import (
    MAX_SECONDS,
    Media,
    _input,
    _run,
    _save,
    _timeout,
    _workspace,
    probe,
)
from engines.audio._formats import (
    AUDIO_FORMATS,
    _audio_result,
    _cut,
    _encode_audio,
    _format_for,
    _sample_rate,
    _tempo_filters,
)
from engines.base import Engine, EngineError, operations_schema

MAX_CLIPS = 8


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
    params_schema = operations_schema(
        "trim", "convert", "normalize", "speed", "fade", "join", "silence", "volume",
        "ringtone", "channels", "cleanup",
    )  # fmt: skip

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
