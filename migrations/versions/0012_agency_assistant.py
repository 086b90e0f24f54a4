"""agency widgets and white-label, shared runs, and the site assistant's answers

- ``embeds``: a widget bound to one tool, its allowed origins, caps, public id and the key
  its runs charge.
- ``white_labels``: an agency's brand (name, re-encoded logo, colours, support URL, whether
  "powered by" is hidden).
- ``runs.embed_id`` (a widget's runs) and ``runs.share_id`` (a run shared at /r/<share id>).
- ``assistant_answers``: each answer of the site assistant with what it retrieved and the
  visitor's vote.

Revision ID: 0012_agency_assistant
Revises: 0011_suspension_reason
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_agency_assistant"
down_revision = "0011_suspension_reason"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "embeds",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "account_id",
            sa.Integer(),
            sa.ForeignKey("accounts.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "api_key_id",
            sa.String(36),
            sa.ForeignKey("api_keys.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("tool_slug", sa.String(100), nullable=False),
        sa.Column("public_id", sa.String(43), nullable=False, unique=True),
        sa.Column("allowed_origins", sa.JSON(), nullable=False),
        sa.Column("per_minute", sa.Integer(), nullable=False),
        sa.Column("per_visitor_daily", sa.Integer(), nullable=False),
        sa.Column("daily", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_embeds_account_id", "embeds", ["account_id"])
    op.create_table(
        "white_labels",
        sa.Column(
            "account_id",
            sa.Integer(),
            sa.ForeignKey("accounts.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("brand_name", sa.String(80), nullable=True),
        sa.Column("logo", sa.LargeBinary(), nullable=True),
        sa.Column("logo_content_type", sa.String(32), nullable=True),
        sa.Column("logo_sha256", sa.String(64), nullable=True),
        sa.Column("primary_color", sa.String(7), nullable=True),
        sa.Column("accent_color", sa.String(7), nullable=True),
        sa.Column("support_url", sa.String(2048), nullable=True),
        sa.Column("hide_powered_by", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column(
                "embed_id",
                sa.String(36),
                sa.ForeignKey("embeds.id", name="fk_runs_embed", ondelete="SET NULL"),
                nullable=True,
            )
        )
        batch.add_column(sa.Column("share_id", sa.String(43), nullable=True))
    op.create_index(
        "ix_runs_embed",
        "runs",
        ["embed_id", "created_at"],
        postgresql_where=sa.text("embed_id IS NOT NULL"),
        sqlite_where=sa.text("embed_id IS NOT NULL"),
    )
    op.create_index(
        "ix_runs_share_id",
        "runs",
        ["share_id"],
        unique=True,
        postgresql_where=sa.text("share_id IS NOT NULL"),
        sqlite_where=sa.text("share_id IS NOT NULL"),
    )
    op.create_table(
        "assistant_answers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("question", sa.String(1000), nullable=False),
        sa.Column("retrieved", sa.JSON(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("visitor", sa.String(64), nullable=True),
        sa.Column("vote", sa.SmallInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_assistant_answers_created_at", "assistant_answers", ["created_at"])


def downgrade():
    op.drop_index("ix_assistant_answers_created_at", table_name="assistant_answers")
    op.drop_table("assistant_answers")
    op.drop_index("ix_runs_share_id", table_name="runs")
    op.drop_index("ix_runs_embed", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("share_id")
        batch.drop_column("embed_id")
    op.drop_table("white_labels")
    op.drop_index("ix_embeds_account_id", table_name="embeds")
    op.drop_table("embeds")
