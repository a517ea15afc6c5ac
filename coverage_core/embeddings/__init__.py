"""Text embeddings: local model, OpenAI and Voyage, plus a persistent cache.

Typical use::

    embedder = make_embedder("local")
    run = embed_texts(chunk_texts, embedder, EmbeddingCache())
    run.vectors  # (n, d) float32 unit rows

Importing this package is cheap: torch, sentence-transformers and the
provider clients are imported only when an embedder first needs them.
"""

from __future__ import annotations

from coverage_core.embeddings.base import (
    API_PROVIDERS,
    CUSTOM_KEY_VARIABLE,
    DEFAULT_MAX_CONCURRENCY,
    Backoff,
    Embedder,
    RequestGate,
    approximate_token_count,
    environment_key,
    key_variable,
    normalize_rows,
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
from coverage_core.embeddings import local, openai_provider, voyage_provider
from coverage_core.embeddings.local import DEFAULT_LOCAL_MODEL, LocalEmbedder, choose_precision
from coverage_core.embeddings.openai_provider import OPENAI_DEFAULT_MODEL, OPENAI_MODELS, OpenAIEmbedder
from coverage_core.embeddings.voyage_provider import VOYAGE_DEFAULT_MODEL, VOYAGE_MODELS, VoyageEmbedder
from coverage_core.errors import InputError

PROVIDERS = ("local", "openai", "voyage")

# Each provider's default model, as its module defines it.
DEFAULT_MODELS = {"local": DEFAULT_LOCAL_MODEL, "openai": OPENAI_DEFAULT_MODEL, "voyage": VOYAGE_DEFAULT_MODEL}

_TRUNCATION = {
    "local": local.trained_for_truncation,
    "openai": openai_provider.trained_for_truncation,
    "voyage": voyage_provider.trained_for_truncation,
}


def trained_for_truncation(provider: str, model: str | None = None) -> bool | None:
    """Whether ``model`` of ``provider`` was trained for truncation (Matryoshka), from the provider's metadata.

    True: its first dimensions are a smaller embedding (OpenAI
    text-embedding-3, Voyage models with ``output_dimension``). False: known
    not to be (all-MiniLM-L6-v2, ada-002, voyage-3). None: unknown provider
    or model. ``model`` None or blank is the provider's default.
    """
    name = (provider or "").strip().lower()
    if name not in _TRUNCATION:
        return None
    return _TRUNCATION[name]((model or "").strip() or DEFAULT_MODELS[name])


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
        provider: ``"local"``, ``"openai"`` or ``"voyage"``.
        model: Model name; None = the provider's default
            (all-MiniLM-L6-v2, text-embedding-3-small, voyage-3.5).
        dimensions: Output size where the model supports it; None = native.
        api_key: API key; None = the environment's key for this endpoint:
            ``OPENAI_API_KEY`` / ``VOYAGE_API_KEY`` for the provider itself,
            ``EMBEDDING_API_KEY`` for any other ``base_url`` (:func:`key_variable`).
        base_url: Other endpoint for an API provider (compatible server, proxy).
        batch_size: Texts per request (APIs; None = the provider's maximum,
            2,048 for OpenAI and 1,000 for Voyage, or 128 for a custom base
            URL) or per cache write (local).
        timeout: Seconds per API request (default 60).
        max_retries: Retries after rate limits, timeouts and connection errors.
        precision: Local only: ``"auto"``, ``"fp32"`` or ``"bf16"``.
        max_concurrency: APIs only: requests in flight at most; None =
            :data:`~coverage_core.embeddings.base.DEFAULT_MAX_CONCURRENCY`.
            The local model always embeds one batch at a time.

    Raises:
        InputError: unknown provider or model, unsupported ``dimensions``,
            ``batch_size`` or ``max_concurrency``, missing API key.
    """
    name = (provider or "").strip().lower()
    if name not in PROVIDERS:
        raise InputError(f"Unknown embedding provider {provider!r}; choose one of: {', '.join(PROVIDERS)}.")
    if batch_size is not None and int(batch_size) < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}.")
    if int(max_retries) < 0:
        raise InputError(f"max_retries must be 0 or more, not {max_retries}.")
    if max_concurrency is not None and int(max_concurrency) < 1:
        raise InputError(f"max_concurrency must be at least 1, not {max_concurrency}.")

    if name == "local":
        if dimensions is not None:
            raise InputError(
                "The local model always returns its native size; dimensions applies to OpenAI "
                "text-embedding-3 and Voyage models only."
            )
        if max_concurrency is not None and int(max_concurrency) != 1:
            raise InputError(
                "The local model embeds one batch at a time (it already uses every CPU core); "
                "max_concurrency applies to OpenAI and Voyage only."
            )
        options = {"batch_size": int(batch_size)} if batch_size else {}
        return LocalEmbedder(model or DEFAULT_MODELS[name], precision=precision, **options)

    options = {
        "dimensions": dimensions,
        "api_key": api_key,
        "base_url": base_url,
        "max_retries": int(max_retries),
    }
    if batch_size:
        options["batch_size"] = int(batch_size)
    if timeout is not None:
        options["timeout"] = float(timeout)
    if max_concurrency is not None:
        options["max_concurrency"] = int(max_concurrency)
    embedder = OpenAIEmbedder if name == "openai" else VoyageEmbedder
    return embedder(model or DEFAULT_MODELS[name], **options)


__all__ = [
    "API_PROVIDERS",
    "Backoff",
    "CUSTOM_KEY_VARIABLE",
    "CacheKey",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MODELS",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingRun",
    "LocalEmbedder",
    "OPENAI_MODELS",
    "OpenAIEmbedder",
    "PROVIDERS",
    "RequestGate",
    "VOYAGE_MODELS",
    "VoyageEmbedder",
    "approximate_token_count",
    "choose_precision",
    "default_cache_dir",
    "embed_texts",
    "environment_key",
    "key_variable",
    "make_embedder",
    "normalize_rows",
    "redact_url",
    "text_hash",
    "trained_for_truncation",
]
