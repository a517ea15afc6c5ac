"""The paths that keep the analysis fast and memory-bounded at a million chunks equal the plain computations.

Small random data with tiny blocks exercise every block boundary; the real
example (wiki-qa, real local model) checks that the retrieval check's reuse of the
screener's pass changes no figure and no decision.
"""

import numpy as np
import pandas as pd
import pytest

from coverage_core.blockwise import RunningTopK
from coverage_core.checks import retrieval, retrieval_labels
from coverage_core.checks.runner import run_retrieval_check
from coverage_core.measure import measure
from coverage_core.offtopic import screener as screening
from coverage_core.stages import lexical, similarity
from coverage_core.stages.lexical import lexical_coverage
from coverage_core.validation import unit_rows
from tests.helpers import plain_lexical_coverage


def unit(x):
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1)).astype(np.float32)


# --- the lexical coverage ---------------------------------------------------


CHUNKS = [
    "The koala eats eucalyptus leaves; koalas sleep 20 hours.",
    "Drums are struck with sticks. A drummer plays the snare drum.",
    "The flute is a woodwind instrument & it has no reed.",
    "Café culture: the espresso\u2014strong coffee\u2014arrived in 1884.",
    "Koala retirement? No: koalas retire to the eucalyptus forest.",
    "Snare drums, bass drums and cymbals make a drum kit.",
    "Mozart wrote operas and flute concertos &amp; symphonies.",
    "Control \x01 characters and \u2063 invisible separators are not words.",
    "ÉCOLE and École and école: one word after lower-casing.",
    "",
]
QUESTIONS = [
    "What do koalas eat?",
    "How long does a koala sleep?",
    "Which drum is played with sticks?",
    "Is the flute a woodwind with a reed?",
    "When did espresso arrive?",
    "What did Mozzart write for the flute?",  # a typo fixed to "mozart"
    "Do cimbals belong to a drum kit?",  # a typo fixed to "cymbal"
    "What is the airspeed of a swallow?",  # nothing in the corpus
    "What is it?",  # no content word
    "Where do retired koalas go?",
    "Is école a word?",
]


@pytest.mark.parametrize("block_bytes", [1, 64, 1 << 22])
def test_lexical_coverage_equals_the_plain_computation(monkeypatch, block_bytes):
    # Tiny blocks split the chunks at every possible place.
    monkeypatch.setattr(lexical, "HASH_BLOCK_BYTES", block_bytes)
    coverage, best, absent = lexical_coverage(QUESTIONS, CHUNKS)
    expected_coverage, expected_best, expected_absent = plain_lexical_coverage(QUESTIONS, CHUNKS)
    np.testing.assert_allclose(coverage, expected_coverage, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(best, expected_best)
    assert absent == expected_absent
    assert np.isnan(coverage[8]) and coverage[7] == 0.0 and best[7] == -1
    # The typos were fixed ("mozzart", "cimbals"); "write" and "belong" are in no text.
    assert absent[5] == ["writ"] and absent[6] == ["belong"]


def test_lexical_coverage_equals_the_plain_computation_on_random_texts(monkeypatch):
    rng = np.random.default_rng(5)
    words = ["alpha", "betas", "gamma", "delta", "epsilon", "zeta", "etas", "theta", "iota", "kappa",
             "lambda", "mu", "retire", "retired", "retirement", "drum", "drums", "flute", "koala", "koalas"]
    chunks = [" ".join(rng.choice(words, rng.integers(0, 12))) + "." for _ in range(300)]
    questions = ["What " + " ".join(rng.choice(words + ["zebra", "gammma", "thetaa"], rng.integers(1, 6))) + "?"
                 for _ in range(120)]
    monkeypatch.setattr(lexical, "HASH_BLOCK_BYTES", 200)
    coverage, best, absent = lexical_coverage(questions, chunks)
    expected_coverage, expected_best, expected_absent = plain_lexical_coverage(questions, chunks)
    np.testing.assert_allclose(coverage, expected_coverage, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(best, expected_best)
    assert absent == expected_absent


def test_best_share_is_exact_with_ties_and_empty_postings():
    rng = np.random.default_rng(2)
    n = 60
    scratch = np.zeros(n)
    for _ in range(200):
        k = int(rng.integers(1, 7))
        postings = [np.sort(rng.choice(n, int(rng.integers(0, n)), replace=False)) for _ in range(k)]
        weights = rng.choice([0.1, 0.2, 0.3, 1.0], k)  # repeated weights: many exact ties
        weights = weights / weights.sum()
        shares = np.zeros(n)
        for chunks, w in zip(postings, weights):
            shares[chunks] += w
        value, chunk = lexical._best_share(postings, weights, scratch)
        assert value == pytest.approx(shares.max(), abs=1e-12)
        if shares.max() == 0:
            assert chunk == -1
        else:  # the first chunk at the best share; sums equal in exact arithmetic may round apart
            assert shares[chunk] == pytest.approx(shares.max(), abs=1e-12)
            assert not (shares[:chunk] > shares.max() - 1e-12).any()
        assert not scratch.any()  # left all zero for the next question


# --- blocked similarity passes ---------------------------------------------


def tied_vectors(rng, n, m):
    """One-hot, doubled, negative and zero rows: similarities exactly -1, 0 or 1, many ties."""
    basis = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [-1, 0, 0], [0, 2, 0]], dtype=np.float32)
    return basis[rng.integers(0, len(basis), n)], basis[rng.integers(0, len(basis), m)]


@pytest.mark.parametrize("block_size", [1, 2, 5, None])
@pytest.mark.parametrize("kind", ["random", "tied"])
def test_best_matches_equals_the_full_matrix(block_size, kind):
    rng = np.random.default_rng(7)
    if kind == "random":
        chunks, questions = rng.normal(size=(37, 6)), rng.normal(size=(11, 6))
    else:
        chunks, questions = tied_vectors(rng, 37, 11)
    penalty = rng.uniform(0, 0.5, 37).astype(np.float32)
    sims = unit(chunks) @ unit(questions).T
    found = similarity.best_matches(chunks, questions, chunk_penalty=penalty, top_k=4, block_size=block_size)
    np.testing.assert_allclose(found.question_similarity, sims.max(axis=0), atol=1e-6)
    np.testing.assert_array_equal(found.nearest_chunk, sims.argmax(axis=0))
    np.testing.assert_allclose(found.chunk_similarity, sims.max(axis=1), atol=1e-6)
    np.testing.assert_array_equal(found.nearest_question, sims.argmax(axis=1))
    np.testing.assert_allclose(found.question_support, (sims - penalty[:, None]).max(axis=0), atol=1e-6)
    expected = np.argsort(-sims.T, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(found.top_chunks, expected)
    np.testing.assert_allclose(found.top_similarities, np.take_along_axis(sims.T, expected, axis=1), atol=1e-6)


@pytest.mark.parametrize("entities_on_rows", [True, False])
def test_running_top_k_equals_a_stable_sort_for_any_block_size(entities_on_rows):
    rng = np.random.default_rng(11)
    values = rng.choice([-1.0, 0.0, 0.5, 1.0], size=(9, 50)).astype(np.float32)  # many ties
    values[:, 10:] += rng.normal(scale=0.3, size=(9, 40)).astype(np.float32)
    for k in (1, 3, 8, 50):
        expected = np.argsort(-values, axis=1, kind="stable")[:, :k]
        for step in (1, 2, 7, 50):
            best = RunningTopK(9, k)
            for start in range(0, 50, step):
                block = values[:, start : start + step]
                best.add(block if entities_on_rows else np.ascontiguousarray(block.T), start,
                         entities_on_rows=entities_on_rows)
            np.testing.assert_array_equal(best.indices, expected, err_msg=f"k={k} step={step}")
            np.testing.assert_array_equal(best.values, np.take_along_axis(values, expected, axis=1))


def test_scan_from_a_depth_one_index_equals_the_full_scan():
    rng = np.random.default_rng(3)
    chunks, questions = rng.normal(size=(400, 8)), rng.normal(size=(60, 8))
    labels = rng.integers(0, 5, 400)
    centroids = np.stack([unit(chunks)[labels == k].mean(axis=0) for k in range(5)])
    inliers = rng.random(60) > 0.3  # many chunks' best question is screened out
    settings = dict(inliers=inliers, threshold=0.9, n_nearest=2)
    full = similarity.scan_similarities(chunks, questions, labels, centroids, **settings)
    index = similarity.best_matches(chunks, questions).index()
    reused = similarity.scan_similarities(chunks, questions, labels, centroids, index=index, **settings)
    for name in ("min_distances", "question_similarity", "multi_threshold_per_cluster", "multi_n_per_cluster"):
        np.testing.assert_allclose(getattr(reused, name), getattr(full, name), atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(reused.nearest_question, full.nearest_question)
    np.testing.assert_array_equal(reused.nearest_chunk, full.nearest_chunk)


def test_unit_rows_are_used_in_place_and_others_normalized():
    vectors = unit(np.random.default_rng(0).normal(size=(20, 4)))
    vectors[3] = 0.0
    assert unit_rows(vectors, copy=False) is vectors
    scaled = vectors * 2
    np.testing.assert_allclose(unit_rows(scaled, copy=False), vectors, atol=1e-6)


# --- the real example ------------------------------------------------------


@pytest.mark.slow
def test_measuring_from_the_screeners_pass_changes_no_figure_or_decision(example_analysis):
    analysis = example_analysis
    assert analysis.is_outlier.any() and not analysis.is_outlier.all()
    # The full product, with every question kept for every chunk.
    index = similarity.nearest_questions(analysis.corpus.vectors, analysis.question_vectors,
                                      depth=len(analysis.question_vectors))
    again = measure(analysis.config, analysis.corpus, analysis.questions, analysis.question_embedding,
                    analysis.clustering, screener=analysis.screener, index=index, calibration=analysis.calibration)
    np.testing.assert_allclose(analysis.min_distances, again.min_distances, atol=1e-6)
    for name, value in again.metrics.items():
        assert analysis.metrics[name] == pytest.approx(value, abs=1e-6), name
    for column in ("is_gap", "n_tested", "is_untested"):
        table = "clusters" if column != "is_untested" else "documents"
        pd.testing.assert_series_equal(getattr(analysis, table)[column], getattr(again, table)[column])
    np.testing.assert_array_equal(analysis.is_outlier, again.is_outlier)


@pytest.mark.slow
def test_retrieval_from_the_screeners_pass_equals_its_own_search(example_analysis):
    analysis = example_analysis
    reused = run_retrieval_check(analysis, k=5)
    assert reused is not None and reused.n_labelled > 0
    questions = analysis.questions
    searched = retrieval.evaluate_retrieval(
        analysis.question_vectors, analysis.corpus.vectors, analysis.corpus.chunks,
        retrieval_labels.relevant_from_questions(questions, reused.relevant_column), 5,
        rows=questions.rows, question_texts=questions.texts, relevant_column=reused.relevant_column,
        documents=analysis.corpus.documents,
    )
    for name in ("precision_at_k", "recall_at_k", "hit_at_k", "mrr"):
        assert getattr(reused, name) == pytest.approx(getattr(searched, name), abs=1e-9), name
    pd.testing.assert_frame_equal(reused.per_question, searched.per_question, atol=1e-6)
    # k beyond what the pass kept: searched again, same result as a plain search.
    deeper = run_retrieval_check(analysis, k=screening.TOP_CHUNKS_KEPT + 1)
    assert deeper.k == screening.TOP_CHUNKS_KEPT + 1
