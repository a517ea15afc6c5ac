"""Near-duplicate groups: the leader rule, exact repeats, blockwise = brute force, bounded memory."""

import tracemalloc

import numpy as np
import pytest

from coverage_core import duplicates as D
from coverage_core.errors import InputError


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _angles(degrees):
    """Unit vectors in the plane at these angles."""
    radians = np.radians(degrees)
    return np.column_stack([np.cos(radians), np.sin(radians)])


def brute_force(vectors, threshold, repeats=None):
    """The rule of ``duplicate_groups`` written out on the full similarity matrix, one question at a time."""
    repeats = repeats or {}
    sims = _unit(vectors) @ _unit(vectors).T
    m = len(sims)
    representative, similarity, leaders = np.arange(m), np.ones(m), []
    for j in range(m):
        if j in repeats:
            representative[j], similarity[j] = representative[repeats[j]], similarity[repeats[j]]
            continue
        # The same 1e-6 as duplicate_groups: float32 similarities of equal directions round to 1 - 6e-8.
        matches = [i for i in leaders if sims[j, i] >= threshold - 1e-6]
        if matches:
            best = max(matches, key=lambda i: (sims[j, i], -i))  # most similar, then earliest
            representative[j], similarity[j] = best, min(sims[j, best], 1.0)
        else:
            leaders.append(j)
    return representative, similarity


def test_by_hand_chain_does_not_merge_distant_questions():
    # Angles 0, 10, 20, 30, 40 degrees; threshold cos(15 deg) = 0.9659: only
    # neighbours 10 degrees apart are near-duplicates, so single linkage would
    # chain all five into one group.
    #   q0 (0):  representative
    #   q1 (10): cos 10 = 0.985 to q0         -> joins q0
    #   q2 (20): cos 20 = 0.940 to q0 < t     -> representative
    #   q3 (30): cos 30 to q0 < t; cos 10 to q2 -> joins q2
    #   q4 (40): cos 40 to q0, cos 20 to q2 < t -> representative (alone)
    groups = D.duplicate_groups(_angles([0, 10, 20, 30, 40]), np.cos(np.radians(15)))
    assert groups.representative.tolist() == [0, 0, 2, 2, 4]
    # float32 products of unit vectors: ~1e-7 off the exact cosines; 1e-6 holds with margin.
    np.testing.assert_allclose(groups.similarity, [1, np.cos(np.radians(10)), 1, np.cos(np.radians(10)), 1], atol=1e-6)
    assert [(head, members.tolist()) for head, members in groups.groups] == [(0, [0, 1]), (2, [2, 3])]
    assert (groups.n_groups, groups.n_questions) == (2, 4)
    assert groups.duplicate_of.tolist() == [-1, 0, -1, 2, -1]


def test_member_joins_its_most_similar_earlier_representative():
    # q0 at 0, q1 at 20 (a representative: cos 20 < t), q2 at 12: near both,
    # closer to q1 (8 degrees) than to q0 (12 degrees).
    groups = D.duplicate_groups(_angles([0, 20, 12]), np.cos(np.radians(15)))
    assert groups.representative.tolist() == [0, 1, 1]


def test_long_chain_makes_no_giant_group():
    # 200 questions 1 degree apart: every neighbour pair is a near-duplicate,
    # single linkage gives one group of 200. Leaders keep each group within
    # the threshold's angle (12.8 degrees at 0.975) of its representative.
    threshold = 0.975
    vectors = _angles(np.arange(200.0))
    groups = D.duplicate_groups(vectors, threshold)
    sims = vectors @ vectors.T
    for head, members in groups.groups:
        assert (sims[head, members] >= threshold - 1e-9).all()  # float64 here: 1e-9 only absorbs rounding
        assert len(members) <= 13
    assert groups.n_groups >= 200 // 26


@pytest.mark.parametrize("seed", range(5))
def test_members_are_near_duplicates_of_their_representative(seed):
    rng = np.random.default_rng(seed)
    bases = rng.standard_normal((12, 16))
    vectors = bases[rng.integers(0, 12, 300)] + 0.2 * rng.standard_normal((300, 16))
    threshold = 0.95
    groups = D.duplicate_groups(vectors, threshold)
    sims = _unit(vectors) @ _unit(vectors).T
    rep = groups.representative
    # duplicate_groups works in float32 (~1e-7 off these float64 sims) and admits threshold - 1e-6.
    assert (sims[np.arange(300), rep] >= threshold - 1e-6).all()
    np.testing.assert_allclose(groups.similarity, np.minimum(sims[np.arange(300), rep], 1.0), atol=1e-5)
    heads = np.flatnonzero(rep == np.arange(300))
    assert (rep[rep] == rep).all() and (rep <= np.arange(300)).all()  # a representative is its group's first
    # No representative is a near-duplicate of an earlier one: it would have joined it.
    among = sims[np.ix_(heads, heads)]
    assert not (np.triu(among, k=1) >= threshold).any()
    assert groups.n_groups > 0 and groups.n_questions == sum(len(m) for _, m in groups.groups)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_duplicates_are_grouped_even_at_threshold_one(dtype):
    q = np.random.default_rng(0).standard_normal(384)
    groups = D.duplicate_groups(np.array([q, q * 3, -q, q / 7], dtype=dtype), threshold=1.0)
    assert groups.representative.tolist() == [0, 0, 2, 0]
    # A float32 unit vector times itself is 1 within a few ulp (0.99999994 on AVX-512 BLAS); the grouping
    # admits 1 - 1e-6 for exactly this reason, and the reported similarity is that product, capped at 1.
    np.testing.assert_allclose(groups.similarity, 1.0, rtol=0, atol=1e-6)
    assert (groups.similarity <= 1.0).all()


def test_exact_repeats_join_the_group_of_what_they_repeat_whatever_their_vectors():
    # q3 repeats q1 (same text) but its vector points elsewhere (an embedder
    # quirk): it still joins q1's group, with q1's similarity to q0.
    vectors = _angles([0, 5, 90, 180, 91])
    groups = D.duplicate_groups(vectors, 0.99, repeats={3: 1, 4: 2})
    assert groups.representative.tolist() == [0, 0, 2, 0, 2]
    # float32 products of unit vectors: ~1e-7 off the exact cosines; 1e-6 holds with margin.
    np.testing.assert_allclose(groups.similarity, [1, np.cos(np.radians(5)), 1, np.cos(np.radians(5)), 1], atol=1e-6)
    # An exact repeat of a question in no group makes a group of two.
    assert [(h, m.tolist()) for h, m in groups.groups] == [(0, [0, 1, 3]), (2, [2, 4])]


@pytest.mark.parametrize("block_size", [None, 1, 7, 64, 1000])
@pytest.mark.parametrize("seed", range(4))
def test_blockwise_equals_brute_force(block_size, seed):
    rng = np.random.default_rng(seed)
    m = 240
    bases = rng.standard_normal((int(rng.integers(2, 40)), 8))
    vectors = (bases[rng.integers(0, len(bases), m)] + 0.25 * rng.standard_normal((m, 8))).astype(np.float32)
    later = rng.choice(np.arange(1, m), 12, replace=False)
    repeats = {int(j): int(rng.integers(0, j)) for j in later}
    for threshold in (0.8, 0.9, 0.97):
        groups = D.duplicate_groups(vectors, threshold, repeats=repeats, block_size=block_size)
        representative, similarity = brute_force(vectors, threshold, repeats)
        assert groups.representative.tolist() == representative.tolist()
        # float32 blocks against the float64 brute force: ~1e-7 apart; 1e-5 holds with margin.
        np.testing.assert_allclose(groups.similarity, similarity, atol=1e-5)


def test_memory_stays_bounded_by_the_block():
    # 6,000 distinct questions (the worst case: every one is a representative).
    # The full similarity matrix would be 6,000^2 float32 = 144 MB; with 500
    # rows per block no step holds more than 500 x 6,000 similarities (12 MB).
    rng = np.random.default_rng(0)
    m = 6000
    vectors = rng.standard_normal((m, 16)).astype(np.float32)
    vectors[1::2] = vectors[::2] + 0.01 * rng.standard_normal((m // 2, 16)).astype(np.float32)
    tracemalloc.start()
    try:
        groups = D.duplicate_groups(vectors, 0.95, block_size=500)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < m * m * 4 / 4
    assert groups.representative.tolist() == D.duplicate_groups(vectors, 0.95).representative.tolist()
    assert groups.n_groups == m // 2  # each twin joins its original


def test_empty_zero_and_invalid_inputs():
    none = D.duplicate_groups(np.zeros((0, 4)))
    assert none.n_groups == 0 and none.groups == [] and none.representative.shape == (0,)
    # A zero vector (a failed embedding) is a near-duplicate of nothing.
    assert D.duplicate_groups([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]).n_groups == 0
    with pytest.raises(InputError, match=r"\(0, 1\]"):
        D.duplicate_groups([[1.0, 0.0]], threshold=1.5)
    with pytest.raises(InputError, match="earlier one"):
        D.duplicate_groups([[1.0, 0.0], [0.0, 1.0]], repeats={0: 1})


def test_groups_are_listed_largest_first():
    vectors = _angles([0, 90, 90.1, 0.1, 90.2, 45])
    groups = D.duplicate_groups(vectors, 0.999)
    assert [(h, m.tolist()) for h, m in groups.groups] == [(1, [1, 2, 4]), (0, [0, 3])]


def test_near_duplicate_level_prefers_the_setting_then_the_models_level():
    from coverage_core.duplicates import NEAR_DUPLICATE_SIMILARITY, near_duplicate_level
    from coverage_core.embeddings import registry

    assert near_duplicate_level(0.9, 0.987) == 0.9
    assert near_duplicate_level(None, 0.987) == 0.987
    assert near_duplicate_level(None, None) == NEAR_DUPLICATE_SIMILARITY == 0.95
    assert registry.near_duplicate_similarity("e5") == 0.987
    assert registry.near_duplicate_similarity("use") == 0.907
    # The default model is the scale the levels are stated on: it has no level of its own.
    assert registry.near_duplicate_similarity("local") is None
    assert registry.near_duplicate_similarity("no-such-provider") is None
