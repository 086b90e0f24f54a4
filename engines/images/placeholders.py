"""Pictures drawn from nothing for images.compose: size placeholders and colour swatches."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.base import EngineError, load_once
from engines.images._helpers import (
    _color,
    _font,
    _hex,
)

if TYPE_CHECKING:
    from PIL import Image

# Debian's fonts-noto-color-emoji: colour bitmaps (CBDT) at one size, drawn there and scaled.
_EMOJI_FONT_FILE = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
_EMOJI_SIZE = 109
# A character whose drawing is the font's own "missing glyph" is one the font lacks: a
# private-use character no font here has shows what that drawing is.
_MISSING = "\U0010fffd"
# What asks for a picture rather than a letter: an emoji-presentation character or VS16.
_EMOJI_PRESENTATION = r"\p{Emoji_Presentation}|\ufe0f"


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

    width, height = _size(inputs["size"])
    background = _color(inputs.get("background", "#cccccc"), "background colour")
    canvas = PILImage.new("RGB", (width, height), background[:3])
    label = inputs.get("label")
    # One line: a newline or a tab would be drawn as a missing glyph, or not at all.
    label = f"{width}×{height}" if label is None else " ".join(label.split())
    if label:
        runs = _label_runs(label)
        # As large as fits: 80% of the width, a third of the height.
        fitting = 0.8 * width * 100 / max(_runs_length(runs, 100), 1)
        size = max(6, min(round(fitting), height // 3))
        colour = _color(inputs.get("text_color", "#555555"), "text colour")
        _draw_runs(canvas, runs, size, colour[:3])
    return canvas


class _Glyphs:
    """Which characters a font has. FreeType draws a character the font lacks as the font's
    missing glyph (DejaVu's is an empty box): a character drawn exactly like ``_MISSING`` is
    missing. Drawn one character at a time, unshaped, so that the comparison holds."""

    def __init__(self, font: Any) -> None:
        from PIL import ImageFont

        self._font = font.font_variant(layout_engine=ImageFont.Layout.BASIC)
        self._missing = self._drawing(_MISSING)
        self._has: dict[str, bool] = {}

    def _drawing(self, char: str) -> tuple[float, tuple[int, int], bytes]:
        from PIL import Image as PILImage
        from PIL import ImageDraw

        left, top, right, bottom = self._font.getbbox(char)
        picture = PILImage.new("RGBA", (max(right - left, 1), max(bottom - top, 1)))
        ImageDraw.Draw(picture).text((-left, -top), char, font=self._font, embedded_color=True)
        return self._font.getlength(char), picture.size, picture.tobytes()

    def has(self, cluster: str) -> bool:
        """Whether the font draws every character of ``cluster`` but the invisible ones
        (joiners, variation selectors, tags), which shaping hides."""
        for char in cluster:
            if unicodedata.category(char) == "Cf" or "\ufe00" <= char <= "\ufe0f":
                continue
            if char not in self._has:
                self._has[char] = self._drawing(char) != self._missing
            if not self._has[char]:
                return False
        return True


@load_once
def _label_glyphs() -> _Glyphs:
    return _Glyphs(_font(40, bold=True))


@load_once
def _emoji_font(path: str) -> Any:
    """The colour emoji font at its one size, or None when this machine has none."""
    from PIL import ImageFont

    return ImageFont.truetype(path, _EMOJI_SIZE) if Path(path).is_file() else None


@load_once
def _emoji_glyphs(path: str) -> _Glyphs:
    return _Glyphs(_emoji_font(path))


def _label_runs(label: str) -> list[tuple[bool, str]]:
    """The label cut into runs of letters and of emoji, ``(is_emoji, text)``; refused when
    a character would be drawn as an empty box."""
    import regex

    emoji_font = _emoji_font(_EMOJI_FONT_FILE)
    runs: list[tuple[bool, str]] = []
    no_emoji_font, no_glyph = [], []
    for cluster in regex.findall(r"\X", label):
        wants_picture = regex.search(_EMOJI_PRESENTATION, cluster) is not None
        in_label_font = _label_glyphs().has(cluster)
        if emoji_font is not None and (wants_picture or not in_label_font):
            is_emoji = _emoji_glyphs(_EMOJI_FONT_FILE).has(cluster)
        else:
            is_emoji = False
        if not is_emoji and not in_label_font:
            is_pictograph = regex.search(r"\p{Extended_Pictographic}", cluster) is not None
            (no_emoji_font if wants_picture or is_pictograph else no_glyph).append(cluster)
        elif runs and runs[-1][0] == is_emoji:
            runs[-1] = (is_emoji, runs[-1][1] + cluster)
        else:
            runs.append((is_emoji, cluster))
    if no_emoji_font and emoji_font is None:
        raise EngineError(
            f"Emoji cannot be drawn on this deployment (it has no colour emoji font): "
            f"leave {' '.join(dict.fromkeys(no_emoji_font))} out of the label."
        )
    if no_emoji_font or no_glyph:
        missing = ", ".join(
            f"{cluster} ({' '.join(f'U+{ord(char):04X}' for char in cluster)})"
            for cluster in dict.fromkeys(no_emoji_font + no_glyph)
        )
        raise EngineError(f"The label font has no glyph for {missing}: leave it out.")
    return runs


def _runs_length(runs: list[tuple[bool, str]], size: int) -> float:
    font = _font(size, bold=True)
    emoji_font = _emoji_font(_EMOJI_FONT_FILE)
    return sum(
        emoji_font.getlength(text) * size / _EMOJI_SIZE if is_emoji else font.getlength(text)
        for is_emoji, text in runs
    )


def _emoji_picture(text: str, size: int) -> Image.Image:
    """``text`` in colour emoji, one line as tall as the label font's at ``size``."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    font = _emoji_font(_EMOJI_FONT_FILE)
    ascent, descent = font.getmetrics()
    picture = PILImage.new("RGBA", (math.ceil(font.getlength(text)), ascent + descent))
    ImageDraw.Draw(picture).text((0, 0), text, font=font, embedded_color=True)
    scale = size / _EMOJI_SIZE
    scaled = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    return picture.resize(scaled, PILImage.Resampling.LANCZOS)


def _draw_runs(
    canvas: Image.Image, runs: list[tuple[bool, str]], size: int, colour: tuple[int, ...]
) -> None:
    """The runs side by side, centred on the canvas; emoji keep their own colours."""
    from PIL import ImageDraw

    font = _font(size, bold=True)
    draw = ImageDraw.Draw(canvas)
    x, middle = (canvas.width - _runs_length(runs, size)) / 2, canvas.height / 2
    for is_emoji, text in runs:
        if is_emoji:
            picture = _emoji_picture(text, size)
            canvas.paste(picture, (round(x), round(middle - picture.height / 2)), picture)
            x += _runs_length([(True, text)], size)
        else:
            draw.text((x, middle), text, font=font, fill=colour, anchor="lm")
            x += font.getlength(text)


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
