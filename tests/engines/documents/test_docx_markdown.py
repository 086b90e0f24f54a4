"""documents.docx_markdown: Word documents built by the tests, as Markdown."""

import io

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines import get_engine  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from tests.engines.fixtures import pdf_document  # noqa: E402


def test_docx_becomes_markdown():
    import docx

    document = docx.Document()
    document.add_heading("Goals", level=1)
    paragraph = document.add_paragraph("Ship ")
    paragraph.add_run("now").bold = True
    paragraph.add_run(" please").italic = True
    document.add_paragraph("First", style="List Bullet")
    document.add_paragraph("Nested", style="List Bullet 2")
    document.add_paragraph("Step", style="List Number")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [["A", "B"], ["1", "2|3"]], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    blob = Blob(buffer.getvalue(), "application/octet-stream", "plan.docx")
    output = get_engine("documents.docx_markdown").run({"document": blob}, {})
    assert output["markdown"] == (
        "# Goals\n\nShip **now** *please*\n\n- First\n  - Nested\n1. Step\n\n"
        "| A | B |\n| --- | --- |\n| 1 | 2\\|3 |\n"
    )
    assert (output["headings"], output["list_items"], output["tables"]) == (1, 3, 1)


def test_docx_to_markdown_refuses_a_pdf():
    with pytest.raises(EngineError, match="reads DOCX"):
        get_engine("documents.docx_markdown").run({"document": pdf_document(["x"])}, {})
