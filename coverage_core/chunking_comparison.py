"""Chunking comparison: the same questions against the corpus chunked several ways.

Chunk size and overlap change what a retriever can find and how the
coverage scores read, so teams compare a few configurations before settling
on one. :func:`compare_chunkings` runs, for each :class:`ChunkingConfig` of a
grid, the chunking, the (cached) embedding, the support level τ, the
clustering with the default K rule, the coverage measures (the tested share
first) and, when the questions name their relevant sources, the retrieval
check, and returns one row per configuration.

Each chunking is a different corpus, so each gets its own τ, calibrated on
its own chunks as the analysis calibrates it (:func:`coverage_core.stages.calibration.calibrate`,
with the same embedder and embedding cache), unless the user set the support
level (``AnalysisConfig.support_threshold``): then that level is used for
every configuration. Judging 500-character chunks by the τ of
1,000-character ones (or by the default) would mix the chunking's effect
with a threshold that does not fit it.

Embeddings are looked up in the content-keyed cache first, so a
configuration whose chunks repeat texts already embedded (an overlap that
produces identical chunks, or a second run of the comparison) costs nothing;
each row says how many texts were newly embedded (chunks, and the
calibration's probe texts apart) and, for paid providers, what that cost.
:func:`plan_chunkings` gives the same counts *before* anything is sent, so
the cost can be shown first.

The question screening (which questions are off-topic) is decided once by
the caller and held fixed across configurations, so the coverage
differences come from the chunking alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.checks import retrieval
from coverage_core.config import AnalysisConfig
from coverage_core.costs import estimate_embedding_cost
from coverage_core.embedding_steps import chunk_corpus, embed_corpus, token_limit
from coverage_core.embeddings import Embedder, EmbeddingCache, embed_texts
from coverage_core.embeddings.cache import uncached_texts
from coverage_core.embeddings.registry import is_paid
from coverage_core.errors import InputError, ProviderError
from coverage_core.measure import measure
from coverage_core.results import Analysis, Clustering, Corpus, EmbeddedTexts
from coverage_core.session import calibrate_corpus, cluster_chunks, support_fallback
from coverage_core.stages import calibration as calibration_module
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.types import Document, QuestionSet

DEFAULT_GRID: tuple[ChunkingConfig, ...] = (
    ChunkingConfig(500, 0),
    ChunkingConfig(1000, 0),
    ChunkingConfig(1000, 200),
    ChunkingConfig(2000, 200),
)
"""About four configurations around the default 1,000/200, from fine to coarse."""

GRID_COLUMNS = ("chunk_size", "chunk_overlap")

RESULT_COLUMNS = (
    "chunk_size",
    "chunk_overlap",
    "n_chunks",
    "n_clusters",
    "tested_share",
    "support_threshold",
    "support_method",
    "basic",
    "balanced",
    "precision_at_k",
    "recall_at_k",
    "hit_at_k",
    "mrr",
    "newly_embedded",
    "calibration_embedded",
    "new_tokens",
    "cost_usd",
    "error",
)
"""Columns of :func:`compare_chunkings`' table, one row per configuration.

``tested_share`` is the share of chunks an inlier question retrieves among
its top ``config.tested_k`` at the row's ``support_threshold`` (τ), as
``measure`` counts it (:func:`coverage_core.metrics.retrieved_tested_chunks`); ``support_method`` is how τ was found
(``Calibration.method``: ``"pseudo-queries"``, ``"override"`` or
``"default: …"``). ``newly_embedded`` counts chunk texts,
``calibration_embedded`` the calibration's texts; ``new_tokens`` and
``cost_usd`` cover both.
"""

ComparisonProgress = Callable[[int, int, ChunkingConfig, str], None]
"""progress(done, total, config, step): step is "embedding" before a configuration, "done" after."""

SUPPORT_SOURCES = {"pseudo-queries": "calibrated", "override": "set by you"}
"""Plain words for ``Calibration.method`` (anything else is the default level)."""


def support_source(method: str | None) -> str:
    """Where a row's support level came from, in plain words: calibrated, set by you, or the default."""
    if method is None or (isinstance(method, float) and np.isnan(method)):
        return ""
    return SUPPORT_SOURCES.get(str(method), "default (could not be calibrated)")


def grid_from_frame(frame: pd.DataFrame) -> list[ChunkingConfig]:
    """The configurations of an edited grid table (columns ``chunk_size``, ``chunk_overlap``).

    Blank rows are skipped and repeated configurations kept once; a row
    that is not a valid configuration raises InputError naming the row.
    """
    missing = [c for c in GRID_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"The chunking grid needs the columns {', '.join(GRID_COLUMNS)}; {', '.join(missing)} is missing.")
    configs: list[ChunkingConfig] = []
    for position, (size, overlap) in enumerate(zip(frame["chunk_size"], frame["chunk_overlap"]), start=1):
        if pd.isna(size) and pd.isna(overlap):
            continue
        try:
            size_value = float(size)
            overlap_value = 0.0 if pd.isna(overlap) else float(overlap)
        except (TypeError, ValueError):
            raise InputError(
                f"Row {position} of the chunking grid must hold whole numbers (got {size!r}, {overlap!r})."
            ) from None
        if not (np.isfinite(size_value) and size_value == int(size_value) and overlap_value == int(overlap_value)):
            raise InputError(f"Row {position} of the chunking grid must hold whole numbers (got {size!r}, {overlap!r}).")
        try:
            config = ChunkingConfig(int(size_value), int(overlap_value))
        except (InputError, ValueError) as exc:
            raise InputError(f"Row {position} of the chunking grid: {exc}") from None
        if config not in configs:
            configs.append(config)
    if not configs:
        raise InputError("The chunking grid is empty; add at least one chunk size.")
    return configs


def parse_grid(text: str) -> list[ChunkingConfig]:
    """A grid written as ``SIZE/OVERLAP`` pairs separated by commas, e.g. ``"500/0,1000/200"``.

    An overlap may be left out (``"800"`` means 800/0). Raises InputError
    naming the part that is not a configuration.
    """
    sizes, overlaps = [], []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        size, _, overlap = part.partition("/")
        if not re.fullmatch(r"\d+", size.strip()) or (overlap and not re.fullmatch(r"\d+", overlap.strip())):
            raise InputError(
                f"{part!r} is not a chunk configuration; write SIZE/OVERLAP in characters, e.g. 1000/200."
            )
        sizes.append(int(size))
        overlaps.append(int(overlap) if overlap else 0)
    return grid_from_frame(pd.DataFrame({"chunk_size": sizes, "chunk_overlap": overlaps}, dtype=object))


def comparison_section(table: pd.DataFrame) -> list[dict]:
    """The comparison table as JSON-ready rows (NaN → None, numbers rounded to 6 decimals)."""
    rows = []
    for record in table.to_dict(orient="records"):
        row = {}
        for name, value in record.items():
            if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
                row[name] = None
            elif isinstance(value, (float, np.floating)):
                row[name] = round(float(value), 6)
            elif isinstance(value, (int, np.integer)):
                row[name] = int(value)
            else:
                row[name] = value
        rows.append(row)
    return rows


def grid_frame(grid: Sequence[ChunkingConfig] = DEFAULT_GRID) -> pd.DataFrame:
    """The grid as an editable table."""
    return pd.DataFrame(
        {"chunk_size": [c.chunk_size for c in grid], "chunk_overlap": [c.chunk_overlap for c in grid]}
    )


@dataclass(frozen=True)
class ChunkingPlan:
    """What running one configuration will embed, known before anything is sent.

    ``n_to_embed`` and ``approx_tokens`` are the chunk texts;
    ``n_calibration`` and ``calibration_tokens`` the texts calibrating its
    support level would send (0 when the user set the level or they are cached).
    """

    config: ChunkingConfig
    n_chunks: int
    n_to_embed: int
    approx_tokens: int
    n_calibration: int = 0
    calibration_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.approx_tokens + self.calibration_tokens


def plan_chunkings(
    documents: Sequence[Document],
    grid: Sequence[ChunkingConfig],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    config: AnalysisConfig | None = None,
) -> list[ChunkingPlan]:
    """Chunk counts and the texts each configuration would newly embed.

    Chunks are fitted to the embedder's input limit as the analysis fits
    them (:func:`coverage_core.embedding_steps.token_limit`). Texts are counted
    once across the whole grid (a chunk two configurations share is
    embedded by the first only), and tokens are approximated offline
    (:func:`coverage_core.embeddings.base.approximate_token_count`).
    Unless ``config`` sets the support level, each configuration also counts
    the texts calibrating its own level would send
    (:func:`coverage_core.stages.calibration.calibration_texts`, with ``config.random_state``).
    """
    from coverage_core.embeddings.base import approximate_token_count

    config = config or AnalysisConfig()
    seen: set[str] = set()

    def fresh(texts: Sequence[str]) -> list[str]:
        new = [t for t in uncached_texts(texts, embedder, cache) if t not in seen]
        seen.update(new)
        return new

    plans = []
    limit = token_limit(embedder, cache)
    for chunking in grid:
        chunks = chunk_corpus(documents, chunking, limit)
        new_chunks = fresh([chunk.text for chunk in chunks])
        probes = []
        if config.support_threshold is None:
            probes = fresh(calibration_module.calibration_texts(chunks, config.random_state))
        plans.append(
            ChunkingPlan(
                chunking, len(chunks), len(new_chunks), sum(approximate_token_count(t) for t in new_chunks),
                len(probes), sum(approximate_token_count(t) for t in probes),
            )
        )
    return plans


def _support_level(
    config: AnalysisConfig, corpus: Corpus, embedder: Embedder, cache: EmbeddingCache | None
) -> tuple[Calibration, int, int]:
    """The corpus's support level, with the distinct texts and the tokens its calibration newly embedded.

    The user's level when ``config`` sets one (nothing embedded); otherwise
    calibrated on this corpus as the analysis does, through the same cache.
    """
    if config.support_threshold is not None:
        return calibrate_corpus(config, corpus), 0, 0
    sent = {"texts": 0, "tokens": 0}

    def embed(texts):
        texts = list(texts)
        sent["texts"] += len(uncached_texts(texts, embedder, cache))  # distinct texts, as the plan counts them
        run = embed_texts(texts, embedder, cache)
        sent["tokens"] += run.new_tokens
        return run.vectors

    found = calibration_module.calibrate(corpus.chunks, corpus.vectors, embed, config.random_state,
                                         fallback=support_fallback(config))
    return found, sent["texts"], sent["tokens"]


def compare_chunkings(
    documents: Sequence[Document],
    questions: QuestionSet,
    question_embedding: EmbeddedTexts,
    grid: Sequence[ChunkingConfig],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    config: AnalysisConfig | None = None,
    is_outlier: np.ndarray | None = None,
    relevant: Sequence[Sequence[retrieval.SourceRef] | None] | None = None,
    k: int = retrieval.DEFAULT_K,
    price_table: pd.DataFrame | None = None,
    progress: ComparisonProgress | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Coverage and retrieval for each chunking configuration of ``grid``: ``(table, warnings)``.

    ``table`` has ``RESULT_COLUMNS``, one row per configuration; ``warnings``, plain sentences, name failed
    configurations or a provider error that stopped the run. Raises InputError on an empty ``grid`` or an
    ``is_outlier`` not of shape (m,). Why a τ and K per row, a fixed screening: docs/checks.md, *Chunking comparison*.

    Parameters
    ----------
    documents, questions, grid : sequence of Document, QuestionSet, sequence of ChunkingConfig
    question_embedding : EmbeddedTexts, the questions' vectors from ``embedder`` (shape (m, d))
    embedder, cache : the embedding model and its cache; cached texts are never re-sent
    config : AnalysisConfig, optional, clustering seed and multi-coverage settings; ``chunking``, ``n_clusters``
        ignored; ``support_threshold`` None calibrates each row's τ on its chunks, a number is every row's τ
    is_outlier : bool ndarray of shape (m,), optional, held out of coverage in every configuration (default: none)
    relevant : length m, optional, sources per question (``retrieval.relevant_from_questions``); None: no retrieval
    k : int, chunks retrieved per question; progress : :data:`ComparisonProgress`, optional
    price_table : DataFrame, optional, a ``coverage_core.costs`` price table, for ``cost_usd`` of paid providers
    """
    if not grid:
        raise InputError("The chunking grid is empty; add at least one chunk size.")
    config = config or AnalysisConfig()
    fixed = _fixed_screening(questions, is_outlier)
    run = _ComparisonRun(
        documents, questions, question_embedding, embedder, cache, config, fixed, relevant, k, price_table
    )
    return _run_grid(grid, run, progress)


def _fixed_screening(questions: QuestionSet, is_outlier: np.ndarray | None) -> dict[str, list[int]]:
    """The caller's screening as ``measure``'s forced rows, held fixed across configurations."""
    n_questions = len(questions.questions)
    if is_outlier is None:
        is_outlier = np.zeros(n_questions, dtype=bool)
    is_outlier = np.asarray(is_outlier, dtype=bool)
    if is_outlier.shape != (n_questions,):
        raise InputError(f"is_outlier must hold one flag per question ({n_questions}); got shape {is_outlier.shape}.")
    rows_of = np.asarray(questions.rows)
    return {"force_include": rows_of[~is_outlier].tolist(), "force_exclude": rows_of[is_outlier].tolist()}


def _run_grid(
    grid: Sequence[ChunkingConfig], run: _ComparisonRun, progress: ComparisonProgress | None
) -> tuple[pd.DataFrame, list[str]]:
    """One row per configuration; a configuration's input error skips it, a provider error stops."""
    records: list[dict] = []
    warnings: list[str] = []
    for position, chunking in enumerate(grid):
        record = {"chunk_size": chunking.chunk_size, "chunk_overlap": chunking.chunk_overlap}
        if progress is not None:
            progress(position, len(grid), chunking, "embedding")
        try:
            analyzed = run.analyze(chunking)
        except ProviderError as exc:
            warnings.append(
                f"The comparison stopped at {_label(chunking)}: {exc} "
                f"The {wording.count(len(records), 'configuration')} before it {wording.plural(len(records), 'is', 'are')} shown, "
                "and their embeddings are cached."
            )
            break
        except InputError as exc:
            records.append({**record, "error": str(exc)})
            warnings.append(f"{_label(chunking)} was skipped: {exc}")
            continue
        records.append(run.record(record, analyzed))
        if progress is not None:
            progress(position + 1, len(grid), chunking, "done")
    table = pd.DataFrame.from_records(records, columns=list(RESULT_COLUMNS))
    return table, warnings


@dataclass(frozen=True)
class _Analyzed:
    """One configuration's corpus, support level, clustering and coverage analysis."""

    corpus: Corpus
    support: Calibration
    calibration_sent: int
    calibration_tokens: int
    clustering: Clustering
    analysis: Analysis


@dataclass(frozen=True)
class _ComparisonRun:
    """What every configuration of one comparison shares."""

    documents: Sequence[Document]
    questions: QuestionSet
    question_embedding: EmbeddedTexts
    embedder: Embedder
    cache: EmbeddingCache | None
    config: AnalysisConfig
    fixed: dict[str, list[int]]
    relevant: Sequence[Sequence[retrieval.SourceRef] | None] | None
    k: int
    price_table: pd.DataFrame | None

    def analyze(self, chunking: ChunkingConfig) -> _Analyzed:
        corpus = embed_corpus(self.documents, chunking, self.embedder, self.cache)
        support, calibration_sent, calibration_tokens = _support_level(self.config, corpus, self.embedder, self.cache)
        clustering = cluster_chunks(corpus, None, self.config.random_state)
        analysis = measure(
            self.config, corpus, self.questions, self.question_embedding, clustering, calibration=support, **self.fixed
        )
        return _Analyzed(corpus, support, calibration_sent, calibration_tokens, clustering, analysis)

    def record(self, record: dict, analyzed: _Analyzed) -> dict:
        """``record`` with the configuration's coverage, cost and retrieval columns."""
        corpus, analysis = analyzed.corpus, analyzed.analysis
        embedded = corpus.embedded
        new_tokens = embedded.new_tokens + analyzed.calibration_tokens
        paid = is_paid(self.embedder.provider)
        cost = None
        if paid and self.price_table is not None:
            cost = estimate_embedding_cost(new_tokens, self.embedder.provider, self.embedder.model, self.price_table).usd
        record.update(
            n_chunks=len(corpus.chunks),
            n_clusters=analyzed.clustering.n_clusters,
            tested_share=analysis.metrics["tested_share"],
            support_threshold=analyzed.support.support_threshold,
            support_method=analyzed.support.method,
            basic=analysis.metrics["basic"],
            balanced=analysis.metrics["balanced"],
            newly_embedded=embedded.n_embedded,
            calibration_embedded=analyzed.calibration_sent,
            new_tokens=new_tokens,
            cost_usd=cost if paid else 0.0,
        )
        if self.relevant is not None and len(self.questions.questions):
            record.update(self._retrieval_columns(corpus))
        return record

    def _retrieval_columns(self, corpus: Corpus) -> dict[str, float]:
        result = retrieval.evaluate_retrieval(
            self.question_embedding.vectors,
            corpus.vectors,
            corpus.chunks,
            self.relevant,
            self.k,
            rows=self.questions.rows,
            question_texts=self.questions.texts,
            documents=corpus.documents,
        )
        if not result.n_labelled:
            return {}
        return dict(
            precision_at_k=result.precision_at_k,
            recall_at_k=result.recall_at_k,
            hit_at_k=result.hit_at_k,
            mrr=result.mrr,
        )


def _label(chunking: ChunkingConfig) -> str:
    return f"chunk size {chunking.chunk_size} with overlap {chunking.chunk_overlap}"
