"""Issue 47, lost work and silent changes: the suggestion decisions a saved analysis and the history keep, what
changed between runs with other settings, the origin of an edited question, and whole export cells."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from coverage_core.decisions import ACCEPTED, OPEN, REJECTED, SuggestionDecision, decision_counts, edited_origin
from coverage_core.errors import InputError
from coverage_core.history import RunSnapshot, changes_since, snapshot_of
from coverage_core.outputs import since_report
from coverage_core.outputs.gap_report import origin_words
from coverage_core.outputs.report import build_report
from coverage_core.outputs.safe_csv import to_safe_csv
from coverage_core.saved import analysis as saved_analysis
from coverage_core.saved.analysis import load_analysis, save_analysis, zip_folder
from coverage_core.suggest.gaps import Gap
from coverage_core.suggest.questions import SUGGESTION_PASSAGE_CHARS, Suggestion, suggestion_from
from ui import exports
from ui.views import decisions as decisions_view, gaps as gaps_view

MINUS = "\N{MINUS SIGN}"
START = datetime(2026, 5, 4, 12, 0, tzinfo=timezone.utc)
LONG_PASSAGE = "=SUM(A1:A9) starts this passage, and it goes on. " + " ".join(f"word{i}" for i in range(400))


# ---------------------------------------------------------------- helpers


def _gaps(analysis) -> list[Gap]:
    """Two gaps of the synthetic analysis with suggestions on real chunks (three local, one draft, one llm)."""
    labels = analysis.clustering.labels.tolist()
    first, second = (next(i for i, label in enumerate(labels) if label == c) for c in (0, 1))

    def suggestion(cluster, text, origin, chunk):
        return Suggestion(cluster=cluster, text=text, origin=origin, document=analysis.corpus.chunks[chunk].document,
                          passage=analysis.corpus.chunks[chunk].text[:20] + "…", language="en", chunk=chunk)

    return [
        Gap(0, 0.2, 20, 1 / 3, 0.9, ("river",), (first,), (
            suggestion(0, "Where does the delta flow?", "local", first),
            suggestion(0, "How wide is the river?", "local", first),
            suggestion(0, "What feeds the river?", "local", first),
        ), written=True),
        Gap(1, 0.4, 20, 1 / 3, 0.5, ("violin",), (second,), (
            suggestion(1, "Write a question answered by: violin string bow music.", "draft", second),
            suggestion(1, "Which bow suits a violin?", "llm", second),
        )),
    ]


def _edited_table(analysis, gaps) -> pd.DataFrame:
    """The suggestions table after the user accepted one, edited and accepted one, deleted one, rewrote the
    draft without accepting it and added a row of their own."""
    table = gaps_view.suggestions_frame(dataclasses.replace(analysis, gaps=gaps))
    table.loc[0, "accept"] = True
    table.loc[1, ["question", "accept"]] = ["How wide is the river at its mouth?", True]
    table.loc[3, "question"] = "Which strings does a violin have?"
    table = table.drop(index=2)
    own = {"accept": True, "question": "Who wrote about deltas?", "cluster": None, "origin": "", "document": "",
           "passage": "", "original": ""}
    return gaps_view.normalize_suggestions(pd.concat([table, pd.DataFrame([own])], ignore_index=True))


# ---------------------------------------------------------------- decisions: the table, saved and opened again


def test_the_decisions_of_a_table_name_every_accepted_edited_and_rejected_suggestion(analysis):
    gaps = _gaps(analysis)
    table = _edited_table(analysis, gaps)
    decisions = decisions_view.decisions_of(table, gaps, [c.text for c in analysis.corpus.chunks])
    assert [(d.question, d.decision, d.edited, d.shown_origin) for d in decisions] == [
        ("Where does the delta flow?", ACCEPTED, False, "local"),
        ("How wide is the river at its mouth?", ACCEPTED, True, "edited:local"),
        ("Which strings does a violin have?", OPEN, True, "edited:draft"),
        ("Which bow suits a violin?", OPEN, False, "llm"),
        ("Who wrote about deltas?", ACCEPTED, False, "you"),
        ("What feeds the river?", REJECTED, False, "local"),
    ]
    assert decisions[1].original == "How wide is the river?" and decisions[-1].cluster == 0
    assert decision_counts(decisions) == {"n_accepted_suggestions": 3, "n_edited_suggestions": 2,
                                          "n_rejected_suggestions": 1}
    # The table again from the gaps as they come back: the same rows, the rejected one left out.
    restored = decisions_view.restore(gaps_view.suggestions_frame(dataclasses.replace(analysis, gaps=gaps)), decisions)
    pd.testing.assert_frame_equal(restored, table.reset_index(drop=True))
    assert decisions_view.decisions_of(restored, gaps, [c.text for c in analysis.corpus.chunks]) == decisions


def test_restoring_onto_other_suggestions_keeps_the_users_rows_and_drops_the_rejected(analysis):
    gaps = _gaps(analysis)
    decisions = decisions_view.decisions_of(_edited_table(analysis, gaps), gaps)
    rewritten = [dataclasses.replace(gaps[0], suggestions=(
        *gaps[0].suggestions, dataclasses.replace(gaps[0].suggestions[0], text="A new question?")))]
    restored = decisions_view.restore(gaps_view.suggestions_frame(dataclasses.replace(analysis, gaps=rewritten)),
                                      decisions)
    assert list(restored["question"]) == [
        "Where does the delta flow?", "How wide is the river at its mouth?", "Which strings does a violin have?",
        "Which bow suits a violin?", "Who wrote about deltas?", "A new question?",
    ]
    assert "What feeds the river?" not in set(restored["question"])  # rejected stays out
    assert gaps_view.accepted_texts(restored) == [
        "Where does the delta flow?", "How wide is the river at its mouth?", "Who wrote about deltas?"]


def test_decisions_round_trip_through_a_saved_folder_and_its_zip(analysis, tmp_path):
    gaps = _gaps(analysis)
    decisions = decisions_view.decisions_of(_edited_table(analysis, gaps), gaps)
    folder = save_analysis(dataclasses.replace(analysis, gaps=gaps), tmp_path / "saved", decisions=decisions)
    manifest = json.loads((folder / saved_analysis.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["schema_version"] == saved_analysis.SCHEMA_VERSION == 2
    assert json.loads((folder / saved_analysis.DECISIONS).read_text(encoding="utf-8"))[1]["original"] == (
        "How wide is the river?")
    assert load_analysis(folder).decisions == decisions
    opened = load_analysis(zip_folder(folder), "saved.zip")
    assert opened.decisions == decisions and opened.gaps == gaps
    assert opened.manifest["saved_version"] == 2
    # Without decisions (the command line) the file holds none.
    plain = save_analysis(analysis, tmp_path / "plain")
    assert load_analysis(plain).decisions == []


def test_a_folder_of_layout_version_1_still_opens_without_decisions(analysis, tmp_path):
    folder = save_analysis(dataclasses.replace(analysis, gaps=_gaps(analysis)), tmp_path / "old")
    (folder / saved_analysis.DECISIONS).unlink()
    manifest = json.loads((folder / saved_analysis.MANIFEST).read_text(encoding="utf-8"))
    manifest["schema_version"] = 1
    (folder / saved_analysis.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    opened = load_analysis(folder)
    assert opened.decisions is None and opened.gaps == _gaps(analysis)
    assert (opened.manifest["schema_version"], opened.manifest["saved_version"]) == (2, 1)
    zipped = zip_folder(folder)
    assert saved_analysis.DECISIONS not in zipfile.ZipFile(io.BytesIO(zipped)).namelist()
    assert load_analysis(zipped, "old.zip").decisions is None


@pytest.mark.parametrize("version, advice", [
    (3, "upgrade coverage_core to open it, or save the analysis again with this version."),
    (0, "save the analysis again with this version."),
    ("2", "save the analysis again with this version."),
])
def test_other_layout_versions_are_refused_in_one_sentence(analysis, tmp_path, version, advice):
    folder = save_analysis(analysis, tmp_path / "saved")
    manifest = json.loads((folder / saved_analysis.MANIFEST).read_text(encoding="utf-8"))
    manifest["schema_version"] = version
    (folder / saved_analysis.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_analysis(folder)
    assert str(caught.value) == f"saved was saved in format version {version}, but this version reads versions 1 to 2; {advice}"


@pytest.mark.parametrize("records, field", [
    ({"question": "q"}, "decisions"),
    ([{"question": "q", "origin": "local", "decision": "maybe"}], "decisions[0].decision"),
    ([{"question": "q", "origin": "local", "decision": "accepted", "cluster": -1}], "decisions[0].cluster"),
    ([{"question": 3, "origin": "local", "decision": "accepted"}], "decisions[0].question"),
])
def test_damaged_decisions_are_refused_naming_the_field(analysis, tmp_path, records, field):
    folder = save_analysis(analysis, tmp_path / "saved")
    (folder / saved_analysis.DECISIONS).write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_analysis(folder)
    assert str(caught.value).startswith(f"The decisions.json of saved has an invalid {field} (")
    assert str(caught.value).endswith("save the analysis again.")


def test_a_decision_record_from_a_later_version_keeps_what_this_one_knows(analysis, tmp_path):
    folder = save_analysis(analysis, tmp_path / "saved")
    record = {"question": "Q?", "origin": "edited:local", "decision": "open", "original": "P?", "cluster": 1,
              "added_later": {"x": 1}}
    (folder / saved_analysis.DECISIONS).write_text(json.dumps([record]), encoding="utf-8")
    (decision,) = load_analysis(folder).decisions
    assert decision == SuggestionDecision("Q?", "local", OPEN, "P?", 1) and decision.shown_origin == "edited:local"


# ---------------------------------------------------------------- an edited question's origin


def test_an_edited_question_says_what_it_was_edited_from():
    assert origin_words(edited_origin("local")) == "edited (from built-in model)"
    assert origin_words(edited_origin("draft")) == "edited (from draft)"
    assert origin_words(edited_origin("llm")) == "edited (from your LLM)"
    assert origin_words(edited_origin(edited_origin("traffic"))) == "edited (from traffic query)"
    assert origin_words("local") == "written by the built-in model"  # unchanged for the rest


def test_the_table_marks_an_edit_and_undoes_the_mark_when_the_text_comes_back(analysis):
    table = gaps_view.suggestions_frame(dataclasses.replace(analysis, gaps=_gaps(analysis)))
    assert set(table["origin"]) == {"local", "draft", "llm"}
    edited = table.copy()
    edited.loc[0, "question"] = "Where  does the delta   flow?"  # spacing is no edit
    edited.loc[1, "question"] = "How wide is it?"
    edited = gaps_view.normalize_suggestions(edited)
    assert list(edited["origin"][:2]) == ["local", "edited:local"]
    assert decisions_view.origins_moved(table, edited) and not decisions_view.origins_moved(edited, edited)
    edited.loc[1, "question"] = "How wide is the river?"
    assert gaps_view.normalize_suggestions(edited)["origin"][1] == "local"
    rows = gaps_view.accepted_rows(edited.assign(accept=True, question=["A?", "B?", "C?", "D?", "E?"]), ["B?"])
    assert rows[0]["origin"] == "edited:local"


def test_the_reports_give_an_accepted_edited_question_its_edited_origin(analysis):
    from coverage_core import editing
    from coverage_core.outputs.html_report import build_html_report
    from tests.fakes import FakeEmbedder

    texts = ["How wide is the river at its mouth?"]
    rows = [{"question": texts[0], "origin": "edited:local", "cluster": 0, "document": "alpha.txt",
             "passage": "river delta water flow."}]
    _, after = editing.accept_questions(analysis, texts, FakeEmbedder(width=16), None, marker_column="suggested")
    report = build_report(analysis, improved=after, accepted=rows)
    assert report["after_apply"]["accepted_questions"][0]["origin"] == "edited:local"
    html = build_html_report(analysis, improved=after, accepted=rows)
    assert "edited (from built-in model)" in html and "written by the built-in model</td><td>0<" not in html


# ---------------------------------------------------------------- whole cells in the exports


def test_a_suggestion_keeps_its_passage_short_but_the_table_and_csvs_carry_it_whole(analysis):
    chunk_texts = [LONG_PASSAGE]
    suggestion = suggestion_from(0, "What starts the passage?", "local", 0, chunk_texts, ["long.md"])
    assert len(suggestion.passage) <= SUGGESTION_PASSAGE_CHARS and suggestion.passage.endswith("…")
    assert gaps_view.whole_passage(suggestion, chunk_texts) == LONG_PASSAGE

    chunks = [dataclasses.replace(c, text=LONG_PASSAGE) for c in analysis.corpus.chunks]
    long = dataclasses.replace(analysis, corpus=dataclasses.replace(analysis.corpus, chunks=chunks),
                               gaps=_gaps(analysis))
    table = gaps_view.suggestions_frame(long)
    assert set(table["passage"]) == {LONG_PASSAGE}
    table.loc[1, ["question", "accept"]] = ["How wide is the river at its mouth?", True]
    table = gaps_view.normalize_suggestions(table)
    texts = gaps_view.accepted_texts(table)
    improved = exports.improved_csv(analysis.questions, texts, gaps_view.accepted_rows(table, texts))
    frame = pd.read_csv(io.StringIO(improved.decode("utf-8-sig")), dtype=str, keep_default_na=False)
    assert frame[gaps_view.PASSAGE_COLUMN].iloc[-1] == "'" + LONG_PASSAGE  # whole, and no formula
    assert "…" not in frame[gaps_view.PASSAGE_COLUMN].iloc[-1]

    suggestions = pd.read_csv(io.StringIO(exports.suggestions_csv(table).decode("utf-8-sig")), dtype=str,
                              keep_default_na=False)
    assert list(suggestions.columns) == list(exports.SUGGESTION_HEADERS.values())
    assert set(suggestions["Source passage"]) == {"'" + LONG_PASSAGE}
    assert suggestions.loc[1, "Origin"] == "edited (from built-in model)"
    assert (suggestions.loc[1, "Accepted"], suggestions.loc[0, "Accepted"]) == ("yes", "no")
    assert suggestions.loc[1, "Suggested as"] == "How wide is the river?"


def test_a_whole_passage_with_line_breaks_stays_one_safe_cell():
    passage = "@cmd first line\nsecond line -1\r\nthird"
    cell = pd.read_csv(io.StringIO(to_safe_csv(pd.DataFrame({"p": [passage]})).decode("utf-8-sig")),
                       dtype=str)["p"][0]
    assert cell.startswith("'@cmd first line") and "third" in cell


# ---------------------------------------------------------------- what changed: settings and verdict counts


def _run(hours=0, tested_share=0.5, model="all-MiniLM-L6-v2", provider="local", tau=0.5, **figures):
    headline = {"tested_share": tested_share, "strictness": 0.5, "chunk_size": 1000, "chunk_overlap": 200,
                "retrieval_k": 5, "n_topics": 6, "n_offtopic_questions": 14, "n_gaps": 2,
                "n_untested_documents": 1, "n_undertested_documents": 0, **figures}
    return RunSnapshot(START + timedelta(hours=hours), "main", "0.1.0", provider, model, tau, True, headline,
                       (), (), ())


def test_settings_and_verdict_counts_are_named_with_their_numbers():
    changes = changes_since(_run(), _run(1, strictness=1.0, n_topics=8, n_offtopic_questions=19), previous_run=1)
    assert changes.reason == "Strictness 0.5 → 1.0; topics (K) 6 → 8; off-topic questions 14 → 19: +0.0 points"
    assert [c.to_dict() for c in changes.settings_changed] == [
        {"name": "strictness", "before": "0.5", "after": "1.0", "text": "strictness 0.5 → 1.0"},
        {"name": "n_topics", "before": "6", "after": "8", "text": "topics (K) 6 → 8"},
    ]
    assert changes.to_dict()["verdicts_changed"] == [
        {"name": "n_offtopic_questions", "before": "14", "after": "19", "text": "off-topic questions 14 → 19"}]


def test_every_setting_and_count_that_moves_is_named():
    later = _run(1, tested_share=0.48, model="bge-m3", tau=0.62, chunk_size=500, chunk_overlap=100,
                 retrieval_k=8, n_gaps=3, n_untested_documents=4, n_undertested_documents=2)
    assert changes_since(_run(), later).reason == (
        "Model all-MiniLM-L6-v2 → bge-m3; chunk size 1,000 → 500; chunk overlap 200 → 100; level τ 0.50 → 0.62; "
        "retrieval k 5 → 8; gaps 2 → 3; untested documents 1 → 4; under-tested documents 0 → 2: "
        f"{MINUS}2.0 points")
    assert changes_since(_run(), _run(1, provider="openai")).reason == (
        "Model local all-MiniLM-L6-v2 → openai all-MiniLM-L6-v2: +0.0 points")


def test_what_is_the_same_or_not_known_is_not_a_change():
    assert changes_since(_run(), _run(1, strictness=0.5000001, tau=0.5001)).reason == (
        "No change in documents, questions, settings or verdicts: +0.0 points")
    older = RunSnapshot(START, "main", "0.0.9", "local", "all-MiniLM-L6-v2", 0.5, True, {"tested_share": 0.5},
                        (), (), ())  # recorded before settings and counts were kept
    assert changes_since(older, _run(1, strictness=1.0)).settings_changed == ()
    assert changes_since(older, _run(1)).verdicts_changed == ()


def test_snapshots_of_real_reports_record_the_settings_and_the_since_report_names_them(analysis):
    report = build_report(analysis)
    first = snapshot_of(report, analysis.corpus.documents, label="main")
    assert {name: first.headline[name] for name in ("strictness", "chunk_size", "chunk_overlap", "retrieval_k")} == {
        "strictness": 0.5, "chunk_size": 1000, "chunk_overlap": 200, "retrieval_k": analysis.config.retrieval_k}
    assert "n_accepted_suggestions" not in first.headline  # not known without the dashboard's table
    changed = json.loads(json.dumps(report))
    changed["config"]["strictness"] = 1.0
    changed["clusters"] = changed["clusters"] + [dict(changed["clusters"][0], id=99, is_gap=False)]
    for question in changed["questions"][:2]:
        question["is_outlier"] = True
    second = snapshot_of(changed, analysis.corpus.documents, label="main",
                         recorded_at=first.recorded_at + timedelta(minutes=1))
    n_offtopic = first.headline["n_offtopic_questions"]
    since = changes_since(first, second, previous_run=1).to_dict()
    expected = (f"Strictness 0.5 → 1.0; topics (K) {len(report['clusters'])} → {len(report['clusters']) + 1}; "
                f"off-topic questions {n_offtopic} → {second.headline['n_offtopic_questions']}")
    assert second.headline["n_offtopic_questions"] > n_offtopic
    assert since["reason"].startswith(expected + ": ")
    lines = since_report.summary_lines(since)
    assert lines[0] == f"Since {since_report.run_words(since)}: {since['reason']}."
    assert lines[1] == f"  Settings changed: strictness 0.5 → 1.0; topics (K) {len(report['clusters'])} → " \
                       f"{len(report['clusters']) + 1}"
    assert lines[2].startswith("  Verdict counts changed: off-topic questions ")
    html = since_report.html_section(since)
    assert "<h3>Settings changed (2)</h3><ul><li>strictness 0.5 → 1.0</li>" in html
    assert "<h3>Verdict counts changed (1)</h3>" in html
    # A report written before the lists were kept renders as before.
    older = {key: value for key, value in since.items() if key not in ("settings_changed", "verdicts_changed")}
    assert not any(line.startswith("  Settings") for line in since_report.summary_lines(older))


def test_the_history_keeps_the_settings_and_the_decision_counts_without_a_migration(analysis, tmp_path):
    from coverage_core.history import open_history

    gaps = _gaps(analysis)
    decisions = decisions_view.decisions_of(_edited_table(analysis, gaps), gaps)
    snapshot = snapshot_of(build_report(analysis), analysis.corpus.documents, label="main", decisions=decisions)
    assert (snapshot.headline["n_accepted_suggestions"], snapshot.headline["n_edited_suggestions"],
            snapshot.headline["n_rejected_suggestions"]) == (3, 2, 1)
    with open_history(tmp_path / "history.sqlite") as store:
        run = store.record(snapshot).run
        loaded = store.load(run)
    assert loaded == snapshot and loaded.headline["strictness"] == 0.5
    assert RunSnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict()))) == snapshot
    # The decisions themselves too: every one acted on (the untouched suggestion is none), without passages.
    assert [(d.question, d.decision, d.edited) for d in loaded.decisions] == [
        (d.question, d.decision, d.edited) for d in decisions if d.is_decided]
    assert len(loaded.decisions) == 5 and all(d.passage == "" for d in loaded.decisions)


# ---------------------------------------------------------------- the dashboard: decide, save the zip, reopen it


@pytest.fixture(scope="module")
def session(module_cache_dir):
    """A finished run of a small real slice (the bundled model), with hand-made gaps the Gap page shows as they
    are (nothing written by a model), and the analysis key they belong to."""
    from coverage_core.embeddings import EmbeddingCache, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.session import StageKey
    from tests.app_support import DOCS, EXAMPLE, analysis_of, seed_session, subset_csv
    from ui import engine, state

    settings = state.Settings(n_clusters=4)
    values, inputs = seed_session(read_documents([EXAMPLE / "docs" / name for name in DOCS]), subset_csv(),
                                  settings, make_embedder("local"), EmbeddingCache(module_cache_dir))
    analysis = analysis_of(values, inputs)
    gaps = _gaps(analysis)
    key = engine.analysis_key(inputs, settings, state.Overrides())
    values[state.GAPS] = state.Stage(StageKey.of(key, llm=None), dataclasses.replace(analysis, gaps=gaps))
    return values, analysis, gaps


EDITED = "How wide is the river where it meets the sea?"
WORDED = "What are the strings of a violin made of?"
OWN = "Which rivers form a delta?"


@pytest.mark.slow
def test_decisions_survive_the_saved_analysis_zip_and_the_history(session, tmp_path, monkeypatch):
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.testing.v1 import AppTest

    from coverage_core.history import HISTORY_ENV, open_history
    from coverage_core.saved.analysis import SAVED_ANALYSES_VARIABLE
    from tests.app_support import APP, TIMEOUT, run_page, texts
    from ui import state

    served = {}  # label → data of each download button the Gap page draws
    real = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        served[label] = data
        return real(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "history.sqlite"))
    values, analysis, gaps = session
    at = run_page("pages/4_gaps.py", values)
    # Accept one as it is, rewrite and accept one, delete one, word the draft without accepting it, add one;
    # then click Apply at once (the edit and the click reach the page in one run: the click is not lost).
    at.session_state[state.W_SUGGESTIONS_EDITOR] = {
        "edited_rows": {0: {"accept": True}, 1: {"question": EDITED, "accept": True}, 3: {"question": WORDED}},
        "added_rows": [{"accept": True, "question": OWN}], "deleted_rows": [2],
    }
    at.button(key=state.W_APPLY).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[state.IMPROVED].value.texts == ("Where does the delta flow?", EDITED, OWN)
    assert "3 accepted questions." in texts(at.caption)
    editor = [d for d in at.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    table = gaps_view.normalize_suggestions(editor.value)
    shown = list(zip(table["question"], table["accept"], table["origin"]))
    assert shown == [
        ("Where does the delta flow?", True, "local"), (EDITED, True, "edited:local"),
        (WORDED, False, "edited:draft"), ("Which bow suits a violin?", False, "llm"), (OWN, True, "you"),
    ]  # the editor itself shows the edited origins (its table was rebased on Apply)

    report = json.loads(served["Report (JSON)"])
    assert [(q["text"], q["origin"]) for q in report["after_apply"]["accepted_questions"]] == [
        ("Where does the delta flow?", "local"), (EDITED, "edited:local"), (OWN, "you")]
    assert "edited (from built-in model)" in served["Report with charts (HTML)"]().decode("utf-8")
    # The two CSVs, built from what the page hands their buttons (st.download_button is bound at import).
    assert [b.label for b in at.download_button][:2] == ["Suggestions (CSV)", "Improved test set (CSV, +3 rows)"]
    suggestions = pd.read_csv(io.BytesIO(exports.suggestions_csv(at.session_state[state.SUGGESTIONS_EDITED])),
                              dtype=str, keep_default_na=False)
    assert suggestions["Origin"].tolist()[:3] == [
        "written by the built-in model", "edited (from built-in model)", "edited (from draft)"]
    chunk = analysis.corpus.chunks[gaps[0].suggestions[1].chunk].text
    assert suggestions["Source passage"][1] == chunk and len(chunk) > SUGGESTION_PASSAGE_CHARS  # whole
    improvement = at.session_state[state.IMPROVED].value
    assert [row["origin"] for row in improvement.accepted_rows] == ["local", "edited:local", "you"]
    improved = pd.read_csv(io.BytesIO(exports.improved_csv(values[state.QUESTIONS], improvement.texts,
                                                           improvement.accepted_rows)),
                           dtype=str, keep_default_na=False)
    assert improved[gaps_view.PASSAGE_COLUMN].iloc[-2] == " ".join(chunk.split())

    # The history keeps the decisions with the run, and counts them.
    at.switch_page("pages/3_results.py").run()
    at.button(key=state.W_SAVE_HISTORY).click().run()
    assert not at.exception, [e.value for e in at.exception]
    with open_history(tmp_path / "history.sqlite") as store:
        (run,) = store.runs()
        recorded = store.load(run.run)
    headline = recorded.headline
    assert (headline["n_accepted_suggestions"], headline["n_edited_suggestions"],
            headline["n_rejected_suggestions"]) == (3, 2, 1)
    assert {(d.question, d.decision, d.edited) for d in recorded.decisions} >= {
        (EDITED, "accepted", True), (WORDED, "open", True), (OWN, "accepted", False)}
    at.switch_page("pages/10_history.py").run()
    assert "At run 1: 3 suggested questions accepted, 2 edited, 1 rejected." in texts(at.caption)

    # The whole analysis, opened again in a new session: the same gaps and the same table.
    at.switch_page("pages/4_gaps.py").run()
    root = tmp_path / "saved"
    with zipfile.ZipFile(io.BytesIO(served["The whole analysis (zip)"]())) as archive:
        archive.extractall(root / "mine")
    monkeypatch.setenv(SAVED_ANALYSES_VARIABLE, str(root))
    fresh = AppTest.from_file(APP, default_timeout=TIMEOUT)
    fresh.run()
    fresh.switch_page("pages/1_upload.py").run()
    fresh.radio(key=state.W_KNOWLEDGE_BASE).set_value("saved").run()
    fresh.selectbox(key=state.W_SAVED_FOLDER).set_value("mine").run()
    fresh.button(key=state.W_OPEN_SAVED).click().run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    fresh.switch_page("pages/4_gaps.py").run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert "3 accepted questions." in texts(fresh.caption)
    editor = [d for d in fresh.dataframe if d.key == state.W_SUGGESTIONS_EDITOR][0]
    reopened = gaps_view.normalize_suggestions(editor.value)
    assert list(zip(reopened["question"], reopened["accept"], reopened["origin"])) == shown
    assert "What feeds the river?" not in set(reopened["question"])  # rejected stays rejected
    assert fresh.session_state[state.GAPS].value.gaps == gaps  # the saved gaps, not written again
