"""The Production traffic page through Streamlit's AppTest, on the same small real slice as tests/test_app.py
(Drum, Flute and Koala; the Drum/Flute/Zebra questions), embedded once per module with the bundled model."""

from __future__ import annotations

import pandas as pd
import pytest

from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.runner import run_traffic_check
from coverage_core.checks.traffic_answers import NO_ANSWER
from tests.app_support import example_run, metric, run_page, shown, texts
from ui import state
from ui.views.gaps import TRAFFIC_ORIGIN

PAGE = "pages/9_traffic.py"
KOALA = ["What do koalas eat?", "Where do koalas live in the wild?", "How long do koalas sleep each day?"]
SUPPORT = ["How do I reset my password?", "How do I cancel my subscription?"]


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    values, analysis, _, embedder, cache = example_run(state.Settings(), module_cache_dir)
    return values, analysis, embedder, cache


def _log(analysis):
    drum = [q.text for q in analysis.questions.questions if "drum" in q.text.lower()][:3]
    frame = pd.DataFrame({
        "query": drum + KOALA + ["Write to me at someone@example.com about koalas"] + SUPPORT,
        "count": [5, 5, 5, 60, 30, 10, 1, 12, 8],
        "date": ["2026-11-02"] * 3 + ["2026-11-09"] * 6,
    })
    return read_traffic(frame.to_csv(index=False).encode(), "log.csv")


@pytest.mark.slow
def test_without_a_log_the_page_asks_for_one(seeded):
    values, _, _, _ = seeded
    at = run_page(PAGE, values)
    assert any("Upload a query log" in text for text in texts(at.info))


@pytest.mark.slow
def test_the_page_shows_the_cores_figures_and_sends_real_queries_to_the_gap_page(seeded):
    values, analysis, embedder, cache = seeded
    log = _log(analysis)
    expected = run_traffic_check(analysis, log, embedder, cache)
    at = run_page(PAGE, {**values, state.TRAFFIC_LOG: log})

    assert shown(at.subheader[0].value) == expected.headline()
    assert metric(at, "Traffic tested") == f"{expected.tested_share_weighted:.0%}"
    assert metric(at, "Traffic answerable") == f"{expected.answerable_share_weighted:.0%}"
    assert metric(at, "Queries") == "136"
    topics = [d.value for d in at.dataframe if "most asked" in d.value.columns][0]
    assert topics["topic"].tolist() == expected.topics["label"].tolist()
    assert "koala" in topics["topic"].iloc[0].lower()
    on_page = " ".join(texts(at.markdown) + texts(at.caption) + topics["most asked"].tolist())
    assert "someone@example.com" not in on_page
    assert [h.value for h in at.header][:2] == ["Most asked, least tested", "Demand the documents do not meet"]
    # The support queries are their own group, never "every topic is answerable", and in no topic.
    assert expected.unanswered.volume >= 20 and NO_ANSWER in at.subheader[0].value
    assert not any("Every query" in text for text in texts(at.success))
    assert any(f"have {NO_ANSWER}" in text and "of the traffic" in text for text in texts(at.warning))
    unanswered = [d.value for d in at.dataframe if "times asked" in d.value.columns][0]
    assert set(SUPPORT) <= set(unanswered["query"]) and not set(KOALA) & set(unanswered["query"])
    assert not topics["most asked"].str.contains("password|subscription").any()
    assert "Over time" in [h.value for h in at.header]  # the log has dates

    at.button(key=state.W_TRAFFIC_ADD).click().run()
    assert not at.exception, [e.value for e in at.exception]
    suggested = at.session_state[state.SUGGESTIONS_EDITED]
    traffic_rows = suggested[suggested["origin"] == TRAFFIC_ORIGIN]
    assert set(traffic_rows["question"]) == {s.text for s in expected.suggestions}
    assert "What do koalas eat?" in set(traffic_rows["question"])
    # Each in the topic of the passage that answers it; a support query in none, marked as a gap in the documents.
    by_question = traffic_rows.set_index("question")
    labels = analysis.clustering.labels
    koala = next(s for s in expected.suggestions if s.text == "What do koalas eat?")
    assert by_question.loc["What do koalas eat?", "cluster"] == labels[koala.chunk]
    assert by_question.loc["What do koalas eat?", "document"] == "Koala.txt"
    assert pd.isna(by_question.loc["How do I reset my password?", "cluster"])
    assert by_question.loc["How do I reset my password?", "passage"] == NO_ANSWER

    # The Gap page's editor holds them next to its own suggestions, ready to accept, apply and export.
    at.switch_page("pages/4_gaps.py").run()
    assert not at.exception, [e.value for e in at.exception]
    editor = at.session_state[state.SUGGESTIONS_BASE]
    assert "What do koalas eat?" in set(editor.loc[editor["origin"] == TRAFFIC_ORIGIN, "question"])
    assert (editor["origin"] != TRAFFIC_ORIGIN).any()  # the gap suggestions are still there


@pytest.mark.slow
def test_traffic_the_documents_answer_gets_a_tick_only_on_a_calibrated_level(seeded, monkeypatch):
    values, analysis, _, _ = seeded
    drum = [q.text for q in analysis.questions.questions if "drum" in q.text.lower()][:3]
    log = read_traffic(pd.DataFrame({"query": drum + KOALA[:1]}).to_csv(index=False).encode(), "log.csv")
    assert analysis.calibration.reliable
    at = run_page(PAGE, {**values, state.TRAFFIC_LOG: log})
    assert "Every query of the traffic has an answer in the documents." in texts(at.success)
    from ui import widgets

    monkeypatch.setattr(widgets, "verdict_doubt", lambda _: "It rests on the model's default support level.")
    at = run_page(PAGE, {**values, state.TRAFFIC_LOG: log})
    assert not any("Every query" in text for text in texts(at.success))
    assert any(text.startswith("Every query of the traffic has an answer in the documents. This may be wrong: it "
                               "rests on") for text in texts(at.info))


FRENCH_KOALA = ["Que mangent les koalas dans la nature ?", "Combien d'heures par jour dorment les koalas ?",
                "Où vivent les koalas sauvages en Australie ?"]


@pytest.mark.slow
def test_queries_in_another_language_than_the_documents_get_no_tick_and_say_why(seeded):
    values, analysis, embedder, cache = seeded
    log = read_traffic(pd.DataFrame({"query": FRENCH_KOALA}).to_csv(index=False).encode(), "log.csv")
    expected = run_traffic_check(analysis, log, embedder, cache)
    assert expected.language_problem.startswith("The queries are in French and the documents in English: ")
    at = run_page(PAGE, {**values, state.TRAFFIC_LOG: log})
    assert not at.exception, [e.value for e in at.exception]
    assert shown(at.subheader[0].value) == expected.headline()
    assert expected.language_problem in shown(at.subheader[0].value)
    assert not texts(at.success)


@pytest.mark.slow
def test_an_unreadable_log_is_one_sentence(seeded):
    values, _, _, _ = seeded
    from coverage_core.errors import InputError

    with pytest.raises(InputError) as raised:
        read_traffic(b"a,b\n1,2\n", "log.csv")
    at = run_page(PAGE, values)
    assert not at.exception
    assert "No query column found in log.csv" in str(raised.value)
