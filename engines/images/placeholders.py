"""Pictures drawn from nothing for images.compose: size placeholders and colour swatches."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from engines.base import EngineError
from engines.images._helpers import (
    _color,
    _font,
    _hex,
)

if TYPE_CHECKING:
    from PIL import Image


def _size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,5})\s*[x×*]\s*(\d{1,5})\s*", text)
    if not match:
        raise EngineError(f"The size '{text}' is not like 1200x630 (width x height).")
    width, height = int(match[1]), int(match[2])
    if not 1 <= width <= 4000 or not 1 <= height <= 4000:
        raise EngineError("Placeholders are from 1x1 to 4000x4000 pixels.")
    return width, height


def _placeholder(inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage
    from PIL import ImageDraw

    width, height = _size(inputs["size"])
    background = _color(inputs.get("background", "#cccccc"), "background colour")
    canvas = PILImage.new("RGB", (width, height), background[:3])
    label = inputs.get("label")
    label = f"{width}×{height}" if label is None else label.strip()
    if label:
        # As large as fits: 80% of the width, a third of the height.
        fitting = 0.8 * width * 100 / max(_font(100, bold=True).getlength(label), 1)
        font = _font(max(6, min(round(fitting), height // 3)), bold=True)
        colour = _color(inputs.get("text_color", "#555555"), "text colour")
        draw = ImageDraw.Draw(canvas)
        draw.text((width / 2, height / 2), label, font=font, fill=colour[:3], anchor="mm")
    return canvas


def _readable_on(rgb: tuple[int, ...]) -> tuple[int, int, int]:
    """Black or white, whichever contrasts more with ``rgb`` (WCAG relative luminance)."""
    return (0, 0, 0) if _relative_luminance(rgb) > 0.179 else (255, 255, 255)


def _relative_luminance(rgb: tuple[int, ...]) -> float:
    def linear(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(v) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _swatch(inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage
    from PIL import ImageDraw

    colours = [_color(value, "colour")[:3] for value in inputs["colors"]]
    side = inputs.get("swatch_size", 160)
    columns = len(colours) if inputs.get("layout", "row") == "row" else min(len(colours), 4)
    rows = math.ceil(len(colours) / columns)
    canvas = PILImage.new("RGB", (columns * side, rows * side), "white")
    draw = ImageDraw.Draw(canvas)
    font = _font(max(8, side // 8))
    for index, rgb in enumerate(colours):
        row, column = divmod(index, columns)
        x, y = column * side, row * side
        draw.rectangle((x, y, x + side - 1, y + side - 1), fill=rgb)
        if inputs.get("labels", True):
            draw.text(
                (x + side / 2, y + side - side // 10),
                _hex(rgb).upper(),
                font=font,
                fill=_readable_on(rgb),
                anchor="md",
            )
    return canvas
