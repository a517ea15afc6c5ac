"""Settings of sub-question coverage: the types, the limits and :class:`SubQuestionConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coverage_core.errors import InputError
from coverage_core.validation import check_scalar

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

# Longest question text put into the prompt, and longest sub-question kept, in characters.
PROMPT_QUESTION_CHARS = 2_000
SUB_QUESTION_CHARS = 300
# Assumed reply size for the cost estimate: one JSON item of ~15 words
# ({"text": "...", "type": "background"}) is ~120 characters, ~30 tokens.
REPLY_TOKENS_PER_SUB_QUESTION = 30
REPLY_TOKENS_OVERHEAD = 10
# Limits of SubQuestionConfig.
SUPPORT_THRESHOLD_RANGE = (-1.0, 1.0)
"""A cosine similarity."""
MAX_SUB_QUESTIONS_RANGE = (1, 30)
MIN_TOP_K = 1


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
        names = ("core_weight", "background_weight", "follow_up_weight")
        if not any([check_scalar(getattr(self, name), name, float, min_val=0) for name in names]):
            raise InputError("At least one sub-question type weight must be above 0; raise the core weight.")
        low, high = SUPPORT_THRESHOLD_RANGE
        check_scalar(self.support_threshold, "support_threshold", float, min_val=low, max_val=high,
                     hint="it is a cosine similarity")
        check_scalar(self.top_k, "top_k", int, min_val=MIN_TOP_K)
        low, high = MAX_SUB_QUESTIONS_RANGE
        check_scalar(self.max_sub_questions, "max_sub_questions", int, min_val=low, max_val=high)
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
