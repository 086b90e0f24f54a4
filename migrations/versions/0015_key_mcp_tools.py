"""api_keys.mcp_tools: the tools a key's MCP clients are shown when they name none

Revision ID: 0015_key_mcp_tools
Revises: 0014_user_sessions
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_key_mcp_tools"
down_revision = "0014_user_sessions"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("mcp_tools", sa.String(4000), nullable=True))


def downgrade():
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("mcp_tools")
