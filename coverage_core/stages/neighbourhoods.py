"""Neighbourhoods for off-topic screening: how crowded each passage's is, and each question's nearest questions.

:func:`chunk_density`: a passage in a dense cluster is close to many others, so a question's best
similarity to it says less than the same similarity to an isolated passage;
:class:`~coverage_core.offtopic.screener.QuestionScreener` subtracts
``density_weight * density(c)`` from each similarity (step 1 of its method). :func:`question_neighbours` finds each question's
most similar questions, for the screener's smoothing (step 3) and the
informational :func:`lof_scores`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from sklearn.neighbors import LocalOutlierFactor
from threadpoolctl import threadpool_limits

from coverage_core.threads import in_order, in_threads, workers_for

__all__ = ["BLOCK_ROWS", "DENSITY_NEIGHBORS", "MAX_REFERENCE", "chunk_density", "lof_scores", "question_neighbours"]

# Rows per block of a similarity matrix against the chunks (questions in the
# screener, a cluster's members here): block x n_chunks float32, 512 x 20,000 is 40 MB.
BLOCK_ROWS = 512

# Chunk-side density: each chunk's mean cosine to its DENSITY_NEIGHBORS
# nearest chunks, searched within its cluster, among at most MAX_REFERENCE
# chunks sampled from that cluster (k is scaled down with the sample).
DENSITY_NEIGHBORS = 20
MAX_REFERENCE = 2000
# Up to this many neighbours, their mean is taken by repeated maxima, not a partition
# (row maxima are vectorised, a partition is not: docs/benchmarks.md, chunk density).
_REPEATED_MAX_UP_TO = 32


def _top_k_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k largest values of each row of ``sims`` (n, m), 1 <= k <= m."""
    if k == 1:
        return sims.max(axis=1)
    if k <= _REPEATED_MAX_UP_TO:
        rows = np.arange(len(sims))
        total = np.zeros(len(sims), dtype=np.float64)
        taken = []
        for _ in range(k):
            best = sims.argmax(axis=1)
            total += sims[rows, best]
            taken.append((best, sims[rows, best].copy()))
            sims[rows, best] = -np.inf
        for best, values in taken:  # the caller's block, as it was
            sims[rows, best] = values
        return (total / k).astype(sims.dtype)
    part = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
    return part.mean(axis=1)


def chunk_density(
    chunk_vectors: np.ndarray,
    chunk_labels: np.ndarray | None = None,
    n_neighbors: int = DENSITY_NEIGHBORS,
    max_reference: int = MAX_REFERENCE,
    random_state: int | None = 0,
) -> np.ndarray:
    """How crowded the knowledge base is around each chunk.

    Parameters
    ----------
    chunk_vectors : ndarray of shape (n_chunks, n_features)
        Unit-length chunk embeddings.
    chunk_labels : ndarray of shape (n_chunks,) or None
        Cluster of each chunk. Neighbours are searched within the chunk's
        cluster (nearest neighbours almost always share a K-means cell), which
        keeps the cost near ``n_chunks**2 / K`` instead of ``n_chunks**2``.
        None treats all chunks as one cluster.
    n_neighbors : int
        Number of nearest chunks averaged.
    max_reference : int
        At most this many chunks per cluster are used as neighbours (a seeded
        random sample); ``n_neighbors`` is scaled down with the sampling rate
        so the estimate keeps the same meaning.

    Returns
    -------
    density : ndarray of shape (n_chunks,)
        Mean cosine similarity of each chunk to its nearest other chunks; 0
        for a chunk alone in its cluster.
    """
    n = chunk_vectors.shape[0]
    labels = np.zeros(n, dtype=np.int64) if chunk_labels is None else np.asarray(chunk_labels)
    rng = np.random.default_rng(random_state)
    density = np.zeros(n, dtype=np.float32)

    def fill(block) -> None:
        rows, ref_vectors, place, k = block
        sims = chunk_vectors[rows] @ ref_vectors.T
        own = np.flatnonzero(place >= 0)
        sims[own, place[own]] = -np.inf  # a chunk is not its own neighbour
        density[rows] = _top_k_mean(sims, k)

    # One BLAS thread per block, blocks in threads: OpenBLAS's own threads
    # spin, and ran fourfold slower on the many small products of a busy 2-core machine.
    with threadpool_limits(limits=1, user_api="blas"):
        in_threads(fill, _density_blocks(chunk_vectors, labels, n_neighbors, max_reference, rng))
    return density


def _density_blocks(chunk_vectors, labels, n_neighbors: int, max_reference: int, rng):
    """(rows, reference vectors, rows' places among the references or -1, k) per block
    of :data:`BLOCK_ROWS` of a cluster's members, cluster by cluster (see :func:`chunk_density`)."""
    # Each cluster's members, ascending, without comparing every label with every cluster.
    by_label = np.argsort(labels, kind="stable")
    sorted_labels = labels[by_label]
    bounds = np.concatenate(([0], np.flatnonzero(sorted_labels[1:] != sorted_labels[:-1]) + 1, [len(chunk_vectors)]))
    for begin, stop in zip(bounds[:-1], bounds[1:]):
        members = by_label[begin:stop]
        if len(members) < 2:
            continue
        if len(members) > max_reference:
            reference = np.sort(rng.choice(members, size=max_reference, replace=False))
        else:
            reference = members
        k = max(1, round(min(n_neighbors, len(members) - 1) * len(reference) / len(members)))
        k = min(k, len(reference) - 1)
        ref_vectors = chunk_vectors[reference]
        for first in range(0, len(members), BLOCK_ROWS):
            rows = members[first : first + BLOCK_ROWS]
            place = np.minimum(np.searchsorted(reference, rows), len(reference) - 1)
            yield rows, ref_vectors, np.where(reference[place] == rows, place, -1), k


# The question-neighbour search prunes from PRUNE_FACTOR * k * NEIGHBOR_GROUP
# questions on (see question_neighbours); below that the plain search is as
# fast. Runs of 32, 64 or 128 questions timed the same at 25,600 questions.
NEIGHBOR_GROUP = 64
PRUNE_FACTOR = 8


def question_neighbours(Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each question's k most similar other questions, most similar first; 1 <= k < n.

    Exact, one block of ``BLOCK_ROWS`` questions at a time, blocks in threads
    (:func:`~coverage_core.threads.in_order`; the result does not depend on
    their number). From ``PRUNE_FACTOR * k * NEIGHBOR_GROUP`` questions on,
    picking k of n similarities per question takes longer than the products
    (and a block's full index array is 200 MB at 50,000), so the questions are
    first cut into runs of ``NEIGHBOR_GROUP`` and only the k runs with the
    largest maxima are searched: every question with a similarity above the
    k-th largest lies in a run whose maximum is above it, and there are fewer
    than k such runs, so the k runs hold the k largest values.

    Returns indices and cosine similarities, both of shape (n, k).
    """
    n = Q.shape[0]
    index = np.empty((n, k), dtype=np.int64)
    similarity = np.empty((n, k), dtype=np.float32)
    pruned = n >= PRUNE_FACTOR * k * NEIGHBOR_GROUP
    full = n // NEIGHBOR_GROUP * NEIGHBOR_GROUP
    rows = min(BLOCK_ROWS, n)
    starts = range(0, n, BLOCK_ROWS)

    def buffers() -> tuple[np.ndarray, np.ndarray | None]:
        # One pair per thread, reused between its blocks: at 50,000 questions
        # a fresh block is 100 MB of new pages each time.
        halves = np.empty((rows, full // NEIGHBOR_GROUP, NEIGHBOR_GROUP // 2), dtype=np.float32) if pruned else None
        return np.empty((rows, n), dtype=np.float32), halves

    def neighbours_of_block(i: int, space) -> tuple[np.ndarray, np.ndarray]:
        buffer, halves = space
        start = starts[i]
        block = Q[start : start + BLOCK_ROWS]
        b = len(block)
        sims = np.matmul(block, Q.T, out=buffer[:b])
        own = np.arange(b)
        sims[own, start + own] = -np.inf  # not its own neighbour
        candidates, values = None, sims
        if pruned:
            # Each run's maximum by halving (a max over a short last axis is 2x slower).
            runs = sims[:, :full].reshape(b, -1, NEIGHBOR_GROUP)
            width = NEIGHBOR_GROUP // 2
            maxima = np.maximum(runs[..., :width], runs[..., width:], out=halves[:b])
            while width > 1:
                width //= 2
                np.maximum(maxima[..., :width], maxima[..., width : 2 * width], out=maxima[..., :width])
            maxima = maxima[..., 0]
            if full < n:
                maxima = np.hstack([maxima, sims[:, full:].max(axis=1, keepdims=True)])
            best_runs = np.argpartition(-maxima, k - 1, axis=1)[:, :k]
            candidates = (best_runs[:, :, None] * NEIGHBOR_GROUP + np.arange(NEIGHBOR_GROUP)).reshape(b, -1)
            values = np.take_along_axis(sims, np.minimum(candidates, n - 1), axis=1)
            values[candidates >= n] = -np.inf  # past the end of a short last run
        top = np.argpartition(-values, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(values, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        found = top if candidates is None else np.take_along_axis(candidates, top, axis=1)
        return found, np.take_along_axis(top_sims, order, axis=1)

    def keep(i: int, found: tuple[np.ndarray, np.ndarray]) -> None:
        top, top_similarity = found
        start = starts[i]
        index[start : start + len(top)] = top
        similarity[start : start + len(top)] = top_similarity

    in_order(neighbours_of_block, keep, len(starts), scratch=buffers, workers=workers_for(len(starts)))
    return index, similarity


def neighbour_median(values: np.ndarray, neighbours: np.ndarray, similarity: np.ndarray,
                     min_similarity: float, min_count: int) -> np.ndarray:
    """Each row's median of ``values`` over its neighbours at ``similarity >= min_similarity``; NaN
    with fewer than ``min_count`` of them. ``neighbours`` and ``similarity`` of shape (n, k) as from
    :func:`question_neighbours`; returns shape (n,)."""
    near = np.asarray(similarity) >= min_similarity
    taken = np.where(near, np.asarray(values, dtype=np.float64)[neighbours], np.nan)
    median = np.full(len(taken), np.nan)
    enough = near.sum(axis=1) >= min_count
    if enough.any():
        median[enough] = np.nanmedian(taken[enough], axis=1)
    return median


def lof_scores(
    neighbours: np.ndarray, similarity: np.ndarray, k: int, notes: list[str]
) -> np.ndarray:
    """LocalOutlierFactor on the questions alone, from their neighbour lists.

    ``neighbours`` and ``similarity`` (n, m >= k) are sorted, most similar
    first. They become a sparse distance graph (Euclidean distance between
    unit vectors, which orders neighbours like cosine), so LOF needs no
    second search. Each row starts with the question itself at distance 0,
    as scikit-learn expects of a graph built on its own training set.
    """
    n, m = neighbours.shape
    distance = np.sqrt(np.clip(2.0 - 2.0 * similarity.astype(np.float64), 0.0, None))
    data = np.hstack([np.zeros((n, 1)), distance]).ravel()
    indices = np.hstack([np.arange(n)[:, None], neighbours]).ravel()
    graph = sparse.csr_matrix(
        (data, indices, np.arange(0, n * (m + 1) + 1, m + 1)), shape=(n, n)
    )
    lof = LocalOutlierFactor(n_neighbors=k, metric="precomputed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lof.fit(graph)
    for w in caught:
        notes.append(f"LOF: {w.message}")
    return -lof.negative_outlier_factor_
