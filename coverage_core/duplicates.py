"""Near-duplicate questions, in groups around one representative each.

:func:`duplicate_groups` states the grouping rule; the report lists the
groups (``duplicate_groups``) and the dashboard's Near-duplicates tab shows
them. Blockwise, so 500,000 questions group in bounded memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coverage_core.blockwise import BLOCK_ELEMENTS, block_rows
from coverage_core.errors import InputError
from coverage_core.validation import check_vectors, unit_rows

__all__ = ["NEAR_DUPLICATE_SIMILARITY", "DuplicateGroups", "duplicate_groups", "near_duplicate_level"]

# Rows of a block whose similarities to itself fill BLOCK_ELEMENTS.
_SQUARE_BLOCK_ROWS = int(np.sqrt(BLOCK_ELEMENTS))

NEAR_DUPLICATE_SIMILARITY = 0.95
"""The cosine from which two questions are near-duplicates on all-MiniLM-L6-v2, the default model, and on any
model whose registry entry states no level of its own (:attr:`~coverage_core.embeddings.base.ModelSpec.near_duplicate_similarity`)."""

# float32 dot products of a unit vector with itself land a few ulps below 1.
_SIMILARITY_TOLERANCE = 1e-6


@dataclass(frozen=True)
class DuplicateGroups:
    """Near-duplicate questions in groups, each around one representative.

    Built by :func:`duplicate_groups`, which states the grouping rule.

    Attributes
    ----------
    representative : ndarray of shape (m,), int
        Index of each question's representative; a representative, and a
        question with no near-duplicate, is its own.
    similarity : ndarray of shape (m,), float64
        Cosine similarity of each question to its representative (1 for a
        representative).
    threshold : float
        The near-duplicate threshold the groups were built with.
    """

    representative: np.ndarray
    similarity: np.ndarray
    threshold: float

    @property
    def groups(self) -> list[tuple[int, np.ndarray]]:
        """``(representative, members)`` of each group of two or more
        questions; ``members`` in index order, so the representative comes
        first. Largest groups first, then by representative."""
        rep = self.representative
        order = np.argsort(rep, kind="stable")  # members of one group adjacent, in index order
        heads, starts, sizes = np.unique(rep[order], return_index=True, return_counts=True)
        keep = np.flatnonzero(sizes >= 2)
        keep = keep[np.lexsort((heads[keep], -sizes[keep]))]
        return [(int(heads[g]), order[starts[g] : starts[g] + sizes[g]]) for g in keep]

    @property
    def n_groups(self) -> int:
        """Groups of two or more questions."""
        sizes = np.bincount(self.representative, minlength=len(self.representative))
        return int((sizes >= 2).sum())

    @property
    def n_questions(self) -> int:
        """Questions in those groups, representatives included."""
        sizes = np.bincount(self.representative, minlength=len(self.representative))
        return int(sizes[sizes >= 2].sum())

    @property
    def duplicate_of(self) -> np.ndarray:
        """Each question's representative, -1 for representatives and questions in no group."""
        own = self.representative == np.arange(len(self.representative))
        return np.where(own, -1, self.representative)


def near_duplicate_level(setting: float | None, model_level: float | None) -> float:
    """The near-duplicate level an analysis uses: ``setting`` when the user set one, else the model's own
    level (the registry's, None when not measured), else :data:`NEAR_DUPLICATE_SIMILARITY`."""
    if setting is not None:
        return float(setting)
    return NEAR_DUPLICATE_SIMILARITY if model_level is None else float(model_level)


def duplicate_groups(
    question_vectors,
    threshold: float = NEAR_DUPLICATE_SIMILARITY,
    *,
    repeats: dict[int, int] | None = None,
    block_size: int | None = None,
) -> DuplicateGroups:
    """Group near-duplicate questions around representatives (leader clustering).

    Two questions are near-duplicates when ``s = 1 - dist(q_i, q_j) >= threshold`` (within 1e-6, so exact
    duplicates pass even 1). Rule: in index order, question ``j`` joins the group of the earlier representative
    it is most similar to among those with ``s >= threshold`` (ties: the earliest); with none, it becomes a
    representative. Exact ``repeats`` join the group of the question they repeat, with its similarity.
    Why: a redundant question adds no coverage; docs/developing.md, *Near-duplicate questions*.

    Parameters
    ----------
    question_vectors : array-like of shape (m, d); m may be 0
    threshold : float in (0, 1], cosine similarity
    repeats : dict, optional
        ``{j: i}``: question ``j`` repeats question ``i < j`` exactly; not compared otherwise.
    block_size : int, optional, question rows per block (default: about 32 MB of similarities)

    Returns
    -------
    DuplicateGroups

    Raises
    ------
    InputError
        ``threshold`` outside (0, 1], or a repeat of a later question.
    """
    if not np.isfinite(threshold) or not 0 < threshold <= 1:
        raise InputError(f"threshold is a cosine similarity and must be in (0, 1]; got {threshold}.")
    questions = unit_rows(check_vectors(question_vectors, "question_vectors", allow_empty=True), copy=False)
    m = questions.shape[0]
    repeats = _checked_repeats(repeats, m)
    cut = threshold - _SIMILARITY_TOLERANCE
    compared = np.setdiff1d(np.arange(m), np.fromiter(repeats, dtype=np.intp, count=len(repeats)))
    leader, similarity = _leader_clustering(questions[compared], cut, block_size)
    representative = np.arange(m)
    representative[compared] = compared[leader]
    similarities = np.ones(m)
    similarities[compared] = similarity
    for j in sorted(repeats):  # ascending: an original that repeats another is settled first
        representative[j] = representative[repeats[j]]
        similarities[j] = similarities[repeats[j]]
    return DuplicateGroups(representative, similarities, float(threshold))


def _checked_repeats(repeats: dict[int, int] | None, m: int) -> dict[int, int]:
    repeats = dict(repeats or {})
    for j, i in repeats.items():
        if not 0 <= i < j < m:
            raise InputError(f"repeats must map a question to an earlier one (0 <= i < j < {m}); got {j}: {i}.")
    return repeats


def _leader_clustering(vectors: np.ndarray, cut: float, block_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The rule of :func:`duplicate_groups` on unit rows: each row's representative (a row index)
    and its similarity to it (1 for a representative); near-duplicates have similarity >= ``cut``.

    Computed in blocks of rows against the representatives found so far and
    against the block itself, so no m x m matrix ever exists; the cost is
    about ``m x n_representatives x d`` flops (``m**2 / 2 x d`` when no two
    rows are near-duplicates).
    """
    n = len(vectors)
    leader = np.empty(n, dtype=np.intp)
    similarity = np.ones(n)
    leaders = np.empty(n, dtype=np.intp)
    leader_vectors = np.empty_like(vectors)
    n_leaders = 0
    start = 0
    while start < n:
        # A block meets the representatives so far and itself: at most about
        # BLOCK_ELEMENTS similarities each, in as few products as that allows.
        step = block_rows(max(n_leaders, _SQUARE_BLOCK_ROWS), block_size)
        block = vectors[start : start + step]
        rows = np.arange(len(block))
        best, best_sim = _nearest_leaders(block, leader_vectors[:n_leaders])
        fresh = _new_leaders(block, best, best_sim, cut, n_leaders)
        leader_vectors[n_leaders : n_leaders + fresh.size] = block[fresh]
        leaders[n_leaders : n_leaders + fresh.size] = start + fresh
        n_leaders += fresh.size
        leader[start : start + len(block)] = leaders[best]
        joined = leader[start : start + len(block)] != start + rows
        similarity[start : start + len(block)][joined] = np.minimum(best_sim[joined], 1.0)
        start += len(block)
    return leader, similarity


def _nearest_leaders(block: np.ndarray, leader_vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each block row's most similar representative so far (-1 and -inf when there is none)."""
    if not len(leader_vectors):
        return np.full(len(block), -1, dtype=np.intp), np.full(len(block), -np.inf, dtype=np.float32)
    sims = block @ leader_vectors.T
    best = sims.argmax(axis=1)
    return best, sims[np.arange(len(block)), best]


def _new_leaders(block, best, best_sim, cut: float, n_leaders: int) -> np.ndarray:
    """The block rows that become representatives, ascending; ``best`` and ``best_sim`` are
    updated for the rows nearer to one of them than to any earlier representative."""
    # Questions with no earlier representative, in order: each is a new
    # representative unless it matches one made before it in this block.
    # Only those that match another such question need that walk.
    lonely = np.flatnonzero(best_sim < cut)
    within = block @ block[lonely].T
    hit = within >= cut  # [question, lonely question]; read this way only, as rounding is not symmetric
    hit[lonely, np.arange(lonely.size)] = False
    is_new = np.ones(lonely.size, dtype=bool)
    remaining = np.flatnonzero(hit[lonely].any(axis=1))
    while remaining.size:
        first, remaining = remaining[0], remaining[1:]
        dropped = hit[lonely[remaining], first]
        is_new[remaining[dropped]] = False
        remaining = remaining[~dropped]
    new = np.flatnonzero(is_new)
    fresh = lonely[new]
    if new.size:
        # A representative made in this block counts for the questions after it.
        near = np.flatnonzero(hit[:, new].any(axis=1))
        sims = within[np.ix_(near, new)]
        sims[near[:, None] <= fresh[None, :]] = -np.inf
        nearest = sims.argmax(axis=1)
        nearest_sim = sims[np.arange(near.size), nearest]
        gain = nearest_sim > best_sim[near]  # ties keep the earlier representative
        best[near[gain]] = n_leaders + nearest[gain]
        best_sim[near[gain]] = nearest_sim[gain]
        best[fresh] = n_leaders + np.arange(fresh.size)
    return fresh
