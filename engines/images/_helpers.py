"""Helpers shared by the image engines: limits, presets, colours, fonts, placing, output."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.base import EngineError
from engines.blob import Blob
from engines.images._io import MAX_SIDE, _has_alpha, encode_image, format_of, open_image

if TYPE_CHECKING:
    from PIL import Image

# The extra picture fields of multi-image tools: image, image_2, ..., image_9.
MAX_IMAGES = 9

# Sizes in pixels of the common social media formats (width, height).
SOCIAL_PRESETS = {
    "instagram-square": (1080, 1080),
    "instagram-portrait": (1080, 1350),
    "instagram-landscape": (1080, 566),
    "instagram-story": (1080, 1920),
    "facebook-post": (1200, 630),
    "facebook-cover": (851, 315),
    "x-post": (1600, 900),
    "x-header": (1500, 500),
    "linkedin-post": (1200, 627),
    "linkedin-banner": (1584, 396),
    "youtube-thumbnail": (1280, 720),
    "youtube-banner": (2560, 1440),
    "pinterest-pin": (1000, 1500),
    "tiktok-cover": (1080, 1920),
    "open-graph": (1200, 630),
}
POSITIONS = (
    "top-left",
    "top",
    "top-right",
    "left",
    "center",
    "right",
    "bottom-left",
    "bottom",
    "bottom-right",
)
_FONT_FILES = {
    False: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    True: "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
}
_OUTPUT_FORMATS = ("png", "jpeg", "webp")


def _open(blob: Blob, what: str = "image") -> Image.Image:
    """The picture decoded (``open_image``: refused past ``_io.MAX_PIXELS`` from its header)."""
    return open_image(blob, what)


def _rgba(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGBA" else image.convert("RGBA")


def _color(value: str, what: str) -> tuple[int, int, int, int]:
    """A CSS colour (name, #rgb, #rrggbb, #rrggbbaa, rgb()) as RGBA; EngineError if unknown."""
    from PIL import ImageColor

    try:
        rgb = ImageColor.getrgb(value.strip())
    except ValueError:
        raise EngineError(
            f"The {what} '{value}' is not a colour: use a name (navy) or a hex code (#1d3557)."
        ) from None
    return (*rgb, 255) if len(rgb) == 3 else rgb  # type: ignore[return-value]


def _hex(rgb: tuple[int, ...]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb[:3])


def _font(size: int, bold: bool = False) -> Any:
    """DejaVu Sans where the system has it, else Pillow's own scalable font."""
    from PIL import ImageFont

    path = _FONT_FILES[bold]
    if Path(path).is_file():
        return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)


def _keep_alpha(image: Image.Image, change: Callable[[Image.Image], Image.Image]) -> Image.Image:
    """Apply ``change`` to the colour channels (as RGB); the transparency stays as it was."""
    alpha = _rgba(image).getchannel("A") if _has_alpha(image) else None
    # No copy of what is RGB already: each is 4 bytes a pixel (``change`` makes a new image).
    changed = change(image if image.mode == "RGB" else image.convert("RGB"))
    changed = changed if changed.mode == "RGB" else changed.convert("RGB")
    if alpha is not None:
        changed.putalpha(alpha)
    return changed


def _output(image: Image.Image, fmt: str, name: str) -> dict[str, Any]:
    """The common answer of a tool that makes one picture (RGB when nothing is see-through)."""
    if image.mode == "RGBA" and not _transparent(image):
        image = image.convert("RGB")
    blob = encode_image(image, fmt, 92 if fmt in ("jpeg", "webp") else None, name)
    return {
        "image": blob,
        "width": image.width,
        "height": image.height,
        "format": fmt,
        "bytes": len(blob.data),
    }


def _format(inputs: dict[str, Any], source: Image.Image | None, keeps_alpha: bool) -> str:
    """The caller's format, else the source's; a transparent result is not flattened to JPEG."""
    fmt = inputs.get("format") or (format_of(source) if source is not None else "png")
    if keeps_alpha and fmt not in ("png", "webp"):
        return "png"
    return fmt if fmt in _OUTPUT_FORMATS else "png"


def _check_side(width: int, height: int) -> None:
    if max(width, height) > MAX_SIDE:
        raise EngineError(f"The result would be {width}x{height}: at most {MAX_SIDE} a side.")


def _place(canvas: tuple[int, int], item: tuple[int, int], position: str, margin: int):
    """Top-left corner of ``item`` at one of the nine ``POSITIONS`` of ``canvas``."""
    row, column = divmod(POSITIONS.index(position), 3)
    spans = [(canvas[0], item[0], column), (canvas[1], item[1], row)]
    return tuple(
        margin if place == 0 else (outer - inner) // 2 if place == 1 else outer - inner - margin
        for outer, inner, place in spans
    )


def _reduced(image: Image.Image, side: int = 512) -> Image.Image:
    """A copy at most ``side`` pixels a side: analyses cost the same for any photo."""
    from PIL import Image as PILImage

    copy = image.copy()
    copy.thumbnail((side, side), PILImage.Resampling.BOX)
    return copy


def _luminance(image: Image.Image) -> Image.Image:
    """8-bit luma; transparent pixels are seen over white, as a viewer shows them."""
    from PIL import Image as PILImage

    if _has_alpha(image):
        rgba = _rgba(image)
        paper = PILImage.new("RGB", rgba.size, "white")
        paper.paste(rgba, mask=rgba.getchannel("A"))
        return paper.convert("L")
    return image.convert("L")


def _images(inputs: dict[str, Any]) -> list[Blob]:
    """The pictures of a multi-image tool: ``image`` then ``image_2`` ... in order, if given."""
    names = ["image", *(f"image_{n}" for n in range(2, MAX_IMAGES + 1))]
    return [inputs[name] for name in names if inputs.get(name) is not None]


def _option(inputs: dict[str, Any], params: dict[str, Any], key: str, default: Any) -> Any:
    """A caller's value, else the tool's fixed value, else the engine default."""
    value = inputs.get(key)
    if value is None:
        value = params.get(key)
    return default if value is None else value


def _transparent(image: Image.Image) -> bool:
    """Whether any pixel of an RGBA result is not fully opaque."""
    low, _ = image.getchannel("A").getextrema()
    return low < 255


def _parse_ratio(text: str) -> Fraction:
    match = re.fullmatch(r"\s*(\d{1,4}(?:\.\d{1,3})?)\s*[:x/]\s*(\d{1,4}(?:\.\d{1,3})?)\s*", text)
    if not match or not float(match[1]) or not float(match[2]):
        raise EngineError(f"The aspect ratio '{text}' is not like 16:9 or 4:5.")
    ratio = Fraction(match[1]) / Fraction(match[2])
    if not Fraction(1, 10) <= ratio <= 10:
        raise EngineError("The aspect ratio must be between 1:10 and 10:1.")
    return ratio
