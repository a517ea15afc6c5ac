"""What sub-question coverage finds: decompositions, scored sub-questions and per-question scores."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from coverage_core.checks.subquestions.config import SubQuestionConfig


@dataclass(frozen=True)
class SubQuestion:
    """One sub-question as the LLM gave it.

    ``type_assumed`` is True when the model gave no recognisable type and
    :data:`DEFAULT_TYPE` was used.
    """

    text: str
    type: str
    type_assumed: bool = False


@dataclass(frozen=True)
class Decomposition:
    """A question and its sub-questions.

    ``status`` is ``"ok"``, ``"failed"`` (the LLM was asked but its answer
    could not be used) or ``"skipped"`` (not asked, because the LLM had
    become unavailable); ``reason`` says why in plain words ("" when ok).
    """

    row: int
    question: str
    sub_questions: tuple[SubQuestion, ...] = ()
    status: str = "ok"
    reason: str = ""


@dataclass(frozen=True)
class ScoredSubQuestion:
    """A sub-question with its support in the knowledge base.

    ``best_similarity`` is its largest cosine similarity to any chunk
    (``best_chunk`` is that chunk); ``retrieved_similarity`` the largest to the
    ``top_k`` chunks retrieved for the original question. ``supported`` and
    ``supported_by_retrieved`` compare them with the support threshold.
    """

    text: str
    type: str
    type_assumed: bool
    best_similarity: float
    best_chunk: int
    retrieved_similarity: float
    supported: bool
    supported_by_retrieved: bool


@dataclass(frozen=True)
class SupportSummary:
    """Per-question scores under one notion of support.

    ``core_supported_share`` is NaN when the question has no core
    sub-question, ``weighted_score`` NaN when its weights sum to 0.
    """

    core_supported_share: float
    weighted_score: float
    unsupported_core: tuple[str, ...]


@dataclass(frozen=True)
class QuestionScore:
    """Scores of one question; failed and skipped questions have no sub-questions and NaN scores."""

    row: int
    question: str
    status: str
    reason: str
    sub_questions: tuple[ScoredSubQuestion, ...]
    knowledge_base: SupportSummary
    retrieved: SupportSummary
    headline_support: str

    @property
    def headline(self) -> SupportSummary:
        return self.retrieved if self.headline_support == "retrieved" else self.knowledge_base

    @property
    def core_supported_share(self) -> float:
        return self.headline.core_supported_share

    @property
    def weighted_score(self) -> float:
        return self.headline.weighted_score

    @property
    def unsupported_core(self) -> tuple[str, ...]:
        return self.headline.unsupported_core


@dataclass(frozen=True)
class TypeCoverage:
    """Share of one type's sub-questions (over all scored questions) that are supported, both ways."""

    type: str
    n: int
    n_supported: int
    n_supported_by_retrieved: int

    @property
    def share(self) -> float:
        return self.n_supported / self.n if self.n else math.nan

    @property
    def share_by_retrieved(self) -> float:
        return self.n_supported_by_retrieved / self.n if self.n else math.nan


@dataclass(frozen=True)
class SubQuestionResult:
    """Everything sub-question coverage found.

    ``questions`` keeps the order of the selected questions, including failed
    and skipped ones. ``model`` is the LLM that decomposed them (None if not
    known); ``warnings`` are one sentence each.
    """

    config: SubQuestionConfig
    questions: tuple[QuestionScore, ...]
    by_type: tuple[TypeCoverage, ...]
    model: str | None = None
    warnings: tuple[str, ...] = field(default=())

    def _mean(self, notion: str, attribute: str) -> float:
        values = [
            getattr(getattr(q, notion), attribute) for q in self.questions if q.status == "ok"
        ]
        values = [v for v in values if not math.isnan(v)]
        return float(np.mean(values)) if values else math.nan

    def mean_core_supported_share(self, notion: str | None = None) -> float:
        """Mean over scored questions that have a core sub-question (NaN if none)."""
        return self._mean(notion or self.config.headline_support, "core_supported_share")

    def mean_weighted_score(self, notion: str | None = None) -> float:
        """Mean over scored questions with a defined weighted score (NaN if none)."""
        return self._mean(notion or self.config.headline_support, "weighted_score")

    def count(self, status: str) -> int:
        return sum(q.status == status for q in self.questions)
