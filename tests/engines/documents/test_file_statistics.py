"""documents.file_statistics on a PDF and a DOCX built by the tests."""

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines import get_engine  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from tests.engines.fixtures import docx_document  # noqa: E402


def test_statistics_of_a_pdf(four_pages):
    output = get_engine("documents.file_statistics").run(
        {"document": four_pages, "words_per_minute": 6}, {}
    )
    assert (output["format"], output["pages"], output["words"]) == ("pdf", 4, 12)
    assert (output["words_per_page"], output["reading_minutes"]) == (3.0, 2.0)
    assert (output["headings"], output["tables"], output["images"]) == (4, None, 0)


def test_statistics_of_a_docx():
    blob = docx_document([("Goals", ["Ship the beta now."])], table=[["a", "b"], ["c", "d"]])
    output = get_engine("documents.file_statistics").run(
        {"document": blob, "words_per_minute": 238}, {}
    )
    assert (output["format"], output["headings"], output["tables"]) == ("docx", 1, 1)
    assert output["words"] == 9 and output["pages"] == 1  # as python-docx's template says


def test_statistics_refuse_other_formats():
    with pytest.raises(EngineError, match="PDF and DOCX"):
        get_engine("documents.file_statistics").run(
            {"document": Blob(b"just text", "text/plain"), "words_per_minute": 238}, {}
        )
