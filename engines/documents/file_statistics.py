"""Facts about a PDF or DOCX file: pages, words, images, tables, headings, reading time."""

from __future__ import annotations

import re
from typing import Any

from engines import _text
from engines.base import Engine, EngineError
from engines.blob import Blob
from engines.documents._formats import _open_zip, _tidy, detect_format
from engines.documents._helpers import (
    _heading_level,
    _open_docx,
    _pdf_reader,
    _safe,
    _table_rows,
    page_texts,
)


class DocumentStatisticsEngine(Engine):
    """Measures a PDF or DOCX file: pages, words, characters, images, tables, headings and
    reading time. DOCX pages come from the page count Word saved (null when absent)."""

    name = "documents.file_statistics"
    requires = ("pypdf", "docx", "lxml")

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        blob: Blob = inputs["document"]
        fmt = detect_format(blob)
        if fmt not in ("pdf", "docx"):
            raise EngineError("This tool reads PDF and DOCX files.")
        facts = self._pdf(blob) if fmt == "pdf" else self._docx(blob)
        text = _tidy(facts.pop("text"))
        words = len(_text.words(text))
        pages = facts["pages"]
        return {
            "format": fmt,
            **facts,
            "words": words,
            "characters": len(text),
            "words_per_page": round(words / pages, 1) if pages else None,
            "reading_minutes": round(words / inputs["words_per_minute"], 1),
        }

    @staticmethod
    def _pdf(blob: Blob) -> dict[str, Any]:
        reader = _pdf_reader(blob)
        texts = page_texts(reader, tolerant=True)  # bounded: see _helpers.MAX_CONTENT_BYTES
        images = sum(len(_safe(lambda page=page: page.images) or []) for page in reader.pages)
        return {
            "text": "\n\n".join(texts),
            "pages": len(reader.pages),
            "images": images,
            "tables": None,
            "headings": len(
                [i for i in _safe(lambda: reader.outline) or [] if not isinstance(i, list)]
            ),
        }

    @staticmethod
    def _docx(blob: Blob) -> dict[str, Any]:
        from docx.table import Table

        document = _open_docx(blob.data)
        texts, tables, headings = [], 0, 0
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                tables += 1
                texts.extend(_table_rows(item))
            else:
                texts.append(item.text)
                headings += bool(_heading_level(item.style.name if item.style else ""))
        images = sum(1 for rel in document.part.rels.values() if rel.reltype.endswith("/image"))
        return {
            "text": "\n\n".join(texts),
            "pages": _docx_saved_pages(blob.data),
            "images": images,
            "tables": tables,
            "headings": headings,
        }


def _docx_saved_pages(data: bytes) -> int | None:
    """The page count Word wrote in docProps/app.xml the last time it saved the file."""
    archive = _open_zip(data)
    try:
        app = archive.read("docProps/app.xml").decode("utf-8", "replace")
    except KeyError:
        return None
    match = re.search(r"<Pages>(\d+)</Pages>", app)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None
