"""PDFs and readers shared by the document engine tests."""

import io

from engines.blob import Blob


def page_texts(blob: Blob, password: str | None = None) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(blob.data))
    if password is not None:
        reader.decrypt(password)
    return [page.extract_text().strip() for page in reader.pages]


PAGES = ["Page one text.", "Page two text.", "Page three text.", "Page four text."]
