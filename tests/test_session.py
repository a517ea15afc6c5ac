"""The orchestrator: the CLI and the dashboard get the same analysis, and a change reruns only what it touches."""

import dataclasses

import numpy as np
import pytest

from coverage_core import gap_finding, measure as measure_stage, session
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.session import STAGES, AnalysisSession
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT
from ui import engine
from ui.settings import Settings
from ui.state import Overrides

EXAMPLE = PROJECT / "examples" / "wiki-qa"
SETTINGS = Settings().replace(chunk_size=800, chunk_overlap=100, n_clusters=4)


def word_embedder() -> FakeEmbedder:
    """Vectors from shared words: similar texts are close, and no model is loaded."""
    return FakeEmbedder(vectors="words", width=96, max_tokens=400)


@pytest.fixture(scope="module")
def example():
    documents = read_documents([EXAMPLE / "docs"]).documents
    return documents, read_questions(EXAMPLE / "questions.csv")


def dashboard_inputs(example, analysis_session: AnalysisSession, embedder, settings=SETTINGS):
    documents, questions = example
    corpus_key = engine.corpus_key(engine.documents_fingerprint(documents), settings)
    question_key = engine.question_key(engine.questions_fingerprint(questions), settings)
    return analysis_session.embed(corpus_key, question_key, questions, embedder, None, documents=documents)


@pytest.mark.slow
def test_the_cli_and_the_dashboard_get_the_same_analysis(example):
    documents, questions = example
    config = engine.analysis_config(SETTINGS)
    cli = session.analyze(config, documents, questions, embedder=word_embedder())
    dashboard = AnalysisSession()
    embedder = word_embedder()
    inputs = dashboard_inputs(example, dashboard, embedder)
    shown = engine.tune(inputs, SETTINGS, Overrides(), dashboard, embedder=embedder)
    assert shown.config == cli.config and shown.calibration == cli.calibration
    np.testing.assert_array_equal(shown.clustering.labels, cli.clustering.labels)
    np.testing.assert_array_equal(shown.is_outlier, cli.is_outlier)
    np.testing.assert_allclose(shown.min_distances, cli.min_distances, atol=1e-6)
    assert shown.metrics == pytest.approx(cli.metrics, abs=1e-6)
    assert shown.clusters["is_gap"].tolist() == cli.clusters["is_gap"].tolist()
    assert shown.clusters["label"].tolist() == cli.clusters["label"].tolist()
    assert [gap.cluster for gap in gap_finding.with_gaps(shown).gaps] == [gap.cluster for gap in cli.gaps]


def _spy(monkeypatch, calls: list[str]) -> None:
    """Record each call of the stage functions the session runs."""
    for module, name in [(session, "cluster_chunks"), (session, "calibrate_corpus"),
                         (measure_stage, "fit_screener"), (measure_stage, "measure")]:
        def recorded(*args, _real=getattr(module, name), _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, recorded)


def test_a_new_k_reclusters_without_refitting_the_screener_or_recalibrating(example, monkeypatch):
    embedder = word_embedder()
    analysis_session = AnalysisSession()
    inputs = dashboard_inputs(example, analysis_session, embedder)
    config = engine.analysis_config(SETTINGS)
    calls: list[str] = []
    _spy(monkeypatch, calls)
    first = analysis_session.analysis_for(inputs, config, embedder=embedder)
    assert sorted(calls) == ["calibrate_corpus", "cluster_chunks", "cluster_chunks", "fit_screener", "measure"]

    calls.clear()
    other_k = analysis_session.analysis_for(inputs, dataclasses.replace(config, n_clusters=6), embedder=embedder)
    assert calls == ["cluster_chunks", "measure"]
    assert other_k.screener is first.screener and other_k.calibration is first.calibration
    np.testing.assert_array_equal(other_k.is_outlier, first.is_outlier)

    calls.clear()  # back to the first K: its clustering was kept
    analysis_session.analysis_for(inputs, config, embedder=embedder)
    assert calls == ["measure"]

    calls.clear()  # only the gap threshold: clusters are relabelled, nothing is measured
    gaps = dataclasses.replace(config.gaps, tested_share_threshold=0.9)
    relabelled = analysis_session.analysis_for(inputs, dataclasses.replace(config, gaps=gaps), embedder=embedder)
    assert calls == []
    assert relabelled.clusters["is_gap"].tolist() == (relabelled.clusters["tested_share"] < 0.9).tolist()


def heard_progress(example, config) -> list[tuple[str, int, int]]:
    """Every ``(stage, done, total)`` one analysis of the example tells its progress callback."""
    documents, questions = example
    heard: list[tuple[str, int, int]] = []
    session.analyze(config, documents, questions, embedder=word_embedder(),
                    progress=lambda stage, done, total: heard.append((stage, done, total)))
    return heard


def test_one_progress_callback_hears_every_stage(example):
    heard = heard_progress(example, engine.analysis_config(SETTINGS))
    assert {stage for stage, _, _ in heard} == set(STAGES)
    assert heard[-1] == ("measuring", 1, 1)


def test_the_calibration_counts_the_sample_texts_it_embeds(example):
    # A slow model spends minutes on them even for a few PDFs: a bar at "0 of 1" meanwhile looks stuck.
    config = engine.analysis_config(SETTINGS)
    counts = [(done, total) for stage, done, total in heard_progress(example, config) if stage == "calibration"]
    totals = {total for _, total in counts}
    assert len(totals) == 1 and totals.pop() > 100  # about 800 texts, counted against one total
    assert counts[-1][0] == counts[-1][1] and len(counts) >= 2  # from the start to the end
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)

    # The user's own level: nothing to calibrate, so no bar.
    heard = heard_progress(example, dataclasses.replace(config, support_threshold=0.4))
    assert "calibration" not in {stage for stage, _, _ in heard} and heard[-1] == ("measuring", 1, 1)
