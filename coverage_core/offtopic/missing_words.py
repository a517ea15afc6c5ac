"""Rule ``missing_words``: a passage is within reach, but no passage holds the question's words together.

Contract: with a support level τ, a question is flagged when its support
margin (similarity and word coverage together, ``offtopic.screener.support_margin``)
is below :func:`~coverage_core.offtopic.rule.margin_cut` of the strictness
although its closest passage is at or above τ. Applies in every language
with a level. Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.no_support import short_of_support
from coverage_core.offtopic.rule import Rule, margin_cut

__all__ = ["MissingWords", "words_sentence"]


def words_sentence(evidence, q: int) -> str:
    """Why question ``q`` is short of support although a passage is within reach: its words."""
    absent = evidence.absent_words[q]
    missing = f"; {', '.join(absent[:3])} in none" if absent else ""
    return (f"No passage holds its distinctive words together (at most {evidence.lexical_coverage[q]:.0%} of "
            f"them{missing}), although its closest passage has similarity {evidence.max_similarity[q]:.2f}.")


class MissingWords(Rule):
    name = "missing_words"
    code = "missing_words"

    def applies(self, reading) -> bool:
        return True

    def mask(self, evidence, strictness: float) -> np.ndarray:
        if evidence.level is None or evidence.support_margin is None:
            return np.zeros(evidence.n_questions, dtype=bool)
        return short_of_support(evidence, strictness) & (np.asarray(evidence.max_similarity) >= evidence.level)

    def score(self, evidence, strictness: float) -> np.ndarray:
        return margin_cut(strictness) - np.asarray(evidence.support_margin, dtype=np.float64)

    def reason(self, evidence, q: int, strictness: float) -> str:
        return words_sentence(evidence, q)
