"""Embedding an analysis's inputs: the embedder a config names, the input limit chunks are fitted to, the
documents chunked to that limit, and passages and questions embedded through the cache.

:class:`coverage_core.session.AnalysisSession` runs these as its first stages (``"chunks"`` and
``"questions"`` of :data:`coverage_core.session.STAGES`); the command line and the dashboard also call
:func:`chunk_corpus` and :func:`token_limit` to count chunks before anything is embedded. What an embedding
found is an :class:`~coverage_core.results.EmbeddedTexts`; a chunked and embedded corpus a
:class:`~coverage_core.results.Corpus`.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from coverage_core.config import EmbeddingConfig
from coverage_core.embeddings import Embedder, EmbeddingCache, approximate_token_count, embed_texts, make_embedder
from coverage_core.embeddings.base import UNLIMITED_TOKENS
from coverage_core.embeddings.cache import CacheKey, text_hash
from coverage_core.embeddings.registry import model_spec, sends_requests
from coverage_core.errors import InputError
from coverage_core.languages import detect_language
from coverage_core.results import Corpus, EmbeddedTexts, TokenFit
from coverage_core.stages.chunking import ChunkingConfig, SplitChunks, TokenLimit, split_documents
from coverage_core.types import Chunk, Document, QuestionSet

__all__ = [
    "Progress", "build_embedder", "chunk_corpus", "embed_corpus", "embed_questions", "embed_stage",
    "offline_token_limit", "token_limit",
]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): see :data:`coverage_core.session.STAGES`."""


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


def token_limit(embedder: Embedder, cache: EmbeddingCache | None = None) -> TokenLimit | None:
    """The input limit chunks are fitted to, counted with ``embedder``'s tokenizer; None when it is not known.

    The limit is the registry's ``max_tokens`` for the embedder's model, else
    the embedder's own ``max_tokens`` (or sentence-transformers'
    ``max_seq_length``). A local model's counts are taken from ``cache``
    where it holds the text, so a run whose chunks are all cached never
    loads the model; an API embedder's count is an offline approximation,
    cheaper than a cache lookup.
    """
    entry = model_spec(embedder.provider, embedder.model)
    max_tokens = entry.max_tokens if entry is not None else (
        getattr(embedder, "max_tokens", None) or getattr(embedder, "max_seq_length", None))
    if not max_tokens or max_tokens >= UNLIMITED_TOKENS:
        return None
    if cache is None or sends_requests(embedder.provider):
        return TokenLimit(int(max_tokens), embedder.count_tokens)
    key = CacheKey.of(embedder)

    def count_tokens(texts: list[str]) -> list[int]:
        digests = [text_hash(text) for text in texts]
        known = cache.get_many(key, digests)
        missing = [text for text, digest in zip(texts, digests) if digest not in known]
        counted = iter(embedder.count_tokens(missing) if missing else [])
        return [known[digest][1] if digest in known else next(counted) for digest in digests]

    return TokenLimit(int(max_tokens), count_tokens)


def offline_token_limit(embedding: EmbeddingConfig) -> TokenLimit | None:
    """:func:`token_limit` of an API model without its embedder (no key needed): the registry's
    ``max_tokens``, counted with the same offline approximation its embedder uses."""
    entry = model_spec(embedding.provider, embedding.model)
    if entry is None or entry.max_tokens >= UNLIMITED_TOKENS:
        return None
    return TokenLimit(int(entry.max_tokens), lambda texts: [approximate_token_count(text) for text in texts])


def chunk_corpus(
    documents: Sequence[Document], chunking: ChunkingConfig, limit: TokenLimit | None = None
) -> list[Chunk]:
    """The documents' chunks, fitted to ``limit`` when given (:func:`token_limit`); InputError when there are none."""
    return _split_corpus(documents, chunking, limit).chunks


def _split_corpus(documents: Sequence[Document], chunking: ChunkingConfig, limit: TokenLimit | None) -> SplitChunks:
    split = split_documents(documents, chunking, limit)
    if not split.chunks:
        raise InputError("The documents contain no text to chunk; add documents with text.")
    return split


def _token_fit(split: SplitChunks, limit: TokenLimit | None) -> TokenFit | None:
    """What fitting the chunks to ``limit`` did; languages are detected on the chunks split again only."""
    if limit is None:
        return None
    by_language = Counter(detect_language(text) for text in split.resplit_texts)
    return TokenFit(limit.max_tokens, len(split.chunks), split.n_resplit, split.n_truncated,
                    dict(by_language.most_common()))


def embed_stage(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    stage: str,
    progress: Progress | None,
) -> EmbeddedTexts:
    """``texts`` embedded with ``embedder`` through ``cache``, counted to ``progress`` as ``stage``; the cache's
    warnings (e.g. it was rebuilt) are taken into the result, so they are told once."""
    callback = (lambda done, total: progress(stage, done, total)) if progress else None
    run = embed_texts(list(texts), embedder, cache, progress=callback)
    # Take what the cache had to say (e.g. it was rebuilt), so it is told once, with these vectors.
    notes = cache.warnings if cache is not None else []
    cache_warnings = list(notes)
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
    """The documents chunked, fitted to ``embedder``'s input limit (:func:`token_limit`), and embedded."""
    limit = token_limit(embedder, cache)
    split = _split_corpus(documents, chunking, limit)
    embedded = embed_stage([chunk.text for chunk in split.chunks], embedder, cache, "chunks", progress)
    return Corpus(list(documents), split.chunks, embedded, _token_fit(split, limit))


def embed_questions(
    questions: QuestionSet,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> EmbeddedTexts:
    """The questions embedded, counted to ``progress`` as the stage ``"questions"``."""
    return embed_stage(questions.texts, embedder, cache, "questions", progress)
