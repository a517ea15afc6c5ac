"""Off-topic question screening, referenced to the knowledge base.

A test question is off-topic when the knowledge base has nothing about it.
The method this product follows suggests LocalOutlierFactor on the question
embeddings alone; that measures whether a question is *unusual among the
questions*, not whether the *documents* support it, and it fails exactly
where it matters: questions about one missing topic arrive in a group, form
a dense cluster of their own and look perfectly normal to LOF. On the
wiki-qa data with four articles removed, LOF-on-questions ranks the
orphaned questions at chance (AUROC about 0.5; see
``benchmarks/eval_screening.py``). So the score here is built from the
question-to-chunk similarities; the LOF score is still reported as
``lof_score_`` for users who know the method, but no decision rests on it.
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.neighbors import LocalOutlierFactor
from threadpoolctl import threadpool_limits

# Fewer questions than this give no usable "bulk" for the robust z-score, so
# nothing is flagged automatically (users can still force questions out).
MIN_QUESTIONS_FOR_DECISION = 5

# Chunk-side density: each chunk's mean cosine to its DENSITY_NEIGHBORS
# nearest chunks, searched within its cluster, among at most MAX_REFERENCE
# chunks sampled from that cluster (k is scaled down with the sample).
DENSITY_NEIGHBORS = 20
MAX_REFERENCE = 2000

# Question-side smoothing: average with the QUESTION_NEIGHBORS most similar
# questions.
QUESTION_NEIGHBORS = 10

# Rows of questions per block of the question x chunk similarity matrix
# (block x n_chunks float32: 512 x 20,000 is 40 MB).
BLOCK_ROWS = 512

STRICTNESS_RANGE = (0.0, 1.0)

# Score spreads below this are float rounding (scores are cosine differences
# of order 0.1), i.e. the scores are all the same.
TIED_SCALE = 1e-6


def strictness_to_z(strictness: float) -> float:
    """Robust z-score above which a question is flagged.

    ``z = 3.5 - 2.5 * strictness``: strictness 0 flags only extreme questions
    (z > 3.5), the default 0.5 flags z > 2.25, strictness 1 flags z > 1.0.
    """
    _check_strictness(strictness)
    return 3.5 - 2.5 * float(strictness)


def _check_strictness(strictness) -> None:
    lo, hi = STRICTNESS_RANGE
    if not isinstance(strictness, (int, float, np.integer, np.floating)) or not (
        lo <= float(strictness) <= hi
    ):
        raise ValueError(
            f"strictness must be a number between {lo} and {hi}, got {strictness!r}. "
            "Valid values are 0 (flag only extreme questions) to 1 (flag many); "
            "the default is 0.5."
        )


def _as_matrix(X, name: str) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (n, n_features), got shape {X.shape}.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float32)
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite values; check the embeddings.")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (X / norms).astype(np.float32, copy=False)


def _top_k_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k largest values of each row of ``sims`` (n, m), 1 <= k <= m."""
    if k == 1:
        return sims.max(axis=1)
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
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        if len(members) < 2:
            continue
        if len(members) > max_reference:
            reference = np.sort(rng.choice(members, size=max_reference, replace=False))
        else:
            reference = members
        k = max(1, round(min(n_neighbors, len(members) - 1) * len(reference) / len(members)))
        k = min(k, len(reference) - 1)
        ref_vectors = chunk_vectors[reference]
        position = np.full(n, -1, dtype=np.int64)
        position[reference] = np.arange(len(reference))
        for start in range(0, len(members), BLOCK_ROWS):
            block = members[start : start + BLOCK_ROWS]
            sims = chunk_vectors[block] @ ref_vectors.T
            # A chunk is not its own neighbour.
            j = position[block]
            rows = np.flatnonzero(j >= 0)
            sims[rows, j[rows]] = -np.inf
            density[block] = _top_k_mean(sims, k)
    return density


def _nearest_questions(Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each question's k most similar other questions, most similar first.

    Returns indices and cosine similarities, both of shape (n, k).
    """
    n = Q.shape[0]
    index = np.empty((n, k), dtype=np.int64)
    similarity = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, BLOCK_ROWS):
        sims = Q[start : start + BLOCK_ROWS] @ Q.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf  # not its own neighbour
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        index[start : start + len(rows)] = np.take_along_axis(top, order, axis=1)
        similarity[start : start + len(rows)] = np.take_along_axis(top_sims, order, axis=1)
    return index, similarity


def _lof_scores(
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


def apply_overrides(
    is_outlier: np.ndarray,
    rows: Sequence[int],
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> np.ndarray:
    """Apply the user's decisions on top of the automatic screening.

    Parameters
    ----------
    is_outlier : ndarray of shape (n_questions,), bool
        Automatic decision (True = off-topic, left out of the analysis).
    rows : sequence of int, length n_questions
        0-based row of each question in the user's file.
    force_include : sequence of int
        File rows to keep as on-topic whatever the screening says.
    force_exclude : sequence of int
        File rows to treat as off-topic whatever the screening says. A row in
        both lists is excluded (the more cautious choice).

    Returns
    -------
    is_outlier : ndarray of shape (n_questions,), bool
        A new array; rows not present in ``rows`` are ignored.
    """
    decision = np.array(is_outlier, dtype=bool, copy=True)
    rows = np.asarray(rows)
    if decision.shape != rows.shape:
        raise ValueError(
            f"is_outlier and rows must have the same length, got {decision.shape[0]} "
            f"and {rows.shape[0]}."
        )
    if len(force_include):
        decision[np.isin(rows, np.asarray(list(force_include)))] = False
    if len(force_exclude):
        decision[np.isin(rows, np.asarray(list(force_exclude)))] = True
    return decision


class QuestionScreener:
    """Score every question for being off-topic, judged against the documents.

    Method (each step measured on the eight wiki-qa splits of
    ``benchmarks/eval_screening.py``, four articles removed per split; the
    figures are mean AUROC over the splits):

    1. **Support from the documents.** ``support(q) = max_c [cos(q, c) -
       density_weight * density(c)]``, where ``density(c)`` is the mean
       cosine of chunk ``c`` to its 20 nearest chunks (searched within its
       cluster). Plain best cosine (``density_weight=0``) already beats
       LOF-on-questions by far (0.90 vs 0.52). Subtracting the density asks
       more of a match where the documents crowd together: in a region with
       many similar chunks (several instrument or language articles) being
       somewhat close to one of them is weak evidence, while a chunk with no
       close siblings is matched only by questions about it (0.90 -> 0.92).
    2. **Smoothing over neighbouring questions.** Being off-topic is a
       property of a topic, and questions about one topic come in groups, so
       each question's own score ``-support(q)`` is averaged with that of its
       10 most similar questions: ``score = (1 - w) * own + w * mean of
       neighbours``, ``w = neighbor_weight`` (scaled down when there are
       fewer than 10 other questions). This removes much per-question noise
       (0.92 -> 0.95, worst split 0.93). The price: a lone off-topic question
       among on-topic neighbours is pulled towards them (isolated off-topic
       questions: 0.89 vs 0.92 for plain best cosine); set
       ``neighbor_weight=0`` if off-topic questions are expected to be
       isolated.
    3. **Data-adaptive decision.** Scores are compared with the bulk of the
       questions by a robust z-score, ``z = (score - median) / (1.4826 *
       MAD)``, so the cut adapts to the corpus and the embedding model
       without assuming how many questions are off-topic. A question is
       flagged when ``z > 3.5 - 2.5 * strictness``; the default (z > 2.25)
       had the best mean F1 of the cuts tried. A two-component Gaussian
       mixture on the scores did worse (F1 0.49 vs 0.62).

    Tried and dropped: mean of the top-k chunk similarities (worse than the
    best one alone), LOF fitted on the chunks with ``novelty=True`` (0.89,
    and slow on 20,000 chunks), normalising the support per cluster, the
    margin between the best and second-best cluster, similarity to cluster
    centroids, centring the embeddings, mutual-neighbour smoothing, and
    adding the question-side density (better F1 for groups, much worse for
    isolated off-topic questions).

    Known limits (embeddings only): questions without context ("What
    happened in 1887?") find no specific chunk and are often flagged
    although a document mentions the year; a missing topic whose close
    cousin is present (Finnish or Swedish questions against the other
    language articles) is well supported and mostly missed. On wiki-qa the
    default decision reaches F1 0.62 on average, and no threshold on this
    score does better than 0.66.

    Parameters
    ----------
    strictness : float, default=0.5
        In ``[0, 1]``; higher flags more. Maps to the robust z-score cut
        ``3.5 - 2.5 * strictness`` (0 -> 3.5, 0.5 -> 2.25, 1 -> 1.0).
    n_neighbors : int, default=20
        Neighbours for the informational LOF on question embeddings.
        Lowered to ``n_questions - 1`` when there are fewer questions.
    random_state : int or None, default=0
        Seed for the chunk sample used by the density estimate on large
        clusters.
    density_weight : float, default=0.5
        Weight of the chunk-side density in step 1 (0 = plain best cosine).
    neighbor_weight : float, default=0.5
        Weight ``w`` of the neighbouring questions in step 2, in ``[0, 1)``.

    Attributes
    ----------
    outlier_score_ : ndarray of shape (n_questions,)
        Higher = more likely off-topic.
    is_outlier_ : ndarray of shape (n_questions,), bool
        Decision at ``strictness``.
    threshold_ : float
        Score above which a question is flagged (``inf`` when no decision is
        possible).
    lof_score_ : ndarray of shape (n_questions,)
        LocalOutlierFactor on question embeddings alone (about 1 = inlier,
        larger = more outlying); NaN with fewer than 2 questions.
        Informational only.
    max_similarity_ : ndarray of shape (n_questions,)
        Best cosine similarity of each question to any chunk.
    nearest_chunk_ : ndarray of shape (n_questions,), int
        Index of that chunk.
    center_, scale_ : float
        Median and robust spread (1.4826 * MAD) of ``outlier_score_``.
    warnings_ : list of str
        Plain-language notes about degenerate inputs.
    """

    def __init__(
        self,
        strictness: float = 0.5,
        n_neighbors: int = 20,
        random_state: int | None = 0,
        density_weight: float = 0.5,
        neighbor_weight: float = 0.5,
    ):
        self.strictness = strictness
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.density_weight = density_weight
        self.neighbor_weight = neighbor_weight

    def fit(self, question_vectors, chunk_vectors, chunk_labels=None) -> "QuestionScreener":
        """Score and screen the questions.

        Parameters
        ----------
        question_vectors : array-like of shape (n_questions, n_features)
        chunk_vectors : array-like of shape (n_chunks, n_features)
            Embeddings from the same model; rows need not be normalised.
        chunk_labels : array-like of shape (n_chunks,), optional
            Topic cluster of each chunk (``ChunkClusterer.labels_``). Only
            used to make the density estimate fast; None is fine for small
            corpora.

        Returns
        -------
        self : QuestionScreener
        """
        _check_strictness(self.strictness)
        if not isinstance(self.n_neighbors, (int, np.integer)) or self.n_neighbors < 1:
            raise ValueError(
                f"n_neighbors must be an integer >= 1, got {self.n_neighbors!r}. "
                "Valid values are 1, 2, 3, ...; the default is 20."
            )
        if not 0 <= self.density_weight <= 1:
            raise ValueError(
                f"density_weight must be between 0 and 1, got {self.density_weight!r}. "
                "Valid values are 0 (plain best cosine) to 1; the default is 0.5."
            )
        if not 0 <= self.neighbor_weight < 1:
            raise ValueError(
                f"neighbor_weight must be at least 0 and below 1, got "
                f"{self.neighbor_weight!r}. Valid values are 0 (no smoothing) up to "
                "but excluding 1; the default is 0.5."
            )
        Q = _as_matrix(question_vectors, "question_vectors")
        C = _as_matrix(chunk_vectors, "chunk_vectors")
        if Q.shape[1] != C.shape[1]:
            raise ValueError(
                f"Questions have {Q.shape[1]} features but chunks have {C.shape[1]}; "
                "embed both with the same model."
            )
        if C.shape[0] < 1:
            raise ValueError("chunk_vectors is empty; at least one chunk is needed.")
        if chunk_labels is not None:
            chunk_labels = np.asarray(chunk_labels)
            if chunk_labels.shape != (C.shape[0],):
                raise ValueError(
                    f"chunk_labels must have one label per chunk ({C.shape[0]}), "
                    f"got shape {chunk_labels.shape}."
                )
        notes: list[str] = []
        n = Q.shape[0]

        # Step 1: support from the documents, one block of questions at a time.
        if self.density_weight > 0:
            # Many small products: multi-threaded BLAS spins on them and was
            # 4x slower than one thread on a busy 2-core machine.
            with threadpool_limits(limits=1, user_api="blas"):
                density = chunk_density(C, chunk_labels, random_state=self.random_state)
            penalty = self.density_weight * density
        else:
            penalty = None
        max_sim = np.empty(n, dtype=np.float32)
        nearest = np.empty(n, dtype=np.int64)
        support = np.empty(n, dtype=np.float32)
        for start in range(0, n, BLOCK_ROWS):
            sims = Q[start : start + BLOCK_ROWS] @ C.T
            idx = sims.argmax(axis=1)
            nearest[start : start + BLOCK_ROWS] = idx
            max_sim[start : start + BLOCK_ROWS] = sims[np.arange(len(idx)), idx]
            if penalty is not None:
                sims -= penalty
                support[start : start + BLOCK_ROWS] = sims.max(axis=1)
            else:
                support[start : start + BLOCK_ROWS] = max_sim[start : start + BLOCK_ROWS]
        own = -support.astype(np.float64)

        # Step 2: average with the most similar questions.
        if n >= 2:
            k_lof = self.n_neighbors
            if k_lof >= n:
                notes.append(
                    f"n_neighbors={k_lof} is not below the number of questions ({n}); "
                    f"LOF uses {n - 1} neighbours."
                )
                k_lof = n - 1
            k = min(QUESTION_NEIGHBORS, n - 1)
            # One neighbour search serves both the smoothing and the LOF.
            with threadpool_limits(limits=1, user_api="blas"):
                neighbours, similarity = _nearest_questions(Q, max(k, k_lof))
            # With fewer neighbours than usual their average is trusted less
            # (two questions would otherwise end up with the same score).
            weight = self.neighbor_weight * k / QUESTION_NEIGHBORS
            score = (1 - weight) * own + weight * own[neighbours[:, :k]].mean(axis=1)
            self.lof_score_ = _lof_scores(neighbours, similarity, k_lof, notes)
        else:
            score = own
            self.lof_score_ = np.full(n, np.nan)
            notes.append(
                f"LOF needs at least 2 questions, got {n}; lof_score_ is NaN."
            )

        # Step 3: robust z-score against the bulk of the questions.
        self.center_ = float(np.median(score)) if n else 0.0
        scale = 1.4826 * float(np.median(np.abs(score - self.center_))) if n else 0.0
        if scale < TIED_SCALE and n:
            # More than half the scores tie; fall back to the mean deviation.
            scale = 1.2533 * float(np.mean(np.abs(score - self.center_)))
        if scale < TIED_SCALE:
            scale = 0.0  # float rounding only: all scores are the same
        self.scale_ = scale
        if n < MIN_QUESTIONS_FOR_DECISION:
            notes.append(
                f"Only {n} question(s): too few to tell what is usual, so none is "
                "flagged automatically; exclude off-topic questions by hand."
            )
        elif scale == 0.0:
            notes.append("All questions score the same; none is flagged as off-topic.")

        self.outlier_score_ = score
        self.max_similarity_ = max_sim
        self.nearest_chunk_ = nearest
        self.n_questions_ = n
        self.warnings_ = notes
        self.is_outlier_ = self.decide(self.strictness)
        self.threshold_ = self._threshold(self.strictness)
        return self

    def _threshold(self, strictness: float) -> float:
        if self.n_questions_ < MIN_QUESTIONS_FOR_DECISION or self.scale_ == 0.0:
            return float("inf")
        return self.center_ + strictness_to_z(strictness) * self.scale_

    def decide(self, strictness: float) -> np.ndarray:
        """Decision for another strictness, from the stored scores (no refit).

        Parameters
        ----------
        strictness : float in [0, 1]

        Returns
        -------
        is_outlier : ndarray of shape (n_questions,), bool
            Flags at a higher strictness are a superset of those at a lower one.
        """
        _check_strictness(strictness)
        return self.outlier_score_ > self._threshold(strictness)
