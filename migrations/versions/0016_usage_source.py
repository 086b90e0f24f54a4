"""usage_events.source: where a charged call came in (api, mcp or web)

Revision ID: 0016_usage_source
Revises: 0015_key_mcp_tools
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_usage_source"
down_revision = "0015_key_mcp_tools"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("usage_events") as batch:
        batch.add_column(
            sa.Column("source", sa.String(8), nullable=False, server_default="api")
        )
    # The ledger rows charged on the site (no key) came from the web.
    op.execute("UPDATE usage_events SET source = 'web' WHERE api_key_id IS NULL")


def downgrade():
    with op.batch_alter_table("usage_events") as batch:
        batch.drop_column("source")
