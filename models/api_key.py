from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.account import Account
from models.base import new_uuid, utcnow


class ApiKey(db.Model):
    """An API key. Only the SHA-256 hex digest of the raw key is stored."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[int] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(20), index=True)
    sandbox: Mapped[bool] = mapped_column(default=False)
    webhook_url: Mapped[str | None] = mapped_column(String(2048))
    webhook_secret: Mapped[str] = mapped_column(String(64))
    # After a rotation the old secret signs beside the new one until this moment (24 hours).
    webhook_previous_secret: Mapped[str | None] = mapped_column(String(64))
    webhook_previous_secret_until: Mapped[datetime | None]
    # Set when the receiver answered 410 Gone: nothing is sent until a URL is saved again.
    webhook_disabled_at: Mapped[datetime | None]
    webhook_disabled_reason: Mapped[str | None] = mapped_column(String(200))
    per_minute_override: Mapped[int | None]
    daily_override: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    # A rolled key may keep working until then (the API honours it to the second).
    expires_at: Mapped[datetime | None]
    # The tools its MCP clients are shown when they name none (comma-separated slugs; None:
    # the default tools).
    mcp_tools: Mapped[str | None] = mapped_column(String(4000))
    created_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )

    account: Mapped[Account] = relationship()

    @property
    def active(self) -> bool:
        return self.revoked_at is None
