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

Inputs are validated first, and every function that compares vectors makes
its own blockwise pass over the chunk x question similarities
(:mod:`coverage_core.blockwise`), so 20,000 chunks x 2,000 questions
never materialise the full similarity matrix. A pipeline wanting several of
them should make that pass once: :func:`coverage_core.stages.similarity.scan_similarities`
yields the same values as :func:`nearest_question_distances`,
:func:`question_support` and the multi-coverage functions together.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from coverage_core.blockwise import scan_blocks
from coverage_core.ceiling import testable_share_max
from coverage_core.errors import InputError
from coverage_core.validation import check_scalar, check_vectors, unit_rows

__all__ = [
    "balanced_coverage",
    "basic_coverage",
    "cluster_coverages",
    "document_coverage",
    "multi_n_coverage",
    "multi_threshold_coverage",
    "nearest_question_distances",
    "question_support",
    "question_targets",
    "questions_covering_clusters",
    "retrieved_tested_chunks",
    "testable_share_max",
    "weighted_coverage",
]


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


# --------------------------------------------------------------------------
# distances
# --------------------------------------------------------------------------


def nearest_question_distances(
    chunk_vectors, question_vectors, block_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine distance from every chunk to its nearest question: ``mindist(d_i) = min_j dist(chunk_i, question_j)``.

    Blockwise over chunk rows, so only ``block_size x m`` similarities exist at a time. Raises InputError on
    invalid vectors or differing dimensions. Why: every coverage score reads it (docs/method.md, *Coverage scores*).

    Parameters
    ----------
    chunk_vectors : array-like of shape (n, d)
    question_vectors : array-like of shape (m, d), the inlier questions only (off-topic ones should not count)
        ``m`` may be 0.
    block_size : int, optional, chunk rows per block; by default about 32 MB of similarities

    Returns
    -------
    min_distances : ndarray of shape (n,), float64 in [0, 2]; all 1.0 with no questions, so every score is 0
    nearest : ndarray of shape (n,), int, the nearest question's index; -1 when there are no questions
    """
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunks.shape[1])
    n = chunks.shape[0]
    if questions.shape[0] == 0:
        return np.ones(n), np.full(n, -1, dtype=np.intp)
    found = scan_blocks(chunks, unit_rows(questions), block_size)
    return np.clip(1.0 - found["row_sim"], 0.0, 2.0), found["row_idx"]


# --------------------------------------------------------------------------
# scores from min_distances
# --------------------------------------------------------------------------


def basic_coverage(min_distances) -> float:
    """Mean closeness of the chunks to their nearest question: ``basic = 1 - (1/n) * sum_i mindist(d_i)``.

    Raises InputError unless given distances in [0, 2]. Why: the plainest score (docs/method.md, *Coverage scores*).

    Parameters
    ----------
    min_distances : array-like of shape (n,), from :func:`nearest_question_distances`

    Returns
    -------
    float, 1.0 when every chunk coincides with a question, 0.0 with no questions.
    """
    distances = _min_distances(min_distances)
    return float(1.0 - distances.mean())


def weighted_coverage(min_distances, labels) -> float:
    """Cluster-weighted coverage, as defined by the method's paper.

    ``weighted = sum_k (|C_k|/n) * (1 - (1/|C_k|) * sum_{i in C_k} mindist(d_i))``

    When the clusters partition the chunks (every chunk has exactly one label, as here) it is *identical*
    to :func:`basic_coverage`; :func:`balanced_coverage` counts every topic the same. Raises InputError on
    malformed inputs. Why reported: docs/method.md, *`weighted` equals `basic` exactly*.

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


_SUPPORT_TOLERANCE = 1e-6  # float32 rounding: a similarity equal to τ reaches it


def _support_threshold(support_threshold: float) -> float:
    if support_threshold is None:  # no level: every similarity reaches it (see retrieved_tested_chunks)
        return -np.inf
    if not np.isfinite(support_threshold) or not -1.0 <= support_threshold <= 1.0:
        raise InputError(f"support_threshold is a cosine similarity in [-1, 1]; got {support_threshold}.")
    return float(support_threshold)


def tested_chunks(min_distances, support_threshold: float) -> np.ndarray:
    """Which chunks are *reached*, a bool array of shape (n,): ``reached_i = (1 - mindist(d_i)) >= τ``.

    However many other chunks are reached too; a chunk with no inlier question (``mindist = 1``) is unreached
    for any τ > 0. Raises InputError on invalid distances or τ outside [-1, 1]. Why kept: for callers with
    distances alone; the analysis's *tested* is the stricter :func:`retrieved_tested_chunks` (docs/verdicts.md,
    *Tested share*).

    Parameters
    ----------
    min_distances : array-like of shape (n,), the distance to the nearest inlier question
    support_threshold : float, τ, a cosine similarity in [-1, 1] (:mod:`coverage_core.stages.calibration`)
    """
    distances = _min_distances(min_distances)
    return (1.0 - distances) >= _support_threshold(support_threshold) - _SUPPORT_TOLERANCE


def retrieved_tested_chunks(
    top_chunks, top_similarities, n_chunks: int, support_threshold: float | None, k: int, inliers=None
) -> np.ndarray:
    """Which chunks are *tested*: retrieved by some inlier question among its top ``k``, at similarity >= τ.

    ``tested_i = exists inlier j: i in topk_j and sim(q_j, c_i) >= τ``, a bool array of shape (n_chunks,);
    ``topk_j`` ties at the cut: lower chunk index first, as the retrieval check ranks; a similarity equal to
    τ reaches it (float32 rounding absorbed). Raises InputError on malformed or misaligned inputs. Why: a
    question tests the passages a retriever hands the model for it (docs/verdicts.md, *Tested share*).

    Parameters
    ----------
    top_chunks, top_similarities : array-like of shape (m, w), int and cosines, w >= min(k, n_chunks)
        Each question's most similar chunks, most similar first; only the first ``k`` columns are read.
    n_chunks, k : int, the number of chunks ``n``, and k >= 1
    support_threshold : float, τ in [-1, 1], or None: no level, the whole top ``k`` tested (τ not calibrated)
    inliers : array-like of shape (m,), bool, optional, the questions that count (default: all)
    """
    tau = _support_threshold(support_threshold)
    chunks, sims, mask = _top_lists(top_chunks, top_similarities, n_chunks, k, inliers)
    tested = np.zeros(int(n_chunks), dtype=bool)
    chunks, sims = chunks[mask], sims[mask]
    tested[chunks[sims >= tau - _SUPPORT_TOLERANCE]] = True
    return tested


def _top_lists(top_chunks, top_similarities, n_chunks: int, k: int, inliers) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each question's first ``min(k, n_chunks)`` chunks and similarities, and the inlier mask, validated."""
    check_scalar(k, "k", int, min_val=1, hint="it is the number of passages retrieved per question")
    chunks = np.asarray(top_chunks)
    sims = np.asarray(top_similarities, dtype=np.float64)
    if chunks.ndim != 2 or sims.shape != chunks.shape:
        raise InputError(
            f"top_chunks and top_similarities must be (questions, ranks) arrays of one shape; "
            f"got {chunks.shape} and {sims.shape}."
        )
    m = chunks.shape[0]
    width = min(int(k), int(n_chunks))
    if m and chunks.shape[1] < width:
        raise InputError(f"top_chunks keeps {chunks.shape[1]} chunks per question; k = {k} needs {width}.")
    mask = np.ones(m, dtype=bool) if inliers is None else np.asarray(inliers, dtype=bool)
    if mask.shape != (m,):
        raise InputError(f"inliers must be a boolean mask with one entry per question ({m}).")
    if m and chunks.size and (chunks[:, :width].min() < 0 or chunks[:, :width].max() >= n_chunks):
        raise InputError(f"top_chunks must be chunk indices in 0..{int(n_chunks) - 1}.")
    return chunks[:, :width].astype(np.intp), sims[:, :width], mask


def tested_share_of(tested) -> float:
    """Share of all chunks that are tested: ``n_tested / n`` (NaN with no chunks).

    An absolute figure: "58% of the knowledge base is tested" means 58% of
    the passages are retrieved by a question at τ (:func:`retrieved_tested_chunks`),
    whatever the other scores are.
    """
    tested = np.asarray(tested, dtype=bool)
    return float(tested.mean()) if tested.size else float("nan")


def tested_share(min_distances, support_threshold: float) -> float:
    """:func:`tested_share_of` the chunks reached by the plain rule :func:`tested_chunks`."""
    return tested_share_of(tested_chunks(min_distances, support_threshold))


def cluster_tested_of(tested, labels, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n_tested, tested_share)`` of each cluster from a per-chunk ``tested`` mask; the share is NaN
    for an empty cluster."""
    tested = np.asarray(tested, dtype=bool)
    labels = _labels(labels, tested.shape[0], n_clusters)
    counts = np.bincount(labels, minlength=n_clusters)
    n_tested = np.bincount(labels, weights=tested.astype(float), minlength=n_clusters).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(counts > 0, n_tested / np.maximum(counts, 1), np.nan)
    return n_tested, share


def cluster_tested(min_distances, labels, n_clusters: int, support_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cluster_tested_of` the chunks reached by the plain rule :func:`tested_chunks`."""
    return cluster_tested_of(tested_chunks(min_distances, support_threshold), labels, n_clusters)


def balanced_coverage(min_distances, labels, n_clusters: int) -> float:
    """Unweighted mean of the per-cluster coverages, a float: ``balanced = (1/K') * sum_k coverage_k``.

    The sum runs over the ``K'`` non-empty clusters (empty ones are left out). Raises InputError on malformed
    inputs. Why: every topic weighs the same regardless of its size, so a small topic no question touches
    pulls the score down, where basic/weighted coverage would barely notice it.

    Parameters
    ----------
    min_distances, labels : array-like of shape (n,); labels int in 0..n_clusters-1
    n_clusters : int
    """
    return float(np.nanmean(cluster_coverages(min_distances, labels, n_clusters)))


# --------------------------------------------------------------------------
# multi-topic coverage (questions cover clusters via centroids)
# --------------------------------------------------------------------------


def multi_coverage_inputs(chunk_vectors, question_vectors, labels, centroids):
    """The validated inputs of the multi-coverage rules: unit chunks (n, d),
    unit questions (m, d), labels (n,) in 0..K-1 and unit centroids (K, d)."""
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    dim = chunks.shape[1]
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=dim), copy=False)
    # Centroids of unit vectors are shorter than 1; normalising them keeps
    # 1 - q.c a true cosine distance, so thresholds mean the same everywhere.
    centres = unit_rows(check_vectors(centroids, "centroids", dim=dim), copy=False)
    labels = _labels(labels, chunks.shape[0], centres.shape[0])
    return chunks, questions, labels, centres


def _centroid_distances(questions: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(m, K) cosine distances of unit questions to unit centroids."""
    return np.clip(1.0 - (questions @ centres.T).astype(np.float64), 0.0, 2.0)


COVER_THRESHOLD_RANGE = (0.0, 2.0)
"""A cosine distance from a question to a cluster centre: above 0, at most 2."""


def check_cover_threshold(threshold: float, name: str = "threshold", field: str = "multi_threshold") -> float:
    """``threshold`` as a float, or InputError unless it is within :data:`COVER_THRESHOLD_RANGE`."""
    low, high = COVER_THRESHOLD_RANGE
    return float(check_scalar(threshold, name, float, min_val=low, max_val=high, include_boundaries="right",
                              hint="it is a cosine distance, sensible from 0.15 to 0.8", field=field))


def check_n_nearest(n_nearest: int, name: str = "n_nearest", field: str = "multi_n") -> int:
    """``n_nearest`` as an int, or InputError unless it is a whole number of clusters >= 1."""
    return int(check_scalar(n_nearest, name, int, min_val=1, field=field))


def threshold_covers(questions, centres, threshold) -> np.ndarray:
    """(K, m): question j covers cluster k iff dist(q_j, c_k) < threshold."""
    return (_centroid_distances(questions, centres) < threshold).T


def n_nearest_covers(questions, centres, n_nearest) -> np.ndarray:
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


def covering_scores(cover_sim: np.ndarray, labels: np.ndarray, n_clusters: int) -> tuple[float, np.ndarray]:
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
    """Coverage ``(score, per_cluster)`` where question ``q`` covers cluster ``k`` iff ``dist(q, c_k) < threshold``.

    ``coverage_k = 1 - (1/|C_k|) * sum_{i in C_k} min_{q covers k} dist(d_i, q)``, 0 when no question covers
    ``k``, NaN for a cluster with no chunks; ``score = sum_k (|C_k|/n) * coverage_k``; ``c_k`` the centroid
    normalised to unit length. Raises InputError on malformed inputs or a threshold outside (0, 2].
    Why: a question only counts for the clusters it is about (docs/method.md, *Coverage scores*).

    Parameters
    ----------
    chunk_vectors, question_vectors : array-like of shape (n, d) and (m, d), inlier questions; m may be 0
    labels, centroids : array-like of shape (n,), int in 0..K-1, and (K, d), any length (normalised here)
    threshold : float in (0, 2], a cosine distance; sensible values are 0.15-0.8
    block_size : int, optional, chunk rows per block
    """
    threshold = check_cover_threshold(threshold)
    return _multi_coverage(
        chunk_vectors, question_vectors, labels, centroids, block_size,
        lambda questions, centres: threshold_covers(questions, centres, threshold),
    )


def multi_n_coverage(
    chunk_vectors, question_vectors, labels, centroids, n_nearest: int, block_size: int | None = None
) -> tuple[float, np.ndarray]:
    """Coverage ``(score, per_cluster)`` where each question covers its ``n_nearest`` closest clusters.

    Same per-cluster and total formulas and outputs as :func:`multi_threshold_coverage`, but question ``q``
    covers the ``N`` clusters whose unit centroids are nearest to it (``N`` larger than ``K`` is clipped to
    ``K``, where every question covers every cluster and the score equals basic coverage). Raises InputError
    on malformed inputs or ``n_nearest`` < 1. Why: as :func:`multi_threshold_coverage`, with a number of
    topics in place of a distance (docs/method.md, *Coverage scores*).

    Parameters
    ----------
    chunk_vectors, question_vectors, labels, centroids, block_size : as in :func:`multi_threshold_coverage`
    n_nearest : int >= 1
    """
    n_nearest = check_n_nearest(n_nearest)
    return _multi_coverage(
        chunk_vectors, question_vectors, labels, centroids, block_size,
        lambda questions, centres: n_nearest_covers(questions, centres, n_nearest),
    )


def _multi_coverage(chunk_vectors, question_vectors, labels, centroids, block_size, covers_of):
    """Score and per-cluster coverage when question j covers cluster k where
    ``covers_of(questions, centres)[k, j]`` (a (K, m) boolean array) is True."""
    chunks, questions, labels, centres = multi_coverage_inputs(chunk_vectors, question_vectors, labels, centroids)
    cover_sim = np.full(chunks.shape[0], np.nan)  # no question: nothing covers any cluster
    if questions.shape[0]:
        cover = covers_of(questions, centres)
        cover_sim = scan_blocks(chunks, questions, block_size, labels=labels, covers=[cover])["cover_sim"][0]
    return covering_scores(cover_sim, labels, centres.shape[0])


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
    threshold = check_cover_threshold(threshold)
    centres = unit_rows(check_vectors(centroids, "centroids"), copy=False)
    questions = unit_rows(
        check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=centres.shape[1]), copy=False
    )
    return threshold_covers(questions, centres, threshold).sum(axis=1).astype(np.intp)


# --------------------------------------------------------------------------
# documents, questions
# --------------------------------------------------------------------------


def question_targets(
    top_chunks,
    top_similarities,
    chunk_documents: Sequence[str],
    support_threshold: float | None,
    k: int,
    inliers=None,
    *,
    margin: float,
    near_copy=None,
) -> list[tuple[str, ...]]:
    """The documents each question *targets*: those holding one of its best tested passages.

    ``targets_j = { doc(i) : i in topk_j, s_ji >= τ, s_ji >= s_j1 - margin or near_copy(i1_j, i) }``, with
    ``topk_j`` as in :func:`retrieved_tested_chunks`, ``s_ji`` their similarities and ``s_j1`` its best one.
    A question screened out (``inliers`` False), or whose best passage is below τ, targets nothing. Raises
    InputError on malformed inputs. Why: docs/verdicts.md, *Targeting: the margin and near-copies*.

    Parameters
    ----------
    top_chunks, top_similarities, k, inliers : as in :func:`retrieved_tested_chunks`
    chunk_documents : sequence of n str, the document of each chunk
    support_threshold : float, τ, or None: no level (``τ = -inf``), used when τ could not be calibrated
    margin : float >= 0; the analysis passes :func:`coverage_core.verdicts.target_margin`
    near_copy : callable ``near_copy(best, i) -> bool``, optional, whether chunk ``i`` holds a near-copy of
        chunk ``best``; such a chunk counts however far its wording moved its similarity

    Returns
    -------
    list of m tuples of document names, each in rank order without repeats.
    """
    tau = _support_threshold(support_threshold) - _SUPPORT_TOLERANCE
    documents = list(chunk_documents)
    chunks, sims, mask = _top_lists(top_chunks, top_similarities, len(documents), k, inliers)
    cut = np.maximum(tau, sims[:, :1] - margin - _SUPPORT_TOLERANCE)
    keep = (sims >= cut) & mask[:, None]
    if near_copy is not None:
        for row in np.flatnonzero(keep[:, 0]):
            for rank in np.flatnonzero(~keep[row] & (sims[row] >= tau)):
                keep[row, rank] = near_copy(int(chunks[row, 0]), int(chunks[row, rank]))
    return [tuple(dict.fromkeys(documents[i] for i in row[chosen])) for row, chosen in zip(chunks, keep)]


def document_coverage(
    min_distances,
    chunk_documents: Sequence[str],
    *,
    n_mads: float = 2.5,
    min_gap: float = 0.1,
    tested=None,
    support_threshold: float | None = None,
) -> pd.DataFrame:
    """Coverage of each source document, with untested, under-tested and far-less-covered documents flagged.

    ``coverage_doc`` is the mean over the document's chunks of ``1 - mindist(d_i)``; ``is_low``:
    ``coverage_doc < med - max(n_mads * 1.4826 * MAD, min_gap)`` (median and MAD of the document coverages;
    nothing flagged with fewer than 3 documents). Columns: always ``document``, ``n_chunks``, ``coverage``,
    ``is_low``; with ``tested`` (or else τ and the plain rule :func:`tested_chunks`) ``n_tested`` and
    ``tested_share = n_tested / n_chunks`` (the verdicts' columns are added by
    :func:`coverage_core.verdicts.with_document_verdicts`).
    Raises InputError when the lengths differ or a distance is invalid. Why: docs/method.md, *Per-document flags*.

    Parameters
    ----------
    min_distances : array-like of shape (n,)
    chunk_documents : sequence of n str, the document of each chunk
    n_mads, min_gap : float, the cut of ``is_low``
    tested : array-like of shape (n,), bool, optional, from :func:`retrieved_tested_chunks`
    support_threshold : float, optional; read only without ``tested``

    Returns
    -------
    DataFrame, one row per document, lowest coverage first (ties keep the order of first appearance).
    """
    distances = _min_distances(min_distances)
    documents = list(chunk_documents)
    if len(documents) != distances.shape[0]:
        raise InputError(
            f"chunk_documents has {len(documents)} entries but there are {distances.shape[0]} chunks."
        )
    frame = pd.DataFrame({"document": pd.Series(documents, dtype=object), "coverage": 1.0 - distances})
    table = _per_document(frame)
    table["is_low"] = _far_below_the_rest(table["coverage"].to_numpy(), n_mads, min_gap)
    if tested is None and support_threshold is not None:
        tested = tested_chunks(distances, support_threshold)
    if tested is not None:
        tested = np.asarray(tested, dtype=bool)
        if tested.shape != distances.shape:
            raise InputError(f"tested must hold one value per chunk ({distances.shape[0]}); got shape {tested.shape}.")
        _add_tested_columns(table, frame["document"], tested)
    return table.sort_values("coverage", kind="stable").reset_index(drop=True)


def _per_document(frame: pd.DataFrame) -> pd.DataFrame:
    """``document``, ``n_chunks`` and mean ``coverage`` of each document, in order of first appearance."""
    table = (
        frame.groupby("document", sort=False)
        .agg(n_chunks=("coverage", "size"), coverage=("coverage", "mean"))
        .reset_index()
    )
    table["n_chunks"] = table["n_chunks"].astype(np.int64)
    return table


def _far_below_the_rest(values: np.ndarray, n_mads: float, min_gap: float) -> np.ndarray:
    """``values < median - max(n_mads * 1.4826 * MAD, min_gap)``; all False with fewer than 3 values."""
    if len(values) < 3:
        return np.zeros(len(values), dtype=bool)
    median = np.median(values)
    mad = np.median(np.abs(values - median))
    return values < median - max(n_mads * 1.4826 * mad, min_gap)


def _add_tested_columns(table: pd.DataFrame, chunk_documents: pd.Series, tested: np.ndarray):
    """Add ``n_tested`` and ``tested_share`` to the per-document ``table``."""
    n_tested = pd.Series(tested).groupby(chunk_documents, sort=False).sum()
    table["n_tested"] = n_tested.reindex(table["document"]).to_numpy().astype(np.int64)
    table["tested_share"] = table["n_tested"] / table["n_chunks"]


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
    chunks = unit_rows(check_vectors(chunk_vectors, "chunk_vectors"), copy=False)
    questions = check_vectors(question_vectors, "question_vectors", allow_empty=True, dim=chunks.shape[1])
    if questions.shape[0] == 0:
        return np.zeros(0), np.zeros(0, dtype=np.intp)
    found = scan_blocks(chunks, unit_rows(questions), block_size, want_questions=True)
    return found["col_sim"], found["col_idx"]
