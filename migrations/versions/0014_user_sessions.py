"""user_sessions: signed-in browser sessions, so that signing out ends a session on the server

Revision ID: 0014_user_sessions
Revises: 0013_run_model
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_user_sessions"
down_revision = "0013_run_model"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "user_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column(
            "user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_user_sessions_user_id", "user_sessions", ["user_id"])


def downgrade():
    op.drop_index("ix_user_sessions_user_id", table_name="user_sessions")
    op.drop_table("user_sessions")
