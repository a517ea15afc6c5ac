"""Which passages stand for a topic or a gap: those nearest its centre, and those spread over it.

:func:`representatives_by_cluster` (or :func:`representative_chunks` for one
cluster) ranks a cluster's passages by cosine to its centroid;
:func:`spread_passages` picks the passages of a gap whose questions would
reach most of its untested passages.
"""

from __future__ import annotations

import numpy as np

from coverage_core.errors import InputError
from coverage_core.validation import unit_rows

__all__ = ["least_covered", "representative_chunks", "representatives_by_cluster", "spread_passages"]


# Rows compared with their centroid at a time: bounds the temporaries (the
# rows as float32 and their centroids) to ~100 MB at 384 dimensions.
_BLOCK_ROWS = 65_536


def _cosine_to_centres(rows: np.ndarray, centres: np.ndarray, centre_norms: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row (m, d) with the centre beside it (m, d); 0 for a zero row.

    Row by row (einsum, no BLAS): a row's value does not depend on which
    other rows are in the call, so one cluster at a time and all clusters
    at once rank identically.
    """
    dots = np.einsum("ij,ij->i", rows, centres)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows)) * np.maximum(centre_norms, 1e-12)
    return dots / np.where(norms > 0, norms, 1.0)


def _similarities(vectors: np.ndarray, index, labels: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Cosine of chunks ``index`` (an index array, or None for all) to their own cluster's centroid, in blocks."""
    centre_norms = np.linalg.norm(centroids, axis=1)
    n = len(vectors) if index is None else len(index)
    similarity = np.empty(n, dtype=np.float32)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n)
        rows = vectors[start:stop] if index is None else vectors[index[start:stop]]
        own = labels[start:stop] if index is None else labels[index[start:stop]]
        # Only these rows are converted: a float64 corpus is never copied whole.
        similarity[start:stop] = _cosine_to_centres(
            np.asarray(rows, dtype=np.float32), centroids[own], centre_norms[own]
        )
    return similarity


def representative_chunks(chunk_vectors, labels, centroids, cluster: int, n: int) -> np.ndarray:
    """Indices of the ``n`` chunks of ``cluster`` closest to its centroid (cosine), closest first.

    For every cluster at once use :func:`representatives_by_cluster` (one
    pass over the chunks instead of one per cluster); both rank the same.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n_chunks, d)
    labels : array-like of shape (n_chunks,)
    centroids : array-like of shape (K, d), any length
    cluster : int
    n : int

    Returns
    -------
    ndarray of int, at most ``n`` (fewer if the cluster is smaller).
    """
    vectors = np.asarray(chunk_vectors)
    labels = np.asarray(labels)
    centroids = np.asarray(centroids, dtype=np.float32)
    members = np.flatnonzero(labels == cluster)
    if members.size == 0 or n < 1:
        return np.zeros(0, dtype=np.intp)
    own = np.full(len(labels), 0, dtype=np.intp)  # index into the one-row centroid table below
    similarity = _similarities(vectors, members, own, centroids[[cluster]])
    order = np.lexsort((members, -similarity))  # ties: lower index first
    return members[order[:n]].astype(np.intp)


def representatives_by_cluster(chunk_vectors, labels, centroids, n: int) -> list[np.ndarray]:
    """:func:`representative_chunks` of every cluster, in one blocked pass over the chunks.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n_chunks, d)
    labels : array-like of shape (n_chunks,), int in 0..K-1
    centroids : array-like of shape (K, d)
    n : int

    Returns
    -------
    list of K int arrays: each cluster's at most ``n`` chunks closest to
    its centroid, closest first (ties: lower index first); empty for an
    empty cluster.
    """
    vectors = np.asarray(chunk_vectors)
    labels = np.asarray(labels, dtype=np.intp)
    centroids = np.asarray(centroids, dtype=np.float32)
    k = len(centroids)
    if labels.shape != (len(vectors),):
        raise InputError(f"labels must hold one cluster label per chunk ({len(vectors)}); got shape {labels.shape}.")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise InputError(f"labels must be cluster numbers 0..{k - 1}.")
    if n < 1 or not labels.size:
        return [np.zeros(0, dtype=np.intp) for _ in range(k)]
    similarity = _similarities(vectors, None, labels, centroids)
    order = np.lexsort((np.arange(len(labels)), -similarity, labels))
    starts = np.searchsorted(labels[order], np.arange(k + 1))
    return [order[starts[c] : min(starts[c] + n, starts[c + 1])].astype(np.intp) for c in range(k)]


# At most this many of a gap's untested passages are weighed by spread_passages (their similarities fill 16 MB).
MAX_SPREAD_CANDIDATES = 2000


def spread_passages(
    rows, chunk_vectors, min_distances, support_threshold: float, n: int, reach: int, askable=None,
) -> list[int]:
    """The ``n`` passages of a gap whose questions would test most of it: greedy maximum coverage.

    A passage ``p`` of the gap (chunk ``rows``) is untested when its
    similarity to its nearest question, ``1 - min_distance``, is below τ
    (``support_threshold``). A question written from passage ``c`` tests
    the passages it retrieves, taken to be ``c``'s ``reach`` nearest
    passages of the gap (``c`` included). Each step picks the untested
    passage whose nearest passages hold the most untested passages not yet
    reached (ties: the least covered first), so the questions spread over
    the gap instead of all landing on one corner of it. Only the
    ``MAX_SPREAD_CANDIDATES`` least covered passages are weighed.
    ``askable(chunk)``: whether a question can be written from a chunk (a
    list of names cannot); a pick that is not askable is skipped.
    """
    rows = np.asarray(rows, dtype=np.intp)
    all_distances = np.asarray(min_distances, dtype=np.float64)
    rows = rows[np.argsort(-all_distances[rows], kind="stable")][:MAX_SPREAD_CANDIDATES]
    untested = (1.0 - all_distances[rows]) < support_threshold
    if not untested.any():
        return []
    unit = unit_rows(np.asarray(np.asarray(chunk_vectors)[rows], dtype=np.float32))
    similarity = unit @ unit.T
    reaches = _top_per_row(similarity, reach)
    reaches[np.arange(len(rows)), np.arange(len(rows))] = True
    # Counts as a float32 product (exact below 2^24): one BLAS pass per pick instead of a boolean reduction.
    reach_weights = reaches.astype(np.float32)
    open_rows = untested.copy()
    chosen: list[int] = []
    while len(chosen) < n:
        gains = np.rint(reach_weights @ open_rows.astype(np.float32)).astype(np.int64)
        gains[~untested] = -1  # a question is written for an untested passage only
        gains[chosen] = -1
        best = int(np.argmax(gains))  # the first maximum: rows are least covered first
        if gains[best] <= 0:
            break
        if askable is not None and not askable(int(rows[best])):
            untested[best] = False
            continue
        chosen.append(best)
        open_rows &= ~reaches[best]
    return [int(rows[i]) for i in chosen]


# Up to this many per row, _top_per_row takes repeated maxima (2,000 x 2,000: ~3 ms each), not a partition (~25 ms).
_REPEATED_ARGMAX_UP_TO = 8


def _top_per_row(similarity: np.ndarray, k: int) -> np.ndarray:
    """A mask of each row's ``k`` largest values: the first ``k`` of a stable descending sort (equal values in
    column order), found with a partition rather than a sort of every row (2,000 x 2,000 per gap)."""
    k = min(max(k, 0), similarity.shape[1])
    if k == 0:
        return np.zeros_like(similarity, dtype=bool)
    if k <= _REPEATED_ARGMAX_UP_TO:
        # argmax takes the first maximum, so k rounds of it, each taking its pick out, are that sort's first k:
        # a few passes over the matrix instead of a partition of it.
        mask = np.zeros_like(similarity, dtype=bool)
        rows = np.arange(similarity.shape[0])
        remaining = similarity.copy()
        for _ in range(k):
            best = remaining.argmax(axis=1)
            mask[rows, best] = True
            remaining[rows, best] = -np.inf
        return mask
    kth = np.partition(similarity, similarity.shape[1] - k, axis=1)[:, similarity.shape[1] - k]
    above = similarity > kth[:, None]
    ties = similarity == kth[:, None]
    wanted = k - above.sum(axis=1)
    return above | (ties & (np.cumsum(ties, axis=1) <= wanted[:, None]))


def least_covered(representatives: np.ndarray, min_distances: np.ndarray, n: int) -> list[int]:
    """The ``n`` representatives farthest from any question, worst first."""
    distances = min_distances[representatives]
    order = np.argsort(-distances, kind="stable")
    return [int(i) for i in representatives[order[:n]]]
