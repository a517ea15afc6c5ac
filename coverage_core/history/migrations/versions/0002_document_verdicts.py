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
_MAX_STATES_BYTES = 64 * 1024**2  # the store's MAX_PART_BYTES: a damaged (or hostile) part inflates no further


def _verdicts_payload(states_data) -> bytes | None:
    """The verdict bitmap of a run's per-document states; None when they cannot be read (the run keeps no
    bitmap: the store names it damaged when it is read, and the other runs migrate)."""
    try:
        inflater = zlib.decompressobj()
        payload = inflater.decompress(bytes(states_data), _MAX_STATES_BYTES + 1)
        if len(payload) > _MAX_STATES_BYTES or not inflater.eof:
            return None
        _format, n_documents = struct.unpack_from("<BI", payload)  # then one flag byte per document
        flags = np.frombuffer(payload, dtype=np.uint8, count=n_documents, offset=5)
    except (TypeError, ValueError, struct.error, zlib.error):
        return None
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
    verdicts_by_states: dict[str, str | None] = {}
    rows = connection.execute(sa.select(runs.c.id, runs.c.document_states_digest).order_by(runs.c.id)).all()
    for run_id, states_digest in rows:
        if states_digest not in verdicts_by_states:
            states_data = connection.execute(
                sa.select(sa.type_coerce(parts.c.data, sa.types.NullType())).where(parts.c.digest == states_digest)
            ).scalar()  # as stored: a hand-edited text there is a damaged run, not a failed migration
            payload = None if states_data is None else _verdicts_payload(states_data)
            if payload is None:
                verdicts_by_states[states_digest] = None
                continue
            digest = _digest(_VERDICTS_KIND, payload)
            exists = connection.execute(sa.select(parts.c.digest).where(parts.c.digest == digest)).first()
            if exists is None:
                connection.execute(parts.insert().values(digest=digest, kind=_VERDICTS_KIND,
                                                         data=zlib.compress(payload, 6)))
            verdicts_by_states[states_digest] = digest
        if verdicts_by_states[states_digest] is None:
            continue
        connection.execute(runs.update().where(runs.c.id == run_id)
                           .values(document_verdicts_digest=verdicts_by_states[states_digest]))


def downgrade() -> None:
    op.drop_index("ix_runs_label_id", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("document_verdicts_digest")
