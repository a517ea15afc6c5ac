"""The Compare page with a generator's test set: read as it is, scored side by side, cards legible at 1280 px."""

from __future__ import annotations

import pytest

from tests.app_support import example_run, run_page, texts
from tests.helpers import FIXTURES
from ui import formats, state, widgets
from ui.views import compare as view

PAGE = "pages/6_compare.py"


# ---------------------------------------------------------------- the cards' layout (no Streamlit)


def test_cards_at_1280_px_put_the_tested_share_first_and_cut_no_label():
    names = ["tested_share", *widgets.RELATIVE_SCORES]
    rows = view.card_rows(names)
    assert [name for row in rows for name in row] == names
    assert rows[0][0] == "tested_share"
    for row in rows:
        assert len(row) <= view.MAX_CARDS_PER_ROW
        assert all(view.label_fits(formats.metric_label(name), len(row)) for name in row)


def test_six_cards_in_one_row_would_cut_the_labels():
    # The layout that showed "Tested sh…": every card in one row of six.
    assert not view.label_fits(formats.metric_label("tested_share"), 6)
    # The old jargon name did not fit three to a row; the plain one does.
    assert not view.label_fits("Nearby-topic coverage (multi-threshold)", 3)
    assert view.label_fits(formats.metric_label("multi_threshold"), 3)


# ---------------------------------------------------------------- the page (real model)


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    """Session-state values of a finished run and its analysis, computed once for the module."""
    values, analysis, _, _, _ = example_run(state.Settings(n_clusters=4), module_cache_dir)
    return values, analysis


@pytest.mark.slow
def test_a_ragas_file_is_compared_with_scorecards_and_a_verdict(seeded):
    values, _ = seeded
    at = run_page(PAGE, values)
    data = (FIXTURES / "testsets" / "ragas_testset.jsonl").read_bytes()
    at.file_uploader(key=state.W_COMPARE_UPLOADER).set_value(("ragas.jsonl", data, "application/json"))
    at.run()
    assert "Read as a RAGAS test set: 16 questions with their reference passages." in texts(at.caption)
    assert not any("Read as a" in text for text in texts(at.warning))
    at.button(key=state.W_COMPARE_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    comparison = at.session_state[state.COMPARISON].value
    assert comparison.b.corpus is comparison.a.corpus
    # The cards: the tested share first, as a share with its change in points.
    assert at.metric[0].label == "Tested share"
    assert at.metric[0].value == formats.share_change(comparison.a.metrics["tested_share"],
                                                      comparison.b.metrics["tested_share"])[0]
    assert [m.label for m in at.metric][:5] == [formats.metric_label(n) for n in ["tested_share", *widgets.RELATIVE_SCORES]]
    # The scorecards side by side, and one plain verdict.
    cards = view.scorecards(comparison)
    verdicts = texts(at.success) + texts(at.info)
    assert cards.verdict in verdicts
    table = at.dataframe[0].value
    assert table["measure"].tolist() == ["Tested share", "Balance across documents", "Near-duplicates", "Off-topic",
                                         "Answerable"]
    assert {"subset.csv", "ragas.jsonl", "better", "reading (subset.csv)", "reading (ragas.jsonl)"} <= set(table.columns)
