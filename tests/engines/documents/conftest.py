"""The four-page PDF that the documents.pdf and documents.file_statistics tests read."""

import pytest

from engines.blob import Blob
from tests.engines.documents.pdfs import PAGES
from tests.engines.fixtures import pdf_document


@pytest.fixture(scope="module")
def four_pages() -> Blob:
    return pdf_document(PAGES, title="Four", bookmarks=["One", "Two", "Three", "Four"])
