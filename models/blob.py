from datetime import datetime

from sqlalchemy import ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import utcnow


class StoredFile(db.Model):
    """A generated file (image, audio, video) kept in the database, served at /v1/files/{id}.

    The id is the capability: a random URL-safe token that anyone holding the URL may fetch.
    """

    __tablename__ = "stored_files"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # None for a file of an anonymous visitor's web run (served by the site to that visitor).
    account_id: Mapped[int | None] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    # No foreign key: inline runs' rows are written later, in batches (services/recorder.py),
    # so a run's output can be stored before its row exists.
    run_id: Mapped[str | None] = mapped_column(String(36), index=True)
    content_type: Mapped[str] = mapped_column(String(255))
    filename: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[int]
    sha256: Mapped[str] = mapped_column(String(64))
    # Deferred: metadata (404, 304, listings) never loads the bytes.
    data: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
