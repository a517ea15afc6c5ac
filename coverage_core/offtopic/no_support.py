"""Rule ``no_support``: no passage is within reach of the question.

Contract: with a support level τ, a question is flagged when its support
margin is below :func:`~coverage_core.offtopic.rule.margin_cut` of the
strictness and its closest passage is below τ. Without τ (library use only;
every product path calibrates) questions are ranked against each other: the
robust z-score of the screener's score above ``3.5 - 2.5 * strictness``,
decided only from :data:`MIN_QUESTIONS_FOR_DECISION` questions. Applies in
every language, with or without texts. Evidence: ``docs/offtopic-rules.md``.
"""

from __future__ import annotations

import numpy as np

from coverage_core.offtopic.rule import Rule, margin_cut, strictness_to_z

__all__ = ["MIN_QUESTIONS_FOR_DECISION", "NoSupport", "relative_cut", "support_sentence"]

MIN_QUESTIONS_FOR_DECISION = 5
"""Fewer questions than this give no bulk for the relative rule's robust z-score: nothing is flagged."""


def relative_cut(evidence, strictness: float) -> float:
    """The relative rule's cut on ``outlier_score``: ``center + strictness_to_z(strictness) * scale``; inf when no
    decision is possible (too few questions, or all scores equal)."""
    if evidence.n_questions < MIN_QUESTIONS_FOR_DECISION or evidence.scale == 0.0:
        return float("inf")
    return evidence.center + strictness_to_z(strictness) * evidence.scale


def short_of_support(evidence, strictness: float) -> np.ndarray:
    """Whether each question's support falls short of the cut (margin below :func:`margin_cut`, or the relative
    rule without a level)."""
    if evidence.support_margin is None:
        return np.asarray(evidence.outlier_score, dtype=np.float64) > relative_cut(evidence, strictness)
    return np.asarray(evidence.support_margin, dtype=np.float64) < margin_cut(strictness)


def support_sentence(evidence, q: int) -> str:
    """Why question ``q`` is short of support when its closest passage is below the level."""
    if evidence.level is None:
        return (f"Its support from the documents is weaker than that of almost every other question "
                f"(closest passage: similarity {evidence.max_similarity[q]:.2f}).")
    return (f"Its closest passage has similarity {evidence.max_similarity[q]:.2f}, below the support level "
            f"{evidence.level:.2f}.")


class NoSupport(Rule):
    name = "no_support"
    code = "no_support"

    def applies(self, reading) -> bool:
        return True

    def mask(self, evidence, strictness: float) -> np.ndarray:
        short = short_of_support(evidence, strictness)
        if evidence.level is None:
            return short
        return short & (np.asarray(evidence.max_similarity) < evidence.level)

    def score(self, evidence, strictness: float) -> np.ndarray:
        if evidence.support_margin is None:
            cut = relative_cut(evidence, strictness)
            if not np.isfinite(cut):
                return np.full(evidence.n_questions, np.nan)
            return (np.asarray(evidence.outlier_score, dtype=np.float64) - cut) / evidence.scale
        return margin_cut(strictness) - np.asarray(evidence.support_margin, dtype=np.float64)

    def reason(self, evidence, q: int, strictness: float) -> str:
        return support_sentence(evidence, q)
