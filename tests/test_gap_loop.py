"""The gap loop without dead ends, on the dashboard: every gap has suggestions or says why not, a Results link
opens the Gap analysis at its gap, and accepted questions carry their source into the improved CSV.

No model: the synthetic analysis of conftest.py, with gaps written here (the core's suggestions are its own
tests' business), so these tests say what the pages do with whatever the core returns.
"""

from __future__ import annotations

import csv
import dataclasses
import io

import pandas as pd
import pytest

from coverage_core.inputs.questions import read_questions
from coverage_core.suggest.document_gaps import gap_key
from coverage_core.suggest.gaps import Gap
from coverage_core.suggest.questions import Suggestion
from coverage_core.types import Question, QuestionSet
from coverage_core.verdicts import Verdicts
from tests.app_support import run_page, texts
from ui import exports, formats, state, widgets
from ui.views import gaps as gaps_view

RESULTS, GAPS = "pages/3_results.py", "pages/4_gaps.py"
WRITTEN = "Which way does the river delta flow?"
NOTE = "The passages of this topic are tables of numbers: there is no sentence to write a question from."


def suggestion(cluster: int, text: str, origin: str, chunk: int, document: str, **changes) -> Suggestion:
    return Suggestion(cluster=cluster, text=text, origin=origin, document=document,
                      passage=f"Passage {chunk} of {document}.", chunk=chunk, **changes)


@pytest.fixture(scope="module")
def gapped(analysis):
    """The synthetic analysis with three gaps: written questions (one dropped), a note and nothing, a draft."""
    clusters = [int(c) for c in analysis.clusters["cluster"]]
    first, second, third = clusters[:3]
    dropped = suggestion(first, "What is water?", "local", 1, "alpha.txt", kept=False,
                         reason="it does not reach its passage (similarity 0.21, below the support level 0.45)")
    gaps = [
        Gap(first, 0.1, 20, 0.33, 0.9, ("river", "delta"), (1, 2),
            (suggestion(first, WRITTEN, "local", 2, "alpha.txt"),
             suggestion(first, "How fast is the flow?", "llm", 3, "=evil.txt")), dropped=(dropped,)),
        Gap(second, 0.2, 20, 0.33, 0.8, ("comet",), (40,), (), note=NOTE),
        Gap(third, 0.3, 20, 0.33, 0.7, ("violin",), (21,),
            (suggestion(third, "Write a question answered by: “violin string bow music.”", "draft", 21, "beta.txt"),)),
    ]
    return dataclasses.replace(analysis, gaps=gaps, clusters=analysis.clusters.assign(is_gap=True))


def gap_page(gapped, monkeypatch, values: dict | None = None, query: dict | None = None):
    """The Gap analysis page showing ``gapped`` (opened with ``query`` parameters, as a Results link does)."""
    from streamlit.testing.v1 import AppTest

    from tests.app_support import APP, TIMEOUT
    from ui import flow

    monkeypatch.setattr(flow, "require_analysis", lambda: gapped)
    monkeypatch.setattr(flow, "gaps_for", lambda analysis, use_llm=False: gapped)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in (values or {}).items():
        at.session_state[key] = value
    at.run()
    at.query_params.update(query or {})
    at.switch_page(GAPS).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# ---------------------------------------------------------------- every gap has suggestions, or says why not


def test_each_gap_lists_its_suggestions_with_who_wrote_them_or_says_why_there_are_none(gapped):
    cards = gaps_view.gap_cards(gapped)
    assert [card.rank for card in cards] == [1, 2, 3]
    written, noted, drafted = cards
    assert [(text, origin) for text, origin, _ in written.suggestions] == [
        (WRITTEN, "written by the built-in model"), ("How fast is the flow?", "written by your LLM")]
    assert written.note == "" and written.summary.endswith("· 2 suggestions")
    assert written.dropped == (("What is water?", gapped.gaps[0].dropped[0].reason),)
    assert noted.suggestions == () and noted.note == NOTE and noted.summary.endswith("· no suggestion")
    assert drafted.suggestions[0][1] == "draft to edit" and drafted.summary.endswith("· 1 suggestion")

    # The gap table never leaves a gap's suggestions blank either.
    table = gaps_view.gap_table(gapped)
    assert table["suggested questions"].iloc[1] == NOTE
    assert WRITTEN in table["suggested questions"].iloc[0] and "What is water?" not in table["suggested questions"].iloc[0]


def test_a_gap_without_suggestions_or_note_still_says_why_in_one_sentence(gapped):
    gap = gapped.gaps[1]
    dropped = dataclasses.replace(gapped.gaps[0].dropped[0], cluster=gap.cluster)
    assert gaps_view.why_no_suggestion(dataclasses.replace(gap, note="", dropped=(dropped,))) == (
        f"Every question written for this topic was dropped ({dropped.reason}).")
    assert gaps_view.why_no_suggestion(dataclasses.replace(gap, note="")) == "No question could be written for this topic."
    untranslated = Suggestion(gap.cluster, "", "draft", "alpha.txt", "", note="Icelandic has no draft wording yet.")
    assert gaps_view.why_no_suggestion(
        dataclasses.replace(gap, note="", suggestions=(untranslated,))) == "Icelandic has no draft wording yet."


def test_origins_are_named_in_plain_words():
    assert [formats.origin_words(code) for code in ("local", "llm", "draft", "you")] == [
        "written by the built-in model", "written by your LLM", "draft to edit", "added by you"]
    assert formats.origin_words("") == ""


def test_the_gap_page_shows_suggestions_notes_and_dropped_questions(gapped, monkeypatch):
    at = gap_page(gapped, monkeypatch)
    cards = [e for e in at.expander if e.label[:3] in ("1. ", "2. ", "3. ")]
    assert [e.label.split(":")[0] for e in cards] == [f"{i}. {c.title}" for i, c in enumerate(gaps_view.gap_cards(gapped), 1)]
    first, second, _ = cards
    listed = " ".join(texts(first.markdown))
    assert WRITTEN in listed and "*written by the built-in model*" in listed and "*written by your LLM*" in listed
    raw = " ".join(m.value for m in first.markdown)
    assert "from =evil.txt" in listed and f"from {widgets.plain('=evil.txt')}" in raw  # escaped: shown as written, never as markup
    dropped = [e for e in first.expander if "dropped" in e.label]
    assert len(dropped) == 1 and dropped[0].label == "1 written question dropped, and why"
    assert "What is water?" in " ".join(texts(dropped[0].markdown))
    assert texts(second.info) == [NOTE]  # the core's sentence, shown as written
    assert not second.expander  # nothing was dropped there
    assert not any(e.proto.expanded for e in cards)  # none asked for: all closed
    # The editor names who wrote each suggestion in words, and keeps the code for the reports.
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    assert set(editor.value["origin"]) == {"local", "llm", "draft"}


def test_gaps_left_with_drafts_can_be_written_for_from_the_page(gapped, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import APP, TIMEOUT
    from ui import flow

    first, second, third = gapped.gaps
    # The built-in model wrote for the two most urgent gaps; the third holds a draft only.
    partly = dataclasses.replace(gapped, gaps=[dataclasses.replace(first, written=True),
                                               dataclasses.replace(second, written=True), third])
    more = dataclasses.replace(partly, gaps=[*partly.gaps[:2], dataclasses.replace(
        third, written=True, suggestions=(suggestion(third.cluster, "How is a violin bow strung?", "local", 21, "beta.txt"),))])
    asked = []  # the gaps handed back to the core each time it is asked
    shown = []  # what the page's progress bar said, in order

    def with_gaps(analysis, llm=None, embedder=None, cache=None, written=(), progress=None):
        asked.append(list(written))
        progress(0, 2, None)
        progress(1, 2, 30.0)
        return more if written else partly

    from streamlit.delta_generator import DeltaGenerator

    real_progress = DeltaGenerator.progress

    def record(self, value, text=None):
        shown.append((value, text))
        return real_progress(self, value, text=text)

    monkeypatch.setattr(DeltaGenerator, "progress", record)

    assert gaps_view.gaps_left_to_write(partly) == 1 and gaps_view.gaps_left_to_write(more) == 0
    assert gaps_view.gaps_left_to_write(gapped) == 0  # nothing written by the model: no model to ask
    monkeypatch.setattr(flow, "require_analysis", lambda: gapped)
    monkeypatch.setattr(flow.gap_finding, "with_gaps", with_gaps)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(GAPS).run()
    assert asked == [[]]
    # The bar counts the gaps written for, with the time left, while the questions are being written.
    assert shown == [(0.0, "Finding gaps…"), (0.0, "Writing questions: 0 of 2 gaps done."),
                     (0.5, "Writing questions: 1 of 2 gaps done, about 30 s left.")]
    assert not [p for p in at.main if p.type == "progress"]  # and is gone once they are on the page
    button = at.button(key=state.W_WRITE_MORE_GAPS)
    assert button.label == "Write questions for the next 1 gap"
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert asked == [[], partly.gaps]  # the written gaps go back to be kept; nothing is asked again after
    assert not [b for b in at.button if b.key == state.W_WRITE_MORE_GAPS]  # every gap written for: no button
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    assert "How is a violin bow strung?" in editor.value["question"].tolist()


# ---------------------------------------------------------------- a Results link opens its gap


def test_a_results_link_opens_the_gap_page_at_that_gap(gapped, monkeypatch):
    from ui import flow

    monkeypatch.setattr(flow, "require_analysis", lambda: gapped)
    at = run_page(RESULTS)
    verdict = Verdicts.from_analysis(gapped)
    links = [n for n in at.main if n.type == "page_link"]
    assert len(links) == len(verdict.gaps) >= 2
    assert [link.proto.query_string for link in links] == [f"{state.GAP_PARAM}={gap.key}" for gap in verdict.gaps]
    assert all(link.proto.page.endswith("4_gaps.py") or "gap" in link.proto.page.lower() for link in links)

    wanted = verdict.gaps[1].key  # not the first: the page must open the one asked for
    at = gap_page(gapped, monkeypatch, query={state.GAP_PARAM: wanted})
    rank = [gap_key(gap.cluster, gap.document) for gap in gapped.gaps].index(wanted) + 1
    opened = [e.label.split(".")[0] for e in at.expander if e.proto.expanded and e.label[:1].isdigit()]
    assert opened == [str(rank)]
    assert at.session_state[state.GAP_FOCUS] == wanted
    assert state.GAP_PARAM not in at.query_params  # scrolled to once; a later rerun does not jump back
    scripts = [n for n in at.main if n.type == "html"]
    assert len(scripts) == 1 and f".st-key-{state.gap_card_key(wanted)}" in scripts[0].proto.body

    at.run()  # a rerun (an edit below) keeps the gap open without scrolling again
    assert [e.label.split(".")[0] for e in at.expander if e.proto.expanded and e.label[:1].isdigit()] == [str(rank)]
    assert not [n for n in at.main if n.type == "html"]


def test_a_link_to_a_gap_that_is_gone_opens_the_page_as_usual(gapped, monkeypatch):
    at = gap_page(gapped, monkeypatch, query={state.GAP_PARAM: "999"})
    assert not any(e.proto.expanded for e in at.expander if e.label[:1].isdigit())
    assert gaps_view.focused_gap(gapped, "not a number") is None
    first = gap_key(gapped.gaps[0].cluster, gapped.gaps[0].document)
    assert gaps_view.focused_gap(gapped, first) == first


# ---------------------------------------------------------------- sources in the improved CSV


def read_back(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(data.decode("utf-8-sig")), dtype=str, keep_default_na=False)


ROWS = (
    {"question": WRITTEN, "origin": "local", "cluster": 0, "document": "alpha.txt", "passage": "Passage 2 of alpha."},
    {"question": "Mine, typed", "origin": "you", "cluster": None, "document": "", "passage": ""},
    {"question": "How fast is the flow?", "origin": "llm", "cluster": 0, "document": "=evil.txt",
     "passage": "+1 passage\nwith a line break"},
)


def test_the_improved_csv_names_sources_in_a_new_column_when_the_file_has_none():
    questions = read_questions(b"question,owner\nWhat is a delta?,qa\n", name="mine.csv")
    texts_ = [row["question"] for row in ROWS]
    back = read_back(exports.improved_csv(questions, texts_, ROWS))
    assert list(back.columns) == ["question", "owner", "suggested", gaps_view.SOURCE_COLUMN, gaps_view.PASSAGE_COLUMN]
    assert back[gaps_view.SOURCE_COLUMN].tolist() == ["", "alpha.txt", "", "'=evil.txt"]  # formula-safe
    assert back[gaps_view.PASSAGE_COLUMN].tolist() == ["", "Passage 2 of alpha.", "", "'+1 passage with a line break"]
    # The new column is one the retrieval check finds by itself when the file comes back.
    assert gaps_view.source_column(read_questions(exports.improved_csv(questions, texts_, ROWS), name="x.csv")) == (
        gaps_view.SOURCE_COLUMN)
    # Without accepted rows (or rows without a source) the file gains no column.
    assert list(read_back(exports.improved_csv(questions, texts_)).columns) == ["question", "owner", "suggested"]
    assert list(read_back(exports.improved_csv(questions, ["Mine, typed"], ROWS[1:2])).columns) == [
        "question", "owner", "suggested"]


@pytest.mark.parametrize(("header", "chosen"), [("Relevant Sources", None), ("doc_ref", "doc_ref")])
def test_the_improved_csv_names_sources_in_the_users_own_column(header, chosen):
    data = f"question;{header};owner\nWhat is a delta?;alpha.txt#page=2;qa\n".encode()
    questions = read_questions(data, name="mine.csv")
    texts_ = [row["question"] for row in ROWS]
    improved = exports.improved_csv(questions, texts_, ROWS, chosen)
    rows = list(csv.reader(io.StringIO(improved.decode("utf-8-sig")), delimiter=";"))
    assert rows[0] == ["question", header, "owner", "suggested", gaps_view.PASSAGE_COLUMN]
    assert [row[1] for row in rows[1:]] == ["alpha.txt#page=2", "alpha.txt", "", "'=evil.txt"]
    assert [row[4] for row in rows[1:]] == ["", "Passage 2 of alpha.", "", "'+1 passage with a line break"]


def test_apply_keeps_the_sources_with_the_improved_questions():
    questions = QuestionSet(pd.DataFrame({"question": ["What is a delta?"]}), "question", [Question(0, "What is a delta?")])
    improved = gaps_view.improved_questions(questions, [WRITTEN], ROWS[:1])
    assert improved.frame[gaps_view.SOURCE_COLUMN].tolist() == ["", "alpha.txt"]
    assert [q.text for q in improved.questions] == ["What is a delta?", WRITTEN]


@pytest.mark.parametrize("own_column", [False, True])
def test_the_gap_page_download_carries_the_accepted_rows_sources(gapped, monkeypatch, own_column):
    import streamlit

    served = {}  # label → data of each st.download_button the page draws (the real button still renders)
    real = streamlit.download_button

    def capture(label, data, *args, **kwargs):
        served[label] = data
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", capture)
    if own_column:
        frame = gapped.questions.frame.assign(source="")
        gapped = dataclasses.replace(gapped, questions=dataclasses.replace(gapped.questions, frame=frame))
    at = gap_page(gapped, monkeypatch)
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    row = editor.value.index[editor.value["question"] == WRITTEN][0]
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {int(row): {"accept": True}},
        "added_rows": [{"accept": True, "question": "A question of my own?"}], "deleted_rows": [],
    }
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    build = served["Improved test set (CSV, +2 rows)"]
    back = read_back(build())
    column = "source" if own_column else gaps_view.SOURCE_COLUMN
    assert back["question"].tolist()[-2:] == [WRITTEN, "A question of my own?"]
    assert back[column].tolist()[-2:] == ["alpha.txt", ""]
    # The whole passage of the suggestion's chunk (its Suggestion keeps a shortened one).
    assert back[gaps_view.PASSAGE_COLUMN].tolist()[-2:] == [" ".join(gapped.corpus.chunks[2].text.split()), ""]
    assert (gaps_view.SOURCE_COLUMN in back.columns) is not own_column


def test_results_says_what_each_gap_offers_once_the_gap_page_has_written_it(gapped, monkeypatch):
    from coverage_core.session import StageKey
    from ui import flow

    monkeypatch.setattr(flow, "require_analysis", lambda: gapped)
    at = run_page(RESULTS)
    assert not [c for c in texts(at.caption) if "ready" in c]  # nothing written yet: nothing promised
    at = run_page(RESULTS, {state.GAPS: state.Stage(StageKey.of(flow.analysis_key()), gapped)})
    shown = texts(at.caption)
    by_cluster = {gap.cluster: gap for gap in gapped.gaps}
    for gap in Verdicts.from_analysis(gapped).gaps:
        expected = NOTE if by_cluster[gap.cluster].note else (
            f"{formats.count(len(by_cluster[gap.cluster].suggestions), 'suggested question')} ready.")
        assert expected in shown, (expected, shown)
