"""What an analysis found: the stages' results over the input data of :mod:`coverage_core.types`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coverage_core import duplicates
from coverage_core.config import AnalysisConfig
from coverage_core.embeddings.choice import ModelChoice
from coverage_core.languages import LanguageProfile
from coverage_core.offtopic.screener import QuestionScreener
from coverage_core.stages import calibration
from coverage_core.stages.calibration import Calibration
from coverage_core.suggest.gaps import Gap
from coverage_core.types import Chunk, Document, QuestionSet

__all__ = ["Analysis", "Clustering", "Corpus", "EmbeddedTexts", "TokenFit"]


def _default_calibration() -> Calibration:
    """The documented default τ."""
    return calibration.default()


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


@dataclass(frozen=True)
class TokenFit:
    """How the chunks were fitted to the embedding model's input limit
    (:func:`coverage_core.stages.chunking.split_documents`).

    Attributes:
        max_tokens: The model's input limit, in tokens.
        n_chunks: Chunks after fitting.
        n_resplit: Chunks of the character split that were over the limit and split again.
        n_truncated: Chunks still over the limit (the model reads their beginning only); 0 when all fit.
        by_language: Chunks split again, by the language of their text (ISO 639-1 code).
    """

    max_tokens: int
    n_chunks: int
    n_resplit: int
    n_truncated: int
    by_language: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "max_tokens": self.max_tokens, "n_chunks": self.n_chunks, "n_resplit": self.n_resplit,
            "n_truncated": self.n_truncated, "by_language": dict(self.by_language),
        }


@dataclass
class Corpus:
    """Chunks of the readable documents and their vectors.

    ``token_fit`` says how the chunks were fitted to the model's input limit;
    None when they were not chunked here (vectors read from a store or a
    saved analysis) or the limit is unknown.
    """

    documents: list[Document]
    chunks: list[Chunk]
    embedded: EmbeddedTexts
    token_fit: TokenFit | None = None

    @property
    def vectors(self) -> np.ndarray:
        return self.embedded.vectors

    @property
    def chunk_documents(self) -> list[str]:
        return [chunk.document for chunk in self.chunks]


@dataclass
class Clustering:
    """The passages' topics: each chunk's label and each topic's centre.

    ``representatives`` (a few shortened passages per topic) and
    ``topic_names`` depend on the corpus and the clustering only, so the
    first measurement fills them (:func:`coverage_core.measure.name_topics`)
    and a threshold or override change reuses them: naming 50 topics over
    200,000 passages takes seconds.
    """

    labels: np.ndarray
    centroids: np.ndarray
    warnings: list[str]
    representatives: list[list[str]] | None = field(default=None, repr=False, compare=False)
    topic_names: list[str] | None = field(default=None, repr=False, compare=False)

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
    duplicate_groups: duplicates.DuplicateGroups
    warnings: list[str]
    question_embedding: EmbeddedTexts
    gaps: list[Gap] = field(default_factory=list)
    calibration: Calibration = field(default_factory=_default_calibration)
    # The screener's topics (see measure); None: the clustering's own labels.
    topics: np.ndarray | None = None
    # Which language each document and question is written in (measure fills it; None in an
    # analysis built by hand or pickled before it existed).
    languages: LanguageProfile | None = None
    # The automatic model choice that picked ``config.embedding`` (None: the model was named).
    model_choice: ModelChoice | None = None

    @property
    def screening_topics(self) -> np.ndarray:
        """Each chunk's topic as the off-topic screener saw it: the automatic topics, whatever K is shown."""
        return self.clustering.labels if self.topics is None else self.topics

    def duplicate_table(self) -> pd.DataFrame:
        """One line per group of near-duplicate questions, largest first.

        Columns: ``row`` and ``question`` of the group's representative,
        ``n_questions`` in the group, ``other_rows`` (list of the other
        members' file rows, in order) and ``min_similarity`` (the lowest
        similarity of a member to the representative). The grouping rule is
        in :func:`coverage_core.duplicates.duplicate_groups`.
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
