"""Every parameter of an analysis: which model embeds, and the settings of the later stages.

Small frozen dataclasses validated on construction; the CLI's flags and the
dashboard's settings map onto them, and the report records them whole.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from coverage_core.embeddings import redact_url
from coverage_core.embeddings.choice import AUTO
from coverage_core.metrics import COVER_THRESHOLD_RANGE, check_cover_threshold, check_n_nearest
from coverage_core.offtopic.screener import QuestionScreener, check_strictness
from coverage_core.stages import calibration as calibration_module
from coverage_core.stages.chunking import DEFAULT_CHUNK_SIZE, ChunkingConfig
from coverage_core.suggest.gaps import GapConfig
from coverage_core.validation import check_scalar

# Limits of AnalysisConfig, kept here once; the CLI and the dashboard read them.
MULTI_THRESHOLD_RANGE = COVER_THRESHOLD_RANGE
"""A cosine distance to a cluster centre: above 0, at most 2 (the metric's own limits)."""
SEED_RANGE = (0, 2**32 - 1)
"""The seeds scikit-learn's K-means accepts as ``random_state``."""
REDUNDANCY_THRESHOLD_RANGE = (0.0, 1.0)
"""A cosine similarity between two questions: above 0, at most 1."""
MIN_CLUSTERS = 1
MIN_DIMENSIONS = 1
DEFAULT_RETRIEVAL_K = 5
"""Passages a retriever hands the model per question: the retrieval check's k, and the k of *tested*
(a passage is tested when a question retrieves it among its top k, :func:`metrics.retrieved_tested_chunks`)."""
MIN_RETRIEVAL_K = 1


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which model embeds chunks and questions. API keys are never part of it.

    ``base_url`` is kept whole (it is where requests go); what is saved or
    shown is :meth:`AnalysisConfig.to_dict`, which redacts credentials in it.
    ``provider="auto"`` (the default) is made concrete from the texts' languages
    before anything is embedded (:func:`coverage_core.session.choose_embedding`);
    given an embedder instead, it embeds with that one.
    """

    provider: str = AUTO
    model: str | None = None
    dimensions: int | None = None
    base_url: str | None = None

    def __post_init__(self):
        if self.dimensions is not None:
            check_scalar(self.dimensions, "the output dimensions", int, min_val=MIN_DIMENSIONS, field="dimensions")

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
    questions count as near-duplicates (grouped by :func:`coverage_core.duplicates.duplicate_groups`);
    None takes the embedding model's own level (:func:`coverage_core.duplicates.near_duplicate_level`).
    ``support_threshold`` is the cosine similarity τ at which a question
    reaches a passage; None calibrates it on the corpus
    (:func:`calibrate_corpus`), a number in (0, 1] overrides it.
    ``retrieval_k`` is how many passages of the default chunk size a question
    retrieves: a passage is tested when some on-topic question has it among
    its top :attr:`tested_k` with similarity ≥ τ (whatever the similarity when τ could not be
    calibrated: :func:`coverage_core.measure.tested_level`).
    """

    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    n_clusters: int | None = None
    random_state: int = 0
    strictness: float | None = None
    multi_threshold: float = 0.5
    multi_n: int = 2
    redundancy_threshold: float | None = None
    gaps: GapConfig = field(default_factory=GapConfig)
    support_threshold: float | None = None
    retrieval_k: int = DEFAULT_RETRIEVAL_K

    def __post_init__(self):
        if self.n_clusters is not None:
            check_scalar(self.n_clusters, "the number of clusters", int, min_val=MIN_CLUSTERS, field="n_clusters")
        check_scalar(self.random_state, "the random seed", int, min_val=SEED_RANGE[0], max_val=SEED_RANGE[1],
                     field="random_state")
        if self.strictness is not None:
            check_strictness(self.strictness, "the screening strictness", field="strictness")
        check_cover_threshold(self.multi_threshold, "the multi-cluster threshold", field="multi_threshold")
        check_n_nearest(self.multi_n, "the multi-cluster N", field="multi_n")
        low, high = REDUNDANCY_THRESHOLD_RANGE
        if self.redundancy_threshold is not None:
            check_scalar(self.redundancy_threshold, "the redundancy threshold", float, min_val=low, max_val=high,
                         include_boundaries="right", hint="it is a cosine similarity")
        if self.support_threshold is not None:
            calibration_module.override(self.support_threshold)  # raises InputError outside (0, 1]
        check_scalar(self.retrieval_k, "the retrieval k", int, min_val=MIN_RETRIEVAL_K,
                     hint="it is the number of passages retrieved per question", field="retrieval_k")

    @property
    def tested_k(self) -> int:
        """How many passages a question tests: as much text as ``retrieval_k`` passages of the default size.

        ``tested_k = max(1, round(retrieval_k × DEFAULT_CHUNK_SIZE / chunk_size))``

        Why: a retriever hands the model a context of roughly fixed length, so at 500-character chunks it
        takes twice as many passages as at 1,000; counting passages would make the tested share follow the
        chunk size (docs/verdicts.md, *Tested share*). Vectors read from a store keep the default chunk size
        setting, so their k is ``retrieval_k``.
        """
        return max(1, round(self.retrieval_k * DEFAULT_CHUNK_SIZE / self.chunking.chunk_size))

    def screener(self, question_support_threshold: float | None = None) -> QuestionScreener:
        """The screener of these settings; ``question_support_threshold`` lets it decide against the documents."""
        if self.strictness is None:
            return QuestionScreener(random_state=self.random_state, question_support_threshold=question_support_threshold)
        return QuestionScreener(
            strictness=self.strictness, random_state=self.random_state,
            question_support_threshold=question_support_threshold,
        )

    def to_dict(self) -> dict:
        """Every parameter, as the report records it: credentials in the base URL become ``***``."""
        data = dataclasses.asdict(self)
        data["embedding"]["base_url"] = redact_url(self.embedding.base_url)
        return data
