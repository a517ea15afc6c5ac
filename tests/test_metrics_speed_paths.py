"""The fast paths of the similarity pass give exactly what straightforward code gives.

The per-question trackers of ``blockwise.scan_blocks`` read only the sub-blocks that
can still change their result; these tests compare them, value for value and
index for index, with the dense definitions on random inputs full of ties.
"""

import numpy as np
import pytest

from coverage_core import blockwise, threads
from coverage_core.stages import similarity


def tied_block_values(rng, rows, columns):
    """float32 values with many exact ties, and a spread that moves the k-th best around."""
    values = rng.choice([-0.5, 0.0, 0.25, 0.5, 1.0], size=(rows, columns)).astype(np.float32)
    noisy = rng.random((rows, columns)) < 0.5
    values[noisy] += rng.normal(scale=0.2, size=noisy.sum()).astype(np.float32)
    return values


def exact_unit_vectors(rng, n, dim=32, nonzero=16):
    """Unit rows whose dot products are exact in float32 (multiples of 1/16): many ties, no rounding."""
    vectors = np.zeros((n, dim), dtype=np.float32)
    for row in vectors:
        where = rng.choice(dim, nonzero, replace=False)
        row[where] = rng.choice([-0.25, 0.25], nonzero)
    return vectors


@pytest.fixture(params=[0.0, 0.1, 1.0], ids=["always-whole", "default", "always-gather"])
def gather_share(request, monkeypatch):
    """Both ways of reading a block (whole, or only the open sub-blocks) must agree."""
    monkeypatch.setattr(blockwise, "_GATHER_SHARE", request.param)
    return request.param


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("block_rows, group_rows", [(50, 8), (37, 8), (200, 64), (7, 64)])
def test_pruned_running_top_k_equals_a_stable_sort(k, block_rows, group_rows, gather_share):
    rng = np.random.default_rng(k * 1000 + block_rows)
    values = tied_block_values(rng, 600, 13)  # (candidates, entities)
    best = blockwise.RunningTopK(13, k)
    for start in range(0, len(values), block_rows):
        block = values[start : start + block_rows]
        best.add(block, start, entities_on_rows=False,
                 group_maxima=blockwise._sub_block_maxima(block, group_rows), group_rows=group_rows)
    expected = np.argsort(-values.T, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(best.indices, expected)
    np.testing.assert_array_equal(best.values, np.take_along_axis(values.T, expected, axis=1))


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("block_rows", [7, 50, 200])
def test_entries_found_against_an_older_kth_give_the_same_top_k(k, block_rows):
    # Each block's entries above the k-th best are found before the previous block is added (as a thread
    # does while the blocks before it are read): the k-th values only rise, so the result is the same.
    rng = np.random.default_rng(k * 100 + block_rows)
    values = tied_block_values(rng, 13, 600)  # (entities, candidates)
    best = blockwise.RunningTopK(13, k)
    blocks = [(start, values[:, start : start + block_rows]) for start in range(0, 600, block_rows)]
    found_early = [None] + [best.above(block) for _, block in blocks[1:]]  # before any block is in: None
    assert found_early[1] is None
    for (start, block), early in zip(blocks, found_early):
        found = early if early is not None else best.above(block)
        best.add_above(block, found, start)
    expected = np.argsort(-values, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(best.indices, expected)
    np.testing.assert_array_equal(best.values, np.take_along_axis(values, expected, axis=1))


@pytest.mark.parametrize("block_rows, group_rows", [(50, 8), (37, 8), (200, 64), (7, 64)])
def test_pruned_penalised_best_equals_the_dense_maximum(block_rows, group_rows, gather_share):
    rng = np.random.default_rng(block_rows + group_rows)
    sims = tied_block_values(rng, 900, 17)
    # Penalties with ties and a wide spread within a sub-block, so the bounds are often loose.
    penalty = rng.choice([0.0, 0.1, 0.3], size=900).astype(np.float32)
    spread = rng.random(900) < 0.3
    penalty[spread] += rng.uniform(0, 0.5, spread.sum()).astype(np.float32)
    support = np.full(17, -np.inf, dtype=np.float32)
    for start in range(0, len(sims), block_rows):
        block = sims[start : start + block_rows]
        blockwise._track_penalised_best(block, blockwise._sub_block_maxima(block, group_rows), group_rows,
                                      penalty[start : start + block_rows], support)
    np.testing.assert_array_equal(support, (sims - penalty[:, None]).max(axis=0))


def test_sub_block_maxima_cover_a_short_last_sub_block():
    rng = np.random.default_rng(5)
    block = tied_block_values(rng, 70, 4)
    maxima = blockwise._sub_block_maxima(block, 16)
    expected = np.stack([block[lo : lo + 16].max(axis=0) for lo in range(0, 70, 16)])
    np.testing.assert_array_equal(maxima, expected)


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("block_size", [None, 100, 333])
def test_best_matches_equals_the_full_matrix_exactly(block_size, workers, gather_share, monkeypatch):
    monkeypatch.setattr(threads, "worker_threads", lambda: workers)  # blocks multiplied in 1 or 3 threads
    started = []
    in_order = blockwise.in_order
    monkeypatch.setattr(blockwise, "in_order", lambda *args, **kw: started.append(kw["workers"]) or in_order(*args, **kw))
    rng = np.random.default_rng(21)
    chunks, questions = exact_unit_vectors(rng, 3000), exact_unit_vectors(rng, 40)
    chunks[7] = 0.0  # a failed embedding: similarity 0 to everything
    penalty = (rng.integers(0, 16, 3000) / 64).astype(np.float32)  # exact subtraction, many ties
    sims = chunks @ questions.T  # exact: multiples of 1/16
    found = similarity.best_matches(chunks, questions, chunk_penalty=penalty, top_k=10, block_size=block_size)
    assert started == [1 if block_size is None else workers]  # one block of 3,000 rows, else 30 or 10 blocks
    np.testing.assert_array_equal(found.question_similarity, sims.max(axis=0))
    np.testing.assert_array_equal(found.nearest_chunk, sims.argmax(axis=0))
    np.testing.assert_array_equal(found.chunk_similarity, sims.max(axis=1))
    np.testing.assert_array_equal(found.nearest_question, sims.argmax(axis=1))
    np.testing.assert_array_equal(found.question_support, (sims - penalty[:, None]).max(axis=0))
    expected = np.argsort(-sims.T, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(found.top_chunks, expected)
    np.testing.assert_array_equal(found.top_similarities, np.take_along_axis(sims.T, expected, axis=1))


@pytest.mark.parametrize("share", [0.05, 0.5, 1.0])
def test_best_of_a_few_chunks_equals_the_dense_argmax(share, monkeypatch):
    monkeypatch.setattr(similarity, "_SLAB_ROWS", 64)  # many slabs, some dense, some sparse, a short last one
    rng = np.random.default_rng(int(share * 100))
    chunks, questions = exact_unit_vectors(rng, 1000), exact_unit_vectors(rng, 30)
    rows = np.flatnonzero(rng.random(1000) < share)
    columns = np.sort(rng.choice(30, 7, replace=False))
    sims = chunks[rows] @ questions[columns].T
    best, which = similarity._best_of(chunks, rows, questions, columns)
    np.testing.assert_array_equal(best, sims.max(axis=1))
    np.testing.assert_array_equal(which, columns[sims.argmax(axis=1)])


@pytest.mark.parametrize("n_inliers", [3, 25, 60])
def test_scan_from_the_index_with_few_inliers_equals_the_full_scan_exactly(n_inliers, monkeypatch):
    monkeypatch.setattr(similarity, "_SLAB_ROWS", 128)
    rng = np.random.default_rng(n_inliers)
    chunks, questions = exact_unit_vectors(rng, 1500), exact_unit_vectors(rng, 60)
    labels = rng.integers(0, 8, 1500)
    centroids = np.stack([chunks[labels == k].mean(axis=0) for k in range(8)])
    inliers = np.zeros(60, dtype=bool)
    inliers[rng.choice(60, n_inliers, replace=False)] = True
    # Few inliers leave most chunks' whole depth-4 list excluded and some clusters uncovered.
    settings = dict(inliers=inliers, threshold=0.8, n_nearest=1)
    full = similarity.scan_similarities(chunks, questions, labels, centroids, **settings)
    index = similarity.nearest_questions(chunks, questions, depth=4)
    reused = similarity.scan_similarities(chunks, questions, labels, centroids, index=index, **settings)
    for name in ("min_distances", "question_similarity", "multi_threshold_per_cluster", "multi_n_per_cluster"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(full, name), err_msg=name)
    sims = chunks @ questions.T
    best = np.where(inliers, sims, -np.inf).max(axis=1)
    np.testing.assert_array_equal(full.min_distances, np.clip(1.0 - best.astype(np.float64), 0, 2))
    # The index keeps ``depth`` of the questions tied at a chunk's best, not
    # always the lowest-numbered: with exact ties any of the best may be named.
    unique = (np.where(inliers, sims, -np.inf) == best[:, None]).sum(axis=1) == 1
    np.testing.assert_array_equal(reused.nearest_question[unique], full.nearest_question[unique])
    np.testing.assert_array_equal(sims[np.arange(1500), reused.nearest_question], best)
    assert inliers[reused.nearest_question].all()
    # Likewise a question's best chunk, among chunks tied at its best.
    np.testing.assert_array_equal(sims[reused.nearest_chunk, np.arange(60)], sims.max(axis=0))


def test_the_best_first_order_equals_a_three_key_lexsort():
    rng = np.random.default_rng(8)
    entities = rng.integers(0, 40, 3000)
    # Ties, signed zeros, negatives and -inf (calibration masks a probe's own group with -inf).
    values = rng.choice(np.array([-np.inf, -0.5, -0.0, 0.0, 0.25, 0.9], dtype=np.float32), size=3000)
    values[::3] += rng.normal(scale=0.1, size=1000).astype(np.float32)
    candidates = np.arange(3000)  # ascending, as the callers give them
    order = blockwise._by_entity_best_first(entities, values)
    expected = np.lexsort((candidates, -(values + np.float32(0)), entities))
    np.testing.assert_array_equal(order, expected)


@pytest.mark.parametrize("workers", [1, 3])
def test_calibration_negatives_elsewhere_equal_the_dense_ranking(workers, monkeypatch):
    # Many blocks in several threads, ties everywhere: each probe's best chunks outside its own document,
    # and outside both its topic and its family, as a stable sort of the whole masked matrix ranks them.
    from coverage_core.stages import calibration

    monkeypatch.setattr(calibration, "_CHUNK_BLOCK", 37)
    monkeypatch.setattr(threads, "worker_threads", lambda: workers)
    rng = np.random.default_rng(workers)
    chunks, probes = exact_unit_vectors(rng, 500), exact_unit_vectors(rng, 30)
    documents = np.array([f"doc-{i // 25:02d}" for i in range(500)], dtype=object)
    topics, families = rng.integers(0, 6, 500), rng.integers(0, 3, 500)
    own = rng.choice(500, 30, replace=False)
    groupings = [documents, (topics, families)]
    owners = [documents[own], (topics[own], families[own])]
    found = calibration._candidates_elsewhere(probes, chunks, groupings, owners)
    sims = probes @ chunks.T  # exact: multiples of 1/16
    inside = [documents[own][:, None] == documents[None, :],
              (topics[own][:, None] == topics[None, :]) | (families[own][:, None] == families[None, :])]
    for (indices, values), mask in zip(found, inside):
        masked = np.where(mask, -np.inf, sims)
        expected = np.argsort(-masked, axis=1, kind="stable")[:, : calibration.NEGATIVE_CANDIDATES]
        expected_values = np.take_along_axis(masked, expected, axis=1)
        np.testing.assert_array_equal(values, expected_values)
        real = np.isfinite(expected_values)
        np.testing.assert_array_equal(indices[real], expected[real])
