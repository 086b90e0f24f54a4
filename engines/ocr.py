"""Optical character recognition with RapidOCR (PP-OCR models on onnxruntime).

Only the models inside the rapidocr wheel are used, named by path: any other model choice
(another language, another size) makes rapidocr download it at run time. Those models read
Chinese and English (Latin letters, digits, punctuation).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from engines.base import Engine, load_once
from engines.images import open_image

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
    """Reads the text of an image.

    Input: ``image`` (Blob). Optional ``min_confidence`` (0-1, default 0.5) drops weaker lines.
    Output: ``text`` (lines in reading order, one per line; lines side by side on one row are
    joined with a space), ``lines`` (text, confidence, box as four [x, y] corners clockwise from
    top left, in pixels of the upright image), ``line_count``, ``confidence`` (mean over lines,
    0 when none), ``width`` and ``height``. An image without text gives empty text, not an error.
    """

    name = "ocr.text"
    requires = ("rapidocr", "onnxruntime", "cv2", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"min_confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        image = open_image(inputs["image"])
        if image.mode != "RGB":
            image = _on_white(image)
        minimum = inputs.get("min_confidence", params.get("min_confidence", 0.5))
        with _LOCK:
            result = _reader()(image)
        lines = []
        for text, score, box in zip(
            result.txts or (), result.scores or (), _as_list(result.boxes), strict=False
        ):
            if score < minimum or not text.strip():
                continue
            corners = [[round(float(x)), round(float(y))] for x, y in box]
            lines.append(
                {"text": text.strip(), "confidence": round(float(score), 4), "box": corners}
            )
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


def _rows(lines: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group lines whose vertical centres fall within half a line height of each other."""
    rows: list[list[dict[str, Any]]] = []
    for line in sorted(lines, key=_centre_y):
        if rows:
            previous = rows[-1][-1]
            tolerance = _height(previous) / 2
            if abs(_centre_y(line) - _centre_y(previous)) <= tolerance:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda line: min(x for x, _ in line["box"])) for row in rows]


def _reading_order(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for row in _rows(lines) for line in row]


def _join_rows(lines: list[dict[str, Any]]) -> str:
    return "\n".join(" ".join(line["text"] for line in row) for row in _rows(lines))


def _centre_y(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return (min(ys) + max(ys)) / 2


def _height(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return max(max(ys) - min(ys), 1)


ENGINES = (OcrEngine(),)
