"""Rule ``names_no_document``: a word no passage has, in a question that names no document.

Contract: ``absent_word_q and names_no_document_q``, where
``names_no_document_q``: the question reaches no name or word of a
document's name or title (:func:`names_a_document_subject`); counted only
when at least :data:`MIN_NAMING_SHARE` of the questions at or above the
level name one, so that only where questions do name their documents does
naming none count against a question ("Is the flute constructed of brass
tubing?" beside Trumpet.txt). Strictness-free; needs a level; applies where
:class:`~coverage_core.offtopic.absent_word.AbsentWord` does. Evidence:
``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.absent_word import AbsentWord
from coverage_core.stages.subjects import SubjectEvidence

__all__ = ["MIN_NAMING_SHARE", "NamesNoDocument", "names_a_document_subject"]

MIN_NAMING_SHARE = 0.25
"""Share of the well-supported questions that name a document's subject, from which naming none counts."""


def names_a_document_subject(evidence: list[SubjectEvidence]) -> bool:
    """Whether the question names, by a name or a common word, what a document is about and reaches it: a
    word of a document's name or title that a passage it retrieves mentions ("drums" and Drum.txt)."""
    return any(e.retrieved and (e.in_document_names or e.names_a_document) for e in evidence)


def names_no_document(evidence, min_share: float = MIN_NAMING_SHARE) -> np.ndarray:
    """Whether each question names no document, where questions do name theirs (else all False)."""
    unnamed = np.array([not names_a_document_subject(found) for found in evidence.subjects], dtype=bool)
    supported = np.asarray(evidence.support_margin, dtype=np.float64) >= 0
    if not supported.any() or 1.0 - unnamed[supported].mean() < min_share:
        return np.zeros(evidence.n_questions, dtype=bool)
    return unnamed


class NamesNoDocument(AbsentWord):
    """:class:`~coverage_core.offtopic.absent_word.AbsentWord` with another second sign: naming no document."""

    name = "names_no_document"

    def beside_the_word(self, evidence) -> np.ndarray:
        return names_no_document(evidence)
