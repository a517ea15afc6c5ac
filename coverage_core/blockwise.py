"""The blockwise pass over chunk x question similarities that every similarity measure shares.

The chunk x question product is the largest cost of an analysis (n x m x d
multiply-adds: 2 x 10^12 at a million chunks and 5,000 questions), so it is
made in row blocks of about 32 MB, and everything wanted from it (each
chunk's best question, each question's best chunks, the questions covering
a cluster, penalised support) is read off the same blocks: the full
similarity matrix never exists. :func:`scan_blocks` is that pass;
:class:`RunningTopK` keeps each entity's best candidates across blocks.
The public entry points are :mod:`coverage_core.stages.similarity` and
:mod:`coverage_core.metrics`; vectors reach this module as unit rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from coverage_core.errors import InputError
from coverage_core.threads import in_order, workers_for

__all__ = ["BLOCK_ELEMENTS", "block_rows", "RunningTopK", "scan_blocks"]

# Similarities computed per block: 8M float32 values = 32 MB, small next to
# the 2 GB budget yet large enough for BLAS to run at full speed.
BLOCK_ELEMENTS = 1 << 23

# Rows per sub-block when tracking each question's best chunk (see scan_blocks).
_SUB_BLOCK_ROWS = 64

# Trackers that can skip sub-blocks (_track_penalised_best, RunningTopK.add
# with group_maxima) read the block whole instead when more than this share
# of (sub-block, question) pairs must be read: gathering a value costs
# several times streaming one.
_GATHER_SHARE = 0.1


def block_rows(n_columns: int, block_size: int | None) -> int:
    """Rows per block: ``block_size`` when given, else as many as keep a block of ``n_columns`` near BLOCK_ELEMENTS."""
    if block_size is not None:
        if int(block_size) < 1:
            raise InputError(f"block_size must be at least 1; got {block_size}.")
        return int(block_size)
    return max(1, BLOCK_ELEMENTS // max(n_columns, 1))


def scan_blocks(
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
    step = block_rows(m, block_size)
    found = _Pass(
        chunks, questions, labels, covers, row_columns, want_questions, depth, row_penalty, col_top,
        sub=min(step, _SUB_BLOCK_ROWS),
    )
    questions_t = np.ascontiguousarray(found.questions.T)
    starts = range(0, n, step)

    def product(i: int, buffer: np.ndarray) -> np.ndarray:
        start = starts[i]
        stop = min(start + step, n)
        return np.matmul(found.rows[start:stop], questions_t, out=buffer[: stop - start])

    def block_buffer() -> np.ndarray:
        return np.empty((min(step, n), m), dtype=np.float32)

    # Blocks multiplied in threads of one BLAS thread each, read in order: multi-threaded BLAS spins
    # while a block is read, and the reading then has a core to itself (docs/benchmarks.md).
    in_order(product, lambda i, sims: found.read_block(starts[i], sims), len(starts),
             scratch=block_buffer, workers=workers_for(len(starts)))
    return found.result()


class _Pass:
    """What one :func:`scan_blocks` has found so far, in its own orders: chunks
    sorted by cluster, the row questions first."""

    def __init__(
        self, chunks, questions, labels, covers, row_columns, want_questions, depth, row_penalty, col_top, *, sub
    ):
        n, m = chunks.shape[0], questions.shape[0]
        # Chunks sorted by cluster: each cluster is a run of rows, so its
        # covering questions are one column mask per run, not one per row.
        self.order = np.argsort(labels, kind="stable") if labels is not None else None
        self.rows = chunks[self.order] if self.order is not None else chunks
        self.sorted_labels = labels[self.order] if self.order is not None else None
        self.row_penalty = None
        if row_penalty is not None:
            row_penalty = np.asarray(row_penalty, dtype=np.float32)
            self.row_penalty = row_penalty[self.order] if self.order is not None else row_penalty
            self.col_support = np.full(m, -np.inf, dtype=np.float32)
        # Questions sorted so the row questions come first: their maxima are
        # then taken over a slice of each block, without masking.
        row_set = np.ones(m, dtype=bool) if row_columns is None else np.asarray(row_columns, dtype=bool)
        self.perm = np.argsort(~row_set, kind="stable")
        self.n_row_questions = int(row_set.sum())
        self.questions = questions[self.perm]
        self.covers = covers
        self.covering, self.any_cover, self.same_as_rows = _cover_columns(covers, self.perm, row_set)
        self.want_questions, self.sub = want_questions, sub

        self.row_sim = np.full(n, np.nan)
        self.row_idx = np.full(n, -1, dtype=np.intp)
        self.cover_sim = [np.full(n, np.nan) for _ in covers]
        self.col_sim = np.full(m, -np.inf)
        self.col_start = np.zeros(m, dtype=np.intp)  # first row of the sub-block holding the best chunk
        self.depth = min(depth, m)
        self.top_idx = np.empty((n, self.depth), dtype=np.intp)
        self.top_sim = np.empty((n, self.depth), dtype=np.float32)
        self.top_chunks = RunningTopK(m, min(col_top, n)) if col_top else None

    def read_block(self, start: int, sims: np.ndarray) -> None:
        """Update every tracker from the similarities of rows ``start ..`` (in the pass's orders)."""
        stop, sub = start + len(sims), self.sub
        best = None
        if self.n_row_questions:
            best, self.row_idx[start:stop] = _block_row_best(sims[:, : self.n_row_questions], self.perm)
            self.row_sim[start:stop] = best
        if self.depth:
            self.top_idx[start:stop], self.top_sim[start:stop] = _block_top_questions(sims, self.depth, self.perm)
        # One reduction of the block to sub-block maxima serves all three
        # per-question trackers below: each then reads only the few
        # (sub-block, question) pairs that can still change its result.
        per_question = self.want_questions or self.top_chunks is not None or self.row_penalty is not None
        part_max = _sub_block_maxima(sims, sub) if per_question else None
        if self.want_questions:
            _track_question_best(part_max, start, sub, self.col_sim, self.col_start)
        if self.covers:
            _block_cover(
                sims, start, self.sorted_labels[start:stop], best,
                self.covering, self.any_cover, self.same_as_rows, self.cover_sim,
            )
        if self.top_chunks is not None:
            self.top_chunks.add(sims, start, entities_on_rows=False, group_maxima=part_max, group_rows=sub)
        if self.row_penalty is not None:
            _track_penalised_best(sims, part_max, sub, self.row_penalty[start:stop], self.col_support)

    def result(self) -> dict:
        """The fields :func:`scan_blocks` returns, back in the caller's chunk and question orders."""
        perm, order = self.perm, self.order
        result = {"row_sim": np.clip(self.row_sim, -1.0, 1.0), "row_idx": self.row_idx, "cover_sim": self.cover_sim}
        if self.row_penalty is not None:
            result["col_support"] = np.empty(len(perm), dtype=np.float32)
            result["col_support"][perm] = self.col_support
        if self.top_chunks is not None:
            if order is not None:
                raise ValueError("col_top needs the chunks in the caller's order (no labels).")
            result["col_top_idx"] = np.empty_like(self.top_chunks.indices)
            result["col_top_idx"][perm] = self.top_chunks.indices
            result["col_top_sim"] = np.empty_like(self.top_chunks.values)
            result["col_top_sim"][perm] = self.top_chunks.values
        if self.depth:
            result["top_idx"], result["top_sim"] = self.top_idx, self.top_sim
        if self.want_questions:
            result["col_sim"], result["col_idx"] = _question_best_chunks(
                self.questions, self.rows, self.col_sim, self.col_start, self.sub, order, perm
            )
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
            entities, candidates, values = self.above(block)
        else:
            open_groups = None if group_maxima is None else group_maxima > kth[None, :]
            if open_groups is None or np.count_nonzero(open_groups) > _GATHER_SHARE * open_groups.size:
                candidates, entities = np.nonzero(block > kth[None, :])
                values = block[candidates, entities]
            else:
                groups, columns = np.nonzero(open_groups)
                rows, group_values, inside = _group_values(block, groups, columns, group_rows)
                above = (group_values > kth[columns, None]) & inside
                candidates, values = rows[above], group_values[above]
                entities = np.broadcast_to(columns[:, None], rows.shape)[above]
        self._merge_above(entities, candidates, values, offset)

    def above(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The ``(entity, candidate, value)`` entries of ``block`` (entities, b) above each entity's ``k``-th
        best so far, in row-major order; None while fewer than ``k`` candidates are in.

        Safe to call in another thread while blocks are added: the ``k``-th values only rise, so entries
        found against an older ``k``-th value are a superset of the ones :meth:`add_above` keeps.
        """
        if self.filled < self.k:
            return None
        entities, candidates = np.nonzero(block > self.values[:, -1][:, None])
        return entities, candidates, block[entities, candidates]

    def add_above(self, block: np.ndarray, found: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                  offset: int) -> None:
        """:meth:`add` of ``block`` (entities on rows), given ``found = self.above(block)`` computed before,
        perhaps in another thread (None: read ``block`` whole)."""
        if found is None:
            self.add(block, offset)
            return
        entities, candidates, values = found
        keep = values > self.values[entities, -1]
        self._merge_above(entities[keep], candidates[keep], values[keep], offset)

    def _merge_above(self, entities: np.ndarray, candidates: np.ndarray, values: np.ndarray, offset: int) -> None:
        """Merge entries above the entities' ``k``-th best (entities ascending, each one's candidates ascending)."""
        k = self.k
        if not len(entities):
            return
        # Each entity's new candidates best first (ties: lower index first); only its first k can enter.
        order = _by_entity_best_first(entities, values)
        entities, candidates, values = entities[order], candidates[order], values[order]
        best = np.arange(len(entities)) - np.searchsorted(entities, entities) < k  # rank within the entity
        entities, candidates, values = entities[best], candidates[best], values[best]
        changed = entities[np.r_[True, entities[1:] != entities[:-1]]]
        self.indices[changed], self.values[changed] = _merge_candidates(
            self.indices[changed], self.values[changed], changed, entities, candidates + offset, values, k
        )


def _by_entity_best_first(entities: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The order that sorts pairs by entity, then by value, highest first, keeping the given order among
    equal values (the callers give each entity's candidates in ascending index).

    One stable sort of an int64 key (the entity, then the float32 value's bits turned to an unsigned
    integer that sorts the same way, inverted) instead of a three-key ``np.lexsort``: ten times faster on
    the 10^4-10^5 candidates a block brings.
    """
    bits = (np.asarray(values, dtype=np.float32) + np.float32(0)).view(np.uint32)  # + 0: -0.0 is 0.0
    ascending = np.where(bits >> 31, ~bits, bits | np.uint32(1 << 31))
    key = (np.asarray(entities, dtype=np.int64) << 32) | (~ascending).astype(np.int64)
    return np.argsort(key, kind="stable")


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
