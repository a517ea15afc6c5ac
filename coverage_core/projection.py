"""2-D maps of chunks and questions for the dashboard.

The map is computed apart from the metrics: it depends only on the vectors
(and, for sampling, the cluster labels), so moving K or a threshold never
recomputes it. Large corpora are sampled evenly across clusters *for the map
only*; every metric still uses every chunk. When the questions alone would
take more than half of the points, they are sampled at random too, so the
chunks keep at least half of the map. Only the drawn points are normalised
and projected: a million chunks cost no more than a few thousand.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from coverage_core.validation import unit_rows

# Sized so that any corpus maps in about 15 s on a 2-core machine.
DEFAULT_MAX_POINTS = 5000


@dataclass(frozen=True)
class Projection:
    """Coordinates of a 2-D map.

    ``chunk_index`` holds the indices (into the full chunk list) of the chunks
    drawn; ``chunk_xy`` is aligned with it. ``question_index`` likewise for
    the questions (None: every question, in order); ``question_xy`` is
    aligned with it.
    """

    method: str
    chunk_index: np.ndarray
    chunk_xy: np.ndarray
    question_xy: np.ndarray
    n_chunks_total: int
    seconds: float
    question_index: np.ndarray | None = None
    n_questions_total: int | None = None

    @property
    def questions_sampled(self) -> bool:
        return self.question_index is not None and len(self.question_index) < (self.n_questions_total or 0)

    @property
    def sampled(self) -> bool:
        return len(self.chunk_index) < self.n_chunks_total or self.questions_sampled

    @property
    def caption(self) -> str:
        """What the map shows, and what was sampled for it."""
        if self.questions_sampled:
            return (
                f"Map shows {len(self.chunk_index):,} of {self.n_chunks_total:,} chunks (sampled evenly across "
                f"clusters) and {len(self.question_index):,} of {self.n_questions_total:,} questions (sampled at "
                "random); metrics use every chunk and question."
            )
        if self.sampled:
            return (
                f"Map shows {len(self.chunk_index):,} of {self.n_chunks_total:,} chunks, "
                "sampled evenly across clusters; metrics use every chunk."
            )
        return f"Map shows all {self.n_chunks_total:,} chunks."


def sample_evenly(labels: np.ndarray, budget: int, random_state: int | None = 0) -> np.ndarray:
    """Indices of at most ``budget`` items, spread evenly across clusters.

    Each cluster gets an equal share (small clusters keep all their items and
    pass the rest of their share on), so small topics stay visible on the map
    instead of vanishing under proportional sampling.

    Parameters
    ----------
    labels : ndarray of shape (n,)
    budget : int, at least 1

    Returns
    -------
    ndarray of sorted indices, shape (min(n, budget),)
    """
    labels = np.asarray(labels)
    if budget < 1:
        raise ValueError(f"budget must be at least 1, got {budget}.")
    if len(labels) <= budget:
        return np.arange(len(labels))
    rng = np.random.default_rng(random_state)
    # One stable sort groups every cluster's members in index order (a scan of
    # all labels per cluster would cost K passes over a million labels).
    order = np.argsort(labels, kind="stable")
    clusters, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    quota = np.zeros(len(clusters), dtype=int)
    remaining = budget
    open_clusters = list(np.argsort(counts))
    while remaining > 0 and open_clusters:
        share = max(remaining // len(open_clusters), 1)
        still_open = []
        for position in open_clusters:
            take = min(share, counts[position] - quota[position], remaining)
            quota[position] += take
            remaining -= take
            if quota[position] < counts[position]:
                still_open.append(position)
        open_clusters = still_open
    chosen = [
        rng.choice(order[starts[position] : starts[position] + counts[position]], size=quota[position], replace=False)
        for position in range(len(clusters))
        if quota[position]
    ]
    return np.sort(np.concatenate(chosen))


def _sample_questions(n_questions: int, n_chunks: int, budget: int, random_state: int | None) -> np.ndarray:
    """Sorted indices of the questions to draw: all of them unless they would
    take more than ``max(budget // 2, budget - n_chunks)`` points, else that
    many at random (seeded)."""
    allowed = max(budget // 2, budget - n_chunks, 1)
    if n_questions <= allowed:
        return np.arange(n_questions)
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n_questions, size=allowed, replace=False))


def _tsne(points: np.ndarray, random_state: int | None) -> np.ndarray:
    from openTSNE import TSNE
    from sklearn.decomposition import PCA

    n = len(points)
    if n < 4:
        # t-SNE needs neighbours; a handful of points is shown by PCA instead.
        return _pca(points)
    # On unit vectors squared Euclidean distance is 2 x cosine distance, so
    # neighbourhoods match the cosine metric; 50 PCA components keep nearly all
    # of the neighbour structure and make the neighbour search much cheaper.
    n_components = min(50, points.shape[1], n - 1)
    reduced = PCA(n_components=n_components, random_state=random_state).fit_transform(points)
    perplexity = float(min(30.0, max(2.0, (n - 1) / 3.0)))
    # Speed choices, measured on 3,300 points on 2 cores: exact neighbours are
    # quicker than approximate search at this size; FFT gradients with two
    # points per interpolation interval halve the cost of the later
    # iterations (where the map spreads out) at no visible loss; 125 + 250
    # iterations separate topics as clearly as the default 250 + 500.
    embedding = TSNE(
        n_components=2,
        perplexity=perplexity,
        metric="euclidean",
        initialization="pca",
        neighbors="exact" if n <= 10_000 else "annoy",
        negative_gradient_method="fft",
        ints_in_interval=2,
        random_state=random_state if random_state is not None else 0,
        # One thread: the map is the same (checked: identical coordinates),
        # and on a busy 2-core machine two threads waiting on each other took
        # 35 s for 5,000 points where one took 13 s.
        n_jobs=1,
        early_exaggeration_iter=125,
        n_iter=250,
        verbose=False,
    ).fit(reduced)
    return np.asarray(embedding, dtype=np.float64)


def _pca(points: np.ndarray) -> np.ndarray:
    from sklearn.decomposition import PCA

    if len(points) < 2:
        return np.zeros((len(points), 2))
    xy = PCA(n_components=min(2, points.shape[1], len(points)), random_state=0).fit_transform(points)
    if xy.shape[1] < 2:
        xy = np.column_stack([xy, np.zeros(len(xy))])
    return xy


def _mds(points: np.ndarray, random_state: int | None) -> np.ndarray:
    from sklearn.manifold import MDS
    from sklearn.metrics.pairwise import cosine_distances

    if len(points) < 3:
        return _pca(points)
    dissimilarity = cosine_distances(points)
    mds = MDS(
        n_components=2,
        metric="precomputed",
        random_state=random_state,
        n_init=1,
        max_iter=300,
        init="classical_mds",
    )
    return mds.fit_transform(dissimilarity)


def _place(points: np.ndarray, method: str, random_state: int | None) -> np.ndarray:
    """2-D coordinates of the unit ``points`` by ``method``."""
    if method == "tsne":
        return _tsne(points, random_state)
    if method == "mds":
        return _mds(points, random_state)
    return _pca(points)


def project_2d(
    chunk_vectors: np.ndarray,
    question_vectors: np.ndarray,
    chunk_labels: np.ndarray,
    *,
    method: str = "tsne",
    max_points: int = DEFAULT_MAX_POINTS,
    random_state: int | None = 0,
) -> Projection:
    """Place chunks and questions on one 2-D map.

    Parameters
    ----------
    chunk_vectors : ndarray of shape (n_chunks, d)
    question_vectors : ndarray of shape (n_questions, d)
    chunk_labels : ndarray of shape (n_chunks,)
        Cluster of each chunk, used to sample evenly when the corpus is large.
    method : {"tsne", "mds", "pca"}
        t-SNE (seeded, cosine neighbourhoods) is the default view. MDS on
        1 - cosine dissimilarities is offered for users who know it; it is
        quadratic in memory, so it gets a smaller sampling budget.
    max_points : int
        Chunks plus questions drawn at most. Questions keep up to half of
        it (more when there are few chunks) and are sampled at random beyond
        that; chunks are sampled to fit the rest (at least 200 of them).
        What was sampled is in ``Projection.caption``.
    """
    chunk_vectors = np.asarray(chunk_vectors)
    n_chunks = len(chunk_vectors)
    question_vectors = np.asarray(question_vectors, dtype=np.float32).reshape(-1, chunk_vectors.shape[1])
    if method not in {"tsne", "mds", "pca"}:
        raise ValueError(f"method must be 'tsne', 'mds' or 'pca', got {method!r}.")
    budget = max_points if method != "mds" else min(max_points, 2000)
    question_index = _sample_questions(len(question_vectors), n_chunks, budget, random_state)
    chunk_budget = max(budget - len(question_index), min(n_chunks, 200))
    chunk_index = sample_evenly(chunk_labels, chunk_budget, random_state)
    # Only the drawn rows are converted and normalised (row by row, so the
    # result is the same as normalising everything first).
    points = np.vstack(
        [
            unit_rows(np.asarray(chunk_vectors[chunk_index], dtype=np.float32)),
            unit_rows(question_vectors[question_index]),
        ]
    )
    started = time.perf_counter()
    xy = _place(points, method, random_state)
    seconds = time.perf_counter() - started
    return Projection(
        method=method,
        chunk_index=chunk_index,
        chunk_xy=xy[: len(chunk_index)],
        question_xy=xy[len(chunk_index):],
        n_chunks_total=n_chunks,
        seconds=seconds,
        question_index=question_index,
        n_questions_total=len(question_vectors),
    )
