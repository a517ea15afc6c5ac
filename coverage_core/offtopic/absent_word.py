"""Rule ``absent_word``: a common content word of the question in no passage, with weak support.

Contract: ``absent_word_q and support_margin_q < 0``: the question's first
content word found in no passage (spelling slips it reaches and derived
words folded; past forms aside), while its support margin is below the
support level, if not by enough to be short of support: two weak signs
together ("Is the cougar a cephalopod?"). A word well-supported questions
near several documents use is the testers' wording ("hello"), never absent
(:func:`style_words`). None when the question names a
subject the documents discuss and reaches it (the word is then what it asks
of that subject). Strictness-free; needs a level. Applies where the corpus's
largest language is one whose word forms the word index folds (English,
``Reading.english``). Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import re

import numpy as np

from coverage_core.offtopic.absent_subject import FEW_MENTIONS
from coverage_core.offtopic.rule import Rule
from coverage_core.stages.subjects import SubjectEvidence

__all__ = ["AbsentWord", "absent_word"]

# A past form ("prompted", "bolted") says what happened, not what the question is about: from six letters
# ("breed", "speed" are nouns).
_PAST_FORM = re.compile(r"[a-z]{4,}ed")


STYLE_DOCUMENTS = 3
"""A word no passage has that well-supported questions near at least this many documents use is how the testers
write ("hello", "thanks"), not what a question asks about (:func:`style_words`); 0 turns the reading off."""


def absent_word(evidence: list[SubjectEvidence], style: frozenset[bytes] = frozenset()) -> SubjectEvidence | None:
    """The question's first common content word (kind ``"word"``) in no passage, if any, past forms and
    ``style`` words aside; none when the question names a subject the documents discuss and it reaches."""
    if any(e.subject.kind != "word" and e.n_passages > FEW_MENTIONS and e.retrieved for e in evidence):
        return None
    return next((e for e in evidence if e.subject.kind == "word" and e.n_passages == 0
                 and not _PAST_FORM.fullmatch(e.subject.text) and e.subject.stems[0] not in style), None)


def style_words(evidence, min_documents: int = STYLE_DOCUMENTS) -> frozenset[bytes]:
    """The words no passage has that questions at or above the level (support margin >= 0) use near at least
    ``min_documents`` different documents (the document of each one's closest passage). Empty without a level,
    without documents, or with ``min_documents`` 0."""
    if not min_documents or evidence.support_margin is None or evidence.nearest_document is None:
        return frozenset()
    supported = np.asarray(evidence.support_margin, dtype=np.float64) >= 0
    documents: dict[bytes, set] = {}
    for q in np.flatnonzero(supported):
        for e in evidence.subjects[q]:
            if e.subject.kind == "word" and e.n_passages == 0:
                documents.setdefault(e.subject.stems[0], set()).add(evidence.nearest_document[q])
    return frozenset(word for word, near in documents.items() if len(near) >= min_documents)


def absent_words(evidence) -> list[SubjectEvidence | None]:
    """:func:`absent_word` of each question of ``evidence`` (worked out once)."""
    def compute():
        style = style_words(evidence)
        return [absent_word(found, style) for found in evidence.subjects]

    return evidence.remembered("absent_word", compute)


def word_sentence(evidence, q: int) -> str:
    return f"Asks about {absent_words(evidence)[q].subject.text}, which the documents never mention."


class AbsentWord(Rule):
    name = "absent_word"
    code = "absent_subject"
    needs_strictness = False

    def applies(self, reading) -> bool:
        return reading is not None and reading.english

    def mask(self, evidence, strictness: float = 0.5) -> np.ndarray:
        if evidence.support_margin is None:
            return np.zeros(evidence.n_questions, dtype=bool)
        word = np.array([e is not None for e in absent_words(evidence)], dtype=bool)
        return word & self.beside_the_word(evidence) & ~np.asarray(evidence.foreign, dtype=bool)

    def beside_the_word(self, evidence) -> np.ndarray:
        """The second sign an absent word needs: a support margin below the level."""
        return np.asarray(evidence.support_margin, dtype=np.float64) < 0

    def subject(self, evidence, q: int) -> SubjectEvidence | None:
        return absent_words(evidence)[q]

    def reason(self, evidence, q: int, strictness: float = 0.5) -> str:
        return word_sentence(evidence, q)
