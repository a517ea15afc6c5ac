"""Scoring sub-questions for support in the knowledge base (embedding similarity, no LLM)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coverage_core.checks.retrieval import top_k_chunks
from coverage_core.checks.subquestions.config import SUBQUESTION_TYPES, SubQuestionConfig
from coverage_core.checks.subquestions.results import (
    Decomposition,
    QuestionScore,
    ScoredSubQuestion,
    SubQuestionResult,
    SupportSummary,
    TypeCoverage,
)
from coverage_core.errors import InputError
from coverage_core.metrics import question_support
from coverage_core.validation import check_vectors, unit_rows  # one validation for every vector input


def score_subquestions(
    decompositions: Sequence[Decomposition],
    question_vectors,
    chunk_vectors,
    embed: Callable[[list[str]], Any],
    config: SubQuestionConfig | None = None,
    model: str | None = None,
    warnings: Sequence[str] = (),
) -> SubQuestionResult:
    """Embed every sub-question and score its support in the knowledge base: a :class:`SubQuestionResult`.

    Two notions: a sub-question's best similarity to any chunk, or to one of its original question's
    ``top_k`` chunks, reaches the threshold (formulas: ``_similarities``, ``_support_summary``, ``_summarise``).
    Raises InputError when the vectors do not match each other or the embedder returns the wrong count.
    Why these notions and weights: docs/checks.md, *Sub-question coverage*.

    Parameters
    ----------
    decompositions : sequence of m Decomposition (failed/skipped ones are kept, unscored)
    question_vectors : array-like of shape (m, d), the original questions, in the same order
    chunk_vectors : array-like of shape (n, d), n >= 1
    embed : callable(list of s str) -> array-like of shape (s, d), called once with every sub-question text
        (not at all if there is none); pass the cached embedder so nothing is embedded twice
    config : SubQuestionConfig
    model : str, optional, the LLM that decomposed the questions (for the report)
    warnings : sequence of str, carried into the result
    """
    config = config or SubQuestionConfig()
    decompositions = list(decompositions)
    questions, chunks = check_embeddings(question_vectors, chunk_vectors, len(decompositions), "decomposed")
    questions, chunks = unit_rows(questions), unit_rows(chunks)
    owners = [j for j, d in enumerate(decompositions) if d.status == "ok" for _ in d.sub_questions]
    texts = [s.text for d in decompositions if d.status == "ok" for s in d.sub_questions]
    similarities = _similarities(texts, owners, questions, chunks, embed, config.top_k)
    return _summarise(_scored_rows(decompositions, *similarities), config, model, tuple(warnings))


def check_embeddings(question_vectors, chunk_vectors, n_questions: int, which: str) -> tuple[np.ndarray, np.ndarray]:
    """The question and chunk vectors as arrays, checked against each other.

    InputError unless there is at least one chunk vector, the question
    vectors have the chunks' dimensions, and there is one per question
    (``n_questions`` of them; ``which`` names them in the message, e.g.
    ``"selected"``).
    """
    chunks = check_vectors(chunk_vectors, "The chunk embedding matrix", allow_empty=True)
    if chunks.shape[0] == 0:
        raise InputError("There are no chunk embeddings to score against; add documents first.")
    questions = check_vectors(question_vectors, "The question embedding matrix", dim=chunks.shape[1])
    if questions.shape[0] != n_questions:
        raise InputError(
            f"Give one question embedding per {which} question ({n_questions}); got {questions.shape[0]}."
        )
    return questions, chunks


def _similarities(
    texts: Sequence[str],
    owners: Sequence[int],
    questions: np.ndarray,
    chunks: np.ndarray,
    embed: Callable[[list[str]], Any],
    top_k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sub-question: best similarity to any chunk, that chunk, best similarity to its question's top-k chunks.

    ``owners[i]`` is the position of sub-question ``i``'s original question in ``questions``. With unit
    vectors ``s`` (a sub-question), ``q`` (its original question), ``c_i`` (chunk ``i``) and ``R(q)`` the
    ``top_k`` chunks with the highest ``cos(q, c_i)`` (ties: lower index first)::

        best_similarity      = max_i cos(s, c_i)
        retrieved_similarity = max_{i in R(q)} cos(s, c_i)
    """
    if not texts:
        return np.zeros(0), np.zeros(0, dtype=np.intp), np.zeros(0)
    subs = check_vectors(embed(list(texts)), "The sub-question embedding matrix", dim=chunks.shape[1])
    if subs.shape[0] != len(texts):
        raise InputError(
            f"The embedder returned {subs.shape[0]} vectors for {len(texts)} sub-questions; "
            "it must return one per text."
        )
    subs = unit_rows(subs)
    best, best_chunk = question_support(subs, chunks)
    top, _ = top_k_chunks(questions, chunks, min(top_k, chunks.shape[0]))  # (m, k)
    owner_top = top[np.asarray(owners, dtype=np.intp)]  # (s, k)
    retrieved = np.einsum("sd,skd->sk", subs, chunks[owner_top]).max(axis=1).astype(np.float64)
    return best, best_chunk, retrieved


def _scored_rows(
    decompositions: Sequence[Decomposition], best: np.ndarray, best_chunk: np.ndarray, retrieved: np.ndarray
) -> list[tuple[Decomposition, list[dict]]]:
    """Each decomposition with one row of similarities per sub-question (none for failed or skipped ones)."""
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
    return scored


def _support_summary(
    subs: Sequence[ScoredSubQuestion], supported: Sequence[bool], config: SubQuestionConfig
) -> SupportSummary:
    """One question's figures under one notion of support.

    With ``supported_j`` in {0, 1} and ``w(type_j)`` the configured weight of sub-question ``j``'s type::

        core_supported_share = (supported core sub-questions) / (core sub-questions)
        weighted_score       = sum_j w(type_j) * supported_j / sum_j w(type_j)

    (NaN when the denominator is 0), and the unsupported core sub-questions.
    """
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
    """The result of scored rows, with threshold ``t = config.support_threshold``::

        supported              = best_similarity >= t
        supported_by_retrieved = retrieved_similarity >= t

    Per question, both notions' figures (:func:`_support_summary`). Overall, per type, the counts
    pooled over all scored questions (their shares: :class:`TypeCoverage`); the plain mean of the
    per-question scores is :meth:`SubQuestionResult.mean_core_supported_share` / ``mean_weighted_score``.
    """
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
