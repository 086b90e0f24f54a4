from datetime import datetime

from sqlalchemy import JSON, SmallInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import new_uuid, utcnow


class AssistantAnswer(db.Model):
    """One answer of the site assistant: the question, what retrieval found (document ids
    and scores), how it answered, and the visitor's thumbs up (1) or down (-1) once given."""

    __tablename__ = "assistant_answers"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    question: Mapped[str] = mapped_column(String(1000))
    retrieved: Mapped[list] = mapped_column(JSON, default=list)
    # "model", "retrieval" or "unknown" (below the evidence threshold: no model call).
    mode: Mapped[str] = mapped_column(String(16))
    answer: Mapped[str] = mapped_column(Text, default="")
    # A salted hash of the visitor (never the address itself).
    visitor: Mapped[str | None] = mapped_column(String(64))
    vote: Mapped[int | None] = mapped_column(SmallInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
