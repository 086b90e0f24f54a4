"""Opening PDF and DOCX files for the document engines: pypdf readers, python-docx documents."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engines.base import EngineError
from engines.blob import Blob
from engines.documents._formats import _open_zip


def _pdf_reader(blob: Blob, password: str | None = None) -> Any:
    """Open a PDF (empty-password encryption is lifted; ``password`` opens the rest)."""
    from pypdf import PasswordType, PdfReader

    if not blob.data:
        raise EngineError("The PDF is empty.")
    if b"%PDF-" not in blob.data[:1024]:
        raise EngineError("The file is not a PDF.")
    with pdf_errors():
        reader = PdfReader(io.BytesIO(blob.data), strict=False)
        if reader.is_encrypted:
            if password is not None:
                if reader.decrypt(password) == PasswordType.NOT_DECRYPTED:
                    raise EngineError("The password does not open this PDF.")
            else:
                _unlock(reader)
        len(reader.pages)  # reads the page tree: a damaged one fails here
    return reader


# What one request may make pypdf decode and parse, tighter than its own defaults (75 MB a
# stream, 2 million tokens a content stream). Parsed, a content stream holds about 140 bytes
# per token (bench/decoders.py: 7 KB of PDF whose one page parses into 1.3 million tokens grew
# the process by 180 MB in 10 s, 480,000 tokens by 67 MB): 500,000 tokens stays near 70 MB,
# some 50 times a dense page of text. Nothing here renders pages to pictures: no page size or
# resolution matters.
_PYPDF_LIMITS = {
    "stream_parsing_work_maximum_count": 500_000,
    "zlib_maximum_output_length": 25_000_000,
    "lzw_maximum_output_length": 25_000_000,
    "run_length_maximum_output_length": 25_000_000,
    "brotli_maximum_output_length": 25_000_000,
    "array_based_stream_maximum_output_length": 25_000_000,
}
# The page content (decoded drawing instructions) a document may have read in one request,
# all pages together: parsing runs at about 0.5 MB a second, so this bounds the time too.
MAX_CONTENT_BYTES = 20_000_000


@contextmanager
def pdf_errors() -> Iterator[None]:
    """pypdf's failures on a file as the engines' error: encryption it cannot open, a
    damaged file, a structure nested too deeply or past the limits (``_PYPDF_LIMITS``, in
    force for what runs inside)."""
    from pypdf import apply_configuration
    from pypdf.errors import DependencyError, LimitReachedError, PdfReadError

    try:
        with apply_configuration(**_PYPDF_LIMITS):
            yield
    except EngineError:
        raise
    except LimitReachedError as error:
        raise EngineError(
            f"The PDF is past what this tool reads ({error}): a content stream may parse into "
            f"{_PYPDF_LIMITS['stream_parsing_work_maximum_count']:,} tokens and decode to "
            f"{_PYPDF_LIMITS['zlib_maximum_output_length'] / 1e6:g} MB at most."
        ) from None
    except DependencyError:
        raise EngineError("The PDF uses encryption this service cannot open.") from None
    except (PdfReadError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError):
        raise EngineError("The PDF is damaged and cannot be read.") from None
    except RecursionError:
        raise EngineError("The PDF's structure is nested too deeply to read.") from None


def page_texts(reader: Any, max_pages: int | None = None, *, tolerant: bool = False) -> list[str]:
    """The text of each page in order (of the first ``max_pages``), read within
    ``pdf_errors``; EngineError once the pages read hold more than MAX_CONTENT_BYTES of
    content, before the page past it is parsed. ``tolerant``: a page pypdf fails on reads as
    empty instead."""
    texts = []
    used = 0
    with pdf_errors():
        for number, page in enumerate(reader.pages[:max_pages], start=1):
            contents = _safe(page.get_contents) if tolerant else page.get_contents()
            used += len(contents.get_data()) if contents is not None else 0
            if used > MAX_CONTENT_BYTES:
                raise EngineError(
                    f"The PDF's pages 1 to {number} hold {used / 1e6:,.1f} MB of drawing "
                    f"instructions; the most this tool reads is {MAX_CONTENT_BYTES / 1e6:g} MB "
                    "(about a thousand dense pages of text). Send fewer pages."
                )
            texts.append((_safe(page.extract_text) if tolerant else page.extract_text()) or "")
    return texts


def _unlock(reader: Any) -> None:
    from pypdf import PasswordType

    # Many PDFs are encrypted only to restrict printing or copying, with an empty password.
    if reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise EngineError("The PDF is password-protected: remove the password and try again.")


def _safe(read: Any) -> Any:
    """A value pypdf may fail to parse in a sloppy file: None instead of an error."""
    try:
        return read()
    except Exception:
        return None


def _open_docx(data: bytes) -> Any:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    _open_zip(data)
    try:
        return docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile):
        raise EngineError("The DOCX file is damaged and cannot be read.") from None
    except Exception as error:  # lxml's XMLSyntaxError and friends
        if type(error).__module__.startswith(("lxml", "docx")):
            raise EngineError("The DOCX file is damaged and cannot be read.") from None
        raise


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else 0


def _table_rows(table: Any) -> list[str]:
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # merged cells repeat their text
                cells.append(text)
        if any(cells):
            rows.append(" | ".join(cells))
    return rows
