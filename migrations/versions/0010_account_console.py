"""accounts in the browser: users' sign-in state, suspension, invitations, key rolls, the
webhook secret kept beside its successor, runs by user, and the daily usage rollups

- ``users``: ``email_verified_at``, ``is_admin`` (operators), ``session_token`` (part of the
  flask-login id: changing it ends every other session of the user), ``last_login_at``.
- ``accounts.suspended_at``: a suspended account's keys answer 401 and its members cannot
  sign in.
- ``invitations``: an emailed link (only the SHA-256 of its token is stored), valid 7 days;
  pending ones count against the seats.
- ``api_keys``: ``expires_at`` (a rolled key may keep working until then),
  ``created_by_user_id``, and ``webhook_previous_secret`` with ``webhook_previous_secret_until``
  (after a rotation the old secret signs beside the new one for 24 hours).
- ``runs.user_id``: who started a web run of an account.
- ``usage_daily``: calls, credits and free calls per UTC day, account, key and source
  (``api_key_id`` is '' for web runs), kept by the recorder as ledger rows are written so the
  dashboard never scans the ledger.

Revision ID: 0010_account_console
Revises: 0009_web_runs
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_account_console"
down_revision = "0009_web_runs"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(
            sa.Column("session_token", sa.String(32), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("last_login_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("suspended_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column(
                "created_by_user_id",
                sa.Integer(),
                sa.ForeignKey("users.id", name="fk_api_keys_created_by", ondelete="SET NULL"),
                nullable=True,
            )
        )
        batch.add_column(sa.Column("webhook_previous_secret", sa.String(64), nullable=True))
        batch.add_column(sa.Column("webhook_previous_secret_until", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column(
                "user_id",
                sa.Integer(),
                sa.ForeignKey("users.id", name="fk_runs_user", ondelete="SET NULL"),
                nullable=True,
            )
        )
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "account_id",
            sa.Integer(),
            sa.ForeignKey("accounts.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "invited_by_user_id",
            sa.Integer(),
            sa.ForeignKey("users.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_invitations_account", "invitations", ["account_id", "created_at"])
    op.create_table(
        "usage_daily",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column(
            "account_id",
            sa.Integer(),
            sa.ForeignKey("accounts.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("api_key_id", sa.String(36), nullable=False, server_default=""),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("credits", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("free_calls", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("account_id", "day", "api_key_id", "source"),
    )
    # The ledger so far, rolled up (web runs wrote no ledger rows before this revision).
    op.execute(
        "INSERT INTO usage_daily (day, account_id, api_key_id, source, calls, credits, free_calls)"
        " SELECT date(created_at), account_id, COALESCE(api_key_id, ''), 'api', count(*),"
        " sum(credits), sum(CASE WHEN free_call THEN 1 ELSE 0 END)"
        " FROM usage_events GROUP BY date(created_at), account_id, COALESCE(api_key_id, '')"
    )


def downgrade():
    op.drop_table("usage_daily")
    op.drop_index("ix_invitations_account", table_name="invitations")
    op.drop_table("invitations")
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint("fk_runs_user", type_="foreignkey")
        batch.drop_column("user_id")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("webhook_previous_secret_until")
        batch.drop_column("webhook_previous_secret")
        batch.drop_constraint("fk_api_keys_created_by", type_="foreignkey")
        batch.drop_column("created_by_user_id")
        batch.drop_column("expires_at")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("suspended_at")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("last_login_at")
        batch.drop_column("session_token")
        batch.drop_column("is_admin")
        batch.drop_column("email_verified_at")
