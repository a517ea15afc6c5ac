"""Sub-question coverage: can the knowledge base answer *all* of a question?

A test question's best similarity to any chunk (knowledge-base fitness) says
whether the documents are about the question, not whether they hold
everything an answer needs. Following the idea of Xie et al. (2024), "Do RAG
Systems Cover What Matters? Evaluating and Optimizing Responses with
Sub-Question Coverage" (arXiv:2410.15531), an LLM breaks each selected
question into sub-questions of three types:

* **core** — a complete answer must settle it;
* **background** — context that helps (a definition, who or what something
  is), but an answer is correct without it;
* **follow-up** — what a reader might ask next; related, not required.

Each sub-question is then embedded and scored for *support* in the knowledge
base, in two ways (both always computed):

* ``"knowledge_base"`` (the **headline**, by default): some chunk of the
  knowledge base is similar to it, ``best_similarity >= support_threshold``;
* ``"retrieved"``: one of the ``top_k`` chunks retrieved for the *original*
  question (cosine similarity of the question to every chunk, as a dense
  retriever with the same embedding model would rank them) is similar to it,
  ``retrieved_similarity >= support_threshold``.

"retrieved" implies "knowledge_base" (the top-k chunks are a subset of all
chunks), so the retrieved scores are never higher. The headline is the
knowledge-base notion because this tool judges the test set and the
documents, not a particular retriever; the retrieved notion shows what a
single retrieval for the question would miss even though the documents have
it. :attr:`SubQuestionConfig.headline_support` switches the headline.

"Supported" is a similarity, not a reading: a chunk *about* the sub-question
counts, whether or not it states the answer (a passage on flutes supports
"What is the price of a flute?"). Scores are relative to the embedding model;
calibrate ``support_threshold`` when you change it.

How it differs from the paper
-----------------------------
The paper asks GPT-4 for about 20 sub-questions, then classifies each one in a
separate few-shot call, and measures whether a RAG system's *response*
answers them with an LLM judge. Here one zero-shot call per question returns
at most ``max_sub_questions`` typed, self-contained sub-questions as one JSON
object (our own prompt and wording of the type definitions), and support is
measured in the *knowledge base* by embedding similarity, with no judge. The
paper publishes no weights for mixing the types; ours (core 1, background
0.5, follow-up 0.25) are an assumption, see :class:`SubQuestionConfig`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coverage_core.costs import CostEstimate, approximate_tokens, default_price_table, estimate_llm_cost
from coverage_core.metrics import _unit_rows, _vectors, question_support  # one validation for every vector input
from coverage_core.errors import InputError, ProviderError
from coverage_core.llm import ChatClient, parse_json_loose
from coverage_core.retrieval import top_k_chunks
from coverage_core.types import Question

__all__ = [
    "SUBQUESTION_TYPES",
    "SUPPORT_NOTIONS",
    "UNAVAILABLE_REASON",
    "Decomposition",
    "DecompositionCost",
    "QuestionScore",
    "ScoredSubQuestion",
    "SubQuestion",
    "SubQuestionConfig",
    "SubQuestionResult",
    "SupportSummary",
    "TypeCoverage",
    "analyse_subquestions",
    "build_prompt",
    "decompose_questions",
    "estimate_decomposition_cost",
    "normalise_type",
    "parse_decomposition",
    "rescore_subquestions",
    "score_subquestions",
    "subquestion_section",
    "unavailable_reason",
]

SUBQUESTION_TYPES = ("core", "background", "follow-up")
SUPPORT_NOTIONS = ("knowledge_base", "retrieved")

# The type given to a sub-question whose type the model left out or wrote in
# a way we do not recognise: it counts in the weighted score at the middle
# weight but never in the core share, so an unlabelled sub-question can
# neither make a question look fully answerable nor unanswerable.
DEFAULT_TYPE = "background"

UNAVAILABLE_REASON = (
    "Sub-question coverage needs an LLM to break questions into sub-questions: choose an LLM model "
    "with an OpenAI key (OPENAI_API_KEY), or give the base URL of an OpenAI-compatible server such as "
    "a local Ollama (on the Configure page, or with --llm-model / --llm-base-url)."
)

# LLM failures after which asking again for the next question is pointless;
# the same policy as coverage_core.gaps.
FATAL_KINDS = frozenset({"auth", "connection", "timeout", "rate_limit"})

# Longest question text put into the prompt, and longest sub-question kept, in characters.
PROMPT_QUESTION_CHARS = 2_000
SUB_QUESTION_CHARS = 300
# Assumed reply size for the cost estimate: one JSON item of ~15 words
# ({"text": "...", "type": "background"}) is ~120 characters, ~30 tokens.
REPLY_TOKENS_PER_SUB_QUESTION = 30
REPLY_TOKENS_OVERHEAD = 10


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# availability and cost
# --------------------------------------------------------------------------


def unavailable_reason(llm: ChatClient | None) -> str | None:
    """Why sub-question coverage cannot run, as one sentence, or None when it can."""
    return UNAVAILABLE_REASON if llm is None else None


@dataclass(frozen=True)
class DecompositionCost:
    """An **estimate** of what decomposing the selected questions costs.

    Input tokens are those of the actual prompts, counted offline at about 4
    characters per token; output tokens are an *assumed* budget per question
    (``REPLY_TOKENS_OVERHEAD + max_sub_questions * REPLY_TOKENS_PER_SUB_QUESTION``).
    A reply that is not valid JSON is asked for again once, which costs more.
    """

    estimate: CostEstimate
    n_questions: int
    output_tokens_per_question: int

    @property
    def input_tokens(self) -> int:
        return self.estimate.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.estimate.output_tokens

    @property
    def usd(self) -> float | None:
        return self.estimate.usd

    @property
    def label(self) -> str:
        return (
            f"Estimate for {self.n_questions} question{'s' if self.n_questions != 1 else ''}: "
            f"{self.estimate.label}; the output is an assumed budget of ~{self.output_tokens_per_question:,} "
            "tokens per question, and a reply that is not valid JSON is asked for again, which costs more"
        )


def estimate_decomposition_cost(
    questions: Sequence[Question | str],
    model: str,
    table: pd.DataFrame | None = None,
    provider: str = "openai",
    config: SubQuestionConfig | None = None,
) -> DecompositionCost:
    """Estimate tokens and dollars of decomposing ``questions``, before anything is sent.

    Parameters
    ----------
    questions : sequence of Question or str, the user's selection
    model : str, the LLM model name as in the price table
    table : DataFrame, the editable price table (default:
        :func:`coverage_core.costs.default_price_table`)
    provider : str, the provider column of the price table
    config : SubQuestionConfig, for ``max_sub_questions``

    Returns
    -------
    DecompositionCost; ``usd`` is None when the table has no price for the model.
    """
    config = config or SubQuestionConfig()
    texts = [_question_text(q) for q in questions]
    input_tokens = sum(
        approximate_tokens([_SYSTEM_PROMPT, build_prompt(text, config.max_sub_questions)]) for text in texts
    )
    per_question = REPLY_TOKENS_OVERHEAD + config.max_sub_questions * REPLY_TOKENS_PER_SUB_QUESTION
    table = default_price_table() if table is None else table
    estimate = estimate_llm_cost(input_tokens, per_question * len(texts), model, table, provider=provider)
    return DecompositionCost(estimate, len(texts), per_question)


# --------------------------------------------------------------------------
# the prompt
# --------------------------------------------------------------------------

_SYSTEM_PROMPT = (
    "You help check whether a knowledge base can answer the test questions of a retrieval-augmented "
    "generation (RAG) system. You split a question into the smaller questions that a complete answer "
    "has to settle. Reply with JSON only."
)


def build_prompt(question: str, max_sub_questions: int) -> str:
    """The user prompt that asks for the typed sub-questions of ``question``."""
    return "\n".join(
        [
            f"Question: {_shorten(question, PROMPT_QUESTION_CHARS)}",
            "",
            f"Split this question into at most {max_sub_questions} sub-questions and label each one:",
            '- "core": a complete answer must settle it; without it the answer would be wrong or incomplete.',
            '- "background": context that makes the answer easier to follow (who or what something is, '
            "a definition, when or where), but the answer is still correct without it.",
            '- "follow-up": what a reader might ask after getting the answer; related, but not needed '
            "to answer the question.",
            "",
            "Rules:",
            "- Each sub-question asks one thing and stands on its own: name the people, things and places "
            'instead of writing "it" or "they".',
            "- Ask what a reference text could state; no opinions and nothing about the person asking.",
            "- Do not repeat the question itself, and do not ask the same thing twice.",
            '- Give at least one "core" sub-question; a simple factual question may need only one or two '
            "sub-questions in all.",
            "- List the core sub-questions first, then background, then follow-up.",
            "",
            "Reply with JSON only, in exactly this form:",
            '{"sub_questions": [{"text": "...", "type": "core"}, {"text": "...", "type": "background"}, '
            '{"text": "...", "type": "follow-up"}]}',
        ]
    )


# --------------------------------------------------------------------------
# parsing the reply
# --------------------------------------------------------------------------

_TYPE_SYNONYMS = {
    **dict.fromkeys(
        ("core", "essential", "central", "main", "key", "primary", "required", "necessary", "critical",
         "crucial", "direct", "fundamental", "must"),
        "core",
    ),
    **dict.fromkeys(
        ("background", "context", "contextual", "supporting", "supplementary", "supplemental", "optional",
         "helpful", "secondary", "definition", "definitional", "bg"),
        "background",
    ),
    **dict.fromkeys(
        ("followup", "follow", "related", "further", "furtherreading", "extension", "tangential",
         "additional", "extra", "next", "exploratory", "nextstep"),
        "follow-up",
    ),
}
_TYPE_SUFFIXES = ("subquestions", "subquestion", "questions", "question", "type")
_LIST_KEYS = ("subquestions", "subquestion", "questions", "items", "decomposition", "results", "result", "data")
_TEXT_KEYS = ("text", "subquestion", "question", "q", "query", "content", "value")
_TYPE_KEYS = ("type", "category", "kind", "label", "role", "class", "subquestiontype", "importance", "tag")


def _key(text: str) -> str:
    """Lowercase letters only: "Sub-Questions" and "sub_questions" both become "subquestions"."""
    return re.sub(r"[^a-z]", "", text.lower())


def normalise_type(raw: Any) -> str | None:
    """The type in :data:`SUBQUESTION_TYPES` that ``raw`` names, or None.

    Case, spaces, hyphens and underscores are ignored, a trailing
    "sub-question"/"question"/"type" is dropped, and synonyms are mapped:
    "Core", "essential" → core; "Context", "optional" → background;
    "followup", "follow_up", "Follow-up question", "related" → follow-up.
    """
    if not isinstance(raw, str):
        return None
    key = _key(raw)
    for suffix in _TYPE_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
            break
    return _TYPE_SYNONYMS.get(key)


def _pick(item: dict, keys: Sequence[str]) -> Any:
    by_key = {_key(str(k)): v for k, v in item.items()}
    for key in keys:
        if key in by_key:
            return by_key[key]
    return None


def _raw_items(value: Any) -> list[tuple[Any, str | None]]:
    """(item, type from a grouping key or None) from the reply's JSON, whatever its shape."""
    if isinstance(value, list):
        return [(item, None) for item in value]
    if not isinstance(value, dict):
        raise ValueError("the reply is neither a JSON object nor a list")
    by_key = {_key(str(k)): v for k, v in value.items()}
    for key in _LIST_KEYS:
        if isinstance(by_key.get(key), list):
            return [(item, None) for item in by_key[key]]
    # {"core": [...], "background": [...], "follow-up": [...]}
    grouped = [
        (item, normalise_type(k))
        for k, v in value.items()
        if normalise_type(k) and isinstance(v, list)
        for item in v
    ]
    if grouped:
        return grouped
    # a single sub-question object
    if isinstance(_pick(value, _TEXT_KEYS), str):
        return [(value, None)]
    # any list, or the same one level down ({"result": {"sub_questions": [...]}})
    for inner in value.values():
        if isinstance(inner, list):
            return [(item, None) for item in inner]
    for inner in value.values():
        if isinstance(inner, dict):
            try:
                return _raw_items(inner)
            except ValueError:
                continue
    raise ValueError("the reply holds no list of sub-questions")


def _text_and_type(item: Any) -> tuple[Any, Any]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict):
        text, kind = _pick(item, _TEXT_KEYS), _pick(item, _TYPE_KEYS)
        if text is None and len(item) == 1:  # {"core": "What ...?"}
            ((key, only),) = item.items()
            if normalise_type(str(key)):
                return only, key
        return text, kind
    if isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) for x in item):
        first, second = item  # ["What ...?", "core"] or ["core", "What ...?"]
        return (second, first) if normalise_type(first) and not normalise_type(second) else (first, second)
    return None, None


def _normalise_text(text: str) -> str:
    """Lowercase, punctuation and whitespace runs collapsed: for duplicate checks."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def _shorten(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"


def parse_decomposition(reply: Any, question: str, max_sub_questions: int = 8) -> tuple[SubQuestion, ...]:
    """Typed sub-questions from the model's reply, tolerating the usual deviations.

    Accepts the JSON value (or the raw reply text, parsed with
    :func:`~coverage_core.llm.parse_json_loose`: code fences, prose, trailing
    commas). The list may be under ``sub_questions`` (any spelling), another
    list-valued key, grouped by type (``{"core": [...], ...}``), or be the
    reply itself; items may be objects (text under ``text``/``question``/...,
    type under ``type``/``category``/..., extra keys ignored), plain strings
    or ``[text, type]`` pairs. Types are mapped by :func:`normalise_type`;
    a missing or unknown type becomes :data:`DEFAULT_TYPE` with
    ``type_assumed=True``. Empty texts, repeats (ignoring case and
    punctuation; the first is kept) and the question itself are dropped.
    Beyond ``max_sub_questions``, core ones are kept first, then background,
    then follow-up, in the model's order.

    Raises
    ------
    ValueError
        In plain words, when the reply holds no usable sub-question.
    """
    if isinstance(reply, str):
        reply = parse_json_loose(reply)
    seen = {_normalise_text(question)}
    found: list[SubQuestion] = []
    for item, group_type in _raw_items(reply):
        text, raw_type = _text_and_type(item)
        if not isinstance(text, str) or not text.strip():
            continue
        text = _shorten(text, SUB_QUESTION_CHARS)
        key = _normalise_text(text)
        if not key or key in seen:
            continue
        seen.add(key)
        kind = normalise_type(raw_type) or group_type
        found.append(SubQuestion(text, kind or DEFAULT_TYPE, type_assumed=kind is None))
    if not found:
        raise ValueError("the reply holds no sub-questions")
    if len(found) > max_sub_questions:
        rank = {kind: i for i, kind in enumerate(SUBQUESTION_TYPES)}
        keep = sorted(range(len(found)), key=lambda i: (rank[found[i].type], i))[:max_sub_questions]
        found = [found[i] for i in sorted(keep)]
    return tuple(found)


# --------------------------------------------------------------------------
# decomposition with the LLM
# --------------------------------------------------------------------------


def _question_text(question: Question | str) -> str:
    return question.text if isinstance(question, Question) else str(question)


def _as_questions(questions: Sequence[Question | str]) -> list[Question]:
    return [q if isinstance(q, Question) else Question(row=i, text=str(q)) for i, q in enumerate(questions)]


def decompose_questions(
    questions: Sequence[Question | str],
    llm: ChatClient,
    config: SubQuestionConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Decomposition], list[str]]:
    """Ask the LLM for the typed sub-questions of each question, one request per question.

    A question whose reply cannot be used (not JSON even after the client's
    one reminder, or JSON without sub-questions) or whose request the server
    refused is marked ``"failed"`` with the reason, and the next question is
    asked. After an authentication, connection, timeout or rate-limit
    failure (the client has already retried rate limits and timeouts), the
    remaining questions are marked ``"skipped"`` and not sent; the questions
    already done are kept, and a warning says so.

    Parameters
    ----------
    questions : sequence of Question (row, text), or of str (row = position)
    llm : ChatClient
    config : SubQuestionConfig, for ``max_sub_questions``
    progress : callable(done, total), optional, called after each question

    Returns
    -------
    decompositions : list of Decomposition, one per question, in order
    warnings : list of str, one sentence each
    """
    config = config or SubQuestionConfig()
    items = _as_questions(questions)
    decompositions: list[Decomposition] = []
    warnings: list[str] = []
    stopped: str | None = None
    for done, question in enumerate(items):
        if stopped is not None:
            decompositions.append(
                Decomposition(question.row, question.text, status="skipped", reason=stopped)
            )
        else:
            decomposition, fatal = _decompose_one(question, llm, config)
            decompositions.append(decomposition)
            if fatal:
                error = decomposition.reason
                stopped = f"Not sent because the LLM stopped answering: {error}"
                warnings.append(
                    f"Sub-question decomposition stopped after {done} of {len(items)} questions because the "
                    f"LLM is unavailable: {error} The finished questions are kept; run again for the rest."
                )
        if progress is not None:
            progress(done + 1, len(items))
    failed = sum(d.status == "failed" for d in decompositions) - (1 if stopped else 0)
    if failed:
        warnings.append(
            f"{failed} question{'s' if failed != 1 else ''} could not be broken into sub-questions; "
            "see the reason next to each."
        )
    return decompositions, warnings


def _decompose_one(question: Question, llm: ChatClient, config: SubQuestionConfig) -> tuple[Decomposition, bool]:
    """The question's decomposition, and whether its failure should stop the run."""
    try:
        reply = llm.complete_json(_SYSTEM_PROMPT, build_prompt(question.text, config.max_sub_questions))
    except ProviderError as error:
        failed = Decomposition(question.row, question.text, status="failed", reason=str(error))
        return failed, error.kind in FATAL_KINDS
    try:
        subs = parse_decomposition(reply, question.text, config.max_sub_questions)
    except ValueError as error:
        return Decomposition(
            question.row,
            question.text,
            status="failed",
            reason=f"The LLM's reply could not be used: {error}; run it again or try a stronger model.",
        ), False
    return Decomposition(question.row, question.text, subs), False


# --------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------


def score_subquestions(
    decompositions: Sequence[Decomposition],
    question_vectors,
    chunk_vectors,
    embed: Callable[[list[str]], Any],
    config: SubQuestionConfig | None = None,
    model: str | None = None,
    warnings: Sequence[str] = (),
) -> SubQuestionResult:
    """Embed every sub-question and score its support in the knowledge base.

    With unit vectors ``s`` (a sub-question), ``q`` (its original question),
    ``c_i`` (chunk ``i``), threshold ``t`` and ``R(q)`` the ``top_k`` chunks
    with the highest ``cos(q, c_i)`` (ties: lower index first)::

        best_similarity      = max_i cos(s, c_i)
        retrieved_similarity = max_{i in R(q)} cos(s, c_i)
        supported              = best_similarity >= t
        supported_by_retrieved = retrieved_similarity >= t

    Per question, under either notion, with ``supported_j`` in {0, 1} and
    ``w(type_j)`` the configured weight of sub-question ``j``'s type::

        core_supported_share = (supported core sub-questions) / (core sub-questions)
        weighted_score       = sum_j w(type_j) * supported_j / sum_j w(type_j)

    (NaN when the denominator is 0). Overall, per type, the share of that
    type's sub-questions (pooled over all scored questions) that are
    supported; and the plain mean of the per-question scores.

    Parameters
    ----------
    decompositions : sequence of m Decomposition (failed/skipped ones are kept, unscored)
    question_vectors : array-like of shape (m, d), the original questions, in the same order
    chunk_vectors : array-like of shape (n, d), n >= 1
    embed : callable(list of s str) -> array-like of shape (s, d)
        Called once with every sub-question text (not at all if there is
        none); pass the cached embedder so nothing is embedded twice.
    config : SubQuestionConfig
    model : str, optional, the LLM that decomposed the questions (for the report)
    warnings : sequence of str, carried into the result

    Returns
    -------
    SubQuestionResult
    """
    config = config or SubQuestionConfig()
    decompositions = list(decompositions)
    chunks = _vectors(chunk_vectors, "The chunk embedding matrix", allow_empty=True)
    if chunks.shape[0] == 0:
        raise InputError("There are no chunk embeddings to score against; add documents first.")
    dim = chunks.shape[1]
    questions = _vectors(question_vectors, "The question embedding matrix", dim=dim)
    if questions.shape[0] != len(decompositions):
        raise InputError(
            f"Give one question embedding per decomposed question ({len(decompositions)}); "
            f"got {questions.shape[0]}."
        )
    chunks, questions = _unit_rows(chunks), _unit_rows(questions)

    owners = [j for j, d in enumerate(decompositions) if d.status == "ok" for _ in d.sub_questions]
    texts = [s.text for d in decompositions if d.status == "ok" for s in d.sub_questions]
    best = np.zeros(0)
    best_chunk = np.zeros(0, dtype=np.intp)
    retrieved = np.zeros(0)
    if texts:
        subs = _vectors(embed(list(texts)), "The sub-question embedding matrix", dim=dim)
        if subs.shape[0] != len(texts):
            raise InputError(
                f"The embedder returned {subs.shape[0]} vectors for {len(texts)} sub-questions; "
                "it must return one per text."
            )
        subs = _unit_rows(subs)
        best, best_chunk = question_support(subs, chunks)
        top, _ = top_k_chunks(questions, chunks, min(config.top_k, chunks.shape[0]))  # (m, k)
        owner_top = top[np.asarray(owners, dtype=np.intp)]  # (s, k)
        retrieved = np.einsum("sd,skd->sk", subs, chunks[owner_top]).max(axis=1).astype(np.float64)

    scored: list[tuple[Decomposition, list[dict]]] = []
    position = 0
    for decomposition in decompositions:
        rows = []
        if decomposition.status == "ok":
            for sub in decomposition.sub_questions:
                rows.append(
                    dict(
                        text=sub.text,
                        type=sub.type,
                        type_assumed=sub.type_assumed,
                        best_similarity=float(best[position]),
                        best_chunk=int(best_chunk[position]),
                        retrieved_similarity=float(retrieved[position]),
                    )
                )
                position += 1
        scored.append((decomposition, rows))
    return _summarise(scored, config, model, tuple(warnings))


def _support_summary(
    subs: Sequence[ScoredSubQuestion], supported: Sequence[bool], config: SubQuestionConfig
) -> SupportSummary:
    weights = config.weights
    core = [s for s, ok in zip(subs, supported) if s.type == "core"]
    core_ok = [ok for s, ok in zip(subs, supported) if s.type == "core"]
    total = sum(weights[s.type] for s in subs)
    return SupportSummary(
        core_supported_share=sum(core_ok) / len(core) if core else math.nan,
        weighted_score=sum(weights[s.type] * ok for s, ok in zip(subs, supported)) / total if total > 0 else math.nan,
        unsupported_core=tuple(s.text for s, ok in zip(core, core_ok) if not ok),
    )


_NOT_SCORED = SupportSummary(math.nan, math.nan, ())


def _summarise(
    scored: Sequence[tuple[Decomposition, list[dict]]],
    config: SubQuestionConfig,
    model: str | None,
    warnings: tuple[str, ...],
) -> SubQuestionResult:
    threshold = float(config.support_threshold)
    questions = []
    counts = {kind: [0, 0, 0] for kind in SUBQUESTION_TYPES}
    for decomposition, rows in scored:
        subs = tuple(
            ScoredSubQuestion(
                **row,
                supported=bool(row["best_similarity"] >= threshold),
                supported_by_retrieved=bool(row["retrieved_similarity"] >= threshold),
            )
            for row in rows
        )
        for sub in subs:
            counts[sub.type][0] += 1
            counts[sub.type][1] += sub.supported
            counts[sub.type][2] += sub.supported_by_retrieved
        if decomposition.status == "ok":
            knowledge_base = _support_summary(subs, [s.supported for s in subs], config)
            retrieved = _support_summary(subs, [s.supported_by_retrieved for s in subs], config)
        else:
            knowledge_base = retrieved = _NOT_SCORED
        questions.append(
            QuestionScore(
                row=decomposition.row,
                question=decomposition.question,
                status=decomposition.status,
                reason=decomposition.reason,
                sub_questions=subs,
                knowledge_base=knowledge_base,
                retrieved=retrieved,
                headline_support=config.headline_support,
            )
        )
    by_type = tuple(TypeCoverage(kind, *counts[kind]) for kind in SUBQUESTION_TYPES)
    return SubQuestionResult(config, tuple(questions), by_type, model, warnings)


def rescore_subquestions(result: SubQuestionResult, config: SubQuestionConfig) -> SubQuestionResult:
    """The same result under new weights, threshold or headline, without the LLM or the embedder.

    The similarities are kept from the first scoring, so ``top_k`` must be
    unchanged (a new ``k`` retrieves other chunks: call
    :func:`score_subquestions` again).
    """
    if config.top_k != result.config.top_k:
        raise InputError(
            f"top_k changed from {result.config.top_k} to {config.top_k}; score the sub-questions again "
            "(the cached embeddings make that quick)."
        )
    scored = [
        (
            Decomposition(q.row, q.question, status=q.status, reason=q.reason),
            [
                dict(
                    text=s.text,
                    type=s.type,
                    type_assumed=s.type_assumed,
                    best_similarity=s.best_similarity,
                    best_chunk=s.best_chunk,
                    retrieved_similarity=s.retrieved_similarity,
                )
                for s in q.sub_questions
            ],
        )
        for q in result.questions
    ]
    return _summarise(scored, config, result.model, result.warnings)


# --------------------------------------------------------------------------
# the entry point for the dashboard and the CLI
# --------------------------------------------------------------------------


def analyse_subquestions(
    questions: Sequence[Question | str],
    question_vectors,
    chunk_vectors,
    embed: Callable[[list[str]], Any],
    llm: ChatClient | None,
    config: SubQuestionConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SubQuestionResult:
    """Decompose the selected questions with the LLM and score their sub-questions.

    Parameters
    ----------
    questions : sequence of m Question (or str), the user's selection
    question_vectors : array-like of shape (m, d), their embeddings, same order
    chunk_vectors : array-like of shape (n, d)
    embed : callable(list of str) -> array-like of shape (len, d), the cached embedder
    llm : ChatClient or None
    config : SubQuestionConfig
    progress : callable(done, total), optional, after each question sent

    Returns
    -------
    SubQuestionResult (formulas in :func:`score_subquestions`)

    Raises
    ------
    InputError
        With :data:`UNAVAILABLE_REASON` when no LLM is configured, or when no
        question is selected or the arrays do not match. LLM failures never
        raise: see :func:`decompose_questions`.
    """
    if llm is None:
        raise InputError(UNAVAILABLE_REASON)
    config = config or SubQuestionConfig()
    items = _as_questions(questions)
    if not items:
        raise InputError("Select at least one question to break into sub-questions.")
    # Check the arrays before paying for the LLM.
    chunks = _vectors(chunk_vectors, "The chunk embedding matrix", allow_empty=True)
    if chunks.shape[0] == 0:
        raise InputError("There are no chunk embeddings to score against; add documents first.")
    vectors = _vectors(question_vectors, "The question embedding matrix", dim=chunks.shape[1])
    if vectors.shape[0] != len(items):
        raise InputError(
            f"Give one question embedding per selected question ({len(items)}); got {vectors.shape[0]}."
        )
    decompositions, warnings = decompose_questions(items, llm, config, progress)
    model = getattr(getattr(llm, "config", None), "model", None)
    return score_subquestions(decompositions, vectors, chunks, embed, config, model, warnings)


# --------------------------------------------------------------------------
# report section
# --------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON-safe Python values (numpy types, NaN → None, floats rounded to 6 decimals)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if not math.isfinite(value) else round(value, 6)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _summary_dict(summary: SupportSummary) -> dict:
    return {
        "core_supported_share": summary.core_supported_share,
        "weighted_score": summary.weighted_score,
        "unsupported_core": list(summary.unsupported_core),
    }


def subquestion_section(result: SubQuestionResult) -> dict:
    """The report section for sub-question coverage, in plain JSON types (NaN → None).

    Headline fields (``core_supported_share``, ``weighted_score``,
    ``unsupported_core``, ``overall.by_type[*].share``, ``overall.mean_*``)
    use ``headline_support``; ``by_support`` holds both notions.
    """
    config = result.config

    def overall(notion: str) -> dict:
        retrieved = notion == "retrieved"
        return {
            "by_type": {
                t.type: {
                    "n": t.n,
                    "n_supported": t.n_supported_by_retrieved if retrieved else t.n_supported,
                    "share": t.share_by_retrieved if retrieved else t.share,
                }
                for t in result.by_type
            },
            "mean_core_supported_share": result.mean_core_supported_share(notion),
            "mean_weighted_score": result.mean_weighted_score(notion),
            "n_questions_with_unsupported_core": sum(
                bool(getattr(q, notion).unsupported_core) for q in result.questions if q.status == "ok"
            ),
        }

    by_support = {notion: overall(notion) for notion in SUPPORT_NOTIONS}
    headline = by_support[config.headline_support]
    section = {
        "model": result.model,
        "headline_support": config.headline_support,
        "weights": config.weights,
        "support_threshold": config.support_threshold,
        "top_k": config.top_k,
        "max_sub_questions": config.max_sub_questions,
        "overall": {
            "n_questions": len(result.questions),
            "n_scored": result.count("ok"),
            "n_failed": result.count("failed"),
            "n_skipped": result.count("skipped"),
            "by_type": headline["by_type"],
            "mean_core_supported_share": headline["mean_core_supported_share"],
            "mean_weighted_score": headline["mean_weighted_score"],
            "by_support": by_support,
        },
        "questions": [
            {
                "row": q.row,
                "question": q.question,
                "status": q.status,
                "reason": q.reason,
                "sub_questions": [
                    {
                        "text": s.text,
                        "type": s.type,
                        "type_assumed": s.type_assumed,
                        "best_similarity": s.best_similarity,
                        "supported": s.supported,
                        "retrieved_similarity": s.retrieved_similarity,
                        "supported_by_retrieved": s.supported_by_retrieved,
                    }
                    for s in q.sub_questions
                ],
                **_summary_dict(q.headline),
                "by_support": {
                    "knowledge_base": _summary_dict(q.knowledge_base),
                    "retrieved": _summary_dict(q.retrieved),
                },
            }
            for q in result.questions
        ],
        "warnings": list(result.warnings),
    }
    return _plain(section)
