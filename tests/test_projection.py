import numpy as np
import pytest

from coverage_core.projection import project_2d, sample_evenly


def _clustered(n_per_cluster, n_clusters=4, dims=16, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, dims)) * 3
    labels = np.repeat(np.arange(n_clusters), n_per_cluster)
    vectors = centres[labels] + rng.standard_normal((len(labels), dims))
    return vectors.astype(np.float32), labels


def test_sample_evenly_gives_small_clusters_their_share():
    labels = np.array([0] * 1000 + [1] * 10 + [2] * 500)
    chosen = sample_evenly(labels, 300, random_state=0)
    assert len(chosen) == 300
    assert len(np.unique(chosen)) == 300
    counts = np.bincount(labels[chosen], minlength=3)
    assert counts[1] == 10  # the small cluster keeps every point
    assert counts[0] == counts[2] == 145  # the rest is split evenly


def test_sample_evenly_keeps_everything_under_budget():
    labels = np.array([0, 0, 1])
    assert sample_evenly(labels, 10).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 1"):
        sample_evenly(labels, 0)


@pytest.mark.slow
def test_tsne_map_is_seeded_and_separates_clusters():
    chunks, labels = _clustered(60)
    questions = chunks[::15] + 0.01
    first = project_2d(chunks, questions, labels, random_state=3)
    second = project_2d(chunks, questions, labels, random_state=3)
    assert first.chunk_xy.shape == (240, 2) and first.question_xy.shape == (16, 2)
    assert np.allclose(first.chunk_xy, second.chunk_xy)
    assert not first.sampled and "all 240" in first.caption
    # Points of one cluster sit closer to their own centre than to others'.
    centres = np.array([first.chunk_xy[labels == k].mean(axis=0) for k in range(4)])
    nearest = np.argmin(((first.chunk_xy[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert (nearest == labels).mean() > 0.95


def test_large_corpus_is_sampled_for_the_map_only():
    chunks, labels = _clustered(300)
    questions = chunks[:5]
    projection = project_2d(chunks, questions, labels, max_points=205, method="pca")
    assert projection.sampled
    assert len(projection.chunk_index) == 200 and projection.question_xy.shape == (5, 2)
    assert "200 of 1,200 chunks" in projection.caption
    assert set(np.bincount(labels[projection.chunk_index])) == {50}


def test_mds_and_tiny_inputs():
    chunks, labels = _clustered(5, n_clusters=2)
    projection = project_2d(chunks, chunks[:2], labels, method="mds")
    assert projection.chunk_xy.shape == (10, 2)
    tiny = project_2d(chunks[:2], chunks[:1], labels[:2])
    assert tiny.chunk_xy.shape == (2, 2) and tiny.question_xy.shape == (1, 2)
    with pytest.raises(ValueError, match="method"):
        project_2d(chunks, chunks, labels, method="umap")
