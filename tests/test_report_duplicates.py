"""Near-duplicate questions in the report: groups, not pairs, and a report that grows linearly.

Synthetic vectors (no model): questions are variants of a few base questions,
every variant within cosine ~0.995 of its base, so all variants of one base
are near-duplicates of each other (pairs grow with the square of the count).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from coverage_core.config import AnalysisConfig
from coverage_core.measure import measure
from coverage_core.outputs.html_report import MAX_DUPLICATE_GROUPS, build_html_report
from coverage_core.outputs.report import build_report, summary_table, write_report
from coverage_core.results import Corpus, EmbeddedTexts
from coverage_core.session import cluster_chunks
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.types import Chunk, Document, Question, QuestionSet
from ui.views import results as view

DIMS = 32


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def near_duplicate_analysis(n_bases: int, per_base: int, n_repeats: int = 0, seed: int = 0):
    """An analysis of ``n_bases * per_base`` variant questions (base by base, shuffled),
    then ``n_repeats`` exact repeats of the first questions. File row = index + 1
    (row 0 of the file is blank), so rows and indices differ."""
    rng = np.random.default_rng(seed)
    topics = _unit(rng.standard_normal((4, DIMS)))
    chunk_topic = np.repeat(np.arange(4), 30)
    chunk_vectors = _unit(topics[chunk_topic] + 0.4 * rng.standard_normal((len(chunk_topic), DIMS)))
    words = ["river delta water", "violin string bow", "comet orbit ice", "granite basalt rock"]
    chunks = [
        Chunk(f"doc{t}.txt", f"Passage {i}: {words[t]} and more {words[t]}.", 0, 10) for i, t in enumerate(chunk_topic)
    ]
    documents = [Document(f"doc{t}.txt", "") for t in range(4)]
    corpus = Corpus(documents, chunks, EmbeddedTexts(chunk_vectors, 0, len(chunks), 0))

    base_topic = rng.integers(0, 4, n_bases)
    bases = _unit(topics[base_topic] + 0.5 * rng.standard_normal((n_bases, DIMS)))
    picks = rng.permutation(np.repeat(np.arange(n_bases), per_base))
    noise = _unit(rng.standard_normal((len(picks), DIMS)))
    vectors = _unit(bases[picks] + 0.1 * noise)
    texts = [f"Variant {i} of question {b} about {words[base_topic[b]]}?" for i, b in enumerate(picks)]
    vectors = np.vstack([vectors, vectors[:n_repeats]])
    texts += texts[:n_repeats]
    n = len(texts)
    frame = pd.DataFrame({"question": [""] + texts})
    questions = QuestionSet(
        frame, "question", [Question(i + 1, t) for i, t in enumerate(texts)], n_blank=1,
        duplicates={len(picks) + i + 1: i + 1 for i in range(n_repeats)},
    )
    config = AnalysisConfig(chunking=ChunkingConfig(), n_clusters=4)
    clustering = cluster_chunks(corpus, 4, 0)
    return measure(config, corpus, questions, EmbeddedTexts(vectors, 0, n, 0), clustering)


@pytest.fixture(scope="module")
def small():
    return near_duplicate_analysis(n_bases=6, per_base=5, n_repeats=3)


def test_report_lists_duplicate_groups_instead_of_pairs(small):
    report = json.loads(json.dumps(build_report(small)))
    assert "redundant_pairs" not in report
    section = report["duplicate_groups"]
    assert set(section) == {"n_groups", "n_questions", "threshold", "groups"}
    assert section["threshold"] == 0.95
    groups = section["groups"]
    assert section["n_groups"] == len(groups) > 0
    assert section["n_questions"] == sum(len(g["rows"]) for g in groups)
    vectors = dict(zip(small.questions.rows, small.question_vectors))
    for group in groups:
        assert set(group) == {"representative", "rows", "min_similarity"}
        assert group["rows"][0] == group["representative"] and group["rows"] == sorted(group["rows"])
        sims = [float(vectors[r] @ vectors[group["representative"]]) for r in group["rows"]]
        assert min(sims) >= 0.95 - 1e-6
        assert group["min_similarity"] == pytest.approx(min(sims), abs=1e-5)
    assert [len(g["rows"]) for g in groups] == sorted((len(g["rows"]) for g in groups), reverse=True)
    # Every question's duplicate_of is its group's representative (None for representatives and loners).
    head_of = {row: g["representative"] for g in groups for row in g["rows"][1:]}
    assert {q["row"]: q["duplicate_of"] for q in report["questions"]} == {r: head_of.get(r) for r in small.questions.rows}
    # Rows are file rows (row 0 is blank), and each exact repeat sits in its original's group.
    assert 0 not in head_of and min(min(g["rows"]) for g in groups) >= 1
    group_of = {row: g["representative"] for g in groups for row in g["rows"]}
    for row, first in small.questions.duplicates.items():
        assert group_of[row] == group_of[first]


def test_summary_dashboard_and_html_show_the_groups(small):
    groups = small.duplicate_groups
    assert f"{groups.n_questions} questions form {groups.n_groups} groups of near-duplicates" in summary_table(small)
    table = view.duplicate_table(small)
    assert list(table.columns) == ["row", "question", "questions", "other rows", "lowest similarity"]
    assert table["questions"].sum() == groups.n_questions and len(table) == groups.n_groups
    head = int(table["row"].iloc[0])
    members = view.duplicate_members(small, head)
    assert members["row"].iloc[0] == head and len(members) == table["questions"].iloc[0]
    assert (members["similarity to the representative"] >= 0.95 - 1e-6).all()
    assert table["other rows"].iloc[0] == ", ".join(map(str, members["row"].iloc[1:]))
    html = build_html_report(small)
    assert "Near-duplicate questions" in html and f"{groups.n_questions} questions form {groups.n_groups} groups" in html


def test_html_lists_only_the_largest_groups():
    many = near_duplicate_analysis(n_bases=MAX_DUPLICATE_GROUPS + 20, per_base=2)
    assert many.duplicate_groups.n_groups > MAX_DUPLICATE_GROUPS
    html = build_html_report(many)
    assert f"The {MAX_DUPLICATE_GROUPS} largest groups of {many.duplicate_groups.n_groups}" in html


def test_no_groups_is_said_plainly():
    alone = near_duplicate_analysis(n_bases=8, per_base=1)
    assert alone.duplicate_groups.n_groups == 0
    assert build_report(alone)["duplicate_groups"] == {"n_groups": 0, "n_questions": 0, "threshold": 0.95, "groups": []}
    assert "No near-duplicate questions (similarity ≥ 0.95)." in build_html_report(alone)
    assert "near-duplicates" not in summary_table(alone)
    assert view.duplicate_table(alone).empty


def test_report_grows_linearly_with_near_duplicate_questions(tmp_path):
    # 30 base questions x 100 variants: 30 * C(100, 2) = 148,500 near-duplicate
    # pairs, which as pairs alone took ~12 MB (4,000 bytes per question). As
    # groups, the bytes per question stay what they are at a tenth of the size.
    per_question = {}
    for per_base in (10, 100):
        analysis = near_duplicate_analysis(n_bases=30, per_base=per_base)
        assert analysis.duplicate_groups.n_questions == 30 * per_base  # every variant is grouped
        path = tmp_path / f"report-{per_base}.json"
        write_report(build_report(analysis), path)
        per_question[per_base] = path.stat().st_size / (30 * per_base)
    assert per_question[100] < 600
    assert per_question[100] < 1.2 * per_question[10]


def _pairs_at(similarities, seed: int = 1):
    """Question vectors in pairs, pair p's two questions at exactly ``similarities[p]`` (other pairs far off)."""
    rng = np.random.default_rng(seed)
    vectors = []
    for c in similarities:
        base = _unit(rng.standard_normal((1, DIMS)))[0]
        other = rng.standard_normal(DIMS)
        other = other - (other @ base) * base
        other /= np.linalg.norm(other)
        vectors += [base, c * base + np.sqrt(1 - c * c) * other]
    return _unit(np.asarray(vectors))


def _grouped_pairs(provider: str, similarities, setting=None) -> int:
    from coverage_core.config import EmbeddingConfig

    rng = np.random.default_rng(0)
    chunk_vectors = _unit(rng.standard_normal((40, DIMS)))
    chunks = [Chunk(f"doc{i % 4}.txt", f"Passage {i} about granite and basalt.", 0, 10) for i in range(40)]
    corpus = Corpus([Document(f"doc{t}.txt", "") for t in range(4)], chunks, EmbeddedTexts(chunk_vectors, 0, 40, 0))
    vectors = _pairs_at(similarities)
    texts = [f"Question {i} about rock {i // 2}?" for i in range(len(vectors))]
    questions = QuestionSet(pd.DataFrame({"question": texts}), "question",
                            [Question(i, t) for i, t in enumerate(texts)])
    config = AnalysisConfig(embedding=EmbeddingConfig(provider=provider), n_clusters=4, redundancy_threshold=setting)
    analysis = measure(config, corpus, questions, EmbeddedTexts(vectors, 0, len(texts), 0), cluster_chunks(corpus, 4, 0))
    return analysis.duplicate_groups.n_groups, analysis.duplicate_groups.threshold


def test_the_near_duplicate_level_is_the_models_own():
    # Pairs at 0.96 and 0.975 are near-duplicates on all-MiniLM-L6-v2's scale (0.95), where e5, whose
    # cosines crowd high, puts questions that differ in one word; 0.993 is a near-duplicate on both.
    similarities = [0.96, 0.975, 0.993]
    assert _grouped_pairs("local", similarities) == (3, 0.95)
    assert _grouped_pairs("e5", similarities) == (1, 0.987)
    assert _grouped_pairs("use", similarities) == (3, 0.907)
    # A level the user sets wins over the model's.
    assert _grouped_pairs("e5", similarities, setting=0.95) == (3, 0.95)
    assert _grouped_pairs("local", similarities, setting=0.99) == (1, 0.99)
