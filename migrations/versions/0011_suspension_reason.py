"""accounts.suspended_reason: why an operator suspended the account (shown on /admin/)

Revision ID: 0011_suspension_reason
Revises: 0010_account_console
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_suspension_reason"
down_revision = "0010_account_console"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("suspended_reason", sa.String(500), nullable=True))


def downgrade():
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("suspended_reason")
