"""ocr.text on images rendered by the tests, with rapidocr's bundled models."""

import subprocess
import sys
from pathlib import Path

import pytest

for module in ("rapidocr", "onnxruntime", "cv2", "PIL"):
    pytest.importorskip(module, reason="the OCR engine needs requirements-models.txt")

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.documents.ocr import OcrEngine  # noqa: E402
from tests.engines.fixtures import solid_image, text_image  # noqa: E402

engine = OcrEngine()
ROOT = Path(__file__).resolve().parents[3]


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
        "from engines.documents.ocr import OcrEngine\n"
        "from tests.engines.fixtures import text_image\n"
        "print(OcrEngine().run({'image': text_image('OFFLINE 1')}, {})['text'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OFFLINE 1"


# --- modes: the shaping rules on synthetic lines (no model) ------------------------------


def line(text, x, y, width=None, height=20, confidence=0.99):
    """A read line whose box starts at (x, y); 10 px per character unless ``width`` is given."""
    width = width if width is not None else 10 * len(text)
    box = [[x, y], [x + width, y], [x + width, y + height], [x, y + height]]
    return {"text": text, "confidence": confidence, "box": box}


@pytest.fixture
def shaped(monkeypatch):
    """``shaped(mode, lines, **inputs)``: run a mode on lines as if the model had read them."""
    import engines.documents.ocr as ocr

    def run(mode, lines, **inputs):
        read = {
            "text": ocr._join_rows(lines),
            "lines": ocr._reading_order(lines),
            "line_count": len(lines),
            "confidence": 0.99,
            "width": 800,
            "height": 600,
        }
        monkeypatch.setattr(ocr, "read_image", lambda *args, **kwargs: read)
        return engine.run({"image": Blob(b"", "image/png"), **inputs}, {"mode": mode})

    return run


def column(*texts, x=10, step=30):
    return [line(text, x, 10 + index * step) for index, text in enumerate(texts)]


def test_receipt_items_quantities_totals_and_currency(shaped):
    output = shaped(
        "receipt",
        column(
            "GREEN GROCER",
            "12 Market Street",
            "Date 05.04.2026",
            "2 x Apples 3,00",
            "Bread 2,40",
            "Subtotal 5,40",
            "VAT 7% 0,38",
            "TOTAL EUR 5,78",
            "Card 5,78",
        ),
    )
    assert output["merchant"] == "GREEN GROCER" and output["date"] == "2026-04-05"
    assert output["items"] == [
        {"description": "Apples", "quantity": 2, "price": 3.0},
        {"description": "Bread", "quantity": 1, "price": 2.4},
    ]
    assert (output["subtotal"], output["tax"], output["total"]) == (5.4, 0.38, 5.78)
    assert output["currency"] == "EUR"


def test_receipt_without_a_total_line_takes_the_largest_amount(shaped):
    output = shaped("receipt", column("KIOSK", "Water 1.50", "Crisps 2.25", "$3.75"))
    assert output["total"] == 3.75 and output["currency"] == "USD"
    assert [item["description"] for item in output["items"]] == ["Water", "Crisps"]


@pytest.mark.parametrize(
    "written, iso",
    [
        ("2026-03-14", "2026-03-14"),
        ("14.03.2026", "2026-03-14"),
        ("03/14/2026", "2026-03-14"),
        ("14/03/26", "2026-03-14"),
        ("14 March 2026", "2026-03-14"),
        ("Mar 14, 2026", "2026-03-14"),
        ("31/02/2026", None),
    ],
)
def test_dates_in_common_formats(written, iso):
    from engines.documents.ocr_fields import _dates

    assert [found["iso"] for found in _dates(f"Date: {written}")] == ([iso] if iso else [])


@pytest.mark.parametrize(
    "written, value",
    [("1,234.56", 1234.56), ("1.234,56", 1234.56), ("12,50", 12.5), ("€ 7.05", 7.05)],
)
def test_amounts_in_either_decimal_style(written, value):
    from engines.documents.ocr_fields import _amounts

    assert _amounts(written) == [value]


def test_invoice_fields(shaped):
    output = shaped(
        "invoice",
        column(
            "ACME GmbH, USt-IdNr. DE 123 456 789",
            "Invoice no. 2026-0042",
            "Invoice date: 01/03/2026",
            "Due date: 31/03/2026",
            "PO #: 77812",
            "Net total 100.00",
            "VAT 19% 19.00",
            "Amount due 119.00 EUR",
            "IBAN DE89 3704 0044 0532 0130 00",
        ),
    )
    assert output["invoice_number"] == "2026-0042"
    assert (output["invoice_date"], output["due_date"]) == ("2026-03-01", "2026-03-31")
    assert output["order_references"] == [{"label": "po", "value": "77812"}]
    assert (output["subtotal"], output["tax"], output["total"]) == (100.0, 19.0, 119.0)
    assert output["vat_ids"] == ["DE123456789"] and output["currency"] == "EUR"
    assert output["ibans"] == ["DE89370400440532013000"]


def test_identifiers_check_iban_digits(shaped):
    output = shaped(
        "identifiers",
        column(
            "Pay to GB82 WEST 1234 5698 7654 32",
            "or GB83 WEST 1234 5698 7654 32",
            "Tracking number: 1Z999AA10123456784",
            "Questions? help@shop.example or www.shop.example/help",
            "Call +44 20 7946 0958 before 2026-05-01",
        ),
    )
    assert [(i["iban"], i["valid"]) for i in output["ibans"]] == [
        ("GB82WEST12345698765432", True),
        ("GB83WEST12345698765432", False),
    ]
    assert "check digits" in output["ibans"][1]["problem"]
    assert output["references"] == [{"label": "tracking", "value": "1Z999AA10123456784"}]
    assert output["emails"] == ["help@shop.example"]
    assert output["urls"] == ["www.shop.example/help"]
    assert output["phones"] == ["+44 20 7946 0958"] and output["dates"] == ["2026-05-01"]


def test_a_truncated_iban_is_reported_not_dropped(shaped):
    (iban,) = shaped("identifiers", column("IBAN DE89 3704 0044 0532"))["ibans"]
    assert iban["valid"] is False and iban["problem"].startswith("too short for DE")


def test_business_card_picks_the_biggest_name_and_labels_phones(shaped):
    lines = [
        line("Northwind Labs", 10, 10, height=18),
        line("Maria Garcia", 10, 40, height=30),
        line("Senior Data Engineer", 10, 80),
        line("M: +34 612 345 678", 10, 110),
        line("Fax: +34 91 123 4567", 10, 140),
        line("maria@northwind.example", 10, 170),
        line("Calle Mayor 5, 28013 Madrid", 10, 200),
    ]
    output = shaped("business_card", lines)
    assert (output["name"], output["title"]) == ("Maria Garcia", "Senior Data Engineer")
    assert output["company"] == "Northwind Labs"
    assert output["phones"] == [
        {"number": "+34 612 345 678", "type": "cell"},
        {"number": "+34 91 123 4567", "type": "fax"},
    ]
    assert output["emails"] == ["maria@northwind.example"]
    assert output["address"] == "Calle Mayor 5, 28013 Madrid"
    assert output["vcard"].startswith("BEGIN:VCARD\r\nVERSION:3.0\r\nN:Garcia;Maria;;;\r\n")
    assert "TEL;TYPE=cell:+34 612 345 678\r\n" in output["vcard"]
    assert "ADR;TYPE=work:;;Calle Mayor 5\\, 28013 Madrid;;;;\r\n" in output["vcard"]


def test_business_card_company_falls_back_to_the_email_domain(shaped):
    output = shaped("business_card", column("Tom Lee", "tom@brightpath.example"))
    assert output["company"] == "Brightpath" and output["name"] == "Tom Lee"


def test_code_indentation_comes_from_the_left_edges(shaped):
    lines = [
        line("for x in xs:", 20, 10),
        line("if x:", 60, 40),
        line("print(x)", 101, 70),
        line("done()", 20, 100),
    ]
    output = shaped("code", lines)
    assert output["code"] == "for x in xs:\n    if x:\n        print(x)\ndone()"
    exact = shaped("code", lines, indent_size=1)
    assert exact["code"].splitlines()[2] == " " * 8 + "print(x)"


def test_code_rejoins_pieces_of_one_row_with_their_spacing(shaped):
    output = shaped("code", [line("x =", 10, 10), line("1  # one", 70, 10)])
    assert output["code"] == "x =   1  # one"


def test_table_columns_from_overlapping_boxes_with_empty_cells(shaped):
    lines = [
        line("Name", 10, 10), line("Qty", 200, 10), line("Price", 300, 10),
        line("Apples", 10, 40), line("3", 210, 40), line("4.50", 300, 40),
        line("Gift card", 10, 70), line("25.00", 300, 70),
    ]  # fmt: skip
    output = shaped("table", lines)
    assert output["rows"] == [
        ["Name", "Qty", "Price"],
        ["Apples", "3", "4.50"],
        ["Gift card", "", "25.00"],
    ]
    assert output["csv"] == "Name,Qty,Price\nApples,3,4.50\nGift card,,25.00\n"
    assert (output["row_count"], output["column_count"]) == (3, 3)


def test_layout_splits_paragraphs_at_large_gaps(shaped):
    lines = [line("Dear Sam,", 10, 10), line("thanks for", 10, 35), line("Best", 10, 120)]
    output = shaped("layout", lines)
    assert output["paragraphs"] == ["Dear Sam, thanks for", "Best"]


# --- modes: the model for real -----------------------------------------------------------


def test_layout_gives_word_boxes_inside_their_line():
    output = engine.run({"image": text_image("MEET AT NOON")}, {"mode": "layout"})
    (read,) = output["lines"]
    assert [word["text"] for word in read["words"]] == ["MEET", "AT", "NOON"]
    assert output["word_count"] == 3
    line_left, line_right = read["box"][0][0], read["box"][1][0]
    lefts = [word["box"][0][0] for word in read["words"]]
    assert lefts == sorted(lefts) and line_left - 5 <= lefts[0] and lefts[-1] < line_right


def test_receipt_from_a_rendered_receipt():
    image = text_image(
        ["BAKERY 9", "Tea 2.50", "Scone 3.25", "TOTAL 5.75"], size=(700, 460), font_size=70
    )
    output = engine.run({"image": image}, {"mode": "receipt"})
    assert output["total"] == 5.75 and output["merchant"] == "BAKERY 9"
    assert [item["price"] for item in output["items"]] == [2.5, 3.25]


def test_batch_reads_each_picture_in_order_and_names_a_bad_one():
    output = engine.run(
        {"image": text_image("FIRST 1"), "image_2": None, "image_3": text_image("THIRD 3")},
        {"mode": "batch"},
    )
    assert [(p["field"], p["text"]) for p in output["images"]] == [
        ("image", "FIRST 1"),
        ("image_3", "THIRD 3"),
    ]
    assert output["text"] == "FIRST 1\n\nTHIRD 3" and output["image_count"] == 2
    with pytest.raises(EngineError, match="^image_2: The file is not an image"):
        engine.run(
            {"image": text_image("A 1"), "image_2": Blob(b"nope", "image/png")}, {"mode": "batch"}
        )
