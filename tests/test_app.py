"""Every dashboard page through Streamlit's AppTest, with and without data.

An analysis of a small slice (three articles, the Drum/Flute/Zebra questions)
is embedded once per module with the real bundled model, into a temporary
embedding cache, and seeded into each test's session state the way the pages
store it. Tests assert what the pages show: metric values, table contents,
error texts.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from coverage_core import embedding_steps
from coverage_core.measure import measure
from coverage_core.session import AnalysisSession, StageKey, calibration_key
from coverage_core.suggest.questions import is_unfinished_draft
from coverage_core.verdicts import Verdicts
from tests.app_support import EXAMPLE, example_run, metric, run_page, secondary_score, show_results_tab, shown, texts
from ui import engine, exports, formats, state, widgets
from ui.views import compare as compare_view, gaps as gaps_view

PROJECT_UI = EXAMPLE.parents[1] / "ui"

PAGES = {
    "upload": "pages/1_upload.py",
    "configure": "pages/2_configure.py",
    "results": "pages/3_results.py",
    "gaps": "pages/4_gaps.py",
    "fitness": "pages/5_fitness.py",
    "compare": "pages/6_compare.py",
}


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    return module_cache_dir


@pytest.fixture(scope="module")
def seeded(cache_dir):
    """Session-state values of a finished run, computed once for the module."""
    values, analysis, inputs, _, _ = example_run(state.Settings(n_clusters=4), cache_dir)
    return values, analysis, inputs


def app(page: str | None = None, values: dict | None = None) -> AppTest:
    return run_page(PAGES[page] if page is not None else None, values)


# ---------------------------------------------------------------- without data


@pytest.mark.parametrize("page", ["configure", "results", "gaps", "fitness", "compare"])
def test_pages_without_data_say_what_to_do(page):
    at = app(page)
    info = " ".join(texts(at.info))
    assert "Upload" in info
    assert not at.error and not at.metric


def test_upload_page_offers_the_example_and_both_uploaders():
    at = app()
    assert at.title[0].value == "Upload"
    assert [b.label for b in at.button if b.key == state.W_EXAMPLE] == ["Try the example"]
    uploaders = {u.key: u for u in at.file_uploader}
    assert uploaders[state.W_DOC_UPLOADER].accept_multiple_files
    assert set(uploaders[state.W_DOC_UPLOADER].allowed_type) == {".pdf", ".txt", ".md"}
    assert not uploaders[state.W_CSV_UPLOADER].accept_multiple_files
    assert "Add documents and a question file" in " ".join(texts(at.info))


# ---------------------------------------------------------------- upload path


def test_upload_documents_and_csv_shows_counts_preview_and_every_warning(cache_dir):
    at = app()
    drum = (EXAMPLE / "docs" / "Drum.txt").read_bytes()
    flute = (EXAMPLE / "docs" / "Flute.txt").read_bytes()
    at.file_uploader(key=state.W_DOC_UPLOADER).set_value(
        [
            ("Drum.txt", drum, "text/plain"),
            ("Flute.txt", flute, "text/plain"),
            ("empty.txt", b"   ", "text/plain"),
            ("binary.md", b"\x00\x01\x02" * 50, "text/markdown"),
        ]
    )
    at.run()
    assert not at.exception
    success = " ".join(texts(at.success))
    assert "2 readable documents" in success
    documents = at.dataframe[0].value
    assert list(documents["document"]) == ["Drum.txt", "Flute.txt"]
    assert documents["chunks"].sum() > 10
    assert f"{documents['chunks'].sum():,} chunks" in success
    warnings = " ".join(texts(at.warning))
    assert "empty.txt" in warnings and "empty or contains only whitespace" in warnings
    assert "binary.md" in warnings and "binary data" in warnings
    languages = at.dataframe[1].value  # the documents' languages, in words
    assert languages.to_dict("records") == [{"Language": "English", "Share of the documents": "100%", "Documents": 2}]

    csv = "question;notes\nWhat is a drum?;x\n;blank row\nHow is a flute played?;y\nWhat is a drum?;again\n"
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value(("mine.csv", csv.encode("cp1252"), "text/csv"))
    at.run()
    assert not at.exception
    assert at.selectbox(key=state.W_QUESTION_COLUMN).value == "question"
    assert "3 questions in column “question” of mine.csv" in " ".join(texts(at.success))
    preview = at.dataframe[1].value
    assert list(preview.columns) == ["question", "notes"] and len(preview) == 4
    warnings = " ".join(texts(at.warning))
    assert "1 row with an empty 'question' cell was skipped" in warnings
    assert "1 question repeats an earlier one exactly" in warnings
    questions = at.dataframe[3].value  # after the documents' languages
    assert questions.to_dict("records") == [{"Language": "English", "Share of the questions": "100%", "Questions": 3}]
    assert "Languages" in texts(at.subheader)
    assert [link.value for link in at.get("page_link")]  # next step offered


def test_french_uploads_make_the_automatic_choice_a_multilingual_model_and_configure_says_why():
    paragraph = ("La Révolution française est une période de bouleversements politiques et sociaux en France, "
                 "qui commence en 1789 et met fin à l'Ancien Régime. Les députés des états généraux se "
                 "proclament Assemblée nationale et rédigent une constitution pour le royaume. ")
    at = app()
    at.file_uploader(key=state.W_DOC_UPLOADER).set_value(
        [("revolution.txt", (paragraph * 3).encode("utf-8"), "text/plain")])
    at.run()
    csv = "question\nQuand commence la Révolution française ?\nQui rédige la constitution du royaume ?\n"
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value(("questions.csv", csv.encode("utf-8"), "text/csv"))
    at.run()
    assert not at.exception
    assert {"Language": "French", "Share of the documents": "100%", "Documents": 1} in [
        row for frame in at.dataframe for row in frame.value.to_dict("records")]
    # Nothing is embedded yet: the choice is made from the languages alone, and the settings embed with it.
    settings = at.session_state[state.SETTINGS]
    assert settings.provider == "auto" and settings.automatic_choice == ("e5", "multilingual-e5-small")
    assert settings.embedding_config().provider == "e5"
    at.switch_page(PAGES["configure"]).run()
    assert not at.exception
    chosen = " ".join(texts(at.info))
    assert "Chosen: multilingual-e5-small" in chosen and "in French" in chosen and "English only" in chosen
    assert at.selectbox(key=state.W_PROVIDER).value == "auto"


def test_question_column_can_be_chosen_when_not_detected():
    at = app()
    csv = b"id,utterance,expected\n1,What is a drum?,A percussion instrument\n2,Who plays the flute?,A flautist\n"
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value(("custom.csv", csv, "text/csv"))
    at.run()
    assert "No question column found in custom.csv" in " ".join(texts(at.error))
    box = at.selectbox(key=state.W_QUESTION_COLUMN)
    assert box.options == ["id", "utterance", "expected"] and box.value is None
    box.select("utterance").run()
    assert not at.exception and not at.error
    assert "2 questions in column “utterance” of custom.csv" in " ".join(texts(at.success))
    assert at.session_state[state.QUESTIONS].texts == ["What is a drum?", "Who plays the flute?"]
    # A column with no questions at all is refused and the last good reading kept.
    at.selectbox(key=state.W_QUESTION_COLUMN).select("id").run()
    assert at.session_state[state.QUESTIONS].question_column == "id"  # ids are text too
    assert not at.exception


def test_unreadable_inputs_are_errors_not_tracebacks():
    at = app()
    at.file_uploader(key=state.W_DOC_UPLOADER).set_value([("empty.txt", b"", "text/plain")])
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value(("book.csv", b"PK\x03\x04\x00\x00binary", "text/csv"))
    at.run()
    assert not at.exception
    errors = " ".join(texts(at.error))
    assert "empty.txt is empty or contains only whitespace" in errors
    assert "not a text table" in errors


@pytest.mark.slow
def test_example_button_runs_a_full_analysis(cache_dir):
    at = app()
    at.button(key=state.W_EXAMPLE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Results"
    # The relative scores sit in the experts' expander, one sentence each ("weighted", always basic, left out).
    scores = {name: value for name, value, _ in engine.secondary_scores(at.session_state[state.TUNING].analysis[1])}
    assert all(0.0 < value < 1.0 for value in scores.values()) and "weighted" not in scores
    assert not [m for m in at.metric if m.label.startswith("Weighted")]
    caption = " ".join(texts(at.caption))
    assert "10 documents" in caption and "185 questions" in caption
    # Listed once, in the untested box below the headline, not again among the warnings.
    warnings = " ".join(texts(at.warning))
    assert "is untested" not in warnings and "Koala.txt" not in warnings
    assert any("Koala.txt is untested" in w for w in at.session_state[state.TUNING].analysis[1].warnings)
    # The page leads with the headline, and lists exactly the untested documents by name.
    assert "of the knowledge base is tested" in at.subheader[0].value
    assert "2 documents untested" in at.subheader[0].value
    listed = " ".join(texts(at.markdown) + texts(at.error))
    assert "Koala.txt" in listed and "Lobster.txt" in listed
    analysis = at.session_state[state.TUNING].analysis[1]
    assert set(analysis.documents.loc[analysis.documents["is_untested"], "document"]) == {"Koala.txt", "Lobster.txt"}
    assert analysis.calibration.method == "pseudo-queries"


# ---------------------------------------------------------------- configure


@pytest.mark.slow
def test_configure_shows_auto_k_and_runs_when_inputs_changed(seeded):
    values, reference, inputs = seeded
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(n_clusters=None)
    at = app("configure", values)
    n_chunks = len(inputs.corpus.chunks)
    assert f"Automatic picks {engine.default_k(n_chunks)} topics for {n_chunks:,} passages." in texts(at.caption)
    assert "up to date" in " ".join(texts(at.success))
    # A new chunk size makes the stored embedding stale: the page says so and offers the run.
    at.number_input(key=state.W_CHUNK_SIZE).set_value(800).run()
    assert at.session_state[state.SETTINGS].chunk_size == 800
    assert not at.button(key=state.W_RUN).disabled
    at.number_input(key=state.W_CHUNK_OVERLAP).set_value(900).run()
    assert "chunk_overlap must be smaller than chunk_size" in " ".join(texts(at.error))
    assert not at.exception


@pytest.mark.slow
def test_paid_provider_shows_tokens_and_cost_before_sending(seeded, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values, _, _ = seeded
    at = app("configure", values)
    at.selectbox(key=state.W_PROVIDER).select("openai").run()
    assert not at.exception
    assert at.session_state[state.SETTINGS].provider == "openai"
    assert at.text_input(key=state.W_EMBED_KEY).proto.type == at.text_input(key=state.W_EMBED_KEY).proto.PASSWORD
    cost = [m for m in at.metric if shown(m.label).startswith("Embedding with text-embedding-3-small")]
    assert cost and cost[0].value.startswith("~") and "tokens" in cost[0].value
    assert any("approximate" in c for c in texts(at.caption))
    prices = at.data_editor(key=state.W_PRICE_EDITOR) if hasattr(at, "data_editor") else None
    assert prices is None or "text-embedding-3-small" in list(prices.value["model"])
    run = at.button(key=state.W_RUN)
    assert run.disabled  # cost not accepted yet
    at.checkbox(key=state.W_COST_OK).check().run()
    at.button(key=state.W_RUN).click().run()
    assert not at.exception
    assert "No OpenAI API key" in " ".join(texts(at.error))
    # The typed key is kept for the session only and never shown again.
    at.text_input(key=state.W_EMBED_KEY).input("sk-test-secret").run()
    assert at.session_state[state.EMBED_API_KEY] == "sk-test-secret"
    on_page = " ".join(texts(at.markdown) + texts(at.success) + texts(at.caption) + texts(at.error))
    assert "sk-test-secret" not in on_page


# ---------------------------------------------------------------- results


@pytest.mark.slow
def test_results_show_the_metrics_with_help_and_tables(seeded):
    values, reference, _ = seeded
    at = app("results", values)
    expected = {
        "Basic": "basic", "Balanced": "balanced", "Nearby-topic score": "multi_threshold",
        "Nearest-topics score": "multi_n",
    }
    for label, name in expected.items():
        assert secondary_score(at, label) == f"{reference.metrics[name]:.3f}"
    assert "equals basic" not in " ".join(texts(at.markdown))
    clusters = [d for d in at.dataframe if "example passage" in d.value.columns][0].value.sort_values("cluster")
    assert len(clusters) == 4 and list(clusters["cluster"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(clusters["coverage"], reference.clusters["coverage"], atol=1e-9)
    assert "Koala.txt: no on-topic question targets its" in " ".join(texts(at.error))
    assert "Koala.txt" not in " ".join(texts(at.warning))  # not repeated among the warnings


@pytest.mark.slow
def test_results_topic_table_follows_the_chart_with_the_tested_share_early(seeded):
    import json

    from coverage_core.outputs import plots

    values, reference, _ = seeded
    at = app("results", values)
    table = [d for d in at.dataframe if "example passage" in d.value.columns][0]
    expected = plots.topics_by_urgency(reference.clusters, reference.config.gaps)
    assert table.value["cluster"].tolist() == expected["cluster"].tolist()  # gaps first, as the chart
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [line["x0"] for line in chart["layout"]["shapes"]] == [reference.config.gaps.tested_share_threshold]
    shown = list(table.proto.column_order)
    assert shown[:3] == ["topic", "tested_share", "is_gap"] and len(shown) <= 8
    # Visible without scrolling at 1280 px (wide layout, sidebar open: ~880 px of table): the columns up to
    # the tested share are well inside it (Streamlit widths: small 75, medium 200, large 400 px, or pixels).
    pixels = {"small": 75, "medium": 200, "large": 400}
    config = json.loads(table.proto.columns)
    lead = sum(pixels.get(config[name]["width"], config[name]["width"]) for name in shown[:2])
    assert lead <= 500


@pytest.mark.slow
def test_tuning_k_and_thresholds_recompute_without_reembedding(seeded):
    values, reference, inputs = seeded
    at = app("results", values)
    at.slider(key=state.W_K).set_value(3).run()
    assert not at.exception
    assert "in 3 topics" in " ".join(texts(at.caption))
    topics = lambda: [d for d in at.dataframe if "example passage" in d.value.columns][0].value  # noqa: E731
    assert len(topics()) == 3
    at.radio(key=state.W_GAP_RULE).set_value("coverage").run()
    at.slider(key=state.W_GAP_THRESHOLD).set_value(0.05).run()
    assert not topics()["is_gap"].any()
    at.toggle(key=state.W_AUTO_STRICTNESS).set_value(False).run()
    at.slider(key=state.W_STRICTNESS).set_value(0.0).run()
    assert at.session_state[state.SETTINGS].strictness == 0.0
    # Nothing was embedded again: the stored corpus is the very same object.
    assert at.session_state[state.CORPUS].value is inputs.corpus


@pytest.mark.slow
def test_override_recomputes_coverage_at_once(seeded):
    values, reference, inputs = seeded
    at = app("results", values)
    show_results_tab(at, "Off-topic questions")
    outlier_rows = [r for r, o in zip(inputs.questions.rows, reference.is_outlier) if o]
    assert outlier_rows, "the Zebra questions should be screened out"
    flagged = at.dataframe[0].value
    assert set(flagged["row"]) == set(outlier_rows)
    at.multiselect(key=state.W_FORCE_INCLUDE).set_value(outlier_rows).run()
    assert not at.exception
    expected = measure(
        reference.config, inputs.corpus, inputs.questions, inputs.question_embedding, reference.clustering,
        force_include=outlier_rows, screener=reference.screener,
    )
    assert secondary_score(at, "Basic") == f"{expected.metrics['basic']:.3f}"
    assert secondary_score(at, "Basic") != f"{reference.metrics['basic']:.3f}"


@pytest.mark.slow
def test_near_duplicates_and_map_tabs(seeded):
    values, reference, inputs = seeded
    at = app("results", values)
    show_results_tab(at, "Near-duplicates")
    assert not at.exception
    shown = " ".join(texts(at.success) + texts(at.markdown))
    groups = reference.duplicate_groups
    assert groups.n_groups > 0, "the example subset has reworded questions ('Are drums …' / 'Aren't drums …')"
    assert f"{groups.n_questions} questions form {formats.count(groups.n_groups, 'group')} of near-duplicates" in shown
    table = at.dataframe[0].value
    assert list(table.columns) == ["row", "question", "questions", "other rows", "lowest similarity"]
    assert table["row"].tolist() == [int(reference.questions.rows[head]) for head, _ in groups.groups]
    # Picking a group lists its questions, representative first.
    last_head, last_members = groups.groups[-1]
    at.selectbox[0].set_value(int(reference.questions.rows[last_head])).run()
    members = at.dataframe[1].value
    assert members["row"].tolist() == [reference.questions.rows[i] for i in last_members]
    at.session_state[state.W_RESULTS_TABS] = "Map"
    at.session_state[state.W_MAP_METHOD] = "pca"
    at.run()
    assert not at.exception
    assert "Map shows" in " ".join(texts(at.caption)) or at.get("plotly_chart")
    projection = at.session_state[state.PROJECTION]
    # Moving a threshold does not recompute the map.
    at.slider(key=state.W_TESTED_SHARE_CUT).set_value(0.3).run()
    assert at.session_state[state.PROJECTION] is projection


# ---------------------------------------------------------------- gaps


@pytest.mark.slow
def test_gap_page_lists_gaps_applies_accepted_suggestions_and_exports(seeded):
    values, reference, _ = seeded
    at = app("gaps", values)
    gap_rows = at.dataframe[0].value
    assert list(gap_rows.columns) == [
        "rank", "cluster", "topic", "tested share", "coverage", "size", "corpus share", "themes", "suggested questions"
    ]
    assert len(gap_rows) == int(reference.clusters["is_gap"].sum()) > 0
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    assert editor.editing_mode == "dynamic"
    suggestions = editor.value
    assert not suggestions["accept"].any() and len(suggestions) >= 1
    labels = [b.label for b in at.download_button]
    assert labels == [
        "Suggestions (CSV)", "Improved test set (CSV, +0 rows)", "Report (JSON)", "Report with charts (HTML)",
        "The whole analysis (zip)",
    ]

    # An offline draft accepted as it stands is not a question yet: it is left out, with a warning.
    draft_rows = suggestions.index[suggestions["question"].map(is_unfinished_draft)]
    if len(draft_rows):
        at.session_state[state.W_SUGGESTIONS_EDITOR] = {
            "edited_rows": {int(draft_rows[0]): {"accept": True}}, "added_rows": [], "deleted_rows": [],
        }
        at.run()
        assert "0 accepted questions." in texts(at.caption)
        assert any("Write a question answered by" in w for w in texts(at.warning))
    worded = "Can a koala be kept as a pet in Australia?"
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {0: {"accept": True, "question": worded}},
        "added_rows": [{"accept": True, "question": "=HYPERLINK(\"http://x\")"}],
        "deleted_rows": [],
    }
    at.run()
    assert "2 accepted questions." in texts(at.caption)
    at.button(key=state.W_APPLY).click().run()
    assert not at.exception, [e.value for e in at.exception]
    improvement = at.session_state[state.IMPROVED].value
    assert improvement.texts == (worded, '=HYPERLINK("http://x")')
    after = metric(at, "Basic")
    assert after == f"{improvement.after.metrics['basic']:.3f}"
    assert improvement.after.metrics["basic"] > reference.metrics["basic"]
    assert [b.label for b in at.download_button][1] == "Improved test set (CSV, +2 rows)"

    # The export is the user's own table with the new rows appended and formulas neutralised.
    exported = exports.improved_csv(values[state.QUESTIONS], improvement.texts).decode("utf-8-sig")
    frame = pd.read_csv(pd.io.common.StringIO(exported), dtype=str, keep_default_na=False)
    original = values[state.QUESTIONS].frame
    assert list(frame.columns) == list(original.columns) + ["suggested"]
    assert len(frame) == len(original) + 2
    assert frame["question"].iloc[-1] == "'=HYPERLINK(\"http://x\")"
    assert list(frame["suggested"].iloc[-2:]) == ["yes", "yes"]

    # Edits survive a visit to another page.
    at.switch_page(PAGES["results"]).run()
    at.switch_page(PAGES["gaps"]).run()
    assert not at.exception
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    kept = gaps_view.normalize_suggestions(editor.value)
    assert kept["accept"].sum() == 2 and '=HYPERLINK("http://x")' in list(kept["question"])


@pytest.mark.slow
def test_gap_page_with_a_failing_llm_shows_an_error(seeded, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values, _, _ = seeded
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(llm_enabled=True)
    at = app("gaps", values)
    assert any("Ask gpt-4o-mini for suggestions" in m for m in texts(at.markdown))
    at.button(key=state.W_LLM_GAPS).click().run()
    assert not at.exception
    assert "No OpenAI API key" in " ".join(texts(at.error))
    assert len(at.dataframe[0].value) > 0  # offline drafts still shown


# ---------------------------------------------------------------- fitness


@pytest.mark.slow
def test_fitness_page_ranks_questions_and_marks_unsupported_ones(seeded):
    values, reference, _ = seeded
    at = app("fitness", values)
    table = at.dataframe[0].value
    assert list(table["best similarity"]) == sorted(table["best similarity"], reverse=True)
    assert {"nearest document", "nearest passage", "verdict"} <= set(table.columns)
    at.slider(key=state.W_FITNESS_THRESHOLD).set_value(0.5).run()
    weak = int((reference.question_table["max_similarity"] < 0.5).sum())
    assert metric(at, "May not be answerable") == f"{weak:,}"
    table = at.dataframe[0].value
    assert (table["verdict"] == "the knowledge base may not answer this").sum() == weak
    # The two counts of unanswerable questions differ on the example, and the page says by how much and why.
    below = reference.question_table["max_similarity"].to_numpy() < 0.5
    flagged = np.asarray(reference.is_outlier, dtype=bool)
    assert (below != flagged).any()
    caption = next(c for c in texts(at.caption) if c.startswith("Results counts"))
    assert caption.startswith(f"Results counts {int(flagged.sum())} questions off-topic, not {weak}: ")
    kept, added = int((below & ~flagged).sum()), int((flagged & ~below).sum())
    assert (f"{kept} question{'s' * (kept != 1)} below this threshold" in caption) == bool(kept)
    assert (f"{added} question{'s' * (added != 1)} above it" in caption) == bool(added)
    # Ranked and polar views, and the box plot of the example's answerability labels.
    assert len(at.get("plotly_chart")) == 3


# ---------------------------------------------------------------- compare


@pytest.mark.slow
def test_compare_page_scores_a_second_set_on_the_same_clusters(seeded):
    values, reference, _ = seeded
    at = app("compare", values)
    assert "Upload a second question file" in " ".join(texts(at.info))
    csv = b"question\nWhat is a koala?\nWhere do koalas live?\nWhat do koalas eat?\n"
    at.file_uploader(key=state.W_COMPARE_UPLOADER).set_value(("koala.csv", csv, "text/csv"))
    at.run()
    at.button(key=state.W_COMPARE_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    comparison = at.session_state[state.COMPARISON].value
    assert comparison.b.clustering is comparison.a.clustering
    deltas = next(frame.value for frame in at.dataframe if "cluster" in frame.value.columns)
    assert len(deltas) == 4 and {"subset.csv", "koala.csv", "change"} <= set(deltas.columns)
    koala = {int(c) for c in reference.clusters.sort_values("coverage")["cluster"][:1]}
    assert deltas.set_index("cluster").loc[list(koala), "change"].iloc[0] > 0
    assert metric(at, "Basic") == f"{comparison.b.metrics['basic']:.3f}"


@pytest.mark.slow
def test_compare_with_accepted_suggestions(seeded):
    values, _, _ = seeded
    values = dict(values)
    values[state.SUGGESTIONS_EDITED] = gaps_view.normalize_suggestions(
        pd.DataFrame({"accept": [True], "question": ["How do koalas sleep?"]})
    )
    at = app("compare", values)
    at.radio(key=state.W_COMPARE_SOURCE).set_value("accepted").run()
    assert "1 accepted suggestion added" in " ".join(texts(at.caption))
    at.button(key=state.W_COMPARE_RUN).click().run()
    assert not at.exception
    comparison = at.session_state[state.COMPARISON].value
    assert len(comparison.b.questions.questions) == len(comparison.a.questions.questions) + 1


# ---------------------------------------------------------------- engine helpers (no Streamlit)


def test_suggestion_merging_keeps_the_users_work():
    previous = gaps_view.normalize_suggestions(
        pd.DataFrame(
            {
                "accept": [True, False, None],
                "question": ["kept draft", "dropped draft", "my own question"],
                "cluster": [1, 2, None],
                "origin": ["draft", "draft", None],
            }
        )
    )
    assert list(previous["origin"]) == ["draft", "draft", gaps_view.USER_ORIGIN]
    fresh = gaps_view.normalize_suggestions(
        pd.DataFrame({"accept": [False, False], "question": ["new draft", "kept draft"], "cluster": [3, 1], "origin": ["draft", "draft"]})
    )
    merged = gaps_view.merge_suggestions(previous, fresh)
    assert list(merged["question"]) == ["kept draft", "my own question", "new draft"]
    assert list(merged["accept"]) == [True, False, False]
    assert gaps_view.accepted_texts(merged) == ["kept draft"]
    assert gaps_view.accepted_texts(
        pd.DataFrame({"accept": [True, True, True], "question": ["  a  b ", "a b", ""]})
    ) == ["a b"]


def _first_elements(at, n: int = 3) -> list:
    """The first ``n`` elements of the page's main area, in order."""
    return [at.main.children[i] for i in sorted(at.main.children)[:n]]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["results", "gaps"])
def test_results_and_gap_pages_lead_with_the_headline(seeded, page):
    from coverage_core.verdicts import headline

    values, reference, _ = seeded
    at = app(page, values)
    title, *rest = _first_elements(at, 5)
    assert title.type == "title"
    if not reference.calibration.reliable:  # the warning comes before the headline
        warning, *rest = rest
        assert warning.type == "warning" and "The support level is not calibrated" in warning.value
    first, second = rest[:2]
    # The headline is the figures' one sentence; what tested means follows in a caption.
    assert first.type == "subheader" and first.value == Verdicts.from_analysis(reference).figures
    assert first.value in headline(reference)
    assert "of the knowledge base is tested" in first.value and "1 document untested" in first.value
    ceiling = Verdicts.from_analysis(reference).ceiling
    if ceiling:  # too few questions to reach every passage: the most they can test, under the share it caps
        assert second.type == "caption" and second.value == ceiling and ceiling in headline(reference)
        second = rest[2]
    tau = reference.calibration.support_threshold
    assert second.type == "caption"
    if reference.calibration.reliable:
        assert shown(second.value) == (f"A passage counts as tested when a question retrieves it among its top "
                                       f"{reference.config.tested_k} passages with similarity of at least {tau:.2f} "
                                       "(calibrated for this model and these documents).")
    else:
        assert "Off-topic questions are still judged by similarity" in shown(second.value)
    untested = reference.documents.loc[reference.documents["is_untested"], "document"]
    assert list(untested) == ["Koala.txt"]
    if page == "results":
        listed = " ".join(texts(at.markdown) + texts(at.error) + texts(at.warning))
        assert "Koala.txt: no on-topic question targets its" in listed and "Top gaps: topics and untested documents" in listed
        # Topic names are user-derived text, escaped (widgets.plain); texts() reads them as the page shows them.
        gap_labels = reference.clusters.loc[reference.clusters["is_gap"], "label"]
        assert any(f"{label}: " in listed for label in gap_labels)
        assert [link.label for link in at.get("page_link")][0].startswith("Suggest questions")


@pytest.mark.slow
def test_a_support_level_override_changes_the_headline(seeded):
    values, reference, _ = seeded
    at = app("results", values)  # calibrates the support level once
    at.switch_page(PAGES["configure"]).run()
    assert at.toggle(key=state.W_AUTO_SUPPORT).value is True
    tau = reference.calibration.support_threshold
    assert f"Calibrated level for this model and these documents: {tau:.2f}." in texts(at.caption)
    at.toggle(key=state.W_AUTO_SUPPORT).set_value(False).run()
    at.slider(key=state.W_SUPPORT).set_value(0.95).run()
    assert at.session_state[state.SETTINGS].support_threshold == 0.95
    at.switch_page(PAGES["results"]).run()
    assert not at.exception
    assert at.subheader[0].value != reference_headline(reference)
    assert at.subheader[0].value.startswith("0% of the knowledge base is tested")
    assert "at least 0.95 (the level you set on Configure)." in " ".join(texts(at.caption))
    # Back to automatic: the calibrated level, computed once, is reused.
    at.switch_page(PAGES["configure"]).run()
    at.toggle(key=state.W_AUTO_SUPPORT).set_value(True).run()
    at.switch_page(PAGES["results"]).run()
    assert at.subheader[0].value == reference_headline(reference)


def reference_headline(analysis) -> str:
    """The headline a page shows: the figures' sentence (the cautions and what tested means follow it)."""
    return Verdicts.from_analysis(analysis).figures


@pytest.mark.slow
def test_gap_threshold_change_relabels_without_recomputing(seeded):
    values, reference, inputs = seeded
    cache = AnalysisSession()
    settings = values[state.SETTINGS].replace(gap_rule="coverage")
    first = engine.tune(inputs, settings, state.Overrides(), cache)
    moved = engine.tune(inputs, settings.replace(gap_threshold=0.2), state.Overrides(), cache)
    assert moved.min_distances is first.min_distances  # nothing recomputed
    assert list(moved.clusters["is_gap"]) == list(first.clusters["coverage"] < 0.2)
    assert moved.config.gaps.gap_threshold == 0.2
    again = engine.tune(inputs, settings.replace(gap_threshold=0.2, strictness=0.9), state.Overrides(), cache)
    assert again.is_outlier.sum() >= first.is_outlier.sum()  # stricter screening, same screener
    # One clustering for the chosen K, and the automatic topics the screener and τ are judged against.
    n_clusterings = 1 if settings.n_clusters is None else 2
    assert len(cache.screeners) == 1 and len(cache.clusterings) == n_clusterings and len(cache.calibrations) == 1
    # The tested-share rule relabels from the tested share, still without recomputing.
    shared = engine.tune(
        inputs, settings.replace(gap_threshold=0.2, strictness=0.9, gap_rule="tested_share", tested_share_cut=0.9),
        state.Overrides(), cache,
    )
    assert shared.min_distances is again.min_distances
    assert list(shared.clusters["is_gap"]) == list(again.clusters["tested_share"] < 0.9)
    # Default strictness after an explicit one means the screener's default again.
    back = engine.tune(inputs, settings, state.Overrides(), cache)
    np.testing.assert_array_equal(back.is_outlier, first.is_outlier)


@pytest.mark.slow
def test_tuning_reuses_the_index_and_screener_and_matches_a_fresh_analysis(seeded):
    values, reference, inputs = seeded
    cache = AnalysisSession()
    settings = values[state.SETTINGS]
    overrides = state.Overrides(exclude=frozenset({int(inputs.questions.rows[0])}))
    first = engine.tune(inputs, settings, state.Overrides(), cache)
    index = cache.indexes.get(inputs.key)
    changed = settings.replace(n_clusters=3, multi_threshold=0.4, strictness=0.8)
    tuned = engine.tune(inputs, changed, overrides, cache)
    assert cache.indexes.get(inputs.key) is index and len(cache.indexes) == 1
    # A new K keeps the screener: it judges against the automatic topics.
    assert len(cache.screeners) == 1 and tuned.screener is first.screener
    automatic = cache.clustering(inputs, None, settings.seed)
    assert tuned.clustering.n_clusters == 3 and automatic.n_clusters != 3
    np.testing.assert_array_equal(tuned.screening_topics, automatic.labels)
    np.testing.assert_array_equal(first.screening_topics, automatic.labels)
    # A new seed refits it, reusing the lexical evidence (it depends on the texts only).
    reseeded = engine.tune(inputs, changed.replace(seed=1), overrides, cache)
    assert len(cache.screeners) == 2 and reseeded.screener is not first.screener
    assert reseeded.screener.absent_words_ is first.screener.absent_words_
    # The same figures as computing everything from scratch.
    fresh = engine.tune(inputs, changed, overrides, AnalysisSession())
    np.testing.assert_allclose(tuned.min_distances, fresh.min_distances, atol=1e-6)
    np.testing.assert_array_equal(tuned.is_outlier, fresh.is_outlier)
    assert tuned.metrics == pytest.approx(fresh.metrics, abs=1e-6)
    plain = measure(
        engine.analysis_config(changed, inputs.embedding, inputs.chunking),
        inputs.corpus,
        inputs.questions,
        inputs.question_embedding,
        tuned.clustering,
        force_exclude=sorted(overrides.exclude),
        calibration=tuned.calibration,
        topics=automatic.labels,
    )
    assert tuned.metrics == pytest.approx(plain.metrics, abs=1e-6)
    np.testing.assert_array_equal(tuned.is_outlier, plain.is_outlier)
    np.testing.assert_array_equal(tuned.screener.outlier_score_, plain.screener.outlier_score_)


@pytest.mark.slow
def test_the_json_export_carries_the_checks_the_columns_allow(seeded):
    import json

    values, reference, _ = seeded
    settings = values[state.SETTINGS]
    found = exports.checks(reference, settings)
    assert found.retrieval_error is None and found.answerability_error is None
    report = json.loads(exports.report_json(reference, {"questions": "subset.csv"}, found))
    assert report["retrieval"]["relevant_column"] == "source" and report["retrieval"]["k"] == settings.retrieval_k
    assert report["answerability"]["label_column"] == "answerable"
    labelled = {q["row"]: q["label"] for q in report["questions"]}
    articles = reference.questions.frame["article"]
    assert {row for row, label in labelled.items() if label == 0} == set(articles.index[articles == "Zebra"])
    # A column the user named that cannot be used leaves that check out, and only that one.
    broken = exports.checks(reference, settings.replace(relevant_column="gold_source"))
    assert broken.retrieval is None and "gold_source" in broken.retrieval_error
    assert broken.answerability is not None
    report = json.loads(exports.report_json(reference, None, broken))
    assert "retrieval" not in report and "answerability" in report


# ---------------------------------------------------------------- support level: cost and before/after


def _paid_values(values: dict, **changes) -> dict:
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(
        provider="openai", model="text-embedding-3-small", **changes
    )
    return values


@pytest.mark.slow
def test_paid_cost_estimate_includes_the_support_level_calibration(seeded, monkeypatch):
    from coverage_core import costs
    from coverage_core.stages.calibration import calibration_texts

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values, _, inputs = seeded
    at = app("configure", _paid_values(values))
    assert not at.exception, [e.value for e in at.exception]
    # No key yet, so nothing counts as cached: every distinct text would be sent. The chunks are
    # text-embedding-3-small's: its 8,191 tokens split none of them again (the local model's 256 do).
    chunks = embedding_steps.chunk_corpus(inputs.corpus.documents, inputs.chunking)
    probes = list(dict.fromkeys(calibration_texts(chunks, 0)))
    assert 0 < len(probes) <= costs.MAX_CALIBRATION_TEXTS
    lines = texts(at.text)
    assert any(line.startswith(f"Support-level calibration: about {len(probes):,} texts, ~") for line in lines), lines
    main = list(dict.fromkeys([c.text for c in chunks] + list(inputs.questions.texts)))
    assert any(line.startswith(f"Passages and questions: about {len(main):,} texts") for line in lines)
    total = costs.estimate_embedding_cost(
        costs.approximate_tokens(main) + costs.approximate_tokens(probes), "openai", "text-embedding-3-small",
        costs.default_price_table(),
    )
    assert metric(at, "Embedding with text-embedding-3-small") == total.label.split(" (")[0]
    assert costs.CALIBRATION_NOTE in texts(at.caption)
    shown = " ".join(lines + texts(at.caption) + texts(at.markdown))
    assert "support_threshold" not in shown and "--" not in shown  # plain words, no field names or flags


@pytest.mark.slow
def test_paid_cost_estimate_leaves_out_a_calibration_that_will_not_run(seeded, monkeypatch):
    from coverage_core import costs
    from coverage_core.stages import calibration

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values, _, inputs = seeded
    chunks = embedding_steps.chunk_corpus(inputs.corpus.documents, inputs.chunking)  # text-embedding-3-small's
    main = list(dict.fromkeys([c.text for c in chunks] + list(inputs.questions.texts)))
    alone = costs.estimate_embedding_cost(
        costs.approximate_tokens(main), "openai", "text-embedding-3-small", costs.default_price_table()
    )
    # The user set the support level: nothing is calibrated.
    at = app("configure", _paid_values(values, support_threshold=0.4))
    assert not at.exception
    assert not any("calibration" in line for line in texts(at.text))
    assert metric(at, "Embedding with text-embedding-3-small") == alone.label.split(" (")[0]
    # The level is already known for these documents, this chunking, model and seed.
    paid = _paid_values(values)
    cache = AnalysisSession()
    corpus_key = engine.corpus_key(paid[state.DOCUMENTS].fingerprint, paid[state.SETTINGS])
    config = engine.analysis_config(paid[state.SETTINGS])
    cache.calibrations.put(calibration_key(corpus_key, config), calibration.default())
    assert not engine.calibration_pending(corpus_key, paid[state.SETTINGS], cache)
    paid[state.TUNING] = cache
    at = app("configure", paid)
    assert not at.exception
    assert not any("calibration" in line for line in texts(at.text))
    assert metric(at, "Embedding with text-embedding-3-small") == alone.label.split(" (")[0]


def test_counts_agree_with_their_nouns():
    assert formats.count(1, "question") == "1 question"
    assert formats.count(2, "question") == "2 questions"
    assert formats.count(0, "column") == "0 columns"
    assert formats.count(1_200, "passage") == "1,200 passages"
    assert formats.count(1, "query", "queries") == "1 query"
    assert formats.count(3, "query", "queries") == "3 queries"
    assert formats.plural(1, "document") == "document" and formats.plural(5, "document") == "documents"


def test_dashboard_names_jargon_scores_plainly_first():
    for name in ("multi_threshold", "multi_n", "weighted"):
        label = formats.metric_label(name)
        assert "multi" not in label.lower() and "=" not in label, label  # no method jargon
        assert len(label) <= 40  # a card label and a table header at 1280 px
    assert formats.metric_label("tested_share") == "Tested share"


def test_tested_share_change_is_rounded_before_it_is_signed():
    # The share in whole percent, as everywhere; its change in percentage points to one decimal.
    assert formats.share_change(0.423, 0.451) == ("45%", "+2.8 pts")
    assert formats.share_change(0.6, 0.55) == ("55%", "-5.0 pts")
    # Changes too small to show are "no change", never "-0.0 pts" or "+0.0 pts".
    assert formats.share_change(0.50004, 0.49998) == ("50%", formats.NO_CHANGE)
    assert formats.share_change(0.3, 0.3) == ("30%", formats.NO_CHANGE)
    # The change is between the shares rounded to a tenth of a point: 42.3% -> 42.4% reads +0.1.
    assert formats.share_change(0.42349, 0.42351) == ("42%", "+0.1 pts")


@pytest.mark.slow
def test_apply_shows_the_tested_share_first_with_its_change_in_points(seeded):
    values, reference, _ = seeded
    at = app("gaps", values)
    worded = "Where do koalas live, and what do they eat?"
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {}, "added_rows": [{"accept": True, "question": worded}], "deleted_rows": [],
    }
    at.run()
    at.button(key=state.W_APPLY).click().run()
    assert not at.exception, [e.value for e in at.exception]
    improvement = at.session_state[state.IMPROVED].value
    before, after = improvement.before.metrics["tested_share"], improvement.after.metrics["tested_share"]
    assert after > before  # a question about the untested Koala article
    first = at.metric[0]
    assert first.label == "Tested share"
    assert (first.value, first.delta) == formats.share_change(before, after)
    assert first.value.endswith("%") and first.delta.startswith("+") and first.delta.endswith(" pts")
    assert [m.label for m in at.metric][1:] == [  # in the experts' expander
        "Basic", "Balanced", "Nearby-topic score", "Nearest-topics score"
    ]

    # A question the test set already has changes nothing: "no change", not "-0.0".
    inlier = reference.question_table.loc[~reference.question_table["is_outlier"], "text"].iloc[0]
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {}, "added_rows": [{"accept": True, "question": inlier}], "deleted_rows": [],
    }
    at.run()
    at.button(key=state.W_APPLY).click().run()
    assert not at.exception
    improvement = at.session_state[state.IMPROVED].value
    assert improvement.after.metrics["tested_share"] == pytest.approx(improvement.before.metrics["tested_share"])
    first = at.metric[0]
    assert first.label == "Tested share" and first.delta == formats.NO_CHANGE
    assert first.proto.color == first.proto.GRAY and first.proto.direction == first.proto.NONE  # no green arrow


@pytest.mark.slow
def test_exports_after_apply_carry_before_after_and_the_accepted_questions(seeded, monkeypatch):
    import json

    from streamlit.delta_generator import DeltaGenerator

    served = {}  # label → data of each download button the Gap page draws in its columns
    real = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        served[label] = data
        return real(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    values, reference, _ = seeded
    at = app("gaps", values)
    worded = "Where do koalas live and what do they eat?"
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {}, "added_rows": [{"accept": True, "question": f"  {worded} "}], "deleted_rows": [],
    }
    at.run()
    at.button(key=state.W_APPLY).click().run()
    assert not at.exception, [e.value for e in at.exception]
    improvement = at.session_state[state.IMPROVED].value
    assert [row["question"] for row in improvement.accepted_rows] == [worded]
    assert improvement.accepted_rows[0]["origin"] == gaps_view.USER_ORIGIN

    report = json.loads(served["Report (JSON)"])
    after_apply = report["after_apply"]
    assert after_apply["before"]["tested_share"] == pytest.approx(improvement.before.metrics["tested_share"], abs=1e-6)
    assert after_apply["after"]["tested_share"] == pytest.approx(improvement.after.metrics["tested_share"], abs=1e-6)
    assert after_apply["after"]["tested_share"] > after_apply["before"]["tested_share"]
    assert [q["text"] for q in after_apply["accepted_questions"]] == [worded]
    assert after_apply["accepted_questions"][0]["origin"] == gaps_view.USER_ORIGIN
    assert report["retrieval"]["relevant_column"] == "source"

    build = served["Report with charts (HTML)"]
    assert callable(build), "the HTML report is built only when the button is clicked"
    html = build().decode("utf-8")
    assert worded in html
    assert "<h2>Retrieval</h2>" in html  # the example's source column was used

    # The whole analysis: a saved-analysis zip that opens again as the same analysis, with this report.
    from coverage_core.saved.analysis import load_analysis

    build = served["The whole analysis (zip)"]
    assert callable(build), "the zip is built only when the button is clicked"
    saved = load_analysis(build(), "coverage-analysis.zip")
    assert saved.report == report and saved.manifest["question_file"]["name"] == values[state.QUESTION_FILE].name
    assert saved.clustering.labels.tolist() == reference.clustering.labels.tolist()
    assert saved.topics.tolist() == reference.screening_topics.tolist()
    reopened = saved.analysis()
    assert reopened.metrics == pytest.approx(reference.metrics, abs=1e-6)
    assert reopened.is_outlier.tolist() == reference.is_outlier.tolist()

    # An Apply result made from other settings is not reported as this analysis's.
    values = dict(values)
    values[state.IMPROVED] = at.session_state[state.IMPROVED]
    values[state.SETTINGS] = values[state.SETTINGS].replace(n_clusters=3)
    served.clear()
    at = app("gaps", values)
    assert "after_apply" not in json.loads(served["Report (JSON)"])
    assert worded not in served["Report with charts (HTML)"]().decode("utf-8")


# ---------------------------------------------------------------- reads at a glance


def _all_text(at) -> list[str]:
    """Every text a user can read on the page (values, labels, captions, table headers)."""
    found = []
    for node in at.main:
        for attribute in ("value", "label", "body"):
            value = getattr(node, attribute, None) if attribute != "value" or node.type != "dataframe" else None
            if isinstance(value, str):
                found.append(value)
    return found


@pytest.mark.slow
def test_results_page_leads_with_the_verdict_and_gap_links(seeded):
    values, reference, _ = seeded
    at = app("results", values)
    order = [n.type for n in at.main if n.type in ("subheader", "expandable", "expander", "page_link", "metric", "tabs", "tab")]
    assert order[0] == "subheader"  # the tested-share sentence first
    verdict = Verdicts.from_analysis(reference)
    links = [n for n in at.main if n.type == "page_link"]
    assert len(links) == len(verdict.gaps) and all("Gap analysis" in link.proto.label for link in links)
    assert all(widgets.plain(gap.topic) in " ".join(link.proto.label for link in links) for gap in verdict.gaps)
    # each link opens the Gap analysis at its own gap
    assert [link.proto.query_string for link in links] == [f"{state.GAP_PARAM}={gap.cluster}" for gap in verdict.gaps]
    # the links come before the secondary scores, which are in an expander with one sentence each
    first_expander = min(order.index(t) for t in ("expandable", "expander") if t in order)
    assert order.index("page_link") < first_expander
    assert not any(m.label.startswith("Weighted") for m in at.metric)
    experts = [e for e in at.expander if shown(e.label).startswith(engine.EXPERTS)]
    assert len(experts) == 1  # one expander for method experts, after the tuning
    scores = " ".join(texts(experts[0].markdown))
    assert "Basic" in scores and "Balanced" in scores and "equals basic" not in scores


@pytest.mark.slow
def test_verdict_lists_untested_documents(seeded):
    _, reference, _ = seeded
    verdict = Verdicts.from_analysis(reference)
    untested = set(reference.documents.loc[reference.documents["is_untested"], "document"])
    assert {u.document for u in verdict.untested} == untested


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_no_page_shows_command_line_flags_or_field_names(seeded, page):
    values, _, _ = seeded
    at = app(page, values)
    shown = " ".join(_all_text(at))
    assert not re.search(r"(?<![\w-])--[a-z]", shown), shown
    for internal in ("usd_per_1m", "multi_threshold", "n_neighbors", "LOF uses"):
        assert internal not in shown


def test_price_table_headers_are_words():
    from coverage_core.costs import PRICE_COLUMNS
    from ui import widgets

    assert set(PRICE_COLUMNS) <= set(widgets.PRICE_COLUMNS)
    assert all("_" not in str(config["label"]) for config in widgets.PRICE_COLUMNS.values())


def test_core_messages_are_translated():
    from ui.messages import user_message

    lof = user_message("n_neighbors=20 is not below the number of questions (8); LOF uses 7 neighbours.")
    assert "n_neighbors" not in lof and "LOF" not in lof and "8 questions" in lof
    column = user_message("No question column found in a.csv; name the column, for example with --question-column.")
    assert "--" not in column and "preview" in column
    llm = user_message("a local Ollama (on the Configure page, or with --llm-model / --llm-base-url).")
    assert llm == "a local Ollama on the Configure page."
    assert "--" not in user_message("set --some-new-flag please")


def test_upload_preview_comes_before_the_column_picker_and_text_files_have_blank_pages():
    at = app()
    at.file_uploader(key=state.W_DOC_UPLOADER).set_value([("Drum.txt", (EXAMPLE / "docs" / "Drum.txt").read_bytes(), "text/plain")])
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value(("mine.csv", b"text;notes\nWhat is a drum?;x\n", "text/csv"))
    at.run()
    assert not at.exception
    kinds = [n.type for n in at.main if n.type in ("dataframe", "selectbox")]
    picker = kinds.index("selectbox")
    assert kinds[:picker].count("dataframe") == 2  # documents, then the question file's preview
    assert list(at.dataframe[0].value["pages"]) == [""]
    # The sidebar names the inputs in the same run that loaded them.
    sidebar = " ".join(texts(at.sidebar.caption))
    assert "Documents: 1 readable" in sidebar and "none yet" not in sidebar.split("Questions")[0]


def test_changes_are_rounded_before_they_are_signed():
    from ui import formats

    assert formats.change(0.4321, 0.43209) == formats.NO_CHANGE
    assert formats.change(0.5, 0.4994) == "-0.001"
    assert formats.share_change(0.45, 0.44999) == ("45%", formats.NO_CHANGE)  # shares in whole percent, as the tables show them
    deltas = compare_view.metric_deltas({"basic": 0.4321}, {"basic": 0.43209})
    assert not np.signbit(deltas["change"]).any()
    assert list(deltas["metric"]) == ["Basic"]  # plain names, not field names


def test_thresholds_have_one_format():
    from ui import formats

    assert formats.similarity(0.395) == "0.40" == formats.similarity(0.4)
    assert formats.SIMILARITY_FORMAT == "%.2f"


def test_progress_text_has_rate_and_time_left():
    text = engine.progress_text("chunks", 120, 480, 4.0)
    assert text == "Embedding passages: 120 of 480 (30 per second, about 12 s left)"
    assert engine.progress_text("questions", 0, 10, 0.0) == "Embedding questions: 0 of 10"
    # The calibration's sample sentences are counted too: minutes with a slow model on a few PDFs.
    text = engine.progress_text("calibration", 200, 800, 20.0)
    assert text == "Calibrating the support level: 200 of 800 (10 per second, about 60 s left)"
    assert engine.progress_text("clustering", 0, 1, 3.0) == "Clustering the passages into topics…"


@pytest.mark.slow
def test_off_topic_decision_does_not_depend_on_k(seeded):
    values, _, inputs = seeded
    cache = AnalysisSession()
    settings = values[state.SETTINGS]
    three = engine.tune(inputs, settings.replace(n_clusters=3), state.Overrides(), cache)
    five = engine.tune(inputs, settings.replace(n_clusters=5), state.Overrides(), cache)
    np.testing.assert_array_equal(three.is_outlier, five.is_outlier)


def test_memo_takes_named_frozen_keys_only():
    from coverage_core.session import Recent, memo

    slot = Recent(keep=2)
    calls = []
    key = StageKey.of("docs", chunking=None)
    assert memo(slot, key, lambda: calls.append(1) or 7) == 7
    assert memo(slot, key, lambda: calls.append(1) or 8) == 7 and calls == [1]
    with pytest.raises(TypeError):
        memo(slot, ("docs", None), lambda: 1)


def test_settings_defaults_come_from_the_core():
    import dataclasses

    from coverage_core.config import AnalysisConfig, EmbeddingConfig
    from coverage_core.suggest.llm import DEFAULT_LLM_MODEL

    # The automatic model choice is the English default until texts are loaded (ui.flow.language_profile).
    assert state.Settings().analysis_config() == dataclasses.replace(AnalysisConfig(), embedding=EmbeddingConfig("local"))
    assert state.Settings().provider == AnalysisConfig().embedding.provider == "auto"
    assert state.Settings().llm_model == DEFAULT_LLM_MODEL
    assert "streamlit" not in open(PROJECT_UI / "settings.py").read()
    assert engine.priority_formula(AnalysisConfig().gaps) == "0.7 × (1 − coverage) + 0.3 × corpus share"


# ---------------------------------------------------------------- an unreliable support level (synthetic analysis, no model)


def _results_of(analysis, monkeypatch, tab: str | None = None) -> AppTest:
    """The Results page showing ``analysis`` (the synthetic one of conftest.py), optionally on ``tab``."""
    from ui import flow

    monkeypatch.setattr(flow, "require_analysis", lambda: analysis)
    return app("results", {state.W_RESULTS_TABS: tab} if tab else None)


def test_results_with_an_unreliable_level_warn_first_and_show_no_tick(analysis, monkeypatch):
    import dataclasses

    assert not analysis.calibration.reliable  # the synthetic analysis is not calibrated
    thin = analysis.documents.copy()
    beta = thin["document"] == "beta.txt"
    thin.loc[beta, ["is_undertested", "n_questions", "tested_share"]] = [True, 2, 0.12]
    at = _results_of(dataclasses.replace(analysis, documents=thin, clusters=analysis.clusters.assign(is_gap=False)),
                     monkeypatch)
    first = next(node for node in at.main if node.type not in ("main", "title"))
    assert first.type == "warning"  # before the headline, the one place that says it
    assert "The support level is not calibrated" in first.value and "default level 0\\.50" in first.value
    assert at.subheader[0].value.endswith("off-topic.")  # the figures only
    # What tested means without a calibrated level follows; the level is left to off-topic questions.
    meaning = " ".join(texts(at.caption))
    assert "similarity is not used: a passage counts as tested" in meaning and "whatever the similarity" in meaning
    assert "Off-topic questions are still judged by similarity" in meaning
    assert not at.success  # no tick anywhere
    infos = " ".join(texts(at.info))
    assert "No topic is a gap. This may be wrong" in infos
    untested, undertested = at.error[0].value, at.warning[1].value
    assert untested == "- \\<b\\>gamma\\</b\\>\\.md: no on-topic question targets its 20 passages"  # escaped
    assert undertested == "- beta\\.txt: tested, but thinly: 12% of 20 passages, by 2 questions"
    listed = texts(at.markdown)
    assert listed.index(next(t for t in listed if t.startswith("**Untested"))) < listed.index(
        next(t for t in listed if t.startswith("**Under-tested")))


def test_results_with_a_calibrated_level_tick_what_passed(analysis, monkeypatch):
    import dataclasses

    from coverage_core.stages.calibration import Calibration

    untested = analysis.documents.assign(is_untested=False, n_questions=3)
    calibrated = dataclasses.replace(analysis, calibration=Calibration(0.5, "pseudo-queries", n_probes=100),
                                     documents=untested)
    at = _results_of(calibrated, monkeypatch)
    assert not at.warning or "not calibrated" not in " ".join(texts(at.warning))
    assert "Every document has questions that test it." in texts(at.success)


def test_results_for_questions_in_another_language_than_the_documents_show_no_tick(analysis, monkeypatch):
    import dataclasses

    from coverage_core.config import EmbeddingConfig
    from coverage_core.languages import LanguageProfile, LanguageShare
    from coverage_core.stages.calibration import Calibration

    crossed = dataclasses.replace(
        analysis, calibration=Calibration(0.5, "pseudo-queries", n_probes=100),
        config=dataclasses.replace(analysis.config, embedding=EmbeddingConfig("e5")),
        documents=analysis.documents.assign(is_untested=False, n_questions=3),
        languages=LanguageProfile(document_shares=(LanguageShare("de", "German", 1.0, 3),),
                                  question_shares=(LanguageShare("en", "English", 1.0, 5),)))
    at = _results_of(crossed, monkeypatch)
    assert at.subheader[0].value.endswith("off-topic.")  # the figures; the caution follows under them
    assert texts(at.info)[0].startswith("- The questions are in English and the documents in German")
    assert not at.success  # no tick anywhere
    assert "Every document has questions that test it. This may be wrong: the questions are in another language " \
        "than the documents" in " ".join(texts(at.info))


def test_documents_and_off_topic_tabs_show_the_verdict_and_the_reason(analysis, monkeypatch):
    at = _results_of(analysis, monkeypatch, "Documents")
    documents = at.dataframe[0].value
    assert list(documents.columns[:3]) == ["document", "verdict", "n_questions"]
    assert documents["verdict"].iloc[0] == "untested" and documents["document"].iloc[0] == "<b>gamma</b>.md"
    at = _results_of(analysis, monkeypatch, "Off-topic questions")
    flagged = at.dataframe[0].value
    assert {"reason", "detail", "off-topic score"} <= set(flagged.columns) and "outlier score" not in flagged
    assert len(flagged) and (flagged["off-topic score"] > 0).all()  # a flagged question never shows a safe score
    assert (flagged["reason"] != "").all()


@pytest.mark.slow
def test_tuning_values_follow_the_user_from_results_to_configure(seeded):
    """Results and Configure draw the same tuning widgets: on the second page they show the values of the first,
    not their own defaults (K = 1, strictness 0, automatic toggles off), which the next change would apply."""
    values, _, _ = seeded
    at = app("results", values)
    keys = (state.W_K, state.W_STRICTNESS, state.W_MULTI_THRESHOLD, state.W_MULTI_N, state.W_TESTED_SHARE_CUT)
    on_results = {key: at.slider(key=key).value for key in keys}
    toggles = {key: at.toggle(key=key).value for key in (state.W_AUTO_K, state.W_AUTO_STRICTNESS)}
    assert on_results[state.W_K] > 1 and on_results[state.W_STRICTNESS] > 0
    at.switch_page(PAGES["configure"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert {key: at.slider(key=key).value for key in keys} == on_results
    assert {key: at.toggle(key=key).value for key in toggles} == toggles
    # A change on Configure is what Results shows next.
    at.slider(key=state.W_MULTI_N).set_value(4).run()
    assert at.session_state[state.SETTINGS].multi_n == 4
    at.switch_page(PAGES["results"]).run()
    assert at.slider(key=state.W_MULTI_N).value == 4 and at.slider(key=state.W_K).value == on_results[state.W_K]
