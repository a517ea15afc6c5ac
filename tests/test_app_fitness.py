"""The Knowledge-base fitness page through AppTest: answerability labels, views, dimension sweep.

A slice of the bundled example (two articles; the Drum, Flute and Zebra
questions, the Zebra ones labelled ``no`` in the ``answerable`` column) is
embedded once per module with the real bundled model into a temporary cache
and seeded into each test's session state the way the pages store it. The
page's numbers are checked against the core's functions on the same data.
"""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from coverage_core import costs
from coverage_core.checks import answerability, answerability_labels
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.results import Analysis
from tests.app_support import EXAMPLE, analysis_of, metric, run_page, seed_session, shown, subset_csv, texts
from ui import engine, formats, state

DOCS = ["Drum.txt", "Flute.txt"]
PAGE = "pages/5_fitness.py"


def _seed(settings, embedder, cache, data: bytes) -> tuple[dict, Analysis]:
    """Session-state values of a finished run on the slice, and the analysis they give."""
    values, inputs = seed_session(read_documents([EXAMPLE / "docs" / name for name in DOCS]), data, settings,
                                  embedder, cache, DOCS)
    return values, analysis_of(values, inputs)


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    settings = state.Settings(n_clusters=3)
    return _seed(settings, make_embedder("local"), EmbeddingCache(module_cache_dir), subset_csv())


@pytest.fixture(scope="module")
def unlabelled(module_cache_dir):
    """The same slice without the ``answerable`` column (the vectors come from the cache)."""
    settings = state.Settings(n_clusters=3)
    return _seed(settings, make_embedder("local"), EmbeddingCache(module_cache_dir), subset_csv(drop=("answerable",)))


def app(values: dict | None = None) -> AppTest:
    return run_page(PAGE, values)


def expected(analysis) -> answerability.AnswerabilityResult:
    labels = answerability_labels.question_labels(analysis.questions).labels
    return answerability.answerability(analysis.question_table["max_similarity"].to_numpy(dtype=float), labels)


def charts(at: AppTest) -> list[dict]:
    import json

    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


# ---------------------------------------------------------------- without data


def test_without_an_analysis_the_page_says_what_to_do():
    at = app()
    assert "Upload" in " ".join(texts(at.info))
    assert not at.error and not at.metric and not at.main.button  # the sidebar has its own


# ---------------------------------------------------------------- labels
def statistics(at) -> dict[str, str]:
    """The label analysis's statistics by name ("- **AUROC 0.912**: …"), {} without the expander."""
    boxes = [e for e in at.expander if shown(e.label).startswith("Label analysis")]
    if not boxes:
        return {}
    found = {}
    for line in shown(boxes[0].markdown[0].value).splitlines():
        name_value = line.removeprefix("- **").split("**", 1)[0]
        name, _, value = name_value.rpartition(" ")
        found[name] = value
    return found



@pytest.mark.slow
def test_label_statistics_are_the_cores_with_a_box_plot(seeded):
    values, reference = seeded
    found = expected(reference)
    assert found.n_unanswerable > 0 and found.n_answerable > 0 and np.isfinite(found.threshold)
    at = app(values)
    assert at.selectbox(key=state.W_LABEL_COLUMN).value == ""
    assert "Detected: answerable" in at.selectbox(key=state.W_LABEL_COLUMN).options
    # The statistics are in the label analysis, each with its meaning; the page says what they find in shares.
    listed = statistics(at)
    assert listed["Point-biserial r"] == f"{found.point_biserial_r:.3f}"
    assert listed["p-value"] == f"{found.p_value:.2g}"
    assert listed["AUROC"] == f"{found.auroc:.3f}"
    assert listed["Best dividing line"] == formats.similarity(found.threshold)  # one format: ui.formats
    assert f"{formats.percent(found.sensitivity)} of the answerable questions are above the line" in " ".join(
        texts(at.markdown))
    assert f"{found.n_labelled:,} labelled questions" in " ".join(texts(at.caption))
    # The box plot comes with the label figures, before the ranked and polar views.
    figures = charts(at)
    assert len(figures) == 3
    box = figures[0]
    assert [trace["type"] for trace in box["data"]] == ["box", "box"]
    assert sorted(len(trace["x"]) for trace in box["data"]) == sorted([found.n_unanswerable, found.n_answerable])
    # The table says which questions carry which label.
    table = at.dataframe[0].value
    assert (table["label"] == "not answerable").sum() == found.n_unanswerable


@pytest.mark.slow
def test_use_the_best_threshold_moves_the_slider_and_the_weak_count(seeded):
    values, reference = seeded
    found = expected(reference)
    at = app(values)
    # The slider starts at the analysis's own question support level, the level of the off-topic count.
    assert at.slider(key=state.W_FITNESS_THRESHOLD).value == pytest.approx(
        reference.calibration.question_support_threshold, abs=0.01)
    button = at.button(key=state.W_USE_BEST_THRESHOLD)
    assert button.label == f"Use {formats.similarity(found.threshold)} as the threshold"
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key=state.W_FITNESS_THRESHOLD).value == pytest.approx(found.threshold)
    assert at.session_state[state.FITNESS_THRESHOLD] == pytest.approx(found.threshold)
    weak = int((reference.question_table["max_similarity"] < found.threshold).sum())
    assert metric(at, "May not be answerable") == f"{weak:,}"
    assert at.button(key=state.W_USE_BEST_THRESHOLD).disabled


@pytest.mark.slow
def test_without_a_label_column_a_caption_says_what_to_add(unlabelled):
    values, _ = unlabelled
    at = app(values)
    assert any("add a column named `answerable`" in text.lower() for text in texts(at.caption))
    assert "Detected: none" in at.selectbox(key=state.W_LABEL_COLUMN).options
    assert not at.error
    assert state.W_USE_BEST_THRESHOLD not in [b.key for b in at.button]
    assert "AUROC" not in statistics(at)


@pytest.mark.slow
def test_a_guessed_column_that_holds_no_labels_is_noted_and_left_out(unlabelled):
    values, _ = unlabelled
    values = dict(values)
    frame = read_questions(subset_csv(drop=("answerable",)), name="subset.csv").frame
    frame["label"] = frame["article"]  # topic names in a column named like a label column
    questions = read_questions(frame.to_csv(index=False).encode("utf-8"), name="subset.csv")
    stored = values[state.QUESTION_VECTORS]
    assert engine.questions_fingerprint(questions) == engine.questions_fingerprint(stored.value[0])
    values[state.QUESTIONS] = questions
    values[state.QUESTION_VECTORS] = state.Stage(stored.key, (questions, stored.value[1]))
    at = app(values)
    assert not at.error
    notes = " ".join(texts(at.info))
    assert "Column 'label' was not used as answerability labels" in notes
    assert any("add a column named `answerable`" in text.lower() for text in texts(at.caption))
    assert "AUROC" not in statistics(at)


@pytest.mark.slow
def test_a_chosen_column_holding_junk_is_an_error_not_a_crash(seeded):
    values, _ = seeded
    at = app(values)
    at.selectbox(key=state.W_LABEL_COLUMN).set_value("difficulty").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[state.SETTINGS].label_column == "difficulty"
    error = " ".join(texts(at.error))
    assert "'difficulty'" in error and "not answerable labels" in error
    assert "AUROC" not in statistics(at)
    # The rest of the page still works.
    assert metric(at, "Questions") and len(at.dataframe[0].value) > 0
    at.selectbox(key=state.W_LABEL_COLUMN).set_value("").run()
    assert not at.error and "AUROC" in statistics(at)


# ---------------------------------------------------------------- MDS view


@pytest.mark.slow
def test_mds_view_is_computed_once_and_explained(seeded):
    values, reference = seeded
    at = app(values)
    assert state.MDS not in at.session_state
    at.segmented_control(key=state.W_FITNESS_VIEW).set_value("MDS map").run()
    assert not at.exception, [e.value for e in at.exception]
    figures = charts(at)
    assert len(figures) == 2  # the labels' box plot, then the map in place of the ranked and polar views
    names = {trace.get("name") for trace in figures[1]["data"]}
    assert {"chunks", "answerable questions", "not-answerable questions"} <= names
    captions = " ".join(texts(at.caption))
    n_chunks, n_questions = len(reference.corpus.chunks), len(reference.questions.questions)
    assert f"All {n_chunks:,} chunks and {n_questions:,} questions shown." in captions
    assert "less useful than the ranked and polar views" in captions
    assert "collapse toward the centre" in captions
    stored = at.session_state[state.MDS]
    assert isinstance(stored, state.Stage)
    at.slider(key=state.W_FITNESS_THRESHOLD).set_value(0.6).run()
    assert not at.exception
    assert at.session_state[state.MDS] is stored  # a threshold move does not recompute the map
    assert len(charts(at)) == 2


# ---------------------------------------------------------------- dimension sweep


@pytest.mark.slow
def test_dimension_sweep_has_one_row_per_size_and_the_truncation_note(seeded):
    values, reference = seeded
    at = app(values)
    note = " ".join(texts(at.info))
    assert "all-MiniLM-L6-v2 was not trained for truncation" in note
    assert state.W_SWEEP_API not in [c.key for c in at.checkbox]  # no API option for the local model
    at.button(key=state.W_RUN_SWEEP).click().run()
    assert not at.exception, [e.value for e in at.exception]
    sweep = at.dataframe[1].value
    assert list(sweep["dimensions"]) == [32, 64, 128, 256, 384]
    assert set(sweep["vectors"]) == {"truncated", "full"}
    assert sweep["ranking kept (vs all dimensions)"].iloc[-1] == 1.0
    labels = answerability_labels.question_labels(reference.questions).labels
    core = answerability.dimension_sweep(reference.question_vectors, reference.corpus.vectors, labels=labels)
    assert np.allclose(sweep["labels told apart"], core["auroc"])
    assert np.allclose(sweep["link to the labels"], core["point_biserial_r"])
    assert sweep["labels told apart"].iloc[-1] == pytest.approx(expected(reference).auroc)
    assert any(chart["data"][0]["name"].startswith("ranking kept") for chart in charts(at))
    stored = at.session_state[state.DIMENSION_SWEEP]
    at.run()
    assert at.session_state[state.DIMENSION_SWEEP] is stored
    assert len(at.dataframe[1].value) == 5 and not [b for b in at.button if b.key == state.W_RUN_SWEEP]


def _openai_session(fake_api, tmp_path, monkeypatch) -> tuple[dict, Analysis]:
    """The slice embedded by the fake OpenAI API with text-embedding-3-small at 64 dimensions, key typed."""
    monkeypatch.setenv("COVERAGE_CORE_CACHE_DIR", str(tmp_path / "cache"))
    base_url = fake_api.url + "/v1"
    settings = state.Settings(
        provider="openai", model="text-embedding-3-small", dimensions=64, base_url=base_url, n_clusters=3
    )
    embedder = make_embedder("openai", "text-embedding-3-small", dimensions=64, api_key="test-key", base_url=base_url)
    values, reference = _seed(settings, embedder, EmbeddingCache(tmp_path / "cache"), subset_csv())
    values[state.EMBED_API_KEY] = "test-key"
    return values, reference


@pytest.mark.slow
def test_openai_text_embedding_3_sweep_asks_before_calling_the_api(fake_api, tmp_path, monkeypatch):
    values, _ = _openai_session(fake_api, tmp_path, monkeypatch)
    at = app(values)
    assert not [t for t in texts(at.info) if "trained for truncation" in t]
    consent = at.checkbox(key=state.W_SWEEP_API)
    assert "32 dimensions through the API" in consent.label and "tokens, about \\$" in consent.label
    sent_before = len(fake_api.requests)
    consent.check().run()
    assert len(fake_api.requests) == sent_before  # ticking alone sends nothing
    at.button(key=state.W_RUN_SWEEP).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts(at.error)
    sweep = at.dataframe[1].value
    assert list(sweep["dimensions"]) == [32, 64]
    assert list(sweep["vectors"]) == ["embedded", "full"]
    asked = {request.body.get("dimensions") for request in fake_api.requests[sent_before:]}
    assert asked == {32}


@pytest.mark.slow
def test_api_sweep_consent_prices_the_uncached_texts_once_per_size(fake_api, tmp_path, monkeypatch):
    values, reference = _openai_session(fake_api, tmp_path, monkeypatch)
    at = app(values)
    sent = [c.text for c in reference.corpus.chunks] + list(reference.questions.texts)
    tokens = costs.approximate_tokens(dict.fromkeys(sent))  # nothing is cached at 32 dimensions yet
    estimate = costs.estimate_embedding_cost(tokens, "openai", "text-embedding-3-small", costs.default_price_table())
    assert estimate.usd is not None and tokens > 0
    label = at.checkbox(key=state.W_SWEEP_API).label
    assert label == (
        "Embed every text again at 32 dimensions through the API (the model's own shorter embeddings; "
        f"{estimate.label})"
    ).replace("$", "\\$")
    assert any("sent to your base URL once per size" in text for text in texts(at.caption))
    at.checkbox(key=state.W_SWEEP_API).check().run()
    at.button(key=state.W_RUN_SWEEP).click().run()
    assert not at.exception and not at.error, texts(at.error)
    # Embedded once: the texts are in the cache at 32 dimensions now, so running again would send nothing.
    at.run()
    assert at.checkbox(key=state.W_SWEEP_API).label.startswith(
        "Embed every text again at 32 dimensions through the API (the model's own shorter embeddings; ~0 tokens"
    )


def test_the_page_says_why_its_count_differs_from_results_reason_by_reason(seeded):
    from types import SimpleNamespace

    from ui.views import fitness as view

    _, analysis = seeded
    questions = analysis.question_table.copy()
    similarity = questions["max_similarity"].to_numpy(dtype=float)
    threshold, level = float(np.quantile(similarity, 0.6)), float(np.quantile(similarity, 0.3))
    table = view.fitness_table(analysis, threshold)  # the user moved the slider above Results' level
    below = similarity < threshold

    def said() -> str:
        return view.offtopic_difference(
            SimpleNamespace(question_table=questions, screener=SimpleNamespace(question_support_threshold=level)),
            table)

    questions["is_outlier"], questions["offtopic_reason"] = below, np.where(below, "no_support", "")
    questions["offtopic_score"] = np.where(below, 1.0, -1.0)
    assert said() == ""

    short, reaching, high = (np.flatnonzero(similarity < level), np.flatnonzero(below & (similarity >= level)),
                             np.flatnonzero(~below))
    columns = ["is_outlier", "offtopic_reason", "offtopic_score"]
    questions.loc[short[0], columns] = [False, "", np.nan]  # kept by hand
    questions.loc[short[1], columns] = [False, "", -0.2]
    questions.loc[reaching[:2], columns] = [False, "", -0.5]
    questions.loc[high[0], columns] = [True, "excluded", np.nan]
    questions.loc[high[1:3], columns] = [True, "absent_subject", 1.0]
    text = said()
    assert text.startswith(f"Results counts {below.sum() - 4 + 3} questions off-topic, not {below.sum()}: ")
    assert f"2 questions below this threshold are kept there, as they reach the support level Results uses " \
           f"({formats.similarity(level)})" in text
    assert "1 question below this threshold is kept there, as one passage holds most of its words or it is" in text
    assert "1 question below this threshold is kept by your choice" in text
    assert "1 question above it is excluded by your choice" in text
    assert "2 questions above it are flagged there, as they ask about a subject the documents never discuss" in text
    assert text.endswith("excluded by your choice.") and "no passage holds" not in text
