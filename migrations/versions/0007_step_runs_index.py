"""runs: index only the workflow steps by workflow run

An inline run (most runs) no longer adds a NULL entry to that index.

Revision ID: 0007_step_runs_index
Revises: 0006_unfinished_runs_index
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_step_runs_index"
down_revision = "0006_unfinished_runs_index"
branch_labels = None
depends_on = None

_STEPS = sa.text("workflow_run_id IS NOT NULL")


def upgrade():
    op.drop_index("ix_runs_workflow_run_id", table_name="runs")
    op.create_index(
        "ix_runs_workflow_run_id",
        "runs",
        ["workflow_run_id"],
        postgresql_where=_STEPS,
        sqlite_where=_STEPS,
    )


def downgrade():
    op.drop_index("ix_runs_workflow_run_id", table_name="runs")
    op.create_index("ix_runs_workflow_run_id", "runs", ["workflow_run_id"])
