"""The measuring stage: screen the questions against the passages and compute every coverage figure.

:func:`measure` turns the embedded inputs, a clustering and the support
level τ into an :class:`~coverage_core.results.Analysis`: the off-topic
decision, the coverage scores and the cluster, document and question
tables. :mod:`coverage_core.session` decides when it runs again.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from coverage_core import metrics, verdicts
from coverage_core.config import AnalysisConfig
from coverage_core.results import Analysis, Clustering, Corpus, EmbeddedTexts
from coverage_core.stages import calibration as calibration_module, similarity
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.screening import QuestionScreener, apply_overrides
from coverage_core.stages.topics import topic_labels
from coverage_core.suggest.gaps import representatives_by_cluster
from coverage_core.types import QuestionSet
from coverage_core.validation import shorten

# Characters of a passage shown in the cluster and question tables.
_PASSAGE_CHARS = 200


def fit_screener(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    question_embedding: EmbeddedTexts,
    clustering: Clustering,
    *,
    lexical: tuple | None = None,
    question_support_threshold: float | None = None,
    topics: np.ndarray | None = None,
) -> QuestionScreener:
    """The off-topic screener fitted on these questions against this corpus.

    Texts go in with the vectors: the screener's lexical evidence (question
    words no passage contains) is what catches off-topic questions whose
    embeddings sit close to a related topic. ``lexical`` is that evidence
    from an earlier fit on the same texts (``lexical.lexical_coverage``),
    reused when only the clustering changed. ``topics`` bound the
    screener's search for each passage's neighbours (see :func:`measure`);
    None uses ``clustering.labels``.
    """
    return config.screener(question_support_threshold).fit(
        question_embedding.vectors,
        corpus.vectors,
        clustering.labels if topics is None else topics,
        question_texts=questions.texts,
        chunk_texts=[chunk.text for chunk in corpus.chunks],
        lexical=lexical,
    )


def _resolve_calibration(config: AnalysisConfig, calibration: Calibration | None) -> tuple[float | None, Calibration]:
    """The screener's support level (the calibration's question level, or the config's override; None when
    neither gives one) and the calibration to report."""
    question_support_threshold = config.support_threshold
    if calibration is not None:
        question_support_threshold = calibration.question_support_threshold
    if calibration is None:
        calibration = (
            calibration_module.override(config.support_threshold)
            if config.support_threshold is not None
            else calibration_module.default()
        )
    return question_support_threshold, calibration


def _input_warnings(
    corpus: Corpus, questions: QuestionSet, question_embedding: EmbeddedTexts, clustering: Clustering
) -> list[str]:
    """What the clustering, the embedding cache and the token limit had to say about the inputs."""
    warnings = list(clustering.warnings)
    for message in dict.fromkeys([*corpus.embedded.cache_warnings, *question_embedding.cache_warnings]):
        warnings.append(message)
    if corpus.embedded.n_over_limit:
        warnings.append(
            f"{corpus.embedded.n_over_limit} of {len(corpus.chunks)} chunks are longer than the model reads "
            f"({corpus.embedded.token_limit} tokens) and were truncated; use a smaller chunk size."
        )
    long_questions = _long_questions_warning(questions, question_embedding)
    if long_questions:
        warnings.append(long_questions)
    return warnings


def _screen_questions(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    question_embedding: EmbeddedTexts,
    clustering: Clustering,
    screener: QuestionScreener | None,
    question_support_threshold: float | None,
    topics: np.ndarray | None,
    force_include: Sequence[int],
    force_exclude: Sequence[int],
    warnings: list[str],
) -> tuple[QuestionScreener, np.ndarray, np.ndarray]:
    """The fitted screener (``screener`` reused when given), the off-topic decision after the
    overrides, and the vectors of the questions kept."""
    if screener is None:
        screener = fit_screener(
            config, corpus, questions, question_embedding, clustering,
            question_support_threshold=question_support_threshold, topics=topics,
        )
        decision = screener.is_outlier_
    else:
        decision = screener.decide(config.strictness) if config.strictness is not None else screener.is_outlier_
    warnings.extend(screener.warnings_)
    is_outlier = apply_overrides(decision, questions.rows, force_include, force_exclude)
    inliers = question_embedding.vectors[~is_outlier]
    if len(inliers) == 0:
        warnings.append("Every question was screened out as off-topic, so all coverage is 0; include some questions or lower the strictness.")
    return screener, is_outlier, inliers


def _coverage_scores(scan: similarity.SimilarityScan, clustering: Clustering, support_threshold: float) -> dict:
    """Every corpus-level coverage figure of the report, by name."""
    min_distances, labels = scan.min_distances, clustering.labels
    return {
        "basic": metrics.basic_coverage(min_distances),
        "weighted": metrics.weighted_coverage(min_distances, labels),
        "balanced": metrics.balanced_coverage(min_distances, labels, clustering.n_clusters),
        "multi_threshold": scan.multi_threshold_score,
        "multi_n": scan.multi_n_score,
        "tested_share": metrics.tested_share(min_distances, support_threshold),
    }


def name_topics(corpus: Corpus, clustering: Clustering) -> tuple[list[list[str]], list[str]]:
    """A few shortened passages and a name per topic, computed once and kept on ``clustering``."""
    if clustering.topic_names is None or clustering.representatives is None:
        texts = [chunk.text for chunk in corpus.chunks]
        chosen = representatives_by_cluster(corpus.vectors, clustering.labels, clustering.centroids, 3)
        clustering.representatives = [[shorten(texts[i], _PASSAGE_CHARS) for i in rows] for rows in chosen]
        clustering.topic_names = list(topic_labels(texts, clustering.labels, clustering.n_clusters))
    return clustering.representatives, clustering.topic_names


def _cluster_table(
    config: AnalysisConfig,
    corpus: Corpus,
    clustering: Clustering,
    scan: similarity.SimilarityScan,
    inliers: np.ndarray,
    support_threshold: float,
) -> pd.DataFrame:
    """One row per cluster: its size, coverage figures, whether it is a gap, passages and label."""
    labels, centroids, n_clusters = clustering.labels, clustering.centroids, clustering.n_clusters
    min_distances = scan.min_distances
    per_cluster = metrics.cluster_coverages(min_distances, labels, n_clusters)
    n_tested, cluster_tested_share = metrics.cluster_tested(min_distances, labels, n_clusters, support_threshold)
    is_gap = verdicts.is_gap(per_cluster, cluster_tested_share, config.gaps)
    sizes = np.bincount(labels, minlength=n_clusters)
    covering = metrics.questions_covering_clusters(inliers, centroids, config.multi_threshold)
    representatives, names = name_topics(corpus, clustering)
    return pd.DataFrame(
        {
            "cluster": np.arange(n_clusters),
            "size": sizes,
            "share": sizes / len(labels),
            "coverage": per_cluster,
            "multi_threshold_coverage": scan.multi_threshold_per_cluster,
            "multi_n_coverage": scan.multi_n_per_cluster,
            "n_questions": covering,
            "n_tested": n_tested,
            "tested_share": cluster_tested_share,
            "is_gap": is_gap,
            "representative_chunks": [list(passages) for passages in representatives],
            "label": list(names),
        }
    )


def _document_table(
    corpus: Corpus, min_distances: np.ndarray, support_threshold: float, warnings: list[str]
) -> pd.DataFrame:
    """Coverage per document; a warning for each untested or far less covered one."""
    document_table = metrics.document_coverage(min_distances, corpus.chunk_documents, support_threshold=support_threshold)
    for name in document_table.loc[document_table["is_untested"], "document"]:
        warnings.append(
            f"{name} is untested: fewer than {verdicts.UNTESTED_SHARE:.0%} of its passages are reached by a question "
            f"(similarity ≥ {support_threshold:.2f})."
        )
    for name in document_table.loc[document_table["is_low"] & ~document_table["is_untested"], "document"]:
        warnings.append(
            f"{name} is covered far less than the other documents: it is untested or may not belong in this corpus."
        )
    return document_table


def _question_table(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    question_vectors: np.ndarray,
    clustering: Clustering,
    scan: similarity.SimilarityScan,
    screener: QuestionScreener,
    is_outlier: np.ndarray,
) -> tuple[pd.DataFrame, metrics.DuplicateGroups]:
    """One row per question (best chunk, cluster, screening, duplicate of), and the near-duplicate groups."""
    centroids = clustering.centroids
    max_similarity, nearest_chunk = scan.question_similarity, scan.nearest_chunk
    question_clusters = np.argmax(question_vectors @ centroids.T, axis=1) if len(question_vectors) else np.array([], int)
    rows = np.asarray(questions.rows)
    position = {int(row): i for i, row in enumerate(rows)}
    duplicates = metrics.duplicate_groups(
        question_vectors,
        config.redundancy_threshold,
        repeats={position[row]: position[first] for row, first in questions.duplicates.items()
                 if row in position and first in position},
    )
    duplicate_of = duplicates.duplicate_of
    # Shortened once per chunk: many questions share a nearest chunk.
    passages = {i: shorten(corpus.chunks[i].text, _PASSAGE_CHARS) for i in np.unique(nearest_chunk).tolist()}
    question_table = pd.DataFrame(
        {
            "row": rows,
            "text": questions.texts,
            "max_similarity": max_similarity,
            "nearest_chunk": nearest_chunk,
            "nearest_document": [corpus.chunks[i].document for i in nearest_chunk],
            "nearest_passage": [passages[i] for i in nearest_chunk],
            "cluster": question_clusters,
            "outlier_score": screener.outlier_score_,
            "lof_score": screener.lof_score_,
            "is_outlier": is_outlier,
            "duplicate_of": pd.array([int(rows[i]) if i >= 0 else None for i in duplicate_of], dtype="Int64"),
        }
    )
    return question_table, duplicates


def measure(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    question_embedding: EmbeddedTexts,
    clustering: Clustering,
    *,
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
    screener: QuestionScreener | None = None,
    index: similarity.NearestQuestions | None = None,
    calibration: Calibration | None = None,
    topics: np.ndarray | None = None,
) -> Analysis:
    """Screen the questions and compute every coverage figure.

    ``screener`` (fitted) is reused when only the strictness or the overrides
    changed; ``index`` (``similarity.nearest_questions`` of these vectors) skips
    the chunk x question product when measuring again (without it the
    screener's own pass starts the scan). ``calibration`` gives τ; None takes
    ``config.support_threshold`` or the documented default, and the screener
    then gets no τ, so measuring with and without a fitted screener agree.
    ``topics`` are the automatic topics the screener searches neighbours in,
    so the off-topic decision is the same for every K; None: ``clustering.labels``.
    """
    question_support_threshold, calibration = _resolve_calibration(config, calibration)
    support_threshold = calibration.support_threshold
    vectors = question_embedding.vectors
    warnings = _input_warnings(corpus, questions, question_embedding, clustering)
    screener, is_outlier, inliers = _screen_questions(
        config, corpus, questions, question_embedding, clustering, screener, question_support_threshold, topics,
        force_include, force_exclude, warnings,
    )
    scan = similarity.scan_similarities(
        corpus.vectors, vectors, clustering.labels, clustering.centroids, inliers=~is_outlier,
        threshold=config.multi_threshold, n_nearest=config.multi_n,
        index=index if index is not None else _screener_index(screener, len(corpus.chunks), len(vectors)),
    )
    question_table, duplicates = _question_table(
        config, corpus, questions, vectors, clustering, scan, screener, is_outlier
    )
    return Analysis(
        config=config, corpus=corpus, questions=questions, question_vectors=vectors, clustering=clustering,
        screener=screener, is_outlier=is_outlier, min_distances=scan.min_distances,
        nearest_question=scan.nearest_question,
        metrics={name: float(value) for name, value in _coverage_scores(scan, clustering, support_threshold).items()},
        clusters=_cluster_table(config, corpus, clustering, scan, inliers, support_threshold),
        documents=_document_table(corpus, scan.min_distances, support_threshold, warnings),
        question_table=question_table, duplicate_groups=duplicates, warnings=warnings,
        question_embedding=question_embedding, calibration=calibration, topics=topics,
    )


def _screener_index(screener: QuestionScreener, n_chunks: int, n_questions: int) -> similarity.NearestQuestions | None:
    """Each chunk's best question from the screener's own pass, when it was fitted on these vectors.

    The scan then starts from it and recomputes only the chunks whose best
    question does not count (off-topic, or not covering the chunk's cluster).
    """
    nearest = screener.chunk_nearest_question_
    if nearest.shape != (n_chunks,) or screener.max_similarity_.shape != (n_questions,):
        return None
    return similarity.BestMatches(
        screener.max_similarity_, screener.nearest_chunk_, screener.chunk_max_similarity_, nearest
    ).index()


def _long_questions_warning(questions: QuestionSet, embedded: EmbeddedTexts, shown: int = 5) -> str | None:
    """One sentence on the questions longer than the model reads, naming their rows; None if none is."""
    over = embedded.over_limit()
    if len(over) == 0:
        if not embedded.n_over_limit:
            return None
        which = ""  # counts without per-text lengths (a hand-built EmbeddedTexts)
        n_over = embedded.n_over_limit
    else:
        n_over = len(over)
        rows = [str(questions.questions[i].row + 1) for i in over[:shown]]
        more = f" and {n_over - shown} more" if n_over > shown else ""
        label = "row" if n_over == 1 else "rows"
        which = f" ({label} {', '.join(rows)}{more}, counting rows below the header from 1)"
    n_questions = len(questions.questions)
    verb, them, each = ("is", "its", "it") if n_over == 1 else ("are", "their", "each")
    return (
        f"{n_over} of {n_questions} questions{which} {verb} longer than the model reads, so only {them} first "
        f"{embedded.token_limit} tokens were used; shorten {each} or split {each} into separate questions."
    )
