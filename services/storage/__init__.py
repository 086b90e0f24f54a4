"""One interface for generated files (images, audio, video): put, find, read, stream, delete,
url_for.

Every file has a row in ``stored_files`` (id, account, run, content type, size, SHA-256, name,
time), so access rules, ETags and listings never depend on where its bytes are. The bytes go
to one backend, chosen by configuration and checked at start-up (``init_app``):

- the database (the default), in the row's ``data`` column: web and worker dynos share no
  disk, and the database is the one store both always have;
- an S3-compatible bucket (``STORAGE_BACKEND=s3``, or ``S3_BUCKET`` alone), as the object
  ``<S3_PREFIX>/<id>``, the row's ``data`` left empty (services/storage/s3.py). Files kept in
  the database before a bucket was configured are still read from there.

A file's id is a random URL-safe token of 32 characters (192 bits); whoever holds its URL may
fetch it, like a signed URL. Like every service, these add and flush; the caller commits.
A bucket that cannot be reached raises ``StorageUnavailable`` (a ``ProviderUnavailable``: the
API answers 503 and a run fails as its provider being down); an object missing from it raises
``FileGone``.
"""

import hashlib
import logging
import re
import secrets
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Protocol

from flask import Flask, current_app

from engines.base import ProviderUnavailable
from engines.blob import Blob
from extensions import db
from models import StoredFile
from services import urls

log = logging.getLogger(__name__)

_FILE_ID = re.compile(r"^[A-Za-z0-9_-]{22,64}$")
# A type is sent back as a header (ours, and the bucket's): printable ASCII only.
_HEADER_SAFE = re.compile(r"[\x20-\x7e]+")
BACKENDS = ("database", "s3")


class FileNotFound(LookupError):
    """No stored file has this id."""


class FileGone(FileNotFound):
    """The file's row exists but its bytes are no longer in the store."""


class StorageUnavailable(ProviderUnavailable):
    """The store cannot be reached or refuses us; transient or an operator's matter (503)."""

    def __init__(self, message: str = "File storage is unavailable right now; try again shortly."):
        super().__init__(message)


class StorageConfigError(RuntimeError):
    """The storage settings are incomplete or wrong: the app refuses to start."""


class Backend(Protocol):
    """Where the bytes of stored files live; the rows are always in the database."""

    name: str

    def write(self, stored: StoredFile, data: bytes) -> bytes:
        """Keep ``data`` for the new row ``stored``; returns what its ``data`` column holds."""

    def chunks(self, stored: StoredFile, start: int, stop: int) -> Iterator[bytes]:
        """Bytes ``[start, stop)`` of the file. The store is asked before this returns, so
        its failures raise here (StorageUnavailable, FileGone), not while iterating."""

    def remove(self, stored: StoredFile) -> None:
        """Forget the file's bytes (its row is deleted by the caller)."""


class DatabaseBackend:
    """The bytes in the row itself."""

    name = "database"

    def write(self, stored: StoredFile, data: bytes) -> bytes:
        return data

    def chunks(self, stored: StoredFile, start: int, stop: int) -> Iterator[bytes]:
        data = stored.data
        if len(data) != stored.size:
            # An empty column: the file was written to a bucket, and none is configured now.
            log.error(
                "stored file %s is in an S3 bucket but STORAGE_BACKEND is database", stored.id
            )
            raise StorageUnavailable()
        return iter((data[start:stop],))

    def remove(self, stored: StoredFile) -> None:
        """Nothing to do: the bytes go with the row."""


def init_app(app: Flask) -> None:
    """Choose and check the backend now: incomplete settings refuse to start."""
    app.extensions["storage"] = backend_for(app.config)


def backend_for(config: Mapping) -> Backend:
    """The backend the settings ask for; raises StorageConfigError saying what to fix."""
    name = config.get("STORAGE_BACKEND") or ("s3" if config.get("S3_BUCKET") else "database")
    name = name.strip().lower()
    if name == "database":
        return DatabaseBackend()
    if name == "s3":
        from services.storage.s3 import S3Backend, S3Settings

        return S3Backend(S3Settings.from_config(config))
    raise StorageConfigError(
        f"STORAGE_BACKEND={name!r} is not a storage backend; use one of {', '.join(BACKENDS)}."
    )


def new_file_id() -> str:
    return secrets.token_urlsafe(24)


def put(blob: Blob, *, account_id: int, run_id: str | None = None) -> StoredFile:
    """Store ``blob`` for ``account_id`` (and the run that made it); returns the flushed row.

    With a bucket, the object is written first: a transaction rolled back afterwards leaves an
    object no row names (unreachable, since its id is known to nobody)."""
    stored = StoredFile(
        id=new_file_id(),
        account_id=account_id,
        run_id=run_id,
        content_type=_content_type(blob.content_type),
        filename=_base_name(blob.filename),
        size=len(blob.data),
        sha256=hashlib.sha256(blob.data).hexdigest(),
    )
    stored.data = _backend().write(stored, blob.data)
    db.session.add(stored)
    db.session.flush()
    return stored


def find(file_id: str) -> StoredFile | None:
    """The file's metadata, or None; its bytes are not loaded until ``read`` or ``stream``."""
    if not _FILE_ID.match(file_id or ""):
        return None
    return db.session.get(StoredFile, file_id)


def stream(stored: StoredFile, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """Bytes ``[start, stop)`` of the file (the whole file by default), in chunks.

    Raises StorageUnavailable or FileGone before returning, never halfway through."""
    stop = stored.size if stop is None else stop
    try:
        return _backend().chunks(stored, start, stop)
    except FileGone:
        if stored.size and len(stored.data) == stored.size:
            # Kept in the database before the bucket was configured.
            return iter((stored.data[start:stop],))
        raise


def read(stored: StoredFile) -> bytes:
    return b"".join(stream(stored))


def get(file_id: str) -> tuple[StoredFile, bytes]:
    """The file and its bytes; raises FileNotFound (or FileGone) and StorageUnavailable."""
    stored = find(file_id)
    if stored is None:
        raise FileNotFound(file_id)
    return stored, read(stored)


def delete(stored: StoredFile) -> None:
    """Delete the file's bytes, then its row (flushed); its URL answers 404 from then on."""
    _backend().remove(stored)
    db.session.delete(stored)
    db.session.flush()


def url_for(file_id: str) -> str:
    """The absolute URL of ``GET /v1/files/{file_id}`` on ``PUBLIC_BASE_URL``."""
    return urls.absolute(f"/v1/files/{file_id}")


def _backend() -> Backend:
    return current_app.extensions["storage"]


def _content_type(value: str | None) -> str:
    value = (value or "").strip().lower()[:255]
    return value if _HEADER_SAFE.fullmatch(value) else "application/octet-stream"


def _base_name(filename: str | None) -> str | None:
    if not filename:
        return None
    name = PurePosixPath(filename.replace("\\", "/")).name.strip()
    return name[-255:] or None
