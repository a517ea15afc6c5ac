"""What an off-topic rule is, and the scale the support rules share.

A rule reads the :class:`~coverage_core.offtopic.evidence.Evidence` the
screener gathered once (similarities, word coverage, named subjects) and
says which questions it flags at a strictness, and why, in one sentence.
Rules never read each other's decisions: the screener
(:class:`~coverage_core.offtopic.screen.RuleSet`) runs them in order and the
first that fires explains a flag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from coverage_core.validation import check_scalar

if TYPE_CHECKING:
    from coverage_core.offtopic.evidence import Evidence
    from coverage_core.stages.lexical import Reading

__all__ = ["Rule", "STRICTNESS_RANGE", "STRICTNESS_SPAN", "check_strictness", "margin_cut", "strictness_to_z"]

STRICTNESS_RANGE = (0.0, 1.0)

STRICTNESS_SPAN = 1.5
"""Units of support margin between strictness 0 and 1 (:func:`margin_cut`)."""


def check_strictness(strictness, name: str = "strictness", field: str = "strictness"):
    """``strictness`` unless it is outside :data:`STRICTNESS_RANGE`; ``name`` is what the message calls it."""
    low, high = STRICTNESS_RANGE
    return check_scalar(strictness, name, float, min_val=low, max_val=high,
                        hint="0 flags only extreme questions, 1 flags many", field=field)


def margin_cut(strictness: float) -> float:
    """Support margin below which a question is short of support: ``STRICTNESS_SPAN * (strictness - 1)``.

    Strictness 1 flags every question short of the support level (margin < 0), the default 0.5 those
    short by more than 0.75 of a unit, strictness 0 by more than 1.5 units.
    """
    check_strictness(strictness)
    return STRICTNESS_SPAN * (float(strictness) - 1.0)


def strictness_to_z(strictness: float) -> float:
    """Robust z-score above which a question is flagged without a support level: ``3.5 - 2.5 * strictness``."""
    check_strictness(strictness)
    return 3.5 - 2.5 * float(strictness)


class Rule:
    """One off-topic rule: a name, where it applies, a mask, a score and a reason.

    Subclasses set ``name`` (what a flagged question records, ``offtopic_rule``) and ``code`` (the
    reason family a report shows, one of :data:`coverage_core.offtopic.OFFTOPIC_REASONS`), and
    implement :meth:`mask` and :meth:`reason`. A rule whose mask does not depend on the strictness sets
    ``needs_strictness = False``: the screener computes it once.
    """

    name: ClassVar[str] = ""
    code: ClassVar[str] = ""
    needs_strictness: ClassVar[bool] = True
    flags_score: ClassVar[float] = 1.0
    """The off-topic score of a question this rule flags, when the rule has no shortfall of its own."""

    def applies(self, reading: Reading | None) -> bool:
        """Whether the rule runs on a corpus read this way (None: no texts, embeddings only)."""
        return reading is not None

    def mask(self, evidence: Evidence, strictness: float) -> np.ndarray:
        """Which questions the rule flags: bool of shape (n_questions,)."""
        raise NotImplementedError

    def score(self, evidence: Evidence, strictness: float) -> np.ndarray:
        """The off-topic score of the questions it flags (> 0); the screener reads it where :meth:`mask` is True."""
        return np.full(evidence.n_questions, self.flags_score)

    def reason(self, evidence: Evidence, q: int, strictness: float) -> str:
        """Why question ``q`` is flagged, in one plain sentence with the numbers behind it."""
        raise NotImplementedError

    def reason_code(self, evidence: Evidence, q: int) -> str:
        """The reason family of question ``q``'s flag (:attr:`code` unless the rule words it otherwise)."""
        return self.code

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
