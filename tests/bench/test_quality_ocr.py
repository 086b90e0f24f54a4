"""bench/quality/ocr.py's scoring and pages (the OCR itself takes minutes: run the bench)."""

import io

import pytest
from PIL import Image

from bench.quality import edit_distance, error_rate, ocr


@pytest.mark.parametrize(
    ("reference", "hypothesis", "distance"),
    [
        ("kitten", "sitting", 3),  # two substitutions and an insertion
        ("", "abc", 3),
        ("abc", "", 3),
        ("flaw", "lawn", 2),
        ("same", "same", 0),
        (["the", "red", "door"], ["the", "door"], 1),
    ],
)
def test_edit_distance(reference, hypothesis, distance):
    assert edit_distance(reference, hypothesis) == distance
    assert edit_distance(hypothesis, reference) == distance


def test_error_rate_is_pooled_over_the_reference_length():
    # 1 edit in 4 characters and 3 in 6: 4 of 10, not the mean of 0.25 and 0.5.
    assert error_rate([("abcd", "abed"), ("abcdef", "abc")]) == pytest.approx(0.4)
    assert error_rate([("ab", "abxyzw")]) == 2.0  # more extra characters than the reference
    assert error_rate([]) == 0.0


def test_character_errors_ignore_how_whitespace_is_laid_out_but_not_the_order():
    printed = "The ferry leaves at 7:15, weather permitting."
    assert ocr.character_errors(printed, "The ferry leaves\nat 7:15,  weather\n\npermitting.") == 0
    assert ocr.character_errors(printed, "The ferry leaves at 7:15. weather permitting") == 2
    assert ocr.character_errors("Holm Island", "Island Holm") == 10


def test_character_accuracy():
    assert ocr.character_accuracy(1, 11) == pytest.approx(1 - 1 / 11)
    assert ocr.character_accuracy(0, 5) == 1.0
    assert ocr.character_accuracy(30, 2) == 0.0  # a reading worse than nothing


def test_a_page_is_a4_wide_at_its_resolution_and_grows_with_its_text():
    one = Image.open(io.BytesIO(ocr.render(ocr.PARAGRAPHS[:1], None, 150).data))
    two = Image.open(io.BytesIO(ocr.render(ocr.PARAGRAPHS[:2], None, 150).data))
    sharp = Image.open(io.BytesIO(ocr.render(ocr.PARAGRAPHS[:1], None, 300).data))
    assert one.width == round(8.27 * 150) and sharp.width == round(8.27 * 300)
    assert two.height > one.height
    assert sharp.height == pytest.approx(2 * one.height, rel=0.05)


def test_every_font_gives_a_page_per_resolution_and_a_missing_font_is_skipped(monkeypatch):
    monkeypatch.setattr(ocr, "FONTS", (("Aileron", None), ("Gone", "/nonexistent/font.ttf")))
    made, missing = ocr.pages()
    assert [(page.font, page.dpi) for page in made] == [("Aileron", 150), ("Aileron", 300)]
    assert missing == ["Gone skipped: no /nonexistent/font.ttf"]
    assert made[0].text == " ".join(ocr.PARAGRAPHS[: ocr.PARAGRAPHS_PER_PAGE])
