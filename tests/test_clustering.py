import numpy as np
import pytest

from coverage_core.stages import clustering
from coverage_core.stages.clustering import ChunkClusterer, default_n_clusters


def blobs(n_per=30, k=4, d=16, spread=0.05, seed=0):
    """k well-separated directions with n_per noisy unit vectors each."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d))
    X = np.repeat(centers, n_per, axis=0) + spread * rng.normal(size=(k * n_per, d))
    truth = np.repeat(np.arange(k), n_per)
    # Unnormalised on purpose: the clusterer must normalise rows itself.
    return X * rng.uniform(0.5, 3.0, size=(len(X), 1)), truth


@pytest.mark.parametrize(
    "n, expected",
    [(1, 1), (2, 2), (3, 2), (20, 3), (100, 7), (1000, 22), (2482, 35), (5000, 50), (20000, 50)],
)
def test_default_n_clusters_rule(n, expected):
    assert default_n_clusters(n) == expected


def test_default_n_clusters_rejects_empty():
    with pytest.raises(ValueError, match="at least 1"):
        default_n_clusters(0)


def test_recovers_separated_topics_and_is_deterministic():
    X, truth = blobs()
    a = ChunkClusterer(n_clusters=4, random_state=3).fit(X)
    b = ChunkClusterer(n_clusters=4, random_state=3).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    # Each true topic maps to exactly one cluster.
    for t in range(4):
        assert len(set(a.labels_[truth == t])) == 1
    assert len(set(a.labels_)) == 4
    assert a.warnings_ == []


def test_centroids_unit_length_and_cosine_distance():
    X, _ = blobs(spread=0.6)  # loose clusters: raw means are clearly shorter than 1
    model = ChunkClusterer(n_clusters=4).fit(X)
    np.testing.assert_allclose(np.linalg.norm(model.cluster_centers_, axis=1), 1.0, atol=1e-6)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    raw_means = np.stack([Xn[model.labels_ == k].mean(0) for k in range(4)])
    assert (np.linalg.norm(raw_means, axis=1) < 0.95).all()
    # 1 - x.c is a cosine distance in [0, 2] and each chunk is closest to its own centroid.
    dist = 1 - Xn @ model.cluster_centers_.T
    assert dist.min() >= -1e-6 and dist.max() <= 2 + 1e-6
    np.testing.assert_array_equal(dist.argmin(axis=1), model.labels_)


def test_labels_cover_all_clusters():
    X, _ = blobs(n_per=10, k=6)
    model = ChunkClusterer(n_clusters=9).fit(X)
    assert model.n_clusters_ == 9
    assert set(model.labels_) == set(range(model.n_clusters_))
    assert model.cluster_centers_.shape == (model.n_clusters_, X.shape[1])


def test_fewer_chunks_than_clusters_lowers_k_with_message():
    X, _ = blobs(n_per=1, k=7)
    model = ChunkClusterer(n_clusters=10).fit(X)
    assert model.n_clusters_ == 7
    assert "Only 7 chunks for 10 clusters; using 7 clusters." in model.warnings_
    assert sorted(model.labels_) == list(range(7))


def test_duplicate_rows_lower_k_to_distinct_count():
    rng = np.random.default_rng(1)
    distinct = rng.normal(size=(3, 8))
    X = np.repeat(distinct, [5, 4, 6], axis=0)
    model = ChunkClusterer(n_clusters=5).fit(X)
    assert model.n_clusters_ == 3
    assert any("3 distinct" in w for w in model.warnings_)
    # Identical chunks share a cluster, different ones do not.
    groups = [model.labels_[np.all(X == row, axis=1)] for row in distinct]
    assert all(len(set(g)) == 1 for g in groups)
    assert len({g[0] for g in groups}) == 3


def test_single_chunk():
    model = ChunkClusterer().fit(np.array([[3.0, 4.0]]))
    assert model.n_clusters_ == 1
    np.testing.assert_array_equal(model.labels_, [0])
    np.testing.assert_allclose(model.cluster_centers_, [[0.6, 0.8]])


def test_all_identical_chunks_make_one_cluster():
    X = np.ones((5, 4))
    model = ChunkClusterer(n_clusters=3).fit(X)
    assert model.n_clusters_ == 1
    assert set(model.labels_) == {0}


@pytest.mark.parametrize("bad", [0, -2, 2.5, "3"])
def test_invalid_n_clusters(bad):
    with pytest.raises(ValueError, match="Valid values are"):
        ChunkClusterer(n_clusters=bad).fit(np.eye(4))


def test_rejects_nan_and_wrong_shape():
    with pytest.raises(ValueError, match="NaN"):
        ChunkClusterer().fit(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="2-D"):
        ChunkClusterer().fit(np.ones(5))


def test_large_corpus_path_matches_full_fit_quality(monkeypatch):
    # Force the sample-then-refine path on a small problem and compare inertia.
    X, truth = blobs(n_per=150, k=5, d=24, spread=0.3, seed=4)
    full = ChunkClusterer(n_clusters=5).fit(X)
    monkeypatch.setattr(clustering, "SAMPLE_FIT_ABOVE", 100)
    monkeypatch.setattr(clustering, "SAMPLE_SIZE", 200)
    sampled = ChunkClusterer(n_clusters=5).fit(X)
    assert sampled.n_clusters_ == 5
    assert sampled.inertia_ <= full.inertia_ * 1.02
    for t in range(5):
        assert len(set(sampled.labels_[truth == t])) == 1


def test_empty_cluster_is_relabelled_compactly(monkeypatch):
    class LeavesClusterOneEmpty:
        def __init__(self, n_clusters, **kwargs):
            self.n_clusters = n_clusters

        def fit(self, X):
            self.labels_ = np.where(np.arange(len(X)) % 2 == 0, 0, 2)
            return self

    monkeypatch.setattr(clustering, "KMeans", LeavesClusterOneEmpty)
    X, _ = blobs(n_per=5, k=3)
    model = ChunkClusterer(n_clusters=3).fit(X)
    assert model.n_clusters_ == 2
    assert set(model.labels_) == {0, 1}
    assert model.cluster_centers_.shape == (2, X.shape[1])
    assert any("empty" in w for w in model.warnings_)
