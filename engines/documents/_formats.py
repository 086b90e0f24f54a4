"""What a document is and how its bytes become text: format detection, zip guard, decoding."""

from __future__ import annotations

import io
import re
import zipfile

from engines.base import EngineError
from engines.blob import Blob

FORMATS = ("pdf", "docx", "epub", "html", "markdown", "text")

# DOCX and EPUB are zip files: refuse archives that would inflate beyond this.
_MAX_UNZIPPED_BYTES = 300 * 1024 * 1024
_MAX_ZIP_ENTRIES = 20_000

_CONTENT_TYPES = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/epub+zip": "epub",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}
_EXTENSIONS = {
    "pdf": "pdf",
    "docx": "docx",
    "epub": "epub",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "md": "markdown",
    "markdown": "markdown",
    "txt": "text",
    "text": "text",
}


def detect_format(blob: Blob) -> str:
    """The document's format: the bytes decide for binary formats, then type and name."""
    head = blob.data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_format(blob.data)
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        raise EngineError("Old Word (.doc) files are not supported: save the file as .docx.")
    if head.startswith(b"{\\rtf"):
        raise EngineError("RTF files are not supported: save the file as .docx or .txt.")
    content_type = blob.content_type.split(";")[0].strip().lower()
    extension = (blob.filename or "").rsplit(".", 1)[-1].lower() if blob.filename else ""
    declared = _CONTENT_TYPES.get(content_type) or _EXTENSIONS.get(extension)
    if declared in ("pdf", "docx", "epub"):
        raise EngineError(f"The file is not a valid {declared.upper()} document.")
    if declared in ("html", "markdown"):
        return declared
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise EngineError("The file is not a document format this tool reads.")
    sniff = head.lstrip()[:64].lower()
    if sniff.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in head.lower():
        return "html"
    return "text"


def _zip_format(data: bytes) -> str:
    names = set(_open_zip(data).namelist())
    if "word/document.xml" in names:
        return "docx"
    if "META-INF/container.xml" in names:
        return "epub"
    raise EngineError("The file is a zip archive but neither a DOCX nor an EPUB document.")


def _open_zip(data: bytes) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise EngineError("The file is a damaged zip archive (DOCX and EPUB are zips).") from None
    entries = archive.infolist()
    if len(entries) > _MAX_ZIP_ENTRIES or sum(e.file_size for e in entries) > _MAX_UNZIPPED_BYTES:
        raise EngineError("The document unpacks to more than this tool accepts.")
    return archive


# Too few bytes make charset-normalizer's guess a coin toss.
_MIN_BYTES_TO_GUESS = 2000


def _decode(data: bytes) -> str:
    """Text bytes as str: a BOM or valid UTF-8 wins; then a non-Latin code page when the
    bytes clearly are one, else Windows-1252 (Western European)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if len(data) >= _MIN_BYTES_TO_GUESS:
        try:
            from charset_normalizer import from_bytes
        except ImportError:
            pass
        else:
            best = from_bytes(data[:200_000]).best()
            if best is not None:
                guess = data.decode(best.encoding, errors="replace")
                if _mostly_non_latin(guess):
                    return guess
    return data.decode("cp1252", errors="replace")


def _mostly_non_latin(text: str) -> bool:
    """True for Cyrillic, Greek, Arabic, CJK... text. charset-normalizer tells those apart
    well, but among Latin code pages it often picks a Baltic or Central European one for
    French or German text, where Windows-1252 is the likelier truth."""
    letters = [char for char in text[:20_000] if char.isalpha()]
    return sum(ord(char) > 0x24F for char in letters) > len(letters) / 2


_SPACES_RE = re.compile(r"[ \t\u00a0\u200b]+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")


def _tidy(text: str) -> str:
    """One space between words, at most one blank line between paragraphs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES_RE.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES_RE.sub("\n\n", "\n".join(lines)).strip()
