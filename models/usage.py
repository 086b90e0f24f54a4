from datetime import date, datetime

from sqlalchemy import ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import utcnow


class UsageEvent(db.Model):
    """The usage ledger: one row per successful invocation, with its credit cost."""

    __tablename__ = "usage_events"
    __table_args__ = (
        Index("ix_usage_key_created", "api_key_id", "created_at"),
        # One ledger row per run; deleting runs finds their rows by it.
        Index(
            "ix_usage_events_run_id",
            "run_id",
            unique=True,
            postgresql_where=text("run_id IS NOT NULL"),
            sqlite_where=text("run_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    tool_slug: Mapped[str] = mapped_column(String(100))
    credits: Mapped[int]
    free_call: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Where the call came in through: api (the REST API and agency widgets, by their key),
    # mcp (the MCP endpoint), or web (the site, no key).
    source: Mapped[str] = mapped_column(String(8), default="api", server_default="api")


class UsageDaily(db.Model):
    """Calls, credits and free calls per UTC day, account, key and source: the dashboard's
    rollup, kept as ledger rows (and web runs of accounts) are recorded, so reading 30 days
    never scans the ledger. ``api_key_id`` is '' for web runs."""

    __tablename__ = "usage_daily"

    account_id: Mapped[int] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(primary_key=True)
    api_key_id: Mapped[str] = mapped_column(String(36), primary_key=True, server_default="")
    source: Mapped[str] = mapped_column(String(8), primary_key=True)
    calls: Mapped[int] = mapped_column(default=0, server_default="0")
    credits: Mapped[int] = mapped_column(default=0, server_default="0")
    free_calls: Mapped[int] = mapped_column(default=0, server_default="0")
