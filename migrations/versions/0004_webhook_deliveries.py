"""webhook deliveries: every event sent to a key's webhook, with its attempts; a webhook
disabled by a 410 Gone

Revision ID: 0004_webhook_deliveries
Revises: 0003_run_notify
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_webhook_deliveries"
down_revision = "0003_run_notify"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("api_key_id", sa.String(length=36), nullable=False),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=100), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.JSON(), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("api_key_id", "event_id", name="uq_webhook_deliveries_key_event"),
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.create_index(
            "ix_webhook_deliveries_key_created", ["api_key_id", "created_at"], unique=False
        )
        batch.create_index("ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False)
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(
            sa.Column("webhook_disabled_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.add_column(sa.Column("webhook_disabled_reason", sa.String(length=200), nullable=True))


def downgrade():
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("webhook_disabled_reason")
        batch.drop_column("webhook_disabled_at")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_index("ix_webhook_deliveries_due")
        batch.drop_index("ix_webhook_deliveries_key_created")
    op.drop_table("webhook_deliveries")
