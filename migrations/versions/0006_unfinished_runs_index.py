"""runs and workflow runs: partial indexes of the unfinished ones, for the sweep of stale runs

Revision ID: 0006_unfinished_runs_index
Revises: 0005_workflows
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_unfinished_runs_index"
down_revision = "0005_workflows"
branch_labels = None
depends_on = None

_UNFINISHED = sa.text("status IN ('queued', 'running')")
_INDEXES = (("runs", "ix_runs_unfinished"), ("workflow_runs", "ix_workflow_runs_unfinished"))


def upgrade():
    for table, name in _INDEXES:
        op.create_index(
            name, table, ["created_at"], postgresql_where=_UNFINISHED, sqlite_where=_UNFINISHED
        )


def downgrade():
    for table, name in _INDEXES:
        op.drop_index(name, table_name=table)
