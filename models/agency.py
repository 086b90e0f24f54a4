"""The agency plan's embeddable widgets and white-label brand (docs/architecture/agency.md)."""

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import new_uuid, utcnow


class Embed(db.Model):
    """A widget bound to one tool, framed by pages on its allowed origins.

    Its runs go through ``api_key_id``, a key of the account kept on the server, so they
    charge that key's daily quota and the account's credits; ``public_id`` is the only id a
    page ever sees, and rotating it ends every page that framed the old one.
    """

    __tablename__ = "embeds"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[int] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    name: Mapped[str] = mapped_column(String(100))
    tool_slug: Mapped[str] = mapped_column(String(100))
    public_id: Mapped[str] = mapped_column(String(43), unique=True)
    # Exact origins (scheme://host[:port]) that may frame it; none: no page may.
    allowed_origins: Mapped[list] = mapped_column(JSON, default=list)
    per_minute: Mapped[int] = mapped_column(default=10)
    per_visitor_daily: Mapped[int] = mapped_column(default=20)
    daily: Mapped[int] = mapped_column(default=500)
    enabled: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class WhiteLabel(db.Model):
    """An agency's brand, shown on its widgets and its shared run pages."""

    __tablename__ = "white_labels"

    account_id: Mapped[int] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    brand_name: Mapped[str | None] = mapped_column(String(80))
    # The logo as re-encoded on upload (never the bytes that were sent); deferred so the
    # brand's colours never load it.
    logo: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    logo_content_type: Mapped[str | None] = mapped_column(String(32))
    logo_sha256: Mapped[str | None] = mapped_column(String(64))
    primary_color: Mapped[str | None] = mapped_column(String(7))
    accent_color: Mapped[str | None] = mapped_column(String(7))
    support_url: Mapped[str | None] = mapped_column(String(2048))
    hide_powered_by: Mapped[bool] = mapped_column(default=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
