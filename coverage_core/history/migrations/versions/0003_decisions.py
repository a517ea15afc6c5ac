"""Each run's decisions about the suggested questions (accepted, edited, rejected), as a part of the run.

A nullable column: a run recorded before this revision has no decisions part, which reads as "not known"
(never as "none decided"), so nothing is back-filled and no part is read.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("decisions_digest", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("decisions_digest")
