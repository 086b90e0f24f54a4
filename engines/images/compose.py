"""New canvases built from pictures (images.compose): borders, collages, watermarks, memes..."""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from engines.base import ChoiceEngine, EngineError
from engines.blob import Blob
from engines.images._helpers import (
    SOCIAL_PRESETS,
    _check_side,
    _color,
    _font,
    _format,
    _hex,
    _images,
    _open,
    _output,
    _parse_ratio,
    _place,
    _rgba,
    _transparent,
)
from engines.images._io import _has_alpha, encode_image
from engines.images.placeholders import _placeholder, _swatch

if TYPE_CHECKING:
    from PIL import Image


def _border(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    width = inputs.get("border_width", 20)
    _check_side(image.width + 2 * width, image.height + 2 * width)
    colour = _color(inputs.get("color", "#ffffff"), "border colour")
    return ImageOps.expand(_rgba(image), border=width, fill=colour)


def _letterbox(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage

    ratio = _parse_ratio(inputs.get("aspect_ratio", "1:1"))
    width, height = image.size
    if Fraction(width, height) < ratio:
        width = round(height * ratio)
    else:
        height = round(width / ratio)
    _check_side(width, height)
    colour = _color(inputs.get("color", "#ffffff"), "padding colour")
    where = _place((width, height), image.size, "center", 0)
    if colour[3] == 255 and not _has_alpha(image):
        # Nothing see-through: an RGB canvas, without an RGBA copy of the picture.
        canvas = PILImage.new("RGB", (width, height), colour[:3])
        canvas.paste(image if image.mode == "RGB" else image.convert("RGB"), where)
        return canvas
    canvas = PILImage.new("RGBA", (width, height), colour)
    canvas.alpha_composite(_rgba(image), where)
    return canvas


def _fitted(image: Image.Image, size: tuple[int, int], fit: str, background: str):
    """``image`` at exactly ``size``: filled and cropped (cover) or inside a padded canvas."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    image = _rgba(image)
    if fit == "cover":
        return ImageOps.fit(image, size, PILImage.Resampling.LANCZOS)
    inner = ImageOps.contain(image, size, PILImage.Resampling.LANCZOS)
    canvas = PILImage.new("RGBA", size, _color(background, "background colour"))
    canvas.alpha_composite(inner, _place(size, inner.size, "center", 0))
    return canvas


def _social(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    size = SOCIAL_PRESETS[inputs.get("preset", "instagram-square")]
    return _fitted(image, size, inputs.get("fit", "cover"), inputs.get("background", "#ffffff"))


def _collage(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage

    others = _images(inputs)[1:]
    count = 1 + len(others)
    if count < 2:
        raise EngineError("A collage needs at least two pictures: add image_2 and more.")
    columns = min(inputs.get("columns") or math.ceil(math.sqrt(count)), count)
    rows = math.ceil(count / columns)
    cell, gap = inputs.get("cell_size", 400), inputs.get("gap", 10)
    background = inputs.get("background", "#ffffff")
    width, height = columns * cell + (columns + 1) * gap, rows * cell + (rows + 1) * gap
    _check_side(width, height)
    canvas = PILImage.new("RGBA", (width, height), _color(background, "background colour"))
    fit = inputs.get("fit", "cover")
    # Opened one at a time and shrunk to its cell: nine big photos are never held together.
    pictures = itertools.chain([image], (_open(blob, "picture") for blob in others))
    for index, picture in enumerate(pictures):
        row, column = divmod(index, columns)
        tile = _fitted(picture, (cell, cell), fit, background)
        canvas.alpha_composite(tile, (gap + column * (cell + gap), gap + row * (cell + gap)))
    return canvas


def _logo(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage
    from PIL import ImageOps

    if inputs.get("overlay") is None:
        raise EngineError("Give the logo or picture to place on the image (overlay).")
    logo = _rgba(_open(inputs["overlay"], "overlay"))
    width = max(1, round(image.width * inputs.get("scale", 0.2)))
    height = max(1, round(logo.height * width / logo.width))
    logo = ImageOps.contain(logo, (width, min(height, image.height)), PILImage.Resampling.LANCZOS)
    logo = _with_opacity(logo, inputs.get("opacity", 0.8))
    margin = round(min(image.size) * inputs.get("margin", 0.03))
    result = _rgba(image).copy()
    position = _place(result.size, logo.size, inputs.get("position", "bottom-right"), margin)
    result.alpha_composite(logo, position)
    return result


def _text_layer(text: str, font: Any, colour: tuple[int, ...], outline: bool) -> Image.Image:
    """``text`` drawn opaque on a transparent layer just big enough, with a dark outline."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    stroke = max(1, round(font.size / 18)) if outline else 0
    box = ImageDraw.Draw(PILImage.new("L", (1, 1))).multiline_textbbox(
        (0, 0), text, font=font, stroke_width=stroke, align="center"
    )
    left, top, right, bottom = (math.floor(box[0]), math.floor(box[1]), *map(math.ceil, box[2:]))
    layer = PILImage.new("RGBA", (right - left, bottom - top), (0, 0, 0, 0))
    ImageDraw.Draw(layer).multiline_text(
        (-left, -top),
        text,
        font=font,
        fill=colour,
        stroke_width=stroke,
        stroke_fill=(0, 0, 0, colour[3]),
        align="center",
    )
    return layer


def _with_opacity(layer: Image.Image, opacity: float) -> Image.Image:
    layer.putalpha(layer.getchannel("A").point(lambda a: round(a * opacity)))
    return layer


def _text_watermark(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    text = inputs.get("text", "").strip()
    if not text:
        raise EngineError("Give the watermark text.")
    size = inputs.get("font_size") or max(10, round(min(image.size) / 12))
    colour = _color(inputs.get("color", "#ffffff"), "text colour")
    layer = _text_layer(text, _font(size, bold=True), colour, inputs.get("outline", True))
    layer = _with_opacity(layer, inputs.get("opacity", 0.5))
    result = _rgba(image).copy()
    position = inputs.get("position", "bottom-right")
    if position == "tiled":
        tile = layer.rotate(30, expand=True, resample=3)
        step_x, step_y = tile.width + size * 2, tile.height + size
        for row, y in enumerate(range(-tile.height // 2, result.height, step_y)):
            for x in range(-(row % 2) * step_x // 2, result.width, step_x):
                result.alpha_composite(tile, (x, y))
        return result
    margin = round(min(image.size) * 0.03)
    result.alpha_composite(layer, _place(result.size, layer.size, position, margin))
    return result


def _wrapped(text: str, font: Any, width: int) -> str:
    """Greedy word wrap to ``width`` pixels (a word longer than a line keeps its own line)."""
    lines: list[str] = []
    for word in text.split():
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "\n".join(lines)


def _meme(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    top, bottom = inputs.get("top_text", "").strip(), inputs.get("bottom_text", "").strip()
    if not top and not bottom:
        raise EngineError("Give a top text, a bottom text or both.")
    if inputs.get("uppercase", True):
        top, bottom = top.upper(), bottom.upper()
    size = inputs.get("font_size") or max(12, round(image.width / 10))
    font = _font(size, bold=True)
    result = _rgba(image).copy()
    margin = max(4, round(image.height * 0.03))
    for text, position in ((top, "top"), (bottom, "bottom")):
        if text:
            layer = _text_layer(
                _wrapped(text, font, round(image.width * 0.92)), font, (255, 255, 255, 255), True
            )
            x, y = _place(result.size, layer.size, position, margin)
            result.paste(layer, (x, y), layer)
    return result


def _favicons(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    background = inputs.get("background")
    square = _fitted(image, (512, 512), inputs.get("fit", "contain"), background or "#0000")
    if background:
        square = _fitted(square, (512, 512), "cover", background)
        flat = square.copy()
        flat.putalpha(255)
        square = flat

    def png(size: int, name: str) -> Blob:
        from PIL import Image as PILImage

        return encode_image(
            square.resize((size, size), PILImage.Resampling.LANCZOS), "png", None, name
        )

    buffer = io.BytesIO()
    square.save(buffer, "ICO", sizes=[(16, 16), (32, 32), (48, 48)])
    return {
        "favicon_ico": Blob(buffer.getvalue(), "image/x-icon", "favicon.ico"),
        "apple_touch_icon": png(180, "apple-touch-icon"),
        "icon_192": png(192, "icon-192"),
        "icon_512": png(512, "icon-512"),
        "html": (
            '<link rel="icon" href="/favicon.ico" sizes="48x48">\n'
            '<link rel="apple-touch-icon" href="/apple-touch-icon.png">\n'
            '<link rel="manifest" href="/site.webmanifest">'
        ),
        "manifest_icons": [
            {"src": f"/icon-{size}.png", "sizes": f"{size}x{size}", "type": "image/png"}
            for size in (192, 512)
        ],
    }


_COMPOSERS: dict[str, tuple[Callable[[Image.Image, dict[str, Any]], Any], str]] = {
    "border": (_border, "bordered"),
    "letterbox": (_letterbox, "letterboxed"),
    "social": (_social, "social"),
    "collage": (_collage, "collage"),
    "logo": (_logo, "watermarked"),
    "text_watermark": (_text_watermark, "watermarked"),
    "meme": (_meme, "meme"),
    "favicons": (_favicons, "favicon"),
}
_DRAWERS: dict[str, tuple[Callable[[dict[str, Any]], Image.Image], str]] = {
    "placeholder": (_placeholder, "placeholder"),
    "swatch": (_swatch, "palette"),
}


class ImageComposeEngine(ChoiceEngine):
    """Builds a new canvas, from the input picture(s) or from nothing; ``operation`` picks it.

    From ``image``: border (``border_width``, ``color``), letterbox (``aspect_ratio``,
    ``color``), social (``preset``, ``fit``, ``background``), collage (``image_2`` ...
    ``image_9``, ``columns``, ``cell_size``, ``gap``, ``fit``, ``background``), logo
    (``overlay``, ``position``, ``scale``, ``opacity``, ``margin``), text_watermark (``text``,
    ``position`` or tiled, ``font_size``, ``color``, ``opacity``, ``outline``), meme
    (``top_text``, ``bottom_text``, ``font_size``, ``uppercase``) and favicons (``fit``,
    ``background``; answers an ICO and three PNGs instead of one image). From nothing:
    placeholder (``size`` like 1200x630, ``background``, ``text_color``, ``label``) and swatch
    (``colors``, ``swatch_size``, ``layout``, ``labels``). ``format`` as in images.filter.
    """

    name = "images.compose"
    requires = ("PIL",)
    jobs = {**_COMPOSERS, **_DRAWERS}

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        if operation in _DRAWERS:
            draw, name = _DRAWERS[operation]
            output = _output(draw(inputs), _format(inputs, None, False), name)
            if operation == "swatch":
                output["colors"] = [_hex(_color(c, "colour")) for c in inputs["colors"]]
            return output
        compose, name = _COMPOSERS[operation]
        source = _open(inputs["image"])
        result = compose(source, inputs)
        if isinstance(result, dict):
            return result
        see_through = result.mode == "RGBA" and _transparent(result)
        return _output(result, _format(inputs, source, see_through), name)
