"""Settings of sub-question coverage: the types, the limits and :class:`SubQuestionConfig`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from coverage_core.errors import InputError

if TYPE_CHECKING:
    from coverage_core.suggest.llm import ChatClient

SUBQUESTION_TYPES = ("core", "background", "follow-up")
SUPPORT_NOTIONS = ("knowledge_base", "retrieved")

# The type given to a sub-question whose type the model left out or wrote in
# a way we do not recognise: it counts in the weighted score at the middle
# weight but never in the core share, so an unlabelled sub-question can
# neither make a question look fully answerable nor unanswerable.
DEFAULT_TYPE = "background"

UNAVAILABLE_REASON = (
    "Sub-question coverage needs an LLM to break questions into sub-questions; set one up first "
    "(a chat model and, for a server other than OpenAI, its base URL)."
)

# LLM failures after which asking again for the next question is pointless;
# the same policy as coverage_core.suggest.gaps.
FATAL_KINDS = frozenset({"auth", "connection", "timeout", "rate_limit"})

# Longest question text put into the prompt, and longest sub-question kept, in characters.
PROMPT_QUESTION_CHARS = 2_000
SUB_QUESTION_CHARS = 300
# Assumed reply size for the cost estimate: one JSON item of ~15 words
# ({"text": "...", "type": "background"}) is ~120 characters, ~30 tokens.
REPLY_TOKENS_PER_SUB_QUESTION = 30
REPLY_TOKENS_OVERHEAD = 10


@dataclass(frozen=True)
class SubQuestionConfig:
    """Settings of sub-question coverage.

    Parameters
    ----------
    core_weight, background_weight, follow_up_weight : float
        Weights of the three types in the weighted score (only their ratios
        matter). Each must be a finite number >= 0, and at least one > 0.
        Defaults 1, 0.5 and 0.25 are **our assumption** (the paper publishes
        none): a core sub-question counts twice as much as a background one,
        and a follow-up, which an answer does not need, counts little but is
        not ignored because a knowledge base that holds it serves the
        reader's next question.
    support_threshold : float in [-1, 1]
        A sub-question is *supported* by a chunk when their cosine similarity
        is at least this. Default 0.5, measured with all-MiniLM-L6-v2 on the
        bundled wiki-qa example: 90% of the on-topic test questions have a
        chunk of their own article at >= 0.50, while the best chunk of an
        off-topic question reaches 0.38 only 5% of the time (the
        knowledge-base fitness page warns below 0.4; a sub-question asks one
        narrow thing, so support is judged stricter). Other embedding models
        have other scales: recalibrate when you change the model.
    top_k : int >= 1
        Chunks retrieved for the original question in the ``"retrieved"``
        notion of support (a common RAG default is 5).
    max_sub_questions : int in [1, 30]
        At most this many sub-questions per question are asked for and kept.
    headline_support : {"knowledge_base", "retrieved"}
        Which notion of support the headline scores use (see the module
        docstring); both are always computed.
    """

    core_weight: float = 1.0
    background_weight: float = 0.5
    follow_up_weight: float = 0.25
    support_threshold: float = 0.5
    top_k: int = 5
    max_sub_questions: int = 8
    headline_support: str = "knowledge_base"

    def __post_init__(self):
        weights = {}
        for name in ("core_weight", "background_weight", "follow_up_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise InputError(f"{name} must be a number, 0 or more; got {value!r}.")
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{name} must be a number, 0 or more; got {value!r}.")
            weights[name] = float(value)
        if not any(weights.values()):
            raise InputError("At least one sub-question type weight must be above 0; raise the core weight.")
        threshold = self.support_threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float, np.integer, np.floating))
            or not -1 <= threshold <= 1
        ):
            raise InputError(
                f"support_threshold is a cosine similarity and must be between -1 and 1; got {threshold!r}."
            )
        for name, low, high in (("top_k", 1, None), ("max_sub_questions", 1, 30)):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, np.integer))
                or value < low
                or (high is not None and value > high)
            ):
                limit = f"between {low} and {high}" if high is not None else f"at least {low}"
                raise InputError(f"{name} must be a whole number {limit}; got {value!r}.")
        if self.headline_support not in SUPPORT_NOTIONS:
            raise InputError(
                f"headline_support must be one of {', '.join(SUPPORT_NOTIONS)}; got {self.headline_support!r}."
            )

    @property
    def weights(self) -> dict[str, float]:
        """Weight per type, keyed by the names in :data:`SUBQUESTION_TYPES`."""
        return {
            "core": float(self.core_weight),
            "background": float(self.background_weight),
            "follow-up": float(self.follow_up_weight),
        }


def unavailable_reason(llm: ChatClient | None) -> str | None:
    """Why sub-question coverage cannot run, as one sentence, or None when it can."""
    return UNAVAILABLE_REASON if llm is None else None
