"""The measuring stage: screen the questions against the passages and compute every coverage figure.

:func:`measure` turns the embedded inputs, a clustering and the support
level τ into an :class:`~coverage_core.results.Analysis`: the off-topic
decision, the coverage scores and the cluster, document and question
tables. :mod:`coverage_core.session` decides when it runs again.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd

from coverage_core import duplicates, metrics, verdicts, wording
from coverage_core.config import AnalysisConfig
from coverage_core.embeddings import registry
from coverage_core.languages import LanguageProfile, profile_languages
from coverage_core.offtopic.screener import QuestionScreener
from coverage_core.results import Analysis, Clustering, Corpus, EmbeddedTexts
from coverage_core.stages import calibration as calibration_module, similarity
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.topics import topic_labels
from coverage_core.suggest.document_gaps import main_topics
from coverage_core.suggest.passages import representatives_by_cluster
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
        chunk_documents=[chunk.document for chunk in corpus.chunks],
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
            f"{corpus.embedded.n_over_limit:,} of {wording.count(len(corpus.chunks), 'chunk')} "
            f"{wording.plural(corpus.embedded.n_over_limit, 'is', 'are')} longer than the model reads "
            f"({corpus.embedded.token_limit} tokens) and {wording.plural(corpus.embedded.n_over_limit, 'was', 'were')} "
            "truncated; use a smaller chunk size."
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
    is_outlier = verdicts.apply_overrides(decision, questions.rows, force_include, force_exclude)
    inliers = question_embedding.vectors[~is_outlier]
    if len(inliers) == 0:
        warnings.append("Every question was screened out as off-topic, so all coverage is 0; include some questions or lower the strictness.")
    return screener, is_outlier, inliers


class _Tested(NamedTuple):
    """Which passages are tested, and which documents each question targets."""

    chunks: np.ndarray  # (n_chunks,) bool, metrics.retrieved_tested_chunks
    targets: list[tuple[str, ...]]  # per question, metrics.question_targets (empty when off-topic)


def _tested(
    config: AnalysisConfig,
    corpus: Corpus,
    question_vectors: np.ndarray,
    screener: QuestionScreener,
    is_outlier: np.ndarray,
    support_threshold: float | None,
    target_margin: float = verdicts.TARGET_MARGIN,
) -> _Tested:
    """The passages the on-topic questions test (each question's top ``config.tested_k`` at τ) and the
    documents they target (within ``target_margin`` of their best passage), from the top chunks the
    screener kept when they suffice (else one more pass). ``support_threshold`` None (:func:`tested_level`
    of an unreliable calibration) reads no level: every passage of the top k is tested, and a question
    targets the documents of its top k within ``target_margin`` of its best, whatever the similarity."""
    n_chunks, k = len(corpus.chunks), config.tested_k
    inliers = ~np.asarray(is_outlier, dtype=bool)
    top_chunks, top_similarities = screener.question_top_chunks_, screener.question_top_similarities_
    kept = (
        top_chunks is not None
        and top_chunks.shape[0] == len(question_vectors)
        and top_chunks.shape[1] >= min(k, n_chunks)
    )
    if not kept:
        top_chunks = np.zeros((len(question_vectors), min(k, n_chunks)), dtype=np.intp)
        top_similarities = np.full(top_chunks.shape, -np.inf, dtype=np.float32)
        if inliers.any():
            top_chunks[inliers], top_similarities[inliers] = similarity.question_top_chunks(
                corpus.vectors, question_vectors[inliers], k
            )
    return _Tested(
        metrics.retrieved_tested_chunks(top_chunks, top_similarities, n_chunks, support_threshold, k, inliers),
        metrics.question_targets(
            top_chunks, top_similarities, corpus.chunk_documents, support_threshold, k, inliers, margin=target_margin,
            near_copy=_near_copies(corpus),
        ),
    )


def tested_level(calibration: Calibration) -> float | None:
    """The similarity a retrieved passage needs to be *tested*: τ when the calibration is reliable, else None.

    None: the ranking alone decides, for the tested passages and the untested documents alike (a passage is
    tested when an on-topic question retrieves it among its top ``tested_k``, whatever the similarity).
    Why: short questions often stay under an uncalibrated level; docs/developing.md, *The tested level*.
    """
    return float(calibration.support_threshold) if calibration.reliable else None


def _near_copies(corpus: Corpus):
    """``near_copy(a, b)``: whether chunk ``b`` holds a near-copy of chunk ``a``
    (``calibration.holds_near_copy`` of their word shingles, each read once)."""
    shingles: dict[int, set] = {}

    def read(chunk: int) -> set:
        if chunk not in shingles:
            shingles[chunk] = calibration_module.word_shingles(corpus.chunks[chunk].text)
        return shingles[chunk]

    def near_copy(a: int, b: int) -> bool:
        return calibration_module.holds_near_copy(read(a), read(b))

    return near_copy


def _coverage_scores(
    scan: similarity.SimilarityScan, clustering: Clustering, tested: np.ndarray, n_on_topic: int, k: int
) -> dict:
    """Every corpus-level coverage figure of the report, by name; the tested share's ceiling beside it, for
    the ``n_on_topic`` questions that test passages, at ``k``."""
    min_distances, labels = scan.min_distances, clustering.labels
    return {
        "basic": metrics.basic_coverage(min_distances),
        "weighted": metrics.weighted_coverage(min_distances, labels),
        "balanced": metrics.balanced_coverage(min_distances, labels, clustering.n_clusters),
        "multi_threshold": scan.multi_threshold_score,
        "multi_n": scan.multi_n_score,
        "tested_share": metrics.tested_share_of(tested),
        "testable_share_max": metrics.testable_share_max(n_on_topic, k, len(labels)),
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
    tested: np.ndarray,
) -> pd.DataFrame:
    """One row per cluster: its size, coverage figures, whether it is a gap, passages and label."""
    labels, centroids, n_clusters = clustering.labels, clustering.centroids, clustering.n_clusters
    min_distances = scan.min_distances
    per_cluster = metrics.cluster_coverages(min_distances, labels, n_clusters)
    n_tested, cluster_tested_share = metrics.cluster_tested_of(tested, labels, n_clusters)
    is_gap = verdicts.is_gap(per_cluster, cluster_tested_share, config.gaps)
    sizes = np.bincount(labels, minlength=n_clusters)
    closest = _questions_closest(inliers, centroids, n_clusters)
    representatives, names = name_topics(corpus, clustering)
    return pd.DataFrame(
        {
            "cluster": np.arange(n_clusters),
            "size": sizes,
            "share": sizes / len(labels),
            "coverage": per_cluster,
            "multi_threshold_coverage": scan.multi_threshold_per_cluster,
            "multi_n_coverage": scan.multi_n_per_cluster,
            "n_questions": closest,
            "n_tested": n_tested,
            "tested_share": cluster_tested_share,
            "is_gap": is_gap,
            "representative_chunks": [list(passages) for passages in representatives],
            "label": list(names),
        }
    )


def _questions_closest(inliers: np.ndarray, centroids: np.ndarray, n_clusters: int) -> np.ndarray:
    """The clusters table's ``n_questions``: how many on-topic questions have each topic as their closest (the
    question table's ``cluster``, the nearest centre), so each question counts in one topic and the counts add
    up to the on-topic questions. (Counting every question within the multi-cluster distance of a centre
    gave every topic all the questions with a model whose similarities are all high.)"""
    if not len(inliers):
        return np.zeros(n_clusters, dtype=np.intp)
    nearest = np.argmax(np.asarray(inliers) @ np.asarray(centroids).T, axis=1)
    return np.bincount(nearest, minlength=n_clusters).astype(np.intp)


def document_verdict_warnings(documents: pd.DataFrame, tested_k: int, support_threshold: float | None) -> list[str]:
    """One warning per untested, then per under-tested document of ``documents`` (the analysis's document
    table), as the analysis's warnings carry them: a page that lists these documents already leaves them out.
    ``support_threshold`` is :func:`tested_level` (None: no similarity level was used)."""
    warnings = []
    for row in documents[documents["is_untested"]].itertuples(index=False):
        about = {0: "no on-topic question is", 1: "only 1 on-topic question is"}.get(
            row.n_questions, f"only {row.n_questions} on-topic questions are")
        warnings.append(f"{row.document} is untested: {about} about it; add questions about its content.")
    retrieves = (f"among its top {tested_k}" if support_threshold is None
                 else f"among its top {tested_k} with similarity ≥ {support_threshold:.2f}")
    for row in documents[documents["is_undertested"]].itertuples(index=False):
        questions = wording.plural(row.n_questions, "question targets", "questions target")
        warnings.append(
            f"{row.document} is under-tested: {row.n_questions} {questions} it, but only {row.n_tested} of its "
            f"{row.n_chunks} passages ({row.tested_share:.0%}) are retrieved by a question {retrieves}."
        )
    return warnings


def document_gaps(documents: pd.DataFrame, clusters: pd.DataFrame) -> np.ndarray:
    """The document table's ``is_gap``: :func:`~coverage_core.verdicts.is_document_gap` of each document, its
    main topic (the table's ``cluster``) read in the cluster table's ``is_gap``."""
    topic_is_gap = dict(zip(clusters["cluster"].astype(int), clusters["is_gap"].astype(bool)))
    return verdicts.is_document_gap(documents["is_untested"].astype(bool),
                                    [topic_is_gap.get(int(k), False) for k in documents["cluster"]])


def _document_table(
    config: AnalysisConfig, corpus: Corpus, min_distances: np.ndarray, tested: _Tested, support_threshold: float | None,
    warnings: list[str],
) -> pd.DataFrame:
    """Coverage per document; a warning for each untested, under-tested or far less covered one."""
    n_questions = Counter(document for targets in tested.targets for document in targets)
    table = verdicts.with_document_verdicts(
        metrics.document_coverage(min_distances, corpus.chunk_documents, tested=tested.chunks), n_questions
    )
    warnings.extend(document_verdict_warnings(table, config.tested_k, support_threshold))
    for name in table.loc[table["is_low"] & ~table["is_untested"] & ~table["is_undertested"], "document"]:
        warnings.append(
            f"{name} is covered far less than the other documents: it is untested or may not belong in this corpus."
        )
    return table


def _question_table(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    question_vectors: np.ndarray,
    clustering: Clustering,
    scan: similarity.SimilarityScan,
    screener: QuestionScreener,
    is_outlier: np.ndarray,
) -> tuple[pd.DataFrame, duplicates.DuplicateGroups]:
    """One row per question (best chunk, cluster, screening, duplicate of), and the near-duplicate groups."""
    centroids = clustering.centroids
    max_similarity, nearest_chunk = scan.question_similarity, scan.nearest_chunk
    question_clusters = np.argmax(question_vectors @ centroids.T, axis=1) if len(question_vectors) else np.array([], int)
    rows = np.asarray(questions.rows)
    position = {int(row): i for i, row in enumerate(rows)}
    model_level = registry.near_duplicate_similarity(config.embedding.provider, config.embedding.model)
    groups = duplicates.duplicate_groups(
        question_vectors,
        duplicates.near_duplicate_level(config.redundancy_threshold, model_level),
        repeats={position[row]: position[first] for row, first in questions.duplicates.items()
                 if row in position and first in position},
    )
    duplicate_of = groups.duplicate_of
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
            **_offtopic_columns(config, screener, is_outlier),
            "duplicate_of": pd.array([int(rows[i]) if i >= 0 else None for i in duplicate_of], dtype="Int64"),
        }
    )
    return question_table, groups


def _offtopic_columns(config: AnalysisConfig, screener: QuestionScreener, is_outlier: np.ndarray) -> dict:
    """Why each question is off-topic: ``offtopic_reason`` (a code of ``screening.OFFTOPIC_REASONS``),
    ``offtopic_rule`` (the name of the rule that flagged it, :data:`coverage_core.offtopic.RULE_NAMES`),
    ``offtopic_detail`` (one plain sentence with its numbers) and ``offtopic_score``
    (:meth:`QuestionScreener.offtopic_score`, > 0 exactly when flagged).

    The user's overrides win: a question excluded by hand is ``"excluded"``;
    one kept by hand has no reason, its detail says what the screening
    found, and its score is NaN, as is an excluded question's, since
    neither is the screening's decision.
    """
    strictness = config.strictness if config.strictness is not None else screener.strictness
    automatic = screener.decide(strictness)
    codes, details = screener.explain(strictness)
    rules = screener.flagging_rules(strictness).astype(str)
    score = screener.offtopic_score(strictness)
    excluded = is_outlier & ~automatic
    included = ~is_outlier & automatic
    codes, details = codes.copy(), list(details)
    for q in np.flatnonzero(excluded):
        codes[q], details[q] = "excluded", "You excluded this question."
    for q in np.flatnonzero(included):
        codes[q], details[q] = "", f"You kept this question; the screening had flagged it. {details[q]}"
    score = np.where(excluded | included, np.nan, score)
    rules = np.where(excluded | included, "", rules)
    return {"offtopic_reason": codes.astype(str), "offtopic_detail": details, "offtopic_score": score,
            "offtopic_rule": rules}


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
    languages: LanguageProfile | None = None,
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
    ``languages`` is the inputs' :class:`~coverage_core.languages.LanguageProfile`, read once per inputs
    by the session; None reads it here.
    """
    question_support_threshold, calibration = _resolve_calibration(config, calibration)
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
    level = tested_level(calibration)
    tested = _tested(config, corpus, vectors, screener, is_outlier, level, verdicts.target_margin(calibration))
    clusters = _cluster_table(config, corpus, clustering, scan, inliers, tested.chunks)
    documents = _document_table(config, corpus, scan.min_distances, tested, level, warnings)
    documents["cluster"] = documents["document"].map(main_topics(corpus.chunk_documents, clustering.labels))
    documents["is_gap"] = document_gaps(documents, clusters)
    return Analysis(
        config=config, corpus=corpus, questions=questions, question_vectors=vectors, clustering=clustering,
        screener=screener, is_outlier=is_outlier, min_distances=scan.min_distances,
        nearest_question=scan.nearest_question,
        metrics={name: float(value) for name, value in _coverage_scores(
            scan, clustering, tested.chunks, len(inliers), config.tested_k).items()},
        clusters=clusters, documents=documents,
        question_table=question_table, duplicate_groups=duplicates, warnings=warnings,
        question_embedding=question_embedding, calibration=calibration, topics=topics,
        languages=languages if languages is not None else profile_languages(corpus.documents, questions),
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
