"""What the off-topic rules read: the evidence the screener gathers once per fit.

Every array has one entry per question. The rules read it and never change
it; what they work out once from it is kept in :attr:`Evidence.memo`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from coverage_core.stages.lexical import Reading
    from coverage_core.stages.subjects import SubjectEvidence

__all__ = ["Evidence"]


@dataclass
class Evidence:
    """One fit's evidence about each question.

    ``support_margin``: how far each question's support is above the level (> 0 supported; None
    without a level). ``neighbour_margin``: the median margin of the questions most like it (NaN with
    too few; None without a level or where the like-questions rule does not apply).
    ``max_similarity``: best cosine to any passage; ``level``: the question support level τ (None:
    the relative decision on ``outlier_score``, with ``center`` and ``scale``).
    ``lexical_coverage`` and ``absent_words``: the word check. ``subjects``: each question's
    :class:`~coverage_core.stages.subjects.SubjectEvidence` list; ``closed``: answered yes or no;
    ``foreign``: in none of the documents' languages. ``reading``: how the corpus is read (None without texts).
    ``nearest_document``: the document of each question's closest passage (None when documents are unknown).
    """

    max_similarity: np.ndarray
    level: float | None = None
    support_margin: np.ndarray | None = None
    neighbour_margin: np.ndarray | None = None
    outlier_score: np.ndarray | None = None
    center: float = 0.0
    scale: float = 0.0
    lexical_coverage: np.ndarray | None = None
    absent_words: list[list[str]] | None = None
    subjects: list[list[SubjectEvidence]] | None = None
    closed: np.ndarray | None = None
    foreign: np.ndarray | None = None
    reading: Reading | None = None
    nearest_document: np.ndarray | None = None
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        n = len(self.max_similarity)
        if self.subjects is None:
            self.subjects = [[] for _ in range(n)]
        if self.absent_words is None:
            self.absent_words = [[] for _ in range(n)]
        if self.lexical_coverage is None:
            self.lexical_coverage = np.full(n, np.nan)
        if self.closed is None:
            self.closed = np.zeros(n, dtype=bool)
        if self.foreign is None:
            self.foreign = np.zeros(n, dtype=bool)

    @property
    def n_questions(self) -> int:
        return len(self.max_similarity)

    def remembered(self, key: str, compute):
        """``compute()`` once per evidence, kept under ``key``."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]
