"""Narrated slideshow videos: one still per scene (a picture or a title card), H.264 + AAC in MP4.

Frames are drawn with Pillow and encoded by the static ffmpeg inside ``imageio-ffmpeg`` (it
has libx264 and aac; there is no ffprobe, so the narration's length is read from a WAV that
ffmpeg decodes it to).
"""

from __future__ import annotations

import subprocess
import tempfile
import textwrap
import wave
from pathlib import Path
from typing import Any

from engines import _text
from engines.base import Engine, EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.images._io import open_image

ASPECT_RATIOS = {"16:9": (16, 9), "9:16": (9, 16), "1:1": (1, 1)}
RESOLUTIONS = {"240p": 240, "360p": 360, "480p": 480, "720p": 720, "1080p": 1080}
MAX_SCENES = 100
MAX_SECONDS = 30 * 60
# Without narration a scene lasts as long as it takes to read its text, within these bounds.
_READING_WORDS_PER_SECOND = 2.5
_SILENT_SCENE_SECONDS = (2.0, 15.0)
_AUDIO_RATE = 44_100
# Title-card backgrounds (top and bottom of a vertical gradient), taken in turn.
_PALETTE = [
    ((24, 38, 82), (62, 95, 170)),
    ((74, 20, 60), (170, 60, 110)),
    ((12, 64, 60), (40, 150, 120)),
    ((60, 40, 10), (190, 120, 40)),
    ((30, 30, 36), (90, 90, 110)),
]
_FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
    "/usr/share/fonts/opentype/noto/NotoSans-Bold.ttf",
)


def frame_size(aspect_ratio: str, resolution: str) -> tuple[int, int]:
    """Width and height (both even, as H.264 in yuv420p needs) for a ratio and resolution."""
    across, down = ASPECT_RATIOS[aspect_ratio]
    short = RESOLUTIONS[resolution]
    long = 2 * round(short * max(across, down) / min(across, down) / 2)
    return (long, short) if across > down else (short, long) if down > across else (short, short)


def _ffmpeg() -> str:
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as error:
        raise ProviderUnavailable(f"Video rendering needs imageio-ffmpeg's ffmpeg: {error}")


def _run_ffmpeg(arguments: list[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    command = [_ffmpeg(), "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *arguments]
    try:
        return subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ProviderUnavailable("Rendering the video took too long.") from None


def caption_font(size: int) -> Any:
    from PIL import ImageFont

    for path in _FONT_FILES:
        if Path(path).is_file():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)  # Pillow's own scalable font: always there


def _wrap(draw: Any, text: str, font: Any, width: int) -> list[str]:
    """Greedy word wrap by measured width (long words are split by characters)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}".strip()
            if draw.textlength(candidate, font=font) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            while draw.textlength(word, font=font) > width and len(word) > 1:
                cut = max(1, int(len(word) * width / draw.textlength(word, font=font)))
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        if line:
            lines.append(line)
    return lines


def _title_card(text: str, size: tuple[int, int], index: int) -> Any:
    from PIL import Image, ImageDraw

    width, height = size
    top, bottom = _PALETTE[index % len(_PALETTE)]
    gradient = Image.linear_gradient("L").resize(size)
    card = Image.composite(Image.new("RGB", size, bottom), Image.new("RGB", size, top), gradient)
    draw = ImageDraw.Draw(card)
    # The largest font (down to a floor) that fits the box; past the floor, cut the text.
    box_width, box_height = int(width * 0.84), int(height * 0.8)
    font_size = max(12, min(width, height) // 9)
    while True:
        font = caption_font(font_size)
        lines = _wrap(draw, text, font, box_width)
        line_height = int(font_size * 1.25)
        if len(lines) * line_height <= box_height or font_size <= 12:
            break
        font_size = int(font_size * 0.85)
    lines = lines[: max(1, box_height // line_height)]
    y = (height - len(lines) * line_height) // 2
    for line in lines:
        x = (width - draw.textlength(line, font=font)) // 2
        draw.text((x, y), line, font=font, fill="white")
        y += line_height
    return card


def _picture_frame(picture: Any, size: tuple[int, int]) -> Any:
    """The whole picture over a blurred, darkened copy of itself that fills the frame."""
    from PIL import Image, ImageEnhance, ImageFilter, ImageOps

    if picture.mode != "RGB":
        rgba = picture.convert("RGBA")
        picture = Image.new("RGB", rgba.size, "black")
        picture.paste(rgba, mask=rgba.getchannel("A"))
    small = (max(2, size[0] // 8), max(2, size[1] // 8))
    backdrop = ImageOps.fit(picture, small).filter(ImageFilter.GaussianBlur(3)).resize(size)
    frame = ImageEnhance.Brightness(backdrop).enhance(0.55)
    front = ImageOps.contain(picture, size, Image.Resampling.LANCZOS)
    frame.paste(front, ((size[0] - front.width) // 2, (size[1] - front.height) // 2))
    return frame


def _caption(frame: Any, text: str) -> Any:
    """Up to three lines of text on a translucent band at the bottom."""
    from PIL import Image, ImageDraw

    width, height = frame.size
    font_size = max(12, min(width, height) // 20)
    font = caption_font(font_size)
    draw = ImageDraw.Draw(frame)
    lines = _wrap(draw, text, font, int(width * 0.9))
    if len(lines) > 3:
        lines = [*lines[:2], textwrap.shorten(" ".join(lines[2:]), 60, placeholder=" …")]
    line_height = int(font_size * 1.3)
    band_height = line_height * len(lines) + font_size
    overlay = Image.new("RGBA", frame.size, (0, 0, 0, 0))
    ImageDraw.Draw(overlay).rectangle((0, height - band_height, width, height), fill=(0, 0, 0, 150))
    frame = Image.alpha_composite(frame.convert("RGBA"), overlay).convert("RGB")
    draw = ImageDraw.Draw(frame)
    y = height - band_height + font_size // 2
    for line in lines:
        draw.text(
            ((width - draw.textlength(line, font=font)) // 2, y), line, font=font, fill="white"
        )
        y += line_height
    return frame


def _narration_wav(blob: Blob, folder: Path) -> tuple[Path, float]:
    """Decode the narration to PCM WAV and measure it (there is no ffprobe)."""
    if not blob.data:
        raise EngineError("The narration audio is empty.")
    source = folder / "narration.input"
    source.write_bytes(blob.data)
    target = folder / "narration.wav"
    result = _run_ffmpeg(
        ["-i", str(source), "-vn", "-ac", "2", "-ar", str(_AUDIO_RATE), "-c:a", "pcm_s16le",
         "-t", str(MAX_SECONDS + 1), str(target)],
        timeout=120,
    )  # fmt: skip
    if result.returncode != 0 or not target.is_file():
        raise EngineError("The narration is not audio in a format this tool reads.")
    with wave.open(str(target)) as audio:
        seconds = audio.getnframes() / audio.getframerate()
    if seconds <= 0:
        raise EngineError("The narration holds no audio.")
    if seconds > MAX_SECONDS:
        raise EngineError(f"The narration is longer than {MAX_SECONDS // 60} minutes.")
    return target, seconds


def scene_durations(scenes: list[dict[str, Any]], total: float | None) -> list[float]:
    """Narrated: the narration shared by each scene's word count. Silent: reading time, or
    the scene's own ``duration_s``."""
    weights = [max(len(_text.words(scene.get("text") or "")), 1) for scene in scenes]
    if total is not None:
        return [total * weight / sum(weights) for weight in weights]
    low, high = _SILENT_SCENE_SECONDS
    return [
        float(scene["duration_s"])
        if scene.get("duration_s")
        else min(max(weight / _READING_WORDS_PER_SECOND, low), high)
        for scene, weight in zip(scenes, weights, strict=True)
    ]


class VideoRenderEngine(Engine):
    """Renders scenes (a picture or a generated title card each) into an MP4, with narration.

    Input: ``scenes`` [{image: Blob or null, text, duration_s?}], ``narration`` (audio Blob or
    null), ``aspect_ratio`` ("16:9", "9:16", "1:1"; default 16:9), ``resolution`` (240p to
    1080p, the short side; default 720p). A scene without a picture shows its text on a title
    card; a scene with one shows the text as a caption unless ``captions`` is false. With
    narration the scenes share its length by word count; without, each lasts its reading time.
    Output: ``video`` (Blob, video/mp4), ``duration_s``, ``width``, ``height``, ``has_audio``
    and ``scenes`` [{start, end}].
    """

    name = "video.render"
    requires = ("imageio_ffmpeg", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "aspect_ratio": {"enum": list(ASPECT_RATIOS)},
            "resolution": {"enum": list(RESOLUTIONS)},
            "fps": {"type": "integer", "minimum": 1, "maximum": 60},
            "captions": {"type": "boolean"},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        scenes = inputs["scenes"]
        if not scenes:
            raise EngineError("A video needs at least one scene.")
        if len(scenes) > MAX_SCENES:
            raise EngineError(f"A video may have at most {MAX_SCENES} scenes.")
        aspect_ratio = inputs.get("aspect_ratio") or params.get("aspect_ratio") or "16:9"
        resolution = inputs.get("resolution") or params.get("resolution") or "720p"
        if aspect_ratio not in ASPECT_RATIOS or resolution not in RESOLUTIONS:
            raise EngineError("Unknown aspect ratio or resolution.")
        fps = params.get("fps", 24)
        captions = inputs.get("captions", params.get("captions", True))
        size = frame_size(aspect_ratio, resolution)
        with tempfile.TemporaryDirectory(prefix="video-") as temporary:
            folder = Path(temporary)
            narration = inputs.get("narration")
            audio, total = _narration_wav(narration, folder) if narration else (None, None)
            durations = scene_durations(scenes, total)
            if sum(durations) > MAX_SECONDS:
                raise EngineError(f"The video would be longer than {MAX_SECONDS // 60} minutes.")
            frames = []
            for index, scene in enumerate(scenes):
                path = folder / f"scene{index:03d}.png"
                self._frame(scene, size, index, captions).save(path, compress_level=1)
                frames.append(path)
            video = self._encode(folder, frames, durations, audio, fps)
        starts = [float(sum(durations[:i])) for i in range(len(durations))]
        return {
            "video": Blob(video, "video/mp4", "video.mp4"),
            "duration_s": round(sum(durations), 2),
            "width": size[0],
            "height": size[1],
            "has_audio": audio is not None,
            "scenes": [
                {"start": round(start, 2), "end": round(start + length, 2)}
                for start, length in zip(starts, durations, strict=True)
            ],
        }

    @staticmethod
    def _frame(scene: dict[str, Any], size: tuple[int, int], index: int, captions: bool) -> Any:
        text = " ".join((scene.get("text") or "").split())
        if scene.get("image") is None:
            return _title_card(text, size, index)
        try:
            picture = open_image(scene["image"])
        except EngineError as error:
            raise EngineError(f"Scene {index + 1}: {error.message}") from None
        frame = _picture_frame(picture, size)
        return _caption(frame, text) if captions and text else frame

    @staticmethod
    def _encode(
        folder: Path, frames: list[Path], durations: list[float], audio: Path | None, fps: int
    ) -> bytes:
        # Each still is decoded once and repeated by the loop filter (repeats share one
        # buffer); looping the image input instead decodes the PNG again for every frame.
        # Scene edges fall on whole frames counted from the start, so rounding never drifts.
        edges = [round(sum(durations[:index]) * fps) for index in range(len(durations) + 1)]
        arguments: list[str] = []
        chains = []
        for index, frame in enumerate(frames):
            repeats = max(1, edges[index + 1] - edges[index])
            arguments += ["-i", str(frame)]
            chains.append(
                f"[{index}:v]format=yuv420p,loop=loop={repeats - 1}:size=1:start=0,"
                f"setpts=N/{fps}/TB[s{index}]"
            )
        if audio is not None:
            arguments += ["-i", str(audio)]
        streams = "".join(f"[s{index}]" for index in range(len(frames)))
        graph = ";".join([*chains, f"{streams}concat=n={len(frames)}:v=1:a=0[v]"])
        arguments += ["-filter_complex", graph, "-map", "[v]"]
        if audio is not None:
            arguments += ["-map", f"{len(frames)}:a", "-c:a", "aac", "-b:a", "128k"]
        total = sum(durations)
        output = folder / "video.mp4"
        arguments += ["-c:v", "libx264", "-preset", "superfast", "-tune", "stillimage",
                      "-crf", "23", "-r", str(fps), "-movflags", "+faststart",
                      "-t", f"{total:.3f}", str(output)]  # fmt: skip
        result = _run_ffmpeg(arguments, timeout=120 + 4 * total)
        if result.returncode != 0 or not output.is_file():
            message = result.stderr.decode(errors="replace").strip()[-400:]
            raise ProviderUnavailable(f"ffmpeg failed to render the video: {message}")
        return output.read_bytes()


ENGINES = (VideoRenderEngine(),)
