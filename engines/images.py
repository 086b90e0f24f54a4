"""Image processing (resize, thumbnail, convert, grayscale, rotate, crop, compress) and QR codes.

``open_image`` is also how the OCR and video engines read a picture: it refuses what is not
an image and decompression bombs before any pixel is decoded.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from engines.base import Engine, EngineError
from engines.blob import Blob

if TYPE_CHECKING:
    from PIL import Image

# Pillow's save() names, the content types they travel under, and the extension for filenames.
FORMATS = {
    "png": ("PNG", "image/png"),
    "jpeg": ("JPEG", "image/jpeg"),
    "webp": ("WEBP", "image/webp"),
    "gif": ("GIF", "image/gif"),
    "bmp": ("BMP", "image/bmp"),
    "tiff": ("TIFF", "image/tiff"),
}
_PILLOW_TO_FORMAT = {pillow: name for name, (pillow, _) in FORMATS.items()}
_FILE_EXTENSIONS = {"jpeg": "jpg", "tiff": "tif"}

# The largest side a generated or resized picture may have (a 16k x 16k RGBA is 1 GiB).
MAX_SIDE = 10_000


def open_image(blob: Blob) -> Image.Image:
    """Decode ``blob`` as an upright image (EXIF orientation applied), first frame only.

    Raises EngineError when the bytes are not an image Pillow reads, or when the image has
    more pixels than ``PIL.Image.MAX_IMAGE_PIXELS`` (a small file can claim a huge canvas).
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(blob.data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow raises past twice its limit and only warns (an error under strict warning
        # filters) between the two: both mean too many pixels here.
        raise EngineError(_too_many_pixels()) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise EngineError("The file is not an image in a format this tool reads.") from None
    width, height = image.size
    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        raise EngineError(_too_many_pixels())
    try:
        image.load()
        upright = ImageOps.exif_transpose(image)
    except (OSError, ValueError, SyntaxError, EOFError):
        raise EngineError("The image file is truncated or corrupt.") from None
    upright.format = image.format  # the transposed copy forgets where it came from
    return upright


def _too_many_pixels() -> str:
    from PIL import Image

    return f"The image has more than {Image.MAX_IMAGE_PIXELS:,} pixels."


def format_of(image: Image.Image) -> str:
    """The output format name (``png``, ``jpeg``, ...) that best keeps ``image`` as it came."""
    return _PILLOW_TO_FORMAT.get(image.format or "", "png")


def encode_image(
    image: Image.Image, fmt: str, quality: int | None = None, filename: str = "image"
) -> Blob:
    """Encode ``image`` as ``fmt`` (a key of FORMATS), converting the mode where it must."""
    pillow_format, content_type = FORMATS[fmt]
    options: dict[str, Any] = {}
    if fmt == "jpeg":
        image = _flatten(image) if image.mode not in ("RGB", "L") else image
        options = {"quality": quality or 85, "optimize": True, "progressive": True}
    elif fmt == "webp":
        if image.mode not in ("RGB", "RGBA"):
            image = image.convert("RGBA" if _has_alpha(image) else "RGB")
        options = {"quality": quality or 80, "method": 4}
    elif fmt == "png":
        if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
            image = image.convert("RGBA" if _has_alpha(image) else "RGB")
        options = {"optimize": True}
    elif fmt == "bmp":
        image = (
            _flatten(image)
            if _has_alpha(image) or image.mode not in ("1", "L", "P", "RGB")
            else image
        )
    elif fmt == "gif" and image.mode not in ("P", "L", "1"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB").quantize(256)
    buffer = io.BytesIO()
    image.save(buffer, pillow_format, **options)
    extension = _FILE_EXTENSIONS.get(fmt, fmt)
    return Blob(buffer.getvalue(), content_type, f"{filename}.{extension}")


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _flatten(image: Image.Image, background: str = "white") -> Image.Image:
    """Drop transparency by painting the image over ``background``, as JPEG needs."""
    from PIL import Image

    if not _has_alpha(image):
        return image.convert("RGB")
    rgba = image.convert("RGBA")
    canvas = Image.new("RGB", rgba.size, background)
    canvas.paste(rgba, mask=rgba.getchannel("A"))
    return canvas


def _option(inputs: dict[str, Any], params: dict[str, Any], key: str, default: Any) -> Any:
    """A caller's value, else the tool's fixed value, else the engine default."""
    value = inputs.get(key)
    if value is None:
        value = params.get(key)
    return default if value is None else value


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
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {
            "operation": {
                "enum": [
                    "resize",
                    "thumbnail",
                    "convert",
                    "grayscale",
                    "rotate",
                    "crop",
                    "compress",
                ]
            },
            "format": {"enum": list(FORMATS)},
            "quality": {"type": "integer", "minimum": 1, "maximum": 100},
            "width": {"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
            "height": {"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
            "size": {"type": "integer", "minimum": 1, "maximum": MAX_SIDE},
            "fit": {"enum": ["contain", "cover", "stretch"]},
            "angle": {"type": "number"},
        },
    }

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


_ERROR_CORRECTION = {"L": 1, "M": 0, "Q": 3, "H": 2}  # qrcode.constants values


class QrCodeEngine(Engine):
    """Encodes ``data`` (text or a URL) as a QR code PNG.

    Inputs: ``data``; ``size`` (pixels of the square image, default 512), ``error_correction``
    (L, M, Q or H; default M), ``border`` (quiet-zone modules, default 4), ``fill_color`` and
    ``back_color`` (CSS colour names or #rrggbb). The same inputs always give the same bytes.
    """

    name = "images.qr"
    requires = ("qrcode", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "error_correction": {"enum": list(_ERROR_CORRECTION)},
            "size": {"type": "integer", "minimum": 21, "maximum": 4096},
            "border": {"type": "integer", "minimum": 0, "maximum": 20},
            "prefix": {"type": "string"},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import qrcode
        from PIL import Image, ImageColor
        from qrcode.exceptions import DataOverflowError

        data = params.get("prefix", "") + inputs["data"]
        if not data:
            raise EngineError("There is nothing to encode.")
        level = _option(inputs, params, "error_correction", "M")
        border = _option(inputs, params, "border", 4)
        size = _option(inputs, params, "size", 512)
        if not 21 <= size <= 4096:
            raise EngineError("The size must be from 21 to 4096 pixels.")
        try:
            fill = ImageColor.getrgb(_option(inputs, params, "fill_color", "black"))[:3]
            back = ImageColor.getrgb(_option(inputs, params, "back_color", "white"))[:3]
        except ValueError as error:
            raise EngineError(f"Unknown colour: {error}") from None
        code = qrcode.QRCode(error_correction=_ERROR_CORRECTION[level], border=border, box_size=1)
        code.add_data(data)
        try:
            code.make(fit=True)
        except (DataOverflowError, ValueError):
            raise EngineError(
                f"The data is too long for a QR code at error correction {level}."
            ) from None
        # Draw one pixel per module, then scale up without smoothing: crisp edges at any size.
        matrix = code.get_matrix()
        modules = len(matrix)
        if size < modules:
            raise EngineError(
                f"The code has {modules} modules a side: ask for {modules}px or more."
            )
        small = Image.new("RGB", (modules, modules), back)
        pixels = small.load()
        for row, line in enumerate(matrix):
            for column, dark in enumerate(line):
                if dark:
                    pixels[column, row] = fill
        # Whole pixels per module keep every module the same size; the rest widens the margin.
        box = size // modules
        image = Image.new("RGB", (size, size), back)
        offset = (size - box * modules) // 2
        image.paste(small.resize((box * modules,) * 2, Image.Resampling.NEAREST), (offset,) * 2)
        blob = encode_image(image, "png", filename="qr-code")
        return {
            "image": blob,
            "width": size,
            "height": size,
            "version": code.version,
            "error_correction": level,
            "modules": modules - 2 * border,
        }


ENGINES = (ImageProcessEngine(), QrCodeEngine())
