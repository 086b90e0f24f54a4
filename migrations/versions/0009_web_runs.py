"""runs of the site's visitors: runs.source, visitor_id, web_device, web_address

A web run of an anonymous visitor belongs to no account (``account_id`` NULL) and neither do
its files; it is the visitor's (``visitor_id``) and counts against the day's web allowance
of that visitor, its device and its address (salted hashes: services/allowance.py).

Revision ID: 0009_web_runs
Revises: 0008_usage_run_index
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_web_runs"
down_revision = "0008_usage_run_index"
branch_labels = None
depends_on = None


_INDEXES = (
    ("ix_runs_web_visitor", "visitor_id"),
    ("ix_runs_web_device", "web_device"),
    ("ix_runs_web_address", "web_address"),
)


def upgrade():
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("source", sa.String(8), nullable=False, server_default="api"))
        batch.add_column(sa.Column("visitor_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("web_device", sa.String(64), nullable=True))
        batch.add_column(sa.Column("web_address", sa.String(64), nullable=True))
        batch.alter_column("account_id", existing_type=sa.Integer(), nullable=True)
    for name, column in _INDEXES:
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(
            name, "runs", [column, "created_at"], postgresql_where=where, sqlite_where=where
        )
    with op.batch_alter_table("stored_files") as batch:
        batch.alter_column("account_id", existing_type=sa.Integer(), nullable=True)


def downgrade():
    op.execute("DELETE FROM stored_files WHERE account_id IS NULL")
    op.execute("DELETE FROM runs WHERE account_id IS NULL")
    for name, _column in _INDEXES:
        op.drop_index(name, table_name="runs")
    with op.batch_alter_table("stored_files") as batch:
        batch.alter_column("account_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("runs") as batch:
        batch.alter_column("account_id", existing_type=sa.Integer(), nullable=False)
        batch.drop_column("web_address")
        batch.drop_column("web_device")
        batch.drop_column("visitor_id")
        batch.drop_column("source")
