"""images.qr (QR codes)."""

import pytest

pytest.importorskip("PIL", reason="the image engines need requirements-models.txt")
pytest.importorskip("qrcode", reason="the QR engine needs requirements-models.txt")

from engines.base import EngineError  # noqa: E402
from engines.images.qr import QrCodeEngine  # noqa: E402
from tests.engines.images.pictures import decoded  # noqa: E402

qr = QrCodeEngine()


# --- images.qr ------------------------------------------------------------------------------


def test_qr_code_is_a_png_of_the_requested_size():
    output = qr.run({"data": "https://example.com/a", "size": 300}, {})
    image = decoded(output["image"])
    assert (image.format, image.size) == ("PNG", (300, 300))
    assert output["image"].content_type == "image/png"
    assert (output["width"], output["height"], output["error_correction"]) == (300, 300, "M")


def test_qr_code_is_deterministic():
    first = qr.run({"data": "same input"}, {})["image"].data
    assert qr.run({"data": "same input"}, {})["image"].data == first


def test_qr_code_decodes_back_to_its_data():
    cv2 = pytest.importorskip("cv2")
    import numpy

    output = qr.run({"data": "https://example.com/offline?x=1", "error_correction": "H"}, {})
    pixels = numpy.array(decoded(output["image"]).convert("L"))
    text, _, _ = cv2.QRCodeDetector().detectAndDecode(pixels)
    assert text == "https://example.com/offline?x=1"


def test_qr_code_uses_the_colours_asked_for():
    output = qr.run({"data": "x", "fill_color": "#ff0000", "back_color": "yellow"}, {})
    colours = {colour for _, colour in decoded(output["image"]).getcolors()}
    assert colours == {(255, 0, 0), (255, 255, 0)}


def test_higher_error_correction_needs_a_bigger_code():
    data = "error correction costs modules " * 3
    low = qr.run({"data": data, "error_correction": "L"}, {})
    high = qr.run({"data": data, "error_correction": "H"}, {})
    assert high["version"] > low["version"]
    assert high["modules"] > low["modules"]


def test_a_tool_prefix_is_prepended_to_the_data():
    cv2 = pytest.importorskip("cv2")
    import numpy

    output = qr.run({"data": "+15551234567"}, {"prefix": "tel:"})
    pixels = numpy.array(decoded(output["image"]).convert("L"))
    assert cv2.QRCodeDetector().detectAndDecode(pixels)[0] == "tel:+15551234567"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"data": ""}, "nothing to encode"),
        ({"data": "x" * 3000, "error_correction": "H"}, "too long for a QR code"),
        ({"data": "x", "fill_color": "not-a-colour"}, "Unknown colour"),
        ({"data": "x" * 500, "size": 50}, "modules a side"),
    ],
)
def test_qr_code_refusals(inputs, message):
    with pytest.raises(EngineError, match=message):
        qr.run(inputs, {})
