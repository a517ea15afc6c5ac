"""Answerability: labels, point-biserial r / AUROC / Youden threshold, the
dimension sweep and the MDS map data; one end-to-end check with the real
bundled model on the bundled wiki-qa slice."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from coverage_core import blockwise, metrics
from coverage_core.checks import answerability as ans, answerability_labels
from coverage_core.errors import InputError
from coverage_core.inputs.questions import read_questions
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------

POSITIVE_SPELLINGS = [
    "covered", "Covered", "COVERED", "yes", "Yes", "y", "Y", "1", "1.0", " 1 ", "true", "TRUE", "True",
    "answerable", "Answerable", True, 1, 1.0, np.int64(1), np.bool_(True),
]
NEGATIVE_SPELLINGS = [
    "not covered", "Not Covered", "not_covered", "NOT-COVERED", "not  covered", "uncovered", "no", "No", "n",
    "N", "0", "0.0", "false", "False", "unanswerable", "Unanswerable", "not answerable", False, 0, 0.0,
]
BLANK_SPELLINGS = ["", "   ", None, np.nan, float("nan"), "NA", "n/a", "NaN", "none", "null", "unknown", "?"]


@pytest.mark.parametrize("value", POSITIVE_SPELLINGS)
def test_every_positive_spelling_is_answerable(value):
    assert ans.parse_answerable([value]).tolist() == [1.0]


@pytest.mark.parametrize("value", NEGATIVE_SPELLINGS)
def test_every_negative_spelling_is_not_answerable(value):
    assert ans.parse_answerable([value]).tolist() == [0.0]


@pytest.mark.parametrize("value", BLANK_SPELLINGS)
def test_blanks_are_unlabelled(value):
    assert np.isnan(ans.parse_answerable([value])).all()


def test_parse_keeps_order_and_accepts_series_and_arrays():
    values = ["yes", "", "not covered", "1", None]
    expected = [1.0, math.nan, 0.0, 1.0, math.nan]
    for given in (values, pd.Series(values, dtype=object), np.array(values, dtype=object)):
        parsed = ans.parse_answerable(given)
        assert parsed.dtype == np.float64
        np.testing.assert_array_equal(parsed, expected)


def test_junk_labels_are_an_error_naming_them_and_the_accepted_ones():
    with pytest.raises(InputError) as caught:
        ans.parse_answerable(["yes", "maybe", "maybe", "2", "partly", "no"], column="covered")
    message = str(caught.value)
    assert "'covered'" in message
    assert "'maybe' (2 rows)" in message and "'2' (1 row)" in message and "'partly' (1 row)" in message
    assert "covered / not covered" in message and "yes / no" in message and "blank" in message
    assert "'yes'" not in message and "'no'" not in message  # valid values are not blamed


def test_junk_numbers_and_many_junk_values():
    with pytest.raises(InputError, match="'0.5'"):
        ans.parse_answerable([1, 0.5])
    with pytest.raises(InputError, match="and 2 other value"):
        ans.parse_answerable([f"v{i}" for i in range(7)])
    with pytest.raises(InputError):
        ans.parse_answerable("yes")  # one string is not a column


def test_find_label_column_is_tolerant_and_prefers_specific_names():
    assert answerability_labels.find_label_column(["question", "Is Answerable"]) == "Is Answerable"
    assert answerability_labels.find_label_column(["question", "COVERED"]) == "COVERED"
    assert answerability_labels.find_label_column(["label", "question", "covered"]) == "covered"  # "label" is the last resort
    assert answerability_labels.find_label_column(["question", "label"]) == "label"
    assert answerability_labels.find_label_column(["question", "answer"]) is None
    assert answerability_labels.find_label_column(["question", "Gold Label"], explicit="gold-label") == "Gold Label"
    with pytest.raises(InputError, match="'question', 'answer'"):
        answerability_labels.find_label_column(["question", "answer"], explicit="covered")


def _question_set(frame: pd.DataFrame):
    return read_questions(frame.to_csv(index=False).encode("utf-8"), name="q.csv")


def test_question_labels_align_with_the_questions_not_the_rows():
    frame = pd.DataFrame(
        {"question": ["What is a?", "", "What is b?", "What is c?"], "Answerable": ["yes", "no", "", "No"]}
    )
    found = answerability_labels.question_labels(_question_set(frame))
    assert found.column == "Answerable"
    # The blank question row is skipped, its label with it.
    np.testing.assert_array_equal(found.labels, [1.0, math.nan, 0.0])
    assert found.n_labelled == 2 and found.notes == ()


def test_question_labels_strict_when_named_lenient_when_guessed():
    frame = pd.DataFrame({"question": ["a?", "b?", "c?"], "label": ["history", "physics", "history"]})
    guessed = answerability_labels.question_labels(_question_set(frame))
    assert guessed.column is None and np.isnan(guessed.labels).all()
    assert len(guessed.notes) == 1 and "'label'" in guessed.notes[0] and "'history' (2 rows)" in guessed.notes[0]
    with pytest.raises(InputError, match="'physics'"):
        answerability_labels.question_labels(_question_set(frame), label_column="label")
    none = answerability_labels.question_labels(_question_set(frame[["question"]]))
    assert none.column is None and none.notes == () and none.labels.shape == (3,)


# --------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------


def test_point_biserial_equals_pearson_on_the_labelled_questions():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 60).astype(float)
    scores = 0.3 + 0.2 * labels + rng.normal(0, 0.15, 60)
    labels[[4, 9, 20]] = np.nan
    scores[9] = np.nan  # an unlabelled question's similarity is not used
    result = ans.answerability(scores, labels)
    keep = ~np.isnan(labels)
    r, p = stats.pearsonr(labels[keep], scores[keep])
    assert result.point_biserial_r == pytest.approx(r, abs=1e-12)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    assert result.point_biserial_r > 0.3
    assert (result.n_labelled, result.n_answerable + result.n_unanswerable) == (57, 57)
    assert result.n_answerable == int(np.nansum(labels))


def test_auroc_matches_a_hand_computed_case():
    # Answerable 0.9, 0.6, 0.4; not answerable 0.5, 0.3: 5 of 6 pairs ordered.
    result = ans.answerability([0.9, 0.5, 0.6, 0.3, 0.4], [1, 0, 1, 0, 1])
    assert result.auroc == pytest.approx(5 / 6)
    # A tie counts half: (0.5 vs 0.5) = 1/2, (0.5 vs 0.2) = 1 -> 3/4.
    assert ans.answerability([0.5, 0.5, 0.2], [1, 0, 0]).auroc == pytest.approx(0.75)


def test_youden_threshold_lies_between_separable_groups():
    unanswerable, answerable = [0.1, 0.2, 0.3], [0.6, 0.7, 0.8]
    result = ans.answerability(unanswerable + answerable, [0, 0, 0, 1, 1, 1])
    assert max(unanswerable) < result.threshold < min(answerable)
    assert result.threshold == pytest.approx(0.45)  # the midpoint of the gap
    assert (result.auroc, result.youden_j, result.sensitivity, result.specificity) == (1.0, 1.0, 1.0, 1.0)
    assert result.note is None


def test_youden_threshold_on_an_overlapping_hand_case():
    # Cuts "answerable if s >= t": J(0.9)=.25, J(0.6)=.5, J(0.55)=.17, J(0.5)=.42,
    # J(0.4)=.08, J(0.35)=.33. Best at 0.6; the next lower score is 0.55.
    scores = [0.1, 0.4, 0.55, 0.35, 0.5, 0.6, 0.9]
    labels = [0, 0, 0, 1, 1, 1, 1]
    result = ans.answerability(scores, labels)
    assert result.threshold == pytest.approx(0.575)
    assert result.youden_j == pytest.approx(0.5)
    assert (result.sensitivity, result.specificity) == (pytest.approx(0.5), pytest.approx(1.0))
    # The threshold reproduces its own sensitivity / specificity when used as "s >= t".
    s, y = np.array(scores), np.array(labels)
    assert np.mean(s[y == 1] >= result.threshold) == pytest.approx(result.sensitivity)
    assert np.mean(s[y == 0] < result.threshold) == pytest.approx(result.specificity)


def test_youden_ties_go_to_the_highest_threshold():
    # J = 0.5 both at t = 0.8 (midpoint 0.7) and at t = 0.4 (midpoint 0.3).
    result = ans.answerability([0.2, 0.6, 0.4, 0.8], [0, 0, 1, 1])
    assert result.youden_j == pytest.approx(0.5)
    assert result.threshold == pytest.approx(0.7)


def test_youden_is_the_best_of_all_cuts_on_random_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = rng.normal(0.4 + 0.1 * y, 0.1)
    result = ans.answerability(s, y)
    cuts = np.unique(s)
    j = [np.mean(s[y == 1] >= t) - np.mean(s[y == 0] >= t) for t in cuts]
    assert result.youden_j == pytest.approx(max(j))
    assert np.mean(s[y == 1] >= result.threshold) - np.mean(s[y == 0] >= result.threshold) == pytest.approx(max(j))


def test_labels_may_be_strings():
    text = ans.answerability([0.2, 0.8, 0.3, 0.9], ["no", "yes", "not covered", "Covered"])
    numbers = ans.answerability([0.2, 0.8, 0.3, 0.9], [0, 1, 0, 1])
    assert text == numbers


@pytest.mark.parametrize(
    "scores, labels, words",
    [
        ([], [], "Only 0"),
        ([0.5], [1], "Only 1"),
        ([0.5, 0.7, 0.2], [np.nan, 1, np.nan], "Only 1"),
        ([0.5, 0.7, 0.2], [1, 1, 1], "are answerable"),
        ([0.5, 0.7], ["no", "no"], "are not answerable"),
        ([0.4, 0.4, 0.4, 0.4], [1, 0, 1, 0], "same best similarity"),
    ],
)
def test_degenerate_cases_give_nan_and_a_note(scores, labels, words):
    result = ans.answerability(scores, labels)
    assert words in result.note
    assert math.isnan(result.point_biserial_r) and math.isnan(result.p_value) and math.isnan(result.threshold)
    if "same best similarity" in words:
        assert result.auroc == 0.5  # every pair tied
    else:
        assert math.isnan(result.auroc)


def test_reversed_labels_have_no_threshold_and_say_so():
    result = ans.answerability([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0])
    assert result.auroc == 0.0 and result.point_biserial_r < 0
    assert math.isnan(result.threshold) and "better than chance" in result.note


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="one answerability label per question"):
        ans.answerability([0.1, 0.2], [1, 0, 1])
    with pytest.raises(InputError, match="1 \\(answerable\\), 0"):
        ans.answerability([0.1, 0.2], [1, 2])
    with pytest.raises(InputError, match="NaN"):
        ans.answerability([0.1, np.nan], [1, 0])


def test_section_schema_is_plain_json():
    good = ans.answerability([0.1, 0.2, 0.3, 0.6, 0.7, 0.8], [0, 0, 0, 1, 1, 1])
    section = ans.answerability_section(good, "covered")
    assert list(section) == ["label_column", "n_labelled", "point_biserial_r", "p_value", "auroc", "threshold"]
    assert section["label_column"] == "covered" and section["n_labelled"] == 6
    assert section["auroc"] == 1.0 and section["threshold"] == pytest.approx(0.45)
    assert 0 < section["p_value"] < 0.01
    assert all(type(v) in (str, int, float) for v in section.values())
    assert json.loads(json.dumps(section, allow_nan=False)) == section
    tiny = ans.answerability_section(ans.answerability([0.1, 0.2], [np.nan, np.nan]), None)
    assert tiny == {"label_column": None, "n_labelled": 0, "point_biserial_r": None, "p_value": None,
                    "auroc": None, "threshold": None}
    json.dumps(tiny, allow_nan=False)


def test_tiny_p_values_are_not_rounded_to_zero():
    y = np.r_[np.zeros(200), np.ones(200)]
    s = np.r_[np.linspace(0.0, 0.4, 200), np.linspace(0.5, 0.9, 200)]
    section = ans.answerability_section(ans.answerability(s, y), "label")
    assert 0 < section["p_value"] < 1e-6


# --------------------------------------------------------------------------
# dimension sweep
# --------------------------------------------------------------------------


def _random(m, n, dim, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, dim)).astype(np.float32), rng.normal(size=(n, dim)).astype(np.float32)


def test_full_dimension_row_is_the_reference():
    q, c = _random(40, 120, 64)
    frame = ans.dimension_sweep(q, c, dims=(None,))
    assert frame["d"].tolist() == [64] and frame["method"].tolist() == ["full"]
    assert frame["spearman"].tolist() == [1.0]
    assert frame["mean_similarity"].iloc[0] == pytest.approx(metrics.question_support(q, c)[0].mean())
    assert list(frame.columns) == ["d", "method", "spearman", "mean_similarity"]


def test_dims_are_deduplicated_sorted_and_capped_at_the_model_size():
    q, c = _random(10, 30, 64)
    frame = ans.dimension_sweep(q, c, dims=(16, 8, 16, 100, 64, None))
    assert frame["d"].tolist() == [8, 16, 64]
    assert frame["method"].tolist() == ["truncated", "truncated", "full"]
    assert ans.dimension_sweep(q, c, dims=(128,)).empty  # nothing at or below the full size was asked
    for bad in ((0,), (-4,), (2.5,), (True,), ("32",)):
        with pytest.raises(InputError, match="whole numbers"):
            ans.dimension_sweep(q, c, dims=bad)


def test_information_in_the_first_dims_survives_truncation_random_vectors_do_not():
    q, c = _random(80, 300, 128, seed=1)
    q[:, 32:] = 0.0  # everything the vectors say is in their first 32 dimensions
    c[:, 32:] = 0.0
    frame = ans.dimension_sweep(q, c, dims=(32, 64, None)).set_index("d")
    assert frame.loc[32, "spearman"] == pytest.approx(1.0)
    assert frame.loc[64, "spearman"] == pytest.approx(1.0)
    q, c = _random(80, 300, 128, seed=1)
    frame = ans.dimension_sweep(q, c, dims=(32, 64, None)).set_index("d")
    # Random vectors spread over all 128 dimensions: a cut keeps little of the ranking.
    assert frame.loc[32, "spearman"] < 0.6 and frame.loc[64, "spearman"] < 0.6
    assert frame.loc[128, "spearman"] == 1.0


def test_truncation_matches_a_direct_computation():
    q, c = _random(25, 70, 48, seed=2)
    frame = ans.dimension_sweep(q, c, dims=(12, None), block_size=7).set_index("d")
    full = metrics.question_support(q, c)[0]
    cut = metrics.question_support(q[:, :12], c[:, :12])[0]
    # Brute force: unit rows of the first 12 dims, best cosine per question.
    qu = q[:, :12] / np.linalg.norm(q[:, :12], axis=1, keepdims=True)
    cu = c[:, :12] / np.linalg.norm(c[:, :12], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, (qu @ cu.T).max(axis=1), atol=1e-5)
    assert frame.loc[12, "spearman"] == pytest.approx(stats.spearmanr(cut, full).statistic)
    assert frame.loc[12, "mean_similarity"] == pytest.approx(cut.mean())


def test_sweep_with_labels_reports_r_and_auroc_per_dimension():
    rng = np.random.default_rng(5)
    q, c = _random(60, 200, 64, seed=5)
    labels = rng.integers(0, 2, 60).astype(float)
    labels[0] = np.nan
    frame = ans.dimension_sweep(q, c, dims=(16, None), labels=labels).set_index("d")
    assert list(frame.columns) == ["method", "spearman", "mean_similarity", "point_biserial_r", "auroc"]
    reference = ans.answerability(metrics.question_support(q, c)[0], labels)
    assert frame.loc[64, "auroc"] == pytest.approx(reference.auroc)
    assert frame.loc[64, "point_biserial_r"] == pytest.approx(reference.point_biserial_r)
    cut = ans.answerability(metrics.question_support(q[:, :16], c[:, :16])[0], labels)
    assert frame.loc[16, "auroc"] == pytest.approx(cut.auroc)


def test_embed_at_is_called_with_each_smaller_d_and_replaces_truncation():
    q, c = _random(30, 90, 64, seed=4)
    calls = []

    def embed_at(d):
        calls.append(d)
        return q, c  # a "perfect" Matryoshka model: the same ranking at every size

    frame = ans.dimension_sweep(q, c, dims=(8, 32, 16, None), embed_at=embed_at)
    assert calls == [8, 16, 32]  # never for the full size, each once, in order
    assert frame["method"].tolist() == ["embedded", "embedded", "embedded", "full"]
    assert frame["spearman"].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0])
    truncated = ans.dimension_sweep(q, c, dims=(8, None))
    assert truncated["spearman"].iloc[0] < 0.9  # so the 1.0 above came from embed_at


def test_embed_at_with_wrong_shapes_is_an_input_error():
    q, c = _random(5, 9, 16)
    with pytest.raises(InputError, match="embed_at\\(8\\)"):
        ans.dimension_sweep(q, c, dims=(8,), embed_at=lambda d: (q[:4, :d], c[:, :d]))
    with pytest.raises(InputError, match="embed_at\\(8\\) must return"):
        ans.dimension_sweep(q, c, dims=(8,), embed_at=lambda d: q)
    with pytest.raises(InputError, match="same model"):
        ans.dimension_sweep(q, c[:, :8])


def test_sweep_never_builds_the_full_similarity_matrix(monkeypatch):
    """Every block of similarities stays within the block budget."""
    q, c = _random(50, 400, 32, seed=6)
    largest = []
    matmul = np.matmul

    def spy(a, b, *args, **kwargs):
        out = matmul(a, b, *args, **kwargs)
        largest.append(out.size)
        return out

    monkeypatch.setattr(blockwise, "BLOCK_ELEMENTS", 50 * 40)
    monkeypatch.setattr(metrics.np, "matmul", spy)
    ans.dimension_sweep(q, c, dims=(8, None))
    assert largest and max(largest) <= 50 * 40 < q.shape[0] * c.shape[0]


@pytest.mark.parametrize(
    "provider, model, expected",
    [
        ("local", None, "not trained"),
        ("local", "all-MiniLM-L6-v2", "not trained"),
        ("local", "sentence-transformers/all-MiniLM-L6-v2", "not trained"),
        ("local", "BAAI/bge-small-en-v1.5", "don't know"),
        ("openai", "text-embedding-3-small", None),
        ("openai", "text-embedding-3-large", None),
        ("openai", "text-embedding-ada-002", "not trained"),
        ("voyage", "voyage-3-large", None),
        ("voyage", "voyage-3.5", None),
        ("voyage", "voyage-3", "not trained"),
        ("voyage", "voyage-99", "don't know"),
        ("cohere", "embed-v4", "don't know"),
    ],
)
def test_truncation_note(provider, model, expected):
    note = ans.truncation_note(provider, model)
    if expected is None:
        assert note is None
    else:
        assert expected in note and note.endswith(".")


# --------------------------------------------------------------------------
# MDS map data
# --------------------------------------------------------------------------


def _two_topics(n_chunks, n_questions, dim=24, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.zeros((2, dim))
    centres[0, 0] = centres[1, 1] = 1.0
    chunk_topic = np.arange(n_chunks) % 2
    question_topic = np.arange(n_questions) % 2
    chunks = centres[chunk_topic] + 0.15 * rng.normal(size=(n_chunks, dim))
    questions = centres[question_topic] + 0.15 * rng.normal(size=(n_questions, dim))
    return questions, chunks, question_topic, chunk_topic


def test_mds_points_small_set_draws_everything_and_keeps_topics_apart():
    questions, chunks, question_topic, chunk_topic = _two_topics(40, 12)
    points = ans.mds_points(questions, chunks)
    assert points.chunk_xy.shape == (40, 2) and points.question_xy.shape == (12, 2)
    assert points.chunk_index.tolist() == list(range(40)) and points.question_index.tolist() == list(range(12))
    assert np.isfinite(points.chunk_xy).all() and np.isfinite(points.question_xy).all()
    assert not points.sampled and points.caption == "All 40 chunks and 12 questions shown."
    # Each question lands nearest to chunks of its own topic.
    distance = np.linalg.norm(points.question_xy[:, None, :] - points.chunk_xy[None, :, :], axis=2)
    assert (chunk_topic[distance.argmin(axis=1)] == question_topic).all()


def test_mds_points_samples_large_sets_and_says_so():
    questions, chunks, _, chunk_topic = _two_topics(300, 100)
    points = ans.mds_points(questions, chunks, max_points=120)
    assert len(points.chunk_index) + len(points.question_index) == 120
    assert len(points.question_index) == 60  # questions keep half the budget
    for index, total in ((points.chunk_index, 300), (points.question_index, 100)):
        assert np.all(np.diff(index) > 0) and index.min() >= 0 and index.max() < total
    assert points.caption == (
        "60 of 300 chunks and 60 of 100 questions shown (both sampled at random, as MDS is slow on many "
        "points); statistics use all of them."
    )
    by_cluster = ans.mds_points(questions, chunks, chunk_labels=chunk_topic, max_points=120)
    assert "(chunks sampled evenly across clusters, questions at random," in by_cluster.caption
    assert np.bincount(chunk_topic[by_cluster.chunk_index]).tolist() == [30, 30]
    few_chunks = ans.mds_points(questions, chunks[:20], max_points=100)
    assert len(few_chunks.question_index) == 80  # unused chunk budget goes to questions
    assert few_chunks.caption.startswith("All 20 chunks and 80 of 100 questions shown (questions sampled at random")


def test_mds_frames_align_texts_and_labels_with_the_sample():
    questions, chunks, question_topic, _ = _two_topics(30, 20)
    points = ans.mds_points(questions, chunks, max_points=24)
    labels = question_topic.astype(float)
    chunk_frame, question_frame = ans.mds_frames(
        points, [f"c{i}" for i in range(30)], [f"q{i}" for i in range(20)],
        chunk_documents=[f"d{i % 3}.txt" for i in range(30)], labels=labels, similarities=np.arange(20) / 20,
    )
    assert list(chunk_frame.columns) == ["x", "y", "text", "document"]
    assert list(question_frame.columns) == ["x", "y", "text", "answerable", "max_similarity"]
    assert chunk_frame["text"].tolist() == [f"c{i}" for i in points.chunk_index]
    assert question_frame["text"].tolist() == [f"q{i}" for i in points.question_index]
    np.testing.assert_array_equal(question_frame["answerable"], labels[points.question_index])
    np.testing.assert_allclose(question_frame[["x", "y"]].to_numpy(), points.question_xy)
    with pytest.raises(InputError, match="all 30 chunk texts"):
        ans.mds_frames(points, ["c"] * 29, [f"q{i}" for i in range(20)])


# --------------------------------------------------------------------------
# the real model on the bundled example
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The bundled wiki-qa slice embedded with the bundled model.

    Its questions about Zebra and Berlin have no article in docs/ (see the
    example's README): truly "not covered". The label column ``in_docs`` is
    built here from the article files actually present.
    """
    from coverage_core.embedding_steps import chunk_corpus
    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig

    documents = read_documents([EXAMPLE / "docs"]).documents
    chunks = chunk_corpus(documents, ChunkingConfig(1000, 200))
    present = {Path(d.name).stem.replace("_", " ") for d in documents}
    table = pd.read_csv(EXAMPLE / "questions.csv", dtype=str, keep_default_na=False)
    table["in_docs"] = np.where(table["article"].isin(present), "covered", "not covered")
    questions = read_questions(table.to_csv(index=False).encode("utf-8"), name="labelled.csv")
    embedder = make_embedder("local")
    cache = EmbeddingCache(tmp_path_factory.mktemp("answerability-cache"))
    chunk_vectors = embed_texts([c.text for c in chunks], embedder, cache).vectors
    question_vectors = embed_texts(questions.texts, embedder, cache).vectors
    return questions, question_vectors, chunk_vectors


@pytest.mark.slow
def test_real_example_best_similarity_separates_covered_questions(example):
    questions, question_vectors, chunk_vectors = example
    labels = answerability_labels.question_labels(questions, label_column="in_docs")
    assert labels.column == "in_docs"
    assert (labels.n_labelled, int((labels.labels == 0).sum())) == (185, 14)  # Zebra and Berlin
    if "answerable" in questions.frame:  # the example's own label column, when it has one, agrees
        shipped = answerability_labels.question_labels(questions)
        assert shipped.column == "answerable"
        np.testing.assert_array_equal(shipped.labels, labels.labels)
    similarity = metrics.question_support(question_vectors, chunk_vectors)[0]
    result = ans.answerability(similarity, labels.labels)
    assert result.auroc > 0.95  # 0.987 when written
    assert result.point_biserial_r > 0.3 and result.p_value < 1e-4
    assert 0.0 < result.threshold < 1.0
    json.dumps(ans.answerability_section(result, labels.column), allow_nan=False)


@pytest.mark.slow
def test_real_example_dimension_sweep(example):
    questions, question_vectors, chunk_vectors = example
    labels = answerability_labels.question_labels(questions, label_column="in_docs").labels
    frame = ans.dimension_sweep(question_vectors, chunk_vectors, labels=labels).set_index("d")
    assert frame.index.tolist() == [32, 64, 128, 256, 384]
    assert frame.loc[384, "spearman"] == 1.0
    assert frame.loc[32, "spearman"] < frame.loc[256, "spearman"] < 1.0
    assert frame.loc[256, "auroc"] > 0.9  # 0.985 when written; 0.936 at 32 dimensions


def test_fitness_threshold_is_the_level_the_off_topic_screening_used():
    from types import SimpleNamespace

    from coverage_core.checks.answerability import DEFAULT_FITNESS_THRESHOLD, fitness_threshold

    calibrated = SimpleNamespace(screener=SimpleNamespace(question_support_threshold=0.47))
    assert fitness_threshold(calibrated) == pytest.approx(0.47, abs=1e-12)
    uncalibrated = SimpleNamespace(screener=SimpleNamespace(question_support_threshold=None))
    assert fitness_threshold(uncalibrated) == DEFAULT_FITNESS_THRESHOLD
