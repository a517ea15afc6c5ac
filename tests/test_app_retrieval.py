"""The "Retrieval and chunking" page through Streamlit's AppTest, with and without data.

A small slice (Drum, Flute and Koala; the Drum, Flute and Zebra questions, one
Zebra question labelled with a file the knowledge base lacks) is embedded once
per module with the real bundled model into a temporary embedding cache and
seeded into each test's session state the way the pages store it. The figures
the page shows are checked against ``retrieval.evaluate_retrieval`` run on the
same vectors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from coverage_core.checks import retrieval, retrieval_labels
from coverage_core.chunking_comparison import grid_frame
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.stages.chunking import ChunkingConfig
from tests.app_support import DOCS, EXAMPLE, run_page, seed_session, shown, texts
from ui import state

PAGE = "pages/7_retrieval.py"
METRICS = {"Precision@": "precision_at_k", "Recall@": "recall_at_k", "Hit@": "hit_at_k", "First-hit rank score (MRR)": "mrr"}


def _frame(with_source: bool = True) -> pd.DataFrame:
    frame = read_questions(EXAMPLE / "questions.csv").frame
    frame = frame[frame["article"].isin(["Drum", "Flute", "Zebra"])].reset_index(drop=True)
    first_zebra = frame.index[frame["article"] == "Zebra"][0]
    frame.loc[first_zebra, "source"] = "Zebra.txt"  # a source the knowledge base does not have
    return frame if with_source else frame.drop(columns=["source"])


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    return module_cache_dir


def _seed(documents, frame: pd.DataFrame, settings: state.Settings, embedder, cache) -> dict:
    """Session-state values of a finished run of ``documents`` and the questions of ``frame``."""
    data = frame.to_csv(index=False).encode("utf-8")
    return seed_session(_DocumentSet(documents), data, settings, embedder, cache)[0]


class _DocumentSet:
    """The part of ``ingest.DocumentSet`` the seeding reads."""

    def __init__(self, documents):
        self.documents, self.warnings = list(documents), []


@pytest.fixture(scope="module")
def documents():
    return read_documents([EXAMPLE / "docs" / name for name in DOCS]).documents


@pytest.fixture(scope="module")
def seeded(cache_dir, documents):
    """A finished local run of the slice, with and without its source column."""
    embedder = make_embedder("local")
    cache = EmbeddingCache(cache_dir)
    settings = state.Settings(n_clusters=4)
    return (
        _seed(documents, _frame(), settings, embedder, cache),
        _seed(documents, _frame(with_source=False), settings, embedder, cache),
    )


def app(values: dict | None = None) -> AppTest:
    return run_page(PAGE, values)


def cards(at: AppTest) -> dict[str, str]:
    return {shown(m.label): m.value for m in at.metric}


def expected(values: dict, k: int, column: str = "source") -> retrieval.RetrievalResult:
    """The retrieval check computed directly on the seeded vectors."""
    corpus = values[state.CORPUS].value
    questions, embedding = values[state.QUESTION_VECTORS].value
    return retrieval.evaluate_retrieval(
        embedding.vectors, corpus.vectors, corpus.chunks, retrieval_labels.relevant_from_questions(questions, column), k,
        rows=questions.rows, question_texts=questions.texts, documents=corpus.documents,
    )


def assert_cards_match(at: AppTest, result: retrieval.RetrievalResult) -> None:
    shown = cards(at)
    for prefix, field in METRICS.items():
        label = prefix if prefix == "First-hit rank score (MRR)" else f"{prefix}{result.k}"
        assert shown[label] == f"{getattr(result, field):.3f}", label
    assert len(shown) == len(METRICS), shown  # four cards, legible at 1280 px
    caption = next(c for c in texts(at.caption) if "labelled question" in c)
    assert (f"({result.n_unlabelled:,} without a source, left out)" in caption) == bool(result.n_unlabelled), caption


def comparison_table(at: AppTest) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if "newly_embedded" in d.value.columns]
    assert found, "no chunking comparison table shown"
    return found[0]


# ---------------------------------------------------------------- without data


def test_page_without_data_says_what_to_do():
    at = app()
    assert at.title[0].value == "Retrieval and chunking"
    assert "Upload" in " ".join(texts(at.info))
    assert not at.error and not at.metric and not at.main.button  # the sidebar has its own


# ---------------------------------------------------------------- retrieval check


@pytest.mark.slow
def test_metric_cards_equal_the_core_figures_with_failures_and_unknown_sources(seeded):
    values, _ = seeded
    at = app(values)
    result = expected(values, 5)
    assert result.n_labelled > 0 and result.n_unlabelled > 0  # the Zebra questions are unlabelled
    assert_cards_match(at, result)
    assert {m.help for m in at.metric if m.label.startswith("Precision@")} == {
        "Relevant chunks in the top k ÷ k, averaged over the labelled questions."
    }
    assert all(m.help for m in at.metric)
    assert at.selectbox(key=state.W_RELEVANT_COLUMN).value == ""
    assert "detected: source" in at.selectbox(key=state.W_RELEVANT_COLUMN).options
    warnings = " ".join(texts(at.warning))
    assert "'Zebra.txt'" in warnings and "1 relevant source matches no document" in warnings
    assert f"{result.n_unlabelled} of" in warnings and "left out" in warnings
    # Failures: each failed question with what it retrieved instead; the Zebra one among them.
    failures = at.dataframe[1].value
    assert list(failures.columns) == [
        "row", "question", "expected", "rank", "source", "similarity", "passage", "expected is in the knowledge base",
    ]  # no page column: text files have none
    assert set(failures["row"]) == set(result.failures["row"])
    zebra = failures[failures["expected"] == "Zebra.txt"]
    assert len(zebra) == 5 and list(zebra["rank"]) == [1, 2, 3, 4, 5]
    assert not zebra["expected is in the knowledge base"].any()
    assert set(zebra["source"]) <= set(DOCS)
    # Every labelled question, with its figures.
    per_question = at.dataframe[2].value
    assert len(per_question) == result.n_labelled
    np.testing.assert_allclose(per_question["reciprocal rank"], result.per_question["reciprocal_rank"])


@pytest.mark.slow
def test_changing_k_updates_the_figures(seeded):
    values, _ = seeded
    at = app(values)
    at.slider(key=state.W_RETRIEVAL_K).set_value(1).run()
    assert not at.exception
    assert at.session_state[state.SETTINGS].retrieval_k == 1
    one = expected(values, 1)
    assert_cards_match(at, one)
    assert "Precision@5" not in cards(at)
    at.slider(key=state.W_RETRIEVAL_K).set_value(20).run()
    twenty = expected(values, 20)
    assert_cards_match(at, twenty)
    assert twenty.recall_at_k >= one.recall_at_k and twenty.precision_at_k != one.precision_at_k


@pytest.mark.slow
def test_a_column_that_names_no_source_is_an_error_not_an_exception(seeded):
    values, _ = seeded
    at = app(values)
    at.selectbox(key=state.W_RELEVANT_COLUMN).select("answerable").run()
    assert not at.exception
    assert at.session_state[state.SETTINGS].relevant_column == "answerable"
    errors = " ".join(texts(at.error))
    assert "No value in 'answerable'" in errors and "names a document of the knowledge base" in errors
    assert not [label for label in cards(at) if label.startswith("Precision@")]
    # Back to the detected column: the figures return.
    at.selectbox(key=state.W_RELEVANT_COLUMN).select("").run()
    assert not at.error
    assert_cards_match(at, expected(values, 5))


@pytest.mark.slow
def test_a_remembered_column_missing_from_the_file_is_an_error(seeded):
    values, _ = seeded
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(relevant_column="gold_doc")
    at = app(values)
    assert "'gold_doc'" in " ".join(texts(at.error))
    box = at.selectbox(key=state.W_RELEVANT_COLUMN)
    assert box.value == "gold_doc" and "gold_doc (not a column of this file)" in box.options
    assert not cards(at)
    # Choosing the detected column clears it.
    box.select("").run()
    assert not at.error and at.session_state[state.SETTINGS].relevant_column == ""
    assert_cards_match(at, expected(values, 5))


@pytest.mark.slow
def test_without_a_source_column_the_page_says_what_to_add(seeded):
    _, values = seeded
    at = app(values)
    info = " ".join(texts(at.info))
    assert "no column naming each question's relevant source" in info
    assert "`source`" in info and "`relevant_sources`" in info and "pick the column" in info
    assert "none detected" in at.selectbox(key=state.W_RELEVANT_COLUMN).options
    assert not at.error and not cards(at)


# ---------------------------------------------------------------- chunking comparison


@pytest.mark.slow
def test_chunking_comparison_runs_each_configuration_and_reuses_the_cache(seeded):
    values, _ = seeded
    at = app(values)
    editor = [d for d in at.dataframe if d.key == state.W_GRID_EDITOR][0]
    assert editor.editing_mode == "dynamic"
    pd.testing.assert_frame_equal(editor.value.reset_index(drop=True), grid_frame(), check_dtype=False)
    # Keep two rows: 1000/200 (embedded by the analysis) and 1000/0 (new chunks).
    at.session_state[state.W_GRID_EDITOR] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [0, 3]}
    at.run()
    assert not at.exception
    at.button(key=state.W_COMPARE_CHUNKINGS).click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = comparison_table(at)
    assert list(zip(table["chunk_size"], table["chunk_overlap"])) == [(1000, 0), (1000, 200)]
    by_config = table.set_index(["chunk_size", "chunk_overlap"])
    corpus = values[state.CORPUS].value
    assert by_config.loc[(1000, 200), "n_chunks"] == len(corpus.chunks)
    assert by_config.loc[(1000, 200), "newly_embedded"] == 0  # the analysis embedded these
    assert by_config.loc[(1000, 0), "newly_embedded"] > 0
    assert {"basic", "balanced", "precision_at_k", "recall_at_k", "mrr"} <= set(table.columns)
    assert "cost_usd" not in table.columns and "error" not in table.columns  # local model, no failure
    # The 1000/200 row is the analysis itself: its retrieval figures are the retrieval check's.
    result = expected(values, 5)
    assert by_config.loc[(1000, 200), "mrr"] == pytest.approx(result.mrr)
    assert at.get("plotly_chart")
    stored = at.session_state[state.CHUNKING_COMPARISON]
    assert stored.key.grid == (ChunkingConfig(1000, 0), ChunkingConfig(1000, 200))

    # A rerun shows the table without recomputing; a second click embeds nothing new.
    at.run()
    assert at.session_state[state.CHUNKING_COMPARISON] is stored
    at.button(key=state.W_COMPARE_CHUNKINGS).click().run()
    assert not at.exception
    assert list(comparison_table(at)["newly_embedded"]) == [0, 0]

    # The edited grid survives a visit to another page.
    at.switch_page("pages/3_results.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    editor = [d for d in at.dataframe if d.key == state.W_GRID_EDITOR][0]
    assert list(editor.value["chunk_size"]) == [1000, 1000] and list(editor.value["chunk_overlap"]) == [0, 200]
    assert comparison_table(at) is not None


@pytest.mark.slow
def test_a_bad_grid_row_is_an_error(seeded):
    values, _ = seeded
    values = dict(values)
    values[state.CHUNKING_GRID] = pd.DataFrame({"chunk_size": [500, 300], "chunk_overlap": [0, 400]})
    at = app(values)
    assert "Row 2 of the chunking grid" in " ".join(texts(at.error))
    assert not at.exception


# ---------------------------------------------------------------- paid provider


@pytest.mark.slow
def test_a_paid_provider_shows_the_cost_and_needs_consent(cache_dir, documents, fake_api):
    settings = state.Settings(provider="openai", base_url=f"{fake_api.url}/v1", n_clusters=3)
    embedder = make_embedder("openai", base_url=settings.base_url, api_key="sk-test")
    values = _seed(documents, _frame(), settings, embedder, EmbeddingCache(cache_dir))
    values[state.EMBED_API_KEY] = "sk-test"
    values[state.CHUNKING_GRID] = pd.DataFrame({"chunk_size": [1000, 700], "chunk_overlap": [200, 0]})
    at = app(values)
    plan = [d.value for d in at.dataframe if "texts to embed" in d.value.columns][0]
    corpus = values[state.CORPUS].value
    assert list(plan["chunks"])[0] == len(corpus.chunks)
    assert list(plan["texts to embed"])[0] == 0 and list(plan["texts to embed"])[1] > 0
    cost = cards(at)["Embedding with text-embedding-3-small"]
    assert cost.startswith("~") and "$" in cost
    assert at.button(key=state.W_COMPARE_CHUNKINGS).disabled
    sent_before = len(fake_api.requests_to("/v1/embeddings"))
    at.checkbox(key=state.W_CHUNKING_COST_OK).check().run()
    at.button(key=state.W_COMPARE_CHUNKINGS).click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = comparison_table(at).set_index(["chunk_size", "chunk_overlap"])
    assert table.loc[(1000, 200), "newly_embedded"] == 0 and table.loc[(1000, 200), "cost_usd"] == 0
    assert table.loc[(700, 0), "newly_embedded"] == list(plan["texts to embed"])[1]
    assert table.loc[(700, 0), "cost_usd"] > 0
    assert len(fake_api.requests_to("/v1/embeddings")) > sent_before
    shown = " ".join(texts(at.markdown) + texts(at.caption) + texts(at.error) + texts(at.warning))
    assert "sk-test" not in shown


# ---------------------------------------------------------------- chunking comparison: support level per chunking


def _compare_two_chunkings(values: dict) -> AppTest:
    """The page with the grid cut to 1000/0 and 1000/200 (the analysed chunking), compared."""
    at = app(values)
    at.session_state[state.W_GRID_EDITOR] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [0, 3]}
    at.run()
    at.button(key=state.W_COMPARE_CHUNKINGS).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _shown_table(at: AppTest):
    return [d for d in at.dataframe if "newly_embedded" in d.value.columns][0]


@pytest.mark.slow
def test_chunking_comparison_shows_each_chunkings_tested_share_at_its_own_level(seeded):
    values, _ = seeded
    at = _compare_two_chunkings(values)
    analysis = at.session_state[state.TUNING].analysis[1]
    assert analysis.calibration.method == "pseudo-queries"
    assert any("Each chunking gets its own support level" in m for m in texts(at.markdown))
    table = comparison_table(at)
    assert list(table.columns[:7]) == [
        "chunk_size", "chunk_overlap", "n_chunks", "n_clusters", "tested_share", "support_threshold", "support_method"
    ]
    assert list(table["support_method"]) == ["calibrated", "calibrated"]  # plain words on screen
    by_config = table.set_index(["chunk_size", "chunk_overlap"])
    # The analysed chunking: the analysis's own level and tested share (its headline figure).
    assert by_config.loc[(1000, 200), "support_threshold"] == pytest.approx(analysis.calibration.support_threshold)
    assert by_config.loc[(1000, 200), "tested_share"] == round(100 * analysis.metrics["tested_share"])  # whole %
    # The other chunking is calibrated on its own passages.
    assert by_config.loc[(1000, 0), "support_threshold"] != pytest.approx(analysis.calibration.support_threshold)
    assert table["tested_share"].between(0, 100).all()
    # Column headings are plain words.
    headings = _shown_table(at).proto.columns
    for label in ("passages tested", "support level", "support level from"):
        assert f'"{label}"' in headings, headings
    assert "calibration_embedded" not in table.columns  # local model: no cost columns


@pytest.mark.slow
def test_chunking_comparison_uses_the_support_level_the_user_set_for_every_chunking(seeded):
    values, _ = seeded
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(support_threshold=0.45)
    at = _compare_two_chunkings(values)
    assert any("the support level you set on Configure (0.45)" in m for m in texts(at.markdown))
    table = comparison_table(at)
    assert list(table["support_threshold"]) == [0.45, 0.45]
    assert list(table["support_method"]) == ["set by you", "set by you"]
    analysis = at.session_state[state.TUNING].analysis[1]
    by_config = table.set_index(["chunk_size", "chunk_overlap"])
    assert by_config.loc[(1000, 200), "tested_share"] == round(100 * analysis.metrics["tested_share"])  # whole %
    # Another level makes the stored table stale.
    stored = at.session_state[state.CHUNKING_COMPARISON]
    at.session_state[state.SETTINGS] = at.session_state[state.SETTINGS].replace(support_threshold=0.6)
    at.run()
    assert at.session_state[state.CHUNKING_COMPARISON] is stored
    assert "click **Compare chunkings** to update it" in " ".join(texts(at.info))
