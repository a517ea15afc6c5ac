"""The History page, "Save to history" on Results and automatic recording, through Streamlit's AppTest.

A small real slice (three of the example's articles, the Drum/Flute/Zebra questions) is embedded once per
module with the bundled model; two runs for "what changed" are analysed from it with the core (the second
with two documents added and one question removed). Every test keeps its history in its own temporary file
(``COVERAGE_HISTORY``), so nothing is written beside the checkout.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pandas as pd
import pytest

from coverage_core.history import (
    HISTORY_ENV,
    RECORD_ENV,
    DocumentState,
    QuestionState,
    RunSnapshot,
    open_history,
)
from coverage_core.history.snapshot import content_hash, question_hash
from coverage_core.outputs.plots import history as history_plots
from tests.app_support import DOCS, every_text, example_run, run_page, shown, texts
from tests.history.conftest import ADDED_DOCUMENTS, two_analysed_runs
from ui import formats, state
from ui.views import history as view

HISTORY_PAGE = "pages/10_history.py"
RESULTS_PAGE = "pages/3_results.py"
CONFIGURE_PAGE = "pages/2_configure.py"
SECRET = "s3cret-pw"
BEACON = "![x](http://127.0.0.2:9/beacon.png)"


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    """Session-state values of a finished run (τ set, so no calibration), and its analysis."""
    values, analysis, _, _, _ = example_run(state.Settings(n_clusters=4, support_threshold=0.5), module_cache_dir)
    return values, analysis


@pytest.fixture(scope="module")
def two_runs(module_cache_dir):
    """Snapshots of two runs: Drum and Flute, then the same with Koala and Lobster added and one question gone."""
    return two_analysed_runs(module_cache_dir)


@pytest.fixture
def history_file(tmp_path, monkeypatch):
    """The server's history: a file in this test's folder, not created yet."""
    path = tmp_path / "team history.sqlite"
    monkeypatch.setenv(HISTORY_ENV, str(path))
    monkeypatch.delenv(RECORD_ENV, raising=False)
    return path


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


# ---------------------------------------------------------------- the page's pieces (no Streamlit)


def test_picking_points_on_the_chart_keeps_the_last_two_runs():
    runs = history_plots.runs_frame([])
    assert view.picked_runs([{"customdata": ["7", "run 7"]}, {"customdata": [3, "run 3"]}], runs) == [7, 3]
    assert view.remember_picks([], [4]) == [4]
    assert view.remember_picks([4], [9]) == [4, 9]  # two clicks, one after the other
    assert view.remember_picks([4, 9], [2]) == [9, 2]
    assert view.remember_picks([4, 9], [9]) == [4, 9]
    assert view.remember_picks([4, 9], [1, 5, 6]) == [5, 6]  # a selection of several points is the pick
    assert view.remember_picks([4, 9], []) == [4, 9]
    assert view.ordered_pair(9, 4) == (4, 9)


class Info:
    """What ``HistoryStore.runs()`` gives of a run: its number, label, time and headline figures."""

    def __init__(self, run, label, hour, tested_share, untested):
        self.run, self.label = run, label
        self.recorded_at = datetime(2026, 11, 2, hour, tzinfo=timezone.utc)
        self.headline = {"tested_share": tested_share, "n_untested_documents": untested, "n_gaps": 1,
                         "n_undertested_documents": 0, "n_offtopic_questions": None}


def test_figures_name_each_run_and_escape_labels():
    runs = history_plots.runs_frame([Info(2, None, 9, 0.4, 2), Info(1, "<b>main</b>", 8, 0.5, 0)])
    assert list(runs["run"]) == [1, 2]  # oldest first
    points = history_plots.tested_share_over_time(runs).to_dict()["data"][0]
    assert points["y"] == [0.5, 0.4] and len(points["x"]) == 2
    assert points["x"][0].startswith("2026-11-02 08:00")  # UTC, as the axis says
    hover = [name for _, name in points["customdata"]]
    assert hover == ["run 1 · &lt;b&gt;main&lt;/b&gt; · 2026-11-02 08:00 UTC", "run 2 · 2026-11-02 09:00 UTC"]
    counts = history_plots.verdict_counts_over_time(runs).to_dict()["data"]
    assert next(t for t in counts if t["name"] == "untested documents")["y"] == [0.0, 2.0]
    assert next(t for t in counts if t["name"] == "off-topic questions")["y"] == [None, None]  # not recorded
    moments = list(runs["recorded_at"])
    timeline = [("Drum.txt", 1, moments[0], False), ("<i>Koala</i>.txt", 2, moments[1], True),
                ("Gone.txt", 1, moments[0], False), ("Gone.txt", 2, moments[1], None)]
    rows, total = history_plots.timeline_documents(timeline)
    assert rows == ["<i>Koala</i>.txt", "Drum.txt", "Gone.txt"] and total == 3  # untested now first, gone last
    assert history_plots.timeline_documents(timeline, limit=1) == (["<i>Koala</i>.txt"], 3)
    figure = history_plots.document_timeline_chart(timeline, runs).to_dict()
    untested = next(t for t in figure["data"] if t["name"] == "untested" and t["mode"] == "lines")
    assert [y for y in untested["y"] if y] == ["&lt;i&gt;Koala&lt;/i&gt;.txt"] * 2  # escaped, a segment to the end
    assert "&lt;i&gt;Koala&lt;/i&gt;.txt" in figure["layout"]["yaxis"]["ticktext"][0]


# ---------------------------------------------------------------- the History page


def test_an_empty_history_says_how_to_record_and_creates_no_file(history_file):
    at = run_page(HISTORY_PAGE)
    info = " ".join(texts(at.info))
    assert "No run is recorded in this history yet" in info and "Save to history" in info and "CI" in info
    assert "--" not in info  # words, not command-line flags
    assert not history_file.exists()
    assert at.toggle(key=state.W_HISTORY_AUTO).value  # the server names a history: recording is on


@pytest.mark.slow
def test_save_to_history_records_a_run_and_the_history_page_lists_it(seeded, history_file):
    values, _ = seeded
    at = run_page(RESULTS_PAGE, values)
    at.text_input(key=state.W_SAVE_LABEL).input("release-1.2").run()
    at.button(key=state.W_SAVE_HISTORY).click().run()
    assert not at.exception
    assert f"Saved as run 1 in {history_file}." in texts(at.success)
    with open_history(str(history_file)) as store:
        (run,) = store.runs()
        recorded = store.load(run.run)
    assert run.label == "release-1.2"
    assert {d.name for d in recorded.documents} == set(DOCS) and recorded.label == "release-1.2"
    assert run.headline["tested_share"] == pytest.approx(recorded.headline["tested_share"], abs=1e-12)

    at.switch_page(HISTORY_PAGE).run()
    assert not at.exception
    heading = shown(at.subheader[0].value)
    assert f"at run {run.run}" in heading and "1 run recorded" in heading
    assert "One run so far" in " ".join(texts(at.info))
    share = charts(at)[0]["data"][0]
    assert len(share["x"]) == 1 and share["y"][0] == pytest.approx(run.headline["tested_share"], abs=1e-9)

    # A second save, then the page compares the two (the same inputs: nothing added or removed).
    at.switch_page(RESULTS_PAGE).run()
    at.button(key=state.W_SAVE_HISTORY).click().run()
    assert f"Saved as run 2 in {history_file}." in texts(at.success)
    at.switch_page(HISTORY_PAGE).run()
    assert (at.selectbox(key=state.W_HISTORY_EARLIER).value, at.selectbox(key=state.W_HISTORY_LATER).value) == (1, 2)
    assert any(text.startswith("**From run 1 to run 2:**") for text in texts(at.markdown))
    assert "The same documents and questions in both runs." in texts(at.caption)


@pytest.mark.slow
def test_the_page_names_the_documents_added_as_untested_and_the_question_removed(two_runs, history_file):
    snapshots, removed = two_runs
    with open_history(str(history_file)) as store:
        for snapshot in snapshots:
            store.record(snapshot)
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    assert len(charts(at)[0]["data"][0]["x"]) == 2  # one point per run
    reason = next(text for text in texts(at.markdown) if text.startswith("**From run 1 to run 2:**"))
    assert "+2 documents" in reason
    assert "**2 documents added or changed since run 1 have no test: no on-topic question targets them.**" in texts(
        at.markdown)
    (named,) = texts(at.error)
    assert named.splitlines() == [f"- {name}: added since run 1, untested" for name in ADDED_DOCUMENTS]
    headings = texts(at.subheader)
    assert "Documents added (2)" in headings and "Questions removed (1)" in headings
    tables = [frame.value for frame in at.dataframe]
    added = next(t for t in tables if "now" in t)
    assert sorted(added["document"]) == sorted(ADDED_DOCUMENTS) and set(added["now"]) == {"untested"}
    assert any("question" in t and list(t["question"]) == [removed] for t in tables)
    # Filtering by label keeps both runs (both are "main"); the timeline draws the new documents untested.
    timeline = next(chart for chart in charts(at) if chart["layout"]["title"]["text"].startswith("When each"))
    untested_rows = {y for trace in timeline["data"] if trace.get("name") == "untested" for y in trace["y"] if y}
    assert set(ADDED_DOCUMENTS) <= untested_rows


@pytest.mark.slow
def test_choosing_the_runs_in_the_select_boxes_compares_them(two_runs, history_file):
    snapshots, _ = two_runs
    with open_history(str(history_file)) as store:
        for snapshot in (snapshots[0], snapshots[1], snapshots[0]):
            store.record(snapshot)
    at = run_page(HISTORY_PAGE)
    assert (at.selectbox(key=state.W_HISTORY_EARLIER).value, at.selectbox(key=state.W_HISTORY_LATER).value) == (2, 3)
    assert "Documents removed (2)" in texts(at.subheader)
    at.selectbox(key=state.W_HISTORY_EARLIER).set_value(1).run()
    assert any(text.startswith("**From run 1 to run 3:**") for text in texts(at.markdown))
    assert "The same documents and questions in both runs." in texts(at.caption)


def small_snapshot(label: str, documents: dict[str, bool], questions: list[str], hour: int) -> RunSnapshot:
    """A run made by hand: ``documents`` {name: untested?}, every question on-topic, no topics."""
    states = tuple(DocumentState(name, content_hash(name), 2, 0.0 if untested else 1.0, untested, False)
                   for name, untested in documents.items())
    untested = sum(documents.values())
    return RunSnapshot(
        recorded_at=datetime(2026, 11, 2, hour, tzinfo=timezone.utc), label=label, tool_version="test",
        provider="local", model="all-MiniLM-L6-v2", support_threshold=0.5, threshold_reliable=True,
        headline={"tested_share": 1 - untested / len(documents), "n_documents": len(documents),
                  "n_chunks": 2 * len(documents), "n_tested_chunks": 2 * (len(documents) - untested),
                  "n_questions": len(questions), "n_untested_documents": untested, "n_undertested_documents": 0,
                  "n_offtopic_questions": 0, "n_gaps": 0, "basic": None, "weighted": None, "balanced": None,
                  "multi_threshold": None, "multi_n": None},
        documents=states, questions=tuple(QuestionState(question_hash(q), q, False) for q in questions), topics=(),
    )


def test_labels_and_document_names_are_shown_as_written_never_as_markup(history_file):
    label, name = f"<b>main</b> {BEACON}", f"new {BEACON}.txt"
    with open_history(str(history_file)) as store:
        store.record(small_snapshot(label, {"a.txt": False}, ["What is a?"], 8))
        store.record(small_snapshot(label, {"a.txt": False, name: True}, ["What is a?"], 9))
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    rendered = [element.value for kind in ("markdown", "caption", "error", "warning", "info", "subheader", "success")
                for element in at.get(kind)]
    assert not [text for text in rendered if "](http" in text]  # every payload escaped
    assert f"- {name}: added since run 1, untested" in [shown(line) for text in texts(at.error)
                                                       for line in text.splitlines()]
    assert view.label_option(label) in at.selectbox(key=state.W_HISTORY_LABEL).options  # plain-text options
    hovers = json.dumps(charts(at))
    assert "&lt;b&gt;main&lt;/b&gt; ![x]" in hovers and "<b>main" not in hovers  # Plotly reads HTML: escaped


def test_the_page_lists_a_recorded_runs_decisions_in_plain_words(history_file):
    from dataclasses import replace

    from coverage_core.decisions import SuggestionDecision

    decisions = (
        SuggestionDecision("What is a?", "local", "accepted", "What is a?", 0, "a.txt", "A is …"),
        SuggestionDecision(f"Where is b? {BEACON}", "llm", "accepted", "Where is b?", 1, f"new {BEACON}.txt"),
        SuggestionDecision("When is c?", "draft", "open", "When c?", 1, "a.txt"),
        SuggestionDecision("Why a?", "local", "rejected", "Why a?", 0, "a.txt"),
    )
    with open_history(str(history_file)) as store:
        store.record(small_snapshot("main", {"a.txt": False}, ["What is a?"], 8))
        store.record(replace(small_snapshot("main", {"a.txt": False}, ["What is a?"], 9), decisions=decisions))
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    assert [e.label for e in at.expander if "suggested" in e.label] == ["Decisions on suggested questions"]
    assert at.selectbox(key=state.W_HISTORY_DECISIONS).value == 2  # the latest run first
    assert "At run 2: 2 suggested questions accepted, 2 edited, 1 rejected." in texts(at.caption)
    tables = [frame.value for frame in at.dataframe if "suggested as" in frame.value]
    assert len(tables) == 2  # what changed since run 1, and the run's own
    listed = tables[-1]
    assert list(listed["decision"]) == ["accepted", "accepted, edited", "edited, not accepted", "rejected"]
    assert list(listed["question"]) == [d.question for d in decisions]  # as written, in a table (never Markdown)
    assert list(listed["suggested as"]) == ["", "Where is b?", "When c?", ""]
    assert list(listed["written by"]) == [formats.origin_words(d.origin) for d in decisions]
    assert listed["document"].iloc[1] == f"new {BEACON}.txt"
    # What changed names the decisions recorded since run 1 (it kept none)
    assert f"{view.DECISIONS_ADDED} (4)" in texts(at.subheader)
    rendered = [element.value for kind in ("markdown", "caption", "error", "warning", "info", "subheader", "success")
                for element in at.get(kind)]
    assert not [text for text in rendered if "](http" in text]
    at.selectbox(key=state.W_HISTORY_DECISIONS).set_value(1).run()
    assert not at.exception
    assert any(text.startswith("Run 1 was recorded without decisions on suggested questions") for text in texts(
        at.caption))
    assert len([frame for frame in at.dataframe if "suggested as" in frame.value]) == 1  # what changed's only


# ---------------------------------------------------------------- automatic recording


@pytest.mark.slow
def test_automatic_recording_records_each_analysis_once(seeded, history_file):
    values, _ = seeded
    inputs_only = {key: values[key] for key in (state.SETTINGS, state.DOCUMENTS, state.QUESTION_FILE, state.QUESTIONS)}
    at = run_page(CONFIGURE_PAGE, inputs_only)
    at.button(key=state.W_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    with open_history(str(history_file)) as store:
        assert [run.run for run in store.runs()] == [1]
    # The same inputs and settings run again (the embedded inputs forgotten): the same analysis, not recorded twice.
    run_again(at)
    assert not at.exception
    with open_history(str(history_file)) as store:
        assert len(store.runs()) == 1
    # Another analysis (other settings) is recorded; with the toggle off, nothing is.
    run_again(at, values[state.SETTINGS].replace(n_clusters=3))
    with open_history(str(history_file)) as store:
        assert len(store.runs()) == 2
    at.switch_page(HISTORY_PAGE).run()
    at.toggle(key=state.W_HISTORY_AUTO).set_value(False).run()
    run_again(at, values[state.SETTINGS].replace(n_clusters=2))
    with open_history(str(history_file)) as store:
        assert len(store.runs()) == 2


def run_again(at, settings=None) -> None:
    """Run the analysis once more from Configure (with ``settings`` if given), its embedded inputs forgotten."""
    if settings is not None:
        at.session_state[state.SETTINGS] = settings
    for key in (state.CORPUS, state.QUESTION_VECTORS):
        del at.session_state[key]
    at.switch_page(CONFIGURE_PAGE).run()
    at.button(key=state.W_RUN).click().run()


@pytest.mark.slow
def test_without_a_history_on_the_server_nothing_is_recorded(seeded, tmp_path, monkeypatch):
    monkeypatch.delenv(HISTORY_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # the default history would be created here
    values, _ = seeded
    inputs_only = {key: values[key] for key in (state.SETTINGS, state.DOCUMENTS, state.QUESTION_FILE, state.QUESTIONS)}
    at = run_page(CONFIGURE_PAGE, inputs_only)
    at.button(key=state.W_RUN).click().run()
    assert not at.exception
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- faults and secrets


@pytest.mark.slow
def test_a_damaged_history_file_is_one_sentence_and_left_untouched(seeded, history_file):
    history_file.write_bytes(b"this is not a database\n" * 200)
    before = (history_file.read_bytes(), history_file.stat().st_mtime_ns)
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    (error,) = texts(at.error)
    assert history_file.name in error and "Traceback" not in error
    assert error.rstrip().endswith(".") and "\n" not in error.strip(), error
    values, _ = seeded
    at = run_page(RESULTS_PAGE, values)
    at.button(key=state.W_SAVE_HISTORY).click().run()
    assert not at.exception
    assert len([text for text in texts(at.error) if history_file.name in text]) == 1  # (the others: verdicts)
    assert not texts(at.success)
    assert (history_file.read_bytes(), history_file.stat().st_mtime_ns) == before


@pytest.mark.parametrize("field", [state.W_HISTORY_URL, state.W_HISTORY_FILE])
def test_a_database_url_with_a_password_never_appears_on_the_page(history_file, field):
    url = f"postgresql+psycopg://analyst:{SECRET}@127.0.0.1:9/coverage"
    at = run_page(HISTORY_PAGE)
    assert at.text_input(key=state.W_HISTORY_URL).proto.type == at.text_input(key=state.W_HISTORY_URL).proto.PASSWORD
    at.text_input(key=field).input(url).run()
    assert not at.exception
    assert at.session_state[state.HISTORY_URL] == url  # kept in the session, for the store
    assert SECRET not in every_text(at)
    assert any("analyst:***@127.0.0.1" in text for text in texts(at.caption))  # where the page reads, redacted
    (error,) = texts(at.error)  # nothing listens on port 9: one sentence
    assert "Traceback" not in error
    # Once more after a rerun, and when going back to the file.
    at.run()
    assert SECRET not in every_text(at)
    at.button(key=state.W_HISTORY_USE_FILE).click().run()
    assert state.HISTORY_URL not in at.session_state and SECRET not in every_text(at)


def test_the_page_headline_words_the_change_as_the_reason_does():
    from coverage_core.wording import points_words

    # 64.50% -> 53.34%: the shown shares (64.5, 53.3) differ by 11.2, the exact change is 11.16.
    runs = pd.DataFrame({"run": [2, 3], "tested_share": [0.6450, 0.5334]})
    sentence = view.share_sentence(runs)
    assert sentence == "53% of the knowledge base tested at run 3 (\u221211.2 points since run 2); 2 runs recorded."
    assert points_words(100 * (0.5334 - 0.6450)) in sentence
    assert view.share_sentence(runs.iloc[:1]) == "64% of the knowledge base tested at run 2; 1 run recorded."


@pytest.mark.parametrize("typed", ["{outside}/elsewhere.sqlite", "{outside}/../etc-like/cron-job",
                                   "{inside}/notes.txt", "sqlite:///{outside}/elsewhere.sqlite", "sqlite://"])
def test_a_history_file_typed_on_the_page_must_be_a_history_in_the_servers_folders(history_file, tmp_path, typed):
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    typed = typed.format(outside=outside, inside=history_file.parent)
    at = run_page(HISTORY_PAGE)
    at.text_input(key=state.W_HISTORY_FILE).input(typed).run()
    assert not at.exception
    (error,) = texts(at.error)
    assert error.startswith(("A history file chosen here must end in .sqlite, .sqlite3, .db and be inside",
                             "An in-memory history keeps nothing")), error
    assert not list(outside.iterdir()) and not (history_file.parent / "notes.txt").exists()
    # A history beside the server's own is fine: it is created when a run is saved there.
    at.text_input(key=state.W_HISTORY_FILE).input(str(history_file.parent / "team.sqlite")).run()
    assert not at.exception and not texts(at.error)


def test_a_lone_run_is_drawn_across_an_hour_not_milliseconds():
    from datetime import timedelta

    moment = datetime(2026, 11, 28, 0, 13, 52, 459000, tzinfo=timezone.utc)
    runs = pd.DataFrame({"run": [1], "label": ["main"], "recorded_at": [moment], "tested_share": [0.6],
                         "n_untested_documents": [2], "n_undertested_documents": [0], "n_gaps": [3],
                         "n_offtopic_questions": [18]})
    runs["recorded_at"] = pd.to_datetime(runs["recorded_at"], utc=True)
    for figure in (history_plots.tested_share_over_time(runs), history_plots.verdict_counts_over_time(runs)):
        low, high = (pd.Timestamp(end) for end in figure.layout.xaxis.range)
        assert high - low == history_plots.LONE_RUN_SPAN
        assert low < pd.Timestamp(moment.replace(tzinfo=None)) < high
    # Two runs seconds apart keep Plotly's own range, so their points stay apart to be picked.
    two = pd.concat([runs, runs.assign(run=2, recorded_at=runs["recorded_at"] + timedelta(seconds=3))])
    assert history_plots.tested_share_over_time(two).layout.xaxis.range is None


# ---------------------------------------------------------------- questions whose document changed or was removed


def _sourced_run(documents: dict[str, tuple[str, ...]], questions: list[tuple[str, tuple[str, ...], str]],
                 hour: int) -> RunSnapshot:
    """A run made by hand whose documents keep their passages ({name: passage texts}) and whose questions their
    sources (text, documents, how known)."""
    from dataclasses import replace

    from coverage_core.history.snapshot import passage_hash

    run = small_snapshot("main", {name: False for name in documents}, [text for text, _, _ in questions], hour)
    states = tuple(replace(state, content_hash=content_hash("|".join(documents[state.name])),
                           passages=tuple(passage_hash(p) for p in documents[state.name])) for state in run.documents)
    asked = tuple(replace(q, row=row, sources=sources, source_from=found_by)
                  for row, (q, (_, sources, found_by)) in enumerate(zip(run.questions, questions)))
    return replace(run, documents=states, questions=asked)


def test_the_page_lists_the_questions_whose_document_changed_or_was_removed_in_plain_words(history_file):
    from coverage_core.history.snapshot import passage_hash

    questions = [(f"How loud is a drum? {BEACON}", ("drum.txt",), "column"), ("Who plays the flute?", ("flute.txt",),
                 "retrieved"), ("What is a koala?", ("koala.txt",), "retrieved")]
    with open_history(str(history_file)) as store:
        store.record(_sourced_run({"drum.txt": ("skin", "shell", "sticks"), "flute.txt": ("air",),
                                   "koala.txt": ("leaves",)}, questions, 8))
        store.record(_sourced_run({"drum.txt": ("skin", "SHELL", "sticks"), "koala.txt": ("leaves",)}, questions, 9))
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    assert f"{view.STALE_HEADING} (2)" in texts(at.subheader)
    assert ("2 questions were written for a document that was changed or removed after run 1: check that each still "
            "asks about what the documents say now, or replace it.") in texts(at.markdown)
    table = next(frame.value for frame in at.dataframe if "what happened" in frame.value)
    assert list(table["question"]) == [questions[0][0], questions[1][0]]  # as written, in a table (never Markdown)
    assert list(table["row in your file"]) == [1, 2]
    assert list(table["document"]) == ["drum.txt", "flute.txt"]
    assert list(table["what happened"]) == ["the document changed: 1 passage rewritten, added or removed",
                                            "the document was removed"]
    assert list(table["document known from"]) == ["named in your file", "the passage it found"]
    # Plain words: no field names, no command-line flags, no payload rendered.
    rendered = " ".join(element.value for kind in ("markdown", "caption", "subheader", "info", "warning")
                        for element in at.get(kind))
    assert not any(word in rendered for word in ("--", "questions_stale", "passages_changed", "source_from"))
    assert "](http" not in rendered
    # What the Gap page needs: the changed document's passages at run 1, and a link there.
    target = at.session_state[state.HISTORY_STALE]
    assert target.run == 1 and target.documents == (
        ("drum.txt", frozenset(passage_hash(p) for p in ("skin", "shell", "sticks"))),)
    assert any("replacement questions" in link.proto.label for link in at.get("page_link"))


def test_a_run_recorded_before_the_sources_were_kept_says_it_cannot_tell(history_file):
    with open_history(str(history_file)) as store:
        store.record(small_snapshot("main", {"a.txt": False, "b.txt": False}, ["What is a?"], 8))
        store.record(small_snapshot("main", {"a.txt": False}, ["What is a?"], 9))
    at = run_page(HISTORY_PAGE)
    assert not at.exception
    assert ("Run 1 was recorded before the history kept the document each question was written for, so it cannot "
            "tell which questions went out of date since then.") in texts(at.caption)
    assert not any(text.startswith(view.STALE_HEADING) for text in texts(at.subheader))
    assert state.HISTORY_STALE not in at.session_state


@pytest.mark.slow
def test_the_gap_page_writes_replacement_questions_for_the_changed_passages_only(module_cache_dir, monkeypatch):
    """The History page's last comparison found a stale question citing Drum.txt, whose first two passages are
    new since then: the Gap page offers to write for those two, and adds the results to the suggestions."""
    import dataclasses

    from coverage_core import gap_finding
    from coverage_core.errors import ProviderError
    from coverage_core.history.snapshot import passage_hash
    from coverage_core.history.stale import ReplacementTarget
    from coverage_core.session import StageKey
    from tests.app_support import example_run
    from ui import engine
    from ui.views import gaps as gaps_view

    settings = state.Settings(n_clusters=4, support_threshold=0.5)
    values, analysis, inputs, _, _ = example_run(settings, module_cache_dir)
    key = engine.analysis_key(inputs, settings, state.Overrides())
    values[state.GAPS] = state.Stage(StageKey.of(key, llm=None), dataclasses.replace(analysis, gaps=[]))
    drum = [i for i, chunk in enumerate(analysis.corpus.chunks) if chunk.document == "Drum.txt"]
    earlier = frozenset(passage_hash(analysis.corpus.chunks[i].text) for i in drum[2:])
    values[state.HISTORY_STALE] = ReplacementTarget(run=1, documents=(("Drum.txt", earlier),), n_questions=1)

    def no_writer(*args, **kwargs):  # drafts stand in, as when the bundled writer is not there
        raise ProviderError("The built-in question writer is not installed.", "unavailable")

    monkeypatch.setattr(gap_finding, "shared_local_client", no_writer)
    at = run_page("pages/4_gaps.py", values)
    button = at.button(key=state.W_WRITE_REPLACEMENTS)
    assert button.label == "Write replacement questions for the 2 changed passages"
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "The built-in question writer is not installed." in texts(at.warning)
    editor = [frame for frame in at.dataframe if frame.key == state.W_SUGGESTIONS_EDITOR][0]
    table = gaps_view.normalize_suggestions(editor.value)
    replacements = table[table["origin"] == "stale"]
    assert len(replacements) >= 1 and set(replacements["document"]) == {"Drum.txt"}
    whole = {analysis.corpus.chunks[i].text for i in drum[:2]}
    assert set(replacements["passage"]) <= whole  # the changed passages only, each whole
    assert f"{formats.count(len(replacements), 'replacement question')} added to the table below." in texts(at.success)
