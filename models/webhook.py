from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import new_uuid, utcnow

DELIVERY_STATES = ("pending", "succeeded", "failed", "disabled")


class WebhookDelivery(db.Model):
    """One event on its way to a key's webhook, with every attempt made
    (docs/architecture/webhooks.md).

    ``event_id`` is the ``webhook-id`` header, the same on every attempt; a key gets at most
    one delivery per event id. ``attempts`` lists each attempt: when, where, the status code
    or the error, the latency and any ``Retry-After``; the receiver's body is never kept.
    ``next_attempt_at`` is when the next attempt is due while the delivery is pending.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("api_key_id", "event_id", name="uq_webhook_deliveries_key_event"),
        Index("ix_webhook_deliveries_key_created", "api_key_id", "created_at"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    api_key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(40))
    event_id: Mapped[str] = mapped_column(String(100))
    # The event without ``delivered_at`` and ``signature``, which each attempt stamps anew.
    payload: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[list] = mapped_column(JSON, default=list)
    attempt_count: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int]
    next_attempt_at: Mapped[datetime | None]
    # While an attempt is in flight: another may not start before this (a worker that died
    # mid-attempt leaves it to expire, and the attempt is made again).
    claimed_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_attempt_at: Mapped[datetime | None]
