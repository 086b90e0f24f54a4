from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db

PLAN_ORDER = ("free", "starter", "pro", "creator", "business", "agency")


class Plan(db.Model):
    """A subscription plan; rows are seeded by the migrations
    (docs/architecture/quota-and-credits.md)."""

    __tablename__ = "plans"

    name: Mapped[str] = mapped_column(String(20), primary_key=True)
    rank: Mapped[int] = mapped_column(unique=True)
    api_access: Mapped[bool]
    daily_quota: Mapped[int]
    per_minute: Mapped[int]
    seats: Mapped[int]
    # None means unlimited runs in the web UI.
    web_runs_per_day: Mapped[int | None]
    price_usd_month: Mapped[int]
