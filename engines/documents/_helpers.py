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


@contextmanager
def pdf_errors() -> Iterator[None]:
    """pypdf's failures on a file as the engines' error: encryption it cannot open, a
    damaged file, a structure nested too deeply."""
    from pypdf.errors import DependencyError, PdfReadError

    try:
        yield
    except EngineError:
        raise
    except DependencyError:
        raise EngineError("The PDF uses encryption this service cannot open.") from None
    except (PdfReadError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError):
        raise EngineError("The PDF is damaged and cannot be read.") from None
    except RecursionError:
        raise EngineError("The PDF's structure is nested too deeply to read.") from None


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
