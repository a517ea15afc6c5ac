"""Coverage metrics: how close the knowledge base's chunks are to the test questions.

All functions are pure and take plain arrays, in the style of
``sklearn.metrics``. Vectors are compared by cosine distance::

    dist(u, v) = 1 - u.v / (|u| |v|)

Every function normalises its inputs itself, so rows need not be unit length.
A zero row (an embedding that failed) has no direction; it is treated as
unrelated to everything: similarity 0, distance 1.

Notation used in the docstrings: ``n`` chunks, ``m`` questions, ``d``
dimensions, clusters ``C_1..C_K`` given by ``labels`` in ``0..K-1``, and
``mindist(d_i)`` the cosine distance from chunk ``i`` to its nearest inlier
question (see :func:`nearest_question_distances`).

Empty cases, decided once for the whole module:

* **No questions** (``m == 0``): every ``mindist`` is 1.0 (as if every question
  were unrelated to every chunk), so every coverage score is exactly 0.
* **Empty cluster** (a label in ``0..K-1`` with no chunk): its per-cluster
  coverage is NaN, it has weight 0 in weighted scores, and it is left out of
  the balanced mean.

Coverage ``1 - mindist`` lies in [-1, 1]; it is negative only when a chunk
points away from every question, which text embeddings practically never do,
so in practice scores lie in [0, 1].

Large inputs are processed in row blocks, so 20,000 chunks x 2,000 questions
never materialise the full similarity matrix. Each function makes its own
pass over the chunk x question similarities; :func:`scan_similarities` makes
one pass for all of them, which is what a pipeline should use. At a million
chunks even that pass is the largest cost (n x m x d = 2 x 10^12
multiply-adds at 5,000 questions), so the pipeline makes it once:
:func:`best_matches` (the screener's pass) keeps each chunk's best question
and each question's best chunks, and :func:`scan_similarities` starts from
them (``index``), recomputing only the chunks whose best question is
screened out or does not cover the chunk's cluster. Vectors that are unit
length already are used in place (:func:`as_unit_rows`), not copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core.errors import InputError
from coverage_core.validation import check_vectors, unit_rows

__all__ = [
    "as_unit_rows",
    "balanced_coverage",
    "basic_coverage",
    "cluster_coverages",
    "document_coverage",
    "best_matches",
    "BestMatches",
    "duplicate_groups",
    "DuplicateGroups",
    "multi_n_coverage",
    "multi_threshold_coverage",
    "nearest_question_distances",
    "nearest_questions",
    "NearestQuestions",
    "question_support",
    "RunningTopK",
    "questions_covering_clusters",
    "scan_similarities",
    "SimilarityScan",
    "weighted_coverage",
]

# Similarities computed per block: 8M float32 values = 32 MB, small next to
# the 2 GB budget yet large enough for BLAS to run at full speed.
_BLOCK_ELEMENTS = 1 << 23

# Rows of a block whose similarities to itself fill _BLOCK_ELEMENTS.
_SQUARE_BLOCK_ROWS = int(np.sqrt(_BLOCK_ELEMENTS))

# Rows per sub-block when tracking each question's best chunk (see _scan).
_SUB_BLOCK_ROWS = 64

# Trackers that can skip sub-blocks (_track_penalised_best,
# RunningTopK.add with group_maxima) read the block whole instead when more than this share of (sub-block, question)
# pairs must be read: gathering a value costs several times streaming one.
_GATHER_SHARE = 0.1

# Consecutive chunks per step when only some chunks' similarities are
# needed (_best_of): 8,192 x 384 float32 = 12 MB, a piece that stays in cache.
_SLAB_ROWS = 8192

# _best_of multiplies a whole slab, rather than copy the wanted rows out of
# it, when they are more than this share of the slab (measured at 200,000
# chunks: copying most rows costs more than the product with a few questions).
_SLAB_DENSE_SHARE = 0.25

# float32 dot products of a unit vector with itself land a few ulps below 1.
_SIMILARITY_TOLERANCE = 1e-6


# --------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------




def _min_distances(min_distances) -> np.ndarray:
    array = np.asarray(min_distances, dtype=np.float64)
    if array.ndim != 1:
        raise InputError(f"min_distances must be a 1-d array (one value per chunk); got shape {array.shape}.")
    if array.size == 0:
        raise InputError("min_distances is empty; at least one chunk is needed.")
    if not np.isfinite(array).all():
        raise InputError("min_distances contains NaN or infinite values.")
    if array.min() < -1e-6 or array.max() > 2 + 1e-6:
        raise InputError("min_distances must be cosine distances between 0 and 2.")
    return array


def _labels(labels, n: int, n_clusters: int | None = None) -> np.ndarray:
    array = np.asarray(labels)
    if array.ndim != 1 or array.shape[0] != n:
        raise InputError(f"labels must hold one cluster label per chunk ({n}); got shape {array.shape}.")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        if not np.issubdtype(array.dtype, np.floating) or not np.all(array == np.round(array)):
            raise InputError("labels must be integer cluster numbers.")
    array = array.astype(np.intp)
    if array.size and array.min() < 0:
        raise InputError("labels must be cluster numbers 0..K-1; found a negative label.")
    if n_clusters is not None:
        if n_clusters < 1:
            raise InputError(f"n_clusters must be at least 1; got {n_clusters}.")
        if array.size and array.max() >= n_clusters:
            raise InputError(
                f"labels go up to {array.max()} but there are only {n_clusters} clusters (0..{n_clusters - 1})."
            )
    return array


def _block_rows(n_columns: int, block_size: int | None) -> int:
    if block_size is not None:
        if int(block_size) < 1:
            raise InputError(f"block_size must be at least 1; got {block_size}.")
        return int(block_size)
    return max(1, _BLOCK_ELEMENTS // max(n_columns, 1))


def _scan(
    chunks: np.ndarray,
    questions: np.ndarray,
    block_size: int | None,
    *,
    labels: np.ndarray | None = None,
    covers: Sequence[np.ndarray] = (),
    row_columns: np.ndarray | None = None,
    want_questions: bool = False,
    depth: int = 0,
    row_penalty: np.ndarray | None = None,
    col_top: int = 0,
) -> dict:
    """One blockwise pass over the chunk x question similarities (unit rows, m >= 1).

    Everything the metrics need comes out of the same similarity blocks, so the
    expensive product (n x m x d flops) is paid once:

    * ``row_sim``/``row_idx``: each chunk's best similarity to any question
      (only the questions in the ``row_columns`` mask, when given; NaN and -1
      if the mask is empty);
    * ``col_sim``/``col_idx`` (``want_questions``): each question's best chunk;
    * ``cover_sim[c]``: each chunk's best similarity to the questions that
      cover its cluster under ``covers[c]`` (a (K, m) boolean), NaN when no
      question covers the cluster. Needs ``labels``;
    * ``top_idx``/``top_sim`` (``depth`` > 0): each chunk's ``depth`` most
      similar questions, most similar first, ties by question index;
    * ``col_support`` (``row_penalty``, one value per chunk): each
      question's ``max_i (sim(i, j) - row_penalty[i])``;
    * ``col_top_idx``/``col_top_sim`` (``col_top`` > 0): each question's
      ``col_top`` most similar chunks, most similar first, ties by chunk
      index (:class:`RunningTopK`; only without ``labels``).
    """
    n, m = chunks.shape[0], questions.shape[0]
    # Chunks sorted by cluster: each cluster is a run of rows, so its
    # covering questions are one column mask per run, not one per row.
    order = np.argsort(labels, kind="stable") if labels is not None else None
    rows = chunks[order] if order is not None else chunks
    sorted_labels = labels[order] if order is not None else None
    if row_penalty is not None:
        row_penalty = np.asarray(row_penalty, dtype=np.float32)
        row_penalty = row_penalty[order] if order is not None else row_penalty
        col_support = np.full(m, -np.inf, dtype=np.float32)
    # Questions sorted so the row questions come first: their maxima are
    # then taken over a slice of each block, without masking.
    row_set = np.ones(m, dtype=bool) if row_columns is None else np.asarray(row_columns, dtype=bool)
    perm = np.argsort(~row_set, kind="stable")
    n_row_questions = int(row_set.sum())
    questions = questions[perm]
    covering, any_cover, same_as_rows = _cover_columns(covers, perm, row_set)

    row_sim = np.full(n, np.nan)
    row_idx = np.full(n, -1, dtype=np.intp)
    cover_sim = [np.full(n, np.nan) for _ in covers]
    col_sim = np.full(m, -np.inf)
    col_start = np.zeros(m, dtype=np.intp)  # first row of the sub-block holding the best chunk
    depth = min(depth, m)
    top_idx = np.empty((n, depth), dtype=np.intp)
    top_sim = np.empty((n, depth), dtype=np.float32)
    step = _block_rows(m, block_size)
    sub = min(step, _SUB_BLOCK_ROWS)
    questions_t = np.ascontiguousarray(questions.T)
    sims_buffer = np.empty((min(step, n), m), dtype=np.float32)
    top_chunks = RunningTopK(m, min(col_top, n)) if col_top else None
    for start in range(0, n, step):
        stop = min(start + step, n)
        sims = np.matmul(rows[start:stop], questions_t, out=sims_buffer[: stop - start])
        best = None
        if n_row_questions:
            best, row_idx[start:stop] = _block_row_best(sims[:, :n_row_questions], perm)
            row_sim[start:stop] = best
        if depth:
            top_idx[start:stop], top_sim[start:stop] = _block_top_questions(sims, depth, perm)
        # One reduction of the block to sub-block maxima serves all three
        # per-question trackers below: each then reads only the few
        # (sub-block, question) pairs that can still change its result.
        per_question = want_questions or top_chunks is not None or row_penalty is not None
        part_max = _sub_block_maxima(sims, sub) if per_question else None
        if want_questions:
            _track_question_best(part_max, start, sub, col_sim, col_start)
        if covers:
            _block_cover(sims, start, sorted_labels[start:stop], best, covering, any_cover, same_as_rows, cover_sim)
        if top_chunks is not None:
            top_chunks.add(sims, start, entities_on_rows=False, group_maxima=part_max, group_rows=sub)
        if row_penalty is not None:
            _track_penalised_best(sims, part_max, sub, row_penalty[start:stop], col_support)

    result = {"row_sim": np.clip(row_sim, -1.0, 1.0), "row_idx": row_idx, "cover_sim": cover_sim}
    if row_penalty is not None:
        col_support_caller = np.empty(m, dtype=np.float32)
        col_support_caller[perm] = col_support
        result["col_support"] = col_support_caller
    if top_chunks is not None:
        if order is not None:
            raise ValueError("col_top needs the chunks in the caller's order (no labels).")
        result["col_top_idx"] = np.empty_like(top_chunks.indices)
        result["col_top_idx"][perm] = top_chunks.indices
        result["col_top_sim"] = np.empty_like(top_chunks.values)
        result["col_top_sim"][perm] = top_chunks.values
    if depth:
        result["top_idx"], result["top_sim"] = top_idx, top_sim
    if want_questions:
        result["col_sim"], result["col_idx"] = _question_best_chunks(questions, rows, col_sim, col_start, sub, order, perm)
    if order is not None:
        _to_chunk_order(result, order)
    return result


def _cover_columns(covers: Sequence[np.ndarray], perm: np.ndarray, row_set: np.ndarray):
    """For each of ``covers`` (columns in ``perm`` order): each cluster's
    covering columns, whether any question covers it, and whether exactly the
    row questions do."""
    covers = [cover[:, perm] for cover in covers]
    covering = [[np.flatnonzero(row) for row in cover] for cover in covers]
    any_cover = [cover.any(axis=1) for cover in covers]
    # A cluster covered by exactly the row questions reuses the row maxima.
    same_as_rows = [(cover == row_set[perm]).all(axis=1) for cover in covers]
    return covering, any_cover, same_as_rows


def _block_row_best(row_part: np.ndarray, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block row's best similarity to the row questions, and that question's caller index."""
    index = row_part.argmax(axis=1)
    return row_part[np.arange(len(row_part)), index], perm[index]


def _block_top_questions(sims: np.ndarray, depth: int, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block row's ``depth`` most similar questions (caller's indices) and their similarities."""
    m = sims.shape[1]
    if depth < m:
        part = np.argpartition(sims, m - depth, axis=1)[:, m - depth :]
        # Ascending question index first, so the stable sort below
        # breaks ties the way argmax does.
        part.sort(axis=1)
    else:
        part = np.broadcast_to(np.arange(m), (len(sims), m))
    values = np.take_along_axis(sims, part, axis=1)
    ranked = np.argsort(-values, axis=1, kind="stable")
    return perm[np.take_along_axis(part, ranked, axis=1)], np.take_along_axis(values, ranked, axis=1)


def _sub_block_maxima(sims: np.ndarray, sub: int) -> np.ndarray:
    """Each question's best value in each run of ``sub`` rows (the last run
    may be shorter): shape (ceil(b / sub), m)."""
    b, m = sims.shape
    full = b // sub * sub
    parts = [sims[:full].reshape(-1, sub, m).max(axis=1)] if full else []
    if full < b:
        parts.append(sims[full:].max(axis=0, keepdims=True))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _track_question_best(
    part_max: np.ndarray, start: int, sub: int, col_sim: np.ndarray, col_start: np.ndarray
) -> None:
    """Raise ``col_sim`` to the block's best value per question, recording in
    ``col_start`` the first row of the sub-block holding it."""
    # argmax down the columns is slow; instead keep, per question, the
    # best value and the small sub-block holding it, and find the row
    # within that sub-block after the loop.
    m = part_max.shape[1]
    best_part = part_max.argmax(axis=0)
    block_max = part_max[best_part, np.arange(m)]
    better = block_max > col_sim
    col_sim[better] = block_max[better]
    col_start[better] = start + best_part[better] * sub


def _group_values(block: np.ndarray, groups: np.ndarray, columns: np.ndarray, group_rows: int):
    """The values of ``block`` in row group ``groups[p]`` (rows ``groups[p] * group_rows ..``), column ``columns[p]``.

    ``groups`` must be ascending (as ``np.nonzero`` of a (groups, columns)
    array gives them). Returns ``(rows, values, inside)``, each of shape
    (len(groups), group_rows); ``inside`` is False past the last row of the
    block (the last group may be short), where ``values`` is -inf.
    """
    b = block.shape[0]
    rows = groups[:, None] * group_rows + np.arange(group_rows)
    inside = rows < b
    values = np.full(rows.shape, -np.inf, dtype=block.dtype)
    # One group's rows at a time: reading a few whole rows is far cheaper
    # than gathering single values a row apart.
    bounds = np.flatnonzero(np.diff(groups)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(groups)]) if len(groups) else ():
        first = groups[lo] * group_rows
        last = min(first + group_rows, b)
        values[lo:hi, : last - first] = block[first:last].take(columns[lo:hi], axis=1).T
    return rows, values, inside


def _track_penalised_best(sims, part_max, sub: int, penalty, col_support) -> None:
    """Raise ``col_support`` to the block's ``max_i (sims[i, j] - penalty[i])`` per question.

    Within a sub-block, ``part_max - max(penalty)`` is reached and
    ``part_max - min(penalty)`` cannot be beaten, so only the pairs whose
    bound beats the best reached so far are read (float32 subtraction
    rounds monotonically, so the bounds hold exactly).
    """
    group_starts = np.arange(0, len(sims), sub)
    lowest = np.minimum.reduceat(penalty, group_starts)
    highest = np.maximum.reduceat(penalty, group_starts)
    np.maximum(col_support, (part_max - highest[:, None]).max(axis=0), out=col_support)
    open_pairs = part_max - lowest[:, None] > col_support
    n_open = np.count_nonzero(open_pairs)
    if not n_open:
        return
    if n_open > _GATHER_SHARE * open_pairs.size:
        np.maximum(col_support, (sims - penalty[:, None]).max(axis=0), out=col_support)
        return
    groups, columns = np.nonzero(open_pairs)
    rows, values, inside = _group_values(sims, groups, columns, sub)
    values -= penalty[np.minimum(rows, len(sims) - 1)]
    np.maximum.at(col_support, columns, values.max(axis=1))


def _block_cover(sims, start, run_labels, best, covering, any_cover, same_as_rows, cover_sim) -> None:
    """Fill ``cover_sim`` for the block's rows, one run of a cluster at a time."""
    cuts = np.flatnonzero(np.diff(run_labels)) + 1
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(sims)]):
        k = run_labels[lo]
        for c in range(len(cover_sim)):
            if not any_cover[c][k]:
                continue  # stays NaN: no question covers this cluster
            if same_as_rows[c][k]:
                cover_sim[c][start + lo : start + hi] = best[lo:hi]
            else:
                # Gathering the covering columns beats masking the
                # others at every coverage fraction measured.
                covered = np.take(sims[lo:hi], covering[c][k], axis=1)
                cover_sim[c][start + lo : start + hi] = covered.max(axis=1)


def _question_best_chunks(questions, rows, col_sim, col_start, sub: int, order, perm) -> tuple[np.ndarray, np.ndarray]:
    """Each question's best similarity and chunk, in the caller's question and chunk order."""
    m = len(col_sim)
    col_idx = np.empty(m, dtype=np.intp)
    starts, group = np.unique(col_start, return_inverse=True)
    for g, first in enumerate(starts):
        chosen = np.flatnonzero(group == g)
        local = (questions[chosen] @ rows[first : first + sub].T).argmax(axis=1)
        col_idx[chosen] = first + local
    if order is not None:
        col_idx = order[col_idx]
    # Back from the row-questions-first order to the caller's.
    similarity = np.empty(m)
    similarity[perm] = np.clip(col_sim, -1.0, 1.0)
    index = np.empty(m, dtype=np.intp)
    index[perm] = col_idx
    return similarity, index


def _to_chunk_order(result: dict, order: np.ndarray) -> None:
    """Put the per-chunk arrays of ``result`` back from cluster order to the caller's chunk order."""
    for key in ("row_sim", "row_idx", "top_idx", "top_sim"):
        if key not in result:
            continue
        unsorted = np.empty_like(result[key])
        unsorted[order] = result[key]
        result[key] = unsorted
    cover_sim = result["cover_sim"]
    for c, values in enumerate(cover_sim):
        unsorted = np.empty_like(values)
        unsorted[order] = values
        cover_sim[c] = unsorted


class RunningTopK:
    """Each entity's ``k`` best candidates so far, from blocks of similarities.

    Ranked by value, higher first, then by candidate index, lower first:
    after every candidate has been added in index order, ``indices`` equals
    ``argsort(-sims, kind="stable")[:, :k]`` of the full matrix, which is
    never held. Once ``k`` candidates are in, a block only contributes the
    values above an entity's current ``k``-th best (equal values lose: a
    later candidate ranks after an earlier one), and after the first blocks
    those are few.

    Attributes
    ----------
    indices : ndarray of shape (n_entities, k), int
    values : ndarray of shape (n_entities, k), float32
    """

    def __init__(self, n_entities: int, k: int):
        self.k = k
        self.indices = np.zeros((n_entities, k), dtype=np.intp)
        self.values = np.full((n_entities, k), -np.inf, dtype=np.float32)
        self.filled = 0  # candidates in so far, up to k

    def add(
        self,
        block: np.ndarray,
        offset: int,
        *,
        entities_on_rows: bool = True,
        group_maxima: np.ndarray | None = None,
        group_rows: int = 0,
    ) -> None:
        """Add candidates ``offset .. offset + b - 1``: ``block`` is (entities, b),
        or (b, entities) with ``entities_on_rows=False``.

        With ``entities_on_rows=False``, ``group_maxima`` (each entity's best
        value in each run of ``group_rows`` candidates, as
        :func:`_sub_block_maxima` computes it) lets the block be read only
        where a run can beat an entity's ``k``-th best, instead of whole.
        """
        k = self.k
        by_entity = block if entities_on_rows else block.T
        size = by_entity.shape[1]
        if self.filled < k:
            top, values = _block_top_k(np.ascontiguousarray(by_entity), min(k, size))
            self.indices, self.values = _merge_top_k(
                self.indices[:, : self.filled], self.values[:, : self.filled], top + offset, values, k
            )
            self.filled = min(k, self.filled + size)
            return
        kth = self.values[:, -1]
        if entities_on_rows:
            entities, candidates = np.nonzero(block > kth[:, None])
        else:
            open_groups = None if group_maxima is None else group_maxima > kth[None, :]
            if open_groups is None or np.count_nonzero(open_groups) > _GATHER_SHARE * open_groups.size:
                candidates, entities = np.nonzero(block > kth[None, :])
            else:
                groups, columns = np.nonzero(open_groups)
                rows, values, inside = _group_values(block, groups, columns, group_rows)
                above = (values > kth[columns, None]) & inside
                candidates = rows[above]
                entities = np.broadcast_to(columns[:, None], rows.shape)[above]
            order = np.lexsort((candidates, entities))
            entities, candidates = entities[order], candidates[order]
        if not len(entities):
            return
        changed, counts = np.unique(entities, return_counts=True)
        many = changed[counts >= k]
        if len(many):  # k or more new for some: the block's own best k of those
            top, values = _block_top_k(np.ascontiguousarray(by_entity[many]), k)
            self.indices[many], self.values[many] = _merge_top_k(
                self.indices[many], self.values[many], top + offset, values, k
            )
            keep = ~np.isin(entities, many)
            entities, candidates = entities[keep], candidates[keep]
            changed = changed[counts < k]
        if len(entities):
            values = by_entity[entities, candidates]
            self.indices[changed], self.values[changed] = _merge_candidates(
                self.indices[changed], self.values[changed], changed, entities, candidates + offset, values, k
            )


def _block_top_k(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``block``, the k largest values and their columns, largest first.

    Equal values are ordered by column, lowest first, also across the cut-off:
    the result equals ``argsort(-block, kind="stable")[:, :k]``.
    """
    rows, n = block.shape
    if k == n:
        part = np.broadcast_to(np.arange(n), (rows, n)).copy()
        values = block.copy()
    else:
        part = np.argpartition(block, n - k, axis=1)[:, n - k :]
        values = np.take_along_axis(block, part, axis=1)
        # argpartition picks arbitrarily among values equal to the k-th
        # largest; where some were left out, pick the lowest columns instead.
        kth = values.min(axis=1)
        n_tied = np.count_nonzero(block == kth[:, None], axis=1)
        n_tied_kept = np.count_nonzero(values == kth[:, None], axis=1)
        for r in np.flatnonzero(n_tied > n_tied_kept):
            row = block[r]
            above = np.flatnonzero(row > kth[r])
            tied = np.flatnonzero(row == kth[r])[: k - above.size]
            part[r] = np.concatenate([above, tied])
            values[r] = row[part[r]]
    order = np.lexsort((part, -values), axis=1)
    return np.take_along_axis(part, order, axis=1), np.take_along_axis(values, order, axis=1)


def _merge_top_k(indices, values, new_indices, new_values, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` best of two ranked lists (higher value first, then lower index)."""
    all_indices = np.hstack([indices, new_indices])
    all_values = np.hstack([values, new_values.astype(values.dtype)])
    order = np.lexsort((all_indices, -all_values), axis=1)[:, :k]
    return np.take_along_axis(all_indices, order, axis=1), np.take_along_axis(all_values, order, axis=1)


def _merge_candidates(indices, values, changed, rows, new_indices, new_values, k: int):
    """Rows ``changed`` of the running top-k merged with fewer than k new ``(row, index, value)`` each."""
    slot = np.searchsorted(changed, rows)
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows)  # rows come sorted from np.nonzero
    extra_indices = np.zeros((len(changed), k), dtype=indices.dtype)
    extra_values = np.full((len(changed), k), -np.inf, dtype=values.dtype)
    extra_indices[slot, rank] = new_indices
    extra_values[slot, rank] = new_values
    # Unused slots hold -inf at index 0: they sort last, after every real entry.
    extra_indices[extra_values == -np.inf] = np.iinfo(indices.dtype).max
    return _merge_top_k(indices, values, extra_indices, extra_values, k)


# --------------------------------------------------------------------------
# distances
# --------------------------------------------------------------------------


def nearest_question_distances(
    chunk_vectors, question_vectors, block_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine distance from every chunk to its nearest question.

    ``mindist(d_i) = min_j dist(chunk_i, question_j)``, computed in blocks of
    chunk rows so only ``block_size x m`` similarities exist at a time.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d)
        The inlier questions only (off-topic questions should not count).
        ``m`` may be 0.
    block_size : int, optional
        Chunk rows per block; by default about 32 MB of similarities.

    Returns
    -------
    min_distances : ndarray of shape (n,), float64, in [0, 2]
        All 1.0 when there are no questions, so every coverage score is 0.
    nearest : ndarray of shape (n,), int
        Index of the nearest question; -1 when there are no questions.
    """
    chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunks.shape[1])
    n = chunks.shape[0]
    if questions.shape[0] == 0:
        return np.ones(n), np.full(n, -1, dtype=np.intp)
    found = _scan(chunks, unit_rows(questions), block_size)
    return np.clip(1.0 - found["row_sim"], 0.0, 2.0), found["row_idx"]


# --------------------------------------------------------------------------
# scores from min_distances
# --------------------------------------------------------------------------


def basic_coverage(min_distances) -> float:
    """Mean closeness of the chunks to their nearest question.

    ``basic = 1 - (1/n) * sum_i mindist(d_i)``

    Parameters
    ----------
    min_distances : array-like of shape (n,)
        From :func:`nearest_question_distances`.

    Returns
    -------
    float, 1.0 when every chunk coincides with a question, 0.0 with no questions.
    """
    distances = _min_distances(min_distances)
    return float(1.0 - distances.mean())


def weighted_coverage(min_distances, labels) -> float:
    """Cluster-weighted coverage, as defined by the method's paper.

    ``weighted = sum_k (|C_k|/n) * (1 - (1/|C_k|) * sum_{i in C_k} mindist(d_i))``

    Note: when the clusters partition the chunks (every chunk has exactly one
    label, as here) this is *identical* to :func:`basic_coverage`::

        sum_k (|C_k|/n)(1 - clusterdist_k)
          = sum_k |C_k|/n - (1/n) sum_k sum_{i in C_k} mindist(d_i)
          = 1 - (1/n) sum_i mindist(d_i)  = basic

    The paper presents it as a different view; we report it as defined, and
    offer :func:`balanced_coverage` for the view where each topic counts the
    same.

    Parameters
    ----------
    min_distances : array-like of shape (n,)
    labels : array-like of shape (n,), int in 0..K-1

    Returns
    -------
    float
    """
    distances = _min_distances(min_distances)
    labels = _labels(labels, distances.shape[0])
    counts = np.bincount(labels)
    sums = np.bincount(labels, weights=distances)
    present = counts > 0
    cluster_coverage = 1.0 - sums[present] / counts[present]
    return float(np.sum(counts[present] / distances.shape[0] * cluster_coverage))


def cluster_coverages(min_distances, labels, n_clusters: int) -> np.ndarray:
    """Coverage of each cluster: ``1 - mean of mindist over the cluster's chunks``.

    Parameters
    ----------
    min_distances : array-like of shape (n,)
    labels : array-like of shape (n,), int in 0..n_clusters-1
    n_clusters : int

    Returns
    -------
    ndarray of shape (n_clusters,), NaN for a cluster with no chunks.
    """
    distances = _min_distances(min_distances)
    labels = _labels(labels, distances.shape[0], n_clusters)
    counts = np.bincount(labels, minlength=n_clusters)
    sums = np.bincount(labels, weights=distances, minlength=n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, 1.0 - sums / np.maximum(counts, 1), np.nan)


UNTESTED_SHARE = 0.3
"""A document is *untested* (``is_untested``) when less than this share of its
passages is reached by some question (similarity >= the support threshold τ).
An absolute cut: it reads only the document's own passages, so it fires
however many other documents are untested too. Chosen on the wiki-qa
articles (``benchmarks/eval_untested.py``: tuned on half of the 55 articles
with all questions of 10%, 50% or 80% of them removed; on the held-out
half recall 1.0 at every level, precision 0.51 / 0.92 / 0.97). Long documents with only a handful of questions (a 94-passage
article with 7 questions is 15% tested) are flagged too: most of their
text is untested."""

_SUPPORT_TOLERANCE = 1e-6  # float32 rounding: a similarity equal to τ reaches it


def tested_chunks(min_distances, support_threshold: float) -> np.ndarray:
    """Which chunks are *tested*: reached by some inlier question.

    ``tested_i = (1 - mindist(d_i)) >= τ``, with ``mindist`` the cosine
    distance to the nearest inlier question (:func:`scan_similarities`) and
    ``τ`` the support threshold (a cosine similarity, see
    :mod:`coverage_core.stages.calibration`). A chunk with no inlier question at all
    has ``mindist = 1`` and is untested for any τ > 0.

    Returns
    -------
    ndarray of shape (n,), bool
    """
    distances = _min_distances(min_distances)
    if not np.isfinite(support_threshold) or not -1.0 <= support_threshold <= 1.0:
        raise InputError(f"support_threshold is a cosine similarity in [-1, 1]; got {support_threshold}.")
    return (1.0 - distances) >= support_threshold - _SUPPORT_TOLERANCE


def tested_share(min_distances, support_threshold: float) -> float:
    """Share of all chunks that are tested (:func:`tested_chunks`): ``n_tested / n``.

    An absolute figure: "58% of the knowledge base is tested" means 58% of
    the passages have a question within τ, whatever the other scores are.
    """
    tested = tested_chunks(min_distances, support_threshold)
    return float(tested.mean()) if tested.size else float("nan")


def cluster_tested(min_distances, labels, n_clusters: int, support_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``(n_tested, tested_share)`` of each cluster; the share is NaN for an empty cluster."""
    tested = tested_chunks(min_distances, support_threshold)
    labels = _labels(labels, tested.shape[0], n_clusters)
    counts = np.bincount(labels, minlength=n_clusters)
    n_tested = np.bincount(labels, weights=tested.astype(float), minlength=n_clusters).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(counts > 0, n_tested / np.maximum(counts, 1), np.nan)
    return n_tested, share


def balanced_coverage(min_distances, labels, n_clusters: int) -> float:
    """Unweighted mean of the per-cluster coverages (empty clusters left out).

    ``balanced = (1/K') * sum_k coverage_k`` over the ``K'`` non-empty clusters.

    Every topic weighs the same regardless of its size, so a small topic no
    question touches pulls the score down, where basic/weighted coverage
    would barely notice it.

    Returns
    -------
    float
    """
    return float(np.nanmean(cluster_coverages(min_distances, labels, n_clusters)))


# --------------------------------------------------------------------------
# multi-topic coverage (questions cover clusters via centroids)
# --------------------------------------------------------------------------


def _multi_setup(chunk_vectors, question_vectors, labels, centroids):
    chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
    dim = chunks.shape[1]
    questions = as_unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=dim))
    # Centroids of unit vectors are shorter than 1; normalising them keeps
    # 1 - q.c a true cosine distance, so thresholds mean the same everywhere.
    centres = as_unit_rows(check_vectors(centroids, "centroids", dim=dim))
    labels = _labels(labels, chunks.shape[0], centres.shape[0])
    return chunks, questions, labels, centres


def _centroid_distances(questions: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(m, K) cosine distances of unit questions to unit centroids."""
    return np.clip(1.0 - (questions @ centres.T).astype(np.float64), 0.0, 2.0)


def _threshold(threshold: float) -> float:
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        value = float("nan")
    if not np.isfinite(value) or not 0 < value <= 2:
        raise InputError(
            f"threshold is a cosine distance and must be in (0, 2] (sensible: 0.15-0.8); got {threshold}."
        )
    return value


def _n_nearest(n_nearest: int) -> int:
    if isinstance(n_nearest, bool) or not isinstance(n_nearest, (int, np.integer)) or n_nearest < 1:
        raise InputError(f"n_nearest must be a whole number of clusters, at least 1; got {n_nearest}.")
    return int(n_nearest)


def _threshold_covers(questions, centres, threshold) -> np.ndarray:
    """(K, m): question j covers cluster k iff dist(q_j, c_k) < threshold."""
    return (_centroid_distances(questions, centres) < threshold).T


def _n_nearest_covers(questions, centres, n_nearest) -> np.ndarray:
    """(K, m): question j covers its n_nearest closest clusters."""
    n_clusters = centres.shape[0]
    n_nearest = min(n_nearest, n_clusters)
    covers = np.zeros((questions.shape[0], n_clusters), dtype=bool)
    if n_nearest == n_clusters:
        covers[:] = True
    elif questions.shape[0]:
        distances = _centroid_distances(questions, centres)
        nearest = np.argpartition(distances, n_nearest - 1, axis=1)[:, :n_nearest]
        np.put_along_axis(covers, nearest, True, axis=1)
    return covers.T


def _covering_scores(cover_sim: np.ndarray, labels: np.ndarray, n_clusters: int) -> tuple[float, np.ndarray]:
    """Score and per-cluster coverage from each chunk's similarity to its covering questions.

    A chunk whose cluster has no covering question (NaN) gets distance 1, so
    that cluster's coverage is exactly 0, as the multi-coverage rule says.
    """
    distances = np.where(np.isnan(cover_sim), 1.0, np.clip(1.0 - cover_sim, 0.0, 2.0))
    per_cluster = cluster_coverages(distances, labels, n_clusters)
    counts = np.bincount(labels, minlength=n_clusters)
    return float(np.sum(counts / labels.shape[0] * np.nan_to_num(per_cluster))), per_cluster


def multi_threshold_coverage(
    chunk_vectors, question_vectors, labels, centroids, threshold: float, block_size: int | None = None
) -> tuple[float, np.ndarray]:
    """Coverage where a question only counts for the clusters it is about.

    Question ``q`` covers cluster ``k`` if ``dist(q, c_k) < threshold``
    (``c_k`` the cluster centroid, normalised to unit length first). For each
    cluster::

        coverage_k = 1 - (1/|C_k|) * sum_{i in C_k} min_{q covers k} dist(d_i, q)
        score      = sum_k (|C_k|/n) * coverage_k

    A cluster that no question covers has ``coverage_k = 0``.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d), inlier questions; m may be 0
    labels : array-like of shape (n,), int in 0..K-1
    centroids : array-like of shape (K, d), any length (normalised here)
    threshold : float in (0, 2]
        Cosine distance; sensible values are 0.15-0.8.
    block_size : int, optional
        Chunk rows per block.

    Returns
    -------
    score : float
    per_cluster : ndarray of shape (K,), NaN for a cluster with no chunks
    """
    threshold = _threshold(threshold)
    scan = scan_similarities(
        chunk_vectors, question_vectors, labels, centroids, threshold=threshold, block_size=block_size
    )
    return scan.multi_threshold_score, scan.multi_threshold_per_cluster


def multi_n_coverage(
    chunk_vectors, question_vectors, labels, centroids, n_nearest: int, block_size: int | None = None
) -> tuple[float, np.ndarray]:
    """Coverage where each question covers its ``n_nearest`` closest clusters.

    Same per-cluster and total formulas as :func:`multi_threshold_coverage`,
    but question ``q`` covers the ``N`` clusters whose unit centroids are
    nearest to it (``N`` larger than ``K`` is clipped to ``K``, where every
    question covers every cluster and the score equals basic coverage).

    Parameters
    ----------
    chunk_vectors, question_vectors, labels, centroids : as in
        :func:`multi_threshold_coverage`
    n_nearest : int >= 1

    Returns
    -------
    score : float
    per_cluster : ndarray of shape (K,)
    """
    n_nearest = _n_nearest(n_nearest)
    scan = scan_similarities(
        chunk_vectors, question_vectors, labels, centroids, n_nearest=n_nearest, block_size=block_size
    )
    return scan.multi_n_score, scan.multi_n_per_cluster


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
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise InputError(f"depth must be a whole number of questions, at least 1; got {depth}.")
    chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
    questions = as_unit_rows(check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1]))
    found = _scan(chunks, questions, block_size, want_questions=True, depth=int(depth))
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
    :class:`coverage_core.stages.screening.QuestionScreener`); ``top_k`` > 0 each
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
    chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
    questions = as_unit_rows(check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1]))
    if chunk_penalty is not None:
        chunk_penalty = np.asarray(chunk_penalty, dtype=np.float32)
        if chunk_penalty.shape != (chunks.shape[0],):
            raise InputError(
                f"chunk_penalty must hold one value per chunk ({chunks.shape[0]}); got shape {chunk_penalty.shape}."
            )
    found = _scan(chunks, questions, block_size, want_questions=True, row_penalty=chunk_penalty, col_top=top_k)
    return BestMatches(
        found["col_sim"], found["col_idx"], found["row_sim"], found["row_idx"], found.get("col_support"),
        found.get("col_top_idx"), found.get("col_top_sim"),
    )


def as_unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``unit_rows(vectors)``, without the copy when the rows are unit length already.

    Embeddings usually arrive normalised; at a million 384-d chunks the copy
    is 1.5 GB. Rows within 1e-6 of length 1 (or zero) count as unit length:
    normalising them again changes similarities by less than float32
    rounding of a dot product.
    """
    if vectors.dtype == np.float32 and vectors.flags.c_contiguous:
        squared = np.einsum("ij,ij->i", vectors, vectors)
        if np.all((np.abs(squared - 1.0) <= 2e-6) | (squared == 0.0)):
            return vectors
    return unit_rows(vectors)


def _best_of(chunks: np.ndarray, rows: np.ndarray, questions: np.ndarray, columns: np.ndarray):
    """Best similarity (and question index) of chunks ``rows`` (ascending) among questions ``columns``."""
    sims = np.empty(rows.size)
    idx = np.empty(rows.size, dtype=np.intp)
    step = min(_block_rows(columns.size, None), _SLAB_ROWS)
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
    """What :func:`_scan` returns, read from the index.

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

    The chunk x question product dominates the cost (n x m x d flops), so a
    pipeline computing several metrics should call this once instead of each
    function separately. With ``Q`` the questions and ``I`` the inlier ones
    (``Q[inliers]``), the fields equal:

    * ``min_distances``, ``nearest_question``:
      ``nearest_question_distances(chunks, I)``, except that
      ``nearest_question`` indexes into ``Q`` (-1 when there is no inlier);
    * ``question_similarity``, ``nearest_chunk``:
      ``question_support(Q, chunks)``, for every question, inlier or not;
    * ``multi_threshold_*`` (when ``threshold`` is given):
      ``multi_threshold_coverage(chunks, I, labels, centroids, threshold)``;
    * ``multi_n_*`` (when ``n_nearest`` is given):
      ``multi_n_coverage(chunks, I, labels, centroids, n_nearest)``.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d); m may be 0
    labels : array-like of shape (n,); needed for the multi metrics
    centroids : array-like of shape (K, d); needed for the multi metrics
    inliers : array-like of shape (m,), bool, optional
        Questions that count for coverage (default: all).
    threshold : float in (0, 2], optional
    n_nearest : int >= 1, optional
    block_size : int, optional
    index : NearestQuestions, optional
        :func:`nearest_questions` of these same vectors. With it, the
        n x m product is skipped and a change of inliers, clustering,
        threshold or N costs little (same results, up to the order of exact
        ties).

    Returns
    -------
    SimilarityScan
    """
    if threshold is not None:
        threshold = _threshold(threshold)
    if n_nearest is not None:
        n_nearest = _n_nearest(n_nearest)
    if threshold is not None or n_nearest is not None:
        if labels is None or centroids is None:
            raise InputError("labels and centroids are needed for multi-threshold or multi-N coverage.")
        chunks, questions, labels, centres = _multi_setup(chunk_vectors, question_vectors, labels, centroids)
    else:
        chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
        dim = chunks.shape[1]
        questions = as_unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=dim))
    n, m = chunks.shape[0], questions.shape[0]
    if inliers is None:
        mask = np.ones(m, dtype=bool)
    else:
        mask = np.asarray(inliers)
        if mask.shape != (m,) or mask.dtype != bool:
            raise InputError(f"inliers must be a boolean mask with one entry per question ({m}).")

    # Outlier questions cover nothing.
    covers = []
    if threshold is not None:
        covers.append(_threshold_covers(questions, centres, threshold) & mask)
    if n_nearest is not None:
        covers.append(_n_nearest_covers(questions, centres, n_nearest) & mask)

    if m == 0:
        found = {
            "row_sim": np.full(n, np.nan),
            "row_idx": np.full(n, -1, dtype=np.intp),
            "col_sim": np.zeros(0),
            "col_idx": np.zeros(0, dtype=np.intp),
            "cover_sim": [np.full(n, np.nan) for _ in covers],
        }
    elif index is not None:
        if index.shape != (n, m):
            raise InputError(
                f"The similarity index was built for {index.shape[0]} chunks x {index.shape[1]} questions, "
                f"not {n} x {m}; rebuild it with nearest_questions() for these vectors."
            )
        found = _scan_from_index(index, chunks, questions, labels if covers else None, covers, mask)
    else:
        found = _scan(
            chunks,
            questions,
            block_size,
            labels=labels if covers else None,
            covers=covers,
            row_columns=None if mask.all() else mask,
            want_questions=True,
        )

    fields = {
        # No inlier question: distance 1, so coverage is 0 everywhere.
        "min_distances": np.where(np.isnan(found["row_sim"]), 1.0, np.clip(1.0 - found["row_sim"], 0.0, 2.0)),
        "nearest_question": found["row_idx"],
        "question_similarity": found["col_sim"],
        "nearest_chunk": found["col_idx"],
    }
    cover_sim = list(found["cover_sim"])
    if threshold is not None:
        fields["multi_threshold_score"], fields["multi_threshold_per_cluster"] = _covering_scores(
            cover_sim.pop(0), labels, centres.shape[0]
        )
    if n_nearest is not None:
        fields["multi_n_score"], fields["multi_n_per_cluster"] = _covering_scores(
            cover_sim.pop(0), labels, centres.shape[0]
        )
    return SimilarityScan(**fields)


def questions_covering_clusters(question_vectors, centroids, threshold: float) -> np.ndarray:
    """How many questions cover each cluster under the multi-threshold rule.

    Counts questions ``q`` with ``dist(q, c_k) < threshold`` (unit centroids),
    the same rule as :func:`multi_threshold_coverage`.

    Parameters
    ----------
    question_vectors : array-like of shape (m, d); m may be 0
    centroids : array-like of shape (K, d)
    threshold : float in (0, 2]

    Returns
    -------
    ndarray of shape (K,), int
    """
    threshold = _threshold(threshold)
    centres = as_unit_rows(check_vectors(centroids, "centroids"))
    questions = as_unit_rows(
        check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=centres.shape[1])
    )
    return _threshold_covers(questions, centres, threshold).sum(axis=1).astype(np.intp)


# --------------------------------------------------------------------------
# documents, questions
# --------------------------------------------------------------------------


def document_coverage(
    min_distances,
    chunk_documents: Sequence[str],
    *,
    n_mads: float = 2.5,
    min_gap: float = 0.1,
    support_threshold: float | None = None,
    untested_share: float = UNTESTED_SHARE,
) -> pd.DataFrame:
    """Coverage of each source document, with untested documents and documents far below the rest flagged.

    Two flags, for two questions:

    * ``is_untested`` (absolute, the decision): with ``support_threshold`` τ
      given, ``tested_share_doc = n_tested / n_chunks`` (chunks reached by a
      question, :func:`tested_chunks`) and ``is_untested = tested_share_doc <
      untested_share``. It reads the document alone, so it fires when most
      documents are untested; ``is_low`` does not (the median is low then).
      Without τ the columns ``n_tested``, ``tested_share``, ``is_untested``
      are left out.
    * ``is_low`` (relative, kept as a hint): covered far below the other
      documents, as follows.

    ``coverage_doc = mean over the document's chunks of (1 - mindist(d_i))``

    A document is flagged ``is_low`` when, with ``med`` and ``MAD`` the median
    and median absolute deviation of the document coverages::

        coverage_doc < med - max(n_mads * 1.4826 * MAD, min_gap)

    (``1.4826 * MAD`` estimates a standard deviation robustly, so one badly
    covered document cannot hide itself by inflating the spread; ``min_gap``
    keeps a tight corpus from flagging noise). With fewer than 3 documents
    nothing is flagged: there is no "rest" to compare with.

    Parameters
    ----------
    min_distances : array-like of shape (n,)
    chunk_documents : sequence of n str, the document of each chunk
    n_mads, min_gap : float, see above

    Returns
    -------
    DataFrame with columns ``document``, ``n_chunks``, ``coverage``,
    ``is_low`` (and ``n_tested``, ``tested_share``, ``is_untested`` with τ);
    one row per document, lowest coverage first (ties keep the order in
    which documents first appear).
    """
    distances = _min_distances(min_distances)
    documents = list(chunk_documents)
    if len(documents) != distances.shape[0]:
        raise InputError(
            f"chunk_documents has {len(documents)} entries but there are {distances.shape[0]} chunks."
        )
    frame = pd.DataFrame({"document": pd.Series(documents, dtype=object), "coverage": 1.0 - distances})
    table = (
        frame.groupby("document", sort=False)
        .agg(n_chunks=("coverage", "size"), coverage=("coverage", "mean"))
        .reset_index()
    )
    table["n_chunks"] = table["n_chunks"].astype(np.int64)
    is_low = np.zeros(len(table), dtype=bool)
    if len(table) >= 3:
        values = table["coverage"].to_numpy()
        median = np.median(values)
        mad = np.median(np.abs(values - median))
        is_low = values < median - max(n_mads * 1.4826 * mad, min_gap)
    table["is_low"] = is_low
    if support_threshold is not None:
        tested = pd.Series(tested_chunks(distances, support_threshold)).groupby(
            frame["document"], sort=False
        ).sum()
        table["n_tested"] = tested.reindex(table["document"]).to_numpy().astype(np.int64)
        table["tested_share"] = table["n_tested"] / table["n_chunks"]
        table["is_untested"] = table["tested_share"].to_numpy() < untested_share
    return table.sort_values("coverage", kind="stable").reset_index(drop=True)


def question_support(
    question_vectors, chunk_vectors, block_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """How well the knowledge base supports each question.

    ``max_similarity_j = max_i (1 - dist(question_j, chunk_i))``, blockwise
    over question rows. A low value means no chunk is about the question:
    the knowledge base likely cannot answer it.

    Parameters
    ----------
    question_vectors : array-like of shape (m, d); m may be 0
    chunk_vectors : array-like of shape (n, d), n >= 1

    Returns
    -------
    max_similarity : ndarray of shape (m,), float64 in [-1, 1]
    nearest_chunk : ndarray of shape (m,), int
    """
    chunks = as_unit_rows(check_vectors(chunk_vectors, "chunk_vectors"))
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunks.shape[1])
    if questions.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=np.intp)
    found = _scan(chunks, unit_rows(questions), block_size, want_questions=True)
    return found["col_sim"], found["col_idx"]


@dataclass(frozen=True)
class DuplicateGroups:
    """Near-duplicate questions in groups, each around one representative.

    Built by :func:`duplicate_groups`, which states the grouping rule.

    Attributes
    ----------
    representative : ndarray of shape (m,), int
        Index of each question's representative; a representative, and a
        question with no near-duplicate, is its own.
    similarity : ndarray of shape (m,), float64
        Cosine similarity of each question to its representative (1 for a
        representative).
    threshold : float
        The near-duplicate threshold the groups were built with.
    """

    representative: np.ndarray
    similarity: np.ndarray
    threshold: float

    @property
    def groups(self) -> list[tuple[int, np.ndarray]]:
        """``(representative, members)`` of each group of two or more
        questions; ``members`` in index order, so the representative comes
        first. Largest groups first, then by representative."""
        rep = self.representative
        order = np.argsort(rep, kind="stable")  # members of one group adjacent, in index order
        heads, starts, sizes = np.unique(rep[order], return_index=True, return_counts=True)
        keep = np.flatnonzero(sizes >= 2)
        keep = keep[np.lexsort((heads[keep], -sizes[keep]))]
        return [(int(heads[g]), order[starts[g] : starts[g] + sizes[g]]) for g in keep]

    @property
    def n_groups(self) -> int:
        """Groups of two or more questions."""
        sizes = np.bincount(self.representative, minlength=len(self.representative))
        return int((sizes >= 2).sum())

    @property
    def n_questions(self) -> int:
        """Questions in those groups, representatives included."""
        sizes = np.bincount(self.representative, minlength=len(self.representative))
        return int(sizes[sizes >= 2].sum())

    @property
    def duplicate_of(self) -> np.ndarray:
        """Each question's representative, -1 for representatives and questions in no group."""
        own = self.representative == np.arange(len(self.representative))
        return np.where(own, -1, self.representative)


def duplicate_groups(
    question_vectors,
    threshold: float = 0.95,
    *,
    repeats: dict[int, int] | None = None,
    block_size: int | None = None,
) -> DuplicateGroups:
    """Group near-duplicate questions around representatives (leader clustering).

    Two questions are near-duplicates when their cosine similarity
    ``s = 1 - dist(q_i, q_j) >= threshold`` (a 1e-6 tolerance absorbs float32
    rounding, so exact duplicates pass even a threshold of 1). A redundant
    question adds no coverage: its nearest chunks are already as close to its
    twin.

    Rule: questions are taken in index order. Question ``j`` joins the group
    of the earlier representative it is most similar to among those with
    ``s >= threshold`` (ties: the earliest); with none, it becomes a
    representative. So every member is a near-duplicate of its
    representative, which is its group's first question, and a chain of
    near-duplicates (``a ~ b ~ c`` with ``a`` and ``c`` far apart) cannot
    pull distant questions into one group, as single linkage would. Two
    members of one group are each within the threshold's angle of the
    representative, so at most twice that angle apart (similarity >= 0.805 at
    0.95).

    Exact repeats (``repeats``, e.g. from the question file) join the group
    of the question they repeat, with that question's similarity to its
    representative, whatever their vectors; they are not compared otherwise.

    Computed in blocks of questions against the representatives found so far
    and against the block itself, so no m x m matrix ever exists; the cost is
    about ``m x n_representatives x d`` flops (``m**2 / 2 x d`` when no two
    questions are near-duplicates).

    Parameters
    ----------
    question_vectors : array-like of shape (m, d); m may be 0
    threshold : float in (0, 1], cosine similarity
    repeats : dict, optional
        ``{j: i}``: question ``j`` repeats question ``i < j`` exactly.
    block_size : int, optional
        Question rows per block; by default as many as keep a block's
        similarities to the representatives, and to itself, near 32 MB each.

    Returns
    -------
    DuplicateGroups
    """
    if not np.isfinite(threshold) or not 0 < threshold <= 1:
        raise InputError(f"threshold is a cosine similarity and must be in (0, 1]; got {threshold}.")
    questions = as_unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True))
    m = questions.shape[0]
    repeats = dict(repeats or {})
    for j, i in repeats.items():
        if not 0 <= i < j < m:
            raise InputError(f"repeats must map a question to an earlier one (0 <= i < j < {m}); got {j}: {i}.")
    cut = threshold - _SIMILARITY_TOLERANCE
    compared = np.setdiff1d(np.arange(m), np.fromiter(repeats, dtype=np.intp, count=len(repeats)))
    vectors = questions[compared]
    n = len(compared)
    leader = np.empty(n, dtype=np.intp)  # position in `compared` of each question's representative
    similarity = np.ones(n)
    leaders = np.empty(n, dtype=np.intp)
    leader_vectors = np.empty_like(vectors)
    n_leaders = 0
    start = 0
    while start < n:
        # A block meets the representatives so far and itself: at most about
        # _BLOCK_ELEMENTS similarities each, in as few products as that allows.
        step = _block_rows(max(n_leaders, _SQUARE_BLOCK_ROWS), block_size)
        block = vectors[start : start + step]
        rows = np.arange(len(block))
        best = np.full(len(block), -1, dtype=np.intp)
        best_sim = np.full(len(block), -np.inf, dtype=np.float32)
        if n_leaders:
            sims = block @ leader_vectors[:n_leaders].T
            best = sims.argmax(axis=1)
            best_sim = sims[rows, best]
        # Questions with no earlier representative, in order: each is a new
        # representative unless it matches one made before it in this block.
        # Only those that match another such question need that walk.
        lonely = np.flatnonzero(best_sim < cut)
        within = block @ block[lonely].T
        hit = within >= cut  # [question, lonely question]; read this way only, as rounding is not symmetric
        hit[lonely, np.arange(lonely.size)] = False
        is_new = np.ones(lonely.size, dtype=bool)
        remaining = np.flatnonzero(hit[lonely].any(axis=1))
        while remaining.size:
            first, remaining = remaining[0], remaining[1:]
            dropped = hit[lonely[remaining], first]
            is_new[remaining[dropped]] = False
            remaining = remaining[~dropped]
        new = np.flatnonzero(is_new)
        if new.size:
            fresh = lonely[new]
            # A representative made in this block counts for the questions after it.
            near = np.flatnonzero(hit[:, new].any(axis=1))
            sims = within[np.ix_(near, new)]
            sims[near[:, None] <= fresh[None, :]] = -np.inf
            nearest = sims.argmax(axis=1)
            nearest_sim = sims[np.arange(near.size), nearest]
            gain = nearest_sim > best_sim[near]  # ties keep the earlier representative
            best[near[gain]] = n_leaders + nearest[gain]
            best_sim[near[gain]] = nearest_sim[gain]
            best[fresh] = n_leaders + np.arange(fresh.size)
            leader_vectors[n_leaders : n_leaders + fresh.size] = block[fresh]
            leaders[n_leaders : n_leaders + fresh.size] = start + fresh
            n_leaders += fresh.size
        leader[start : start + len(block)] = leaders[best]
        joined = leader[start : start + len(block)] != start + rows
        similarity[start : start + len(block)][joined] = np.minimum(best_sim[joined], 1.0)
        start += len(block)

    representative = np.arange(m)
    representative[compared] = compared[leader]
    similarities = np.ones(m)
    similarities[compared] = similarity
    for j in sorted(repeats):  # ascending: an original that repeats another is settled first
        representative[j] = representative[repeats[j]]
        similarities[j] = similarities[repeats[j]]
    return DuplicateGroups(representative, similarities, float(threshold))
