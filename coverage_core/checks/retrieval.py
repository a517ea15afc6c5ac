"""Retrieval check: do the test questions retrieve the sources they were written from?

Many test sets name, for each question, the document (and sometimes the page)
that answers it. With the same embeddings the coverage analysis uses, each
question retrieves its ``k`` most similar chunks by cosine similarity, and the
retrieved chunks' sources are compared with the named ones. This checks the
retrieval step of the RAG system in isolation, and finds test questions whose
"relevant source" label is wrong or which the chunking makes unretrievable.

All functions are pure and take plain arrays and lists, in the style of
``sklearn.metrics`` and :mod:`coverage_core.metrics`:

* the labels (:mod:`coverage_core.checks.retrieval_labels`): the column of
  a question table that names the relevant sources, each cell read by
  :func:`parse_relevant` into :class:`SourceRef` labels;
* :func:`top_k_chunks` is the retriever (blockwise, exact, reusable, e.g. to
  compare chunkings);
* :func:`evaluate_retrieval` computes precision@k, recall@k, hit@k and MRR
  (formulas under "Metrics" below) and lists the failures;
* :func:`retrieval_section` turns the result into a JSON-ready report section.

Relevance labels
----------------
A cell names one or more sources separated by ``|`` or ``;`` (a comma is
*not* a separator: file names contain commas). Each source is a file name,
optionally with a page, in one of these forms (case-insensitive, spaces
around the page allowed)::

    report.pdf                     file level
    report.pdf#page=3   report.pdf#3   report.pdf#p3
    report.pdf:3
    report.pdf p3   report.pdf p.3   report.pdf page 3   report.pdf pg 3
    report.pdf, page 3   report.pdf, p. 3

Pages count from 1. Surrounding quotes and whitespace are ignored.

A label matches a document when, ignoring case and any directories in either
name, it equals the document's file name, or that name without its extension
(``Alessandro_Volta`` matches ``Alessandro_Volta.txt``; ``docs/Report.PDF``
matches ``report.pdf``). A label that matches several documents (``report``
with ``report.pdf`` and ``report.txt``) is found by a chunk of any of them.

* A **file-level** label is matched by every chunk of a matching document.
* A **page-level** label ``(file, p)`` is matched by a chunk of a matching
  document whose page span contains ``p``. A chunk's page span runs from the
  page its first character is on to the page its last character is on (pass
  the documents to :func:`evaluate_retrieval`; without them only the chunk's
  start page, ``Chunk.page``, is known). Chunks of text files have no pages,
  so they never match a page-level label.

A label that no chunk of the corpus matches (its file is not in the knowledge
base, or the file has no such page) is an *unknown source*: it is listed, and
it still counts as relevant, so it lowers recall; it can never be retrieved.

Reference passages
------------------
A test set written by RAGAS, DeepEval or Giskard gives each question the
passages it was generated from (:mod:`coverage_core.inputs.testset_formats`).
Each passage is a :class:`PassageRef` label, matched by the chunks that
contain or overlap it (:func:`coverage_core.checks.retrieval_labels.passage_chunks`:
they share at least 30 % of the shorter text's five-word runs), so no
column naming files is needed. A passage no chunk holds (it was edited, or
its document is not in the knowledge base) is unknown, like a file above.

Metrics
-------
Each question retrieves the ``k`` chunks most similar to it
(:func:`top_k_chunks`, cosine similarity). For a labelled question, let
``R`` be its relevant labels (distinct file-level and page-level
:class:`SourceRef`) and ``c_1..c_k`` the retrieved chunks in rank order. A
chunk is *relevant* if it matches at least one label in ``R``. Then::

    precision@k = |{ i : c_i is relevant }| / k
    recall@k    = |{ r in R : some c_i matches r }| / |R|
    hit@k       = 1 if some c_i is relevant else 0
    RR          = 1 / min{ i : c_i is relevant }, or 0 if none is

so a retrieved source name may repeat (two chunks of one relevant file
both count for precision, but the file counts once for recall). With
page-level labels the relevant items of recall are the (file, page)
pairs; a file-level label is one item however many pages it has. A label
no chunk matches (an unknown source) stays in ``R``: recall cannot reach
1 and a question whose labels are all unknown scores 0. The reported
figures are the means over the labelled questions (``MRR`` = mean RR).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.blockwise import RunningTopK
from coverage_core.checks.retrieval_labels import (
    PassageRef,
    SourceRef,
    name_key,
    parse_relevant,
    passage_chunks,
    stem_key,
)
from coverage_core.config import DEFAULT_RETRIEVAL_K, MIN_RETRIEVAL_K
from coverage_core.errors import InputError
from coverage_core.types import Chunk, Document
from coverage_core.validation import check_scalar, check_vectors, is_blank, shorten, unit_rows

__all__ = [
    "DEFAULT_K",
    "PassageRef",
    "RetrievalResult",
    "SourceRef",
    "check_k",
    "evaluate_retrieval",
    "parse_relevant",
    "retrieval_section",
    "top_k_chunks",
]

DEFAULT_K = DEFAULT_RETRIEVAL_K  # one default for the check and for "tested" (coverage_core.config)
MIN_K = MIN_RETRIEVAL_K

# Similarities per block of chunks, as in coverage_core.metrics: 32 MB in
# all. Each element of a block costs 4 bytes (float32 similarity), 8 bytes
# (argpartition's index) and 1 byte (the tie or candidate mask).
_BLOCK_BYTES = 32 * 1024 * 1024
_BYTES_PER_ELEMENT = 4 + np.dtype(np.intp).itemsize + 1

# Characters of a retrieved passage shown in the failures table.
PASSAGE_CHARS = 200

# --------------------------------------------------------------------------
# retrieval
# --------------------------------------------------------------------------


def check_k(k, name: str = "k") -> int:
    """``k`` as an int: the chunks retrieved per question, at least :data:`MIN_K`; ``name`` is what the message calls it."""
    return int(check_scalar(k, name, int, min_val=MIN_K, hint="it is the number of chunks retrieved per question",
                            field="retrieval_k"))


def top_k_chunks(
    question_vectors, chunk_vectors, k: int, *, block_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` chunks most similar to each question, by cosine similarity.

    ``sim(q, c) = q.c / (|q| |c|)``; a zero row has similarity 0 to
    everything. Chunks are processed in blocks, so that at most about 32 MB
    of similarities exist at a time and each chunk vector is read once
    whatever the number of questions (the chunk vectors are not copied
    either: float32 input is used in place). Each question keeps its best
    ``k`` so far; in a later block only similarities above its current
    ``k``-th best are looked at, which after the first blocks are few. The
    result is exact and deterministic: equal similarities are ranked by
    chunk index, lowest first, as ``argsort(-sims, kind="stable")`` would
    rank them.

    Parameters
    ----------
    question_vectors : array-like of shape (m, d); m may be 0
    chunk_vectors : array-like of shape (n, d), n >= 1
    k : int >= 1
        Chunks per question; more than ``n`` is clipped to ``n``.
    block_size : int, optional
        Chunks per block; by default as many as fit in 32 MB of similarities.

    Returns
    -------
    indices : ndarray of shape (m, min(k, n)), int
        Chunk indices in rank order (most similar first).
    similarities : ndarray of shape (m, min(k, n)), float64 in [-1, 1]
        Their cosine similarities, non-increasing along each row.
    """
    k = check_k(k)
    chunks = check_vectors(chunk_vectors, "chunk_vectors")
    n, dim = chunks.shape
    # Chunk lengths are divided out of each block rather than normalising a
    # copy of the chunk vectors (1.5 GB at a million 384-d chunks).
    lengths = np.sqrt(np.einsum("ij,ij->i", chunks, chunks))
    inverse_lengths = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0)
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=dim))
    m = questions.shape[0]
    k = min(k, n)
    if block_size is not None:
        step = int(check_scalar(block_size, "block_size", int, min_val=1))
    else:
        step = max(k, _BLOCK_BYTES // (_BYTES_PER_ELEMENT * max(m, 1)))
    best = RunningTopK(m, k)
    if m == 0:
        return best.indices, best.values.astype(np.float64)
    for start in range(0, n, step):
        block = questions @ chunks[start : start + step].T
        block *= inverse_lengths[start : start + step]
        best.add(block, start)
    indices, similarities = best.indices, best.values
    return indices, np.clip(similarities.astype(np.float64), -1.0, 1.0)


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalResult:
    """Outcome of :func:`evaluate_retrieval`.

    Attributes
    ----------
    k : int
        Chunks retrieved per question (after clipping to the number of chunks).
    precision_at_k, recall_at_k, hit_at_k, mrr : float
        Means over the labelled questions; NaN when there is none.
    per_question : DataFrame, one row per labelled question
        ``row``, ``question`` (text or None), ``relevant`` (list of label
        strings), ``retrieved`` (source names in rank order),
        ``retrieved_pages`` (page of each retrieved chunk or None),
        ``retrieved_chunks`` (chunk indices), ``similarities``,
        ``precision_at_k``, ``recall_at_k``, ``hit_at_k`` (0 or 1),
        ``reciprocal_rank``, ``first_relevant_rank`` (1-based, NA if none).
    failures : DataFrame, one row per retrieved chunk of each failed question
        A question fails when none of its relevant sources is retrieved
        (``hit_at_k == 0``). Columns ``row``, ``question``, ``expected``
        (labels joined by ``" | "``), ``rank`` (1-based), ``source``,
        ``page``, ``similarity``, ``passage`` (shortened chunk text),
        ``chunk`` (index); sorted by row, then rank.
    n_labelled, n_unlabelled : int
        Questions with and without relevant sources; unlabelled ones are left
        out of every metric.
    unknown_sources : tuple of str
        Labels (as ``str(SourceRef)``, first spelling seen) that no chunk of
        the corpus matches, in order of first appearance.
    relevant_column : str or None
        Where the labels came from, for the report.
    notes : tuple of str
        One sentence each: k clipped, unlabelled questions, unknown sources,
        zero question vectors.
    k_requested : int
        The k asked for.
    """

    k: int
    precision_at_k: float
    recall_at_k: float
    hit_at_k: float
    mrr: float
    per_question: pd.DataFrame
    failures: pd.DataFrame
    n_labelled: int
    n_unlabelled: int
    unknown_sources: tuple[str, ...] = ()
    relevant_column: str | None = None
    notes: tuple[str, ...] = ()
    k_requested: int = DEFAULT_K


_PER_QUESTION_COLUMNS = [
    "row", "question", "relevant", "retrieved", "retrieved_pages", "retrieved_chunks", "similarities",
    "precision_at_k", "recall_at_k", "hit_at_k", "reciprocal_rank", "first_relevant_rank",
]
_FAILURE_COLUMNS = ["row", "question", "expected", "rank", "source", "page", "similarity", "passage", "chunk"]


@dataclass
class _CorpusIndex:
    """Which document each chunk is from and which pages it spans."""

    chunk_doc: np.ndarray  # (n,) document id
    first_page: np.ndarray  # (n,) 1-based, 0 when the chunk has no page
    last_page: np.ndarray  # (n,)
    doc_ids_by_key: dict[str, set[int]] = field(default_factory=dict)
    doc_pages: list[set[int]] = field(default_factory=list)
    passage_chunks: dict[str, frozenset[int]] = field(default_factory=dict)  # PassageRef.key -> chunks holding it

    @classmethod
    def build(cls, chunks: Sequence[Chunk], documents: Sequence[Document] | None) -> _CorpusIndex:
        by_name = {document.name: document for document in documents or ()}
        ids: dict[str, int] = {}
        n = len(chunks)
        chunk_doc = np.empty(n, dtype=np.intp)
        first = np.zeros(n, dtype=np.int64)
        last = np.zeros(n, dtype=np.int64)
        for i, chunk in enumerate(chunks):
            chunk_doc[i] = ids.setdefault(chunk.document, len(ids))
            document = by_name.get(chunk.document)
            start_page = chunk.page
            end_page = chunk.page
            if document is not None and document.pages:
                start_page = document.page_at(chunk.start)
                end_page = document.page_at(max(chunk.end - 1, chunk.start))
            if start_page is not None:
                first[i] = start_page
                last[i] = max(end_page or start_page, start_page)
        index = cls(chunk_doc, first, last)
        index.doc_pages = [set() for _ in ids]
        for name, doc_id in ids.items():
            key = name_key(name)
            index.doc_ids_by_key.setdefault(key, set()).add(doc_id)
            if (stem := stem_key(key)) is not None:
                index.doc_ids_by_key.setdefault(stem, set()).add(doc_id)
        for i in np.flatnonzero(first > 0):
            index.doc_pages[chunk_doc[i]].update(range(int(first[i]), int(last[i]) + 1))
        return index

    def add_passages(self, labels, chunks: Sequence[Chunk]) -> None:
        """Find the chunks holding each reference passage among ``labels`` (all in one read of the chunks)."""
        passages = {ref.key: ref.text for refs in labels for ref in refs if isinstance(ref, PassageRef)}
        passages = {key: text for key, text in passages.items() if key not in self.passage_chunks}
        if passages:
            found = passage_chunks(list(passages.values()), [chunk.text for chunk in chunks])
            self.passage_chunks.update(zip(passages, found))

    def documents_of(self, ref: SourceRef | PassageRef) -> set[int]:
        if isinstance(ref, PassageRef):
            return {int(self.chunk_doc[c]) for c in self.passage_chunks.get(ref.key, ())}
        return self.doc_ids_by_key.get(ref.key, set())

    def matches(self, chunk: int, ref: SourceRef | PassageRef, docs: set[int]) -> bool:
        if self.chunk_doc[chunk] not in docs:
            return False
        if isinstance(ref, PassageRef):
            return int(chunk) in self.passage_chunks.get(ref.key, ())
        return ref.page is None or self.first_page[chunk] <= ref.page <= self.last_page[chunk]

    def is_known(self, ref: SourceRef | PassageRef) -> bool:
        if isinstance(ref, PassageRef):
            return bool(self.passage_chunks.get(ref.key))
        docs = self.documents_of(ref)
        return bool(docs) and (ref.page is None or any(ref.page in self.doc_pages[d] for d in docs))


def _as_refs(entry, position: int) -> tuple[SourceRef | PassageRef, ...]:
    """One entry of ``relevant`` as labels without repeats; () when unlabelled."""
    if entry is None or isinstance(entry, str) or is_blank(entry):
        return parse_relevant(entry)
    if isinstance(entry, (SourceRef, PassageRef)):
        entry = (entry,)
    if not isinstance(entry, Sequence):
        raise InputError(
            f"relevant[{position}] must be None, a cell string or a sequence of SourceRef; "
            f"got {type(entry).__name__}."
        )
    refs: list[SourceRef] = []
    for item in entry:
        if isinstance(item, str):
            refs.extend(parse_relevant(item))
        elif isinstance(item, (SourceRef, PassageRef)):
            refs.append(item)
        else:
            raise InputError(
                f"relevant[{position}] must hold SourceRef or PassageRef labels or strings; got {type(item).__name__}."
            )
    unique: dict[tuple[str, int | None], SourceRef | PassageRef] = {}
    for ref in refs:
        unique.setdefault((ref.key, ref.page), ref)
    return tuple(unique.values())


def _aligned(values, count: int, name: str, per: str = "question") -> list:
    values = list(values)
    if len(values) != count:
        raise InputError(f"{name} must have one entry per {per} ({count}); got {len(values)}.")
    return values


def evaluate_retrieval(
    question_vectors,
    chunk_vectors,
    chunks: Sequence[Chunk],
    relevant: Sequence[Sequence[SourceRef] | str | None],
    k: int = DEFAULT_K,
    *,
    rows: Sequence[int] | None = None,
    question_texts: Sequence[str] | None = None,
    relevant_column: str | None = None,
    documents: Sequence[Document] | None = None,
    block_size: int | None = None,
    ranked: tuple[np.ndarray, np.ndarray] | None = None,
) -> RetrievalResult:
    """How well each labelled question retrieves its relevant sources in the top ``k``: a :class:`RetrievalResult`.

    Precision@k, recall@k, hit@k and MRR over the labelled questions, as defined in the module docstring
    ("Metrics"). A question whose vector is zero (its embedding failed) has similarity 0 to every chunk; it
    is scored as retrieving nothing relevant (all four metrics 0) and noted. Raises InputError when the
    inputs do not align, ``k`` < 1, a ``relevant`` entry is not a label, or ``ranked`` has too few columns.
    Why: it checks the retriever alone and finds wrong labels (docs/checks.md, *Retrieval*).

    Parameters
    ----------
    question_vectors, chunk_vectors : array-like of shape (m, d) and (n, d)
        Embedded with the same model; rows need not be unit length.
    chunks : sequence of n Chunk, the chunks the rows of ``chunk_vectors`` belong to
    relevant : sequence of m entries, each a sequence of :class:`SourceRef` or :class:`PassageRef` (or of
        label strings), a raw cell string (:func:`parse_relevant`), or None / empty for an unlabelled
        question, which is left out of every metric and counted.
    k : int >= 1, default 5, chunks retrieved per question; more than ``n`` is clipped to ``n`` with a note
    rows, question_texts : sequences of m int and m str, optional, each question's row in the user's file
        (default ``0..m-1``) and its text, shown in the per-question and failures tables
    relevant_column : str, optional, where the labels came from (result and notes)
    documents : sequence of Document, optional, the chunks' documents; with them a chunk's page span runs
        to the page of its last character (otherwise only its start page is known)
    block_size : int, optional, chunks per block in :func:`top_k_chunks`
    ranked : (indices, similarities), optional, each question's most similar chunks as :func:`top_k_chunks`
        returns them, at least ``min(k, n)`` columns (e.g. kept by the screener's pass); no search then
    """
    k_requested = check_k(k)
    chunk_array, questions, chunks, relevant, rows, texts = _evaluation_inputs(
        question_vectors, chunk_vectors, chunks, relevant, rows, question_texts
    )
    k = min(k_requested, chunk_array.shape[0])
    labels = [_as_refs(entry, i) for i, entry in enumerate(relevant)]
    labelled = [i for i in range(questions.shape[0]) if labels[i]]
    index = _CorpusIndex.build(chunks, documents)
    index.add_passages(labels, chunks)
    unknown = _unknown_sources(labels, labelled, index)
    top, sims = _top_k_of_labelled(ranked, questions, chunk_array, labelled, k, block_size)
    zero = np.linalg.norm(questions[labelled], axis=1) == 0 if labelled else np.zeros(0, dtype=bool)
    tables = _score_questions(labels, labelled, top, sims, zero, k, index, chunks, rows, texts)
    n, m = chunk_array.shape[0], questions.shape[0]
    return _retrieval_result(tables, k, k_requested, n, m, len(labelled), tuple(unknown.values()), relevant_column,
                             int(zero.sum()))


def _top_k_of_labelled(
    ranked: tuple[np.ndarray, np.ndarray] | None,
    questions: np.ndarray,
    chunk_array: np.ndarray,
    labelled: list[int],
    k: int,
    block_size: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(chunk indices, similarities) of the ``k`` best chunks of each labelled question."""
    if ranked is None:
        return top_k_chunks(questions[labelled], chunk_array, k, block_size=block_size)
    m = questions.shape[0]
    ranked_indices, ranked_similarities = (np.asarray(a) for a in ranked)
    if ranked_indices.shape[0] != m or ranked_indices.ndim != 2 or ranked_indices.shape[1] < k:
        raise InputError(
            f"ranked holds {ranked_indices.shape} chunk indices; one row of at least {k} per question "
            f"({m}) is needed; leave it out to search here."
        )
    top = ranked_indices[labelled, :k]
    sims = np.clip(ranked_similarities[labelled, :k].astype(np.float64), -1.0, 1.0)
    return top, sims


def _retrieval_result(
    tables: tuple[pd.DataFrame, pd.DataFrame],
    k: int,
    k_requested: int,
    n: int,
    m: int,
    n_labelled: int,
    unknown: tuple[str, ...],
    relevant_column: str | None,
    n_zero: int,
) -> RetrievalResult:
    """The means over the labelled questions, the tables and the notes."""
    per_question, failure_frame = tables

    def mean(column: str) -> float:
        return float(per_question[column].mean()) if len(per_question) else float("nan")

    n_unlabelled = m - n_labelled
    notes = _notes(k_requested, k, n, n_unlabelled, m, relevant_column, list(unknown), n_zero)
    return RetrievalResult(
        k=k,
        precision_at_k=mean("precision_at_k"),
        recall_at_k=mean("recall_at_k"),
        hit_at_k=mean("hit_at_k"),
        mrr=mean("reciprocal_rank"),
        per_question=per_question,
        failures=failure_frame,
        n_labelled=n_labelled,
        n_unlabelled=n_unlabelled,
        unknown_sources=unknown,
        relevant_column=relevant_column,
        notes=tuple(notes),
        k_requested=k_requested,
    )


def _evaluation_inputs(question_vectors, chunk_vectors, chunks, relevant, rows, question_texts):
    """The inputs of :func:`evaluate_retrieval`, checked and aligned (InputError naming the one that does not fit)."""
    chunk_array = check_vectors(chunk_vectors, "chunk_vectors")
    n = chunk_array.shape[0]
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunk_array.shape[1])
    m = questions.shape[0]
    chunks = _aligned(chunks, n, "chunks", per="chunk vector")
    relevant = _aligned(relevant, m, "relevant")
    rows = list(range(m)) if rows is None else [int(row) for row in _aligned(rows, m, "rows")]
    texts = [None] * m if question_texts is None else _aligned(question_texts, m, "question_texts")
    return chunk_array, questions, chunks, relevant, rows, texts


def _unknown_sources(
    labels: list[tuple[SourceRef, ...]], labelled: list[int], index: _CorpusIndex
) -> dict[tuple[str, int | None], str]:
    """The labels no chunk matches, each once, in the order first named."""
    unknown: dict[tuple[str, int | None], str] = {}
    for i in labelled:
        for ref in labels[i]:
            if (ref.key, ref.page) not in unknown and not index.is_known(ref):
                unknown[(ref.key, ref.page)] = str(ref)
    return unknown


def _score_questions(labels, labelled, top, sims, zero, k: int, index: _CorpusIndex, chunks, rows, texts):
    """The per-question table of the labelled questions and the failures table."""
    records: list[dict] = []
    failures: list[dict] = []
    for position, i in enumerate(labelled):
        refs = labels[i]
        chunk_relevant, ref_found = _relevance(top[position], refs, index, k, zero[position])
        hits = np.flatnonzero(chunk_relevant)
        first_rank = int(hits[0]) + 1 if hits.size else None
        retrieved_chunks = [int(c) for c in top[position]]
        records.append(
            {
                "row": rows[i],
                "question": texts[i],
                "relevant": [str(ref) for ref in refs],
                "retrieved": [chunks[c].document for c in retrieved_chunks],
                "retrieved_pages": [_page_of(index, c) for c in retrieved_chunks],
                "retrieved_chunks": retrieved_chunks,
                "similarities": [float(s) for s in sims[position]],
                "precision_at_k": float(chunk_relevant.sum()) / k,
                "recall_at_k": float(ref_found.sum()) / len(refs),
                "hit_at_k": int(hits.size > 0),
                "reciprocal_rank": 1.0 / first_rank if first_rank else 0.0,
                "first_relevant_rank": first_rank,
            }
        )
        if not hits.size:
            failures.extend(_failure_rows(rows[i], texts[i], refs, retrieved_chunks, sims[position], index, chunks))

    per_question = pd.DataFrame.from_records(records, columns=_PER_QUESTION_COLUMNS)
    per_question["first_relevant_rank"] = per_question["first_relevant_rank"].astype("Int64")
    failure_frame = pd.DataFrame.from_records(failures, columns=_FAILURE_COLUMNS)
    if not failure_frame.empty:
        failure_frame = failure_frame.sort_values(["row", "rank"], kind="stable").reset_index(drop=True)
    return per_question, failure_frame


def _relevance(retrieved, refs, index: _CorpusIndex, k: int, zero: bool) -> tuple[np.ndarray, np.ndarray]:
    """Which of the ``k`` retrieved chunks are relevant, and which of ``refs`` some retrieved chunk matches."""
    docs = [index.documents_of(ref) for ref in refs]
    chunk_relevant = np.zeros(k, dtype=bool)
    ref_found = np.zeros(len(refs), dtype=bool)
    if not zero:
        for rank, chunk in enumerate(retrieved):
            for r, ref in enumerate(refs):
                if index.matches(chunk, ref, docs[r]):
                    chunk_relevant[rank] = True
                    ref_found[r] = True
    return chunk_relevant, ref_found


def _failure_rows(row, question, refs, retrieved_chunks, similarities, index: _CorpusIndex, chunks) -> list[dict]:
    """One failures-table row per chunk retrieved by a question that found nothing relevant."""
    expected = " | ".join(str(ref) for ref in refs)
    return [
        {
            "row": row,
            "question": question,
            "expected": expected,
            "rank": rank,
            "source": chunks[chunk].document,
            "page": _page_of(index, chunk),
            "similarity": float(similarities[rank - 1]),
            "passage": shorten(chunks[chunk].text, PASSAGE_CHARS),
            "chunk": chunk,
        }
        for rank, chunk in enumerate(retrieved_chunks, start=1)
    ]


def _page_of(index: _CorpusIndex, chunk: int) -> int | None:
    page = int(index.first_page[chunk])
    return page if page > 0 else None


def _notes(
    k_requested: int,
    k: int,
    n: int,
    n_unlabelled: int,
    m: int,
    column: str | None,
    unknown: list[str],
    n_zero: int,
) -> list[str]:
    notes: list[str] = []
    if k < k_requested:
        notes.append(f"You asked for {k_requested} passages per question, but there are only {n}, so {k} were used.")
    where = f"'{column}'" if column else "the relevant-source column"
    if m and n_unlabelled == m:
        notes.append(
            f"No question names a relevant source in {where}, so retrieval could not be checked; "
            "fill in the source file of each question."
        )
    elif n_unlabelled:
        notes.append(
            f"{n_unlabelled:,} of {wording.count(m, 'question')} {wording.plural(n_unlabelled, 'has', 'have')} no relevant source in "
            f"{where} and {wording.plural(n_unlabelled, 'was', 'were')} left out of the retrieval metrics."
        )
    passages = [name for name in unknown if name.startswith("\u201c")]
    files = [name for name in unknown if not name.startswith("\u201c")]
    if files:
        shown = ", ".join(f"'{name}'" for name in files[:5])
        more = f" and {len(files) - 5} more" if len(files) > 5 else ""
        notes.append(
            f"{wording.count(len(files), 'relevant source')} {wording.plural(len(files), 'matches', 'match')} no document or page of the knowledge base "
            f"({shown}{more}); they count as relevant but cannot be retrieved, which lowers recall. "
            "Check the spelling or add the documents."
        )
    if passages:
        notes.append(
            f"{wording.count(len(passages), 'reference passage')} of the test set {wording.plural(len(passages), 'is', 'are')} in no passage of the knowledge base "
            f"(for example {passages[0]}); they count as relevant but cannot be retrieved, which lowers recall. "
            "Check that the test set was generated from these documents."
        )
    if n_zero:
        notes.append(
            f"{wording.count(n_zero, 'labelled question')} {wording.plural(n_zero, 'has', 'have')} an all-zero vector (their embedding "
            f"failed) and {wording.plural(n_zero, 'was', 'were')} scored as retrieving nothing relevant."
        )
    return notes


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------


def _number(value) -> float | None:
    """A JSON-safe float rounded like the report (6 decimals); NaN gives None."""
    if value is None or value is pd.NA:
        return None
    value = float(value)
    return None if math.isnan(value) else round(value, 6)


def retrieval_section(result: RetrievalResult) -> dict:
    """The retrieval check as a JSON-ready report section (plain Python types only).

    Schema::

        {"k", "precision_at_k", "recall_at_k", "hit_at_k", "mrr",
         "n_labelled", "n_unlabelled", "relevant_column", "unknown_sources",
         "questions": [{"row", "relevant": [...], "retrieved": [...],
                        "precision_at_k", "recall_at_k", "hit_at_k",
                        "reciprocal_rank"}]}

    Averages are None when no question is labelled; floats are rounded to 6
    decimals, as in the rest of the report; ``hit_at_k`` per question is 0 or 1.
    """
    questions = [
        {
            "row": int(record.row),
            "relevant": [str(label) for label in record.relevant],
            "retrieved": [str(name) for name in record.retrieved],
            "precision_at_k": _number(record.precision_at_k),
            "recall_at_k": _number(record.recall_at_k),
            "hit_at_k": int(record.hit_at_k),
            "reciprocal_rank": _number(record.reciprocal_rank),
        }
        for record in result.per_question.itertuples(index=False)
    ]
    return {
        "k": int(result.k),
        "precision_at_k": _number(result.precision_at_k),
        "recall_at_k": _number(result.recall_at_k),
        "hit_at_k": _number(result.hit_at_k),
        "mrr": _number(result.mrr),
        "n_labelled": int(result.n_labelled),
        "n_unlabelled": int(result.n_unlabelled),
        "relevant_column": None if result.relevant_column is None else str(result.relevant_column),
        "unknown_sources": [str(name) for name in result.unknown_sources],
        "questions": questions,
    }
