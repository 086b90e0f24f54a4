"""runs.notify: announce the end of runs whose caller stopped waiting

Revision ID: 0003_run_notify
Revises: 0002_blobs
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_run_notify"
down_revision = "0002_blobs"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("notify", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("notify")
