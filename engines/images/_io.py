"""Image I/O shared by the image engines: formats, safe decoding, encoding, transparency.

``open_image`` is also how the OCR and video engines read a picture: it refuses what is not
an image and decompression bombs before any pixel is decoded.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
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
# The most pixels a picture may declare to be decoded at all, read from its header before
# any pixel is (a 100 KB PNG can declare 9,400 x 9,400). Sized for the process, not taken
# from Pillow's cap (89.5 MP, which let the 9,400 x 9,400 PNG grow a web process by 1.1 GB):
# the heaviest tools hold up to 20 bytes a pixel at once (the decoded picture at 4 bytes, an
# RGB(A) working copy, numpy arrays, the encoded result; bench/decoders.py measures them), so
# 16 MP keeps one request near 300 MB. It takes 12 MP phone photos and 16 MP cameras.
MAX_PIXELS = 16_000_000


def open_image(blob: Blob, what: str = "image") -> Image.Image:
    """Decode ``blob`` as an upright image (EXIF orientation applied), first frame only.

    Raises EngineError when the bytes are not an image Pillow reads, or when its header
    declares more than ``MAX_PIXELS`` pixels: checked before any pixel is decoded. ``what``
    names the picture in that message ("overlay", "other image"...).
    """
    from PIL import ImageOps

    image = _opened(blob, what)
    try:
        image.load()
        # In place: a transposed copy would hold the picture twice at its largest.
        ImageOps.exif_transpose(image, in_place=True)
    except (OSError, ValueError, SyntaxError, EOFError):
        raise EngineError("The image file is truncated or corrupt.") from None
    return image


@contextmanager
def image_header(blob: Blob, what: str = "image") -> Iterator[Image.Image]:
    """``blob`` opened by Pillow with its header read and no pixel decoded, then closed.

    For reading what a file carries besides its pixels (EXIF, DPI, frames) and its size;
    refuses what ``open_image`` refuses, by the same checks.
    """
    with _opened(blob, what) as image:
        yield image


def _opened(blob: Blob, what: str) -> Image.Image:
    """Pillow's lazy open of ``blob`` (the header only), refused past ``MAX_PIXELS``."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(blob.data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow refuses by itself past twice its own cap (and warns between the two: an
        # error under strict warning filters) without telling the size: far past ours.
        raise EngineError(
            _too_many_pixels(f"more than {Image.MAX_IMAGE_PIXELS:,} pixels", what)
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise EngineError("The file is not an image in a format this tool reads.") from None
    try:
        check_pixels(*image.size, what=what)
    except EngineError:
        image.close()
        raise
    return image


def check_pixels(width: int, height: int, what: str = "image") -> None:
    """Refuse a picture of ``width`` x ``height`` when it has more than ``MAX_PIXELS``."""
    if width * height > MAX_PIXELS:
        raise EngineError(_too_many_pixels(f"{width * height:,} pixels ({width}x{height})", what))


def _too_many_pixels(count: str, what: str) -> str:
    return (
        f"The {what} has {count}; the most this tool decodes is {MAX_PIXELS:,} "
        f"({MAX_PIXELS / 1_000_000:g} MP). Send a smaller {what}."
    )


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
