"""Pillow operations on one picture (images.process): resize, thumbnail, convert, crop..."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engines.base import Engine, EngineError, operations_schema
from engines.blob import Blob
from engines.images._helpers import (
    _option,
)
from engines.images._io import FORMATS, MAX_SIDE, _has_alpha, encode_image, format_of, open_image

if TYPE_CHECKING:
    from PIL import Image


def _positive_size(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SIDE:
        raise EngineError(f"The {what} must be a whole number of pixels from 1 to {MAX_SIDE}.")
    return value


class ImageProcessEngine(Engine):
    """One image operation, chosen by the tool's ``operation`` param.

    Inputs: ``image`` (Blob) plus, per operation, ``width``/``height`` (resize; one of them
    keeps the aspect ratio, both fit inside unless ``fit`` is ``"cover"`` or ``"stretch"``),
    ``size`` (thumbnail: longest side), ``format`` and ``quality`` (any operation; convert and
    compress mostly), ``angle`` (rotate, degrees clockwise), ``x``/``y``/``width``/``height``
    (crop). A tool may fix any of them in its params instead. Output: the image, its size,
    format and byte count.
    """

    name = "images.process"
    requires = ("PIL",)
    params_schema = operations_schema(
        "resize", "thumbnail", "convert", "grayscale", "rotate", "crop", "compress",
        format={"enum": list(FORMATS)},
        quality={"type": "integer", "minimum": 1, "maximum": 100},
        width={"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
        height={"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
        size={"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
        fit={"enum": ["contain", "cover", "stretch"]},
        angle={"type": "number"},
    )  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        source = open_image(inputs["image"])
        source_format = format_of(source)
        operation = params["operation"]
        image = getattr(self, f"_{operation}")(source, inputs, params)
        fmt = _option(inputs, params, "format", source_format)
        if fmt not in FORMATS:
            raise EngineError(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
        quality = _option(inputs, params, "quality", 70 if operation == "compress" else None)
        if quality is not None and not 1 <= quality <= 100:
            raise EngineError("The quality must be from 1 to 100.")
        if (
            operation == "compress"
            and fmt in ("png", "gif", "bmp", "tiff")
            and not _has_alpha(image)
        ):
            # A lossless format cannot be squeezed by a quality setting: palette PNGs are the
            # lossy step that still looks right for screenshots and drawings.
            fmt = "png" if fmt in ("bmp", "tiff") else fmt
            image = image.convert("RGB").quantize(colors=256, dither=0)
        output = encode_image(image, fmt, quality, _stem(inputs["image"]))
        return {
            "image": output,
            "width": image.width,
            "height": image.height,
            "format": fmt,
            "bytes": len(output.data),
            "original_bytes": len(inputs["image"].data),
        }

    @staticmethod
    def _resize(image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]) -> Image.Image:
        from PIL import Image as PILImage
        from PIL import ImageOps

        width = _option(inputs, params, "width", None)
        height = _option(inputs, params, "height", None)
        if width is None and height is None:
            raise EngineError("Give a width, a height or both to resize to.")
        if width is None:
            height = _positive_size(height, "height")
            width = max(1, round(image.width * height / image.height))
        elif height is None:
            width = _positive_size(width, "width")
            height = max(1, round(image.height * width / image.width))
        else:
            width, height = _positive_size(width, "width"), _positive_size(height, "height")
            fit = _option(inputs, params, "fit", "contain")
            if fit == "contain":
                return ImageOps.contain(image, (width, height), PILImage.Resampling.LANCZOS)
            if fit == "cover":
                return ImageOps.fit(image, (width, height), PILImage.Resampling.LANCZOS)
        _positive_size(width, "width")
        _positive_size(height, "height")
        return image.resize((width, height), PILImage.Resampling.LANCZOS)

    @staticmethod
    def _thumbnail(
        image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]
    ) -> Image.Image:
        size = _positive_size(_option(inputs, params, "size", 256), "size")
        thumbnail = image.copy()
        thumbnail.thumbnail((size, size))
        return thumbnail

    @staticmethod
    def _convert(image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]) -> Image.Image:
        if _option(inputs, params, "format", None) is None:
            raise EngineError("Give the format to convert to.")
        return image

    @staticmethod
    def _compress(
        image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]
    ) -> Image.Image:
        return image

    @staticmethod
    def _grayscale(
        image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]
    ) -> Image.Image:
        return image.convert("LA" if _has_alpha(image) else "L")

    @staticmethod
    def _rotate(image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]) -> Image.Image:
        from PIL import Image as PILImage

        angle = float(_option(inputs, params, "angle", 90)) % 360
        turns = PILImage.Transpose
        quarter_turns = {90.0: turns.ROTATE_270, 180.0: turns.ROTATE_180, 270.0: turns.ROTATE_90}
        if angle == 0:
            return image.copy()
        if angle in quarter_turns:
            return image.transpose(quarter_turns[angle])
        # Pillow turns counter-clockwise; people (and every photo app) mean clockwise.
        if image.mode not in ("RGB", "RGBA", "L", "LA"):
            image = image.convert("RGBA" if _has_alpha(image) else "RGB")
        fill = (255,) * len(image.getbands()) if not _has_alpha(image) else None
        rotated = image.rotate(-angle, PILImage.Resampling.BICUBIC, expand=True, fillcolor=fill)
        if max(rotated.size) > MAX_SIDE:
            raise EngineError(f"The rotated image would be larger than {MAX_SIDE} pixels.")
        return rotated

    @staticmethod
    def _crop(image: Image.Image, inputs: dict[str, Any], params: dict[str, Any]) -> Image.Image:
        x = _option(inputs, params, "x", 0)
        y = _option(inputs, params, "y", 0)
        width = _option(inputs, params, "width", image.width - x)
        height = _option(inputs, params, "height", image.height - y)
        if min(x, y) < 0 or width < 1 or height < 1:
            raise EngineError("The crop box needs x and y of 0 or more and a positive size.")
        if x + width > image.width or y + height > image.height:
            raise EngineError(
                f"The crop box ({x}, {y}, {width}x{height}) goes outside the "
                f"{image.width}x{image.height} image."
            )
        return image.crop((x, y, x + width, y + height))


def _stem(blob: Blob) -> str:
    name = (blob.filename or "image").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] or "image"
