"""Rule ``name_in_passing``: the documents name it, but never with what the question asks of it.

Contract: ``company_q <= PASSING_COMPANY``, where ``company_q`` is the
smallest, over the question's names in at most :data:`PASSING_MENTIONS`
passages (not in a document's name), of the largest share of its other
words (at least :data:`MIN_COMPANY_WORDS`) that one passage mentioning the
name also holds, 1 when that passage also names another of the question's
names (``SubjectEvidence.company``): "Is Taipei in a valley?" beside articles
on Chinese and Japanese. Strictness-free; none in a question that asks of a
document's own subject; questions in none of the documents' languages are
never flagged. Not where the corpus's language capitalises every noun
(German). Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.rule import Rule
from coverage_core.stages.subjects import (
    MIN_COMPANY_WORDS,
    PASSING_MENTIONS,
    SubjectEvidence,
    asks_of_a_document_subject,
)

__all__ = ["MIN_COMPANY_WORDS", "NameInPassing", "PASSING_COMPANY", "PASSING_MENTIONS", "named_in_passing"]

PASSING_COMPANY = 0.25
"""At most this share of a question's other words beside its name in one passage: nothing it asks is said there."""

# PASSING_MENTIONS (20) and MIN_COMPANY_WORDS (2), defined where the evidence is gathered (the gathering
# stops at them), are this rule's cuts: a name in at most 20 passages whose passages hold little else the
# question asks is named in passing; the rule needs at least 2 other words in the question (with one, a
# single paraphrase leaves nothing).


def named_in_passing(evidence: list[SubjectEvidence], closed: bool = False) -> SubjectEvidence | None:
    """The question's name that least shares a passage with the rest of the question (``company``), if any;
    none in a question that asks of a document's subject."""
    if asks_of_a_document_subject(evidence, closed):
        return None
    named = [e for e in evidence if np.isfinite(e.company) and not e.in_document_names]
    return min(named, key=lambda e: e.company) if named else None


def is_in_passing(company, cut: float = PASSING_COMPANY) -> np.ndarray:
    """``company_q <= cut`` (NaN, no such name: False). company : array-like of float; returns bool."""
    return np.asarray(company, dtype=np.float64) <= cut


class NameInPassing(Rule):
    name = "name_in_passing"
    code = "absent_subject"
    needs_strictness = False

    def applies(self, reading) -> bool:
        """Where a capital marks a name: not in a language that capitalises every noun, whose runs of capitalised
        words join common nouns ("Republik der Vereinigten Niederlande", "Song Famous")."""
        return reading is not None and not reading.capitalises_nouns

    def subjects(self, evidence) -> list[SubjectEvidence | None]:
        return evidence.remembered(self.name, lambda: [
            named_in_passing(found, bool(closed)) for found, closed in zip(evidence.subjects, evidence.closed)])

    def company(self, evidence) -> np.ndarray:
        return np.array([np.nan if e is None else e.company for e in self.subjects(evidence)], dtype=np.float64)

    def mask(self, evidence, strictness: float = 0.5) -> np.ndarray:
        return is_in_passing(self.company(evidence)) & ~np.asarray(evidence.foreign, dtype=bool)

    def subject(self, evidence, q: int) -> SubjectEvidence | None:
        return self.subjects(evidence)[q]

    def reason(self, evidence, q: int, strictness: float = 0.5) -> str:
        found = self.subject(evidence, q)
        passages = "passage" if found.n_passages == 1 else "passages"
        return (f"Asks about {found.subject.text}, which the documents mention only in passing ({found.n_passages} "
                f"{passages}, none holding more than {found.company:.0%} of the question's other words).")
