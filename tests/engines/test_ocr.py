"""ocr.text on images rendered by the tests, with rapidocr's bundled models."""

import subprocess
import sys
from pathlib import Path

import pytest

for module in ("rapidocr", "onnxruntime", "cv2", "PIL"):
    pytest.importorskip(module, reason="the OCR engine needs requirements-models.txt")

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.ocr import OcrEngine  # noqa: E402
from tests.engines.fixtures import solid_image, text_image  # noqa: E402

engine = OcrEngine()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hello():
    """The OCR of one rendered line, shared: the first call also loads the models."""
    return engine.run({"image": text_image("HELLO OCR 2026")}, {})


def test_reads_rendered_text(hello):
    assert hello["text"] == "HELLO OCR 2026"
    assert hello["line_count"] == 1
    assert (hello["width"], hello["height"]) == (900, 200)


def test_each_line_has_its_confidence_and_box(hello):
    (line,) = hello["lines"]
    assert line["text"] == "HELLO OCR 2026"
    assert 0.9 <= line["confidence"] <= 1
    assert hello["confidence"] == line["confidence"]
    (left, top), (right, _), (_, bottom), _ = line["box"]
    # The text was drawn from (30, 30), 80 px high: the box must sit around it.
    assert 0 <= left < 60 and 10 <= top < 70 and 400 < right < 900 and 80 < bottom < 200


def test_lines_come_in_reading_order_and_a_row_is_joined():
    image = text_image(["FIRST LINE", "SECOND 2"], size=(900, 320), font_size=70)
    output = engine.run({"image": image}, {})
    assert output["text"] == "FIRST LINE\nSECOND 2"
    assert [line["text"] for line in output["lines"]] == ["FIRST LINE", "SECOND 2"]


def test_text_on_a_transparent_background_is_read_on_white():
    image = text_image("CLEAR 42", size=(600, 160), mode="RGBA", background=(0, 0, 0, 0))
    assert engine.run({"image": image}, {})["text"] == "CLEAR 42"


def test_jpeg_input_is_read():
    assert engine.run({"image": text_image("JPEG 7", fmt="JPEG")}, {})["text"] == "JPEG 7"


def test_an_image_without_text_gives_empty_text():
    output = engine.run({"image": solid_image(300, 200, color="white")}, {})
    assert output == {
        "text": "",
        "lines": [],
        "line_count": 0,
        "confidence": 0.0,
        "width": 300,
        "height": 200,
    }


def test_min_confidence_drops_weaker_lines(hello):
    strict = hello["lines"][0]["confidence"] + 0.0001
    output = engine.run({"image": text_image("HELLO OCR 2026"), "min_confidence": strict}, {})
    assert (output["text"], output["lines"]) == ("", [])


@pytest.mark.parametrize(
    "blob",
    [Blob(b"%PDF-1.4 not an image", "image/png"), Blob(b"", "image/jpeg")],
    ids=["pdf-bytes", "empty"],
)
def test_a_file_that_is_not_an_image_is_refused(blob):
    with pytest.raises(EngineError, match="not an image"):
        engine.run({"image": blob}, {})


def test_the_models_load_and_run_with_the_network_blocked():
    """No run-time download: a fresh process with every socket connection refused still reads."""
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs): raise OSError('network blocked by the test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from engines.ocr import OcrEngine\n"
        "from tests.engines.fixtures import text_image\n"
        "print(OcrEngine().run({'image': text_image('OFFLINE 1')}, {})['text'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OFFLINE 1"
