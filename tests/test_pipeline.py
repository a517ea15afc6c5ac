"""An analysis's stages, and what runs on a finished one, on a small real corpus with the real local model."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from coverage_core.config import AnalysisConfig
from coverage_core.editing import accept_questions, add_questions
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.measure import measure
from coverage_core.outputs.report import build_report
from coverage_core.outputs.safe_csv import to_safe_csv
from coverage_core.session import analyze
from coverage_core.stages.chunking import ChunkingConfig
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"
DOCS = ["Drum.txt", "Flute.txt", "Koala.txt"]


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    cache = EmbeddingCache(tmp_path_factory.mktemp("cache"))
    embedder = make_embedder("local")
    documents = read_documents([EXAMPLE / "docs" / name for name in DOCS]).documents
    questions = read_questions(EXAMPLE / "questions.csv")
    keep = questions.frame["article"].isin(["Drum", "Flute", "Zebra"])
    frame = questions.frame[keep].reset_index(drop=True)
    csv_bytes = frame.to_csv(index=False).encode("utf-8")
    questions = read_questions(csv_bytes, name="subset.csv")
    config = AnalysisConfig(chunking=ChunkingConfig(1000, 200), n_clusters=4)
    analysis = analyze(config, documents, questions, embedder=embedder, cache=cache)
    return analysis, embedder, cache


@pytest.mark.slow
def test_analysis_finds_the_untested_document(setting):
    analysis, _, _ = setting
    documents = analysis.documents.set_index("document")
    assert documents["coverage"].idxmin() == "Koala.txt"
    koala_chunks = np.array([c.document == "Koala.txt" for c in analysis.corpus.chunks])
    koala_clusters = set(analysis.clustering.labels[koala_chunks])
    assert analysis.gaps and analysis.gaps[0].cluster in koala_clusters


@pytest.mark.slow
def test_accepting_gap_suggestions_raises_that_clusters_coverage(setting):
    analysis, embedder, cache = setting
    gap = analysis.gaps[0]
    before = analysis.clusters.loc[gap.cluster, "coverage"]
    improved, after_analysis = accept_questions(analysis, [s.text for s in gap.suggestions], embedder, cache)
    assert not after_analysis.is_outlier[len(analysis.questions.questions):].any()
    after = after_analysis.clusters.loc[gap.cluster, "coverage"]
    assert after > before
    assert after_analysis.metrics["basic"] > analysis.metrics["basic"]
    # Only new question texts were embedded; everything else came from cache, the written questions too
    # (the keep rule embedded them through the same cache).
    added = {s.text for s in gap.suggestions}
    written = {s.text for s in gap.suggestions if s.origin in ("local", "llm")}
    embedding = after_analysis.question_embedding
    assert embedding.n_embedded == len(added - written)
    assert embedding.n_cached == len(analysis.questions.questions) + len(written)
    # Same clusters before and after, so per-cluster deltas are meaningful.
    assert after_analysis.clustering is analysis.clustering


@pytest.mark.slow
def test_tested_is_retrieved_among_the_top_k_in_every_figure(setting):
    from coverage_core import metrics
    from coverage_core.stages import similarity

    analysis, _, _ = setting
    tau, k = analysis.calibration.support_threshold, analysis.config.retrieval_k
    inliers = ~analysis.is_outlier
    top, sims = similarity.question_top_chunks(analysis.corpus.vectors, analysis.question_vectors, k)
    tested = metrics.retrieved_tested_chunks(top, sims, len(analysis.corpus.chunks), tau, k, inliers)
    # Corpus, topics and documents all count the same passages.
    assert analysis.metrics["tested_share"] == pytest.approx(tested.mean(), abs=1e-12)
    assert analysis.clusters["n_tested"].sum() == analysis.documents["n_tested"].sum() == tested.sum()
    # At most k passages per on-topic question.
    assert tested.sum() <= k * inliers.sum()
    # No question is about Koala: untested, not merely under-tested.
    koala = analysis.documents.set_index("document").loc["Koala.txt"]
    assert koala["n_questions"] == 0 and koala["is_untested"] and not koala["is_undertested"]
    # k beyond what the screener kept takes the blockwise path and tests at least as much.
    wider = measure(dataclasses.replace(analysis.config, retrieval_k=12), analysis.corpus, analysis.questions,
                    analysis.question_embedding, analysis.clustering, screener=analysis.screener,
                    calibration=analysis.calibration)
    assert np.array_equal(wider.is_outlier, analysis.is_outlier)
    assert wider.metrics["tested_share"] >= analysis.metrics["tested_share"]
    assert wider.metrics["basic"] == pytest.approx(analysis.metrics["basic"])  # the method's scores keep min distances


@pytest.mark.slow
def test_add_questions_keeps_the_users_schema(setting):
    analysis, _, _ = setting
    original = analysis.questions
    improved = add_questions(original, ["What do koalas eat?", "  ", "=HYPERLINK(\"x\")"])
    frame = improved.frame
    assert list(frame.columns) == list(original.frame.columns) + ["suggested"]
    pd.testing.assert_frame_equal(frame.iloc[: len(original.frame)][original.frame.columns], original.frame)
    assert frame["suggested"].tolist()[-2:] == ["yes", "yes"]
    assert frame[original.question_column].tolist()[-2:] == ["What do koalas eat?", "=HYPERLINK(\"x\")"]
    assert [q.row for q in improved.questions[-2:]] == [len(original.frame), len(original.frame) + 1]
    exported = to_safe_csv(frame).decode("utf-8-sig")
    assert "'=HYPERLINK" in exported and "\n=HYPERLINK" not in exported


@pytest.mark.slow
def test_overrides_change_the_inliers_and_the_coverage(setting):
    analysis, _, _ = setting
    rows = analysis.questions.rows
    outlier_rows = [r for r, o in zip(rows, analysis.is_outlier) if o]
    assert outlier_rows, "the Zebra questions should be screened out"
    included = measure(
        analysis.config, analysis.corpus, analysis.questions, analysis.question_embedding,
        analysis.clustering, force_include=outlier_rows, screener=analysis.screener,
    )
    assert not included.is_outlier.any()
    # The question nearest to the most chunks: dropping it must lower coverage.
    busiest = int(np.bincount(analysis.nearest_question[analysis.nearest_question >= 0]).argmax())
    excluded_row = rows[busiest]
    excluded = measure(
        analysis.config, analysis.corpus, analysis.questions, analysis.question_embedding,
        analysis.clustering, force_exclude=[excluded_row], screener=analysis.screener,
    )
    assert excluded.is_outlier[rows.index(excluded_row)]
    assert excluded.metrics["basic"] < analysis.metrics["basic"] - 1e-4


@pytest.mark.slow
def test_reusing_the_screener_matches_a_fresh_fit(setting):
    analysis, _, _ = setting
    strictness = analysis.screener.strictness
    config = dataclasses.replace(analysis.config, strictness=strictness)
    # The same support level for both: the analysis's screener was fitted against its calibration.
    reused = measure(config, analysis.corpus, analysis.questions, analysis.question_embedding,
                     analysis.clustering, screener=analysis.screener, calibration=analysis.calibration)
    fresh = measure(config, analysis.corpus, analysis.questions, analysis.question_embedding, analysis.clustering,
                    calibration=analysis.calibration)
    assert np.array_equal(reused.is_outlier, fresh.is_outlier)
    assert reused.metrics == pytest.approx(fresh.metrics)


@pytest.mark.slow
def test_no_inliers_gives_zero_coverage_and_says_why(setting):
    analysis, _, _ = setting
    result = measure(
        analysis.config, analysis.corpus, analysis.questions, analysis.question_embedding,
        analysis.clustering, force_exclude=analysis.questions.rows, screener=analysis.screener,
    )
    assert result.metrics == {name: 0.0 for name in result.metrics}
    assert any("screened out" in w for w in result.warnings)


@pytest.mark.slow
def test_report_is_json_and_follows_the_schema(setting):
    analysis, _, _ = setting
    report = json.loads(json.dumps(build_report(analysis)))
    assert report["schema_version"] == 6
    assert {"config", "metrics", "clusters", "documents", "questions", "warnings"} <= set(report)
    assert report["metrics"]["balanced"] == pytest.approx(float(np.mean(analysis.clusters["coverage"])), abs=1e-5)
    cluster = report["clusters"][0]
    assert {"id", "size", "share", "coverage", "n_questions", "is_gap", "themes", "suggested_questions"} <= set(cluster)
    assert [d["name"] for d in report["documents"]] and all("n_chunks" in d for d in report["documents"])
    assert len(report["questions"]) == len(analysis.questions.questions)
    assert "redundant_pairs" not in report
    groups = report["duplicate_groups"]
    assert set(groups) == {"n_groups", "n_questions", "threshold", "groups"}
    head_of = {row: g["representative"] for g in groups["groups"] for row in g["rows"][1:]}
    assert [q["duplicate_of"] for q in report["questions"]] == [head_of.get(q["row"]) for q in report["questions"]]


@pytest.mark.slow
def test_exact_repeats_join_their_originals_group(setting):
    analysis, embedder, cache = setting
    questions = add_questions(analysis.questions, [analysis.questions.texts[0], analysis.questions.texts[3]])
    repeats = {row: analysis.questions.rows[i] for row, i in zip(questions.rows[-2:], (0, 3))}
    questions = dataclasses.replace(questions, duplicates=repeats)
    from coverage_core.embedding_steps import embed_questions

    again = measure(analysis.config, analysis.corpus, questions, embed_questions(questions, embedder, cache),
                    analysis.clustering)
    table = again.question_table.set_index("row")
    for row, first in repeats.items():
        head = table.loc[first, "duplicate_of"]
        assert table.loc[row, "duplicate_of"] == (first if pd.isna(head) else head)


@pytest.mark.slow
def test_analyze_refuses_empty_inputs(setting):
    analysis, embedder, cache = setting
    with pytest.raises(InputError, match="no readable documents"):
        analyze(analysis.config, [], analysis.questions, embedder=embedder, cache=cache)


def test_the_label_checks_run_in_one_sequence_and_a_bad_column_stops_only_its_check(analysis):
    """What the command line and the dashboard both run: an unusable column leaves its check out with the reason."""
    from coverage_core.checks.runner import run_label_checks
    from coverage_core.errors import CoverageError

    plain = run_label_checks(analysis)
    assert plain.retrieval is None and plain.answerability is None  # the file names no sources, no labels
    assert plain.retrieval_error is None and plain.answerability_error is None and plain.notes == []
    plain.raise_first_error()  # nothing to raise

    broken = run_label_checks(analysis, relevant_column="gold_source", label_column="answerable")
    assert isinstance(broken.retrieval_error, CoverageError) and "gold_source" in str(broken.retrieval_error)
    assert isinstance(broken.answerability_error, CoverageError) and "answerable" in str(broken.answerability_error)
    with pytest.raises(CoverageError, match="gold_source"):  # the first check's reason first
        broken.raise_first_error()
