"""stored files: generated images, audio and video kept in the database

Revision ID: 0002_blobs
Revises: 0001_core
Create Date: 2026-11-22 10:00:00.000000

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0002_blobs'
down_revision = '0001_core'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('stored_files',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=36), nullable=True),
    sa.Column('content_type', sa.String(length=255), nullable=False),
    sa.Column('filename', sa.String(length=255), nullable=True),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('stored_files', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_stored_files_account_id'), ['account_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_stored_files_run_id'), ['run_id'], unique=False)

    if op.get_bind().dialect.name == 'postgresql':
        # Images, audio and video are already compressed: keep them out of line without
        # TOAST's compression pass, which would only spend CPU.
        op.execute('ALTER TABLE stored_files ALTER COLUMN data SET STORAGE EXTERNAL')


def downgrade():
    with op.batch_alter_table('stored_files', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_stored_files_run_id'))
        batch_op.drop_index(batch_op.f('ix_stored_files_account_id'))

    op.drop_table('stored_files')
