"""The dashboard's calls into coverage_core, without Streamlit.

Pages and ``benchmarks/bench_dashboard.py`` call the same functions, so the
benchmark measures what a user waits for. Nothing here touches session state:
callers pass in what was computed before (the session's
:class:`~coverage_core.session.AnalysisSession`, the stored corpus) and
store what comes back. The stage order and what each stage is keyed by
live in :mod:`coverage_core.session`; here the user's settings become its
configs and keys.

Cost model (why the session splits the stages this way):

* embedding — minutes; done once per (text, model), cached on disk by the
  core and kept in the session;
* clustering — about a second at 20,000 chunks; redone only when K changes
  (the last few clusterings are kept, so toggling K back is free);
* screening fit — judged against the automatic topics, so redone only when
  the questions, the seed or τ change, never for a new K; strictness and
  overrides reuse the fitted screener, and a refit reuses the lexical
  evidence (it depends on the texts only);
* chunk x question similarities — one pass per data set builds each chunk's
  nearest questions (``similarity.nearest_questions``);
* measure — fast, read from that index; redone on every threshold,
  strictness or override change;
* support level τ (``session.calibrate_corpus``) — a few seconds, once per
  embedded corpus, embedding model and user override: it depends on neither
  the clustering nor the questions, so K and thresholds reuse it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from coverage_core import embedding_steps
from coverage_core.config import AnalysisConfig, EmbeddingConfig
from coverage_core.results import Analysis, Corpus
from coverage_core.session import (
    EMBEDDING_STAGES,
    STAGES,
    AnalysisSession,
    EmbeddedInputs,
    StageKey,
    analysis_key as session_analysis_key,
    calibration_key,
)
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.suggest.gaps import GapConfig
from coverage_core.types import QuestionSet
from coverage_core.verdicts import SECONDARY_SCORES
from ui import formats


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


def corpus_fingerprint(corpus: Corpus) -> str:
    """A content hash of passages that came with their vectors: their documents, texts and vectors."""
    vectors = np.ascontiguousarray(corpus.vectors)
    return digest(*[(c.document, c.text, c.page) for c in corpus.chunks], hashlib.sha256(vectors.tobytes()).hexdigest())


# ---------------------------------------------------------------- tuning
def calibration_pending(corpus: StageKey, settings, cache: AnalysisSession) -> bool:
    """Whether an analysis of the corpus ``corpus`` with ``settings`` would still calibrate τ.

    False when the user set the support level (nothing is calibrated) or
    ``cache`` already holds τ for that corpus and seed; True otherwise, so
    its texts belong in a cost estimate.
    """
    config = analysis_config(settings)
    return config.support_threshold is None and calibration_key(corpus, config) not in cache.calibrations


def has_calibration(inputs: EmbeddedInputs, settings, cache: AnalysisSession) -> bool:
    """Whether :func:`tune` would find τ at once (no embedding needed)."""
    return cache.has_calibration(inputs, analysis_config(settings, inputs.embedding, inputs.chunking))


def analysis_key(inputs: EmbeddedInputs, settings, overrides) -> StageKey:
    """The key :func:`tune` files its analysis under (raises InputError for settings the core rejects)."""
    config = analysis_config(settings, inputs.embedding, inputs.chunking)
    return session_analysis_key(inputs, config, overrides.include, overrides.exclude)


def tune(inputs: EmbeddedInputs, settings, overrides, cache: AnalysisSession, embedder=None, embed_cache=None,
         progress=None):
    """The analysis for the current settings and overrides; the session reruns only the stages that changed.

    ``embedder`` and ``embed_cache`` are used only to calibrate τ; ``progress``
    hears of each stage that runs. Raises InputError for settings the core rejects.
    """
    config = analysis_config(settings, inputs.embedding, inputs.chunking)
    return cache.analysis_for(inputs, config, overrides.include, overrides.exclude, embedder=embedder,
                              embed_cache=embed_cache, progress=progress)


def check_passage_vectors(corpus: Corpus, embedding: EmbeddingConfig, embedder, questions, cache) -> None:
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


ON_CONFIGURE = ", on the Configure page"
"""Where :func:`provider_notice` sends the user; the Configure page itself says it without (:func:`notice_here`)."""


def notice_here(notice: str) -> str:
    """A :func:`provider_notice` as the Configure page shows it: without sending the user to the page they are on."""
    return notice.replace(ON_CONFIGURE, "")


def provider_notice(before, after, keys_typed: bool = True) -> str | None:
    """What a user must hear when a saved analysis replaces the embedding settings ``before`` with
    ``after`` (:func:`saved_settings`); None when it keeps them.

    A saved analysis is a file anyone can write: the provider, model and
    base URL it names are the sender's choice, not the user's, so they are
    shown in full (the URL without credentials) and held until the user
    confirms them (:func:`ui.state.embed_api_key`). That the typed API keys
    were forgotten is said only when ``keys_typed``: some were.
    """
    if before.embedding_choice() == after.embedding_choice():
        return None
    from coverage_core.embeddings.base import redact_url
    from coverage_core.embeddings.registry import PROVIDERS, configured_model_name

    spec = PROVIDERS.get(after.provider)
    named = spec.label if spec is not None else after.provider
    model = configured_model_name(after.provider, after.model or None)
    if model != named:
        named += f" {model}"
    if after.dimensions:
        named += f" at {after.dimensions:,} dimensions"
    if after.base_url:
        named += f" through the server at {redact_url(after.base_url)}"
    forgotten = ", so the API keys typed in this session were forgotten and" if keys_typed else ";"
    return (
        f"This saved analysis brought its own embedding settings ({named}){forgotten} nothing is sent to an "
        f"embedding provider until you confirm these settings, or choose others{ON_CONFIGURE}."
    )


def saved_tuning(saved, corpus_key: StageKey, settings) -> AnalysisSession:
    """A session holding a saved analysis's clustering, automatic topics and τ, so opening it computes
    none of them again."""
    session = AnalysisSession()
    config = analysis_config(settings, corpus_key.embedding, corpus_key.chunking)
    session.remember(corpus_key, config, saved.clustering, saved.calibration, saved.topic_clustering())
    return session


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




def progress_text(stage: str, done: int, total: int, seconds: float) -> str:
    """"Embedding passages: 120 of 480 (35 per second, about 10 s left)", or what a later stage is doing."""
    action = STAGES.get(stage, stage)
    if stage not in EMBEDDING_STAGES:
        return f"{action}…"
    speed = formats.rate_and_eta(done, total, seconds)
    return f"{action}: {done:,} of {total:,}" + (f" ({speed})" if speed else "")


def embedded_sentence(what: str, embedded) -> str:
    """"Embedded 12 passages (10 from the cache, 2 now)." — ``what`` is the singular noun ("passage")."""
    return (
        f"Embedded {formats.count(embedded.n_cached + embedded.n_embedded, what)} "
        f"({embedded.n_cached:,} from the cache, {embedded.n_embedded:,} now)."
    )


def support_origin(calibration: Calibration) -> str:
    """How τ was found, in words (not the core's method name)."""
    if calibration.method == "override":
        return "the level you set on Configure"
    if calibration.method.startswith("default"):
        return "the default level: it could not be calibrated on these documents"
    return "calibrated for this model and these documents"


def chunk_counts(documents: Sequence, chunking: ChunkingConfig, limit=None) -> dict[str, int]:
    """Chunks per document, fitted to the model's ``limit`` when given (no embedding)."""
    counts: dict[str, int] = {}
    for chunk in embedding_steps.chunk_corpus(documents, chunking, limit):
        counts[chunk.document] = counts.get(chunk.document, 0) + 1
    return counts


# ---------------------------------------------------------------- the scores after the verdicts
EXPERTS = "Scores for method experts"
"""The title of the one expander a page keeps its relative scores in (every other figure is a share or a count)."""
EXPERTS_NOTE = ("Relative scores, from 0 to 1: they depend on the embedding model and the chunking, so compare "
                "them only between test sets on the same documents and settings.")
EXPERT_SCORES = ("basic", "balanced", "multi_threshold", "multi_n")
"""The relative scores the experts' expander lists ("weighted" always equals "basic" and is left out)."""
GAP_ORDER = "ranked by how far their passages lie from the nearest question, weighing in their size"
"""How the gap lists are ordered, in words (the core's priority, ``suggest.gaps.rank_gaps``): it is not the
tested share, so the lists say so instead of "most urgent first"."""


def secondary_scores(analysis: Analysis) -> list[tuple[str, float, str]]:
    """(name, value, one plain sentence) of each relative score of :data:`EXPERT_SCORES`, in reading order."""
    return [(name, float(analysis.metrics[name]), SECONDARY_SCORES[name]) for name in EXPERT_SCORES]


def priority_formula(gaps: GapConfig) -> str:
    """How gaps are ranked, with the core's weights: "0.7 × (1 − coverage) + 0.3 × corpus share" (for experts)."""
    return f"{1 - gaps.size_weight:g} × (1 − coverage) + {gaps.size_weight:g} × corpus share"


# ---------------------------------------------------------------- keys of the page checks
def suggestions_key(analysis_key_: StageKey, gapped: Analysis) -> StageKey:
    """The gaps a suggestions table was made from: the analysis and each gap's suggestion texts."""
    return StageKey.of(
        analysis_key_, gaps=tuple((g.cluster, g.document, tuple(s.text for s in g.suggestions)) for g in gapped.gaps)
    )


def sweep_key(inputs: EmbeddedInputs, labels, use_api: bool) -> StageKey:
    """What a dimension sweep depends on: the inputs, the answerability labels (column and values) and the API."""
    if labels is None:
        return StageKey.of(inputs.key, label_column=None, labels=None, use_api=use_api)
    return StageKey.of(inputs.key, label_column=labels.column, labels=digest(labels.labels.tobytes()), use_api=use_api)


def chunking_comparison_key(inputs: EmbeddedInputs, analysis: Analysis, grid, k: int, relevant_column) -> StageKey:
    """What a chunking comparison depends on: the inputs, the grid, k, the labels, the held-fixed screening and config."""
    config = analysis.config
    return StageKey.of(
        inputs.key, grid=tuple(grid), k=k, relevant_column=relevant_column,
        off_topic=tuple(int(i) for i in np.flatnonzero(analysis.is_outlier)), seed=config.random_state,
        multi_threshold=config.multi_threshold, multi_n=config.multi_n, support_threshold=config.support_threshold,
    )
