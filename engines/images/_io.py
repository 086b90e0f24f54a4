"""Image I/O shared by the image engines: formats, safe decoding, encoding, transparency.

``open_image`` is also how the OCR and video engines read a picture: it refuses what is not
an image and decompression bombs before any pixel is decoded.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from engines.base import EngineError
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
