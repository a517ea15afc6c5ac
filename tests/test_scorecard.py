"""The test-set scorecard: its figures, their readings, and the ranking of two sets on one knowledge base."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coverage_core import editing
from coverage_core.checks import scorecard as scorecard_check
from coverage_core.checks.answerability import fitness_threshold
from coverage_core.checks.scorecard import compare_scorecards, gini, normalised_entropy, scorecard
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from tests.fakes import FakeEmbedder
from tests.helpers import FIXTURES, PROJECT, measured_analysis

TESTSETS = FIXTURES / "testsets"
DOCS = PROJECT / "examples" / "wiki-qa" / "docs"


# ---------------------------------------------------------------- balance measures


def test_normalised_entropy_and_gini_at_their_ends():
    assert normalised_entropy([5, 5, 5, 5]) == pytest.approx(1.0)
    assert normalised_entropy([20, 0, 0, 0]) == pytest.approx(0.0)
    assert normalised_entropy([7]) == 1.0 and normalised_entropy([0, 0]) == 0.0
    assert gini([5, 5, 5, 5]) == pytest.approx(0.0, abs=1e-12)
    assert gini([20, 0, 0, 0]) == pytest.approx(0.75)  # 1 - 1/N
    assert gini([0, 0, 0]) == 0.0


def test_normalised_entropy_by_hand():
    counts = [6, 3, 1, 0]
    p = np.array([0.6, 0.3, 0.1])
    assert normalised_entropy(counts) == pytest.approx(-(p * np.log(p)).sum() / math.log(4), rel=1e-12)
    # Gini by its pairwise definition: sum |x_i - x_j| / (2 n^2 mean)
    x = np.array(counts, dtype=float)
    expected = np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) ** 2 * x.mean())
    assert gini(counts) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- one scorecard


def test_scorecard_of_the_synthetic_analysis(analysis):
    card = scorecard(analysis)
    m = len(analysis.questions.questions)
    assert card.n_questions == m
    assert card.off_topic_share == pytest.approx(analysis.is_outlier.mean())
    assert card.n_off_topic == int(analysis.is_outlier.sum())
    assert card.tested_share == pytest.approx(analysis.metrics["tested_share"])
    level = fitness_threshold(analysis)
    assert card.n_answerable == int((analysis.question_table["max_similarity"] >= level).sum())
    assert card.duplicate_share == pytest.approx(
        (np.asarray(analysis.duplicate_groups.duplicate_of) >= 0).sum() / m)
    assert card.n_documents == 3 and card.n_on_topic == m - card.n_off_topic
    assert sum(n for _, n in card.top_documents) <= card.n_on_topic
    goods = [card.tested_share, card.balance, 1 - card.duplicate_share, 1 - card.off_topic_share,
             card.answerable_share]
    assert card.score == pytest.approx(np.mean(goods))
    table = card.table()
    assert table["measure"].tolist() == [label for _, label, _ in scorecard_check.MEASURES]
    assert all(isinstance(text, str) and text.endswith(".") for text in table["reading"])


# ---------------------------------------------------------------- ranking two sets


@pytest.fixture(scope="module")
def two_sets():
    """The balanced RAGAS fixture analysed on the example's documents, and the skewed, repetitive one scored
    on the same chunks and clusters (only its questions embedded)."""
    documents = read_documents([DOCS]).documents
    embedder = FakeEmbedder(vectors="words", width=256, max_tokens=400)
    good = measured_analysis(documents, read_questions(TESTSETS / "ragas_testset.jsonl"), embedder)
    before = embedder.n_embedded
    bad_questions = read_questions(TESTSETS / "ragas_skewed_duplicated.jsonl")
    bad = editing.rescore(good, bad_questions, embedder, None)
    return good, bad, embedder.n_embedded - before


def test_only_the_second_sets_questions_are_embedded(two_sets):
    good, bad, embedded = two_sets
    assert embedded == len(bad.questions.questions)
    assert bad.corpus is good.corpus and bad.clustering is good.clustering


def test_the_skewed_repetitive_set_ranks_below_the_balanced_one(two_sets):
    good, bad, _ = two_sets
    a, b = scorecard(good), scorecard(bad)
    assert a.score > b.score + 0.05
    assert a.balance > b.balance + 0.2
    assert b.duplicate_share >= 0.5 > a.duplicate_share
    assert b.n_documents_asked < a.n_documents_asked
    assert "skewed towards a few documents" in b.readings["balance"]
    assert f"only {b.n_questions - b.n_duplicates} are distinct" in b.readings["duplicate_share"]
    result = compare_scorecards(b, a, ("generated.jsonl", "balanced.jsonl"))
    assert result.winner == 1
    assert result.verdict.startswith("balanced.jsonl is the better test of this knowledge base: it ")
    assert "spreads its questions more evenly over the documents" in result.verdict
    assert "repeats itself less" in result.verdict
    better = dict(zip(result.table["measure"], result.table["better"]))
    assert better["Balance across documents"] == "balanced.jsonl"
    assert better["Near-duplicates"] == "balanced.jsonl"


def test_a_set_against_itself_is_a_tie(two_sets):
    good, _, _ = two_sets
    card = scorecard(good)
    result = compare_scorecards(card, card, ("a", "b"))
    assert result.winner is None
    assert result.verdict == "a and b are about as good a test of this knowledge base."
    assert set(result.table["better"]) == {"same"}
