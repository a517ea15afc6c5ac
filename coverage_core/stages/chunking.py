"""Split documents into the passages that questions are matched against.

Coverage is measured per chunk, so chunks should look like what a typical
RAG retriever returns. The splitter is LangChain's
``RecursiveCharacterTextSplitter``, the most common default in RAG stacks: it
prefers to cut at paragraph breaks, then line breaks, then spaces. PDF pages
are joined with a blank line, so page ends are preferred cut points too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


def chunk_documents(
    documents: Sequence[Document], config: ChunkingConfig = ChunkingConfig()
) -> list[Chunk]:
    """Split every document into chunks, in document order.

    Each chunk keeps its exact character range in its document
    (``document.text[chunk.start:chunk.end] == chunk.text``) and the page it
    starts on, so results can point the user to the passage. Chunks that are
    only whitespace are dropped. The same input always gives the same chunks.
    """
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=config.chunk_size,
        chunk_overlap=config.chunk_overlap,
        add_start_index=True,
    )
    chunks: list[Chunk] = []
    for document in documents:
        for piece in splitter.create_documents([document.text]):
            text = piece.page_content
            start = piece.metadata["start_index"]
            if not text.strip():
                continue
            # The splitter only cuts and strips, so every chunk is a substring
            # it can locate; anything else is a bug we must not hide behind
            # wrong page numbers.
            if start < 0 or document.text[start : start + len(text)] != text:
                raise RuntimeError(f"Chunk offsets of {document.name} do not match its text.")
            chunks.append(
                Chunk(
                    document=document.name,
                    text=text,
                    start=start,
                    end=start + len(text),
                    page=document.page_at(start),
                )
            )
    return chunks
