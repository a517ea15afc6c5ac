"""The label-free support threshold τ and the absolute decisions built on it (tested share, untested, gaps)."""

import hashlib
import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from coverage_core import metrics, verdicts
from coverage_core.config import AnalysisConfig
from coverage_core.errors import InputError
from coverage_core.inputs.questions import read_questions
from coverage_core.outputs import junit
from coverage_core.outputs.report import SCHEMA_VERSION, build_report
from coverage_core.results import Clustering, Corpus, EmbeddedTexts
from coverage_core.stages.calibration import (
    DEFAULT_SUPPORT_THRESHOLD,
    Calibration,
    calibrate,
    override,
    youden_threshold,
)
from coverage_core.stages.measure import measure
from coverage_core.suggest.gaps import GapConfig
from coverage_core.types import Chunk, Document

TOPICS = ("alpha", "beta", "gamma", "delta")


def _direction(topic: str, dim: int = 16) -> np.ndarray:
    vector = np.zeros(dim)
    vector[TOPICS.index(topic)] = 1.0
    return vector


def _fake_embed(texts, dim: int = 16):
    """A text points at the topic word it contains, plus a text-dependent wobble."""
    rows = []
    for text in texts:
        topic = next(t for t in TOPICS if t in text)
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        noise = np.random.default_rng(seed).normal(0, 0.08, dim)
        rows.append(_direction(topic, dim) + noise)
    return np.array(rows, dtype=np.float32)


def _chunks(topics=TOPICS, per_document=5, sentences=4):
    chunks = []
    for topic in topics:
        for c in range(per_document):
            text = " ".join(
                f"The {topic} passage number {c} sentence {s} talks about {topic} things at length." for s in range(sentences)
            )
            chunks.append(Chunk(f"{topic}.txt", text, 0, len(text)))
    return chunks


# ------------------------------------------------------------------ calibration


def test_youden_threshold_lies_between_separated_groups():
    rng = np.random.default_rng(0)
    positives = rng.normal(0.75, 0.04, 300).clip(0.6, 0.9)
    negatives = rng.normal(0.30, 0.04, 300).clip(0.15, 0.45)
    tau, j = youden_threshold(positives, negatives)
    assert negatives.max() < tau < positives.min()
    assert j == pytest.approx(1.0)


def test_youden_threshold_with_overlap_is_near_the_crossing():
    rng = np.random.default_rng(1)
    tau, j = youden_threshold(rng.normal(0.6, 0.1, 5000), rng.normal(0.4, 0.1, 5000))
    assert tau == pytest.approx(0.5, abs=0.03)
    assert 0.6 < j < 0.75


def test_calibration_recovers_a_threshold_between_own_and_other_documents():
    chunks = _chunks()
    vectors = _fake_embed([c.text for c in chunks])
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return _fake_embed(texts)

    topics = np.array([TOPICS.index(c.document.removesuffix(".txt")) for c in chunks])
    result = calibrate(chunks, vectors, embed, random_state=0, topic_labels=topics)
    assert isinstance(result, Calibration)
    assert result.method == "pseudo-queries"
    assert result.n_probes == 4 * 5 * 4  # every sentence, under the cap
    assert calls == [2 * result.n_probes]  # the probes and their chunks without them, in one call
    assert result.negative_median < result.support_threshold < result.positive_median
    assert result.separation > 0.9
    # Seeded: the same probes, the same τ.
    assert calibrate(chunks, vectors, embed, random_state=0, topic_labels=topics) == result
    # Without labels it finds the topics itself (K-means on the chunk vectors).
    found = calibrate(chunks, vectors, _fake_embed, random_state=0)
    assert found.method == "pseudo-queries" and found.negative_median < found.support_threshold


def test_two_levels_passages_tell_documents_apart_questions_tell_topics_apart():
    """τ (tested passages) separates documents; the question level separates topics, so sibling documents
    of one topic raise τ but not the question level; one document of several topics still calibrates."""
    chunks = _chunks()
    vectors = _fake_embed([c.text for c in chunks])
    topics = np.array([TOPICS.index(c.document.removesuffix(".txt")) for c in chunks])
    by_topic = calibrate(chunks, vectors, _fake_embed, topic_labels=topics)
    assert by_topic.question_support_threshold == pytest.approx(by_topic.support_threshold, abs=0.02)  # documents = topics here
    # Every chunk its own document, same four topics: the nearest other document is a sibling on the same
    # topic, so τ rises to the top of the scale, while the question level stays where it was.
    split = [Chunk(f"page-{i}.txt", c.text, 0, len(c.text)) for i, c in enumerate(chunks)]
    siblings = calibrate(split, vectors, _fake_embed, topic_labels=topics)
    assert siblings.support_threshold > by_topic.support_threshold + 0.2
    assert siblings.question_support_threshold == pytest.approx(by_topic.question_support_threshold, abs=0.02)
    assert siblings.question_support_threshold < siblings.support_threshold
    # One document holding the four topics: its topics stand in for other documents.
    merged = [Chunk("all.txt", c.text, 0, len(c.text)) for c in chunks]
    single = calibrate(merged, vectors, _fake_embed, topic_labels=topics)
    assert single.method == "pseudo-queries" and single.separation > 0.9
    assert single.support_threshold == pytest.approx(single.question_support_threshold)
    # One topic: nothing to tell apart from.
    same = calibrate(chunks, vectors, lambda texts: pytest.fail("embedded"), topic_labels=np.zeros(len(chunks)))
    assert same.method.startswith("default: a single topic")
    assert same.question_support_threshold == same.support_threshold == DEFAULT_SUPPORT_THRESHOLD
    assert override(0.3).question_support_threshold == 0.3
    with pytest.raises(InputError):
        calibrate(chunks, vectors, _fake_embed, topic_labels=topics[:-1])


def test_probe_sentences_come_from_a_bounded_pool_of_chunks_on_a_large_corpus(monkeypatch):
    from coverage_core.stages import calibration

    chunks = _chunks(per_document=30, sentences=3)  # 120 chunks
    monkeypatch.setattr(calibration, "PROBE_CHUNK_POOL", 20)
    probes = calibration.sample_probes(chunks, 400, random_state=1)
    used = {i for i, _, _ in probes}
    assert len(used) == 20 and len(probes) == 20 * 3
    assert pd.Series([chunks[i].document for i in used]).value_counts().tolist() == [5, 5, 5, 5]
    assert calibration.sample_probes(chunks, 400, random_state=1) == probes


def test_probes_are_capped_and_spread_over_documents():
    chunks = _chunks(per_document=10, sentences=6)  # 240 candidate sentences
    result = calibrate(chunks, _fake_embed([c.text for c in chunks]), _fake_embed, max_probes=40)
    assert result.n_probes == 40
    from coverage_core.stages.calibration import sample_probes

    probes = sample_probes(chunks, 40, random_state=3)
    per_document = pd.Series([chunks[i].document for i, _, _ in probes]).value_counts()
    assert set(per_document) == {10}
    assert all(sentence not in rest for _, sentence, rest in probes)


def test_a_single_chunk_falls_back_to_the_default():
    chunks = _chunks(topics=("alpha",), per_document=1)
    result = calibrate(chunks, _fake_embed([c.text for c in chunks]), lambda texts: pytest.fail("embedded"))
    assert result.support_threshold == DEFAULT_SUPPORT_THRESHOLD
    assert result.method.startswith("default: a single topic")


def test_too_few_sentences_fall_back_to_the_default():
    chunks = _chunks(topics=("alpha", "beta"), per_document=1, sentences=2)
    result = calibrate(chunks, _fake_embed([c.text for c in chunks]), _fake_embed)
    assert result.support_threshold == DEFAULT_SUPPORT_THRESHOLD
    assert result.method.startswith("default: only")


def test_override_is_validated():
    assert override(0.4) == Calibration(0.4, "override")
    for bad in (0, -0.2, 1.5, float("nan"), True):
        with pytest.raises(InputError):
            override(bad)
    with pytest.raises(InputError):
        AnalysisConfig(support_threshold=1.2)


# ------------------------------------------------------------------ tested share, untested documents


def test_tested_share_and_is_untested_on_a_hand_made_case():
    # similarities 1 - d: A has 3 of 4 chunks at >= 0.5, B 0 of 2, C 1 of 4.
    similarity = np.array([0.9, 0.6, 0.5, 0.2, 0.3, 0.1, 0.7, 0.2, 0.2, 0.2])
    documents = ["A"] * 4 + ["B"] * 2 + ["C"] * 4
    distances = 1 - similarity
    assert metrics.tested_chunks(distances, 0.5).tolist() == [True, True, True, False, False, False,
                                                              True, False, False, False]
    assert metrics.tested_share(distances, 0.5) == pytest.approx(0.4)
    table = metrics.document_coverage(distances, documents, support_threshold=0.5).set_index("document")
    assert table["n_tested"].to_dict() == {"A": 3, "B": 0, "C": 1}
    assert table["tested_share"].to_dict() == pytest.approx({"A": 0.75, "B": 0.0, "C": 0.25})
    assert table["is_untested"].to_dict() == {"A": False, "B": True, "C": 0.25 < verdicts.UNTESTED_SHARE}
    n_tested, share = metrics.cluster_tested(distances, np.array([0] * 5 + [1] * 5), 3, 0.5)
    assert n_tested.tolist() == [3, 1, 0] and share[:2].tolist() == [0.6, 0.2] and np.isnan(share[2])


def test_is_untested_fires_when_most_documents_are_untested_and_is_low_does_not():
    # 8 documents with no question near them, 2 well tested.
    documents = [name for name in "ABCDEFGHIJ" for _ in range(5)]
    similarity = np.array([0.2] * 40 + [0.8] * 10)
    table = metrics.document_coverage(1 - similarity, documents, support_threshold=0.5).set_index("document")
    assert table["is_untested"].sum() == 8
    assert not table.loc[["I", "J"], "is_untested"].any()
    assert not table["is_low"].any()  # the relative rule: the median document is untested, so nothing stands out


# ------------------------------------------------------------------ measure, report, JUnit


def _corpus_and_questions():
    """Three documents; the questions sit on the 'alpha' document only."""
    chunks = _chunks(topics=("alpha", "beta", "gamma"), per_document=4)
    vectors = _fake_embed([c.text for c in chunks])
    documents = [Document(f"{t}.txt", "") for t in ("alpha", "beta", "gamma")]
    corpus = Corpus(documents, chunks, EmbeddedTexts(vectors, 0, len(chunks), 0))
    texts = [f"What does the alpha passage number {i} say about alpha things?" for i in range(6)]
    questions = read_questions(pd.DataFrame({"question": texts}).to_csv(index=False).encode(), name="q.csv")
    embedded = EmbeddedTexts(_fake_embed(texts), 0, len(texts), 0)
    labels = np.repeat(np.arange(3), 4)
    centroids = np.stack([vectors[labels == k].mean(axis=0) for k in range(3)])
    return corpus, questions, embedded, Clustering(labels, centroids, [])


def _measure(config, calibration=None):
    corpus, questions, embedded, clustering = _corpus_and_questions()
    rows = list(questions.rows)
    return measure(config, corpus, questions, embedded, clustering, force_include=rows, calibration=calibration)


def test_measure_uses_the_calibration_and_the_override():
    calibration = Calibration(0.5, "pseudo-queries", n_probes=99, positive_median=0.8, negative_median=0.1)
    analysis = _measure(AnalysisConfig(n_clusters=3), calibration)
    assert analysis.calibration is calibration
    documents = analysis.documents.set_index("document")
    assert documents["is_untested"].to_dict() == {"alpha.txt": False, "beta.txt": True, "gamma.txt": True}
    assert analysis.metrics["tested_share"] == pytest.approx(4 / 12)
    assert analysis.clusters["is_gap"].tolist() == [False, True, True]
    assert analysis.clusters["n_tested"].tolist() == [4, 0, 0]

    # An override of 0.9999 leaves no chunk tested; no calibration given: the config's value is used.
    strict = _measure(AnalysisConfig(n_clusters=3, support_threshold=0.9999))
    assert strict.calibration == Calibration(0.9999, "override")
    assert strict.metrics["tested_share"] == 0.0
    assert strict.documents["is_untested"].all() and strict.clusters["is_gap"].all()

    # The coverage rule stays available for gaps.
    by_coverage = _measure(AnalysisConfig(n_clusters=3, gaps=GapConfig(rule="coverage", gap_threshold=-0.5)),
                           calibration)
    assert not by_coverage.clusters["is_gap"].any()
    with pytest.raises(InputError):
        GapConfig(rule="nope")


def test_report_schema_3_carries_calibration_and_decisions():
    calibration = Calibration(0.5, "pseudo-queries", n_probes=99, positive_median=0.8, negative_median=0.1,
                              separation=0.9)
    analysis = _measure(AnalysisConfig(n_clusters=3), calibration)
    report = json.loads(json.dumps(build_report(analysis)))
    assert report["schema_version"] == SCHEMA_VERSION == 3
    assert report["calibration"] == {
        "support_threshold": 0.5, "method": "pseudo-queries", "n_probes": 99, "positive_median": 0.8,
        "negative_median": 0.1, "separation": 0.9, "labelled_threshold": None, "question_support_threshold": 0.5,
    }
    assert report["metrics"]["tested_share"] == pytest.approx(1 / 3, abs=1e-6)
    documents = {d["name"]: d for d in report["documents"]}
    assert documents["beta.txt"]["is_untested"] and documents["beta.txt"]["n_tested"] == 0
    assert documents["alpha.txt"]["tested_share"] == 1.0 and "is_low" in documents["alpha.txt"]
    assert [c["tested_share"] for c in report["clusters"]] == [1.0, 0.0, 0.0]
    junit.check_report(report)  # the CI tools read version 2 (and 1)
    assert verdicts.headline(analysis) == (
        "33% of the knowledge base is tested (4 of 12 passages); 2 documents untested; 0 questions off-topic."
    )

    from coverage_core.checks.answerability import answerability

    labelled = answerability(np.array([0.9, 0.8, 0.7, 0.3, 0.2, 0.1]), np.array([1, 1, 1, 0, 0, 0], dtype=float))
    with_labels = build_report(analysis, answerability=labelled)
    assert with_labels["calibration"]["labelled_threshold"] == pytest.approx(labelled.threshold, abs=1e-6)


def test_junit_fails_by_the_reports_decisions_not_by_coverage():
    analysis = _measure(AnalysisConfig(n_clusters=3), Calibration(0.5, "pseudo-queries"))
    report = json.loads(json.dumps(build_report(analysis)))
    # Make the decisions disagree with any coverage threshold: a low-coverage cluster that is not a gap.
    report["clusters"][1]["is_gap"] = False
    report["clusters"][0]["coverage"] = 0.01
    root = ET.fromstring(junit.junit_xml(report, "tested_share", 0.2, gap_threshold=0.99).encode())
    failed = {case.get("name").split(":")[0] for case in root.iter("testcase") if case.find("failure") is not None}
    assert failed == {"cluster 2", "beta.txt", "gamma.txt"}  # tested_share 0.33 passes the 0.2 gate
    root = ET.fromstring(junit.junit_xml(report, "tested_share", 0.5).encode())
    failed = {case.get("name").split(":")[0] for case in root.iter("testcase") if case.find("failure") is not None}
    assert "tested_share" in failed


def test_metric_tested_share_gates_the_cli(tmp_path, monkeypatch):
    """--metric tested_share is accepted and gates --fail-below; --support-threshold is range-checked first."""
    from coverage_core import cli

    assert "tested_share" in cli.METRIC_NAMES
    args = cli._build_parser().parse_args(
        ["analyze", "--docs", "d", "--questions", "q.csv", "--out", "r.json", "--metric", "tested_share", "--fail-below", "0.5",
         "--support-threshold", "0.45"]
    )
    config, _ = cli._analysis_settings(args)
    assert config.support_threshold == 0.45
    for bad in ("0", "1.5", "nan"):
        args = cli._build_parser().parse_args(["analyze", "--docs", "d", "--questions", "q.csv", "--out", "r.json",
                                               "--support-threshold", bad])
        with pytest.raises(InputError, match="--support-threshold"):
            cli._analysis_settings(args)
    assert verdicts.gate_failed(0.33, 0.5) and not verdicts.gate_failed(0.6, 0.5)


def test_diff_reads_a_version_1_report_against_a_version_2_one():
    from tests.helpers import make_report

    old = make_report()
    new = make_report(schema_version=2, metrics={**old["metrics"], "tested_share": 0.6})
    diff = junit.diff_reports(junit.check_report(old), junit.check_report(new))
    assert diff.metric("basic").delta == pytest.approx(0.0)
    assert diff.metric("tested_share") is None  # only metrics both reports carry are compared
