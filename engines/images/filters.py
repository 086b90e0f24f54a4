"""Effects that change the pixels of one picture (images.filter): blur, colour, redaction..."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engines.base import ChoiceEngine, EngineError
from engines.blob import Blob
from engines.images._helpers import (
    _color,
    _format,
    _keep_alpha,
    _open,
    _output,
    _rgba,
)
from engines.images._io import _has_alpha, image_header

if TYPE_CHECKING:
    from PIL import Image


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
    mask = PILImage.new("L", image.size, 255)
    if radius:
        # One corner drawn at four times the size and reduced (a smooth, anti-aliased
        # curve), then mirrored into the other three: the whole mask at four times the size
        # would hold 16 bytes per pixel of the picture.
        scale = 4
        big = PILImage.new("L", (radius * scale * 2, radius * scale * 2), 0)
        ImageDraw.Draw(big).ellipse((0, 0, big.width - 1, big.height - 1), fill=255)
        corner = big.resize((radius * 2, radius * 2), PILImage.Resampling.LANCZOS)
        corner = corner.crop((0, 0, radius, radius))
        right, bottom = image.width - radius, image.height - radius
        mask.paste(corner, (0, 0))
        mask.paste(corner.transpose(PILImage.Transpose.FLIP_LEFT_RIGHT), (right, 0))
        mask.paste(corner.transpose(PILImage.Transpose.FLIP_TOP_BOTTOM), (0, bottom))
        mask.paste(corner.transpose(PILImage.Transpose.ROTATE_180), (right, bottom))
    result = _rgba(image)
    result = result.copy() if result is image else result
    result.putalpha(ImageChops.multiply(result.getchannel("A"), mask))
    return result


def _remove_background(image: Image.Image, inputs: dict[str, Any]) -> Image.Image:
    import numpy as np

    rgba = np.array(_rgba(image))
    colour = inputs.get("color")
    target = np.array(
        _color(colour, "background colour")[:3] if colour else rgba[0, 0, :3], np.int16
    )
    tolerance = inputs.get("tolerance", 30)
    near = np.empty(rgba.shape[:2], bool)
    for start in range(0, rgba.shape[0], 256):  # bands of rows bound the int16 copies
        band = rgba[start : start + 256]
        distance = np.abs(band[..., :3].astype(np.int16) - target).max(axis=2)
        near[start : start + 256] = (distance <= tolerance) & (band[..., 3] > 0)
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
    with image_header(blob) as raw:
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
