"""Rule ``absent_word``: a common content word of the question in no passage, with weak support.

Contract: ``absent_word_q and support_margin_q < 0``: the question's first
content word found in no passage (spelling slips it reaches and derived
words folded; past forms aside), while its support margin is below the
support level, if not by enough to be short of support: two weak signs
together ("Is the cougar a cephalopod?"). None when the question names a
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


def absent_word(evidence: list[SubjectEvidence]) -> SubjectEvidence | None:
    """The question's first common content word (kind ``"word"``) in no passage, if any, past forms aside;
    none when the question names a subject the documents discuss and it reaches."""
    if any(e.subject.kind != "word" and e.n_passages > FEW_MENTIONS and e.retrieved for e in evidence):
        return None
    return next((e for e in evidence if e.subject.kind == "word" and e.n_passages == 0
                 and not _PAST_FORM.fullmatch(e.subject.text)), None)


def absent_words(evidence) -> list[SubjectEvidence | None]:
    """:func:`absent_word` of each question of ``evidence`` (worked out once)."""
    return evidence.remembered("absent_word", lambda: [absent_word(found) for found in evidence.subjects])


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
        weak = np.asarray(evidence.support_margin, dtype=np.float64) < 0
        return word & weak & ~np.asarray(evidence.foreign, dtype=bool)

    def subject(self, evidence, q: int) -> SubjectEvidence | None:
        return absent_words(evidence)[q]

    def reason(self, evidence, q: int, strictness: float = 0.5) -> str:
        return word_sentence(evidence, q)
