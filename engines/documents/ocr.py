"""Optical character recognition with RapidOCR (PP-OCR models on onnxruntime).

Only the models inside the rapidocr wheel are used, named by path: any other model choice
(another language, another size) makes rapidocr download it at run time. Those models read
Chinese and English (Latin letters, digits, punctuation).

Besides plain text, a tool's ``mode`` param shapes what was read: word boxes and paragraphs,
receipts, invoices, business cards, code, tables, identifiers (IBANs, VAT ids, references),
or several pictures at once. The shaping is plain rules over the lines and their boxes
(``ocr_fields`` for what the text says, ``ocr_layout`` for where it sits).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, load_once
from engines.documents._lines import _join_rows, _reading_order
from engines.documents.ocr_fields import _identifiers, _invoice, _receipt
from engines.documents.ocr_layout import _business_card, _code, _layout, _table
from engines.images._io import open_image

_MODEL_FILES = {
    "Det.model_path": "PP-OCRv6_det_small.onnx",
    "Rec.model_path": "PP-OCRv6_rec_small.onnx",
    "Cls.model_path": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
}

# Detection sees the image scaled so that its longest side is at most this: a page at 150 dpi
# keeps its small print, and a phone photo is not run at 12 megapixels.
_DETECTION_SIDE = 1280

# rapidocr objects keep per-call state on the instance; one page at a time per process (the
# models already use both cores for one page).
_LOCK = threading.Lock()


@load_once
def _reader() -> Any:
    import rapidocr
    from rapidocr import RapidOCR

    models = Path(rapidocr.__file__).resolve().parent / "models"
    settings: dict[str, Any] = {key: str(models / name) for key, name in _MODEL_FILES.items()}
    missing = [path for path in settings.values() if not Path(path).is_file()]
    if missing:
        raise RuntimeError(f"rapidocr's bundled models are missing: {', '.join(missing)}")
    settings.update(
        {
            "Global.log_level": "error",
            "Det.limit_type": "max",
            "Det.limit_side_len": _DETECTION_SIDE,
        }
    )
    return RapidOCR(params=settings)


class OcrEngine(Engine):
    """Reads the text of an image, then shapes it as the tool's ``mode`` param says.

    Input: ``image`` (Blob). Optional ``min_confidence`` (0-1, default 0.5) drops weaker lines.
    Output without a mode: ``text`` (lines in reading order, one per line; lines side by side
    on one row are joined with a space), ``lines`` (text, confidence, box as four [x, y]
    corners clockwise from top left, in pixels of the upright image), ``line_count``,
    ``confidence`` (mean over lines, 0 when none), ``width`` and ``height``. An image without
    text gives empty text, not an error. Modes: ``layout`` (word boxes and paragraphs),
    ``receipt``, ``invoice``, ``business_card``, ``code`` (``indent_size``), ``table``,
    ``identifiers`` and ``batch`` (``image_2`` ... ``image_5`` read too, text per image).
    """

    name = "ocr.text"
    requires = ("rapidocr", "onnxruntime", "cv2", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "min_confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "mode": {
                "enum": [
                    "layout",
                    "receipt",
                    "invoice",
                    "business_card",
                    "code",
                    "table",
                    "identifiers",
                    "batch",
                ]
            },
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        minimum = inputs.get("min_confidence", params.get("min_confidence", 0.5))
        mode = params.get("mode")
        if mode == "batch":
            return _batch(inputs, minimum)
        read = read_image(inputs["image"], minimum, words=mode == "layout")
        if mode is None:
            return read
        return _SHAPERS[mode](read, inputs)


def read_image(blob: Any, minimum: float, words: bool = False) -> dict[str, Any]:
    """The plain OCR output of one picture (see OcrEngine); ``words`` adds word boxes."""
    image = open_image(blob)
    if image.mode != "RGB":
        image = _on_white(image)
    with _LOCK:
        # No line-orientation classifier: on upright pages it turned correct lines upside
        # down (half a dense A4 page lost, bench/engines.py); open_image already turns
        # pictures upright from their EXIF orientation.
        result = _reader()(image, use_cls=False, return_word_box=words)
    word_lists = list(result.word_results or ()) if words else []
    lines = []
    for index, (text, score, box) in enumerate(
        zip(result.txts or (), result.scores or (), _as_list(result.boxes), strict=False)
    ):
        if score < minimum or not text.strip():
            continue
        line = {"text": text.strip(), "confidence": round(float(score), 4), "box": _corners(box)}
        if words:
            line["words"] = [
                {"text": word, "confidence": round(float(word_score), 4), "box": _corners(corners)}
                for word, word_score, corners in (
                    word_lists[index] if index < len(word_lists) else ()
                )
                if word.strip()
            ]
        lines.append(line)
    lines = _reading_order(lines)
    mean = sum(line["confidence"] for line in lines) / len(lines) if lines else 0.0
    return {
        "text": _join_rows(lines),
        "lines": lines,
        "line_count": len(lines),
        "confidence": round(mean, 4),
        "width": image.width,
        "height": image.height,
    }


def _corners(box: Any) -> list[list[int]]:
    return [[round(float(x)), round(float(y))] for x, y in box]


def _on_white(image: Any) -> Any:
    """RGB for the models; transparent areas become white paper rather than black."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGB", rgba.size, "white")
        paper.paste(rgba, mask=rgba.getchannel("A"))
        return paper
    return image.convert("RGB")


def _as_list(boxes: Any) -> list[Any]:
    return [] if boxes is None else list(boxes)


# Pictures per batch call: image, image_2, ..., image_5 (one OCR pass each, about a second).
MAX_BATCH = 5


def _batch(inputs: dict[str, Any], minimum: float) -> dict[str, Any]:
    names = ["image", *(f"image_{n}" for n in range(2, MAX_BATCH + 1))]
    given = [(name, inputs[name]) for name in names if inputs.get(name) is not None]
    pages = []
    for name, blob in given:
        try:
            read = read_image(blob, minimum)
        except EngineError as error:
            raise EngineError(f"{name}: {error.message}") from None
        pages.append(
            {
                "field": name,
                "text": read["text"],
                "line_count": read["line_count"],
                "confidence": read["confidence"],
                "width": read["width"],
                "height": read["height"],
            }
        )
    return {
        "text": "\n\n".join(page["text"] for page in pages if page["text"]),
        "images": pages,
        "image_count": len(pages),
        "line_count": sum(page["line_count"] for page in pages),
    }


_SHAPERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "layout": _layout,
    "receipt": _receipt,
    "invoice": _invoice,
    "business_card": _business_card,
    "code": _code,
    "table": _table,
    "identifiers": _identifiers,
}
