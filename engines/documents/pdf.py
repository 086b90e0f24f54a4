"""PDF pages, metadata and passwords with pypdf: merge, split, extract, rotate, protect..."""

from __future__ import annotations

import io
import re
from typing import Any

from engines.base import Engine, EngineError, operations_schema
from engines.blob import Blob
from engines.documents._helpers import _pdf_reader, _safe

MAX_PDFS = 8
MAX_PARTS = 100
_PAGE_SPEC_RE = re.compile(r"^\s*(\d+)?\s*(-)?\s*(\d+)?\s*$")
_METADATA_KEYS = {
    "title": "/Title",
    "author": "/Author",
    "subject": "/Subject",
    "keywords": "/Keywords",
}


def page_numbers(spec: str, count: int) -> list[list[int]]:
    """Ranges such as "1-3, 5, 8-" as lists of 0-based page indexes, one list per range.

    An open range runs to the last page ("8-") or from the first ("-3"). Raises EngineError
    for a malformed range or a page the document does not have.
    """
    ranges = []
    for part in spec.split(","):
        if not part.strip():
            continue
        match = _PAGE_SPEC_RE.match(part)
        if not match or not (match.group(1) or match.group(3)):
            raise EngineError(f"{part.strip()!r} is not a page or a range like 2-5.")
        first = int(match.group(1) or 1)
        last = int(match.group(3) or count) if match.group(2) else first
        if not 1 <= first <= last:
            raise EngineError(f"The range {part.strip()!r} runs backwards or starts at 0.")
        if last > count:
            raise EngineError(f"The document has {count} pages; there is no page {last}.")
        ranges.append(list(range(first - 1, last)))
    if not ranges:
        raise EngineError("Name at least one page, e.g. 1-3, 5.")
    return ranges


def _pdf_blob(writer: Any, filename: str) -> Blob:
    buffer = io.BytesIO()
    writer.write(buffer)
    return Blob(buffer.getvalue(), "application/pdf", filename)


def _writer_from(reader: Any, indexes: list[int] | None = None) -> Any:
    from pypdf import PdfWriter

    writer = PdfWriter()
    pages = reader.pages
    for index in range(len(pages)) if indexes is None else indexes:
        writer.add_page(pages[index])
    metadata = {key: str(value) for key, value in (reader.metadata or {}).items() if value}
    if metadata:
        writer.add_metadata(metadata)
    return writer


def _pdf_date(value: Any) -> str | None:
    return value.isoformat() if value else None


class PdfEngine(Engine):
    """Pages, metadata and passwords of PDF files, with pypdf.

    Params: ``operation``: merge (``pdf`` and ``pdf_2`` to ``pdf_8`` in order), split
    (``ranges``: one PDF per range, or one per page when empty), extract (``pages``, kept in
    the order given), remove (``pages``), rotate (``pages``, ``angle``), metadata (read),
    edit_metadata (``title``, ``author``, ``subject``, ``keywords``: null keeps, "" clears),
    protect (``password``, ``allow_printing``, ``allow_copying``) and unlock (``password``).
    Output: ``pdf`` (Blob) or ``pdfs`` [Blob] with ``pages`` counts, or the metadata.
    """

    name = "documents.pdf"
    requires = ("pypdf",)
    params_schema = operations_schema(
        "merge", "split", "extract", "remove", "rotate", "metadata", "edit_metadata",
        "protect", "unlock",
    )  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        if operation in ("protect", "unlock") and not inputs.get("password"):
            raise EngineError("Give the password.")
        reader = _pdf_reader(inputs["pdf"], inputs["password"] if operation == "unlock" else None)
        return getattr(self, f"_{operation}")(reader, inputs)

    @staticmethod
    def _merge(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        from pypdf import PdfWriter

        readers = [reader]
        for index in range(2, MAX_PDFS + 1):
            blob = inputs.get(f"pdf_{index}")
            if blob is not None:
                try:
                    readers.append(_pdf_reader(blob))
                except EngineError as error:
                    raise EngineError(f"pdf_{index}: {error.message}") from None
        if len(readers) < 2:
            raise EngineError("Send at least two PDFs to merge (pdf and pdf_2).")
        writer = PdfWriter()
        for each in readers:
            writer.append(each)
        return {
            "pdf": _pdf_blob(writer, "merged.pdf"),
            "pages": len(writer.pages),
            "documents": len(readers),
        }

    @staticmethod
    def _split(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        spec = inputs["ranges"].strip()
        ranges = page_numbers(spec, count) if spec else [[index] for index in range(count)]
        if len(ranges) > MAX_PARTS:
            raise EngineError(f"A split makes at most {MAX_PARTS} files; name wider ranges.")
        parts = []
        for indexes in ranges:
            label = f"{indexes[0] + 1}" + (f"-{indexes[-1] + 1}" if len(indexes) > 1 else "")
            blob = _pdf_blob(_writer_from(reader, indexes), f"pages-{label}.pdf")
            parts.append({"pdf": blob, "pages": label, "page_count": len(indexes)})
        return {"parts": parts, "original_pages": count}

    @staticmethod
    def _extract(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        indexes = [index for part in page_numbers(inputs["pages"], count) for index in part]
        writer = _writer_from(reader, indexes)
        return {
            "pdf": _pdf_blob(writer, "extracted.pdf"),
            "pages": len(indexes),
            "original_pages": count,
        }

    @staticmethod
    def _remove(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        dropped = {index for part in page_numbers(inputs["pages"], count) for index in part}
        kept = [index for index in range(count) if index not in dropped]
        if not kept:
            raise EngineError("That would remove every page: keep at least one.")
        return {
            "pdf": _pdf_blob(_writer_from(reader, kept), "pages-removed.pdf"),
            "pages": len(kept),
            "original_pages": count,
            "removed": len(dropped),
        }

    @staticmethod
    def _rotate(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        spec = inputs["pages"].strip()
        chosen = (
            {index for part in page_numbers(spec, count) for index in part}
            if spec
            else set(range(count))
        )
        writer = _writer_from(reader)
        for index in sorted(chosen):
            writer.pages[index].rotate(inputs["angle"])
        return {
            "pdf": _pdf_blob(writer, "rotated.pdf"),
            "pages": count,
            "rotated": len(chosen),
        }

    @staticmethod
    def _metadata(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        info = reader.metadata or {}
        first = reader.pages[0] if len(reader.pages) else None
        width, height = (
            (float(first.mediabox.width), float(first.mediabox.height)) if first else (0, 0)
        )
        return {
            **{name: _text_or_none(info.get(key)) for name, key in _METADATA_KEYS.items()},
            "creator": _text_or_none(info.get("/Creator")),
            "producer": _text_or_none(info.get("/Producer")),
            "created": _pdf_date(_safe(lambda: info.creation_date)),
            "modified": _pdf_date(_safe(lambda: info.modification_date)),
            "pages": len(reader.pages),
            "pdf_version": reader.pdf_header.removeprefix("%PDF-"),
            "encrypted": reader.is_encrypted,
            "page_width_mm": round(width * 25.4 / 72, 1),
            "page_height_mm": round(height * 25.4 / 72, 1),
            "page_size": _paper_name(width, height),
            "bookmarks": len(
                [item for item in _safe(lambda: reader.outline) or [] if not isinstance(item, list)]
            ),
        }

    @staticmethod
    def _edit_metadata(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        writer = _writer_from(reader)
        changes = {
            key: inputs[name]
            for name, key in _METADATA_KEYS.items()
            if inputs.get(name) is not None
        }
        if not changes:
            raise EngineError("Give at least one field to change (title, author, subject...).")
        writer.add_metadata(changes)
        metadata = writer.metadata or {}
        return {
            "pdf": _pdf_blob(writer, "edited.pdf"),
            **{name: _text_or_none(metadata.get(key)) for name, key in _METADATA_KEYS.items()},
        }

    @staticmethod
    def _protect(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        from pypdf.constants import UserAccessPermissions as Allow

        writer = _writer_from(reader)
        permissions = Allow(0)
        if inputs["allow_printing"]:
            permissions |= Allow.PRINT | Allow.PRINT_TO_REPRESENTATION
        if inputs["allow_copying"]:
            permissions |= Allow.EXTRACT | Allow.EXTRACT_TEXT_AND_GRAPHICS
        writer.encrypt(
            user_password=inputs["password"],
            owner_password=None,
            algorithm="AES-256",
            permissions_flag=permissions,
        )
        return {
            "pdf": _pdf_blob(writer, "protected.pdf"),
            "pages": len(writer.pages),
            "encryption": "AES-256",
        }

    @staticmethod
    def _unlock(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        was_encrypted = reader.is_encrypted
        writer = _writer_from(reader)
        return {
            "pdf": _pdf_blob(writer, "unlocked.pdf"),
            "pages": len(writer.pages),
            "was_encrypted": was_encrypted,
        }


def _text_or_none(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


_PAPER_SIZES = {"A3": (842, 1191), "A4": (595, 842), "A5": (420, 595), "Letter": (612, 792),
                "Legal": (612, 1008), "Tabloid": (792, 1224)}  # fmt: skip


def _paper_name(width: float, height: float) -> str | None:
    short, long = sorted((width, height))
    for name, (paper_short, paper_long) in _PAPER_SIZES.items():
        if abs(short - paper_short) <= 3 and abs(long - paper_long) <= 3:
            return name + (" landscape" if width > height else "")
    return None
