"""Changing a finished analysis's test set: questions appended (accepted suggestions, marked as such) and
the changed set scored again on the same chunks, clusters and support level, so before and after compare.

The Gap page's Apply runs :func:`accept_questions` (the reports' improved set is what it returns) and
exports with :func:`add_questions`; the Compare page scores another test set with :func:`rescore`.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import pandas as pd

from coverage_core.embedding_steps import embed_questions
from coverage_core.embeddings import Embedder, EmbeddingCache
from coverage_core.measure import measure
from coverage_core.results import Analysis
from coverage_core.types import Question, QuestionSet

__all__ = ["accept_questions", "add_questions", "rescore"]


def add_questions(questions: QuestionSet, texts: Sequence[str], marker_column: str = "suggested") -> QuestionSet:
    """The question set with ``texts`` appended as new rows.

    Original rows and columns are untouched; new rows fill the question column,
    leave the user's other columns empty, and are marked ``yes`` in
    ``marker_column`` (added if the file had no such column).
    """
    new_texts = [" ".join(str(t).split()) for t in texts if str(t).strip()]
    frame = questions.frame.copy()
    if marker_column not in frame.columns:
        frame[marker_column] = ""
    start = len(frame)
    additions = pd.DataFrame({column: [""] * len(new_texts) for column in frame.columns}, dtype=str)
    additions[questions.question_column] = new_texts
    additions[marker_column] = "yes"
    frame = pd.concat([frame, additions], ignore_index=True)
    added = [Question(start + i, text) for i, text in enumerate(new_texts)]
    return dataclasses.replace(questions, frame=frame, questions=list(questions.questions) + added)


def rescore(
    analysis: Analysis,
    questions: QuestionSet,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> Analysis:
    """Score a changed question set on the same chunks and clusters.

    Keeping the clustering fixed makes before/after comparable per cluster;
    the cache means only new question texts are embedded.
    """
    question_embedding = embed_questions(questions, embedder, cache)
    return measure(
        analysis.config,
        analysis.corpus,
        questions,
        question_embedding,
        analysis.clustering,
        force_include=force_include,
        force_exclude=force_exclude,
        calibration=analysis.calibration,
        topics=analysis.topics,
        languages=analysis.languages.with_questions(questions) if analysis.languages is not None else None,
    )


def accept_questions(
    analysis: Analysis,
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    marker_column: str = "suggested",
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> tuple[QuestionSet, Analysis]:
    """Append accepted questions to the test set and rescore on the same clusters.

    Accepted questions count as inliers: the user vetted each one, and the
    suggestions are drawn from the corpus. Screening them would let a lone
    new topic (which the screener's question-neighbour smoothing ties to
    whatever questions lie nearest) undo the user's decision.
    """
    improved = add_questions(analysis.questions, texts, marker_column)
    new_rows = [question.row for question in improved.questions[len(analysis.questions.questions):]]
    after = rescore(
        analysis,
        improved,
        embedder,
        cache,
        force_include=[*force_include, *new_rows],
        force_exclude=force_exclude,
    )
    return improved, after
