"""Split documents into the passages that questions are matched against.

Coverage is measured per chunk, so chunks should look like what a typical
RAG retriever returns. The splitter is LangChain's
``RecursiveCharacterTextSplitter``, the most common default in RAG stacks: it
prefers to cut at paragraph breaks, then line breaks, then spaces. PDF pages
are joined with a blank line, so page ends are preferred cut points too.

Chunk sizes count characters, but the embedding model reads tokens, and the
characters per token depend on the language: all-MiniLM-L6-v2 reads 256
tokens, which 1,000 characters of English rarely pass and of German or
French often do (more word pieces per word). Given a :class:`TokenLimit`,
every chunk over the model's input limit is split again with the same
splitter at a smaller size (:func:`split_documents`), so no passage is cut
silently when it is embedded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from langchain_text_splitters import RecursiveCharacterTextSplitter

from coverage_core.errors import InputError
from coverage_core.types import Chunk, Document
from coverage_core.validation import check_scalar

MIN_CHUNK_SIZE = 1
"""Characters; the overlap runs from 0 to one less than the chunk size."""


DEFAULT_CHUNK_SIZE = 1000
"""Characters per chunk by default; also the passage size ``AnalysisConfig.retrieval_k`` counts in."""


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk size and overlap, both in characters.

    The defaults (1000 characters, 200 overlap) are LangChain's usual
    settings. 1000 characters of English are roughly 200-250 word pieces,
    close to the 256-token input limit of MiniLM-style embedding models, so
    little of a chunk is cut off before it is embedded. The 20 % overlap keeps
    a sentence that straddles a cut whole in at least one chunk.
    """

    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = 200

    def __post_init__(self) -> None:
        check_chunking(self.chunk_size, self.chunk_overlap)


def check_chunking(
    chunk_size, chunk_overlap, size_name: str = "chunk_size", overlap_name: str = "chunk_overlap"
) -> None:
    """Raise InputError unless ``chunk_size``/``chunk_overlap`` make a :class:`ChunkingConfig`.

    The one place the limits live. ``size_name`` and ``overlap_name`` are
    what the message calls the two values, so a caller can name them as its
    user wrote them (the CLI passes ``--chunk-size`` and ``--chunk-overlap``).
    """
    check_scalar(chunk_size, size_name, int, min_val=MIN_CHUNK_SIZE, hint="it counts characters")
    check_scalar(chunk_overlap, overlap_name, int, min_val=0, hint="it counts characters")
    if chunk_overlap >= chunk_size:
        raise InputError(
            f"{overlap_name} must be smaller than {size_name} (got {chunk_overlap} >= {chunk_size}); "
            f"lower {overlap_name} or raise {size_name}."
        )


RESPLIT_MARGIN = 0.95
"""Share of the measured characters-per-token a chunk is split again at: denser parts of it must fit too."""

MAX_RESPLIT_ROUNDS = 8
"""Rounds of splitting again before a piece still over the limit is left to be truncated."""


@dataclass(frozen=True)
class TokenLimit:
    """The embedding model's input limit, and how its tokens are counted.

    Attributes:
        max_tokens: The most tokens of one text the model reads.
        count_tokens: The token count of each text of a list, in one call
            (an embedder's ``count_tokens``, so the tokenizer runs batched).
    """

    max_tokens: int
    count_tokens: Callable[[list[str]], list[int]]

    def __post_init__(self) -> None:
        check_scalar(self.max_tokens, "max_tokens", int, min_val=1, hint="it counts tokens")


@dataclass(frozen=True)
class SplitChunks:
    """The chunks of :func:`split_documents`, and what fitting them to a :class:`TokenLimit` did.

    Attributes:
        chunks: The chunks, in document order.
        resplit_texts: The text of each chunk of the character split that was
            over the limit and split again (empty without a limit).
        n_truncated: Chunks still over the limit: the model reads only their beginning.
    """

    chunks: list[Chunk]
    resplit_texts: list[str]
    n_truncated: int = 0

    @property
    def n_resplit(self) -> int:
        return len(self.resplit_texts)


def chunk_documents(
    documents: Sequence[Document],
    config: ChunkingConfig = ChunkingConfig(),
    token_limit: TokenLimit | None = None,
) -> list[Chunk]:
    """Split every document into chunks, in document order.

    Each chunk keeps its exact character range in its document
    (``document.text[chunk.start:chunk.end] == chunk.text``) and the page it
    starts on, so results can point the user to the passage. Chunks that are
    only whitespace are dropped. The same input always gives the same chunks.
    With a ``token_limit``, chunks over it are split again (see :func:`split_documents`).
    """
    return split_documents(documents, config, token_limit).chunks


def split_documents(
    documents: Sequence[Document],
    config: ChunkingConfig = ChunkingConfig(),
    token_limit: TokenLimit | None = None,
) -> SplitChunks:
    """The chunks of :func:`chunk_documents`, with what fitting them to ``token_limit`` did.

    Without a limit these are the character split's chunks. With one, every
    chunk over ``token_limit.max_tokens`` tokens is split again by the same
    splitter at ``size = floor(len(text) × max_tokens / tokens × RESPLIT_MARGIN)``
    characters, its overlap scaled by ``size / chunk_size``, where ``tokens``
    is that chunk's own count; a piece still over is split again the same
    way, for up to :data:`MAX_RESPLIT_ROUNDS` rounds. Chunks within the limit
    are kept as they are. Each round counts all its texts in one call.
    """
    splitter = _splitter(config.chunk_size, config.chunk_overlap)
    pieces = [
        (index, start, text) for index, document in enumerate(documents)
        for start, text in _pieces(splitter, document.text)
    ]
    if token_limit is None:
        return SplitChunks([_chunk(documents[index], start, text) for index, start, text in pieces], [])

    max_tokens = token_limit.max_tokens
    splitters: dict[int, RecursiveCharacterTextSplitter] = {}
    kept: list[list[tuple[int, str, int]]] = [[] for _ in pieces]  # per chunk: (start, text, tokens)
    resplit: set[int] = set()
    work = [(origin, start, text) for origin, (_, start, text) in enumerate(pieces)]
    for round_number in range(MAX_RESPLIT_ROUNDS + 1):
        counts = _counts(token_limit, [text for _, _, text in work])
        next_work = []
        for (origin, start, text), tokens in zip(work, counts):
            size = math.floor(len(text) * max_tokens / tokens * RESPLIT_MARGIN) if tokens > max_tokens else 0
            if tokens <= max_tokens or size < 1 or round_number == MAX_RESPLIT_ROUNDS:
                kept[origin].append((start, text, tokens))
                continue
            if size not in splitters:
                splitters[size] = _splitter(size, config.chunk_overlap * size // config.chunk_size)
            parts = _pieces(splitters[size], text)
            if len(parts) <= 1:  # nothing left to cut at: the model truncates it
                kept[origin].append((start, text, tokens))
                continue
            resplit.add(origin)
            next_work.extend((origin, start + offset, part) for offset, part in parts)
        if not next_work:
            break
        work = next_work

    chunks: list[Chunk] = []
    n_truncated = 0
    # Pieces of overlapping chunks interleave, and two may cover the same span:
    # each document's are put back in text order, each span once.
    for index, group in groupby(zip(pieces, kept), key=lambda item: item[0][0]):
        fitted = {(start, text): tokens for _, items in group for start, text, tokens in items}
        for (start, text), tokens in sorted(fitted.items(), key=lambda item: (item[0][0], len(item[0][1]))):
            chunks.append(_chunk(documents[index], start, text))
            n_truncated += tokens > max_tokens
    return SplitChunks(chunks, [pieces[origin][2] for origin in sorted(resplit)], n_truncated)


def _splitter(chunk_size: int, chunk_overlap: int) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True)


def _pieces(splitter: RecursiveCharacterTextSplitter, text: str) -> list[tuple[int, str]]:
    """``(start, text)`` of each piece ``splitter`` cuts ``text`` into, whitespace-only pieces dropped."""
    return [
        (piece.metadata["start_index"], piece.page_content)
        for piece in splitter.create_documents([text])
        if piece.page_content.strip()
    ]


def _counts(token_limit: TokenLimit, texts: list[str]) -> list[int]:
    if not texts:
        return []
    counts = [int(count) for count in token_limit.count_tokens(list(texts))]
    if len(counts) != len(texts):
        raise RuntimeError(f"count_tokens returned {len(counts)} counts for {len(texts)} texts.")
    return counts


def _chunk(document: Document, start: int, text: str) -> Chunk:
    # The splitter only cuts and strips, so every chunk is a substring it can
    # locate; anything else is a bug we must not hide behind wrong page numbers.
    if start < 0 or document.text[start : start + len(text)] != text:
        raise RuntimeError(f"Chunk offsets of {document.name} do not match its text.")
    return Chunk(document=document.name, text=text, start=start, end=start + len(text), page=document.page_at(start))
