"""The dashboard's settings: the core's configuration, flattened for widgets. No Streamlit.

Every default comes from the core (:class:`coverage_core.config.AnalysisConfig`,
:class:`~coverage_core.suggest.gaps.GapConfig`, :class:`~coverage_core.stages.chunking.ChunkingConfig`,
``coverage_core.suggest.llm.DEFAULT_LLM_MODEL``, ``coverage_core.checks.retrieval.DEFAULT_K``),
so the command line and the dashboard cannot drift apart.
:meth:`Settings.analysis_config` turns them back into the core's config,
which validates them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from coverage_core.checks.retrieval import DEFAULT_K
from coverage_core.config import AnalysisConfig, EmbeddingConfig
from coverage_core.embeddings.choice import AUTO, ENGLISH_MODEL
from coverage_core.embeddings.registry import ProviderSpec, provider_spec
from coverage_core.offtopic.screener import STRICTNESS_RANGE, QuestionScreener
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.suggest.gaps import GapConfig
from coverage_core.suggest.llm import DEFAULT_LLM_MODEL

CORE = AnalysisConfig()
"""The core's defaults, read once: the single source of every default below."""
GAPS = CORE.gaps
DEFAULT_STRICTNESS = QuestionScreener().strictness
"""The screener's own default strictness (shown when strictness is automatic)."""
__all__ = ["CORE", "GAPS", "DEFAULT_STRICTNESS", "STRICTNESS_RANGE", "Settings"]


@dataclass(frozen=True)
class Settings:
    """Every parameter the user sets. Never holds an API key.

    ``""`` for ``model`` / ``base_url`` / the columns means "the default"
    (a text field's empty value); :meth:`analysis_config` maps it to None.
    """

    provider: str = CORE.embedding.provider
    model: str = CORE.embedding.model or ""  # "" = the provider's default model
    dimensions: int | None = CORE.embedding.dimensions
    base_url: str = CORE.embedding.base_url or ""
    chunk_size: int = CORE.chunking.chunk_size
    chunk_overlap: int = CORE.chunking.chunk_overlap
    n_clusters: int | None = CORE.n_clusters  # None = automatic
    strictness: float | None = CORE.strictness  # None = the screener's default
    multi_threshold: float = CORE.multi_threshold
    multi_n: int = CORE.multi_n
    gap_threshold: float = GAPS.gap_threshold
    support_threshold: float | None = CORE.support_threshold  # None = calibrated on the corpus
    gap_rule: str = GAPS.rule
    tested_share_cut: float = GAPS.tested_share_threshold  # a topic is a gap below this share tested
    llm_enabled: bool = False
    llm_model: str = DEFAULT_LLM_MODEL
    llm_base_url: str = ""
    seed: int = CORE.random_state
    retrieval_k: int = DEFAULT_K
    relevant_column: str = ""  # "" = detected from the column names
    label_column: str = ""  # "" = detected from the column names
    # (provider, model) the automatic choice picked for the loaded texts' languages (ui.flow.language_profile).
    automatic_choice: tuple[str, str] = ()

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)

    def embedding_choice(self) -> tuple[str, str, int | None, str]:
        """``(provider, model, dimensions, base_url)``: what decides where an embedding key is sent and
        which vectors come back (a saved analysis naming others must be confirmed, ``ui.state``)."""
        return self.provider, self.model, self.dimensions, self.base_url

    @property
    def embedding_provider(self) -> ProviderSpec:
        """The spec of ``provider`` (InputError if none is registered under that name)."""
        return provider_spec(self.provider)

    @property
    def embedding_model(self) -> str:
        """``model``, or the provider's default when it is left empty."""
        return self.model or self.embedding_provider.default_model

    def embedding_config(self) -> EmbeddingConfig:
        """The model to embed with: the one named, or the automatic choice's for the loaded texts."""
        if self.provider == AUTO:  # before any text is loaded, the English default
            provider, model = self.automatic_choice or ENGLISH_MODEL
            # A provider's default model is left unnamed, as a model chosen by hand with the field left empty.
            return EmbeddingConfig(provider=provider, model=None if model == provider_spec(provider).default_model else model)
        return EmbeddingConfig(
            provider=self.provider, model=self.model or None, dimensions=self.dimensions, base_url=self.base_url or None
        )

    def chunking_config(self) -> ChunkingConfig:
        return ChunkingConfig(int(self.chunk_size), int(self.chunk_overlap))

    def gap_config(self) -> GapConfig:
        return dataclasses.replace(
            GAPS, gap_threshold=float(self.gap_threshold), rule=self.gap_rule,
            tested_share_threshold=float(self.tested_share_cut),
        )

    def analysis_config(
        self, embedding: EmbeddingConfig | None = None, chunking: ChunkingConfig | None = None
    ) -> AnalysisConfig:
        """The core's config (validated by the core: may raise InputError).

        ``embedding`` / ``chunking`` replace this session's own when an
        analysis reuses vectors embedded with earlier settings.
        """
        return dataclasses.replace(
            CORE,
            embedding=embedding or self.embedding_config(),
            chunking=chunking or self.chunking_config(),
            n_clusters=self.n_clusters,
            random_state=self.seed,
            strictness=self.strictness,
            multi_threshold=float(self.multi_threshold),
            multi_n=int(self.multi_n),
            support_threshold=None if self.support_threshold is None else float(self.support_threshold),
            gaps=self.gap_config(),
            retrieval_k=int(self.retrieval_k),
        )
