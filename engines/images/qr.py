"""QR codes drawn as crisp PNGs (images.qr)."""

from __future__ import annotations

from typing import Any

from engines.base import Engine, EngineError
from engines.images._helpers import (
    _option,
)
from engines.images._io import encode_image

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
