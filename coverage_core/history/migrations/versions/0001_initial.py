"""The first schema: a ``runs`` row per recorded run (its headline read without loading anything else) and
content-addressed, compressed ``parts`` shared between runs.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "parts",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), sa.Identity(), primary_key=True),
        sa.Column("label", sa.String(500), nullable=True),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.Column("tool_version", sa.String(100), nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("model", sa.String(500), nullable=False),
        sa.Column("support_threshold", sa.Float(), nullable=True),
        sa.Column("threshold_reliable", sa.Boolean(), nullable=True),
        sa.Column("headline", sa.Text(), nullable=False),
        sa.Column("traffic", sa.Text(), nullable=True),
        sa.Column("corpus_digest", sa.String(64), nullable=False),
        sa.Column("document_states_digest", sa.String(64), nullable=False),
        sa.Column("question_set_digest", sa.String(64), nullable=False),
        sa.Column("question_states_digest", sa.String(64), nullable=False),
        sa.Column("topics_digest", sa.String(64), nullable=False),
        # Run ids are never reused, even if the newest run were ever deleted: a CI log's "run 12" stays run 12.
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_table("parts")
