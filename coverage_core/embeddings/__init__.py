"""Text embeddings: the registered providers (local model, OpenAI, Voyage), plus a persistent cache.

Typical use::

    embedder = make_embedder("local")
    run = embed_texts(chunk_texts, embedder, EmbeddingCache())
    run.vectors  # (n, d) float32 unit rows

Importing this package is cheap: torch, sentence-transformers and the
provider clients are imported only when an embedder first needs them.
"""

from __future__ import annotations

from coverage_core.embeddings.base import (
    CUSTOM_KEY_VARIABLE,
    DEFAULT_MAX_CONCURRENCY,
    Embedder,
    EmbedderOptions,
    ModelSpec,
    ProviderSpec,
    approximate_token_count,
    redact_url,
)
from coverage_core.embeddings.cache import (
    CacheKey,
    EmbeddingCache,
    EmbeddingRun,
    default_cache_dir,
    embed_texts,
    text_hash,
)
from coverage_core.embeddings.local import DEFAULT_LOCAL_MODEL, LocalEmbedder, choose_precision
from coverage_core.embeddings.openai_provider import OPENAI_DEFAULT_MODEL, OPENAI_MODELS, OpenAIEmbedder
from coverage_core.embeddings.registry import (
    DEFAULT_MODELS,
    PROVIDERS,
    environment_key,
    key_variable,
    provider_spec,
    trained_for_truncation,
)
from coverage_core.embeddings.retries import Backoff, RequestGate
from coverage_core.embeddings.voyage_provider import VOYAGE_DEFAULT_MODEL, VOYAGE_MODELS, VoyageEmbedder
from coverage_core.errors import InputError


def make_embedder(
    provider: str = "local",
    model: str | None = None,
    *,
    dimensions: int | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    batch_size: int | None = None,
    timeout: float | None = None,
    max_retries: int = 5,
    precision: str = "auto",
    max_concurrency: int | None = None,
) -> Embedder:
    """An embedder for ``provider``; nothing is loaded or sent until first use.

    Args:
        provider: A name in :data:`~coverage_core.embeddings.registry.PROVIDERS`
            (``"local"``, ``"openai"``, ``"voyage"``).
        model: Model name; None = the provider's ``default_model``.
        dimensions: Output size where the model supports it; None = native.
        api_key: API key; None = the environment's key for this endpoint (:func:`key_variable`).
        base_url: Other endpoint for an API provider (compatible server, proxy).
        batch_size: Texts per request (APIs; None = the provider's limit) or per cache write (local).
        timeout: Seconds per API request (default 60).
        max_retries: Retries after rate limits, timeouts and connection errors.
        precision: Local only: ``"auto"``, ``"fp32"`` or ``"bf16"``.
        max_concurrency: APIs only: requests in flight at most; None =
            :data:`~coverage_core.embeddings.base.DEFAULT_MAX_CONCURRENCY`.

    Raises:
        InputError: unknown provider or model, unsupported ``dimensions``,
            ``batch_size`` or ``max_concurrency``, missing API key.

    Why: a fully cached run loads no model; defaults in full: docs/providers.md, *In Python*.
    """
    spec = provider_spec(provider)
    if batch_size is not None and int(batch_size) < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}.")
    if int(max_retries) < 0:
        raise InputError(f"max_retries must be 0 or more, not {max_retries}.")
    if max_concurrency is not None and int(max_concurrency) < 1:
        raise InputError(f"max_concurrency must be at least 1, not {max_concurrency}.")
    options = EmbedderOptions(
        dimensions=dimensions, api_key=api_key, base_url=base_url, batch_size=batch_size, timeout=timeout,
        max_retries=int(max_retries), precision=precision, max_concurrency=max_concurrency,
    )
    return spec.factory(model or spec.default_model, options)


__all__ = [
    "Backoff",
    "CUSTOM_KEY_VARIABLE",
    "CacheKey",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MODELS",
    "Embedder",
    "EmbedderOptions",
    "EmbeddingCache",
    "EmbeddingRun",
    "LocalEmbedder",
    "ModelSpec",
    "OPENAI_DEFAULT_MODEL",
    "OPENAI_MODELS",
    "OpenAIEmbedder",
    "PROVIDERS",
    "ProviderSpec",
    "RequestGate",
    "VOYAGE_DEFAULT_MODEL",
    "VOYAGE_MODELS",
    "VoyageEmbedder",
    "approximate_token_count",
    "choose_precision",
    "default_cache_dir",
    "embed_texts",
    "environment_key",
    "key_variable",
    "make_embedder",
    "provider_spec",
    "redact_url",
    "text_hash",
    "trained_for_truncation",
]
