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
from coverage_core.measure import measure
from coverage_core.outputs import junit
from coverage_core.outputs.report import SCHEMA_VERSION, build_report
from coverage_core.results import Clustering, Corpus, EmbeddedTexts
from coverage_core.stages.calibration import (
    DEFAULT_SUPPORT_THRESHOLD,
    MIN_SEPARATION,
    Calibration,
    calibrate,
    override,
    youden_threshold,
)
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
    """One document per topic; each sentence names its topic among words of its own (so no sentence is a
    near-copy of another)."""
    rng = np.random.default_rng(0)
    chunks = []
    for topic in topics:
        for c in range(per_document):
            text = " ".join(
                f"The {topic} {' '.join(_pseudo_word(rng) for _ in range(7))} {topic}." for s in range(sentences)
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
    # Every chunk its own document, same four topics: these vectors see only the topic, so the nearest
    # other document (a sibling on the same topic) is as close as a sentence's own passage: documents
    # cannot be told apart, which the calibration says instead of returning a level.
    split = [Chunk(f"page-{i}.txt", c.text, 0, len(c.text)) for i, c in enumerate(chunks)]
    siblings = calibrate(split, vectors, _fake_embed, topic_labels=topics)
    assert not siblings.reliable and "as close to other documents" in siblings.reason
    assert siblings.negative_median > by_topic.negative_median + 0.5
    assert siblings.support_threshold == siblings.question_support_threshold == DEFAULT_SUPPORT_THRESHOLD
    # One document holding the four topics: its topics stand in for other documents.
    merged = [Chunk("all.txt", c.text, 0, len(c.text)) for c in chunks]
    single = calibrate(merged, vectors, _fake_embed, topic_labels=topics)
    assert single.method == "pseudo-queries" and single.separation > 0.9
    assert single.support_threshold == pytest.approx(single.question_support_threshold)
    # ... and when its topics are not what the vectors tell apart, the reason names its topics, not documents.
    mixed = calibrate(merged, vectors, _fake_embed, topic_labels=np.arange(len(chunks)) % 4)
    assert not mixed.reliable and "the document's passages on other topics" in mixed.reason
    # One topic: nothing to tell apart from.
    same = calibrate(chunks, vectors, lambda texts: pytest.fail("embedded"), topic_labels=np.zeros(len(chunks)))
    assert same.method.startswith("default: a single topic")
    assert same.question_support_threshold == same.support_threshold == DEFAULT_SUPPORT_THRESHOLD
    assert not same.reliable and "single topic" in same.reason
    assert by_topic.reliable and single.reliable and by_topic.reason == ""
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


@pytest.mark.parametrize("text, expected", [
    ("The cat sat. It purred! Why? 9 lives e.g. the dog. (Yes) no", ["The cat sat.", "It purred!", "Why?",
                                                                    "9 lives e.g. the dog.", "(Yes) no"]),
    ("Heading\n\nFirst line. Second line\n- item", ["Heading", "First line.", "Second line", "- item"]),
    ("Café ouvert. Élan vital.\nFin", ["Café ouvert. Élan vital.", "Fin"]),  # "É" is no capital A-Z
    ("首都是首爾。人口很多！ Then English. Done", ["首都是首爾。", "人口很多！", "Then English.", "Done"]),
    ("", []),
])
def test_sentences_split_the_same_on_every_path(text, expected):
    from coverage_core.stages import calibration

    # The ASCII and one-line paths drop only alternatives that cannot match: the full pattern agrees.
    full = [part.strip() for part in calibration._SENTENCE_END.split(text) if part.strip()]
    assert calibration._sentences(text) == full == expected


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
    result = calibrate(chunks, _fake_embed([c.text for c in chunks]), lambda texts: pytest.fail("embedded"),
                       fallback=(0.37, "default: model default"))
    assert result.support_threshold == result.question_support_threshold == 0.37  # the model's own default
    assert result.method.startswith("default: a single topic")
    assert not result.reliable and result.reason


def test_too_few_sentences_fall_back_to_the_default():
    chunks = _chunks(topics=("alpha", "beta"), per_document=1, sentences=2)
    result = calibrate(chunks, _fake_embed([c.text for c in chunks]), _fake_embed)
    assert result.support_threshold == DEFAULT_SUPPORT_THRESHOLD  # no model default given: the generic one
    assert result.method.startswith("default: only")
    assert not result.reliable and result.reason.startswith("Only 4 sentences")


def test_override_is_validated():
    assert override(0.4) == Calibration(0.4, "override")
    for bad in (0, -0.2, 1.5, float("nan"), True):
        with pytest.raises(InputError):
            override(bad)
    with pytest.raises(InputError):
        AnalysisConfig(support_threshold=1.2)


# ------------------------------------------------------------------ near-copies and reliability


def _pseudo_word(rng) -> str:
    return "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 7))


def _versioned_corpus(n_documents=8, sections=4, sentences=5, edit_share=0.1, seed=0):
    """Documents whose sections each have their own words (plus a few words of the document's topic),
    and a second version of every document: the same sentences with ``edit_share`` of the words changed.
    Topic = document pair index mod 4."""
    rng = np.random.default_rng(seed)
    topic_words = [[_pseudo_word(rng) for _ in range(4)] for _ in range(4)]
    chunks, copies, topics = [], [], []
    for d in range(n_documents):
        for c in range(sections):
            vocabulary = [_pseudo_word(rng) for _ in range(12)]
            originals, edited = [], []
            for _ in range(sentences):
                words = list(rng.choice(vocabulary, 8)) + list(rng.choice(topic_words[d % 4], 2))
                changed = [_pseudo_word(rng) if rng.random() < edit_share else w for w in words]
                originals.append(" ".join(words).capitalize() + ".")
                edited.append(" ".join(changed).capitalize() + ".")
            text, copy = " ".join(originals), " ".join(edited)
            chunks.append(Chunk(f"plan-{d}.txt", text, 0, len(text)))
            copies.append(Chunk(f"plan-{d} (v2).txt", copy, 0, len(copy)))
            topics.append(d % 4)
    return chunks + copies, np.array(topics + topics)


def _word_embedder():
    from tests.fakes import FakeEmbedder

    return FakeEmbedder(vectors="words", width=512, max_tokens=1000)


def test_near_copies_in_another_document_are_not_negatives(monkeypatch):
    """Two versions of every document: the best chunk 'of another document' is the sentence's own copy.
    Taken as a negative it collapses τ (the reported τ = 0.000001, everything tested); skipped, τ lies
    between own-passage and other-passage similarities again."""
    from coverage_core.stages import calibration

    chunks, topics = _versioned_corpus()
    embedder = _word_embedder()
    vectors = embedder.embed([c.text for c in chunks])
    fixed = calibrate(chunks, vectors, embedder.embed, topic_labels=topics, fallback=(0.42, "default: model default"))
    assert fixed.reliable and fixed.method == "pseudo-queries" and fixed.reason == ""
    # Every sentence has its copy in the other version; a few lost too many words to the edits to count.
    assert fixed.n_near_duplicates > 0.75 * fixed.n_probes
    assert fixed.negative_median < fixed.support_threshold < fixed.positive_median
    assert fixed.support_threshold > 0.2 and fixed.separation > 0.6  # was 0.0
    assert fixed.question_support_threshold > 0.1

    # The old behaviour (every chunk of another document a negative, nothing checked) collapses.
    monkeypatch.setattr(calibration, "NEAR_COPY_SHARE", float("inf"))
    monkeypatch.setattr(calibration, "reliability_problem", lambda *args: "")
    naive = calibrate(chunks, vectors, embedder.embed, topic_labels=topics)
    assert naive.n_near_duplicates == 0
    assert naive.negative_median > naive.positive_median
    assert naive.separation < MIN_SEPARATION < fixed.separation - 0.3


def test_near_copy_is_a_text_test_on_word_shingles():
    from coverage_core.stages.calibration import holds_near_copy, word_shingles

    sentence = word_shingles("The pump must be inspected every six months by a licensed engineer.")
    assert len(sentence) == 10
    edited = word_shingles("Intro text. The pump must be checked every six months by a licensed engineer! More.")
    assert holds_near_copy(sentence, edited)  # 7 of 10 shingles kept: a near-copy
    reworded = word_shingles("Every half year a licensed engineer inspects the pump.")
    assert not holds_near_copy(sentence, reworded)  # the same content in other words is a negative
    assert not holds_near_copy(set(), edited)


def test_a_sentence_copied_into_every_document_has_no_negative_and_joins_no_documents(monkeypatch):
    """A boilerplate sentence in every document: its candidates elsewhere are all copies of it, so it gets no
    negative; one shared sentence does not make the documents versions of each other."""
    from coverage_core.stages import calibration

    boilerplate = "Xylophones require annual review before approval by headquarters."
    chunks, topics = _versioned_corpus(n_documents=8)
    chunks = [Chunk(c.document, f"{c.text} {boilerplate}", 0, len(c.text) + len(boilerplate) + 1)
              for c in chunks[:32]]  # the first versions only, each chunk ending with the boilerplate
    topics = topics[:32]
    embedder = _word_embedder()
    vectors = embedder.embed([c.text for c in chunks])
    monkeypatch.setattr(calibration, "NEGATIVE_CANDIDATES", 2)  # fewer than the copies elsewhere
    monkeypatch.setattr(calibration, "MIN_PROBES", 5)
    result = calibrate(chunks, vectors, embedder.embed, topic_labels=topics, max_probes=400)
    n_boilerplate = sum(1 for _, sentence, _ in calibration.sample_probes(chunks, 400) if sentence == boilerplate)
    assert n_boilerplate == 32
    assert result.n_near_duplicates == n_boilerplate
    assert result.reliable and result.support_threshold > 0.2


def test_documents_sharing_most_sentences_are_versions_of_one_document():
    from coverage_core.stages.calibration import _versions

    documents = np.array(["a.txt", "a-v2.txt", "b.txt", "c.txt"], dtype=object)
    probes = np.array(["a.txt"] * 4 + ["b.txt"] * 4 + ["c.txt"] * 4, dtype=object)
    # 3 of a's 4 probes have a near-copy in a-v2; b shares one sentence with c, c one with b.
    copies = [["a-v2.txt"], ["a-v2.txt"], ["a-v2.txt"], []] + [["c.txt"], [], [], []] + [["b.txt"], [], [], []]
    families = _versions(documents, probes, copies)
    assert families.tolist() == ["a.txt", "a.txt", "b.txt", "c.txt"]
    assert _versions(documents, probes, [[]] * 8 + [["b.txt"]] * 1 + [[]] * 3) is None


def test_no_separation_is_unreliable_and_falls_back_to_the_model_default():
    """Vectors that ignore the text: a sentence is no closer to its own passage than to others'."""
    from tests.fakes import FakeEmbedder

    chunks = _chunks(per_document=6)
    embedder = FakeEmbedder(vectors="random", width=16)
    vectors = embedder.embed([c.text for c in chunks])
    topics = np.array([TOPICS.index(c.document.removesuffix(".txt")) for c in chunks])
    result = calibrate(chunks, vectors, embedder.embed, topic_labels=topics, fallback=(0.42, "default: model default"))
    assert not result.reliable and result.reason
    assert result.support_threshold == result.question_support_threshold == 0.42
    assert result.method == "default: model default"
    # What failed stays in the object for the report.
    assert result.n_probes == 4 * 6 * 4 and result.separation is not None and result.separation < MIN_SEPARATION
    assert result.positive_median is not None and result.negative_median is not None
    assert Calibration.from_dict(result.to_dict()) == result


def test_topics_too_close_to_tell_apart_leave_questions_on_tau_and_the_calibration_reliable():
    """Small chunks split one document into topics of its own: other topics' passages are then the
    document's own neighbours. That says nothing of whether τ tells documents apart, so the calibration
    stays reliable and questions read τ instead of a level of their own."""
    chunks = _chunks()
    vectors = _fake_embed([c.text for c in chunks])
    # Topics cut across documents: every document holds every topic.
    interleaved = np.arange(len(chunks)) % len(TOPICS)
    result = calibrate(chunks, vectors, _fake_embed, topic_labels=interleaved)
    assert result.reliable and result.reason == "" and result.method == "pseudo-queries"
    assert result.separation > 0.9
    assert result.question_support_threshold == result.support_threshold


def test_reliability_problem_names_each_failure():
    from coverage_core.stages.calibration import reliability_problem

    good = dict(n_probes=400, n_negatives=400, positive_median=0.6, negative_median=0.3, threshold=0.45,
                separation=0.7)
    assert reliability_problem(**good) == ""
    assert "Only 12 of 400" in reliability_problem(**(good | {"n_negatives": 12}))
    assert "as close to other documents" in reliability_problem(**(good | {"negative_median": 0.6}))
    assert "other documents'" in reliability_problem(**(good | {"separation": MIN_SEPARATION - 0.01}))
    assert "plausible range" in reliability_problem(**(good | {"threshold": 1e-6}))
    assert reliability_problem(**(good | {"separation": MIN_SEPARATION})) == ""
    alone = reliability_problem(**(good | {"negative_median": 0.6, "one_document": True}))
    assert "as close to the document's passages on other topics" in alone and "other documents" not in alone
    assert "no near-copy on another topic" in reliability_problem(**(good | {"n_negatives": 12, "one_document": True}))


def test_the_model_default_comes_from_the_provider_registry():
    from coverage_core import session
    from coverage_core.embeddings import registry
    from coverage_core.stages import calibration
    from tests.fakes import FakeEmbedder

    level, source = registry.default_support_level("local")
    assert level is not None and 0.2 < level < 0.8 and "wiki" in source.lower()
    assert registry.default_support_level("local", "/models/all-MiniLM-L6-v2") == (level, source)  # a folder
    assert registry.default_support_level("local", "some-other-model")[0] is None
    openai_level, openai_source = registry.default_support_level("openai", "text-embedding-3-small")
    assert openai_level is None and "not measured" in openai_source
    assert registry.default_support_level("nope")[0] is None
    assert calibration.model_fallback(None) == (DEFAULT_SUPPORT_THRESHOLD, "default: generic default")

    # calibrate_corpus reads the configured model's default: no separation falls back to it, not to 0.5.
    chunks = _chunks(per_document=6)
    embedder = FakeEmbedder(vectors="random", width=16)
    documents = [Document(f"{t}.txt", "") for t in TOPICS]
    corpus = Corpus(documents, chunks, EmbeddedTexts(embedder.embed([c.text for c in chunks]), 0, len(chunks), 0))
    topics = np.array([TOPICS.index(c.document.removesuffix(".txt")) for c in chunks])
    config = AnalysisConfig()
    assert config.embedding.provider == "auto" and config.embedding.model is None  # unresolved: the English default
    result = session.calibrate_corpus(config, corpus, embedder, topic_labels=topics)
    assert not result.reliable and result.support_threshold == pytest.approx(level)
    assert result.method == "default: model default"
    uncalibrated = session.calibrate_corpus(config, corpus)  # no embedder at hand
    assert not uncalibrated.reliable and uncalibrated.support_threshold == pytest.approx(level)
    assert session.calibrate_corpus(AnalysisConfig(support_threshold=0.3), corpus).reliable  # the user's level


# ------------------------------------------------------------------ tested share, untested documents


def test_tested_share_and_is_untested_on_a_hand_made_case():
    # similarities 1 - d: A has 3 of 4 chunks at >= 0.5, B 0 of 2, C 1 of 4.
    similarity = np.array([0.9, 0.6, 0.5, 0.2, 0.3, 0.1, 0.7, 0.2, 0.2, 0.2])
    documents = ["A"] * 4 + ["B"] * 2 + ["C"] * 4
    distances = 1 - similarity
    assert metrics.tested_chunks(distances, 0.5).tolist() == [True, True, True, False, False, False,
                                                              True, False, False, False]
    assert metrics.tested_share(distances, 0.5) == pytest.approx(0.4)
    table = verdicts.with_document_verdicts(metrics.document_coverage(distances, documents, support_threshold=0.5),
                                            {"A": 2, "C": 2}).set_index("document")
    assert table["n_tested"].to_dict() == {"A": 3, "B": 0, "C": 1}
    assert table["tested_share"].to_dict() == pytest.approx({"A": 0.75, "B": 0.0, "C": 0.25})
    assert table["is_untested"].to_dict() == {"A": False, "B": True, "C": False}  # no question targets B
    assert table["is_undertested"].to_dict() == {"A": False, "B": False, "C": 0.25 < verdicts.UNDERTESTED_SHARE}
    n_tested, share = metrics.cluster_tested(distances, np.array([0] * 5 + [1] * 5), 3, 0.5)
    assert n_tested.tolist() == [3, 1, 0] and share[:2].tolist() == [0.6, 0.2] and np.isnan(share[2])


def test_is_untested_fires_when_most_documents_are_untested_and_is_low_does_not():
    # 8 documents with no question near them, 2 well tested.
    documents = [name for name in "ABCDEFGHIJ" for _ in range(5)]
    similarity = np.array([0.2] * 40 + [0.8] * 10)
    table = verdicts.with_document_verdicts(metrics.document_coverage(1 - similarity, documents, support_threshold=0.5),
                                            {"I": 2, "J": 2}).set_index("document")
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


def test_an_unreliable_level_lets_the_ranking_decide_what_is_tested():
    from coverage_core.verdicts import headline

    # The alpha questions reach their passages at 0.83-0.95: all under a level of 0.99, all ranked first.
    reliable = _measure(AnalysisConfig(n_clusters=3), Calibration(0.99, "override"))
    assert reliable.documents["is_untested"].all() and reliable.metrics["tested_share"] == 0.0
    assert "whatever the similarity" not in headline(reliable)

    fallback = Calibration(0.99, "default: model default", reliable=False, reason="The documents do not separate.")
    unreliable = _measure(AnalysisConfig(n_clusters=3), fallback)
    documents = unreliable.documents.set_index("document")
    assert documents["is_untested"].to_dict() == {"alpha.txt": False, "beta.txt": True, "gamma.txt": True}
    assert documents.loc["alpha.txt", "n_questions"] == 6
    # Every passage of an on-topic question's top 5 is tested: alpha's 4, and the one other passage each ranks 5th.
    assert documents["n_tested"].to_dict() == {"alpha.txt": 4, "beta.txt": 1, "gamma.txt": 1}
    assert unreliable.metrics["tested_share"] == pytest.approx(6 / 12)
    assert unreliable.clusters["n_tested"].tolist() == [4, 1, 1]
    words = headline(unreliable)
    assert words.startswith("The support level could not be calibrated on these documents")
    assert ("a passage counts as tested when a question retrieves it among its top 5 passages, whatever the "
            "similarity, and a document when at least 2 questions retrieve one of its passages") in words
    assert "similarity of at least" not in words
    assert not any("alpha.txt" in warning for warning in unreliable.warnings)


def test_report_schema_3_carries_calibration_and_decisions():
    calibration = Calibration(0.5, "pseudo-queries", n_probes=99, positive_median=0.8, negative_median=0.1,
                              separation=0.9)
    analysis = _measure(AnalysisConfig(n_clusters=3), calibration)
    report = json.loads(json.dumps(build_report(analysis)))
    assert report["schema_version"] == SCHEMA_VERSION == 6
    expected = {
        "support_threshold": 0.5, "method": "pseudo-queries", "n_probes": 99, "positive_median": 0.8,
        "negative_median": 0.1, "separation": 0.9, "labelled_threshold": None, "question_support_threshold": 0.5,
        "reliable": True, "reason": "", "n_near_duplicates": 0,
    }
    assert {key: report["calibration"].get(key) for key in expected} == expected
    assert report["metrics"]["tested_share"] == pytest.approx(1 / 3, abs=1e-6)
    documents = {d["name"]: d for d in report["documents"]}
    assert documents["beta.txt"]["is_untested"] and documents["beta.txt"]["n_tested"] == 0
    assert documents["alpha.txt"]["tested_share"] == 1.0 and "is_low" in documents["alpha.txt"]
    assert [c["tested_share"] for c in report["clusters"]] == [1.0, 0.0, 0.0]
    junit.check_report(report)  # the CI tools read version 2 (and 1)
    # The rest of the headline is the verdicts' business.
    assert verdicts.headline(analysis).startswith("33% of the knowledge base is tested (4 of 12 passages); 2 documents untested")

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
