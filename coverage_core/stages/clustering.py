"""Group knowledge-base chunks into topics with spherical K-means.

Chunks are compared by cosine similarity, so K-means runs on L2-normalised
rows and the learned centroids are put back on the unit sphere: downstream
code measures a question's distance to a topic as ``1 - q @ c``, which is a
true cosine distance only when ``c`` has unit length (the mean of unit
vectors is shorter than 1).

Cost grows with the corpus in three steps: scikit-learn's K-means on every
chunk (up to :data:`SAMPLE_FIT_ABOVE`), on a sample refined by scikit-learn
on every chunk (up to :data:`BLOCKED_REFINE_ABOVE`), and above that on a
larger sample refined by a few passes over the chunks in blocks, which
keeps a million 384-d chunks within ~5 s and ~200 MB above the vectors
themselves, 200,000 within ~1 s (benchmarks/bench_scale_topics.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.threads import in_order, workers_for
from coverage_core.validation import all_finite, unit_rows

MIN_DEFAULT_CLUSTERS = 2
MAX_DEFAULT_CLUSTERS = 50

# Above this many chunks the centroids are first found on a random sample and
# then refined on all chunks with a few full Lloyd iterations. K-means++ and
# the early iterations dominate the cost and gain little from the extra rows.
SAMPLE_FIT_ABOVE = 8000
SAMPLE_SIZE = 6000
REFINE_MAX_ITER = 10

BLOCKED_REFINE_ABOVE = 100_000
"""Above this many chunks K-means is fitted on a larger sample
(:data:`LARGE_SAMPLE_SHARE`) and refined on all chunks in blocks of
:data:`BLOCK_ROWS` rows (:func:`_lloyd_in_blocks`) instead of by
scikit-learn's ``KMeans``, which copies and centres the whole matrix (1.5 GB
more at a million 384-d chunks) and spends ten full passes. Up to this size
results are exactly those of the scikit-learn path, so the figures of small
and medium corpora do not move."""

LARGE_SAMPLE_SHARE = 10
"""On the blocked path K-means is fitted on one chunk in this many, at least
:data:`SAMPLE_SIZE` and at most :data:`LARGE_SAMPLE_MAX` (200,000 chunks:
20,000; a million: 40,000). Good sample centroids are what make the full
passes few: on 200,000 synthetic 384-d chunks (K = 50) a 20,000 sample
needed 2 passes and an 8,000 sample 10, and the result had 0.9 % lower
inertia than scikit-learn's 6,000 sample refined by ten full iterations
(benchmarks/bench_scale_topics.py data)."""

LARGE_SAMPLE_MAX = 40_000
"""The largest K-means sample (see :data:`LARGE_SAMPLE_SHARE`): about 2 s for
K = 50 at :data:`LARGE_SAMPLE_MAX_ITER` iterations on a 2-core machine."""

BLOCK_ROWS = 65_536
"""Rows handled at a time wherever a pass over all chunks would otherwise
build a temporary as large as the matrix (float64 copies, squared
differences, K-means scores): memory then stays bounded by this many rows,
about 200 MB of float64 at 384 dimensions. Corpora up to this size are done
in one block."""

REFINE_TOLERANCE = 1e-3
"""The blocked refinement stops once fewer than this share of chunks change
cluster in a pass (1,000 of a million), or once a pass lowers the inertia
by less than :data:`REFINE_INERTIA_TOLERANCE`."""

REFINE_INERTIA_TOLERANCE = 3e-4
"""The blocked refinement also stops once a pass lowers the inertia by less
than this share of it. On overlapping topics chunks keep trading places
between neighbouring clusters for ten passes and more (each a full pass
over the chunks) while the inertia falls by one or two parts in 1,000 in
all: on the bench_scale data (200 topic directions, K = 50) stopping here,
after two passes, left the inertia within 0.01-0.2 % of ten passes at
200,000 chunks and 0.04-0.07 % at a million (seeds 0-2; seed to seed the
ten-pass inertia itself varies by 0.1-0.15 %), with the same silhouette."""

LARGE_SAMPLE_MAX_ITER = 30
"""Lloyd iterations at most for the sample's K-means on the blocked path
(the estimator's ``max_iter`` if lower). The passes over all chunks that
follow finish the job; the sample's last iterations moved its centres by
little and, at 20,000 sample rows and K = 50, cost about a second."""


def default_n_clusters(n_chunks: int) -> int:
    """Number of topics for a corpus of ``n_chunks`` chunks.

    Rule: ``K = round(sqrt(n_chunks / 2))``, clipped to ``[2, 50]`` and never
    more than ``n_chunks`` (so 1 chunk gives 1 cluster).
    Why: topics grow with the corpus yet stay readable; docs/developing.md, *The number of topics*.

    Parameters
    ----------
    n_chunks : int, the chunks in the knowledge base; at least 1, else :class:`InputError`

    Returns
    -------
    n_clusters : int
    """
    if n_chunks < 1:
        raise InputError(f"n_chunks must be at least 1, got {n_chunks}.")
    k = round(math.sqrt(n_chunks / 2))
    k = min(max(k, MIN_DEFAULT_CLUSTERS), MAX_DEFAULT_CLUSTERS)
    return min(k, n_chunks)


def _count_distinct_rows(X: np.ndarray, k: int, random_state: int | None) -> int:
    """Number of distinct rows of X (n, d), exact whenever it is below ``k``.

    A random projection screens first (one matrix-vector product, block by
    block): rows whose projections differ by more than rounding noise are
    certainly distinct, so if that already gives ``k`` groups nothing more
    is needed. Otherwise the rows are compared exactly, byte for byte.
    Above :data:`BLOCKED_REFINE_ABOVE` rows the projection is computed in
    the rows' own precision (float32 embeddings: no float64 copy) with a
    rounding margin to match; the rows are unit length there.
    """
    direction = np.random.default_rng(random_state).normal(size=X.shape[1])
    if len(X) > BLOCKED_REFINE_ABOVE:
        # Worst-case rounding of a d-term dot product of a unit row: d * eps * |direction|.
        noise = X.shape[1] * np.finfo(X.dtype).eps * float(np.linalg.norm(direction))
        direction = direction.astype(X.dtype)
        parts = [X[start:stop] @ direction for start, stop in _blocks(len(X))]
    else:
        noise = 1e-9
        parts = [X[start:stop].astype(np.float64) @ direction for start, stop in _blocks(len(X))]
    projected = np.concatenate(parts)
    projected.sort()
    at_least = 1 + int(np.count_nonzero(np.diff(projected) > noise))
    if at_least >= k:
        return at_least
    return len({row.tobytes() for row in np.ascontiguousarray(X)})


def _blocks(n: int):
    """``(start, stop)`` of consecutive blocks of :data:`BLOCK_ROWS` rows covering ``n`` rows."""
    return ((start, min(start + BLOCK_ROWS, n)) for start in range(0, n, BLOCK_ROWS))


def _normalize_rows(X: np.ndarray, copy: bool = True) -> tuple[np.ndarray, int]:
    """Unit-length rows (``copy`` as in :func:`unit_rows`); zero rows stay zero. Returns (rows, n_zero_rows)."""
    n_zero = int(np.count_nonzero(~X.any(axis=1)))
    return unit_rows(X, copy=copy), n_zero


def _membership(labels: np.ndarray, k: int, dtype=np.float64) -> sparse.csr_matrix:
    """The (k, n) 0/1 matrix with a 1 at (label of row i, i)."""
    n = len(labels)
    return sparse.csr_matrix((np.ones(n, dtype=dtype), (labels, np.arange(n))), shape=(k, n))


def _lloyd_in_blocks(
    Xn: np.ndarray, centers: np.ndarray, max_iter: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Lloyd's K-means iterations over all rows, :data:`BLOCK_ROWS` at a time.

    The same steps as scikit-learn's ``KMeans(init=centers)``: each row goes
    to the centre with the least squared Euclidean distance, computed as
    ``|c|^2 - 2 x.c`` (``|x|^2`` is the same for every centre), then each
    centre moves to the mean of its rows; a centre left without rows stays
    where it was. Stops when fewer than :data:`REFINE_TOLERANCE` of the rows
    change cluster, when a pass lowers the inertia by less than
    :data:`REFINE_INERTIA_TOLERANCE` of it, or after ``max_iter`` passes.
    No copy of ``Xn`` is made: one block's scores are the only temporary.

    The inertia, the sum of squared distances of the rows to their label's
    mean, comes from the sums without another pass: over one cluster,
    ``sum |x - m|^2 = sum |x|^2 - n |m|^2``.

    Returns (labels of shape (n,), float64 sums of the rows of each label
    (k, d), inertia, passes run).
    """
    n, k = len(Xn), len(centers)
    centers = np.asarray(centers, dtype=Xn.dtype)
    labels = np.full(n, -1, dtype=np.int64)
    sums = np.zeros(centers.shape, dtype=np.float64)
    squared_lengths = 0.0
    inertia = math.inf
    passes = 0
    blocks = list(_blocks(n))
    for passes in range(1, max_iter + 1):
        sums = np.zeros(centers.shape, dtype=np.float64)
        half_squared_norms = 0.5 * np.einsum("ij,ij->i", centers, centers)
        n_changed = 0

        def assign(i: int, _):  # in_order returns before this pass's centres change
            start, stop = blocks[i]
            block = Xn[start:stop]
            scores = block @ centers.T
            scores -= half_squared_norms
            new = scores.argmax(axis=1)
            lengths = float(np.einsum("ij,ij->", block, block, dtype=np.float64)) if passes == 1 else 0.0
            # A sparse one-hot product: half the time of a dense one-hot BLAS
            # call on one thread, and no (k, rows) temporary.
            return new, _membership(new, k, block.dtype) @ block, lengths

        def gather(i: int, assigned) -> None:
            # Added in block order, so the sums, and the labels they lead to, do not depend on the threads.
            nonlocal n_changed, squared_lengths, sums
            start, stop = blocks[i]
            new, block_sums, lengths = assigned
            n_changed += int(np.count_nonzero(new != labels[start:stop]))
            labels[start:stop] = new
            sums += block_sums
            squared_lengths += lengths

        in_order(assign, gather, len(blocks), workers=workers_for(len(blocks)))
        counts = np.bincount(labels, minlength=k)
        filled = counts > 0
        centers = centers.copy()
        means = sums[filled] / counts[filled, None]
        centers[filled] = means.astype(centers.dtype)
        previous = inertia
        inertia = max(squared_lengths - float((counts[filled] * np.einsum("ij,ij->i", means, means)).sum()), 0.0)
        if n_changed <= REFINE_TOLERANCE * n or previous - inertia <= REFINE_INERTIA_TOLERANCE * inertia:
            break
    return labels, sums, inertia, passes


def _compact_labels(labels: np.ndarray, k: int, notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels renumbered so every label 0..K-1 is used, the old numbers kept, their sizes as floats).

    K-means can leave a cluster empty; the renumbering drops it with a note.
    """
    sizes = np.bincount(labels)
    used = np.flatnonzero(sizes)
    if len(used) < k:
        notes.append(
            f"{wording.count(k - len(used), 'cluster')} ended up empty; using {wording.count(len(used), 'cluster')}."
        )
    labels = (np.cumsum(sizes > 0) - 1)[labels]
    return labels, used, sizes[used].astype(np.float64)


def _cluster_means(
    Xn: np.ndarray, labels: np.ndarray, used: np.ndarray, counts: np.ndarray, refined: tuple | None
) -> tuple[np.ndarray, float]:
    """Each cluster's mean computed from its members, so the centroids agree with the final labels; and the inertia."""
    if refined is not None:
        # The blocked refinement summed each cluster's rows on its last
        # pass: no pass over the rows is needed for the means or the inertia.
        sums, inertia = refined
        return sums[used] / counts[:, None], inertia
    n, k = Xn.shape[0], len(used)
    sums = np.zeros((k, Xn.shape[1]))
    for start, stop in _blocks(n):
        sums += np.asarray(_membership(labels[start:stop], k) @ Xn[start:stop].astype(np.float64))
    means = sums / counts[:, None]
    inertia = sum(
        float(((Xn[start:stop] - means[labels[start:stop]]) ** 2).sum()) for start, stop in _blocks(n)
    )
    return means, inertia


def _centres(means: np.ndarray, Xn: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The means re-normalised to unit length; a mean of zero length is replaced by a member."""
    centers, n_degenerate = _normalize_rows(means)
    if n_degenerate:
        # Members cancel out exactly (e.g. only zero vectors): use a member.
        for c in np.flatnonzero(np.linalg.norm(centers, axis=1) == 0):
            centers[c] = Xn[np.flatnonzero(labels == c)[0]]
    return centers


class ChunkClusterer:
    """Spherical K-means over chunk embeddings.

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of clusters K. None uses :func:`default_n_clusters`. K is
        lowered (with a message in ``warnings_``) when there are fewer chunks,
        or fewer distinct chunk vectors, than K.
    random_state : int or None, default=0
        Seed for K-means++ and for the sample used on large corpora. With an
        int, results are identical between runs.
    n_init : int, default=1
        Number of K-means++ restarts; the run with the lowest inertia wins.
        One restart is within about 1 % of the inertia of ten on sentence
        embeddings and ten times cheaper.
    max_iter : int, default=100
        Maximum Lloyd iterations (embeddings of real documents converge in
        about 15-30); above :data:`BLOCKED_REFINE_ABOVE` chunks the sample's
        fit stops at :data:`LARGE_SAMPLE_MAX_ITER`.

    Attributes
    ----------
    labels_ : ndarray of shape (n_chunks,)
        Cluster of each chunk; every value in ``0 .. n_clusters_ - 1`` is used.
    cluster_centers_ : ndarray of shape (n_clusters_, n_features)
        Mean direction of each cluster, re-normalised to unit length.
    n_clusters_ : int
        The K actually used.
    inertia_ : float
        Sum of squared distances of the normalised chunks to their cluster's
        (un-normalised) mean.
    warnings_ : list of str
        Plain-language notes, e.g. ``"Only 7 chunks for 10 clusters; using 7
        clusters."``
    """

    def __init__(
        self,
        n_clusters: int | None = None,
        random_state: int | None = 0,
        n_init: int = 1,
        max_iter: int = 100,
    ):
        self.n_clusters = n_clusters
        self.random_state = random_state
        self.n_init = n_init
        self.max_iter = max_iter

    def fit(self, X) -> "ChunkClusterer":
        """Cluster the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_chunks, n_features)
            Chunk embeddings; rows need not be normalised.

        Returns
        -------
        self : ChunkClusterer
        """
        X = self._validated(X)
        notes: list[str] = []
        # On the blocked path rows that are unit length already are used as they
        # are: embeddings usually arrive so, and a copy is 1.5 GB at a million 384-d chunks.
        Xn, n_zero = _normalize_rows(X, copy=len(X) <= BLOCKED_REFINE_ABOVE)
        if n_zero:
            notes.append(
                f"{wording.count(n_zero, 'chunk vector')} {wording.plural(n_zero, 'has', 'have')} zero length and carry no "
                "direction; they are clustered as the zero vector."
            )
        k = self._usable_k(Xn, notes)
        refined = None
        if k == 1:
            labels = np.zeros(Xn.shape[0], dtype=np.int64)
        else:
            labels, refined, more = self._kmeans(Xn, k)
            notes.extend(more)
        labels, used, counts = _compact_labels(labels, k, notes)
        means, inertia = _cluster_means(Xn, labels, used, counts, refined)

        self.labels_ = labels.astype(np.int64)
        self.cluster_centers_ = _centres(means, Xn, labels).astype(X.dtype, copy=False)
        self.n_clusters_ = int(len(used))
        self.inertia_ = float(inertia)
        self.warnings_ = notes
        return self

    def _validated(self, X) -> np.ndarray:
        """``X`` as a finite float array; InputError for a bad ``X`` or parameter."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise InputError(
                "X must be a 2-D array with at least one chunk and one feature, "
                f"got shape {X.shape}."
            )
        if not np.issubdtype(X.dtype, np.floating):
            X = X.astype(np.float64)
        if not all_finite(X):
            raise InputError("X contains NaN or infinite values; check the embeddings.")
        if self.n_clusters is not None and (
            not isinstance(self.n_clusters, (int, np.integer)) or self.n_clusters < 1
        ):
            raise InputError(
                f"n_clusters must be None or an integer >= 1, got {self.n_clusters!r}. "
                "Valid values are None (automatic) or 1, 2, 3, ..."
            )
        if not isinstance(self.n_init, (int, np.integer)) or self.n_init < 1:
            raise InputError(f"n_init must be an integer >= 1, got {self.n_init!r}.")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise InputError(f"max_iter must be an integer >= 1, got {self.max_iter!r}.")
        return X

    def _usable_k(self, Xn: np.ndarray, notes: list[str]) -> int:
        """K as asked (or by default), lowered to the number of chunks and of distinct chunk vectors."""
        n = Xn.shape[0]
        k = default_n_clusters(n) if self.n_clusters is None else int(self.n_clusters)
        if n < k:
            notes.append(f"Only {n} chunks for {k} clusters; using {n} clusters.")
            k = n
        # Exact duplicates (the same passage twice) cannot fill separate clusters.
        n_distinct = _count_distinct_rows(Xn, k, self.random_state)
        if n_distinct < k:
            notes.append(
                f"Only {n_distinct} distinct chunk vectors for {k} clusters "
                f"(the others are duplicates); using {n_distinct} clusters."
            )
            k = n_distinct
        return k

    def fit_predict(self, X) -> np.ndarray:
        """Fit and return ``labels_`` (shape (n_chunks,))."""
        return self.fit(X).labels_

    def _sample_centres(self, sample: np.ndarray, k: int, max_iter: int) -> np.ndarray:
        """K-means centres fitted on ``sample`` with this estimator's settings: the seed of the large-corpus paths."""
        return KMeans(
            n_clusters=k, n_init=self.n_init, max_iter=max_iter, random_state=self.random_state,
        ).fit(sample).cluster_centers_

    def _kmeans(self, Xn: np.ndarray, k: int) -> tuple[np.ndarray, tuple[np.ndarray, float] | None, list[str]]:
        """Labels, the blocked path's (per-label row sums, inertia) (None otherwise), and notes."""
        notes: list[str] = []
        n = Xn.shape[0]
        # K-means++ makes many small BLAS calls; multi-threaded BLAS spins on
        # them and, on a busy 2-core machine, made the seeding 10x slower.
        # Lloyd's iterations are parallelised by scikit-learn's OpenMP code.
        with warnings.catch_warnings(record=True) as caught, threadpool_limits(
            limits=1, user_api="blas"
        ):
            warnings.simplefilter("always", ConvergenceWarning)
            if n > BLOCKED_REFINE_ABOVE:
                # Very large corpus: K-means on a larger sample, then a few
                # blocked passes over every chunk. One BLAS thread here too:
                # on a busy machine two threads made the passes slower, not faster.
                rng = np.random.default_rng(self.random_state)
                size = min(LARGE_SAMPLE_MAX, max(SAMPLE_SIZE, n // LARGE_SAMPLE_SHARE))
                sample = np.sort(rng.choice(n, size=size, replace=False))
                seed = self._sample_centres(Xn[sample], k, min(self.max_iter, LARGE_SAMPLE_MAX_ITER))
                labels, sums, inertia, _ = _lloyd_in_blocks(Xn, seed, REFINE_MAX_ITER)
                refined = (sums, inertia)
            elif n > SAMPLE_FIT_ABOVE:
                # Large corpus: K-means on a sample, then refine on everything.
                rng = np.random.default_rng(self.random_state)
                sample = rng.choice(n, size=SAMPLE_SIZE, replace=False)
                seed = self._sample_centres(Xn[sample], k, self.max_iter)
                model = KMeans(
                    n_clusters=k,
                    init=seed,
                    n_init=1,
                    max_iter=REFINE_MAX_ITER,
                    random_state=self.random_state,
                ).fit(Xn)
                labels, refined = model.labels_, None
            else:
                model = KMeans(
                    n_clusters=k,
                    n_init=self.n_init,
                    max_iter=self.max_iter,
                    random_state=self.random_state,
                ).fit(Xn)
                labels, refined = model.labels_, None
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                notes.append(f"K-means: {w.message}")
        return labels, refined, notes
