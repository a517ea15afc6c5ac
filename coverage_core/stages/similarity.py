"""The similarity scan: each chunk's best questions and each question's best chunks.

Every similarity-based result of an analysis comes from one pass over the
chunk x question similarities (:mod:`coverage_core.blockwise`):
:func:`best_matches` is the screener's pass, :func:`nearest_questions`
keeps each chunk's nearest questions, and :func:`scan_similarities` yields
every coverage measure at once, starting from such an index when one is
given (``index``) so that only the chunks whose best question is screened
out, or does not cover the chunk's cluster, are computed again. Vectors
are compared by cosine similarity; rows that are unit length already are
used in place, not copied. The measures themselves are defined in
:mod:`coverage_core.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from coverage_core.blockwise import block_rows, scan_blocks
from coverage_core.errors import InputError
from coverage_core.metrics import (
    check_cover_threshold,
    check_n_nearest,
    covering_scores,
    multi_coverage_inputs,
    n_nearest_covers,
    threshold_covers,
)
from coverage_core.validation import check_scalar, check_vectors, unit_rows

__all__ = [
    "BestMatches",
    "best_matches",
    "DEFAULT_INDEX_DEPTH",
    "NearestQuestions",
    "nearest_questions",
    "question_top_chunks",
    "scan_similarities",
    "SimilarityScan",
]

# Consecutive chunks per step when only some chunks' similarities are
# needed (_best_of): 8,192 x 384 float32 = 12 MB, a piece that stays in cache.
_SLAB_ROWS = 8192

# _best_of multiplies a whole slab, rather than copy the wanted rows out of
# it, when they are more than this share of the slab (measured at 200,000
# chunks: copying most rows costs more than the product with a few questions).
_SLAB_DENSE_SHARE = 0.25


@dataclass(frozen=True)
class SimilarityScan:
    """Results of :func:`scan_similarities`; fields not asked for are None."""

    min_distances: np.ndarray
    nearest_question: np.ndarray
    question_similarity: np.ndarray
    nearest_chunk: np.ndarray
    multi_threshold_score: float | None = None
    multi_threshold_per_cluster: np.ndarray | None = None
    multi_n_score: float | None = None
    multi_n_per_cluster: np.ndarray | None = None


# Questions kept per chunk by :func:`nearest_questions`: the best inlier, and
# the best question covering the chunk's cluster, are almost always among a
# chunk's 64 nearest, and 64 keeps the index at ~12 bytes x 64 per chunk.
DEFAULT_INDEX_DEPTH = 64


@dataclass(frozen=True)
class NearestQuestions:
    """Each chunk's most similar questions, kept to re-score without the n x m product.

    Built once per (chunks, questions) by :func:`nearest_questions`; passed to
    :func:`scan_similarities` when only the inlier mask, the clustering or
    the multi-coverage settings change.

    Attributes
    ----------
    indices : ndarray of shape (n, depth), int
        Question indices, most similar first (ties: lower index first).
    similarities : ndarray of shape (n, depth), float32
    question_similarity, nearest_chunk : ndarray of shape (m,)
        Each question's best chunk, as in :func:`question_support`.
    """

    indices: np.ndarray
    similarities: np.ndarray
    question_similarity: np.ndarray
    nearest_chunk: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """(n chunks, m questions) the index was built for."""
        return self.indices.shape[0], self.question_similarity.shape[0]

    @property
    def complete(self) -> bool:
        """Whether every question is kept for every chunk (depth >= m)."""
        return self.indices.shape[1] >= self.question_similarity.shape[0]


def nearest_questions(
    chunk_vectors, question_vectors, depth: int = DEFAULT_INDEX_DEPTH, block_size: int | None = None
) -> NearestQuestions:
    """Index each chunk's ``depth`` most similar questions (one pass, n x m x d flops).

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d), m >= 1
    depth : int >= 1
        Questions kept per chunk (clipped to m).
    block_size : int, optional

    Returns
    -------
    NearestQuestions
    """
    check_scalar(depth, "depth", int, min_val=1, hint="it counts questions")
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1]), copy=False)
    found = scan_blocks(chunks, questions, block_size, want_questions=True, depth=int(depth))
    return NearestQuestions(found["top_idx"], found["top_sim"], found["col_sim"], found["col_idx"])


@dataclass(frozen=True)
class BestMatches:
    """Results of :func:`best_matches`: each question's best chunk and each chunk's best question.

    Attributes
    ----------
    question_similarity, nearest_chunk : ndarray of shape (m,)
        As :func:`question_support` returns them.
    chunk_similarity, nearest_question : ndarray of shape (n,)
        Each chunk's best similarity to any question, and that question.
    question_support : ndarray of shape (m,), float32, or None
        ``max_i (sim(chunk_i, q_j) - chunk_penalty[i])`` when a penalty was given.
    top_chunks, top_similarities : ndarray of shape (m, top_k), or None
        Each question's ``top_k`` most similar chunks, most similar first
        (ties: lower chunk index first), and their similarities (float32),
        when ``top_k`` was given.
    """

    question_similarity: np.ndarray
    nearest_chunk: np.ndarray
    chunk_similarity: np.ndarray
    nearest_question: np.ndarray
    question_support: np.ndarray | None = None
    top_chunks: np.ndarray | None = None
    top_similarities: np.ndarray | None = None

    def index(self) -> NearestQuestions:
        """The chunks' best questions as a depth-1 :class:`NearestQuestions`, for :func:`scan_similarities`.

        With depth 1 a chunk whose best question is screened out, or does not
        cover its cluster, is computed again against the allowed questions
        alone; with few questions screened out that is a small share of the
        full product, which this index then saves.
        """
        return NearestQuestions(
            self.nearest_question[:, None],
            self.chunk_similarity.astype(np.float32)[:, None],
            self.question_similarity,
            self.nearest_chunk,
        )


def best_matches(
    chunk_vectors, question_vectors, *, chunk_penalty=None, top_k: int = 0, block_size: int | None = None
) -> BestMatches:
    """Each question's best chunk and each chunk's best question, from one blockwise pass (n x m x d flops).

    ``chunk_penalty`` (shape (n,)), when given, also yields each question's
    best penalised similarity ``max_i (sim(chunk_i, q_j) - chunk_penalty[i])``
    from the same blocks (the screener's support, see
    :class:`coverage_core.offtopic.screener.QuestionScreener`); ``top_k`` > 0 each
    question's ``top_k`` most similar chunks (what the retrieval check
    ranks, :func:`coverage_core.checks.retrieval.top_k_chunks`).

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d), m >= 1
    chunk_penalty : array-like of shape (n,), optional
    block_size : int, optional

    Returns
    -------
    BestMatches
    """
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1]), copy=False)
    if chunk_penalty is not None:
        chunk_penalty = np.asarray(chunk_penalty, dtype=np.float32)
        if chunk_penalty.shape != (chunks.shape[0],):
            raise InputError(
                f"chunk_penalty must hold one value per chunk ({chunks.shape[0]}); got shape {chunk_penalty.shape}."
            )
    found = scan_blocks(chunks, questions, block_size, want_questions=True, row_penalty=chunk_penalty, col_top=top_k)
    return BestMatches(
        found["col_sim"], found["col_idx"], found["row_sim"], found["row_idx"], found.get("col_support"),
        found.get("col_top_idx"), found.get("col_top_sim"),
    )


def question_top_chunks(
    chunk_vectors, question_vectors, k: int, *, block_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each question's ``k`` most similar chunks, most similar first (ties: lower chunk index first).

    The same ranking as :attr:`BestMatches.top_chunks` (the screener keeps
    ``TOP_CHUNKS_KEPT`` of them), for a ``k`` beyond what it kept or
    questions it did not see; one blockwise pass (:class:`RunningTopK`).

    Returns
    -------
    indices : ndarray of shape (m, min(k, n)), int
    similarities : ndarray of shape (m, min(k, n)), float32
    """
    check_scalar(k, "k", int, min_val=1, hint="it is the number of passages retrieved per question")
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunks.shape[1])
    width = min(int(k), chunks.shape[0])
    if questions.shape[0] == 0:
        return np.zeros((0, width), dtype=np.intp), np.zeros((0, width), dtype=np.float32)
    found = scan_blocks(chunks, unit_rows(questions, copy=False), block_size, col_top=width)
    return found["col_top_idx"], found["col_top_sim"]


def _best_of(chunks: np.ndarray, rows: np.ndarray, questions: np.ndarray, columns: np.ndarray):
    """Best similarity (and question index) of chunks ``rows`` (ascending) among questions ``columns``."""
    sims = np.empty(rows.size)
    idx = np.empty(rows.size, dtype=np.intp)
    step = min(block_rows(columns.size, None), _SLAB_ROWS)
    candidates_t = np.ascontiguousarray(questions[columns].T)
    # One slab of consecutive chunks at a time: when the rows fill much of
    # a slab, multiplying the whole slab beats copying the rows out of it.
    slab_starts = np.arange(0, chunks.shape[0] + step, step)
    cuts = np.searchsorted(rows, slab_starts)
    for first, lo, hi in zip(slab_starts, cuts[:-1], cuts[1:]):
        if lo == hi:
            continue
        if hi - lo > _SLAB_DENSE_SHARE * step:
            block = (chunks[first : first + step] @ candidates_t)[rows[lo:hi] - first]
        else:
            block = chunks[rows[lo:hi]] @ candidates_t
        best = block.argmax(axis=1)
        sims[lo:hi] = block[np.arange(best.size), best]
        idx[lo:hi] = columns[best]
    return sims, idx


def _scan_from_index(
    index: NearestQuestions,
    chunks: np.ndarray,
    questions: np.ndarray,
    labels: np.ndarray | None,
    covers: Sequence[np.ndarray],
    mask: np.ndarray,
) -> dict:
    """What :func:`scan_blocks` returns, read from the index.

    A chunk's best allowed question is the first allowed one in its list;
    only chunks with none in the list (rare: it takes ``depth`` excluded
    questions in a row) are computed directly, against the allowed
    questions alone.
    """
    n = chunks.shape[0]
    rows = np.arange(n)

    def first_allowed(allowed: np.ndarray):
        hit = allowed.any(axis=1)
        first = allowed.argmax(axis=1)
        sim = np.where(hit, index.similarities[rows, first], np.nan)
        idx = np.where(hit, index.indices[rows, first], -1)
        return sim, idx, hit

    row_sim, row_idx, hit = first_allowed(mask[index.indices])
    columns = np.flatnonzero(mask)
    if not index.complete and columns.size and not hit.all():
        missed = np.flatnonzero(~hit)
        row_sim[missed], row_idx[missed] = _best_of(chunks, missed, questions, columns)

    cover_sim = []
    for cover in covers:
        # Only chunks of a cluster some question covers can find one in their list.
        coverable = cover.any(axis=1)[labels]
        if coverable.all():
            allowed = cover[labels[:, None], index.indices]
        else:
            allowed = np.zeros(index.indices.shape, dtype=bool)
            coverable = np.flatnonzero(coverable)
            allowed[coverable] = cover[labels[coverable, None], index.indices[coverable]]
        sim, _, hit = first_allowed(allowed)
        if not index.complete and not hit.all():
            missed = np.flatnonzero(~hit)
            for k in np.unique(labels[missed]):
                covering = np.flatnonzero(cover[k])
                if covering.size:
                    in_cluster = missed[labels[missed] == k]
                    sim[in_cluster] = _best_of(chunks, in_cluster, questions, covering)[0]
        cover_sim.append(sim)
    return {
        "row_sim": np.clip(row_sim, -1.0, 1.0),
        "row_idx": row_idx,
        "cover_sim": cover_sim,
        "col_sim": index.question_similarity,
        "col_idx": index.nearest_chunk,
    }


def scan_similarities(
    chunk_vectors,
    question_vectors,
    labels=None,
    centroids=None,
    *,
    inliers=None,
    threshold: float | None = None,
    n_nearest: int | None = None,
    block_size: int | None = None,
    index: NearestQuestions | None = None,
) -> SimilarityScan:
    """Every similarity-based metric from ONE blockwise pass (the fast path).

    Each field equals its metric's own function on the inlier questions (field by field:
    docs/developing.md, *One similarity pass*). Why: the n x m x d product dominates the cost.

    Parameters
    ----------
    chunk_vectors, question_vectors : array-like of shape (n, d) and (m, d); m may be 0
    labels, centroids : array-like of shape (n,) and (K, d); needed for the multi metrics
    inliers : array-like of shape (m,), bool, optional; questions that count for coverage (default: all)
    threshold, n_nearest : float in (0, 2] and int >= 1, optional; each adds its multi metric
    block_size : int, optional
    index : NearestQuestions, optional; :func:`nearest_questions` of these same vectors (skips the n x m product)

    Returns
    -------
    SimilarityScan
    """
    threshold = None if threshold is None else check_cover_threshold(threshold)
    n_nearest = None if n_nearest is None else check_n_nearest(n_nearest)
    multi = threshold is not None or n_nearest is not None
    chunks, questions, labels, centres = _scan_inputs(chunk_vectors, question_vectors, labels, centroids, multi)
    mask = _inlier_mask(inliers, questions.shape[0])
    covers = _covers(questions, centres, mask, threshold, n_nearest)
    found = _similarity_pass(chunks, questions, labels if covers else None, covers, mask, block_size, index)
    return _scan_result(found, labels, centres, threshold is not None, n_nearest is not None)


def _scan_inputs(chunk_vectors, question_vectors, labels, centroids, multi: bool):
    """Unit chunk and question rows, and the labels and unit centroids when the multi metrics need them."""
    if multi:
        if labels is None or centroids is None:
            raise InputError("labels and centroids are needed for multi-threshold or multi-N coverage.")
        return multi_coverage_inputs(chunk_vectors, question_vectors, labels, centroids)
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    dim = chunks.shape[1]
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=dim), copy=False)
    return chunks, questions, labels, None


def _inlier_mask(inliers, m: int) -> np.ndarray:
    if inliers is None:
        return np.ones(m, dtype=bool)
    mask = np.asarray(inliers)
    if mask.shape != (m,) or mask.dtype != bool:
        raise InputError(f"inliers must be a boolean mask with one entry per question ({m}).")
    return mask


def _covers(questions, centres, mask, threshold, n_nearest) -> list[np.ndarray]:
    """The (K, m) cover of each multi metric asked for, threshold first; outlier questions cover nothing."""
    covers = []
    if threshold is not None:
        covers.append(threshold_covers(questions, centres, threshold) & mask)
    if n_nearest is not None:
        covers.append(n_nearest_covers(questions, centres, n_nearest) & mask)
    return covers


def _similarity_pass(chunks, questions, labels, covers, mask, block_size, index) -> dict:
    """What :func:`scan_blocks` returns for :func:`scan_similarities`: read from ``index`` when given, else computed."""
    n, m = chunks.shape[0], questions.shape[0]
    if m == 0:
        return {
            "row_sim": np.full(n, np.nan),
            "row_idx": np.full(n, -1, dtype=np.intp),
            "col_sim": np.zeros(0),
            "col_idx": np.zeros(0, dtype=np.intp),
            "cover_sim": [np.full(n, np.nan) for _ in covers],
        }
    if index is None:
        row_columns = None if mask.all() else mask
        return scan_blocks(
            chunks, questions, block_size, labels=labels, covers=covers, row_columns=row_columns, want_questions=True
        )
    if index.shape != (n, m):
        raise InputError(
            f"The similarity index was built for {index.shape[0]} chunks x {index.shape[1]} questions, "
            f"not {n} x {m}; rebuild it with nearest_questions() for these vectors."
        )
    return _scan_from_index(index, chunks, questions, labels, covers, mask)


def _scan_result(found: dict, labels, centres, with_threshold: bool, with_n_nearest: bool) -> SimilarityScan:
    fields = {
        # No inlier question: distance 1, so coverage is 0 everywhere.
        "min_distances": np.where(np.isnan(found["row_sim"]), 1.0, np.clip(1.0 - found["row_sim"], 0.0, 2.0)),
        "nearest_question": found["row_idx"],
        "question_similarity": found["col_sim"],
        "nearest_chunk": found["col_idx"],
    }
    cover_sim = list(found["cover_sim"])
    if with_threshold:
        fields["multi_threshold_score"], fields["multi_threshold_per_cluster"] = covering_scores(
            cover_sim.pop(0), labels, centres.shape[0]
        )
    if with_n_nearest:
        fields["multi_n_score"], fields["multi_n_per_cluster"] = covering_scores(
            cover_sim.pop(0), labels, centres.shape[0]
        )
    return SimilarityScan(**fields)
