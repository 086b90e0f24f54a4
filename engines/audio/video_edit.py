"""video.edit: video in; a video (trim, compress, speed, subtitles...), a GIF or its sound out."""

from __future__ import annotations

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
    check_result,
    check_video_work,
    probe,
    result_limit,
)
from engines.audio._formats import (
    AUDIO_FORMATS,
    _audio_result,
    _cut,
    _encode_audio,
    _tempo_filters,
)
from engines.base import Engine, EngineError, operations_schema
from engines.blob import Blob
from engines.images._io import image_header

_FONT_DIRECTORIES = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts")


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
    arguments += ["-map_metadata", "-1", "-movflags", "+faststart", *result_limit()]
    return [*arguments, "-f", "mp4"]


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
    params_schema = operations_schema(
        "trim", "gif", "mute", "extract_audio", "compress", "speed", "transform", "subtitles",
    )  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        with _workspace() as folder:
            source = _save(inputs["video"], folder, "input.media")
            # probe refuses frames past MAX_VIDEO_PIXELS (or sound past MAX_PCM_BYTES).
            media = probe(source, folder, need="video" if operation != "extract_audio" else "audio")
            output = getattr(self, f"_{operation}")(inputs, source, folder, media)
        return {**output, "original_bytes": len(inputs["video"].data)}

    @staticmethod
    def _video_result(path: Path, folder: Path, stem: str) -> dict[str, Any]:
        check_result(path)
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
        seconds = media.duration if length is None else length
        check_video_work(media, seconds)
        target = folder / "output.mp4"
        opened = _input(source, cut=not before)  # a trim's -to bounds it instead
        arguments = [*(before or []), *opened, "-map", "0:v:0", "-map", "0:a:0?"]
        arguments += ["-vf", ",".join(_even(video_filters))]
        if audio_filters:
            arguments += ["-af", ",".join(audio_filters)]
        arguments += [*_encode_video(quality), str(target)]
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
        arguments = ["-ss", f"{start:.3f}", "-to", f"{stop:.3f}", *_input(source, cut=False)]
        arguments.append("-an")
        arguments += ["-filter_complex", graph, "-loop", "0", "-f", "gif", str(target)]
        _run(arguments, folder, timeout=_timeout(stop - start, 10))
        clip = Blob(target.read_bytes(), "image/gif", "clip.gif")
        with image_header(clip, "GIF") as gif:
            size, frames = gif.size, gif.n_frames
        return {
            "image": clip,
            "width": size[0],
            "height": size[1],
            "frames": frames,
            "duration_s": round(stop - start, 2),
            "bytes": len(clip.data),
        }
