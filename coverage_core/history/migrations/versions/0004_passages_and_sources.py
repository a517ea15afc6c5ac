"""Each run's passage hashes (per document) and its questions' rows and source documents, as parts of the run:
what tells which questions went stale, and how many of a changed document's passages changed.

Two nullable columns: a run recorded before this revision has neither part, which reads as "not known" (never
as "no source" or "no passage changed"), so nothing is back-filled and no part is read.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("passages_digest", sa.String(64), nullable=True))
    op.add_column("runs", sa.Column("question_sources_digest", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("question_sources_digest")
        batch.drop_column("passages_digest")
