"""The large-corpus paths of clustering, topic terms, gap passages and the map.

The paths are switched on at a few tens of thousands of rows by lowering
their size thresholds, so the same code that runs on a million chunks runs
here in seconds, on several blocks.
"""

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import adjusted_rand_score

from coverage_core import threads
from coverage_core.outputs import plots
from coverage_core.projection import project_2d
from coverage_core.stages import clustering, topics
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.suggest import passages
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.passages import representative_chunks, representatives_by_cluster
from coverage_core.types import Chunk
from coverage_core.validation import unit_rows


def topic_vectors(n, n_topics=12, dims=64, tightness=0.6, seed=0):
    """Unit vectors around ``n_topics`` random directions; within-topic cosine ~``tightness``."""
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((n_topics, dims))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    truth = rng.integers(0, n_topics, n)
    noise = rng.standard_normal((n, dims))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    X = np.sqrt(tightness) * directions[truth] + np.sqrt(1 - tightness) * noise
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32), truth


@pytest.fixture
def blocked(monkeypatch):
    """The million-chunk clustering path from 10,000 rows on, in blocks of 4,096 rows."""
    monkeypatch.setattr(clustering, "BLOCKED_REFINE_ABOVE", 10_000)
    monkeypatch.setattr(clustering, "BLOCK_ROWS", 4_096)


# --------------------------------------------------------------------------
# clustering
# --------------------------------------------------------------------------


def test_blocked_path_finds_the_planted_topics_and_is_deterministic(blocked, monkeypatch):
    X, truth = topic_vectors(30_000)
    calls = []
    original = clustering._lloyd_in_blocks
    monkeypatch.setattr(clustering, "_lloyd_in_blocks", lambda *a: calls.append(1) or original(*a))
    first = ChunkClusterer(n_clusters=12, random_state=5).fit(X)
    second = ChunkClusterer(n_clusters=12, random_state=5).fit(X)
    assert len(calls) == 2  # the blocked path ran
    np.testing.assert_array_equal(first.labels_, second.labels_)
    np.testing.assert_array_equal(first.cluster_centers_, second.cluster_centers_)
    assert adjusted_rand_score(truth, first.labels_) > 0.99
    assert first.n_clusters_ == 12 and set(first.labels_) == set(range(12))
    np.testing.assert_allclose(np.linalg.norm(first.cluster_centers_, axis=1), 1.0, atol=1e-5)
    # A different seed samples and seeds differently: still a sensible
    # partition (one K-means++ start may merge two topics and split another).
    other = ChunkClusterer(n_clusters=12, random_state=6).fit(X)
    assert not np.array_equal(other.labels_, first.labels_)
    assert adjusted_rand_score(truth, other.labels_) > 0.8


def test_blocked_path_matches_scikit_learn_quality_and_inertia(blocked, monkeypatch):
    X, _ = topic_vectors(30_000, n_topics=40, tightness=0.3, seed=2)  # overlapping topics: K-means has work to do
    fast = ChunkClusterer(n_clusters=20).fit(X)
    monkeypatch.setattr(clustering, "BLOCKED_REFINE_ABOVE", 10**9)
    reference = ChunkClusterer(n_clusters=20).fit(X)
    assert fast.inertia_ <= reference.inertia_ * 1.02
    # The inertia from the last pass's sums equals the direct definition.
    Xn = X.astype(np.float64)
    means = np.stack([Xn[fast.labels_ == k].mean(axis=0) for k in range(fast.n_clusters_)])
    direct = ((Xn - means[fast.labels_]) ** 2).sum()
    assert fast.inertia_ == pytest.approx(direct, rel=1e-6)
    # Each centroid is the normalised mean of its members.
    np.testing.assert_allclose(fast.cluster_centers_, means / np.linalg.norm(means, axis=1, keepdims=True), atol=1e-5)


def test_blocked_path_uses_unit_rows_as_they_are_and_normalizes_others(blocked):
    X, truth = topic_vectors(12_000, n_topics=6)
    assert unit_rows(X, copy=False) is X
    scaled = X * np.random.default_rng(0).uniform(0.5, 3.0, (len(X), 1)).astype(np.float32)
    assert unit_rows(scaled, copy=False) is not scaled
    model = ChunkClusterer(n_clusters=6).fit(scaled)
    assert adjusted_rand_score(truth, model.labels_) > 0.99
    np.testing.assert_allclose(np.linalg.norm(model.cluster_centers_, axis=1), 1.0, atol=1e-5)


def test_blocked_path_counts_duplicate_rows(blocked):
    rng = np.random.default_rng(3)
    distinct = rng.standard_normal((3, 32)).astype(np.float32)
    X = distinct[rng.integers(0, 3, 12_000)]
    model = ChunkClusterer(n_clusters=8).fit(X)
    assert model.n_clusters_ == 3
    assert any("3 distinct" in note for note in model.warnings_)
    groups = [set(model.labels_[np.all(X == row, axis=1)]) for row in distinct]
    assert all(len(g) == 1 for g in groups) and len(set.union(*groups)) == 3


def test_lloyd_in_blocks_is_lloyd(monkeypatch):
    monkeypatch.setattr(clustering, "BLOCK_ROWS", 1_000)
    monkeypatch.setattr(clustering, "REFINE_TOLERANCE", 0.0)
    monkeypatch.setattr(clustering, "REFINE_INERTIA_TOLERANCE", -np.inf)
    X, _ = topic_vectors(5_000, n_topics=6, seed=4)
    start = X[:6].copy()
    labels, sums, inertia, passes = clustering._lloyd_in_blocks(X, start, 3)
    # The same three Lloyd steps done by hand, on all rows at once.
    centres = start.astype(np.float64)
    for _ in range(3):
        expected = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
        centres = np.stack([X[expected == k].mean(axis=0) for k in range(6)])
    assert passes == 3
    np.testing.assert_array_equal(labels, expected)
    np.testing.assert_allclose(sums, np.stack([X[labels == k].sum(axis=0) for k in range(6)]), rtol=1e-5)
    direct = ((X.astype(np.float64) - centres[labels]) ** 2).sum()
    assert inertia == pytest.approx(direct, rel=1e-6)


def test_lloyd_in_blocks_is_the_same_in_any_number_of_threads(monkeypatch):
    monkeypatch.setattr(clustering, "BLOCK_ROWS", 700)  # 8 blocks, the last one short
    X, _ = topic_vectors(5_000, n_topics=6, tightness=0.2, seed=4)
    start = X[:6].copy()
    found = []
    for workers in (1, 2, 3):
        monkeypatch.setattr(threads, "worker_threads", lambda workers=workers: workers)
        found.append(clustering._lloyd_in_blocks(X, start, 5))
    for labels, sums, inertia, passes in found[1:]:
        # The blocks' sums are added in block order whatever thread made them: equal to the bit.
        np.testing.assert_array_equal(labels, found[0][0])
        np.testing.assert_array_equal(sums, found[0][1])
        assert (inertia, passes) == found[0][2:]


def test_lloyd_in_blocks_stops_when_a_pass_barely_lowers_the_inertia(monkeypatch):
    monkeypatch.setattr(clustering, "BLOCK_ROWS", 1_000)
    monkeypatch.setattr(clustering, "REFINE_TOLERANCE", 0.0)
    monkeypatch.setattr(clustering, "REFINE_INERTIA_TOLERANCE", -np.inf)
    X, _ = topic_vectors(5_000, n_topics=6, tightness=0.2, seed=4)  # overlapping: passes keep moving rows
    start = X[:6].copy()
    inertias = [clustering._lloyd_in_blocks(X, start, n_passes)[2] for n_passes in range(1, 7)]
    gains = -np.diff(inertias) / np.array(inertias[1:])
    assert (gains >= 0).all() and gains.max() > 0
    # A tolerance between the gains: the refinement stops after the first pass gaining no more.
    tolerance = float(np.median(gains))
    monkeypatch.setattr(clustering, "REFINE_INERTIA_TOLERANCE", tolerance)
    labels, _, inertia, passes = clustering._lloyd_in_blocks(X, start, 6)
    expected = 2 + int(np.flatnonzero(gains <= tolerance)[0])
    assert passes == expected and inertia == pytest.approx(inertias[expected - 1], rel=1e-9)
    monkeypatch.setattr(clustering, "REFINE_INERTIA_TOLERANCE", -np.inf)
    np.testing.assert_array_equal(labels, clustering._lloyd_in_blocks(X, start, expected)[0])


def test_blocked_path_caps_the_sample_fit_iterations(blocked, monkeypatch):
    seen = []

    class RecordingKMeans(clustering.KMeans):
        def fit(self, X, *args, **kwargs):
            seen.append((len(X), self.max_iter))
            return super().fit(X, *args, **kwargs)

    monkeypatch.setattr(clustering, "KMeans", RecordingKMeans)
    X, truth = topic_vectors(30_000)
    model = ChunkClusterer(n_clusters=12, random_state=5).fit(X)
    assert seen == [(clustering.SAMPLE_SIZE, clustering.LARGE_SAMPLE_MAX_ITER)]
    assert clustering.LARGE_SAMPLE_MAX_ITER < ChunkClusterer().max_iter
    assert adjusted_rand_score(truth, model.labels_) > 0.99
    seen.clear()
    ChunkClusterer(n_clusters=12, max_iter=5).fit(X)
    assert seen == [(clustering.SAMPLE_SIZE, 5)]  # a lower max_iter of the estimator wins


# --------------------------------------------------------------------------
# topic terms
# --------------------------------------------------------------------------


def _texts(n_per_cluster, seed=0):
    rng = np.random.default_rng(seed)
    words = {0: ["koala", "eucalyptus", "marsupial"], 1: ["lobster", "claws", "seafloor"], 2: ["violin", "bow", "strings"]}
    common = ["animal", "found", "large", "known", "often", "people"]
    texts, labels = [], []
    for cluster, own in words.items():
        for _ in range(n_per_cluster):
            texts.append(" ".join(rng.choice(own + common, 30)) + ".")
            labels.append(cluster)
    order = rng.permutation(len(texts))
    return [texts[i] for i in order], np.array(labels)[order]


def test_sampled_terms_equal_the_full_ones_below_the_bound():
    texts, labels = _texts(40)  # every cluster below MAX_CHUNKS_PER_CLUSTER
    assert topics.MAX_CHUNKS_PER_CLUSTER > 40
    bounded = topics.cluster_terms(texts, labels, 3, n_terms=6)
    full = topics.cluster_terms(texts, labels, 3, n_terms=6, max_chunks_per_cluster=None)
    assert bounded == full
    assert [t[0] for t in bounded] and all(t for t in bounded)


def test_large_clusters_count_a_bounded_evenly_spaced_sample(monkeypatch):
    texts, labels = _texts(400)
    counted = []
    original = topics._count_terms
    monkeypatch.setattr(topics, "_count_terms", lambda t, *stop: counted.append(len(t)) or original(t, *stop))
    terms = topics.cluster_terms(texts, labels, 3, n_terms=4, max_chunks_per_cluster=50)
    assert counted == [150]  # 3 clusters x 50 chunks, not 1,200
    keep = topics._evenly_per_cluster(labels, 50)
    assert np.bincount(labels[keep]).tolist() == [50, 50, 50]
    # Evenly spaced through each cluster: its first and last chunk are kept.
    for cluster in range(3):
        members = np.flatnonzero(labels == cluster)
        assert members[0] in keep and members[-1] in keep
    manual = topics.cluster_terms([texts[i] for i in keep], labels[keep], 3, n_terms=4, max_chunks_per_cluster=None)
    assert terms == manual
    assert "koala" in terms[0] and "lobster" in terms[1] and "violin" in terms[2]


def test_the_same_question_is_counted_once(monkeypatch):
    texts, labels = _texts(30, seed=1)
    topics._RECENT_TERMS.clear()
    counted = []
    original = topics._count_terms
    monkeypatch.setattr(topics, "_count_terms", lambda t, *stop: counted.append(len(t)) or original(t, *stop))
    first = topics.cluster_terms(texts, labels, 3, n_terms=5)
    first[0].append("edited by the caller")  # a caller's list is its own
    assert topics.cluster_terms(texts, labels, 3, n_terms=5) == topics.cluster_terms(texts, labels, 3, n_terms=5)
    assert "edited by the caller" not in topics.cluster_terms(texts, labels, 3, n_terms=5)[0]
    assert len(counted) == 1
    changed = list(texts)
    changed[0] = changed[0] + " zebra"
    topics.cluster_terms(changed, labels, 3, n_terms=5)
    assert len(counted) == 2  # other texts: counted again


def _reference_analyze(text):
    """Terms of a text the straightforward way: phrase by phrase, word by word."""
    terms = []
    for segment in re.split(r"[^\w\s'-]+|\s['-]|['-]\s", topics._MARKUP.sub(" . ", text.lower())):
        words = [w if topics._is_term_word(w) else None for w in re.findall(r"\w+", segment)]
        terms += [w for w in words if w]
        terms += [f"{a} {b}" for a, b in zip(words, words[1:]) if a and b]
    return terms


def _reference_counts(texts):
    """scikit-learn's CountVectorizer on :func:`_reference_analyze`, with the min_df rule of ``topics._count_terms``."""
    for min_df in ((2, 1) if len(texts) >= 20 else (1,)):
        vectorizer = CountVectorizer(analyzer=_reference_analyze, min_df=min_df)
        try:
            return vectorizer.fit_transform(texts), vectorizer.get_feature_names_out()
        except ValueError:  # empty vocabulary, or nothing left at this min_df
            continue
    return None, None


def _assert_same_counts(texts):
    """True when both have terms (and they are equal), False when neither has."""
    expected, expected_terms = _reference_counts(texts)
    counts, terms = topics._count_terms(texts)
    if expected is None:
        assert counts is None and terms is None
        return False
    assert list(terms) == list(expected_terms)
    assert counts.shape == expected.shape and (counts != expected).nnz == 0
    return True


@pytest.mark.parametrize(
    "text",
    [
        "The koala eats leaves.",
        "See http://example.org/koala for more, or www.koala.org today.",
        "alt=Photo of a koala width=200px <b>bold</b> &amp; {{cite}} [[link]] '''bold''' a|b",
        "The file koala.JPG shows it; koala.html too.",
        "It's a well-known marsupial's habit (mostly).",
    ],
)
def test_plain_prose_skips_the_markup_pass_without_changing_terms(text):
    assert _assert_same_counts([text, text.upper(), "koala eats"])


_PIECES = [
    "koala", "Koala", "steam", "engine", "the", "of", "ÉTÉ", "naïve", "漢字", "x", "ab", "iv", "xii", "_", "a_b",
    "1990s", "42", "page", "copyright", "don't", "well-known", "'s", "-x", "x-", " ", "  ", "\t", "\n", ".", ",",
    "!", "'", "-", "--", "''", "'''", "=", "alt=", "<b>", "</b>", "&amp;", "{{", "]]", "|", "http://x.org/a",
    "www.k.org", "koala.JPG",
]


def test_counted_terms_equal_count_vectorizer_on_random_texts():
    rng = np.random.default_rng(11)
    with_terms = 0
    for _ in range(300):
        texts = []
        for _ in range(int(rng.integers(0, 30))):
            pieces = rng.choice(_PIECES, int(rng.integers(0, 25)))
            # Glued pieces make words, punctuation and markup meet in every order.
            texts.append("".join(pieces) if rng.random() < 0.5 else " ".join(pieces))
        with_terms += _assert_same_counts(texts)
    assert with_terms > 200  # most draws have terms; the others check the "no term" answer


def _without(found, stop):
    """The reference counts without the terms holding one of ``stop`` (the corpus languages' stop words)."""
    counts, names = found
    keep = [i for i, name in enumerate(names) if not set(name.split()) & stop]
    return counts[:, keep], names[keep]


def test_ranked_terms_equal_those_from_count_vectorizer_counts(monkeypatch):
    texts, labels = _texts(120, seed=3)
    assert _assert_same_counts(texts)
    # Terms tied in weight and spread are ranked by name: the same ranking either way.
    ours = topics._class_terms(texts, labels, 3, 12)
    monkeypatch.setattr(topics, "_count_terms", lambda t, stop=frozenset(): _without(_reference_counts(t), stop))
    assert topics._class_terms(texts, labels, 3, 12) == ours
    assert "koala" in " ".join(ours[0])


# --------------------------------------------------------------------------
# gap passages
# --------------------------------------------------------------------------


def test_representatives_of_all_clusters_in_one_pass_equal_one_cluster_at_a_time(monkeypatch):
    monkeypatch.setattr(passages, "_BLOCK_ROWS", 1_000)
    X, truth = topic_vectors(6_500, n_topics=7, seed=8)
    X = X.astype(np.float64) * 2.5  # float64 and not unit length: converted and normalised per row
    X[17] = 0.0  # a zero row has similarity 0
    centroids = np.stack([X[truth == k].mean(axis=0) for k in range(7)] + [np.ones(X.shape[1])])  # cluster 7 empty
    together = representatives_by_cluster(X, truth, centroids, 10)
    assert len(together) == 8 and together[7].size == 0
    for k in range(7):
        np.testing.assert_array_equal(together[k], representative_chunks(X, truth, centroids, k, 10))
        members = np.flatnonzero(truth == k)
        cosine = X[members] @ centroids[k] / (np.linalg.norm(X[members], axis=1).clip(1e-12) * np.linalg.norm(centroids[k]))
        np.testing.assert_array_equal(together[k], members[np.lexsort((members, -cosine))][:10])
    with pytest.raises(ValueError, match="cluster numbers"):
        representatives_by_cluster(X, np.full(len(X), 9), centroids, 3)


def test_gaps_on_a_large_corpus_use_each_gap_s_representatives(monkeypatch):
    monkeypatch.setattr(passages, "_BLOCK_ROWS", 2_000)
    X, truth = topic_vectors(9_000, n_topics=6, seed=9)
    texts_by_topic = ["Koalas eat eucalyptus leaves in the forests of eastern Australia every night.",
                      "Lobsters have large claws and live on the rocky sea floor near the coast.",
                      "The violin is played with a bow drawn across four tightly tuned strings.",
                      "Steam engines burned coal to boil water and drive pistons in early factories.",
                      "Volcanoes erupt molten rock and ash when pressure builds below the crust.",
                      "Bread dough rises when yeast ferments the sugars in warm flour and water."]
    texts = [f"{texts_by_topic[t]} Passage number {i} of the corpus is long enough." for i, t in enumerate(truth)]
    documents = [f"doc{t}.txt" for t in truth]
    centroids = np.stack([X[truth == k].mean(axis=0) for k in range(6)])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    distances = np.where(truth < 3, 0.1, 0.8) + np.random.default_rng(0).uniform(0, 0.05, len(truth))
    coverage = np.array([1 - distances[truth == k].mean() for k in range(6)])
    found, _ = analyze_gaps(
        texts, documents, X, truth, centroids, distances, coverage, ["What do koalas eat?"],
        is_gap=coverage < GapConfig().gap_threshold,
    )
    assert sorted(g.cluster for g in found) == [3, 4, 5]
    for gap in found:
        representatives = representative_chunks(X, truth, centroids, gap.cluster, 10)
        assert set(gap.passages) <= set(representatives.tolist())
        assert all(truth[p] == gap.cluster for p in gap.passages)
        assert gap.suggestions and all(s.document == f"doc{gap.cluster}.txt" for s in gap.suggestions)


# --------------------------------------------------------------------------
# the map
# --------------------------------------------------------------------------


def test_many_questions_are_sampled_and_the_map_says_so():
    chunks, labels = topic_vectors(2_000, n_topics=4, seed=10)
    questions, _ = topic_vectors(3_000, n_topics=4, seed=11)
    projection = project_2d(chunks, questions, labels, method="pca", max_points=1_000, random_state=1)
    assert projection.sampled and projection.questions_sampled
    assert len(projection.chunk_index) == 500 and len(projection.question_index) == 500
    assert projection.question_xy.shape == (500, 2)
    assert np.all(np.diff(projection.question_index) > 0) and projection.question_index.max() < 3_000
    assert projection.caption == (
        "Map shows 500 of 2,000 chunks (sampled evenly across clusters) and 500 of 3,000 questions "
        "(sampled at random); metrics use every chunk and question."
    )
    again = project_2d(chunks, questions, labels, method="pca", max_points=1_000, random_state=1)
    np.testing.assert_array_equal(projection.question_index, again.question_index)


def test_few_questions_are_all_drawn_and_only_drawn_rows_are_normalized():
    chunks, labels = topic_vectors(3_000, n_topics=5, seed=12)
    scaled = chunks.astype(np.float64) * 3.0
    questions = chunks[:40] + 0.01
    projection = project_2d(scaled, questions, labels, method="pca", max_points=600)
    assert projection.question_index.tolist() == list(range(40)) and not projection.questions_sampled
    assert len(projection.chunk_index) == 560
    assert projection.caption == "Map shows 560 of 3,000 chunks, sampled evenly across clusters; metrics use every chunk."
    # The same map as from unit-length float32 rows.
    reference = project_2d(chunks, questions, labels, method="pca", max_points=600)
    np.testing.assert_allclose(projection.chunk_xy, reference.chunk_xy, atol=1e-5)


def test_map_frames_draw_the_sampled_questions_and_the_figure_discloses_it():
    chunks, labels = topic_vectors(400, n_topics=3, seed=13)
    questions, question_topic = topic_vectors(300, n_topics=3, seed=14)
    projection = project_2d(chunks, questions, labels, method="pca", max_points=200)
    assert projection.questions_sampled and len(projection.question_index) == 100
    analysis = SimpleNamespace(
        corpus=SimpleNamespace(chunks=[Chunk(f"d{i % 4}.txt", f"chunk {i}", 0, 1) for i in range(400)]),
        clustering=SimpleNamespace(labels=labels),
        question_table=pd.DataFrame(
            {
                "text": [f"question {i}" for i in range(300)],
                "nearest_document": [f"d{i % 4}.txt" for i in range(300)],
                "cluster": question_topic,
                "is_outlier": np.arange(300) % 7 == 0,
            }
        ),
        clusters=pd.DataFrame({"cluster": [0, 1, 2], "label": ["a · b", "c · d", "e · f"]}),
    )
    chunk_frame, question_frame = plots.map_frames(analysis, projection)
    assert len(chunk_frame) == 200 and len(question_frame) == 100  # at least 200 chunks are drawn
    assert question_frame["text"].tolist() == [f"question {i}" for i in projection.question_index]
    np.testing.assert_array_equal(question_frame[["x", "y"]].to_numpy(), projection.question_xy)
    np.testing.assert_array_equal(question_frame["is_outlier"], projection.question_index % 7 == 0)
    figure = plots.coverage_map(chunk_frame, question_frame, caption=projection.caption).to_dict()
    subtitle = figure["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")
    assert "200 of 400 chunks" in subtitle and "100 of 300 questions (sampled at random)" in subtitle
