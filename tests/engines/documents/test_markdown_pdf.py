"""documents.markdown_pdf: Markdown typeset as a PDF."""

import io

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines import get_engine  # noqa: E402
from engines.base import EngineError  # noqa: E402
from tests.engines.documents.pdfs import page_texts  # noqa: E402


def markdown_pdf(text: str, **inputs) -> dict:
    settings = {"title": "", "page_size": "a4", "font": "helvetica", "font_size": 11, **inputs}
    return get_engine("documents.markdown_pdf").run({"text": text, **settings}, {})


def test_markdown_becomes_a_pdf_with_its_structure():
    text = "# Plan\n\nShip **on Friday** \u2014 \u201cfinally\u201d.\n\n- Freeze\n- Deploy\n"
    output = markdown_pdf(text, title="Launch")
    (page,) = page_texts(output["pdf"])
    assert page.splitlines()[:3] == ["Launch", "Plan", 'Ship on Friday -- "finally".']
    assert "Freeze" in page and "Deploy" in page and output["replaced_characters"] == 0


def test_the_same_markdown_makes_the_same_pdf():
    assert markdown_pdf("Hello")["pdf"].data == markdown_pdf("Hello")["pdf"].data


def test_characters_outside_latin_1_are_counted_and_replaced():
    output = markdown_pdf("Привет and 你好")
    assert output["replaced_characters"] == 8 and "???" in page_texts(output["pdf"])[0]


def test_long_text_flows_onto_more_pages_and_letter_paper_is_letter():
    from pypdf import PdfReader

    output = markdown_pdf(
        "\n\n".join(f"Paragraph {n} " * 30 for n in range(60)), page_size="letter"
    )
    reader = PdfReader(io.BytesIO(output["pdf"].data))
    assert output["pages"] == len(reader.pages) > 3
    assert round(float(reader.pages[0].mediabox.width)) == 612


def test_blank_markdown_is_refused():
    with pytest.raises(EngineError, match="no text"):
        markdown_pdf("\u4f60\u200b"[:0] + " \n ")
