"""One interface for generated files (images, audio, video): put, find, get, url_for.

Files live in the database (the ``stored_files`` table): web and worker dynos share no disk,
and the database is the one store both always have. A file's id is a random URL-safe token
of 32 characters (192 bits); whoever holds its URL may fetch it, like a signed URL.
Like every service, these add and flush; the caller commits.
"""

import hashlib
import re
import secrets
from pathlib import PurePosixPath

from flask import current_app
from flask import url_for as flask_url_for

from engines.blob import Blob
from extensions import db
from models import StoredFile

_FILE_ID = re.compile(r"^[A-Za-z0-9_-]{22,64}$")


class FileNotFound(LookupError):
    """No stored file has this id."""


def new_file_id() -> str:
    return secrets.token_urlsafe(24)


def put(blob: Blob, *, account_id: int, run_id: str | None = None) -> StoredFile:
    """Store ``blob`` for ``account_id`` (and the run that made it); returns the flushed row."""
    stored = StoredFile(
        id=new_file_id(),
        account_id=account_id,
        run_id=run_id,
        content_type=(blob.content_type or "").strip().lower()[:255] or "application/octet-stream",
        filename=_base_name(blob.filename),
        size=len(blob.data),
        sha256=hashlib.sha256(blob.data).hexdigest(),
        data=blob.data,
    )
    db.session.add(stored)
    db.session.flush()
    return stored


def find(file_id: str) -> StoredFile | None:
    """The file's metadata, or None; its bytes are not loaded until ``read``."""
    if not _FILE_ID.match(file_id or ""):
        return None
    return db.session.get(StoredFile, file_id)


def read(stored: StoredFile) -> bytes:
    return stored.data


def get(file_id: str) -> tuple[StoredFile, bytes]:
    """The file and its bytes; raises FileNotFound."""
    stored = find(file_id)
    if stored is None:
        raise FileNotFound(file_id)
    return stored, read(stored)


def url_for(file_id: str) -> str:
    """The absolute URL of ``GET /v1/files/{file_id}`` on this service.

    ``PUBLIC_BASE_URL`` wins when set; otherwise the current request's host, or
    ``SERVER_NAME`` outside a request (a worker needs one of the two).
    """
    base = current_app.config.get("PUBLIC_BASE_URL")
    if base:
        return f"{base.rstrip('/')}/v1/files/{file_id}"
    return flask_url_for("files.FileById", file_id=file_id, _external=True)


def _base_name(filename: str | None) -> str | None:
    if not filename:
        return None
    name = PurePosixPath(filename.replace("\\", "/")).name.strip()
    return name[-255:] or None
