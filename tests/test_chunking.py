"""Chunking: exact offsets, pages, validation and determinism."""

from __future__ import annotations

import pytest

from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_documents
from coverage_core.stages.chunking import ChunkingConfig, chunk_documents
from coverage_core.types import Document
from tests.helpers import PDFS, WIKI


@pytest.fixture(scope="module")
def real_documents():
    return read_documents(
        [PDFS / "pdflatex-4-pages.pdf", PDFS / "multicolumn.pdf", WIKI / "articles" / "Ant.txt"]
    ).documents


def test_defaults():
    config = ChunkingConfig()
    assert (config.chunk_size, config.chunk_overlap) == (1000, 200)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 500, "chunk_overlap": 1000}, r"smaller than chunk_size \(got 1000 >= 500\)"),
        ({"chunk_size": 200, "chunk_overlap": 200}, r"got 200 >= 200"),
        ({"chunk_size": 0, "chunk_overlap": 0}, r"^chunk_size must be at least 1 \(got 0\); it counts characters\.$"),
        ({"chunk_overlap": -1}, r"^chunk_overlap must be at least 0 \(got -1\); it counts characters\.$"),
        ({"chunk_size": 10.5}, r"^chunk_size must be a whole number of at least 1 \(got 10\.5\)"),
        ({"chunk_overlap": True}, r"chunk_overlap must be a whole number"),
    ],
)
def test_invalid_config_says_what_to_fix(kwargs, message):
    with pytest.raises(InputError, match=message):
        ChunkingConfig(**kwargs)


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        ChunkingConfig().chunk_size = 5  # type: ignore[misc]


def test_chunks_of_real_pdfs_map_exactly_to_text_and_pages(real_documents):
    config = ChunkingConfig(chunk_size=500, chunk_overlap=100)
    chunks = chunk_documents(real_documents, config)
    by_name = {document.name: document for document in real_documents}
    assert [name for name in by_name] == ["pdflatex-4-pages.pdf", "multicolumn.pdf", "Ant.txt"]
    for chunk in chunks:
        document = by_name[chunk.document]
        assert document.text[chunk.start : chunk.end] == chunk.text
        assert 0 < len(chunk.text) <= config.chunk_size
        assert chunk.text.strip() == chunk.text
        assert chunk.page == document.page_at(chunk.start)

    pdf_chunks = [chunk for chunk in chunks if chunk.document == "pdflatex-4-pages.pdf"]
    pages = [chunk.page for chunk in pdf_chunks]
    assert pages == sorted(pages) and set(pages) == {1, 2, 3, 4}
    spans = {span.page: span for span in by_name["pdflatex-4-pages.pdf"].pages}
    for chunk in pdf_chunks:
        assert spans[chunk.page].start <= chunk.start < spans[chunk.page].end
    # The text file has no pages.
    assert {chunk.page for chunk in chunks if chunk.document == "Ant.txt"} == {None}


def test_chunks_cover_the_document_in_order_with_bounded_overlap(real_documents):
    config = ChunkingConfig(chunk_size=300, chunk_overlap=60)
    document = real_documents[0]
    chunks = chunk_documents([document], config)
    for before, after in zip(chunks, chunks[1:]):
        assert before.start < after.start
        assert after.start >= before.end - config.chunk_overlap
    # Only whitespace may be left between chunks.
    covered = [False] * len(document.text)
    for chunk in chunks:
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    assert all(covered[i] or document.text[i].isspace() for i in range(len(document.text)))


def test_no_overlap_means_disjoint_chunks(real_documents):
    chunks = chunk_documents(real_documents[:1], ChunkingConfig(chunk_size=400, chunk_overlap=0))
    for before, after in zip(chunks, chunks[1:]):
        assert after.start >= before.end


def test_chunking_is_deterministic(real_documents):
    config = ChunkingConfig(chunk_size=700, chunk_overlap=150)
    assert chunk_documents(real_documents, config) == chunk_documents(real_documents, config)


def test_default_chunks_respect_the_default_size(real_documents):
    chunks = chunk_documents(real_documents)
    assert chunks and max(len(chunk.text) for chunk in chunks) <= 1000
    assert len(chunk_documents(real_documents, ChunkingConfig(200, 0))) > len(chunks)


def test_whitespace_only_chunks_are_dropped():
    text = "First paragraph." + " \n" * 300 + "\n\n\t\t\n" + "Second paragraph."
    document = Document(name="gappy.txt", text=text)
    chunks = chunk_documents([document], ChunkingConfig(chunk_size=20, chunk_overlap=0))
    assert [chunk.text for chunk in chunks] == ["First paragraph.", "Second paragraph."]
    assert all(document.text[chunk.start : chunk.end] == chunk.text for chunk in chunks)
    assert chunk_documents([Document(name="blank.txt", text=" \n\n\t ")]) == []


def test_repetitive_text_keeps_exact_offsets():
    # Identical passages make locating a chunk by search ambiguous.
    document = Document(name="repeat.txt", text=("same words again " * 40 + "\n\n") * 5)
    chunks = chunk_documents([document], ChunkingConfig(chunk_size=120, chunk_overlap=40))
    starts = [chunk.start for chunk in chunks]
    assert starts == sorted(set(starts))
    assert all(document.text[chunk.start : chunk.end] == chunk.text for chunk in chunks)
    assert chunks[-1].end == len(document.text.rstrip())


def test_empty_input_gives_no_chunks():
    assert chunk_documents([]) == []
