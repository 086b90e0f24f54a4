"""usage_events: a unique index on run_id

One ledger row per run: the index makes deleting runs fast (every deleted run's ledger row
is found by it, for ``ON DELETE SET NULL``: deleting 56k runs did not finish in 10 minutes
without it) and lets the run journal's replay insert a run's ledger row at most once
(services/recorder.py).

Revision ID: 0008_usage_run_index
Revises: 0007_step_runs_index
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_usage_run_index"
down_revision = "0007_step_runs_index"
branch_labels = None
depends_on = None

_RUNS = sa.text("run_id IS NOT NULL")


def upgrade():
    op.create_index(
        "ix_usage_events_run_id",
        "usage_events",
        ["run_id"],
        unique=True,
        postgresql_where=_RUNS,
        sqlite_where=_RUNS,
    )


def downgrade():
    op.drop_index("ix_usage_events_run_id", table_name="usage_events")
