"""Coverage metrics against values worked out by hand on tiny 2-d examples."""

from types import SimpleNamespace

import numpy as np
import pytest

from coverage_core import duplicates as D, metrics as M, verdicts
from coverage_core.errors import InputError
from coverage_core.stages import similarity as S

ATOL = 1e-6  # similarities are computed in float32
R = 1 - np.sqrt(0.5)  # cosine distance between vectors 45 degrees apart = 0.292893...

# Four chunks and two questions in the plane. Lengths vary on purpose:
# the metrics must normalise.
CHUNKS = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [0.0, -3.0]])
QUESTIONS = np.array([[1.0, 0.0], [1.0, 1.0]])
LABELS = np.array([0, 0, 1, 1])
# Unnormalised on purpose; directions (1, 0) and (0, -1).
CENTROIDS = np.array([[3.0, 0.0], [0.0, -1.0]])


def close(a, b):
    return np.allclose(a, b, atol=ATOL, equal_nan=True)


# --------------------------------------------------------------------------
# nearest_question_distances, basic, weighted, cluster, balanced
# --------------------------------------------------------------------------


def test_nearest_question_distances_by_hand():
    # chunk (1,0):  to q0 (1,0) 0;            to q1 (1,1) R       -> 0, q0
    # chunk (0,1):  to q0 1 - 0 = 1;          to q1 R             -> R, q1
    # chunk (2,2):  to q0 R;                  to q1 0             -> 0, q1
    # chunk (0,-3): to q0 1;  to q1 1 - (-0.7071) = 1.7071        -> 1, q0
    distances, nearest = M.nearest_question_distances(CHUNKS, QUESTIONS)
    assert close(distances, [0.0, R, 0.0, 1.0])
    assert nearest.tolist() == [0, 1, 1, 0]


def test_basic_coverage_by_hand():
    # 1 - (0 + 0.292893 + 0 + 1) / 4 = 1 - 0.323223 = 0.676777
    assert np.isclose(M.basic_coverage([0.0, R, 0.0, 1.0]), 0.676777, atol=ATOL)


def test_weighted_coverage_by_hand():
    # cluster 0 = chunks 0,1: 1 - (0 + 0.292893)/2 = 0.853553, weight 2/4
    # cluster 1 = chunks 2,3: 1 - (0 + 1)/2        = 0.5,      weight 2/4
    # 0.5 * 0.853553 + 0.5 * 0.5 = 0.676777 (= basic, as it must)
    assert np.isclose(M.weighted_coverage([0.0, R, 0.0, 1.0], LABELS), 0.676777, atol=ATOL)


def test_cluster_coverages_by_hand_with_empty_cluster():
    # clusters 0 and 1 as above; cluster 2 has no chunk -> NaN
    per_cluster = M.cluster_coverages([0.0, R, 0.0, 1.0], LABELS, 3)
    assert close(per_cluster, [0.853553, 0.5, np.nan])
    # balanced leaves the empty cluster out: (0.853553 + 0.5) / 2 = 0.676777
    assert np.isclose(M.balanced_coverage([0.0, R, 0.0, 1.0], LABELS, 3), 0.676777, atol=ATOL)


def test_balanced_coverage_by_hand_unequal_clusters():
    # labels [0,0,0,1]: cluster 0 = 1 - (0 + 0.292893 + 0)/3 = 0.902369
    #                   cluster 1 = 1 - 1 = 0
    # balanced = (0.902369 + 0) / 2 = 0.451184; basic stays 0.676777
    distances = [0.0, R, 0.0, 1.0]
    assert np.isclose(M.balanced_coverage(distances, [0, 0, 0, 1], 2), 0.451184, atol=ATOL)
    assert np.isclose(M.basic_coverage(distances), 0.676777, atol=ATOL)


def test_balanced_differs_from_basic_when_small_cluster_uncovered():
    # Nine chunks at (1,0) in cluster 0, one at (0,1) in cluster 1; the only
    # question is (1,0). mindist = nine 0s and one 1.
    chunks = np.array([[1.0, 0.0]] * 9 + [[0.0, 1.0]])
    labels = np.array([0] * 9 + [1])
    distances, _ = M.nearest_question_distances(chunks, [[1.0, 0.0]])
    # basic = weighted = 1 - 1/10 = 0.9: the missing topic barely shows
    assert np.isclose(M.basic_coverage(distances), 0.9, atol=ATOL)
    assert np.isclose(M.weighted_coverage(distances, labels), 0.9, atol=ATOL)
    # balanced = (1 + 0) / 2 = 0.5: it does
    assert np.isclose(M.balanced_coverage(distances, labels, 2), 0.5, atol=ATOL)


@pytest.mark.parametrize("seed", range(40))
def test_weighted_equals_basic_identity(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    n_clusters = int(rng.integers(1, 20))
    distances = rng.uniform(0, 2, n)
    labels = rng.integers(0, n_clusters, n)
    assert np.isclose(M.weighted_coverage(distances, labels), M.basic_coverage(distances))


# --------------------------------------------------------------------------
# multi-threshold / multi-N
# --------------------------------------------------------------------------


def test_multi_threshold_by_hand_uncovered_cluster_contributes_zero():
    # Question-to-centroid distances (centroid directions (1,0) and (0,-1)):
    #   q0 (1,0): 0 to c0, 1 to c1;  q1 (1,1): R=0.2929 to c0, 1.7071 to c1.
    # threshold 0.5: both questions cover cluster 0, none covers cluster 1.
    #   cluster 0 (chunks (1,0),(0,1)): min dist 0 and R -> 1 - R/2 = 0.853553
    #   cluster 1: no covering question -> 0
    #   score = 2/4 * 0.853553 + 2/4 * 0 = 0.426777
    score, per_cluster = M.multi_threshold_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 0.5)
    assert np.isclose(score, 0.426777, atol=ATOL)
    assert close(per_cluster, [0.853553, 0.0])


def test_multi_threshold_by_hand_tight_threshold():
    # threshold 0.25: only q0 covers cluster 0 (q1 is 0.2929 away).
    #   cluster 0: chunk (1,0) -> 0, chunk (0,1) -> 1 -> 1 - 0.5 = 0.5
    #   score = 2/4 * 0.5 = 0.25
    score, per_cluster = M.multi_threshold_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 0.25)
    assert np.isclose(score, 0.25, atol=ATOL)
    assert close(per_cluster, [0.5, 0.0])


def test_multi_n_by_hand_n1_vs_nk():
    # N=1: q0 nearest centroid c0 (0 vs 1); q1 nearest c0 (0.29 vs 1.71):
    #   same covering as threshold 0.5 -> 0.426777, per cluster [0.853553, 0]
    score, per_cluster = M.multi_n_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 1)
    assert np.isclose(score, 0.426777, atol=ATOL)
    assert close(per_cluster, [0.853553, 0.0])
    # N=K=2: every question covers every cluster -> basic = 0.676777
    #   per cluster: [1 - R/2, 1 - (0 + 1)/2] = [0.853553, 0.5]
    score, per_cluster = M.multi_n_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 2)
    assert np.isclose(score, 0.676777, atol=ATOL)
    assert close(per_cluster, [0.853553, 0.5])
    # N > K is clipped to K
    assert np.isclose(M.multi_n_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 7)[0], 0.676777, atol=ATOL)


def test_questions_covering_clusters_by_hand():
    # threshold 0.5: q0 and q1 cover cluster 0; none covers cluster 1
    assert M.questions_covering_clusters(QUESTIONS, CENTROIDS, 0.5).tolist() == [2, 0]
    # threshold 0.25: only q0 (distance 0 < 0.25; q1 is 0.2929)
    assert M.questions_covering_clusters(QUESTIONS, CENTROIDS, 0.25).tolist() == [1, 0]


def _random_problem(seed, n=150, m=30, d=8, k=5):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, d))
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)  # no empty cluster
    chunks = centres[labels] + 0.7 * rng.standard_normal((n, d))
    questions = centres[rng.integers(0, k, m)] + 0.7 * rng.standard_normal((m, d))
    unit = chunks / np.linalg.norm(chunks, axis=1, keepdims=True)
    # mean of unit vectors: shorter than 1, as a clusterer produces
    centroids = np.stack([unit[labels == c].mean(axis=0) for c in range(k)])
    return chunks, questions, labels, centroids


@pytest.mark.parametrize("seed", range(5))
def test_unnormalized_centroids_give_same_answer(seed):
    chunks, questions, labels, centroids = _random_problem(seed)
    assert np.all(np.linalg.norm(centroids, axis=1) < 0.99)
    unit = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
    scaled = centroids * np.arange(1, len(centroids) + 1)[:, None] * 0.3
    for threshold in (0.3, 0.5, 0.7):
        reference = M.multi_threshold_coverage(chunks, questions, labels, unit, threshold)
        for variant in (centroids, scaled):
            got = M.multi_threshold_coverage(chunks, questions, labels, variant, threshold)
            assert np.isclose(got[0], reference[0]) and close(got[1], reference[1])
        assert (
            M.questions_covering_clusters(questions, centroids, threshold).tolist()
            == M.questions_covering_clusters(questions, unit, threshold).tolist()
        )
    for n_nearest in (1, 2, 3):
        reference = M.multi_n_coverage(chunks, questions, labels, unit, n_nearest)
        got = M.multi_n_coverage(chunks, questions, labels, scaled, n_nearest)
        assert np.isclose(got[0], reference[0]) and close(got[1], reference[1])


def _naive_multi(chunks, questions, labels, centroids, covers):
    """The definition, written out with a dense distance matrix."""
    cu = chunks / np.linalg.norm(chunks, axis=1, keepdims=True)
    qu = questions / np.linalg.norm(questions, axis=1, keepdims=True)
    dist = 1 - cu @ qu.T
    per = []
    for k in range(len(centroids)):
        members = labels == k
        covering = covers[:, k]
        per.append(0.0 if not covering.any() else 1 - dist[members][:, covering].min(axis=1).mean())
    per = np.array(per)
    sizes = np.bincount(labels, minlength=len(centroids))
    return float(np.sum(sizes / len(labels) * per)), per


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("block_size", [1, 7, None])
def test_multi_metrics_match_dense_definition(seed, block_size):
    chunks, questions, labels, centroids = _random_problem(seed)
    cu = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
    qu = questions / np.linalg.norm(questions, axis=1, keepdims=True)
    q_to_c = 1 - qu @ cu.T
    for threshold in (0.2, 0.5, 0.9):
        expected = _naive_multi(chunks, questions, labels, centroids, q_to_c < threshold)
        got = M.multi_threshold_coverage(chunks, questions, labels, centroids, threshold, block_size=block_size)
        assert np.isclose(got[0], expected[0], atol=ATOL) and close(got[1], expected[1])
    for n_nearest in (1, 2, 5):
        nearest = np.argsort(q_to_c, axis=1)[:, :n_nearest]
        covers = np.zeros_like(q_to_c, dtype=bool)
        np.put_along_axis(covers, nearest, True, axis=1)
        expected = _naive_multi(chunks, questions, labels, centroids, covers)
        got = M.multi_n_coverage(chunks, questions, labels, centroids, n_nearest, block_size=block_size)
        assert np.isclose(got[0], expected[0], atol=ATOL) and close(got[1], expected[1])


# --------------------------------------------------------------------------
# blockwise == dense, combined scan
# --------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [1, 3, 16, 1000])
def test_blockwise_equals_dense(block_size):
    from sklearn.metrics.pairwise import cosine_distances

    rng = np.random.default_rng(1)
    chunks, questions = rng.standard_normal((137, 12)), rng.standard_normal((29, 12))
    dense = cosine_distances(chunks, questions)

    distances, nearest = M.nearest_question_distances(chunks, questions, block_size=block_size)
    assert np.allclose(distances, dense.min(axis=1), atol=ATOL)
    assert nearest.tolist() == dense.argmin(axis=1).tolist()

    similarity, nearest_chunk = M.question_support(questions, chunks, block_size=block_size)
    assert np.allclose(similarity, 1 - dense.min(axis=0), atol=ATOL)
    assert nearest_chunk.tolist() == dense.argmin(axis=0).tolist()


def test_scan_similarities_matches_single_functions():
    chunks, questions, labels, centroids = _random_problem(3, n=300, m=40)
    scan = S.scan_similarities(chunks, questions, labels, centroids, threshold=0.5, n_nearest=2, block_size=17)
    distances, nearest = M.nearest_question_distances(chunks, questions)
    assert np.allclose(scan.min_distances, distances, atol=ATOL)
    assert scan.nearest_question.tolist() == nearest.tolist()
    similarity, nearest_chunk = M.question_support(questions, chunks)
    assert np.allclose(scan.question_similarity, similarity, atol=ATOL)
    assert scan.nearest_chunk.tolist() == nearest_chunk.tolist()
    score, per = M.multi_threshold_coverage(chunks, questions, labels, centroids, 0.5)
    assert np.isclose(scan.multi_threshold_score, score) and close(scan.multi_threshold_per_cluster, per)
    score, per = M.multi_n_coverage(chunks, questions, labels, centroids, 2)
    assert np.isclose(scan.multi_n_score, score) and close(scan.multi_n_per_cluster, per)
    plain = S.scan_similarities(chunks, questions)
    assert plain.multi_threshold_score is None and plain.multi_n_score is None


@pytest.mark.parametrize("block_size", [5, None])
def test_scan_similarities_with_outlier_questions(block_size):
    chunks, questions, labels, centroids = _random_problem(4, n=200, m=30)
    inliers = np.random.default_rng(0).random(30) < 0.6
    inlier_positions = np.flatnonzero(inliers)
    scan = S.scan_similarities(
        chunks, questions, labels, centroids, inliers=inliers, threshold=0.6, n_nearest=1, block_size=block_size
    )
    # coverage uses the inliers only ...
    distances, nearest = M.nearest_question_distances(chunks, questions[inliers])
    assert np.allclose(scan.min_distances, distances, atol=ATOL)
    assert scan.nearest_question.tolist() == inlier_positions[nearest].tolist()  # indexes all questions
    score, per = M.multi_threshold_coverage(chunks, questions[inliers], labels, centroids, 0.6)
    assert np.isclose(scan.multi_threshold_score, score) and close(scan.multi_threshold_per_cluster, per)
    score, per = M.multi_n_coverage(chunks, questions[inliers], labels, centroids, 1)
    assert np.isclose(scan.multi_n_score, score) and close(scan.multi_n_per_cluster, per)
    # ... support is reported for every question
    similarity, nearest_chunk = M.question_support(questions, chunks)
    assert np.allclose(scan.question_similarity, similarity, atol=ATOL)
    assert scan.nearest_chunk.tolist() == nearest_chunk.tolist()

    none = S.scan_similarities(chunks, questions, labels, centroids, inliers=np.zeros(30, bool), threshold=0.6)
    assert none.min_distances.tolist() == [1.0] * 200 and set(none.nearest_question.tolist()) == {-1}
    assert none.multi_threshold_score == 0.0
    assert np.allclose(none.question_similarity, similarity, atol=ATOL)
    with pytest.raises(InputError, match="boolean mask"):
        S.scan_similarities(chunks, questions, inliers=[1, 0])


@pytest.mark.parametrize("depth", [1, 3, 64])
@pytest.mark.parametrize("inlier_share", [1.0, 0.6, 0.08, 0.0])
def test_scan_from_the_nearest_questions_index_matches_the_full_scan(depth, inlier_share):
    # depth 1 and 3 with few inliers force the direct fallback for most
    # chunks; depth 64 > m keeps every question (no fallback).
    chunks, questions, labels, centroids = _random_problem(5, n=400, m=50)
    inliers = np.random.default_rng(1).random(50) < inlier_share
    index = S.nearest_questions(chunks, questions, depth=depth, block_size=23)
    for kwargs in ({}, {"threshold": 0.6, "n_nearest": 2}, {"threshold": 0.2, "n_nearest": 1}):
        args = (chunks, questions, labels, centroids) if kwargs else (chunks, questions)
        full = S.scan_similarities(*args, inliers=inliers, **kwargs)
        fast = S.scan_similarities(*args, inliers=inliers, index=index, **kwargs)
        assert np.allclose(fast.min_distances, full.min_distances, atol=ATOL)
        assert fast.nearest_question.tolist() == full.nearest_question.tolist()
        assert np.allclose(fast.question_similarity, full.question_similarity, atol=ATOL)
        assert fast.nearest_chunk.tolist() == full.nearest_chunk.tolist()
        for name in ("multi_threshold_score", "multi_n_score"):
            assert (getattr(fast, name) is None) == (getattr(full, name) is None)
            if getattr(full, name) is not None:
                assert np.isclose(getattr(fast, name), getattr(full, name), atol=ATOL)
        if kwargs:
            assert close(fast.multi_threshold_per_cluster, full.multi_threshold_per_cluster)
            assert close(fast.multi_n_per_cluster, full.multi_n_per_cluster)


def test_nearest_questions_lists_each_chunks_best_questions_in_order():
    chunks, questions, *_ = _random_problem(6, n=120, m=30)
    from sklearn.metrics.pairwise import cosine_distances

    index = S.nearest_questions(chunks, questions, depth=4, block_size=7)
    sims = 1 - cosine_distances(chunks, questions)
    expected = np.argsort(-sims, axis=1, kind="stable")[:, :4]
    assert index.indices.tolist() == expected.tolist()
    assert np.allclose(index.similarities, np.take_along_axis(sims, expected, axis=1), atol=ATOL)
    assert index.shape == (120, 30) and not index.complete
    assert S.nearest_questions(chunks, questions, depth=500).complete


def test_nearest_questions_index_rejects_bad_depth_and_other_vectors():
    chunks, questions, labels, centroids = _random_problem(7, n=50, m=10)
    with pytest.raises(InputError, match="depth"):
        S.nearest_questions(chunks, questions, depth=0)
    index = S.nearest_questions(chunks, questions)
    with pytest.raises(InputError, match="rebuild it"):
        S.scan_similarities(chunks, questions[:5], index=index)


# --------------------------------------------------------------------------
# zero questions, documents, support, near-duplicates
# --------------------------------------------------------------------------


def test_zero_questions_give_zero_coverage_everywhere():
    none = np.zeros((0, 2))
    distances, nearest = M.nearest_question_distances(CHUNKS, none)
    assert distances.tolist() == [1.0] * 4 and nearest.tolist() == [-1] * 4
    assert M.basic_coverage(distances) == 0.0
    assert M.weighted_coverage(distances, LABELS) == 0.0
    assert M.balanced_coverage(distances, LABELS, 2) == 0.0
    assert M.cluster_coverages(distances, LABELS, 2).tolist() == [0.0, 0.0]
    assert M.multi_threshold_coverage(CHUNKS, none, LABELS, CENTROIDS, 0.5)[0] == 0.0
    assert M.multi_n_coverage(CHUNKS, none, LABELS, CENTROIDS, 1)[1].tolist() == [0.0, 0.0]
    assert M.questions_covering_clusters(none, CENTROIDS, 0.5).tolist() == [0, 0]
    similarity, nearest_chunk = M.question_support(none, CHUNKS)
    assert similarity.shape == (0,) and nearest_chunk.shape == (0,)
    assert D.duplicate_groups(none).n_groups == 0
    assert M.document_coverage(distances, ["a", "a", "b", "c"])["coverage"].tolist() == [0.0, 0.0, 0.0]
    scan = S.scan_similarities(CHUNKS, [], LABELS, CENTROIDS, threshold=0.5, n_nearest=1)
    assert scan.multi_threshold_score == 0.0 and scan.multi_n_score == 0.0


def test_document_coverage_by_hand():
    # A: mindist 0.1, 0.3 -> coverage mean(0.9, 0.7) = 0.8
    # B: 0.15             -> 0.85
    # C: 0.9, 0.7         -> mean(0.1, 0.3) = 0.2
    # D: 0.2, 0.2         -> 0.8
    # median(0.2, 0.8, 0.8, 0.85) = 0.8; |dev| = 0.6, 0, 0, 0.05 -> MAD 0.025
    # cut = 0.8 - max(2.5 * 1.4826 * 0.025 = 0.0927, 0.1) = 0.7 -> only C is low
    table = M.document_coverage([0.1, 0.3, 0.15, 0.9, 0.7, 0.2, 0.2], ["A", "A", "B", "C", "C", "D", "D"])
    assert list(table.columns) == ["document", "n_chunks", "coverage", "is_low"]
    # lowest first; A and D tie at 0.8 and keep first-appearance order
    assert table["document"].tolist() == ["C", "A", "D", "B"]
    assert table["n_chunks"].tolist() == [2, 2, 2, 1]
    assert np.allclose(table["coverage"], [0.2, 0.8, 0.8, 0.85])
    assert table["is_low"].tolist() == [True, False, False, False]


# --------------------------------------------------------------------------
# tested = retrieved among the top k at similarity >= tau; documents a question targets
# --------------------------------------------------------------------------


def _ranked(similarity):
    """Each question's chunks most similar first, ties by chunk index (as the screener keeps them)."""
    order = np.argsort(-similarity, axis=1, kind="stable")
    return order, np.take_along_axis(similarity, order, axis=1)


def test_a_generic_question_close_to_many_chunks_tests_only_its_top_k():
    # Question 0 reaches all 8 chunks above tau = 0.5; question 1 only chunk 7, at exactly tau.
    similarity = np.array([[0.9, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.3],
                           [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5]], dtype=np.float32)
    top, sims = _ranked(similarity)
    tested = M.retrieved_tested_chunks(top, sims, 8, 0.5, k=3)
    assert tested.tolist() == [True, True, True, False, False, False, False, True]
    # The plain rule counted every chunk within tau: 8 of 8 instead of 4.
    assert M.tested_chunks(1 - similarity.max(axis=0), 0.5).sum() == 8
    # Off-topic questions test nothing; k larger than the chunks reads them all.
    assert M.retrieved_tested_chunks(top, sims, 8, 0.5, k=3, inliers=np.array([False, True])).sum() == 1
    assert M.retrieved_tested_chunks(top, sims, 8, 0.5, k=50).sum() == 8
    assert M.tested_share_of(tested) == 0.5


@pytest.mark.parametrize(
    "n_questions, k, n_chunks, expected",
    [
        (50, 5, 812, 250 / 812),  # the brief's case: at most 31% can ever be tested
        (1, 1, 3, 1 / 3),
        (4, 3, 12, 1.0),  # exactly enough to reach every passage
        (200, 5, 812, 1.0),  # more than enough: capped at the whole knowledge base
        (0, 5, 812, 0.0),  # no question tests anything
        (0, 5, 0, 1.0),  # nothing to test: no passage is out of reach
        (7, 5, 0, 1.0),
    ],
)
def test_the_tested_share_ceiling_is_questions_times_k_over_chunks_at_most_one(n_questions, k, n_chunks, expected):
    assert M.testable_share_max(n_questions, k, n_chunks) == pytest.approx(expected, abs=1e-12)
    assert M.testable_share_max(np.int64(n_questions), np.int64(k), np.int64(n_chunks)) == pytest.approx(expected)


def test_no_tested_share_passes_its_ceiling():
    rng = np.random.default_rng(5)
    similarity = rng.random((6, 40)).astype(np.float32)
    top, sims = _ranked(similarity)
    inliers = np.array([True, True, False, True, True, True])
    for k in (1, 3, 7):
        tested = M.retrieved_tested_chunks(top, sims, 40, None, k=k, inliers=inliers)
        assert M.tested_share_of(tested) <= M.testable_share_max(int(inliers.sum()), k, 40)
    # With no level and questions whose top k never overlap, the share reaches the ceiling exactly.
    disjoint = np.arange(12).reshape(4, 3)
    tested = M.retrieved_tested_chunks(disjoint, np.ones((4, 3)), 40, None, k=3)
    assert M.tested_share_of(tested) == M.testable_share_max(4, 3, 40) == 0.3


@pytest.mark.parametrize("n_questions, k, n_chunks", [(-1, 5, 10), (3, 0, 10), (3, 5, -2), (2.5, 5, 10), (True, 5, 10)])
def test_the_tested_share_ceiling_refuses_counts_that_are_not_counts(n_questions, k, n_chunks):
    with pytest.raises(InputError):
        M.testable_share_max(n_questions, k, n_chunks)


def test_ties_at_the_kth_place_go_to_the_lower_chunk_index():
    similarity = np.array([[0.7, 0.6, 0.6, 0.6]], dtype=np.float32)
    top, sims = _ranked(similarity)
    assert M.retrieved_tested_chunks(top, sims, 4, 0.5, k=2).tolist() == [True, True, False, False]


def test_retrieved_tested_chunks_beyond_the_kept_top_equal_a_fresh_top_k():
    rng = np.random.default_rng(3)
    chunks, questions = rng.normal(size=(40, 6)), rng.normal(size=(9, 6))
    kept = S.best_matches(chunks, questions, top_k=10)
    wide_top, wide_sims = S.question_top_chunks(chunks, questions, 15)
    assert np.array_equal(wide_top[:, :10], kept.top_chunks)
    for k in (1, 5, 10):
        assert np.array_equal(M.retrieved_tested_chunks(kept.top_chunks, kept.top_similarities, 40, 0.2, k),
                              M.retrieved_tested_chunks(wide_top, wide_sims, 40, 0.2, k))
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    top, sims = _ranked(unit(questions) @ unit(chunks).T)
    assert np.array_equal(M.retrieved_tested_chunks(wide_top, wide_sims, 40, 0.2, 15),
                          M.retrieved_tested_chunks(top, sims, 40, 0.2, 15))
    with pytest.raises(InputError, match="k = 15 needs 15"):
        M.retrieved_tested_chunks(kept.top_chunks, kept.top_similarities, 40, 0.2, 15)


def test_a_question_targets_the_documents_of_its_best_tested_passages_within_the_margin():
    documents = ["A", "A", "copy of A", "B", "C"]
    similarity = np.array([[0.80, 0.70, 0.79, 0.60, 0.1],   # A's best, its copy 0.01 below
                           [0.30, 0.20, 0.20, 0.45, 0.1],   # best passage below tau: targets nothing
                           [0.10, 0.10, 0.10, 0.62, 0.61]], dtype=np.float32)
    top, sims = _ranked(similarity)
    assert M.question_targets(top, sims, documents, 0.5, 5, margin=0.0) == [("A",), (), ("B",)]
    assert M.question_targets(top, sims, documents, 0.5, 5, margin=0.02) == [("A", "copy of A"), (), ("B", "C")]
    # Only the top k count, and off-topic questions target nothing.
    assert M.question_targets(top, sims, documents, 0.5, 1, margin=1.0) == [("A",), (), ("B",)]
    assert M.question_targets(top, sims, documents, 0.5, 5, inliers=np.array([False, True, True]),
                              margin=0.0) == [(), (), ("B",)]


def test_with_no_level_the_ranking_alone_decides_what_is_tested_and_targeted():
    # Short questions: every similarity under tau = 0.55, yet A's passages come first for both.
    documents = ["A", "A", "B", "C", "C"]
    similarity = np.array([[0.40, 0.35, 0.38, 0.10, 0.12],
                           [0.30, 0.45, 0.20, 0.44, 0.05]], dtype=np.float32)
    top, sims = _ranked(similarity)
    # With the level: nothing tested, nothing targeted.
    assert not M.retrieved_tested_chunks(top, sims, 5, 0.55, k=3).any()
    assert M.question_targets(top, sims, documents, 0.55, 3, margin=0.02) == [(), ()]
    # Without it: each question's top 3 are tested, and it targets its best document (and any within the margin).
    assert M.retrieved_tested_chunks(top, sims, 5, None, k=3).tolist() == [True, True, True, True, False]
    assert M.question_targets(top, sims, documents, None, 3, margin=0.02) == [("A", "B"), ("A", "C")]
    assert M.question_targets(top, sims, documents, None, 3, margin=0.0) == [("A",), ("A",)]
    # Off-topic questions still test and target nothing.
    off = np.array([False, True])
    assert M.retrieved_tested_chunks(top, sims, 5, None, k=3, inliers=off).tolist() == [True, True, False, True, False]
    assert M.question_targets(top, sims, documents, None, 3, off, margin=0.0) == [(), ("A",)]


def test_an_edited_copy_of_the_best_passage_is_targeted_however_far_its_similarity_fell():
    from coverage_core.measure import _near_copies
    from coverage_core.types import Chunk

    passage = "The plan covers physiotherapy after surgery for up to twenty sessions in one calendar year."
    edited = "The plan covers physiotherapy after surgery for up to twenty sessions in a plan year."
    texts = [passage, "Dental care is covered twice a year.", edited, "Vision care includes one pair of glasses."]
    documents = ["plan 2024", "plan 2024", "plan 2025", "vision"]
    corpus = SimpleNamespace(chunks=[Chunk(document=d, text=t, start=0, end=len(t)) for t, d in zip(texts, documents)])
    similarity = np.array([[0.80, 0.55, 0.70, 0.69]], dtype=np.float32)  # the copy 0.10 below: past any margin
    top, sims = _ranked(similarity)
    near_copy = _near_copies(corpus)
    assert M.question_targets(top, sims, documents, 0.5, 5, margin=0.02) == [("plan 2024",)]
    # The copy counts; the other document as close to the question, but in other words, does not.
    assert M.question_targets(top, sims, documents, 0.5, 5, margin=0.02, near_copy=near_copy) == [
        ("plan 2024", "plan 2025")]
    assert near_copy(0, 2) and not near_copy(0, 3) and not near_copy(0, 1)


def test_document_table_columns_from_the_tested_mask_and_the_targeting_questions():
    documents = ["A", "A", "A", "A", "B", "B", "C"]
    tested = np.array([True, False, False, False, True, True, False])
    n_questions = {"A": 2, "B": 3, "C": 1}  # C: one question, as often a stray one from another document
    table = verdicts.with_document_verdicts(M.document_coverage([0.2] * 7, documents, tested=tested),
                                            n_questions).set_index("document")
    assert list(table.columns) == ["n_chunks", "coverage", "is_low", "n_tested", "tested_share", "n_questions",
                                   "is_untested", "is_undertested"]
    assert table["n_tested"].to_dict() == {"A": 1, "B": 2, "C": 0}
    assert table["n_questions"].to_dict() == n_questions
    assert table["is_untested"].to_dict() == {"A": False, "B": False, "C": True}
    assert table["is_undertested"].to_dict() == {"A": True, "B": False, "C": False}  # A: 1 of 4 < 30%
    without_questions = M.document_coverage([0.2] * 7, documents, tested=tested)
    assert "is_untested" not in without_questions and "n_tested" in without_questions


def test_document_coverage_tight_corpus_flags_nothing():
    # coverages 0.80 0.78 0.81 0.79 0.74: median 0.79, MAD 0.01
    # robust cut alone: 0.79 - 2.5*1.4826*0.01 = 0.753 -> 0.74 would be flagged,
    # but the minimum gap (0.1) says a 0.05 difference is noise.
    distances = [0.20, 0.22, 0.19, 0.21, 0.26]
    documents = ["a", "b", "c", "d", "e"]
    assert not M.document_coverage(distances, documents)["is_low"].any()
    flagged = M.document_coverage(distances, documents, min_gap=0.0)
    assert flagged.loc[flagged["is_low"], "document"].tolist() == ["e"]


def test_document_coverage_fewer_than_three_documents_flags_nothing():
    table = M.document_coverage([0.0, 1.0], ["good", "bad"])
    assert not table["is_low"].any()
    assert table["document"].tolist() == ["bad", "good"]


def test_question_support_by_hand():
    # q (1,0):  best chunk (1,0), similarity 1
    # q (0,-1): best chunk (0,-3), similarity 1
    # q (-1,0): similarities -1, 0, -0.7071, 0 -> 0, first best chunk (0,1)
    similarity, nearest = M.question_support([[1, 0], [0, -1], [-1, 0]], CHUNKS)
    assert close(similarity, [1.0, 1.0, 0.0])
    assert nearest.tolist() == [0, 3, 1]


def test_duplicate_groups_by_hand():
    # (1,0) and (2,0): same direction, similarity 1 (exact duplicate direction)
    # (1,0.1) vs either: 1 / sqrt(1.01) = 0.995037
    # (0,1) vs others: <= 0.0995
    questions = [[1, 0], [2, 0], [1, 0.1], [0, 1]]
    groups = D.duplicate_groups(questions, threshold=0.99)
    assert groups.representative.tolist() == [0, 0, 0, 3]
    assert close(groups.similarity, [1.0, 1.0, 0.995037, 1.0])
    assert [(head, members.tolist()) for head, members in groups.groups] == [(0, [0, 1, 2])]
    groups = D.duplicate_groups(questions, threshold=0.999)
    assert [(head, members.tolist()) for head, members in groups.groups] == [(0, [0, 1])]


def test_zero_vector_is_unrelated_to_everything():
    distances, _ = M.nearest_question_distances([[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0]])
    assert close(distances, [1.0, 0.0])


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: M.nearest_question_distances(CHUNKS, np.ones((2, 3))), "3 dimensions but the chunk vectors have 2"),
        (lambda: M.nearest_question_distances([1.0, 2.0], QUESTIONS), "2-d array"),
        (lambda: M.nearest_question_distances(np.zeros((0, 2)), QUESTIONS), "chunk_vectors is empty"),
        (lambda: M.nearest_question_distances([[np.nan, 1.0]], QUESTIONS), "NaN"),
        (lambda: M.basic_coverage([]), "min_distances is empty"),
        (lambda: M.basic_coverage([[0.1]]), "1-d array"),
        (lambda: M.basic_coverage([2.5]), "between 0 and 2"),
        (lambda: M.weighted_coverage([0.1, 0.2], [0]), "one cluster label per chunk"),
        (lambda: M.cluster_coverages([0.1, 0.2], [0, 2], 2), "only 2 clusters"),
        (lambda: M.cluster_coverages([0.1], [-1], 2), "negative label"),
        (lambda: M.cluster_coverages([0.1], [0.5], 2), "integer"),
        (lambda: M.multi_threshold_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 0),
         r"^threshold must be greater than 0 and at most 2 \(got 0\); it is a cosine distance"),
        (lambda: M.multi_threshold_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 2.5), "at most 2 \\(got 2.5\\)"),
        (lambda: M.multi_n_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 0), "at least 1"),
        (lambda: M.multi_n_coverage(CHUNKS, QUESTIONS, LABELS, CENTROIDS, 1.5), "whole number"),
        (lambda: M.multi_n_coverage(CHUNKS, QUESTIONS, [0, 0, 1, 2], CENTROIDS, 1), "only 2 clusters"),
        (lambda: M.document_coverage([0.1, 0.2], ["a"]), "1 entries but there are 2 chunks"),
        (lambda: D.duplicate_groups(QUESTIONS, threshold=1.5), r"\(0, 1\]"),
        (lambda: M.question_support(QUESTIONS, np.zeros((0, 2))), "chunk_vectors is empty"),
        (lambda: M.nearest_question_distances(CHUNKS, QUESTIONS, block_size=0), "block_size"),
        (lambda: S.scan_similarities(CHUNKS, QUESTIONS, threshold=0.5), "labels and centroids"),
    ],
)
def test_input_validation_messages(call, message):
    with pytest.raises(InputError, match=message):
        call()
