"""Binary tool inputs (images, audio, documents) as engines receive them: a ``Blob``.

A binary field takes a ``data:`` URI (base64 or percent-encoded), bare base64 (standard or
URL-safe, padding optional) or an http(s) URL, fetched through the SSRF guard
(``services.fetch``); multipart uploads come through ``blob_from_upload``. A missing or
generic content type is sniffed from the magic bytes, then checked against the field's
allowed types. Every refusal is a ``BinaryInputError`` carrying the field and 422 or 413.
"""

import base64
import binascii
import io
import re
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote_to_bytes

from werkzeug.datastructures import FileStorage

from engines.blob import Blob
from services.fetch import GENERIC_TYPES, FetchRefused, FetchTooLarge, fetch, type_allowed

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]*={0,2}$")
_WHITESPACE = re.compile(r"\s+")
_TO_STANDARD = str.maketrans("-_", "+/")


class BinaryInputError(Exception):
    """A binary field's value was refused; ``status`` is 422 or 413."""

    def __init__(self, field: str, message: str, status: int = 422):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


def decode_binary(
    value,
    *,
    field: str,
    max_bytes: int,
    allowed_types: Iterable[str] | str | None,
) -> Blob:
    """The bytes a field's value stands for, typed and within ``max_bytes``.

    Raises BinaryInputError (422 for a malformed or refused value or a wrong type, 413 past
    ``max_bytes``). ``allowed_types`` are patterns such as ``image/*``; None allows any.
    """
    if not isinstance(value, str):
        raise BinaryInputError(field, "Send a URL, a data: URI or base64 text.")
    text = value.strip()
    if not text:
        raise BinaryInputError(field, "The value is empty.")
    if text[:5].lower() == "data:":
        data, declared, filename = _from_data_uri(text, field, max_bytes)
    elif _SCHEME.match(text):
        return _from_url(text, field, max_bytes, allowed_types)
    else:
        data, declared, filename = _from_base64(text, field, max_bytes), None, None
    return _typed(data, declared, filename, field, max_bytes, allowed_types)


def blob_from_upload(
    file_storage: FileStorage | None,
    *,
    field: str,
    max_bytes: int,
    allowed_types: Iterable[str] | str | None,
) -> Blob:
    """A multipart upload as a Blob; reads at most ``max_bytes + 1`` bytes of it."""
    if file_storage is None:
        raise BinaryInputError(field, "No file was uploaded in this field.")
    data = file_storage.stream.read(max_bytes + 1)
    name = PurePosixPath((file_storage.filename or "").replace("\\", "/")).name or None
    return _typed(data, file_storage.mimetype, name, field, max_bytes, allowed_types)


def sniff_type(data: bytes) -> str | None:
    """The content type the magic bytes at the start of ``data`` show, or None."""
    head = data[:64]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    if head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in (12, 40, 52, 56, 108, 124):
        return "image/bmp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_type(data)
    if head.startswith(b"ID3") or _mpeg_layer3_frame(head):
        return "audio/mpeg"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        # Matroska's EBML header names its DocType; WebM is the web's subset.
        return "video/webm" if b"webm" in head else "video/x-matroska"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        return "video/quicktime" if brand == b"qt  " else "video/mp4"
    return None


def _from_data_uri(text: str, field: str, max_bytes: int) -> tuple[bytes, str | None, str | None]:
    meta, comma, payload = text[5:].partition(",")
    if not comma:
        raise BinaryInputError(field, "The data: URI has no comma before its data.")
    params = [part.strip() for part in meta.split(";")]
    declared = params[0].lower() or None
    is_base64 = len(params) > 1 and params[-1].lower() == "base64"
    filename = None
    for param in params[1:]:
        name, _, param_value = param.partition("=")
        if name.lower() in ("name", "filename") and param_value:
            filename = PurePosixPath(unquote_to_bytes(param_value).decode("utf-8", "replace")).name
    if is_base64:
        return _from_base64(payload, field, max_bytes), declared, filename
    if len(payload) > 3 * max_bytes:  # each byte takes 1 to 3 characters percent-encoded
        raise _too_large(field, max_bytes)
    return unquote_to_bytes(payload), declared, filename


def _from_base64(text: str, field: str, max_bytes: int) -> bytes:
    compact = _WHITESPACE.sub("", text)
    # Refuse before decoding what would be too large anyway (4 characters carry 3 bytes).
    if len(compact) * 3 // 4 > max_bytes + 2:
        raise _too_large(field, max_bytes)
    if not _BASE64.match(compact):
        raise BinaryInputError(field, "This is not base64: send a URL, a data: URI or base64 text.")
    unpadded = compact.rstrip("=").translate(_TO_STANDARD)
    if len(unpadded) % 4 == 1:
        raise BinaryInputError(field, "The base64 text is truncated.")
    try:
        return base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), validate=True)
    except binascii.Error as error:
        raise BinaryInputError(field, f"The base64 text is malformed: {error}.") from None


def _from_url(url: str, field: str, max_bytes: int, allowed_types) -> Blob:
    if not url.lower().startswith(("http://", "https://")):
        raise BinaryInputError(field, "Only http and https URLs can be fetched.")
    try:
        blob = fetch(url, max_bytes=max_bytes, allowed_types=allowed_types)
    except FetchTooLarge:
        raise _too_large(field, max_bytes) from None
    except FetchRefused as refused:
        raise BinaryInputError(field, refused.message) from None
    return _typed(blob.data, blob.content_type, blob.filename, field, max_bytes, allowed_types)


def _typed(data, declared, filename, field, max_bytes, allowed_types) -> Blob:
    if len(data) > max_bytes:
        raise _too_large(field, max_bytes)
    if not data:
        raise BinaryInputError(field, "The file is empty.")
    content_type = (declared or "").split(";")[0].strip().lower()
    if content_type in GENERIC_TYPES:
        content_type = sniff_type(data) or "application/octet-stream"
    if not type_allowed(content_type, allowed_types):
        expected = " or ".join([allowed_types] if isinstance(allowed_types, str) else allowed_types)
        if content_type == "application/octet-stream":
            message = f"The kind of file could not be told from its bytes; send {expected}."
        else:
            message = f"This is {content_type}; send {expected}."
        raise BinaryInputError(field, message)
    return Blob(data, content_type, filename or None)


def _too_large(field: str, max_bytes: int) -> BinaryInputError:
    return BinaryInputError(
        field, f"The file is larger than {_size(max_bytes)}, the most accepted.", 413
    )


def _size(count: int) -> str:
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def _zip_type(data: bytes) -> str:
    """EPUB (its ``mimetype`` entry says so), DOCX (``word/document.xml``) or a plain zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            small = "mimetype" in names and archive.getinfo("mimetype").file_size <= 64
            if small and archive.read("mimetype").strip() == b"application/epub+zip":
                return "application/epub+zip"
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError, zlib.error):
        return "application/zip"  # truncated, encrypted or odd: it is still a zip
    if "word/document.xml" in names:
        return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    return "application/zip"


def _mpeg_layer3_frame(head: bytes) -> bool:
    """An MPEG audio frame header: 11 sync bits, a known version, layer III."""
    if len(head) < 2 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version, layer = (head[1] >> 3) & 0b11, (head[1] >> 1) & 0b11
    return version != 0b01 and layer == 0b01
