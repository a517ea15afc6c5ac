"""Rule ``like_questions``: a question a little short of support among like questions short of it too.

Contract: ``support_margin_q < margin_cut + NEIGHBOUR_RELIEF and
neighbour_margin_q < 0``, where ``neighbour_margin_q`` is the median margin of
the questions most like it (at least :data:`MIN_SHORT_NEIGHBOURS` of them at
a similarity of at least the question support level; NaN, never flagged,
with fewer). A group of questions about one missing subject falls short
together; a genuine question short of the level stands among well supported
ones. Applies where the word index folds the corpus's word forms and reads
spaced words (``Reading.folds_word_forms``, not ``spaceless``): elsewhere
genuine questions fall short together too. Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.missing_words import words_sentence
from coverage_core.offtopic.no_support import support_sentence
from coverage_core.offtopic.rule import STRICTNESS_SPAN, Rule, margin_cut

__all__ = ["LikeQuestions", "MIN_SHORT_NEIGHBOURS", "NEIGHBOUR_RELIEF"]

NEIGHBOUR_RELIEF = STRICTNESS_SPAN / 2
"""How much further than the cut a question may be from short when its like questions fall short too:
half the strictness span, the support level itself at the default strictness."""

MIN_SHORT_NEIGHBOURS = 2
"""Like questions needed near a question to judge it with them: one alone is often its own paraphrase."""


class LikeQuestions(Rule):
    name = "like_questions"
    code = "no_support"

    def applies(self, reading) -> bool:
        return reading is None or (reading.folds_word_forms and not reading.spaceless)

    def mask(self, evidence, strictness: float) -> np.ndarray:
        if evidence.support_margin is None or evidence.neighbour_margin is None:
            return np.zeros(evidence.n_questions, dtype=bool)
        margin = np.asarray(evidence.support_margin, dtype=np.float64)
        neighbours = np.asarray(evidence.neighbour_margin, dtype=np.float64)
        return (margin < margin_cut(strictness) + NEIGHBOUR_RELIEF) & (neighbours < 0)  # NaN: False

    def score(self, evidence, strictness: float) -> np.ndarray:
        """The shortfall below the cut that applies to it: the relieved cut where the plain one does not flag it."""
        cut = margin_cut(strictness)
        margin = np.asarray(evidence.support_margin, dtype=np.float64)
        return cut - margin + np.where(margin >= cut, NEIGHBOUR_RELIEF, 0.0)

    def reason_code(self, evidence, q: int) -> str:
        within_reach = evidence.level is not None and evidence.max_similarity[q] >= evidence.level
        return "missing_words" if within_reach else "no_support"

    def reason(self, evidence, q: int, strictness: float) -> str:
        own = (words_sentence if self.reason_code(evidence, q) == "missing_words" else support_sentence)(evidence, q)
        return own + " The questions most like it fall short too: together they ask about what the documents lack."
