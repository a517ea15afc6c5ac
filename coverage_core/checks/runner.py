"""The checks run on a finished analysis, as the command line and the dashboard both run them.

Each takes an :class:`~coverage_core.results.Analysis` and what the check needs beside it (the question
file's columns, the model that embedded the analysis, an LLM, a query log), and returns the check's own
result: retrieval (:func:`run_retrieval_check`) and answerability (:func:`run_answerability_check`),
run in sequence with their errors kept apart by :func:`run_label_checks`; sub-questions
(:func:`run_subquestion_check`); production traffic (:func:`run_traffic_check`). The checks themselves
are the other modules of :mod:`coverage_core.checks`, imported where used: most runs need none of them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from coverage_core.embedding_steps import Progress, embed_stage
from coverage_core.embeddings import Embedder, EmbeddingCache, embed_texts
from coverage_core.errors import CoverageError, InputError
from coverage_core.results import Analysis
from coverage_core.suggest.llm import ChatClient
from coverage_core.validation import is_whole

if TYPE_CHECKING:  # imported where used: most runs need none of them
    from coverage_core.checks import answerability, answerability_labels, retrieval, subquestions, traffic
    from coverage_core.checks.query_log import TrafficLog

__all__ = [
    "LabelChecks", "run_answerability_check", "run_label_checks", "run_retrieval_check", "run_subquestion_check",
    "run_traffic_check",
]


def run_retrieval_check(
    analysis: Analysis, relevant_column: str | None = None, k: int | None = None
) -> "retrieval.RetrievalResult | None":
    """Retrieval metrics for the questions that name their relevant sources.

    The column is ``relevant_column`` or one detected by name
    (``retrieval_labels.RELEVANT_COLUMN_NAMES``); None when the questions name no
    sources. Every labelled question counts, off-topic or not: a question
    labelled with a source is a retrieval test whatever its topic. ``k``
    None is the analysis's ``config.retrieval_k``, the k of *tested*.
    """
    from coverage_core.checks import retrieval, retrieval_labels

    if k is None:
        k = analysis.config.retrieval_k

    questions = analysis.questions
    column = retrieval_labels.find_relevant_column([str(c) for c in questions.frame.columns], relevant_column)
    if column is None or column == questions.question_column:
        return None
    # The screener's pass kept each question's best chunks: no second pass when k fits.
    ranked = None
    kept = analysis.screener.question_top_chunks_
    wanted = min(k, len(analysis.corpus.chunks)) if is_whole(k) else None
    if wanted is not None and kept.shape == (len(analysis.question_vectors), kept.shape[1]) and (
        kept.shape[1] >= wanted
    ):
        ranked = (kept, analysis.screener.question_top_similarities_)
    return retrieval.evaluate_retrieval(
        analysis.question_vectors,
        analysis.corpus.vectors,
        analysis.corpus.chunks,
        retrieval_labels.relevant_from_questions(questions, column),
        k,
        rows=questions.rows,
        question_texts=questions.texts,
        relevant_column=column,
        documents=analysis.corpus.documents,
        ranked=ranked,
    )


def run_answerability_check(analysis: Analysis, label_column: str | None = None):
    """Answerability labels of the questions and how well the best similarity predicts them.

    Returns ``(labels, result)``: ``answerability_labels.QuestionLabels`` (column
    None when the questions carry no labels) and the
    ``answerability.AnswerabilityResult``, or None without labels.
    """
    from coverage_core.checks import answerability, answerability_labels

    labels = answerability_labels.question_labels(analysis.questions, label_column)
    if labels.column is None:
        return labels, None
    similarity = analysis.question_table["max_similarity"].to_numpy(dtype=float)
    return labels, answerability.answerability(similarity, labels.labels)


@dataclasses.dataclass(frozen=True)
class LabelChecks:
    """The checks the question file's own columns drive, as :func:`run_label_checks` leaves them.

    ``retrieval`` (``checks.retrieval.RetrievalResult``) is None when no
    column names the questions' sources; ``labels`` and ``answerability`` are
    :func:`run_answerability_check`'s. A check whose column is unusable is
    None with the reason in its ``*_error`` (a :class:`CoverageError`); the
    other check still ran.
    """

    retrieval: "retrieval.RetrievalResult | None" = None
    labels: "answerability_labels.QuestionLabels | None" = None
    answerability: "answerability.AnswerabilityResult | None" = None
    retrieval_error: CoverageError | None = None
    answerability_error: CoverageError | None = None

    @property
    def notes(self) -> list[str]:
        """What the checks that ran have to say about their columns (rows left out, labels read as …)."""
        notes = [*(self.retrieval.notes if self.retrieval is not None else ())]
        notes += [*(self.labels.notes if self.labels is not None else ())]
        if self.answerability is not None and self.answerability.note:
            notes.append(self.answerability.note)
        return notes

    def raise_first_error(self) -> None:
        """Raise the first check's error, if any: where a named column must be usable (the command line)."""
        for error in (self.retrieval_error, self.answerability_error):
            if error is not None:
                raise error


def run_label_checks(analysis: Analysis, relevant_column: str | None = None, k: int | None = None,
                     label_column: str | None = None) -> LabelChecks:
    """The retrieval check (:func:`run_retrieval_check`) then the answerability check
    (:func:`run_answerability_check`): the one sequence the command line and the dashboard both run."""
    found = LabelChecks()
    try:
        found = dataclasses.replace(found, retrieval=run_retrieval_check(analysis, relevant_column, k))
    except CoverageError as error:
        found = dataclasses.replace(found, retrieval_error=error)
    try:
        labels, result = run_answerability_check(analysis, label_column)
        found = dataclasses.replace(found, labels=labels, answerability=result)
    except CoverageError as error:
        found = dataclasses.replace(found, answerability_error=error)
    return found


def run_subquestion_check(
    analysis: Analysis,
    positions: Sequence[int] | int,
    llm: ChatClient | None,
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "subquestions.SubQuestionConfig | None" = None,
    progress: Callable[[int, int], None] | None = None,
) -> "subquestions.SubQuestionResult":
    """Sub-question coverage of some of the analysis's questions (one LLM request each).

    ``positions`` are indices into ``analysis.questions.questions`` (not
    file rows), in the order to send them; an int ``n`` means the first
    ``n`` questions (all of them when there are fewer). Sub-questions are
    embedded with ``embedder`` through ``cache``, the ones that embedded the
    analysis, so nothing is embedded twice; ``progress(done, total)`` is
    called after each question. The result's ``warnings`` are not added to
    ``analysis.warnings``: the caller shows or reports them.

    Raises InputError when no LLM is given (``subquestions.UNAVAILABLE_REASON``),
    when no question is chosen or a position is out of range; LLM failures
    never raise (see ``subquestions.decompose_questions``).
    """
    from coverage_core.checks import subquestions

    questions = analysis.questions.questions
    if is_whole(positions):
        positions = range(min(max(int(positions), 0), len(questions)))
    chosen = []
    for position in positions:
        if not is_whole(position) or not 0 <= position < len(questions):
            raise InputError(
                f"Question position {position!r} is not one of the {len(questions)} questions "
                f"(0 to {len(questions) - 1})."
            )
        chosen.append(int(position))
    return subquestions.analyze_subquestions(
        [questions[i] for i in chosen],
        analysis.question_vectors[chosen],
        analysis.corpus.vectors,
        lambda texts: embed_texts(list(texts), embedder, cache).vectors,
        llm,
        config,
        progress,
    )


def _topic_names(analysis: Analysis) -> list[str] | None:
    """The knowledge-base topics' names by cluster, as the Results page and the reports show them (None without)."""
    clusters = analysis.clusters
    if "label" not in clusters:
        return None
    names = dict(zip(clusters["cluster"].astype(int), clusters["label"].astype(str)))
    return [names.get(k, "") for k in range(analysis.clustering.n_clusters)]


def run_traffic_check(
    analysis: Analysis,
    log: "TrafficLog",
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "traffic.TrafficConfig | None" = None,
    progress: Progress | None = None,
) -> "traffic.TrafficResult":
    """Production traffic against this analysis: the log's distinct (masked) queries are embedded with
    ``embedder`` (the model of the analysis) through ``cache``, then compared with the on-topic test
    questions at τ and with the passages at the questions' support level (:mod:`coverage_core.checks.traffic`)."""
    from coverage_core.checks import traffic as traffic_check  # the module named in the annotations
    from coverage_core.checks.traffic_answers import strip_masks

    # An anonymisation placeholder ("[REDACTED]") would pull a query's embedding away from its subject.
    embedded = embed_stage([strip_masks(query) for query in log.queries], embedder, cache, "traffic queries", progress)
    inliers = ~np.asarray(analysis.is_outlier, dtype=bool)
    return traffic_check.analyze_traffic(
        log,
        embedded.vectors,
        analysis.question_vectors[inliers],
        [q.text for q, keep in zip(analysis.questions.questions, inliers) if keep],
        analysis.corpus.vectors,
        support_threshold=analysis.calibration.support_threshold,
        question_support_threshold=analysis.calibration.question_support_threshold,
        chunk_texts=[chunk.text for chunk in analysis.corpus.chunks],
        chunk_documents=analysis.corpus.chunk_documents,
        chunk_labels=analysis.clustering.labels,
        topic_names=_topic_names(analysis),
        languages=analysis.languages,
        # Beside what production retrieval returns (when the log records it): the questions targeting each document.
        test_documents=(dict(zip(analysis.documents["document"], analysis.documents["n_questions"]))
                        if "n_questions" in analysis.documents else None),
        config=config or traffic_check.TrafficConfig(
            random_state=analysis.config.random_state, strictness=analysis.config.strictness
        ),
    )
