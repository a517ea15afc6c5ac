"""Each run's untested-document verdicts as a small shared bitmap (what the document timeline reads, without
decoding the per-document states), and an index for a label's runs.

Existing runs are back-filled from their per-document states, so a history written before this revision keeps
every run and gets its timeline.

Revision ID: 0002
Revises: 0001
"""

import hashlib
import struct
import zlib

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The part formats as revision 0001 wrote them, frozen here: the store's codec may move on, this migration may not.
_STATES_KIND = "document_states"
_VERDICTS_KIND = "document_verdicts"
_UNTESTED_FLAG = 1


def _verdicts_payload(states_data: bytes) -> bytes:
    payload = zlib.decompress(states_data)
    _format, n_documents = struct.unpack_from("<BI", payload)  # then one flag byte per document
    flags = np.frombuffer(payload, dtype=np.uint8, count=n_documents, offset=5)
    untested = (flags & _UNTESTED_FLAG).astype(bool)
    return struct.pack("<I", n_documents) + np.packbits(untested).tobytes()


def _digest(kind: str, payload: bytes) -> str:
    return hashlib.sha256(kind.encode() + b"\0" + payload).hexdigest()


def upgrade() -> None:
    op.add_column("runs", sa.Column("document_verdicts_digest", sa.String(64), nullable=True))
    op.create_index("ix_runs_label_id", "runs", ["label", "id"])
    connection = op.get_bind()
    parts = sa.table("parts", sa.column("digest", sa.String), sa.column("kind", sa.String),
                     sa.column("data", sa.LargeBinary))
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("document_states_digest", sa.String),
                    sa.column("document_verdicts_digest", sa.String))
    verdicts_by_states: dict[str, str] = {}
    rows = connection.execute(sa.select(runs.c.id, runs.c.document_states_digest).order_by(runs.c.id)).all()
    for run_id, states_digest in rows:
        if states_digest not in verdicts_by_states:
            states_data = connection.execute(
                sa.select(parts.c.data).where(parts.c.digest == states_digest)).scalar_one()
            payload = _verdicts_payload(states_data)
            digest = _digest(_VERDICTS_KIND, payload)
            exists = connection.execute(sa.select(parts.c.digest).where(parts.c.digest == digest)).first()
            if exists is None:
                connection.execute(parts.insert().values(digest=digest, kind=_VERDICTS_KIND,
                                                         data=zlib.compress(payload, 6)))
            verdicts_by_states[states_digest] = digest
        connection.execute(runs.update().where(runs.c.id == run_id)
                           .values(document_verdicts_digest=verdicts_by_states[states_digest]))


def downgrade() -> None:
    op.drop_index("ix_runs_label_id", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("document_verdicts_digest")
