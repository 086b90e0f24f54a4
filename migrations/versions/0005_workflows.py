"""workflows: workflow runs, and tool runs as their steps (pending until their inputs exist)

Revision ID: 0005_workflows
Revises: 0004_webhook_deliveries
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_workflows"
down_revision = "0004_webhook_deliveries"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "workflow_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("api_key_id", sa.String(length=36), nullable=True),
        sa.Column("workflow_id", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("sandbox", sa.Boolean(), nullable=False),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workflow_runs") as batch:
        batch.create_index("ix_workflow_runs_account_created", ["account_id", "created_at"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("workflow_run_id", sa.String(length=36), nullable=True))
        batch.add_column(sa.Column("step_id", sa.String(length=64), nullable=True))
        batch.create_index("ix_runs_workflow_run_id", ["workflow_run_id"])
        batch.create_foreign_key(
            "fk_runs_workflow_run_id",
            "workflow_runs",
            ["workflow_run_id"],
            ["id"],
            ondelete="CASCADE",
        )


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint("fk_runs_workflow_run_id", type_="foreignkey")
        batch.drop_index("ix_runs_workflow_run_id")
        batch.drop_column("step_id")
        batch.drop_column("workflow_run_id")
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_index("ix_workflow_runs_account_created")
    op.drop_table("workflow_runs")
