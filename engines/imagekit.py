"""Local image tools beyond images.process: effects, overlays, palettes, metadata, comparisons.

Three engines, each a family of operations chosen by the tool's ``operation`` param:

- ``images.filter`` changes the pixels of one picture (flip, blur, sharpen, colour, redaction,
  rounded corners, background cut-out, metadata strip, colour-blindness simulation);
- ``images.compose`` builds a new canvas (borders, letterbox, social presets, collage,
  watermarks, memes, favicons, placeholders, swatches);
- ``images.analyze`` measures a picture and answers JSON (palette, metadata, sharpness,
  exposure, perceptual hashes, transparency, print sizes, platform sizes).

Pictures are read with ``engines.images.open_image`` (decompression bombs refused) and bounded
by ``MAX_PIXELS``; analyses work on a reduced copy so their cost does not grow with the photo.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.base import ChoiceEngine, Engine, EngineError
from engines.blob import Blob
from engines.images import MAX_SIDE, encode_image, format_of, open_image

if TYPE_CHECKING:
    from PIL import Image

# A 24-megapixel photo passes; beyond, edits would hold hundreds of MB per request.
MAX_PIXELS = 25_000_000
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


# --- shared helpers ------------------------------------------------------------------------


def _open(blob: Blob, what: str = "image") -> Image.Image:
    image = open_image(blob)
    if image.width * image.height > MAX_PIXELS:
        raise EngineError(
            f"The {what} has {image.width}x{image.height} pixels; this tool takes up to "
            f"{MAX_PIXELS // 1_000_000} megapixels: resize it first."
        )
    return image


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


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
    changed = change(image.convert("RGB")).convert("RGB")
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


# --- images.filter -------------------------------------------------------------------------


def _flip(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    direction = inputs.get("direction", "horizontal")
    if direction in ("horizontal", "both"):
        image = ImageOps.mirror(image)
    if direction in ("vertical", "both"):
        image = ImageOps.flip(image)
    return image


def _blur(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageFilter

    radius = inputs.get("radius", 4)
    kind = inputs.get("kind", "gaussian")
    blur = ImageFilter.GaussianBlur(radius) if kind == "gaussian" else ImageFilter.BoxBlur(radius)
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    return image.filter(blur)


def _sharpen(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageFilter

    mask = ImageFilter.UnsharpMask(
        radius=inputs.get("radius", 2),
        percent=inputs.get("amount", 150),
        threshold=inputs.get("threshold", 3),
    )
    return _keep_alpha(image, lambda rgb: rgb.filter(mask))


def _adjust(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageEnhance

    factors = [
        (ImageEnhance.Brightness, inputs.get("brightness", 1.0)),
        (ImageEnhance.Contrast, inputs.get("contrast", 1.0)),
        (ImageEnhance.Color, inputs.get("saturation", 1.0)),
    ]
    if all(factor == 1 for _, factor in factors):
        raise EngineError("Every factor is 1, which leaves the image as it is: change one.")

    def enhance(rgb: Image.Image) -> Image.Image:
        for enhancer, factor in factors:
            if factor != 1:
                rgb = enhancer(rgb).enhance(factor)
        return rgb

    return _keep_alpha(image, enhance)


def _auto_contrast(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    if inputs.get("method", "autocontrast") == "equalize":
        return _keep_alpha(image, ImageOps.equalize)
    cutoff = inputs.get("cutoff", 1.0)
    return _keep_alpha(image, lambda rgb: ImageOps.autocontrast(rgb, cutoff=cutoff))


def _invert(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    return _keep_alpha(image, ImageOps.invert)


# The classic sepia matrix (each output channel from R, G, B, plus an offset).
_SEPIA = (0.393, 0.769, 0.189, 0, 0.349, 0.686, 0.168, 0, 0.272, 0.534, 0.131, 0)


def _sepia(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage

    strength = inputs.get("strength", 1.0)
    return _keep_alpha(image, lambda rgb: PILImage.blend(rgb, rgb.convert("RGB", _SEPIA), strength))


def _duotone(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    shadows = _color(inputs.get("shadow_color", "#1d3557"), "shadow colour")[:3]
    highlights = _color(inputs.get("highlight_color", "#f1faee"), "highlight colour")[:3]
    return _keep_alpha(image, lambda rgb: ImageOps.colorize(rgb.convert("L"), shadows, highlights))


def _pixelated(image: Image.Image, block: int) -> Image.Image:
    from PIL import Image as PILImage

    small = image.resize(
        (max(1, round(image.width / block)), max(1, round(image.height / block))),
        PILImage.Resampling.BOX,
    )
    return small.resize(image.size, PILImage.Resampling.NEAREST)


def _pixelate(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    return _pixelated(image, inputs.get("block_size", 12))


def _redact(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageFilter

    regions = inputs.get("regions") or []
    if not regions:
        raise EngineError("Give at least one region (x, y, width, height) to redact.")
    style = inputs.get("style", "pixelate")
    block = inputs.get("block_size", 16)
    result = image.convert("RGBA" if _has_alpha(image) else "RGB")
    for number, region in enumerate(regions, start=1):
        left, top = region["x"], region["y"]
        right = min(left + region["width"], image.width)
        bottom = min(top + region["height"], image.height)
        if left >= image.width or top >= image.height:
            raise EngineError(
                f"Region {number} starts outside the {image.width}x{image.height} image."
            )
        box = (left, top, right, bottom)
        if style == "black_box":
            result.paste((0, 0, 0, 255)[: len(result.getbands())], box)
            continue
        patch = result.crop(box)
        if style == "blur":
            # A radius of a quarter of the region's short side leaves nothing readable.
            radius = max(4, min(patch.size) // 4)
            patch = patch.filter(ImageFilter.GaussianBlur(radius))
        else:
            patch = _pixelated(patch, block)
        result.paste(patch, box)
    return result


def _round_corners(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage
    from PIL import ImageChops, ImageDraw

    radius = min(inputs.get("radius", 40), min(image.size) // 2)
    # Drawn at four times the size and reduced: smooth, anti-aliased curves.
    scale = 4
    mask = PILImage.new("L", (image.width * scale, image.height * scale), 0)
    ImageDraw.Draw(mask).rounded_rectangle(
        (0, 0, mask.width - 1, mask.height - 1), radius * scale, fill=255
    )
    mask = mask.resize(image.size, PILImage.Resampling.LANCZOS)
    result = _rgba(image).copy()
    result.putalpha(ImageChops.multiply(result.getchannel("A"), mask))
    return result


def _remove_background(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    import numpy as np

    rgba = np.asarray(_rgba(image)).copy()
    colour = inputs.get("color")
    target = np.array(
        _color(colour, "background colour")[:3] if colour else rgba[0, 0, :3], np.int16
    )
    tolerance = inputs.get("tolerance", 30)
    near = (np.abs(rgba[..., :3].astype(np.int16) - target).max(axis=2) <= tolerance) & (
        rgba[..., 3] > 0
    )
    if inputs.get("mode", "edges") == "edges":
        near = _reachable_from_border(near)
    if near.all():
        raise EngineError(
            "Every pixel matches the background colour: lower the tolerance or pick the colour."
        )
    rgba[near, 3] = 0
    from PIL import Image as PILImage

    return PILImage.fromarray(rgba, "RGBA")


def _reachable_from_border(allowed: Any) -> Any:
    """The pixels of ``allowed`` connected (4-neighbours) to the image border through it.

    Grows the border seeds through whole runs of allowed pixels, along rows then columns,
    until nothing changes: each sweep is vectorised, and ordinary shapes need a few sweeps.
    """
    import numpy as np

    reached = np.zeros_like(allowed)
    reached[0, :], reached[-1, :] = allowed[0, :], allowed[-1, :]
    reached[:, 0], reached[:, -1] = allowed[:, 0], allowed[:, -1]
    while True:
        grown = _spread_along_rows(_spread_along_rows(reached, allowed).T, allowed.T).T
        if np.array_equal(grown, reached):
            return reached
        reached = grown


def _spread_along_rows(reached: Any, allowed: Any) -> Any:
    import numpy as np

    starts = allowed.copy()
    starts[:, 1:] &= ~allowed[:, :-1]
    runs = np.cumsum(starts.ravel(), dtype=np.int32).reshape(allowed.shape) * allowed
    touched = np.zeros(int(runs.max()) + 1, bool)
    touched[runs[reached & allowed]] = True
    touched[0] = False
    return touched[runs]


def _strip_metadata(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import Image as PILImage

    # A fresh image holds the pixels and nothing else (no EXIF, GPS, XMP, comments).
    clean = PILImage.frombytes(image.mode, image.size, image.tobytes())
    if image.mode == "P":
        clean.putpalette(image.getpalette() or [])
        if "transparency" in image.info:
            clean.info["transparency"] = image.info["transparency"]
    return clean


# Machado, Oliveira and Fernandes (2009), severity 1.0, for linear RGB.
_DEFICIENCIES = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
    "achromatopsia": ((0.2126, 0.7152, 0.0722),) * 3,
}  # fmt: skip


def _simulate_color_vision(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    matrix = _DEFICIENCIES[inputs.get("deficiency", "deuteranopia")]
    return _keep_alpha(image, lambda rgb: _linear_transform(rgb, matrix))


def _linear_transform(rgb: Image.Image, matrix: Any) -> Image.Image:
    """Apply a 3x3 matrix to the colours in linear light (sRGB decoded, then encoded)."""
    import numpy as np
    from PIL import Image as PILImage

    levels = np.arange(256, dtype=np.float32) / 255
    to_linear = np.where(levels <= 0.04045, levels / 12.92, ((levels + 0.055) / 1.055) ** 2.4)
    transform = np.array(matrix, np.float32).T
    pixels = np.asarray(rgb)
    out = np.empty_like(pixels)
    for start in range(0, pixels.shape[0], 256):  # bands of rows bound the float memory
        linear = to_linear[pixels[start : start + 256]] @ transform
        linear = np.clip(linear, 0, 1)
        encoded = np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055)
        out[start : start + 256] = np.round(encoded * 255).astype(np.uint8)
    return PILImage.fromarray(out, "RGB")


_FILTERS: dict[str, tuple[Callable[[Image.Image, dict[str, Any]], Image.Image], str]] = {
    "flip": (_flip, "flipped"),
    "blur": (_blur, "blurred"),
    "sharpen": (_sharpen, "sharpened"),
    "adjust": (_adjust, "adjusted"),
    "auto_contrast": (_auto_contrast, "enhanced"),
    "invert": (_invert, "inverted"),
    "sepia": (_sepia, "sepia"),
    "duotone": (_duotone, "duotone"),
    "pixelate": (_pixelate, "pixelated"),
    "redact": (_redact, "redacted"),
    "round_corners": (_round_corners, "rounded"),
    "remove_background": (_remove_background, "cutout"),
    "strip_metadata": (_strip_metadata, "clean"),
    "simulate_color_vision": (_simulate_color_vision, "simulated"),
}
# These make or keep transparency, so their result is PNG or WebP.
_ALPHA_FILTERS = {"round_corners", "remove_background"}


class ImageFilterEngine(ChoiceEngine):
    """Changes the pixels of one picture; the ``operation`` param picks how.

    Input ``image`` (Blob) and ``format`` (png, jpeg or webp; null keeps the input's, and a
    transparent result stays PNG or WebP), plus per operation: ``direction`` (flip);
    ``kind``, ``radius`` (blur); ``radius``, ``amount``, ``threshold`` (sharpen);
    ``brightness``, ``contrast``, ``saturation`` factors (adjust); ``method``, ``cutoff``
    (auto_contrast); ``strength`` (sepia); ``shadow_color``, ``highlight_color`` (duotone);
    ``block_size`` (pixelate, redact); ``regions``, ``style`` (redact); ``radius``
    (round_corners); ``color``, ``tolerance``, ``mode`` (remove_background); ``deficiency``
    (simulate_color_vision). Output: the image, its size, format and byte count; strip_metadata
    also lists what it removed.
    """

    name = "images.filter"
    requires = ("PIL", "numpy")
    jobs = _FILTERS

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        change, name = _FILTERS[operation]
        source = _open(inputs["image"])
        image = change(source, inputs)
        fmt = _format(inputs, source, operation in _ALPHA_FILTERS)
        output = _output(image, fmt, name)
        if operation == "strip_metadata":
            output["removed"] = _metadata_kinds(inputs["image"])
        return output


def _metadata_kinds(blob: Blob) -> list[str]:
    """What a file carries besides its pixels: EXIF, GPS, XMP, comments, text chunks."""
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(blob.data)) as raw:
        exif = raw.getexif()
        found = []
        if len(exif):
            found.append("exif")
        if exif.get_ifd(0x8825):
            found.append("gps")
        if "xmp" in raw.info or "XML:com.adobe.xmp" in raw.info:
            found.append("xmp")
        if "comment" in raw.info:
            found.append("comment")
        if "icc_profile" in raw.info:
            found.append("icc_profile")
        textual = set(getattr(raw, "text", {}) or {}) - {"XML:com.adobe.xmp"}
        if textual:
            found.append("text")
    return found


# --- images.compose ------------------------------------------------------------------------


def _border(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    from PIL import ImageOps

    width = inputs.get("border_width", 20)
    _check_side(image.width + 2 * width, image.height + 2 * width)
    colour = _color(inputs.get("color", "#ffffff"), "border colour")
    return ImageOps.expand(_rgba(image), border=width, fill=colour)


def _parse_ratio(text: str) -> Fraction:
    match = re.fullmatch(r"\s*(\d{1,4}(?:\.\d{1,3})?)\s*[:x/]\s*(\d{1,4}(?:\.\d{1,3})?)\s*", text)
    if not match or not float(match[1]) or not float(match[2]):
        raise EngineError(f"The aspect ratio '{text}' is not like 16:9 or 4:5.")
    ratio = Fraction(match[1]) / Fraction(match[2])
    if not Fraction(1, 10) <= ratio <= 10:
        raise EngineError("The aspect ratio must be between 1:10 and 10:1.")
    return ratio


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
    canvas = PILImage.new("RGBA", (width, height), colour)
    canvas.alpha_composite(_rgba(image), _place(canvas.size, image.size, "center", 0))
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


def _transparent(image: Image.Image) -> bool:
    """Whether any pixel of an RGBA result is not fully opaque."""
    low, _ = image.getchannel("A").getextrema()
    return low < 255


# --- images.analyze ------------------------------------------------------------------------


def _palette(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    from PIL import Image as PILImage

    pixels = np.asarray(_rgba(_reduced(image, 256))).reshape(-1, 4)
    opaque = pixels[pixels[:, 3] >= 128, :3]
    if not len(opaque):
        raise EngineError("The image is fully transparent: there are no colours to extract.")
    strip = PILImage.fromarray(np.ascontiguousarray(opaque.reshape(1, -1, 3)), "RGB")
    quantized = strip.quantize(inputs.get("count", 6), PILImage.Quantize.MEDIANCUT, kmeans=3)
    palette = quantized.getpalette() or []
    counts = sorted(quantized.getcolors() or [], key=lambda pair: (-pair[0], pair[1]))
    colours = []
    for count, index in counts:
        rgb = tuple(palette[index * 3 : index * 3 + 3])
        colours.append(
            {
                "hex": _hex(rgb),
                "rgb": list(rgb),
                "share": round(count / len(opaque), 4),
                "name": _nearest_name(rgb),
            }
        )
    return {"colors": colours, "count": len(colours)}


def _nearest_name(rgb: tuple[int, ...]) -> str:
    """The CSS colour name closest to ``rgb`` (by distance in RGB)."""
    from PIL import ImageColor

    def distance(name: str) -> int:
        other = ImageColor.getrgb(name)
        return sum((a - b) ** 2 for a, b in zip(rgb, other, strict=False))

    return min(sorted(ImageColor.colormap), key=distance)


# EXIF tags read by the metadata reader: (IFD, tag) -> output field.
_EXIF_FIELDS = {
    (None, 0x010F): "camera_make",
    (None, 0x0110): "camera_model",
    (None, 0x0131): "software",
    (None, 0x013B): "artist",
    (None, 0x8298): "copyright",
    (0x8769, 0xA434): "lens",
    (0x8769, 0x9003): "taken_at",
    (0x8769, 0x829A): "exposure_time",
    (0x8769, 0x829D): "f_number",
    (0x8769, 0x8827): "iso",
    (0x8769, 0x920A): "focal_length_mm",
}


def _metadata(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(inputs["image"].data)) as raw:
        exif = raw.getexif()
        dpi = raw.info.get("dpi")
        fields = {name: _exif_value(exif, ifd, tag) for (ifd, tag), name in _EXIF_FIELDS.items()}
        return {
            "format": format_of(image),
            "width": image.width,
            "height": image.height,
            "mode": raw.mode,
            "has_alpha": _has_alpha(raw),
            "frames": getattr(raw, "n_frames", 1),
            "dpi": [round(float(v), 2) for v in dpi] if dpi else None,
            "icc_profile": "icc_profile" in raw.info,
            "orientation": exif.get(0x0112),
            **fields,
            "gps": _gps(exif.get_ifd(0x8825)),
            "exif_tags": len(exif) + len(exif.get_ifd(0x8769)) + len(exif.get_ifd(0x8825)),
        }


def _exif_value(exif: Any, ifd: int | None, tag: int) -> Any:
    value = (exif.get_ifd(ifd) if ifd else exif).get(tag)
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip("\x00 ").strip() or None
    if tag == 0x829A:  # exposure time as photographers write it
        seconds = float(value)
        return f"1/{round(1 / seconds)}" if 0 < seconds < 1 else f"{seconds:g}"
    if tag == 0x8827 and isinstance(value, tuple):
        value = value[0]
    number = float(value)
    return int(number) if number.is_integer() else round(number, 2)


def _gps(gps: Any) -> dict[str, float | None] | None:
    """Latitude and longitude in decimal degrees (south and west negative), altitude in m."""
    try:
        latitude = _degrees(gps[2], gps.get(1, "N"), "S")
        longitude = _degrees(gps[4], gps.get(3, "E"), "W")
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    altitude = gps.get(6)
    if altitude is not None:
        altitude = round(float(altitude) * (-1 if gps.get(5) in (1, b"\x01") else 1), 1)
    return {"latitude": latitude, "longitude": longitude, "altitude_m": altitude}


def _degrees(dms: Any, reference: Any, negative: str) -> float:
    degrees, minutes, seconds = (float(part) for part in dms)
    value = degrees + minutes / 60 + seconds / 3600
    if isinstance(reference, bytes):
        reference = reference.decode("ascii", "replace")
    return round(-value if str(reference).strip().upper() == negative else value, 6)


def _gray_array(image: Image.Image, side: int = 512) -> Any:
    import numpy as np

    gray = _luminance(_reduced(image, side))
    if min(gray.size) < 3:
        raise EngineError("The image is too small to analyse (at least 3x3 pixels).")
    return np.asarray(gray, dtype=np.float32)


def _sharpness(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    g = _gray_array(image)
    laplacian = g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1] - 4 * g[1:-1, 1:-1]
    variance = float(laplacian.var())
    threshold = inputs.get("threshold", 100)
    verdict = (
        "sharp" if variance >= threshold else "soft" if variance >= threshold / 3 else "blurry"
    )
    return {
        "laplacian_variance": round(variance, 2),
        "verdict": verdict,
        "threshold": threshold,
        # 0 at a flat picture, 100 from ten times the threshold up, on a log scale.
        "score": round(
            min(100.0, 100 * math.log10(1 + variance) / math.log10(1 + 10 * threshold)), 1
        ),
        "analyzed_width": int(g.shape[1]),
        "analyzed_height": int(g.shape[0]),
    }


def _exposure(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    g = _gray_array(image)
    total = g.size
    mean, spread = float(g.mean()), float(g.std())
    low, median, high = (float(v) for v in np.percentile(g, [1, 50, 99]))
    shadows = float((g <= 4).sum()) / total
    highlights = float((g >= 251).sum()) / total
    notes = []
    if shadows > 0.05:
        notes.append(f"{shadows:.0%} of the picture is pure black: shadow detail is lost.")
    if highlights > 0.05:
        notes.append(f"{highlights:.0%} of the picture is pure white: highlights are blown.")
    if spread < 32:
        notes.append("Little difference between dark and light areas: the picture looks flat.")
    if mean < 70 or shadows > 0.25:
        verdict = "underexposed"
    elif mean > 185 or highlights > 0.25:
        verdict = "overexposed"
    elif spread < 32:
        verdict = "low_contrast"
    else:
        verdict = "well_exposed"
    histogram, _ = np.histogram(g, bins=16, range=(0, 256))
    return {
        "mean_luminance": round(mean, 1),
        "median_luminance": round(median, 1),
        "contrast": round(spread, 1),
        "dynamic_range": [round(low), round(high)],
        "shadows_clipped": round(shadows, 4),
        "highlights_clipped": round(highlights, 4),
        "histogram": [round(int(count) / total, 4) for count in histogram],
        "verdict": verdict,
        "notes": notes,
    }


def _hashes(image: Image.Image) -> dict[str, str]:
    """64-bit average, difference and perceptual (DCT) hashes as 16 hex digits."""
    import numpy as np
    from PIL import Image as PILImage

    gray = _luminance(_reduced(image, 256))
    box = PILImage.Resampling.BOX
    small = np.asarray(gray.resize((8, 8), box), dtype=np.float32)
    wide = np.asarray(gray.resize((9, 8), box), dtype=np.float32)
    big = np.asarray(gray.resize((32, 32), box), dtype=np.float32)
    n = np.arange(32)
    dct = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / 64)  # DCT-II basis, rows by freq
    low = (dct @ big @ dct.T)[:8, :8]
    return {
        "average_hash": _bits_hex(small > small.mean()),
        "difference_hash": _bits_hex(wide[:, 1:] > wide[:, :-1]),
        "perceptual_hash": _bits_hex(low > np.median(low)),
    }


def _bits_hex(bits: Any) -> str:
    value = 0
    for bit in bits.ravel():
        value = value << 1 | int(bit)
    return f"{value:016x}"


def _hash(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    return {**_hashes(image), "width": image.width, "height": image.height}


def _compare(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    if inputs.get("other") is None:
        raise EngineError("Give the second image to compare with (other).")
    other = _open(inputs["other"], "other image")
    first, second = _hashes(image), _hashes(other)
    distances = {
        name.removesuffix("_hash"): bin(int(first[name], 16) ^ int(second[name], 16)).count("1")
        for name in first
    }
    mean = sum(distances.values()) / len(distances)
    identical = image.size == other.size and _rgba(image).tobytes() == _rgba(other).tobytes()
    if identical:
        verdict = "identical"
    elif mean <= 6:
        verdict = "near_duplicate"
    elif mean <= 14:
        verdict = "similar"
    else:
        verdict = "different"
    return {
        "verdict": verdict,
        "similarity": round(1 - mean / 64, 4),
        "distances": distances,
        "pixel_identical": identical,
        "first": {**first, "width": image.width, "height": image.height},
        "second": {**second, "width": other.width, "height": other.height},
    }


def _transparency(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    total = image.width * image.height
    if not _has_alpha(image):
        return {
            "has_alpha_channel": False,
            "verdict": "opaque",
            "transparent_share": 0.0,
            "semi_transparent_share": 0.0,
            "opaque_share": 1.0,
            "visible_box": {"x": 0, "y": 0, "width": image.width, "height": image.height},
        }
    alpha = _rgba(image).getchannel("A")
    histogram = alpha.histogram()
    transparent, opaque = histogram[0] / total, histogram[255] / total
    box = alpha.getbbox()
    if transparent == 1:
        verdict = "fully_transparent"
    elif opaque == 1:
        verdict = "opaque"
    else:
        verdict = "has_transparency"
    return {
        "has_alpha_channel": True,
        "verdict": verdict,
        "transparent_share": round(transparent, 4),
        "semi_transparent_share": round(1 - transparent - opaque, 4),
        "opaque_share": round(opaque, 4),
        "visible_box": (
            {"x": box[0], "y": box[1], "width": box[2] - box[0], "height": box[3] - box[1]}
            if box
            else None
        ),
    }


_STANDARD_RATIOS = ("1:1", "5:4", "4:3", "3:2", "16:10", "16:9", "2:1", "21:9", "3:1", "4:1")


def _ratio_text(width: int, height: int) -> tuple[str, str]:
    """The reduced ratio (``1920x1080`` -> 16:9) and the nearest common one, either way up."""
    exact = Fraction(width, height)
    simple = exact if max(exact.numerator, exact.denominator) <= 50 else None
    text = f"{simple.numerator}:{simple.denominator}" if simple else f"{float(exact):.3g}:1"
    candidates = [r if width >= height else ":".join(r.split(":")[::-1]) for r in _STANDARD_RATIOS]
    nearest = min(candidates, key=lambda r: abs(math.log(float(_parse_ratio(r)) / float(exact))))
    return text, nearest


def _print_size(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(inputs["image"].data)) as raw:
        stored = raw.info.get("dpi")
    if inputs.get("dpi"):
        dpi, source = float(inputs["dpi"]), "input"
    elif stored and 0 < float(stored[0]) <= 10_000 and round(float(stored[0])) != 72:
        dpi, source = round(float(stored[0]), 1), "file"  # PNG stores dots per metre
    else:
        dpi, source = 300.0, "default"
    ratio, nearest = _ratio_text(image.width, image.height)

    def at(resolution: float) -> dict[str, float]:
        inches = (image.width / resolution, image.height / resolution)
        return {
            "dpi": resolution,
            "width_in": round(inches[0], 2),
            "height_in": round(inches[1], 2),
            "width_cm": round(inches[0] * 2.54, 1),
            "height_cm": round(inches[1] * 2.54, 1),
        }

    return {
        "width": image.width,
        "height": image.height,
        "megapixels": round(image.width * image.height / 1_000_000, 2),
        "aspect_ratio": ratio,
        "aspect_decimal": round(image.width / image.height, 4),
        "nearest_standard_ratio": nearest,
        "dpi": dpi,
        "dpi_source": source,
        "print_size": at(dpi),
        "print_sizes": [at(r) for r in (300.0, 150.0, 72.0)],
    }


def _platform_sizes(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    names = inputs.get("presets") or list(SOCIAL_PRESETS)
    tolerance = inputs.get("ratio_tolerance", 0.01)
    width, height = image.size
    results = []
    for name in names:
        target_w, target_h = SOCIAL_PRESETS[name]
        scale = max(target_w / width, target_h / height)
        ratio_off = abs(width / height / (target_w / target_h) - 1)
        if (width, height) == (target_w, target_h):
            status = "exact"
        elif scale > 1:
            status = "too_small"
        elif ratio_off <= tolerance:
            status = "resize"
        else:
            status = "crop"
        kept = (target_w * target_h) / (width * scale * height * scale)
        results.append(
            {
                "preset": name,
                "width": target_w,
                "height": target_h,
                "status": status,
                "crop_loss": round(1 - kept, 4),
                "upscale": round(scale, 3) if scale > 1 else 1.0,
            }
        )
    return {
        "width": width,
        "height": height,
        "aspect_ratio": _ratio_text(width, height)[0],
        "results": results,
        "ready": [r["preset"] for r in results if r["status"] in ("exact", "resize")],
    }


_ANALYSES: dict[str, Callable[[Image.Image, dict[str, Any]], dict[str, Any]]] = {
    "palette": _palette,
    "metadata": _metadata,
    "sharpness": _sharpness,
    "exposure": _exposure,
    "hash": _hash,
    "compare": _compare,
    "transparency": _transparency,
    "print_size": _print_size,
    "platform_sizes": _platform_sizes,
}


class ImageAnalyzeEngine(ChoiceEngine):
    """Measures a picture and answers JSON; the ``operation`` param picks the measure.

    Input ``image`` (Blob), plus per operation: ``count`` (palette: 2-16 colours with their
    share of the opaque pixels and nearest CSS name), ``threshold`` (sharpness: variance of
    the Laplacian at 512 px a side), ``other`` (compare: a second image; average, difference
    and DCT hashes with Hamming distances), ``dpi`` (print_size), ``presets`` and
    ``ratio_tolerance`` (platform_sizes, against ``SOCIAL_PRESETS``). metadata reads format,
    mode, DPI, EXIF camera fields and GPS in decimal degrees; exposure gives luminance
    statistics, clipping and a verdict; transparency the alpha coverage and visible box.
    """

    name = "images.analyze"
    requires = ("PIL", "numpy")
    jobs = _ANALYSES

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return _ANALYSES[params["operation"]](_open(inputs["image"]), inputs)


ENGINES: tuple[Engine, ...] = (ImageAnalyzeEngine(), ImageComposeEngine(), ImageFilterEngine())
