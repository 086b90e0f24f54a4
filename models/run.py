from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.base import new_uuid, utcnow

# ``pending``: a workflow step waiting for the steps it depends on (it is then queued).
RUN_STATES = ("pending", "queued", "running", "succeeded", "failed", "canceled")
TERMINAL_STATES = frozenset({"succeeded", "failed", "canceled"})


class Run(db.Model):
    """One tool invocation or workflow run (docs/architecture/runs.md)."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_account_created", "account_id", "created_at"),
        # Steps by workflow run; the many runs that are no step (every inline run) are
        # left out of the index rather than each adding a NULL entry to it.
        Index(
            "ix_runs_workflow_run_id",
            "workflow_run_id",
            postgresql_where=text("workflow_run_id IS NOT NULL"),
            sqlite_where=text("workflow_run_id IS NOT NULL"),
        ),
        # The sweep's question (services/sweeper.py): the unfinished runs, oldest first.
        Index(
            "ix_runs_unfinished",
            "created_at",
            postgresql_where=text("status IN ('queued', 'running')"),
            sqlite_where=text("status IN ('queued', 'running')"),
        ),
        # A day's web runs by visitor, device and address (services/allowance.py counts them
        # again when Redis lost its counters); API runs are left out of both.
        Index(
            "ix_runs_web_visitor",
            "visitor_id",
            "created_at",
            postgresql_where=text("visitor_id IS NOT NULL"),
            sqlite_where=text("visitor_id IS NOT NULL"),
        ),
        Index(
            "ix_runs_web_device",
            "web_device",
            "created_at",
            postgresql_where=text("web_device IS NOT NULL"),
            sqlite_where=text("web_device IS NOT NULL"),
        ),
        Index(
            "ix_runs_web_address",
            "web_address",
            "created_at",
            postgresql_where=text("web_address IS NOT NULL"),
            sqlite_where=text("web_address IS NOT NULL"),
        ),
        # A widget's runs (its usage and caps: services of the agency embeds).
        Index(
            "ix_runs_embed",
            "embed_id",
            "created_at",
            postgresql_where=text("embed_id IS NOT NULL"),
            sqlite_where=text("embed_id IS NOT NULL"),
        ),
        # A run a member chose to share, at /r/<share id>.
        Index(
            "ix_runs_share_id",
            "share_id",
            unique=True,
            postgresql_where=text("share_id IS NOT NULL"),
            sqlite_where=text("share_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    # None for a run of an anonymous visitor of the site (``source`` web).
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    api_key_id: Mapped[str | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    tool_slug: Mapped[str | None] = mapped_column(String(100))
    workflow_id: Mapped[str | None] = mapped_column(String(100))
    # A workflow step: the workflow run it belongs to and the step's id in the workflow.
    workflow_run_id: Mapped[str | None] = mapped_column(
        ForeignKey("workflow_runs.id", ondelete="CASCADE")
    )
    step_id: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(10))
    sandbox: Mapped[bool] = mapped_column(default=False)
    input: Mapped[dict] = mapped_column(JSON)
    output: Mapped[dict | None] = mapped_column(JSON)
    error: Mapped[dict | None] = mapped_column(JSON)
    credits: Mapped[int] = mapped_column(default=0)
    # Set when the caller stopped waiting (answered 202): the run's end is then announced
    # by a tool.completed / tool.failed event.
    notify: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    duration_ms: Mapped[int | None]
    # Where it was asked for: "api" (a key), "web" (the site: services/allowance.py) or
    # "embed" (an agency's widget).
    source: Mapped[str] = mapped_column(String(8), default="api", server_default="api")
    # A web run's visitor (the id in the site's visitor cookie) and the salted hashes of the
    # device and the address it came from that day: only that visitor sees the run, and all
    # three count it against the day's web allowance (services/allowance.py).
    visitor_id: Mapped[str | None] = mapped_column(String(64))
    web_device: Mapped[str | None] = mapped_column(String(64))
    web_address: Mapped[str | None] = mapped_column(String(64))
    # Who started a web run of an account (signed in on the site).
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # A run of an agency's widget (``source`` embed), charged to the widget's key.
    embed_id: Mapped[str | None] = mapped_column(ForeignKey("embeds.id", ondelete="SET NULL"))
    # Set when a member shares the run: its page at /r/<share id>, under the account's brand.
    share_id: Mapped[str | None] = mapped_column(String(43))
    # The model(s) that wrote the output, comma-separated: the provider's model name, or the
    # embedded model's (engines.models.local_llm.model_name()); None for a tool with no model.
    model: Mapped[str | None] = mapped_column(String(200))

    # Not a column: set by the statement that ends the run (``services.runs``), whether its
    # end is to be announced by a webhook event (its caller stopped waiting, and its key has
    # a webhook), so that the job announcing it asks the database nothing more.
    announce_end = False
