"""runs.model: the model that wrote a run's output (the provider's, or the embedded model's)

Revision ID: 0013_run_model
Revises: 0012_agency_assistant
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_run_model"
down_revision = "0012_agency_assistant"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("model", sa.String(200), nullable=True))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("model")
