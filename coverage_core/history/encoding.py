"""A run as the store writes it: its ``runs`` row and its parts, encoded from a snapshot and read back before
anything is written.

:func:`checked_encoding` encodes a :class:`~coverage_core.history.snapshot.RunSnapshot` into the row values and
the compressed parts (:class:`~coverage_core.history.parts.PartWriter`, outside any transaction: no lock held),
then reads the run back from those parts with the reader's own checks and limits
(:func:`coverage_core.history.reading.decode_run`), so a run that would later read as damaged is refused when
it is recorded, in one sentence.

The parts of a run (the layout is in :mod:`coverage_core.history.store`): ``corpus``, ``document_states``,
``document_verdicts``, ``question_set``, ``question_states``, ``topics`` and, when the run knows them,
``decisions`` (slices of ``[decision, question, original, origin, cluster, document]``), ``passages`` (slices of
each document's passage hashes, concatenated, or null; aligned with ``corpus``) and ``question_sources`` (slices
of ``[row, how known, [document, …]]``, aligned with ``question_set``); no digest, NULL, when it does not.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any

import numpy as np

from coverage_core.errors import InputError
from coverage_core.history.parts import (
    DamagedPart,
    PartWriter,
    TooLarge,
    document_states_payload,
    finite_figures,
    json_text,
    verdicts_payload,
)
from coverage_core.history.reading import decode_run
from coverage_core.history.snapshot import RunSnapshot, question_hash

__all__ = ["WrittenParts", "checked_encoding", "encode_run"]

_UNTESTED, _UNDERTESTED, _NO_SHARE = 1, 2, 4


def encode_run(snapshot: RunSnapshot) -> tuple[dict[str, Any], PartWriter]:
    """The ``runs`` row values and the parts of ``snapshot``; TooLarge past a limit of
    :mod:`coverage_core.history.parts`."""
    writer = PartWriter()
    documents = snapshot.documents
    index_of_hash: dict[str, int] = {}
    rows = []
    for index, document in enumerate(documents):
        index_of_hash.setdefault(document.content_hash, index)
        text_digest = None if document.text is None else writer.add("text", document.text.encode("utf-8"))
        rows.append([document.name, document.content_hash, document.n_chunks, text_digest])
    shares = np.array([d.tested_share if d.tested_share is not None else 0.0 for d in documents], dtype="<f8")
    flags = np.array([(_UNTESTED if d.is_untested else 0) | (_UNDERTESTED if d.is_undertested else 0)
                      | (_NO_SHARE if d.tested_share is None else 0) for d in documents], dtype=np.uint8)
    untested = np.array([d.is_untested for d in documents], dtype=bool)
    topics = [[t.label, t.n_chunks, t.n_questions, t.tested_share, t.is_gap,
               [[index_of_hash.get(h, h), n] for h, n in t.documents]] for t in snapshot.topics]
    offtopic = [[i, q.offtopic_reason] for i, q in enumerate(snapshot.questions) if q.is_offtopic]
    row = {
        "label": snapshot.label,
        "recorded_at": snapshot.recorded_at.astimezone(timezone.utc).replace(tzinfo=None),
        "tool_version": snapshot.tool_version,
        "provider": snapshot.provider,
        "model": snapshot.model,
        "support_threshold": snapshot.support_threshold,
        "threshold_reliable": snapshot.threshold_reliable,
        # not-a-number figures are stored as null: what "not defined" is everywhere else, and JSON can hold it
        "headline": json_text(finite_figures(snapshot.headline)),
        "traffic": None if snapshot.traffic is None else json_text(finite_figures(snapshot.traffic)),
        "corpus_digest": writer.add_sliced("corpus", rows, [d.name for d in documents]),
        "document_states_digest": writer.add("document_states", document_states_payload(shares, flags)),
        "document_verdicts_digest": writer.add("document_verdicts", verdicts_payload(untested)),
        "question_set_digest": writer.add_sliced("question_set", [[q.text_hash, q.text] for q in snapshot.questions],
                                                 [q.text_hash for q in snapshot.questions]),
        "question_states_digest": writer.add_json("question_states", offtopic),
        "topics_digest": writer.add_json("topics", topics),
        "decisions_digest": _decisions_digest(writer, snapshot),
        "passages_digest": _passages_digest(writer, snapshot),
        "question_sources_digest": _question_sources_digest(writer, snapshot),
    }
    return row, writer


def _passages_digest(writer: PartWriter, snapshot: RunSnapshot) -> str | None:
    """The manifest of each document's passage hashes (keyed by content, so an unchanged document's slice is
    shared); None when no document's are known."""
    documents = snapshot.documents
    if all(d.passages is None for d in documents):
        return None
    return writer.add_sliced("passages", [None if d.passages is None else "".join(d.passages) for d in documents],
                             [d.content_hash or d.name for d in documents])


def _question_sources_digest(writer: PartWriter, snapshot: RunSnapshot) -> str | None:
    """The manifest of each question's row and sources; None when no question's are known."""
    questions = snapshot.questions
    if all(q.row is None and q.sources is None and not q.source_from for q in questions):
        return None
    return writer.add_sliced(
        "question_sources", [[q.row, q.source_from, None if q.sources is None else list(q.sources)] for q in questions],
        [q.text_hash for q in questions])


def _decisions_digest(writer: PartWriter, snapshot: RunSnapshot) -> str | None:
    """The manifest of the run's decisions, sliced as the questions are (keyed by decision and question); None
    when the run does not know them."""
    if snapshot.decisions is None:
        return None
    decisions = snapshot.decisions
    return writer.add_sliced(
        "decisions", [[d.decision, d.question, d.original, d.origin, d.cluster, d.document] for d in decisions],
        [f"{d.decision} {question_hash(d.question)}" for d in decisions])


class WrittenParts:
    """The parts of a run not yet written, as a :class:`~coverage_core.history.reading.PartSource`: the run is
    read back from them, with the reader's checks and limits, before it is stored."""

    def __init__(self, writer: PartWriter):
        self.writer = writer

    def payloads(self, digests, kind, reading, counts) -> dict[str, bytes]:
        found = {}
        for digest in digests:
            payload = self.writer.payloads.get(digest)
            if payload is not None and self.writer.parts[digest][0] == kind:
                reading.charge(len(payload) * counts[digest])
                found[digest] = payload
        return found


def checked_encoding(snapshot: RunSnapshot) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
    """:func:`encode_run`, then the run read back from its parts as the store will read it: InputError (one
    sentence) for a run that could not be read back, so none is ever recorded that later reads as damaged."""
    try:
        row, writer = encode_run(snapshot)
        values = dict(row, id=0, recorded_at=snapshot.recorded_at)
        decode_run(values, WrittenParts(writer))
    except TooLarge as error:
        raise InputError(f"This run is too large for the history ({error}); record it without "
                         "--keep-document-text, or analyse a smaller knowledge base.") from None
    except DamagedPart as error:
        raise InputError(f"This run cannot be recorded in the history ({error}); give its figures as finite "
                         "numbers, its counts as whole numbers and its names as text.") from None
    return row, writer.parts
