"""Rule ``absent_subject``: the question names a subject the documents never make their subject.

Contract: the question's least present named subject or period
(:func:`weakest_subject`) is in no passage, or in at most
:data:`FEW_MENTIONS` passages none of which the question retrieves or
reaches ("Intel" against Apple's and NVIDIA's reports; "Microsoft" named as
a partner in five passages). Strictness-free; questions in none of the
documents' languages are never flagged. Applies wherever there are texts;
what counts as a name follows the corpus's reading
(``stages.subjects.question_subjects``). Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.rule import Rule
from coverage_core.stages.subjects import FEW_MENTIONS, SubjectEvidence, asks_of_a_document_subject

__all__ = ["AbsentSubject", "FEW_MENTIONS", "weakest_subject"]

# FEW_MENTIONS (10), defined where the evidence is gathered (the gathering stops at it), is this rule's cut:
# a subject named in at most that many passages, none of which the question retrieves or reaches, is named
# only in passing.


def weakest_subject(evidence: list[SubjectEvidence], closed: bool = False) -> SubjectEvidence | None:
    """The question's least present named subject or period: not retrieved before retrieved, then fewest
    passages; common content words (kind ``"word"``) only anchor.

    A document's own name is the corpus's subject however its passages word it; a period counts only when
    no passage has it. In a question that asks of a document's subject
    (:func:`~coverage_core.stages.subjects.asks_of_a_document_subject`) only a subject no passage has
    counts, and a ``closed`` (yes-or-no) one has none: the documents answer it, if only with no
    ("Was Alessandro Volta an Egyptian?").
    """
    anchored = asks_of_a_document_subject(evidence, closed)
    if anchored and closed:
        return None
    candidates = [
        e for e in evidence
        if e.subject.kind != "word" and not e.in_document_names
        and (e.subject.kind != "period" or e.n_passages == 0) and not (anchored and e.n_passages > 0)
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda e: (e.retrieved, e.n_passages))


def is_absent(n_passages, retrieved, few: int = FEW_MENTIONS) -> np.ndarray:
    """``n_q == 0 or (0 < n_q <= few and not retrieved_q)``; ``n_q = -1`` (no subject) is never flagged.

    n_passages : array-like of int, retrieved : array-like of bool, shape (n_questions,); returns bool.
    """
    n = np.asarray(n_passages, dtype=np.int64)
    return (n == 0) | ((n > 0) & (n <= few) & ~np.asarray(retrieved, dtype=bool))


class AbsentSubject(Rule):
    name = "absent_subject"
    code = "absent_subject"
    needs_strictness = False

    def subjects(self, evidence) -> list[SubjectEvidence | None]:
        """Each question's :func:`weakest_subject` (None when it names none)."""
        return evidence.remembered(self.name, lambda: [
            weakest_subject(found, bool(closed)) for found, closed in zip(evidence.subjects, evidence.closed)])

    def mask(self, evidence, strictness: float = 0.5) -> np.ndarray:
        weakest = self.subjects(evidence)
        n = [-1 if e is None else e.n_passages for e in weakest]
        retrieved = [e is not None and e.retrieved for e in weakest]
        return is_absent(n, retrieved) & ~np.asarray(evidence.foreign, dtype=bool)

    def subject(self, evidence, q: int) -> SubjectEvidence | None:
        return self.subjects(evidence)[q]

    def reason(self, evidence, q: int, strictness: float = 0.5) -> str:
        found = self.subject(evidence, q)
        if found.n_passages == 0:
            return f"Asks about {found.subject.text}, which the documents never mention."
        passages = "passage" if found.n_passages == 1 else "passages"
        return (f"Asks about {found.subject.text}, which the documents mention only in passing ({found.n_passages} "
                f"{passages}, none of those closest to the question).")
