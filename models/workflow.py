from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import new_uuid, utcnow


class WorkflowRun(db.Model):
    """One run of a workflow (docs/architecture/runs.md). Its steps are tool runs (``runs`` rows
    with ``workflow_run_id`` and ``step_id``), so a step runs, bills and ends exactly as a
    queued tool run does; this row holds what belongs to the whole: its state, the final
    output and the error of the step that failed it."""

    __tablename__ = "workflow_runs"
    __table_args__ = (
        Index("ix_workflow_runs_account_created", "account_id", "created_at"),
        # The sweep's question (services/sweeper.py): the unfinished runs, oldest first.
        Index(
            "ix_workflow_runs_unfinished",
            "created_at",
            postgresql_where=text("status IN ('queued', 'running')"),
            sqlite_where=text("status IN ('queued', 'running')"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    workflow_id: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(10))
    sandbox: Mapped[bool] = mapped_column(default=False)
    # The workflow's input: its text, or the reference of the stored file it named.
    input: Mapped[str | dict] = mapped_column(JSON)
    output: Mapped[dict | None] = mapped_column(JSON)
    # The failing step's error, with ``step`` naming it.
    error: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    duration_ms: Mapped[int | None]
