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

Modules
-------
``config`` (types, limits, :class:`SubQuestionConfig`), ``results`` (the
result dataclasses), ``prompt`` (the prompt and its cost estimate),
``parsing`` (reading the model's reply), ``decompose`` (asking the LLM, and
:func:`analyze_subquestions`, the entry point), ``scoring`` (support in the
knowledge base) and ``report`` (the JSON report section). Every public name
is importable from ``coverage_core.checks.subquestions``; the entry point for a
:class:`~coverage_core.results.Analysis` is
:func:`coverage_core.checks.runner.run_subquestion_check`.
"""

from __future__ import annotations

from coverage_core.checks.subquestions.config import (
    SUBQUESTION_TYPES,
    SUPPORT_NOTIONS,
    UNAVAILABLE_REASON,
    SubQuestionConfig,
    unavailable_reason,
)
from coverage_core.checks.subquestions.decompose import analyze_subquestions, decompose_questions
from coverage_core.checks.subquestions.parsing import normalize_type, parse_decomposition
from coverage_core.checks.subquestions.prompt import (
    DecompositionCost,
    build_prompt,
    estimate_decomposition_cost,
)
from coverage_core.checks.subquestions.report import subquestion_section
from coverage_core.checks.subquestions.results import (
    Decomposition,
    QuestionScore,
    ScoredSubQuestion,
    SubQuestion,
    SubQuestionResult,
    SupportSummary,
    TypeCoverage,
)
from coverage_core.checks.subquestions.scoring import rescore_subquestions, score_subquestions

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
    "analyze_subquestions",
    "build_prompt",
    "decompose_questions",
    "estimate_decomposition_cost",
    "normalize_type",
    "parse_decomposition",
    "rescore_subquestions",
    "score_subquestions",
    "subquestion_section",
    "unavailable_reason",
]
