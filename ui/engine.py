"""The dashboard's calls into coverage_core, without Streamlit.

Pages and ``benchmarks/bench_dashboard.py`` call the same functions, so the
benchmark measures what a user waits for. Nothing here touches session state:
callers pass in what was computed before (a :class:`TuningCache`, the stored
corpus) and store what comes back.

Cost model (why the stages are split this way):

* embedding — minutes; done once per (text, model), cached on disk by the
  core and kept in the session;
* clustering — about a second at 20,000 chunks; redone only when K changes
  (the last few clusterings are kept, so toggling K back is free);
* screening fit — judged against the automatic topics, so redone only when
  the questions, the seed or τ change, never for a new K; strictness and
  overrides reuse the fitted screener, and a refit reuses the lexical
  evidence (it depends on the texts only);
* chunk x question similarities — one pass per data set builds each chunk's
  nearest questions (``metrics.nearest_questions``);
* measure — fast, read from that index; redone on every threshold,
  strictness or override change;
* support level τ (``pipeline.calibrate_corpus``) — a few seconds, once per
  embedded corpus, embedding model and user override: it depends on neither
  the clustering nor the questions, so K and thresholds reuse it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coverage_core import metrics, pipeline
from coverage_core.checks.answerability import DEFAULT_FITNESS_THRESHOLD
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.errors import CoverageError, InputError
from coverage_core.suggest.gaps import GapConfig, is_unfinished_draft
from coverage_core.pipeline import AnalysisConfig, EmbeddingConfig
from coverage_core.outputs.report import build_report, to_safe_csv
from coverage_core.types import QuestionSet
from ui import formats
from ui.messages import user_message
from ui.memo import Recent, memo

SUGGESTION_COLUMNS = ("accept", "question", "cluster", "origin", "document", "passage")
USER_ORIGIN = "you"
TRAFFIC_ORIGIN = "traffic"
MARKER_COLUMN = "suggested"
# Clusterings kept per session: the user moving K back and forth is instant.
KEEP_CLUSTERINGS = 4


# ---------------------------------------------------------------- keys
def digest(*parts: Any) -> str:
    """A short content hash of strings, bytes and simple values."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode("utf-8", "surrogatepass")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:32]


def documents_fingerprint(documents: Sequence) -> str:
    return digest(*[(d.name, d.text) for d in documents])


def questions_fingerprint(questions: QuestionSet) -> str:
    return digest(questions.question_column, tuple(questions.rows), tuple(questions.texts))


def embedding_config(settings) -> EmbeddingConfig:
    return settings.embedding_config()


def chunking_config(settings) -> ChunkingConfig:
    return settings.chunking_config()


def analysis_config(
    settings, embedding: EmbeddingConfig | None = None, chunking: ChunkingConfig | None = None
) -> AnalysisConfig:
    """The core's config from the user's settings (validated by the core: may raise InputError)."""
    return settings.analysis_config(embedding, chunking)


# Every key of a cached dashboard value is a StageKey: frozen, named, compared by value (see ui.memo).
@dataclass(frozen=True)
class StageKey:
    """What a cached value depends on: the key of what it was computed from, and its settings by name.

    ``StageKey.of(inputs.key, method="tsne")``: ``source`` is the key of the
    data (a fingerprint, or the key of the embedded corpus, the inputs, the
    analysis …), ``params`` the settings the value depends on, sorted by name
    and read back as attributes (``key.method``). Each kind of value has its
    own slot, so two stages with the same source and settings never meet.
    The chain: :func:`corpus_key` and :func:`question_key` → :func:`inputs_key`
    → :func:`analysis_key` → the stages computed from it.
    """

    source: Any
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, source: Any, **params: Any) -> StageKey:
        return cls(source, tuple(sorted(params.items())))

    def replace(self, **changes: Any) -> StageKey:
        """The key with some settings changed."""
        return StageKey.of(self.source, **{**dict(self.params), **changes})

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "params"):
            if key == name:
                return value
        raise AttributeError(name)


def llm_key(settings) -> StageKey:
    """What LLM output depends on: the model and its endpoint (never the key)."""
    return StageKey.of("llm", model=settings.llm_model, base_url=settings.llm_base_url)


def corpus_key(documents_fp: str, settings) -> StageKey:
    """What the embedded corpus depends on: the documents (:func:`documents_fingerprint`), chunking and model."""
    return StageKey.of(documents_fp, chunking=chunking_config(settings), embedding=embedding_config(settings))


def question_key(questions_fp: str, settings) -> StageKey:
    """What the embedded questions depend on: the questions (:func:`questions_fingerprint`) and the model."""
    return StageKey.of(questions_fp, embedding=embedding_config(settings))


def embedded_corpus_key(documents_fp: str, settings, chunking: ChunkingConfig | None = None) -> StageKey:
    """The key of passages that came with their vectors (a vector file, a saved analysis).

    Their chunking is fixed: ``chunking`` when known (a saved analysis of
    documents), else the default with ``vectors=True``, which marks passages
    a vector store chunked (they cannot be chunked again). The model is the
    one the settings name, which must be the one that made the vectors.
    """
    return StageKey.of(
        documents_fp, chunking=chunking or ChunkingConfig(), embedding=embedding_config(settings),
        vectors=chunking is None,
    )


def corpus_fingerprint(corpus: pipeline.Corpus) -> str:
    """A content hash of passages that came with their vectors: their documents, texts and vectors."""
    vectors = np.ascontiguousarray(corpus.vectors)
    return digest(*[(c.document, c.text, c.page) for c in corpus.chunks], hashlib.sha256(vectors.tobytes()).hexdigest())


def inputs_key(corpus: StageKey, questions: StageKey) -> StageKey:
    """The embedded corpus and questions together (maps, MDS, sub-questions are keyed by these only)."""
    return StageKey.of(corpus, questions=questions)


# ---------------------------------------------------------------- tuning
@dataclass
class TuningCache:
    """What the cheap stages reuse between reruns of one session (each a :class:`ui.memo.Recent`).

    ``clusterings`` by a :class:`StageKey` of the corpus, K and seed,
    ``screeners`` by one of the inputs, seed and τ (the screener judges
    against the automatic topics, so a new K reuses it; the last few of
    each, so moving K back is instant), ``indexes`` (the chunks' nearest
    questions) by :func:`inputs_key`, ``calibrations`` (τ) by
    :func:`calibration_key`; ``analyses`` holds the last measured analysis
    by its :func:`analysis_key`.
    """

    clusterings: Recent = field(default_factory=lambda: Recent(KEEP_CLUSTERINGS))
    screeners: Recent = field(default_factory=lambda: Recent(KEEP_CLUSTERINGS))
    indexes: Recent = field(default_factory=lambda: Recent(KEEP_CLUSTERINGS))
    calibrations: Recent = field(default_factory=lambda: Recent(KEEP_CLUSTERINGS))
    analyses: Recent = field(default_factory=lambda: Recent(1))

    @property
    def analysis(self) -> tuple[StageKey, Any] | None:
        """The last measured analysis and its key."""
        return self.analyses.last()


@dataclass(frozen=True)
class EmbeddedInputs:
    """The expensive part of an analysis, as stored in the session.

    ``key`` (:func:`inputs_key`), ``embedding`` and ``chunking`` (the model
    and chunking it was embedded with) are derived from the two keys.
    """

    corpus: pipeline.Corpus
    corpus_key: StageKey
    questions: QuestionSet
    question_embedding: pipeline.EmbeddedTexts
    question_key: StageKey
    key: StageKey = field(init=False)
    embedding: EmbeddingConfig = field(init=False)
    chunking: ChunkingConfig = field(init=False)

    def __post_init__(self) -> None:
        derived = {"key": inputs_key(self.corpus_key, self.question_key), "embedding": self.corpus_key.embedding,
                   "chunking": self.corpus_key.chunking}
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def from_vector_store(self) -> bool:
        """Whether the passages were chunked and embedded by the user's vector store (:func:`embedded_corpus_key`)."""
        return bool(getattr(self.corpus_key, "vectors", False))


def clustering_for(inputs: EmbeddedInputs, n_clusters: int | None, seed: int, cache: TuningCache) -> pipeline.Clustering:
    return memo(
        cache.clusterings, StageKey.of(inputs.corpus_key, n_clusters=n_clusters, seed=seed),
        lambda: pipeline.cluster_chunks(inputs.corpus, n_clusters, seed),
    )


def calibration_key(corpus: StageKey, config: AnalysisConfig) -> StageKey:
    """What τ depends on: the embedded corpus (documents, chunking, embedding model), the override, the seed."""
    return StageKey.of(corpus, override=config.support_threshold, seed=config.random_state)


def calibration_pending(corpus: StageKey, settings, cache: TuningCache) -> bool:
    """Whether an analysis of the corpus ``corpus`` with ``settings`` would still calibrate τ.

    False when the user set the support level (nothing is calibrated) or
    ``cache`` already holds τ for that corpus and seed; True otherwise, so
    its texts belong in a cost estimate.
    """
    config = analysis_config(settings)
    if config.support_threshold is not None:
        return False
    return calibration_key(corpus, config) not in cache.calibrations


def has_calibration(inputs: EmbeddedInputs, settings, cache: TuningCache) -> bool:
    """Whether :func:`calibration_for` would return at once (no embedding needed)."""
    config = analysis_config(settings, inputs.embedding, inputs.chunking)
    return config.support_threshold is not None or calibration_key(inputs.corpus_key, config) in cache.calibrations


def calibration_for(
    inputs: EmbeddedInputs, config: AnalysisConfig, cache: TuningCache, embedder=None, embed_cache=None
) -> Calibration:
    """The corpus's support level τ (``pipeline.calibrate_corpus``), computed once and kept in ``cache``.

    ``embedder`` is the one that embedded ``inputs`` (a zero-argument
    function returning it is accepted too, called only when τ must be
    computed); without one it is built from the inputs' embedding settings,
    as ``pipeline.analyze`` does.
    """
    def compute() -> Calibration:
        if config.support_threshold is not None:
            return pipeline.calibrate_corpus(config, inputs.corpus)
        model = embedder() if callable(embedder) and not hasattr(embedder, "embed") else embedder
        if model is None:
            try:
                model = pipeline.build_embedder(inputs.embedding)
            except CoverageError as error:
                raise _NoEmbedder from error
        topics = clustering_for(inputs, None, config.random_state, cache).labels
        return pipeline.calibrate_corpus(config, inputs.corpus, model, embed_cache, topic_labels=topics)

    try:
        return memo(cache.calibrations, calibration_key(inputs.corpus_key, config), compute)
    except _NoEmbedder:  # e.g. an API model without a key here: the default τ, not remembered
        return pipeline.calibrate_corpus(config, inputs.corpus)


class _NoEmbedder(Exception):
    """The inputs' embedder cannot be built here (no key): calibrate without it."""


def analysis_key(inputs: EmbeddedInputs, settings, overrides) -> StageKey:
    """The key :func:`tune` files its analysis under (raises InputError for settings the core rejects).

    Everything a measured analysis depends on: the inputs, the config and the overrides (τ follows from
    the corpus and the config).
    """
    return StageKey.of(
        inputs.key, config=analysis_config(settings, inputs.embedding, inputs.chunking),
        include=tuple(sorted(overrides.include)), exclude=tuple(sorted(overrides.exclude)),
    )


def tune(
    inputs: EmbeddedInputs, settings, overrides, cache: TuningCache, embedder=None, embed_cache=None
) -> pipeline.Analysis:
    """The analysis for the current K, thresholds, strictness and overrides.

    Reuses the support level τ (same corpus and override), the clustering
    (same K), the fitted screener (same clustering, questions and τ) and the
    whole analysis (nothing changed) from ``cache``. ``embedder`` and
    ``embed_cache`` are used only to calibrate τ (:func:`calibration_for`).
    Raises InputError for settings the core rejects.
    """
    key = analysis_key(inputs, settings, overrides)
    config = key.config
    calibration = calibration_for(inputs, config, cache, embedder, embed_cache)
    last = cache.analysis
    if last is not None and last[0] != key and _same_but_gap_threshold(last[0], key):
        # The gap threshold only labels clusters: no similarity needs recomputing.
        return memo(cache.analyses, key, lambda: regap(last[1], config))
    return memo(cache.analyses, key, lambda: _measure(inputs, key, calibration, cache))


def _measure(inputs: EmbeddedInputs, key: StageKey, calibration: Calibration, cache: TuningCache) -> pipeline.Analysis:
    config = key.config
    tau = calibration.question_support_threshold  # the off-topic rule reads the questions' level
    clustering = clustering_for(inputs, config.n_clusters, config.random_state, cache)
    # The screener judges against the automatic topics, as pipeline.analyze_corpus does: a new K reuses it.
    topics = clustering_for(inputs, None, config.random_state, cache)
    screener_key = StageKey.of(inputs.key, seed=config.random_state, support_threshold=tau)
    # Fitted at the default strictness, so that "default" always means the
    # screener's own default; other strictness values re-decide from its scores.
    screener = memo(cache.screeners, screener_key, lambda: pipeline.fit_screener(
        dataclasses.replace(config, strictness=None),
        inputs.corpus,
        inputs.questions,
        inputs.question_embedding,
        topics,
        lexical=_lexical_evidence(inputs, cache),
        support_threshold=tau,  # as measure() fits it when given a calibration
    ))
    return pipeline.measure(
        config, inputs.corpus, inputs.questions, inputs.question_embedding, clustering,
        force_include=key.include, force_exclude=key.exclude, screener=screener,
        index=similarity_index(inputs, cache), calibration=calibration, topics=topics.labels,
    )


def similarity_index(inputs: EmbeddedInputs, cache: TuningCache):
    """Each chunk's nearest questions for these inputs, built once and kept in ``cache``."""
    if len(inputs.questions.questions) == 0:
        return None
    return memo(
        cache.indexes, inputs.key,
        lambda: metrics.nearest_questions(inputs.corpus.vectors, inputs.question_embedding.vectors),
    )


def _lexical_evidence(inputs: EmbeddedInputs, cache: TuningCache) -> tuple | None:
    """The lexical evidence of a screener already fitted on these texts (any K), if there is one."""
    for key, screener in cache.screeners.items():
        if key.source == inputs.key:
            return screener.lexical_coverage_, screener.lexical_chunk_, screener.absent_words_
    return None


def _same_but_gap_threshold(old: StageKey, new: StageKey) -> bool:
    return old.replace(config=dataclasses.replace(old.config, gaps=new.config.gaps)) == new


def regap(analysis: pipeline.Analysis, config: AnalysisConfig) -> pipeline.Analysis:
    """``analysis`` with other gap settings: clusters relabelled by ``config.gaps.rule``, nothing recomputed."""
    clusters = analysis.clusters.copy()
    clusters["is_gap"] = is_gap(clusters, config.gaps)
    return dataclasses.replace(analysis, config=config, clusters=clusters, warnings=list(analysis.warnings), gaps=[])


def is_gap(clusters: pd.DataFrame, gaps: GapConfig) -> np.ndarray:
    """Which clusters are gaps under ``gaps.rule``, as ``pipeline.measure`` decides it."""
    if gaps.rule == "coverage":
        return (clusters["coverage"] < gaps.gap_threshold).to_numpy(dtype=bool)
    return (clusters["tested_share"] < gaps.tested_share_threshold).to_numpy(dtype=bool)


def with_gaps(analysis: pipeline.Analysis, llm=None, embedder=None, embed_cache=None) -> pipeline.Analysis:
    """A copy of ``analysis`` with its gaps found (the original is left as it is).

    With an ``llm`` and the ``embedder`` of the chunks, each LLM question is
    kept only if it reaches its passage at the analysis's support level τ.
    """
    copy = dataclasses.replace(analysis, warnings=list(analysis.warnings), gaps=[])
    return pipeline.find_gaps(
        copy, llm, embedder, embed_cache, support_threshold=analysis.calibration.support_threshold
    )


def check_passage_vectors(corpus: pipeline.Corpus, embedding: EmbeddingConfig, embedder, questions, cache) -> None:
    """InputError unless ``embedder`` makes vectors of the passages' size (it embeds one question, through ``cache``)."""
    from coverage_core.inputs.vector_store import check_model

    check_model(int(corpus.vectors.shape[1]), embedder, embedding, questions.texts, cache)


def saved_settings(saved, settings):
    """``settings`` with the model and analysis settings of a saved analysis (``saved_analysis.SavedAnalysis``)."""
    config = saved.config
    embedding, gaps = config.embedding, config.gaps
    return settings.replace(
        provider=embedding.provider, model=embedding.model or "", dimensions=embedding.dimensions,
        base_url=embedding.base_url or "", chunk_size=config.chunking.chunk_size,
        chunk_overlap=config.chunking.chunk_overlap, n_clusters=config.n_clusters, strictness=config.strictness,
        multi_threshold=config.multi_threshold, multi_n=config.multi_n, gap_threshold=gaps.gap_threshold,
        support_threshold=config.support_threshold, gap_rule=gaps.rule, tested_share_cut=gaps.tested_share_threshold,
        seed=config.random_state,
    )


def saved_tuning(saved, corpus_key: StageKey, settings) -> TuningCache:
    """A tuning cache holding a saved analysis's clustering, automatic topics and τ, so opening it computes
    none of them again."""
    cache = TuningCache()
    config = analysis_config(settings, corpus_key.embedding, corpus_key.chunking)
    cache.clusterings.put(
        StageKey.of(corpus_key, n_clusters=config.n_clusters, seed=config.random_state), saved.clustering
    )
    topics = saved.topic_clustering()
    if config.n_clusters is not None and topics is not None:  # the screener's automatic topics
        cache.clusterings.put(StageKey.of(corpus_key, n_clusters=None, seed=config.random_state), topics)
    cache.calibrations.put(calibration_key(corpus_key, config), saved.calibration)
    return cache


def default_k(n_chunks: int) -> int:
    from coverage_core.stages.clustering import default_n_clusters

    return int(default_n_clusters(n_chunks))


# ---------------------------------------------------------------- progress
class ProgressClock:
    """Times each stage of a run for its progress text (rate and time left)."""

    def __init__(self, clock=None):
        import time

        self._clock = clock or time.monotonic
        self._started: dict[str, float] = {}

    def text(self, stage: str, done: int, total: int) -> str:
        now = self._clock()
        started = self._started.setdefault(stage, now)
        return progress_text(stage, done, total, now - started)


STAGE_NAMES = {"chunks": "passages", "questions": "questions"}


def progress_text(stage: str, done: int, total: int, seconds: float) -> str:
    """"Embedding passages: 120 of 480 (35 per second, about 10 s left)"."""
    speed = formats.rate_and_eta(done, total, seconds)
    return f"Embedding {STAGE_NAMES.get(stage, stage)}: {done:,} of {total:,}" + (f" ({speed})" if speed else "")


def embedded_sentence(what: str, embedded) -> str:
    return (
        f"Embedded {embedded.n_cached + embedded.n_embedded:,} {what} "
        f"({embedded.n_cached:,} from the cache, {embedded.n_embedded:,} now)."
    )


def support_origin(calibration: Calibration) -> str:
    """How τ was found, in words (not the core's method name)."""
    if calibration.method == "override":
        return "the level you set on Configure"
    if calibration.method.startswith("default"):
        return "the default level: it could not be calibrated on these documents"
    return "calibrated for this model and these documents"


def chunk_counts(documents: Sequence, chunking: ChunkingConfig) -> dict[str, int]:
    """Chunks per document (no embedding)."""
    counts: dict[str, int] = {}
    for chunk in pipeline.chunk_corpus(documents, chunking):
        counts[chunk.document] = counts.get(chunk.document, 0) + 1
    return counts


def metric_label(name: str) -> str:
    from coverage_core.outputs.plots import METRIC_LABELS

    return METRIC_LABELS.get(name, name.replace("_", " "))


# ---------------------------------------------------------------- verdict
TOP_GAPS = 3
SECONDARY_SCORES = {
    "basic": "How close the passages are, on average, to their nearest question (1 − the mean distance).",
    "balanced": "The same per topic, every topic weighted equally, so a small untested topic pulls it down.",
    "weighted": "The per-topic scores weighted by topic size; it always equals basic and is listed because the "
    "method defines it.",
    "multi_threshold": "Each topic scored only by the questions close to its centre; a topic no question is "
    "close to scores 0.",
    "multi_n": "Each topic scored only by the questions that have it among their nearest topics.",
}


@dataclass(frozen=True)
class Verdict:
    """What the Results page says first: untested documents, the top gaps by topic, off-topic questions."""

    untested: tuple  # (document, tested_share, n_chunks) named tuples, least tested first
    gaps: tuple  # (cluster, topic, tested_share, size) named tuples, most urgent first
    n_gaps: int
    n_off_topic: int


def verdict(analysis: pipeline.Analysis, top: int = TOP_GAPS) -> Verdict:
    from coverage_core.suggest.gaps import rank_gaps

    documents = analysis.documents
    untested = documents[documents["is_untested"]].sort_values(["tested_share", "document"])
    clusters = analysis.clusters.set_index("cluster")
    ranked = rank_gaps(
        analysis.clusters["coverage"].to_numpy(), analysis.clusters["size"].to_numpy(), analysis.config.gaps,
        is_gap=analysis.clusters["is_gap"].to_numpy(dtype=bool),
    )
    top_gaps = pd.DataFrame(
        {
            "cluster": [int(k) for k, _ in ranked[:top]],
            "topic": [_topic(analysis, int(k)) or f"cluster {k}" for k, _ in ranked[:top]],
            "tested_share": [float(clusters.loc[k, "tested_share"]) for k, _ in ranked[:top]],
            "size": [int(clusters.loc[k, "size"]) for k, _ in ranked[:top]],
        }
    )
    return Verdict(
        untested=tuple(untested[["document", "tested_share", "n_chunks"]].itertuples(index=False, name="Untested")),
        gaps=tuple(top_gaps.itertuples(index=False, name="TopGap")),
        n_gaps=len(ranked),
        n_off_topic=int(analysis.is_outlier.sum()),
    )


def secondary_scores(analysis: pipeline.Analysis) -> list[tuple[str, float, str]]:
    """(name, value, one plain sentence) of each relative score, in reading order."""
    return [(name, float(analysis.metrics[name]), sentence) for name, sentence in SECONDARY_SCORES.items()]


def priority_formula(gaps: GapConfig) -> str:
    """How gaps are ranked, with the core's weights: "0.7 × (1 − coverage) + 0.3 × corpus share"."""
    return f"{1 - gaps.size_weight:g} × (1 − coverage) + {gaps.size_weight:g} × corpus share"


# ---------------------------------------------------------------- tables
def metric_table(metrics: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"metric": list(metrics), "value": [float(v) for v in metrics.values()]})


def cluster_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    frame = analysis.clusters.drop(columns=["representative_chunks"]).copy()
    if "label" in frame:  # the topic's name right after its number
        frame.insert(1, "topic", frame.pop("label"))
    frame["example passage"] = [chunks[0] if len(chunks) else "" for chunks in analysis.clusters["representative_chunks"]]
    return frame


def document_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    frame = analysis.documents.copy()
    untested = frame["is_untested"] if "is_untested" in frame else np.zeros(len(frame), dtype=bool)
    frame["flag"] = np.where(untested, "untested", np.where(frame["is_low"], "covered far less than the others", ""))
    return frame.sort_values(["coverage", "document"]).reset_index(drop=True)


def off_topic_table(analysis: pipeline.Analysis, overrides) -> pd.DataFrame:
    """Every question with its off-topic score, decision, any override and its support (best similarity
    to any chunk), highest score first."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "outlier score": table["outlier_score"].astype(float),
            "off-topic": table["is_outlier"].astype(bool),
            "override": [
                "included by you" if int(r) in overrides.include else "excluded by you" if int(r) in overrides.exclude else ""
                for r in table["row"]
            ],
            "nearest document": table["nearest_document"],
            "best similarity": table["max_similarity"].astype(float),
        }
    )
    return frame.sort_values(["outlier score", "row"], ascending=[False, True]).reset_index(drop=True)


def duplicate_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    """The groups of near-duplicate questions, largest first (``Analysis.duplicate_table``), other rows as text."""
    table = analysis.duplicate_table()
    table["other_rows"] = [", ".join(map(str, rows)) for rows in table["other_rows"]]
    return table.rename(
        columns={"n_questions": "questions", "other_rows": "other rows", "min_similarity": "lowest similarity"}
    )


def duplicate_members(analysis: pipeline.Analysis, row: int) -> pd.DataFrame:
    """The questions of the near-duplicate group whose representative is file row ``row``, in file order."""
    groups = analysis.duplicate_groups
    rows = np.asarray(analysis.questions.rows)
    members = np.flatnonzero(groups.representative == int(np.flatnonzero(rows == row)[0]))
    return pd.DataFrame(
        {
            "row": rows[members],
            "question": [analysis.questions.questions[i].text for i in members],
            "similarity to the representative": groups.similarity[members],
        }
    )


def fitness_table(analysis: pipeline.Analysis, threshold: float) -> pd.DataFrame:
    """Per question: best similarity to any chunk, nearest document and passage, ranked."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "best similarity": table["max_similarity"].astype(float),
            "nearest document": table["nearest_document"],
            "nearest passage": table["nearest_passage"],
            "cluster": table["cluster"].astype(int),
        }
    )
    frame["verdict"] = np.where(
        frame["best similarity"] < threshold, "the knowledge base may not answer this", ""
    )
    return frame.sort_values(["best similarity", "row"], ascending=[False, True]).reset_index(drop=True)


LABEL_NAMES = {1.0: "answerable", 0.0: "not answerable"}


def with_labels(table: pd.DataFrame, analysis: pipeline.Analysis, labels) -> pd.DataFrame:
    """:func:`fitness_table` with each question's answerability label before the verdict ("" when unknown)."""
    by_row = dict(zip((int(r) for r in analysis.questions.rows), labels.labels))
    table = table.copy()
    table.insert(
        table.columns.get_loc("verdict"), "label",
        [LABEL_NAMES.get(by_row.get(int(r), np.nan), "") for r in table["row"]],
    )
    return table


def detected_label_column(analysis: pipeline.Analysis, chosen: str, labels) -> str | None:
    """The label column found by its name, for the picker's "Detected: …" (``labels`` is what the checks read)."""
    from coverage_core.checks.answerability import find_label_column

    if chosen:  # the checks read the chosen column: look for the one a blank choice would find
        questions = analysis.questions
        return find_label_column([c for c in questions.frame.columns if str(c) != questions.question_column])
    return labels.column if labels is not None else None


def mds_frames(analysis: pipeline.Analysis, points, labels=None):
    """The chunk and question tables of the MDS map (``labels``: answerability labels to colour by, or None)."""
    from coverage_core.checks.answerability import mds_frames as frames

    return frames(
        points, [c.text for c in analysis.corpus.chunks], analysis.questions.texts,
        chunk_documents=analysis.corpus.chunk_documents,
        labels=labels.labels if labels is not None else None,
        similarities=analysis.question_table["max_similarity"].to_numpy(dtype=float),
    )


def _topic(analysis: pipeline.Analysis, cluster: int) -> str:
    """The cluster's topic label ("koala · marsupial · eucalyptus"), or "" before labels existed."""
    if "label" not in analysis.clusters:
        return ""
    labels = dict(zip(analysis.clusters["cluster"], analysis.clusters["label"]))
    return str(labels.get(cluster, "") or "")


def _tested_share(analysis: pipeline.Analysis, cluster: int) -> float:
    if "tested_share" not in analysis.clusters:
        return float("nan")
    return float(dict(zip(analysis.clusters["cluster"], analysis.clusters["tested_share"])).get(cluster, float("nan")))


def gap_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    """The method's gap table: one row per gap, most urgent first."""
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        rows.append(
            {
                "rank": rank,
                "cluster": gap.cluster,
                "topic": _topic(analysis, gap.cluster),
                "tested share": _tested_share(analysis, gap.cluster),
                "coverage": gap.coverage,
                "size": gap.size,
                "corpus share": gap.share,
                "themes": ", ".join(gap.themes),
                "suggested questions": "\n".join(s.text for s in gap.suggestions),
            }
        )
    columns = ["rank", "cluster", "topic", "tested share", "coverage", "size", "corpus share", "themes", "suggested questions"]
    return pd.DataFrame(rows, columns=columns)


def least_covered_passages(analysis: pipeline.Analysis) -> pd.DataFrame:
    chunks = analysis.corpus.chunks
    rows = []
    for gap in analysis.gaps:
        for index in gap.passages:
            chunk = chunks[index]
            rows.append(
                {
                    "cluster": gap.cluster,
                    "document": chunk.document,
                    "page": chunk.page,
                    "distance to nearest question": float(analysis.min_distances[index]),
                    "passage": " ".join(chunk.text.split()),
                }
            )
    columns = ["cluster", "document", "page", "distance to nearest question", "passage"]
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------- suggestions
def suggestions_frame(analysis: pipeline.Analysis) -> pd.DataFrame:
    rows = [
        {
            "accept": False,
            "question": s.text,
            "cluster": int(gap.cluster),
            "origin": s.origin,
            "document": s.document,
            "passage": s.passage,
        }
        for gap in analysis.gaps
        for s in gap.suggestions
    ]
    return normalise_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def normalise_suggestions(frame: pd.DataFrame) -> pd.DataFrame:
    """Column types the editor needs; rows the user added get origin "you"."""
    frame = frame.reindex(columns=list(SUGGESTION_COLUMNS)).copy()
    frame["accept"] = frame["accept"].map(lambda v: bool(v) if v is not None and not pd.isna(v) else False).astype(bool)
    frame["question"] = frame["question"].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame["cluster"] = pd.to_numeric(frame["cluster"], errors="coerce").astype("Int64")
    for column in ("origin", "document", "passage"):
        frame[column] = frame[column].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame.loc[frame["origin"] == "", "origin"] = USER_ORIGIN
    return frame.reset_index(drop=True)


def merge_suggestions(previous: pd.DataFrame | None, fresh: pd.DataFrame) -> pd.DataFrame:
    """New suggestions, keeping every row the user accepted or wrote before.

    Used when the gaps change (a threshold moved): rows the user accepted or
    added are kept first; the other suggestions are replaced by the new ones.
    """
    if previous is None or previous.empty:
        return normalise_suggestions(fresh)
    previous = normalise_suggestions(previous)
    fresh = normalise_suggestions(fresh)
    # Rows the user brought in (typed, or real queries added from the traffic page) outlive the gaps.
    keep = previous[previous["accept"] | previous["origin"].isin([USER_ORIGIN, TRAFFIC_ORIGIN])]
    extra = fresh[~fresh["question"].isin(set(keep["question"]))]
    return normalise_suggestions(pd.concat([keep, extra], ignore_index=True))


def traffic_suggestions_frame(result) -> pd.DataFrame:
    """The traffic comparison's suggestions (real untested queries) as rows of the suggestions editor."""
    rows = [
        {"accept": False, "question": s.text, "cluster": s.cluster if s.cluster >= 0 else None,
         "origin": s.origin, "document": s.document, "passage": s.passage}
        for s in result.suggestions
    ]
    return normalise_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def append_suggestions(previous: pd.DataFrame | None, extra: pd.DataFrame) -> pd.DataFrame:
    """``previous`` with the rows of ``extra`` whose question it does not hold yet, appended."""
    if previous is None or previous.empty:
        return normalise_suggestions(extra)
    previous = normalise_suggestions(previous)
    extra = normalise_suggestions(extra)
    new = extra[~extra["question"].isin(set(previous["question"]))]
    return normalise_suggestions(pd.concat([previous, new], ignore_index=True))


def traffic_topic_table(result) -> pd.DataFrame:
    """The traffic topics as the page shows them, most asked least tested first."""
    topics = result.topics
    return pd.DataFrame({
        "topic": topics["label"],
        "queries": topics["volume"],
        "share of traffic": topics["share"],
        "tested": topics["tested_share"],
        "answerable": topics["answerable_share"],
        "most asked": topics["examples"].map(lambda examples: " | ".join(examples)),
    })


def accepted_texts(frame: pd.DataFrame | None) -> list[str]:
    """The accepted, non-blank question texts, in table order, without repeats.

    Offline drafts the user has not yet worded as questions are left out: a
    test set must not gain "Write a question answered by: …" rows.
    """
    return [text for text in _accepted(frame) if not is_unfinished_draft(text)]


def unfinished_drafts(frame: pd.DataFrame | None) -> int:
    """How many accepted rows are still offline drafts (left out of Apply and the export)."""
    return sum(is_unfinished_draft(text) for text in _accepted(frame))


def _accepted(frame: pd.DataFrame | None) -> list[str]:
    if frame is None or frame.empty:
        return []
    frame = normalise_suggestions(frame)
    texts: list[str] = []
    for text in frame.loc[frame["accept"], "question"]:
        text = " ".join(str(text).split())
        if text and text not in texts:
            texts.append(text)
    return texts


def accepted_rows(frame: pd.DataFrame | None, texts: Sequence[str]) -> tuple[dict, ...]:
    """The suggestion-table rows behind the accepted ``texts`` (:func:`accepted_texts`), one per text, in table order.

    Each is a plain dict (question on one line, origin, cluster, source
    document and passage) for the reports' list of accepted questions.
    """
    if frame is None or frame.empty:
        return ()
    wanted, rows = set(texts), {}
    for row in normalise_suggestions(frame).to_dict("records"):
        text = " ".join(str(row["question"]).split())
        if row["accept"] and text in wanted and text not in rows:
            rows[text] = {**row, "question": text}
    return tuple(rows.values())


@dataclass(frozen=True)
class Improvement:
    """The test set with accepted suggestions, scored on the same clusters.

    ``accepted_rows`` are the suggestion-table rows of the accepted texts
    (:func:`accepted_rows`): what the reports list with each question's
    origin and source passage.
    """

    texts: tuple[str, ...]
    questions: QuestionSet
    before: pipeline.Analysis
    after: pipeline.Analysis
    accepted_rows: tuple[dict, ...] = ()


def improve(
    analysis: pipeline.Analysis, texts: Sequence[str], embedder, cache, overrides, rows: Sequence[dict] = ()
) -> Improvement:
    """Add ``texts`` to the questions and rescore (same clusters; only new texts are embedded)."""
    improved, after = pipeline.accept_questions(
        analysis, list(texts), embedder, cache, marker_column=MARKER_COLUMN,
        force_include=sorted(overrides.include), force_exclude=sorted(overrides.exclude),
    )
    return Improvement(tuple(texts), improved, analysis, after, tuple(rows))


def improved_questions(questions: QuestionSet, texts: Sequence[str]) -> QuestionSet:
    return pipeline.add_questions(questions, list(texts), marker_column=MARKER_COLUMN)


def tested_share_change(before: float, after: float) -> tuple[str, str]:
    """The tested share after a change and its change, as shown on a metric card (:func:`ui.formats.share_change`)."""
    return formats.share_change(before, after)


NO_CHANGE = formats.NO_CHANGE


def metric_deltas(before: dict[str, float], after: dict[str, float], names=("before", "after")) -> pd.DataFrame:
    """The metrics under both sets, by their plain names (not the report's field names)."""
    keys = [k for k in before if k in after]
    return pd.DataFrame(
        {
            "metric": [metric_label(k) for k in keys],
            names[0]: [float(before[k]) for k in keys],
            names[1]: [float(after[k]) for k in keys],
            "change": [formats.shown_difference(before[k], after[k]) for k in keys],
        }
    )


def cluster_deltas(before: pipeline.Analysis, after: pipeline.Analysis, names=("before", "after")) -> pd.DataFrame:
    """Per cluster: coverage under both question sets, the change, and questions near it; biggest gain first."""
    a = before.clusters[["cluster", "size", "coverage", "n_questions"]]
    b = after.clusters[["cluster", "coverage", "n_questions"]]
    merged = a.merge(b, on="cluster", suffixes=("_a", "_b"))
    frame = pd.DataFrame(
        {
            "cluster": merged["cluster"],
            "topic": [_topic(before, c) for c in merged["cluster"]],
            "size": merged["size"],
            names[0]: merged["coverage_a"],
            names[1]: merged["coverage_b"],
            "change": [formats.shown_difference(a_, b_) for a_, b_ in zip(merged["coverage_a"], merged["coverage_b"])],
            f"questions near it ({names[0]})": merged["n_questions_a"],
            f"questions near it ({names[1]})": merged["n_questions_b"],
        }
    )
    return frame.sort_values(["change", "cluster"], ascending=[False, True]).reset_index(drop=True)


@dataclass(frozen=True)
class Comparison:
    name_a: str
    name_b: str
    a: pipeline.Analysis
    b: pipeline.Analysis


def compare(analysis: pipeline.Analysis, other: QuestionSet, embedder, cache, names: tuple[str, str]) -> Comparison:
    """Score a second question set on the same chunks and clusters as ``analysis``."""
    other_analysis = pipeline.rescore(analysis, other, embedder, cache)
    return Comparison(names[0], names[1], analysis, other_analysis)


# ---------------------------------------------------------------- exports
def inputs_record(documents, question_file) -> dict:
    """File names for the report's config (never contents, never a key)."""
    record: dict[str, Any] = {}
    if documents is not None:
        record["documents"] = list(documents.names)
    if question_file is not None:
        record["questions"] = question_file.name
    return record


@dataclass(frozen=True)
class Checks:
    """The label-driven checks of an analysis: retrieval and answerability (None when the CSV has no such column)."""

    retrieval: Any = None
    labels: Any = None
    answerability: Any = None
    subquestions: Any = None
    retrieval_error: str | None = None
    answerability_error: str | None = None


def checks(analysis: pipeline.Analysis, settings) -> Checks:
    """Retrieval and answerability for the user's columns and k (fast: one top-k pass).

    A check whose column is unusable is None, with the reason in its
    ``*_error``; the other check is still computed.
    """
    found = Checks()
    try:
        retrieval = pipeline.check_retrieval(analysis, settings.relevant_column or None, int(settings.retrieval_k))
        found = dataclasses.replace(found, retrieval=retrieval)
    except CoverageError as error:
        found = dataclasses.replace(found, retrieval_error=user_message(error))
    try:
        labels, answerability = pipeline.check_answerability(analysis, settings.label_column or None)
        found = dataclasses.replace(found, labels=labels, answerability=answerability)
    except CoverageError as error:
        found = dataclasses.replace(found, answerability_error=user_message(error))
    return found


def report_json(
    analysis: pipeline.Analysis, inputs: dict | None = None, found: Checks | None = None,
    improvement: Improvement | None = None,
) -> bytes:
    """The JSON report: the analysis, the checks that ran and, given the analysis's own Apply result, before → after.

    ``improvement`` must belong to ``analysis`` (the caller checks it, as for the HTML report); None leaves
    ``after_apply`` out.
    """
    found = found or Checks()
    report = build_report(
        analysis, inputs, retrieval=found.retrieval, answerability=found.answerability, labels=found.labels,
        subquestions=found.subquestions,
        improved=improvement.after if improvement is not None else None,
        accepted=(list(improvement.accepted_rows) or None) if improvement is not None else None,
    )
    return json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8")


def saved_analysis_zip(
    analysis: pipeline.Analysis, report: bytes, *, from_vectors: bool, question_file_name: str | None
) -> bytes:
    """``analysis`` as the zip of a saved-analysis folder (``coverage_core.inputs.saved_analysis``), holding ``report``
    (:func:`report_json`): the Upload page opens it again without embedding anything."""
    import tempfile
    from pathlib import Path

    from coverage_core.inputs.saved_analysis import save_analysis, zip_folder

    with tempfile.TemporaryDirectory(prefix="coverage-save-") as scratch:
        folder = Path(scratch) / "analysis"
        parsed = json.loads(report)
        save_analysis(analysis, folder, report=parsed, inputs=parsed.get("config", {}).get("inputs"),
                      from_vectors=from_vectors, question_file_name=question_file_name)
        return zip_folder(folder)


def improved_csv(questions: QuestionSet, texts: Sequence[str]) -> bytes:
    """The user's own table, in its own delimiter, with accepted suggestions appended and marked, formula-safe."""
    return to_safe_csv(improved_questions(questions, texts).frame, delimiter=questions.delimiter)


def sweep_key(inputs: EmbeddedInputs, labels, use_api: bool) -> StageKey:
    """What a dimension sweep depends on: the inputs, the answerability labels (column and values) and the API."""
    if labels is None:
        return StageKey.of(inputs.key, label_column=None, labels=None, use_api=use_api)
    return StageKey.of(inputs.key, label_column=labels.column, labels=digest(labels.labels.tobytes()), use_api=use_api)


SWEEP_COLUMNS = {
    "d": "dimensions",
    "method": "vectors",
    "spearman": "rank agreement with full size (Spearman)",
    "mean_similarity": "mean best similarity",
    "point_biserial_r": "point-biserial r",
    "auroc": "AUROC",
}
SWEEP_SCORE_COLUMNS = tuple(name for key, name in SWEEP_COLUMNS.items() if key not in ("d", "method"))


def sweep_sizes(full: int) -> list[int]:
    """The sweep's sizes below ``full`` dimensions (the full size itself is always compared too)."""
    from coverage_core.checks.answerability import DEFAULT_SWEEP_DIMS

    return [d for d in DEFAULT_SWEEP_DIMS if d is not None and d < full]


def sweep_model(config: EmbeddingConfig) -> str | None:
    """The OpenAI text-embedding-3 model whose shorter sizes the API can return, else None."""
    if config.provider != "openai":
        return None
    from coverage_core.embeddings import OPENAI_DEFAULT_MODEL

    model = config.model or OPENAI_DEFAULT_MODEL
    return model if model.startswith("text-embedding-3-") else None


def sweep_estimate(texts: Sequence[str], dims: Sequence[int], model: str, embedder_at, cache, prices):
    """Tokens and dollars of embedding ``texts`` once per size in ``dims`` through the API (a costs.CostEstimate).

    ``embedder_at(d)`` builds the embedder of size ``d``; texts already in
    ``cache`` for it are not counted. When it cannot be built (no key yet),
    nothing is assumed cached.
    """
    from coverage_core import costs
    from coverage_core.embeddings.cache import uncached_texts

    tokens = 0
    for d in dims:
        try:
            tokens += costs.approximate_tokens(uncached_texts(texts, embedder_at(d), cache))
        except CoverageError:  # no key yet: assume nothing is cached
            tokens += costs.approximate_tokens(dict.fromkeys(texts))
    return costs.estimate_embedding_cost(tokens, "openai", model, prices)


def sweep_consent_label(dims: Sequence[int], estimate) -> str:
    """The label of the box that allows the sweep to embed again through the API, with its cost (no LaTeX "$")."""
    sizes = ", ".join(str(d) for d in dims)
    return (
        f"Embed every text again at {sizes} dimensions through the API "
        f"(the model's own shorter embeddings; {estimate.label})"
    ).replace("$", "\\$")


def sweep_embed_at(chunk_texts: Sequence[str], question_texts: Sequence[str], embedder_at, cache, progress=None):
    """``embed_at`` for :func:`coverage_core.checks.answerability.dimension_sweep`: each size embedded afresh.

    ``embedder_at(d)`` builds the embedder of size ``d`` (through ``cache``);
    ``progress(text, fraction)`` hears "32 dimensions: embedded 10 of 40
    questions" as each batch lands.
    """
    from coverage_core.embeddings import embed_texts

    def embed_at(d: int):
        embedder = embedder_at(d)
        runs = []
        for what, texts in (("questions", question_texts), ("chunks", chunk_texts)):
            def report(done: int, total: int, what=what) -> None:
                if progress is not None:
                    progress(f"{d} dimensions: embedded {done:,} of {total:,} {what}", done / total if total else 1.0)

            runs.append(embed_texts(list(texts), embedder, cache, report).vectors)
        return runs[0], runs[1]

    return embed_at


def dimension_sweep(analysis: pipeline.Analysis, labels=None, embed_at=None) -> pd.DataFrame:
    """The core's dimension sweep of the analysis's vectors (``labels``: answerability labels to score, or None)."""
    from coverage_core.checks.answerability import dimension_sweep as sweep

    return sweep(
        analysis.question_vectors, analysis.corpus.vectors,
        labels=labels.labels if labels is not None else None, embed_at=embed_at,
    )


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """The sweep with the column names the page shows and downloads."""
    return sweep.rename(columns=SWEEP_COLUMNS)


def suggestions_key(analysis_key_: StageKey, gapped: pipeline.Analysis) -> StageKey:
    """The gaps a suggestions table was made from: the analysis and each gap's suggestion texts."""
    return StageKey.of(
        analysis_key_, gaps=tuple((g.cluster, tuple(s.text for s in g.suggestions)) for g in gapped.gaps)
    )


# ---------------------------------------------------------------- retrieval and chunking
DETECTED = ""  # the relevant-column option "use the detected column" (Settings.relevant_column "")


@dataclass(frozen=True)
class RelevantColumnChoice:
    """The relevant-source column picker: its options, the detected column, and the column in use."""

    options: tuple[str, ...]
    candidates: tuple[str, ...]
    detected: str | None
    column: str | None  # the chosen column, else the detected one

    def label(self, option: str) -> str:
        if option == DETECTED:
            return f"detected: {self.detected}" if self.detected else "none detected"
        return option if option in self.candidates else f"{option} (not a column of this file)"


def relevant_column_choice(questions: QuestionSet, chosen: str) -> RelevantColumnChoice:
    """The columns that may name each question's source; a remembered column of another file is kept (and refused later)."""
    from coverage_core.checks.retrieval import find_relevant_column

    columns = [str(column) for column in questions.frame.columns]
    candidates = tuple(column for column in columns if column != questions.question_column)
    detected = find_relevant_column(columns)
    detected = None if detected == questions.question_column else detected
    options = (DETECTED, *candidates) + ((chosen,) if chosen and chosen not in candidates else ())
    return RelevantColumnChoice(options, candidates, detected, chosen or detected)


def all_labels_unknown(result) -> bool:
    """True when no label of any labelled question names a document (or page) of the knowledge base."""
    unknown = {label.casefold() for label in result.unknown_sources}
    return result.n_labelled > 0 and all(
        all(label.casefold() in unknown for label in labels) for labels in result.per_question["relevant"]
    )


def _retrieved_list(names, pages) -> str:
    return " | ".join(name if page is None or pd.isna(page) else f"{name} p.{int(page)}" for name, page in zip(names, pages))


def retrieval_question_table(result) -> pd.DataFrame:
    """Every labelled question: its sources, hit, first relevant rank, precision, recall and what it retrieved."""
    frame = result.per_question
    return pd.DataFrame(
        {
            "row": frame["row"].astype(int),
            "question": frame["question"],
            "relevant": [" | ".join(labels) for labels in frame["relevant"]],
            "hit": frame["hit_at_k"].astype(bool),
            "first relevant rank": frame["first_relevant_rank"],
            "precision": frame["precision_at_k"].astype(float),
            "recall": frame["recall_at_k"].astype(float),
            "reciprocal rank": frame["reciprocal_rank"].astype(float),
            "retrieved (rank order)": [_retrieved_list(n, p) for n, p in zip(frame["retrieved"], frame["retrieved_pages"])],
        }
    )


def retrieval_failure_table(result) -> pd.DataFrame:
    """The questions that retrieved none of their sources, with what they retrieved and whether a source exists."""
    frame = result.failures.drop(columns=["chunk"])
    unknown = {label.casefold() for label in result.unknown_sources}
    known = {
        int(row): any(label.casefold() not in unknown for label in labels)
        for row, labels in zip(result.per_question["row"], result.per_question["relevant"])
    }
    frame["expected is in the knowledge base"] = [known.get(int(row), False) for row in frame["row"]]
    if frame["page"].isna().all():  # text files: no pages
        frame = frame.drop(columns=["page"])
    return frame


def chunking_comparison_key(inputs: EmbeddedInputs, analysis: pipeline.Analysis, grid, k: int, relevant_column) -> StageKey:
    """What a chunking comparison depends on: the inputs, the grid, k, the labels, the held-fixed screening and config."""
    config = analysis.config
    return StageKey.of(
        inputs.key, grid=tuple(grid), k=k, relevant_column=relevant_column,
        off_topic=tuple(int(i) for i in np.flatnonzero(analysis.is_outlier)), seed=config.random_state,
        multi_threshold=config.multi_threshold, multi_n=config.multi_n, support_threshold=config.support_threshold,
    )


@dataclass(frozen=True)
class ChunkingCost:
    """What a chunking comparison through a paid API would send, before anything is sent."""

    plans: pd.DataFrame  # one row per configuration
    estimate: Any  # costs.CostEstimate
    n_send: int
    n_calibration: int


def chunking_cost(inputs: EmbeddedInputs, config: AnalysisConfig, grid, embedder, cache, prices) -> ChunkingCost:
    """The texts and tokens each configuration would embed, and the estimated cost (raises CoverageError)."""
    from coverage_core.checks import chunking_comparison
    from coverage_core import costs

    plans = chunking_comparison.plan_chunkings(inputs.corpus.documents, grid, embedder, cache, config=config)
    estimate = costs.estimate_embedding_cost(
        sum(p.total_tokens for p in plans), inputs.embedding.provider, embedder.model, prices
    )
    frame = pd.DataFrame(
        {
            "chunk size": [p.config.chunk_size for p in plans],
            "overlap": [p.config.chunk_overlap for p in plans],
            "chunks": [p.n_chunks for p in plans],
            "texts to embed": [p.n_to_embed for p in plans],
            "support-level texts": [p.n_calibration for p in plans],
            "tokens (approx.)": [p.total_tokens for p in plans],
        }
    )
    if config.support_threshold is not None:  # the user's level: nothing is calibrated
        frame = frame.drop(columns=["support-level texts"])
    return ChunkingCost(frame, estimate, sum(p.n_to_embed for p in plans), sum(p.n_calibration for p in plans))


@dataclass(frozen=True)
class ChunkingComparison:
    """A chunking comparison as computed: the core's table, its notes, k, and whether it was paid for."""

    table: pd.DataFrame
    messages: tuple[str, ...]
    k: int
    paid: bool

    def shown(self) -> pd.DataFrame:
        """The table as the page shows it: columns that say nothing here left out, support sources in words."""
        from coverage_core.checks.chunking_comparison import support_source

        table = self.table
        hidden = [] if self.paid else ["new_tokens", "cost_usd"]
        if not self.paid or not table["calibration_embedded"].fillna(0).any():
            hidden.append("calibration_embedded")
        if table["error"].isna().all():
            hidden.append("error")
        retrieval_columns = ["precision_at_k", "recall_at_k", "hit_at_k", "mrr"]
        if table[retrieval_columns].isna().all().all():
            hidden += retrieval_columns
        shown = table.drop(columns=hidden)
        if "support_method" in shown:  # plain words, not the core's method names
            shown["support_method"] = shown["support_method"].map(support_source)
        return shown


def compare_chunkings(
    inputs: EmbeddedInputs, analysis: pipeline.Analysis, grid, k: int, relevant_column, embedder, cache, prices,
    progress=None,
) -> ChunkingComparison:
    """The same questions against the documents chunked each way of ``grid`` (the analysis's screening held fixed)."""
    from coverage_core.checks import chunking_comparison, retrieval

    if inputs.from_vector_store:
        raise InputError(
            "The chunking comparison chunks the documents again, but these passages came from your vector store "
            "with their vectors; upload the documents themselves to compare chunkings."
        )
    questions = analysis.questions
    relevant = retrieval.relevant_from_questions(questions, relevant_column) if relevant_column else None
    table, messages = chunking_comparison.compare_chunkings(
        inputs.corpus.documents, questions, inputs.question_embedding, grid, embedder, cache,
        config=analysis.config, is_outlier=analysis.is_outlier, relevant=relevant, k=k, price_table=prices,
        progress=progress,
    )
    return ChunkingComparison(table, tuple(messages), k, prices is not None)


# ---------------------------------------------------------------- sub-questions
class WatchedLLM:
    """A chat client that remembers the error that made the core stop asking (bad key, server down)."""

    def __init__(self, client):
        self.client, self.config, self.fatal = client, client.config, None

    def complete_json(self, system: str, user: str):
        from coverage_core.errors import ProviderError
        from coverage_core.checks.subquestions import FATAL_KINDS

        try:
            return self.client.complete_json(system, user)
        except ProviderError as error:
            if error.kind in FATAL_KINDS:
                self.fatal = error
            raise


def merge_subquestions(old, new, config):
    """``old`` with ``new``'s questions added or replacing the same rows, rescored together (no LLM call)."""
    from coverage_core.checks.subquestions import SubQuestionResult, rescore_subquestions

    by_row = {q.row: q for q in old.questions} if old is not None else {}
    by_row.update({q.row: q for q in new.questions})
    questions = tuple(sorted(by_row.values(), key=lambda q: q.row))
    return rescore_subquestions(SubQuestionResult(config, questions, (), new.model, new.warnings), config)


def least_supported(analysis: pipeline.Analysis) -> list[int]:
    """Question positions, lowest best similarity to any chunk first."""
    return [int(i) for i in analysis.question_table["max_similarity"].to_numpy().argsort(kind="stable")]


SUBQUESTION_STATUS = {"failed": "failed", "skipped": "not sent"}


def subquestion_type_table(result) -> pd.DataFrame:
    """Per sub-question type: how many, how many supported (in the knowledge base and by retrieval)."""
    return pd.DataFrame(
        {
            "type": [c.type for c in result.by_type],
            "sub-questions": [c.n for c in result.by_type],
            "supported": [c.n_supported for c in result.by_type],
            "share supported": [c.share for c in result.by_type],
            "supported by retrieval": [c.n_supported_by_retrieved for c in result.by_type],
            "share by retrieval": [c.share_by_retrieved for c in result.by_type],
        }
    )


def subquestion_rows(result, chunks) -> pd.DataFrame:
    """Every sub-question of the questions broken down, with its support and nearest document."""
    columns = [
        "row", "question", "type", "sub-question", "best similarity", "supported", "retrieved similarity",
        "supported by retrieved", "nearest document", "unsupported core",
    ]
    rows = [
        (q.row, q.question, s.type + (" (assumed)" if s.type_assumed else ""), s.text, s.best_similarity,
         s.supported, s.retrieved_similarity, s.supported_by_retrieved, chunks[s.best_chunk].document,
         s.type == "core" and s.text in q.unsupported_core)
        for q in result.questions if q.status == "ok"
        for s in q.sub_questions
    ]
    return pd.DataFrame(rows, columns=columns)


def unsupported_core_table(every: pd.DataFrame) -> pd.DataFrame:
    """The core sub-questions no chunk supports (the gaps), from :func:`subquestion_rows`."""
    gaps = every.loc[every["unsupported core"].astype(bool), ["row", "question", "sub-question", "best similarity",
                                                              "nearest document"]]
    return gaps.rename(
        columns={"sub-question": "unsupported core sub-question"}
    ).reset_index(drop=True)


def subquestion_question_table(result) -> pd.DataFrame:
    """One row per question sent: its status, shares supported and counts."""
    return pd.DataFrame(
        [
            {
                "row": q.row,
                "question": q.question,
                "status": SUBQUESTION_STATUS.get(q.status, q.status),
                "core supported": q.core_supported_share,
                "weighted score": q.weighted_score,
                "core supported by retrieval": q.retrieved.core_supported_share,
                "sub-questions": len(q.sub_questions),
                "unsupported core": len(q.unsupported_core),
            }
            for q in result.questions
        ]
    )


def subquestion_failures(result) -> pd.DataFrame:
    """The questions that could not be broken down (failed or not sent), with the reason."""
    failed = [q for q in result.questions if q.status != "ok"]
    return pd.DataFrame(
        {
            "row": [q.row for q in failed],
            "question": [q.question for q in failed],
            "status": [SUBQUESTION_STATUS.get(q.status, q.status) for q in failed],
            "reason": [q.reason for q in failed],
        }
    )
