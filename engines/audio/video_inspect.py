"""video.inspect: facts about a video, one frame as a PNG or a contact sheet of frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines.audio._ffmpeg import (
    Media,
    _input,
    _run,
    _save,
    _workspace,
    probe,
)
from engines.base import Engine, EngineError, operations_schema
from engines.blob import Blob
from engines.images._io import image_header, open_image

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
    params_schema = operations_schema("info", "frame", "contact_sheet")

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
        frame = Blob(path.read_bytes(), "image/png", "frame.png")
        with image_header(frame) as image:
            width, height = image.size
        return {
            "image": frame,
            "width": width,
            "height": height,
            "time_s": at,
        }

    def _sheet(
        self, inputs: dict[str, Any], source: Path, folder: Path, media: Media
    ) -> dict[str, Any]:
        from PIL import Image, ImageDraw

        from engines.audio.slideshow import caption_font

        columns, rows = inputs["columns"], inputs["rows"]
        count = columns * rows
        if count > MAX_SHEET_FRAMES:
            raise EngineError(f"A contact sheet holds at most {MAX_SHEET_FRAMES} frames.")
        times = [media.duration * (index + 0.5) / count for index in range(count)]
        tiles = []
        for index, at in enumerate(times):
            name = f"tile{index:02d}.png"
            path = self._grab(source, folder, media, at, name, inputs["tile_width"])
            tiles.append(open_image(Blob(path.read_bytes(), "image/png")).convert("RGB"))
        width, height = tiles[0].size
        gap = 6
        sheet = Image.new(
            "RGB", (columns * (width + gap) + gap, rows * (height + gap) + gap), (24, 24, 28)
        )
        draw = ImageDraw.Draw(sheet)
        font = caption_font(max(10, width // 14))
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
