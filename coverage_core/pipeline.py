"""The whole method as one call, and as the stages the dashboard reruns.

``analyze(config, documents, questions)`` runs everything and returns an
:class:`Analysis`; the CLI and the tests use it. The dashboard calls the
stages one by one so that only what changed is recomputed:

    chunk_corpus ──▶ embed_chunks ─┬─▶ cluster_chunks   (K changes: ~1 s at 20k chunks)
    questions ─────▶ embed_questions ─┤   (slow, cached on disk by content)
                                      ├─▶ calibrate_corpus (τ, once per corpus, against the automatic topics)
                                      ├─▶ fit_screener     (off-topic scores, once per corpus and τ: the automatic topics too)
                                      └─▶ measure           (thresholds, overrides: fast)
                                            └─▶ find_gaps   (LLM optional)

``analyze_corpus`` is the same from an embedded corpus on (vectors made elsewhere).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from coverage_core.stages import calibration as calibration_module
from coverage_core import metrics
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig, chunk_documents
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.embeddings import EmbeddingCache, Embedder, embed_texts, make_embedder, redact_url
from coverage_core.errors import InputError
from coverage_core.suggest.gaps import Gap, GapConfig, analyse_gaps, representatives_by_cluster
from coverage_core.stages.topics import topic_labels
from coverage_core.suggest.llm import ChatClient
from coverage_core.stages.screening import STRICTNESS_RANGE, QuestionScreener, apply_overrides
from coverage_core.types import Chunk, Document, Question, QuestionSet
from coverage_core.validation import shorten

if TYPE_CHECKING:  # imported where used: most runs need none of them
    from coverage_core.checks import retrieval, traffic

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stage is "chunks" or "questions"."""

# Limits of AnalysisConfig, kept here once; the CLI and the dashboard read them.
MULTI_THRESHOLD_RANGE = (0.0, 2.0)
"""A cosine distance to a cluster centre: above 0, at most 2."""
SEED_RANGE = (0, 2**32 - 1)
"""The seeds scikit-learn's K-means accepts as ``random_state``."""


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which model embeds chunks and questions. API keys are never part of it.

    ``base_url`` is kept whole (it is where requests go); what is saved or
    shown is :meth:`AnalysisConfig.to_dict`, which redacts credentials in it.
    """

    provider: str = "local"
    model: str | None = None
    dimensions: int | None = None
    base_url: str | None = None

    def __repr__(self) -> str:  # a repr can end up in a traceback or a log
        return (
            f"EmbeddingConfig(provider={self.provider!r}, model={self.model!r}, "
            f"dimensions={self.dimensions!r}, base_url={redact_url(self.base_url)!r})"
        )


@dataclass(frozen=True)
class AnalysisConfig:
    """Every parameter of an analysis; the report records all of them.

    ``n_clusters=None`` picks K with :func:`coverage_core.stages.clustering.default_n_clusters`.
    ``strictness`` is the screening strictness of :class:`QuestionScreener`.
    ``redundancy_threshold`` is the cosine similarity from which two
    questions count as near-duplicates (grouped by :func:`metrics.duplicate_groups`).
    ``support_threshold`` is the cosine similarity τ at which a question
    reaches a passage; None calibrates it on the corpus
    (:func:`calibrate_corpus`), a number in (0, 1] overrides it.
    """

    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    n_clusters: int | None = None
    random_state: int = 0
    strictness: float | None = None
    multi_threshold: float = 0.5
    multi_n: int = 2
    redundancy_threshold: float = 0.95
    gaps: GapConfig = field(default_factory=GapConfig)
    support_threshold: float | None = None

    def __post_init__(self):
        if self.n_clusters is not None and self.n_clusters < 1:
            raise InputError(f"The number of clusters must be at least 1 (got {self.n_clusters}).")
        low, high = SEED_RANGE
        if not _is_whole(self.random_state) or not low <= self.random_state <= high:
            raise InputError(f"The random seed must be a whole number from {low} to {high} (got {self.random_state!r}).")
        if self.strictness is not None:
            low, high = STRICTNESS_RANGE
            if not _is_number(self.strictness) or not low <= self.strictness <= high:
                raise InputError(
                    f"The screening strictness must be between {low:g} and {high:g} (got {self.strictness!r}); "
                    "0 flags only extreme questions, 1 flags many."
                )
        low, high = MULTI_THRESHOLD_RANGE
        if not low < self.multi_threshold <= high:
            raise InputError(
                f"The multi-cluster threshold must be a cosine distance between {low:g} and {high:g} "
                f"(got {self.multi_threshold}); values from 0.15 to 0.8 are sensible."
            )
        if self.multi_n < 1:
            raise InputError(f"The multi-cluster N must be at least 1 (got {self.multi_n}).")
        if not 0.0 < self.redundancy_threshold <= 1.0:
            raise InputError(
                f"The redundancy threshold must be a similarity in (0, 1] (got {self.redundancy_threshold})."
            )
        if self.support_threshold is not None:
            calibration_module.override(self.support_threshold)  # raises InputError outside (0, 1]

    def screener(self, support_threshold: float | None = None) -> QuestionScreener:
        """The screener of these settings; ``support_threshold`` (τ) lets it decide against the documents."""
        if self.strictness is None:
            return QuestionScreener(random_state=self.random_state, support_threshold=support_threshold)
        return QuestionScreener(
            strictness=self.strictness, random_state=self.random_state, support_threshold=support_threshold
        )

    def to_dict(self) -> dict:
        """Every parameter, as the report records it: credentials in the base URL become ``***``."""
        data = dataclasses.asdict(self)
        data["embedding"]["base_url"] = redact_url(self.embedding.base_url)
        return data


@dataclass
class EmbeddedTexts:
    """Vectors for a list of texts, with what the cache saved."""

    vectors: np.ndarray
    n_cached: int
    n_embedded: int
    n_over_limit: int
    token_limit: int | None = None
    new_tokens: int = 0
    # Each text's token count (None when not known), to say which texts were truncated.
    token_counts: np.ndarray | None = None
    # What the embedding cache had to say (e.g. it was rebuilt), for the analysis warnings.
    cache_warnings: list[str] = field(default_factory=list)

    def over_limit(self) -> np.ndarray:
        """Positions of the texts longer than the model reads (``token_limit``)."""
        if self.token_counts is None or self.token_limit is None:
            return np.array([], dtype=int)
        return np.flatnonzero(np.asarray(self.token_counts) > int(self.token_limit))


@dataclass
class Corpus:
    """Chunks of the readable documents and their vectors."""

    documents: list[Document]
    chunks: list[Chunk]
    embedded: EmbeddedTexts

    @property
    def vectors(self) -> np.ndarray:
        return self.embedded.vectors

    @property
    def chunk_documents(self) -> list[str]:
        return [chunk.document for chunk in self.chunks]


@dataclass
class Clustering:
    labels: np.ndarray
    centroids: np.ndarray
    warnings: list[str]

    @property
    def n_clusters(self) -> int:
        return len(self.centroids)


@dataclass
class Analysis:
    """Everything an analysis found; ``coverage_core.outputs.report`` serialises it.

    Question-level arrays (``outlier_score``, ``is_outlier`` …) are aligned
    with ``questions.questions``; chunk-level arrays with ``corpus.chunks``.
    """

    config: AnalysisConfig
    corpus: Corpus
    questions: QuestionSet
    question_vectors: np.ndarray
    clustering: Clustering
    screener: QuestionScreener
    is_outlier: np.ndarray
    min_distances: np.ndarray
    nearest_question: np.ndarray
    metrics: dict[str, float]
    clusters: pd.DataFrame
    documents: pd.DataFrame
    question_table: pd.DataFrame
    duplicate_groups: metrics.DuplicateGroups
    warnings: list[str]
    question_embedding: EmbeddedTexts
    gaps: list[Gap] = field(default_factory=list)
    calibration: Calibration = field(default_factory=calibration_module.default)
    # The screener's topics (see measure); None: the clustering's own labels.
    topics: np.ndarray | None = None

    @property
    def screening_topics(self) -> np.ndarray:
        """Each chunk's topic as the off-topic screener saw it: the automatic topics, whatever K is shown."""
        return self.clustering.labels if self.topics is None else self.topics

    @property
    def inlier_vectors(self) -> np.ndarray:
        return self.question_vectors[~self.is_outlier]

    def duplicate_table(self) -> pd.DataFrame:
        """One line per group of near-duplicate questions, largest first.

        Columns: ``row`` and ``question`` of the group's representative,
        ``n_questions`` in the group, ``other_rows`` (list of the other
        members' file rows, in order) and ``min_similarity`` (the lowest
        similarity of a member to the representative). The grouping rule is
        in :func:`metrics.duplicate_groups`.
        """
        groups = self.duplicate_groups
        rows = np.asarray(self.questions.rows)
        texts = self.questions.texts
        columns = ["row", "question", "n_questions", "other_rows", "min_similarity"]
        return pd.DataFrame(
            [
                (int(rows[head]), texts[head], len(members), rows[members[1:]].tolist(),
                 float(groups.similarity[members].min()))
                for head, members in groups.groups
            ],
            columns=columns,
        )


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def build_embedder(config: EmbeddingConfig, api_key: str | None = None, *, max_concurrency: int | None = None) -> Embedder:
    """The embedder ``config`` names; ``max_concurrency`` caps an API's requests in flight (None: the default)."""
    return make_embedder(
        config.provider,
        config.model,
        dimensions=config.dimensions,
        api_key=api_key,
        base_url=config.base_url,
        max_concurrency=max_concurrency,
    )


def chunk_corpus(documents: Sequence[Document], chunking: ChunkingConfig) -> list[Chunk]:
    chunks = chunk_documents(documents, chunking)
    if not chunks:
        raise InputError("The documents contain no text to chunk; add documents with text.")
    return chunks


def _embed(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    stage: str,
    progress: Progress | None,
) -> EmbeddedTexts:
    callback = (lambda done, total: progress(stage, done, total)) if progress else None
    run = embed_texts(list(texts), embedder, cache, progress=callback)
    # Take what the cache had to say (e.g. it was rebuilt), so it is told once, with these vectors.
    notes = getattr(cache, "warnings", None)
    cache_warnings = list(notes or ())
    if notes:
        notes.clear()
    return EmbeddedTexts(
        run.vectors, run.n_cached, run.n_embedded, run.n_over_limit, embedder.max_tokens, run.new_tokens,
        token_counts=run.token_counts, cache_warnings=cache_warnings,
    )


def embed_corpus(
    documents: Sequence[Document],
    chunking: ChunkingConfig,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> Corpus:
    chunks = chunk_corpus(documents, chunking)
    embedded = _embed([chunk.text for chunk in chunks], embedder, cache, "chunks", progress)
    return Corpus(list(documents), chunks, embedded)


def embed_questions(
    questions: QuestionSet,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> EmbeddedTexts:
    return _embed(questions.texts, embedder, cache, "questions", progress)


def calibrate_corpus(
    config: AnalysisConfig,
    corpus: Corpus,
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
    *,
    topic_labels: np.ndarray | None = None,
) -> Calibration:
    """The support threshold τ of this corpus and model, computed once per corpus.

    ``config.support_threshold`` set: that value (``method="override"``),
    nothing embedded. Otherwise calibrated without labels from sentences of
    the corpus (:func:`coverage_core.stages.calibration.calibrate`), embedding about
    800 short texts with ``embedder`` through ``cache``; without an embedder
    the documented default. ``topic_labels`` are the corpus's automatic
    topics (``cluster_chunks(corpus, None, config.random_state).labels``)
    when the caller has them; None clusters them here.
    """
    if config.support_threshold is not None:
        return calibration_module.override(config.support_threshold)
    if embedder is None:
        return calibration_module.default()

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    if topic_labels is None:
        topic_labels = cluster_chunks(corpus, None, config.random_state).labels
    return calibration_module.calibrate(
        corpus.chunks, corpus.vectors, embed, config.random_state, topic_labels=topic_labels
    )


def cluster_chunks(corpus: Corpus, n_clusters: int | None, random_state: int) -> Clustering:
    clusterer = ChunkClusterer(n_clusters=n_clusters, random_state=random_state).fit(corpus.vectors)
    return Clustering(clusterer.labels_, clusterer.cluster_centers_, list(clusterer.warnings_))


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
    support_threshold: float | None = None,
    topics: np.ndarray | None = None,
) -> QuestionScreener:
    """The off-topic screener fitted on these questions against this corpus.

    Texts go in with the vectors: the screener's lexical evidence (question
    words no passage contains) is what catches off-topic questions whose
    embeddings sit close to a related topic. ``lexical`` is that evidence
    from an earlier fit on the same texts (``screening.lexical_coverage``),
    reused when only the clustering changed. ``topics`` bound the
    screener's search for each passage's neighbours (see :func:`measure`);
    None uses ``clustering.labels``.
    """
    return config.screener(support_threshold).fit(
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
    screener_tau = None
    if calibration is not None or config.support_threshold is not None:
        screener_tau = calibration.question_support_threshold if calibration is not None else config.support_threshold
    if calibration is None:
        calibration = (
            calibration_module.override(config.support_threshold)
            if config.support_threshold is not None
            else calibration_module.default()
        )
    return screener_tau, calibration


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
    screener_tau: float | None,
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
            support_threshold=screener_tau, topics=topics,
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


def _coverage_scores(scan: metrics.SimilarityScan, clustering: Clustering, tau: float) -> dict:
    """Every corpus-level coverage figure of the report, by name."""
    min_distances, labels = scan.min_distances, clustering.labels
    return {
        "basic": metrics.basic_coverage(min_distances),
        "weighted": metrics.weighted_coverage(min_distances, labels),
        "balanced": metrics.balanced_coverage(min_distances, labels, clustering.n_clusters),
        "multi_threshold": scan.multi_threshold_score,
        "multi_n": scan.multi_n_score,
        "tested_share": metrics.tested_share(min_distances, tau),
    }


def _cluster_table(
    config: AnalysisConfig,
    corpus: Corpus,
    clustering: Clustering,
    scan: metrics.SimilarityScan,
    inliers: np.ndarray,
    tau: float,
) -> pd.DataFrame:
    """One row per cluster: its size, coverage figures, whether it is a gap, passages and label."""
    labels, centroids, n_clusters = clustering.labels, clustering.centroids, clustering.n_clusters
    min_distances = scan.min_distances
    per_cluster = metrics.cluster_coverages(min_distances, labels, n_clusters)
    n_tested, cluster_tested_share = metrics.cluster_tested(min_distances, labels, n_clusters, tau)
    if config.gaps.rule == "coverage":
        is_gap = per_cluster < config.gaps.gap_threshold
    else:
        is_gap = cluster_tested_share < config.gaps.tested_share_threshold

    sizes = np.bincount(labels, minlength=n_clusters)
    covering = metrics.questions_covering_clusters(inliers, centroids, config.multi_threshold)
    # Passages and names depend on the corpus and the clustering only: kept
    # with the clustering, a threshold or override change does not redo
    # them (naming 50 topics over 200,000 passages takes seconds).
    named = getattr(clustering, "_named_topics", None)
    if named is None or named[0] is not corpus:
        texts = [chunk.text for chunk in corpus.chunks]
        representatives = [
            [shorten(texts[i], _PASSAGE_CHARS) for i in chosen]
            for chosen in representatives_by_cluster(corpus.vectors, labels, centroids, 3)
        ]
        named = (corpus, representatives, topic_labels(texts, labels, n_clusters))
        clustering._named_topics = named
    _, representatives, names = named
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


def _document_table(corpus: Corpus, min_distances: np.ndarray, tau: float, warnings: list[str]) -> pd.DataFrame:
    """Coverage per document; a warning for each untested or far less covered one."""
    document_table = metrics.document_coverage(min_distances, corpus.chunk_documents, support_threshold=tau)
    for name in document_table.loc[document_table["is_untested"], "document"]:
        warnings.append(
            f"{name} is untested: fewer than {metrics.UNTESTED_SHARE:.0%} of its passages are reached by a question "
            f"(similarity ≥ {tau:.2f})."
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
    scan: metrics.SimilarityScan,
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
    index: metrics.NearestQuestions | None = None,
    calibration: Calibration | None = None,
    topics: np.ndarray | None = None,
) -> Analysis:
    """Screen the questions and compute every coverage figure.

    A fitted ``screener`` may be passed in to reuse its scores when only the
    strictness or the overrides changed, and ``index`` (``metrics.nearest_questions``
    of these chunk and question vectors) to skip the chunk x question product
    when measuring again (without it, the screener's own pass over that
    product gives each chunk's best question, and only the chunks whose best
    question is off-topic are recomputed). ``calibration`` is the corpus's support threshold
    (:func:`calibrate_corpus`); None takes ``config.support_threshold`` or,
    unset, the documented default (:data:`calibration.DEFAULT_SUPPORT_THRESHOLD`)
    for the tested share; the screener then gets no τ (as a ``screener``
    fitted without one), so measuring with and without a fitted screener agree.
    ``topics`` are the corpus's automatic topics (``cluster_chunks(corpus,
    None, seed).labels``): the screener searches each passage's neighbours
    within its topic, so with them the off-topic decision is the same for
    every K a user picks; None uses ``clustering.labels``.
    """
    screener_tau, calibration = _resolve_calibration(config, calibration)
    tau = calibration.support_threshold
    question_vectors = question_embedding.vectors
    warnings = _input_warnings(corpus, questions, question_embedding, clustering)
    screener, is_outlier, inliers = _screen_questions(
        config, corpus, questions, question_embedding, clustering, screener, screener_tau, topics,
        force_include, force_exclude, warnings,
    )
    nearest = getattr(screener, "chunk_nearest_question_", None)
    if index is None and nearest is not None and nearest.shape == (len(corpus.chunks),) and (
        screener.max_similarity_.shape == (len(question_vectors),)
    ):
        # The screener's pass found each chunk's best question: the scan
        # starts from it and recomputes only the chunks whose best question
        # does not count (off-topic, or not covering the chunk's cluster).
        index = metrics.BestMatches(
            screener.max_similarity_, screener.nearest_chunk_, screener.chunk_max_similarity_, nearest
        ).index()
    scan = metrics.scan_similarities(
        corpus.vectors,
        question_vectors,
        clustering.labels,
        clustering.centroids,
        inliers=~is_outlier,
        threshold=config.multi_threshold,
        n_nearest=config.multi_n,
        index=index,
    )
    min_distances = scan.min_distances
    scores = _coverage_scores(scan, clustering, tau)
    cluster_table = _cluster_table(config, corpus, clustering, scan, inliers, tau)
    document_table = _document_table(corpus, min_distances, tau, warnings)
    question_table, duplicates = _question_table(
        config, corpus, questions, question_vectors, clustering, scan, screener, is_outlier
    )
    return Analysis(
        config=config,
        corpus=corpus,
        questions=questions,
        question_vectors=question_vectors,
        clustering=clustering,
        screener=screener,
        is_outlier=is_outlier,
        min_distances=min_distances,
        nearest_question=scan.nearest_question,
        metrics={name: float(value) for name, value in scores.items()},
        clusters=cluster_table,
        documents=document_table,
        question_table=question_table,
        duplicate_groups=duplicates,
        warnings=warnings,
        question_embedding=question_embedding,
        calibration=calibration,
        topics=topics,
    )


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


def find_gaps(
    analysis: Analysis,
    llm: ChatClient | None = None,
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
    support_threshold: float | None = None,
) -> Analysis:
    """Rank the least-covered clusters and suggest questions for them.

    With an ``llm`` and an ``embedder`` (the one that embedded the chunks),
    an LLM question is kept only if it reaches its source passage: cosine
    similarity at least ``support_threshold``, by default the analysis's
    calibrated ``analysis.calibration.support_threshold`` when there is one.
    """
    if support_threshold is None:
        support_threshold = getattr(getattr(analysis, "calibration", None), "support_threshold", None)
    embed = None
    if llm is not None and embedder is not None and support_threshold is not None:
        def embed(texts):
            return embed_texts(list(texts), embedder, cache).vectors
    corpus = analysis.corpus
    gaps, gap_warnings = analyse_gaps(
        [chunk.text for chunk in corpus.chunks],
        corpus.chunk_documents,
        corpus.vectors,
        analysis.clustering.labels,
        analysis.clustering.centroids,
        analysis.min_distances,
        analysis.clusters["coverage"].to_numpy(),
        analysis.questions.texts,
        analysis.config.gaps,
        llm=llm,
        embed=embed,
        support_threshold=support_threshold,
        is_gap=analysis.clusters["is_gap"].to_numpy(dtype=bool),
    )
    analysis.gaps = gaps
    analysis.warnings.extend(gap_warnings)
    return analysis


def analyze(
    config: AnalysisConfig,
    documents: Sequence[Document],
    questions: QuestionSet,
    *,
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
    api_key: str | None = None,
    llm: ChatClient | None = None,
    progress: Progress | None = None,
) -> Analysis:
    """Run the whole method: chunk, embed, cluster, screen, measure, find gaps."""
    if not documents:
        raise InputError("There are no readable documents; add PDF, TXT or Markdown files with text.")
    if not questions.questions:
        raise InputError("The question file has no questions; add at least one question.")
    embedder = embedder or build_embedder(config.embedding, api_key)
    corpus = embed_corpus(documents, config.chunking, embedder, cache, progress)
    return analyze_corpus(config, corpus, questions, embedder=embedder, cache=cache, llm=llm, progress=progress)


def analyze_corpus(
    config: AnalysisConfig,
    corpus: Corpus,
    questions: QuestionSet,
    *,
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    llm: ChatClient | None = None,
    progress: Progress | None = None,
) -> Analysis:
    """The method from an embedded corpus on: embed the questions, cluster, calibrate, measure, find gaps.

    ``corpus`` may come from :func:`embed_corpus` or from vectors the user
    embedded elsewhere; ``embedder`` must be the model that made them, since
    it embeds the questions and the calibration probes.
    """
    if not questions.questions:
        raise InputError("The question file has no questions; add at least one question.")
    question_embedding = embed_questions(questions, embedder, cache, progress)
    clustering = cluster_chunks(corpus, config.n_clusters, config.random_state)
    # τ and the off-topic decision are judged against the automatic topics, so neither moves with a chosen K.
    automatic = clustering if config.n_clusters is None else cluster_chunks(corpus, None, config.random_state)
    calibration = calibrate_corpus(config, corpus, embedder, cache, topic_labels=automatic.labels)
    analysis = measure(
        config, corpus, questions, question_embedding, clustering, calibration=calibration, topics=automatic.labels
    )
    return find_gaps(analysis, llm, embedder, cache)


def check_retrieval(
    analysis: Analysis, relevant_column: str | None = None, k: int = 5
) -> "retrieval.RetrievalResult | None":
    """Retrieval metrics for the questions that name their relevant sources.

    The column is ``relevant_column`` or one detected by name
    (``retrieval.RELEVANT_COLUMN_NAMES``); None when the questions name no
    sources. Every labelled question counts, off-topic or not: a question
    labelled with a source is a retrieval test whatever its topic.
    """
    from coverage_core.checks import retrieval

    questions = analysis.questions
    column = retrieval.find_relevant_column([str(c) for c in questions.frame.columns], relevant_column)
    if column is None or column == questions.question_column:
        return None
    # The screener's pass kept each question's best chunks: no second pass when k fits.
    ranked = None
    kept = getattr(analysis.screener, "question_top_chunks_", None)
    whole = isinstance(k, (int, np.integer)) and not isinstance(k, bool)
    wanted = min(k, len(analysis.corpus.chunks)) if whole else None
    if kept is not None and wanted is not None and kept.shape == (len(analysis.question_vectors), kept.shape[1]) and (
        kept.shape[1] >= wanted
    ):
        ranked = (kept, analysis.screener.question_top_similarities_)
    return retrieval.evaluate_retrieval(
        analysis.question_vectors,
        analysis.corpus.vectors,
        analysis.corpus.chunks,
        retrieval.relevant_from_questions(questions, column),
        k,
        rows=questions.rows,
        question_texts=questions.texts,
        relevant_column=column,
        documents=analysis.corpus.documents,
        ranked=ranked,
    )


def check_answerability(analysis: Analysis, label_column: str | None = None):
    """Answerability labels of the questions and how well the best similarity predicts them.

    Returns ``(labels, result)``: ``answerability.QuestionLabels`` (column
    None when the questions carry no labels) and the
    ``answerability.AnswerabilityResult``, or None without labels.
    """
    from coverage_core.checks import answerability

    labels = answerability.question_labels(analysis.questions, label_column)
    if labels.column is None:
        return labels, None
    similarity = analysis.question_table["max_similarity"].to_numpy(dtype=float)
    return labels, answerability.answerability(similarity, labels.labels)


def check_subquestions(
    analysis: Analysis,
    positions: Sequence[int] | int,
    llm: ChatClient | None,
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "coverage_core.checks.subquestions.SubQuestionConfig | None" = None,
    progress: Callable[[int, int], None] | None = None,
) -> "coverage_core.checks.subquestions.SubQuestionResult":
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
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        positions = range(min(max(int(positions), 0), len(questions)))
    chosen = []
    for position in positions:
        whole = isinstance(position, (int, np.integer)) and not isinstance(position, bool)
        if not whole or not 0 <= position < len(questions):
            raise InputError(
                f"Question position {position!r} is not one of the {len(questions)} questions "
                f"(0 to {len(questions) - 1})."
            )
        chosen.append(int(position))
    return subquestions.analyse_subquestions(
        [questions[i] for i in chosen],
        analysis.question_vectors[chosen],
        analysis.corpus.vectors,
        lambda texts: embed_texts(list(texts), embedder, cache).vectors,
        llm,
        config,
        progress,
    )


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


def check_traffic(
    analysis: Analysis,
    log: "traffic.TrafficLog",
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "traffic.TrafficConfig | None" = None,
    progress: Progress | None = None,
) -> "traffic.TrafficResult":
    """Production traffic against this analysis: the log's distinct (masked) queries are embedded with
    ``embedder`` (the model of the analysis) through ``cache``, then compared with the on-topic test
    questions at τ and with the passages at the questions' support level (:mod:`coverage_core.checks.traffic`)."""
    from coverage_core import traffic  # noqa: F811 (the TYPE_CHECKING import is for annotations only)

    embedded = _embed(log.queries, embedder, cache, "traffic queries", progress)
    inliers = ~np.asarray(analysis.is_outlier, dtype=bool)
    return traffic.analyse_traffic(
        log,
        embedded.vectors,
        analysis.question_vectors[inliers],
        [q.text for q, keep in zip(analysis.questions.questions, inliers) if keep],
        analysis.corpus.vectors,
        support_threshold=analysis.calibration.support_threshold,
        answer_threshold=analysis.calibration.question_support_threshold,
        chunk_texts=[chunk.text for chunk in analysis.corpus.chunks],
        chunk_documents=analysis.corpus.chunk_documents,
        chunk_labels=analysis.clustering.labels,
        config=config or traffic.TrafficConfig(random_state=analysis.config.random_state),
    )
