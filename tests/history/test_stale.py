"""Stale questions: a question whose source document was removed or changed since the run it was recorded in.

End to end through ``cli.main`` with the word-hashing embedder (as tests/history/test_cli_history.py, so no model
loads): run 1 records the example's Drum, Flute and Trumpet articles and their questions; before run 2 Drum.txt
is edited (a paragraph appended) and Flute.txt removed. Once with the test set's ``source`` column, once without
it (each question's source is then the document it retrieved at run 1). Then the rules on hand-made runs, a
history written before the sources were kept, and the replacement questions for the changed passages.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from types import SimpleNamespace

import pandas as pd
import pytest

from coverage_core.cli import main
from coverage_core.history import HISTORY_ENV, RECORD_ENV, HistoryStore, changes_since
from coverage_core.history.snapshot import (
    FROM_COLUMN,
    FROM_RETRIEVAL,
    DocumentState,
    QuestionState,
    RunSnapshot,
    passage_hash,
    question_hash,
)
from coverage_core.history.stale import (
    CHANGED,
    REMOVED,
    changed_passages,
    passages_changed,
    replacement_target,
    stale_questions,
)
from coverage_core.outputs.since_report import MAX_LISTED, stale_words
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT
from tests.history.conftest import empty_history_at

EXAMPLE = PROJECT / "examples" / "wiki-qa"
ARTICLES = ("Drum", "Flute", "Trumpet")
EDITED, GONE, KEPT = "Drum.txt", "Flute.txt", "Trumpet.txt"
APPENDED = "\n\nDrum circles meet in parks and community halls, where anyone may join in with a hand drum.\n"
GATE_FAILED = 1  # the exit code of every --fail-on-* gate (cli.EXIT_BELOW_THRESHOLD)


def _isolate(patch: pytest.MonkeyPatch, cache) -> None:
    patch.setenv("COVERAGE_CORE_CACHE_DIR", str(cache))
    patch.delenv(HISTORY_ENV, raising=False)
    patch.delenv(RECORD_ENV, raising=False)


def _use_word_embedder(patch: pytest.MonkeyPatch, cache) -> None:
    from coverage_core import embedding_steps

    _isolate(patch, cache)
    patch.setattr(embedding_steps, "build_embedder", lambda config, api_key=None: FakeEmbedder(
        model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64))


def _run(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _analyze(work, out, *extra):
    return ["analyze", "--docs", str(work / "docs"), "--questions", str(work / "questions.csv"), "--out",
            str(work / out), "--clusters", "3", "--suggest", "0", "--quiet", *extra]


def _example_questions(with_source: bool) -> pd.DataFrame:
    frame = pd.read_csv(EXAMPLE / "questions.csv", dtype=str, keep_default_na=False)
    frame = frame[frame["article"].isin(ARTICLES)].reset_index(drop=True)
    return frame[["question", "source"] if with_source else ["question"]]


def _two_runs(work, with_source: bool) -> dict:
    """Run 1 recorded; Drum.txt edited and Flute.txt removed; run 2 with --fail-on-stale (and --junit), and run 2
    again from a copy of the history holding run 1 only, without the gate."""
    docs = work / "docs"
    docs.mkdir(parents=True)
    for article in ARTICLES:
        shutil.copy(EXAMPLE / "docs" / f"{article}.txt", docs / f"{article}.txt")
    questions = _example_questions(with_source)
    questions.to_csv(work / "questions.csv", index=False)
    history = work / "history.sqlite"
    first = _run(_analyze(work, "r1.json", "--record", "main", "--history", str(history)))
    shutil.copy(history, work / "run-1-only.sqlite")
    (docs / EDITED).write_text((docs / EDITED).read_text(encoding="utf-8") + APPENDED, encoding="utf-8")
    (docs / GONE).unlink()
    gated = _run(_analyze(work, "r2.json", "--record", "main", "--history", str(history), "--fail-on-stale",
                          "--junit", str(work / "r2.xml")))
    ungated_history = work / "ungated.sqlite"
    shutil.copy(work / "run-1-only.sqlite", ungated_history)
    ungated = _run(_analyze(work, "r2-ungated.json", "--record", "main", "--history", str(ungated_history),
                            "--junit", str(work / "r2-ungated.xml")))
    reports = {name: json.loads((work / f"{name}.json").read_text()) for name in ("r1", "r2", "r2-ungated")}
    return dict(work=work, questions=questions, runs=dict(first=first, gated=gated, ungated=ungated),
                reports=reports)


@pytest.fixture(scope="module")
def by_column(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        work = tmp_path_factory.mktemp("stale-by-column")
        _use_word_embedder(patch, work / "embedding-cache")
        return _two_runs(work, with_source=True)


@pytest.fixture(scope="module")
def by_retrieval(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        work = tmp_path_factory.mktemp("stale-by-retrieval")
        _isolate(patch, work / "embedding-cache")  # the bundled model: what each question retrieved is real
        return _two_runs(work, with_source=False)


def _stale_set(report) -> set[tuple[str, str, str]]:
    return {(q["question"], q["source"], q["reason"]) for q in report["since"]["questions_stale"]}


# ---------------------------------------------------------------- the target: the report's since.questions_stale


def test_the_questions_citing_the_edited_and_the_removed_document_by_source_column_go_stale(by_column):
    assert by_column["runs"]["first"][0] == 0, by_column["runs"]["first"][2]
    questions = by_column["questions"].drop_duplicates("question")
    reason = {EDITED: CHANGED, GONE: REMOVED}
    expected = {(q, source, reason[source]) for q, source in zip(questions["question"], questions["source"])
                if source in reason}
    assert {source for _, source, _ in expected} == {EDITED, GONE}
    report = by_column["reports"]["r2"]
    assert _stale_set(report) == expected  # exactly those: no Trumpet question, none twice
    stale = report["since"]["questions_stale"]
    assert len(stale) == len(expected)
    rows = dict(zip(questions["question"], questions.index))
    drum_chunks = next(d["n_chunks"] for d in report["documents"] if d["name"] == EDITED)
    for entry in stale:
        assert entry["source_from"] == FROM_COLUMN
        assert entry["row"] == rows[entry["question"]]  # the 0-based data row, as questions[].row
        if entry["reason"] == CHANGED:
            assert 1 <= entry["passages_changed"] < drum_chunks  # a paragraph appended rewrites the tail only
        else:
            assert entry["passages_changed"] is None


@pytest.mark.slow  # the bundled model, end to end
def test_the_questions_that_retrieved_the_edited_and_the_removed_document_go_stale(by_retrieval):
    first = by_retrieval["reports"]["r1"]
    assert "source" not in by_retrieval["questions"].columns
    reason = {EDITED: CHANGED, GONE: REMOVED}
    expected = {(q["text"], q["nearest_document"], reason[q["nearest_document"]]) for q in first["questions"]
                if not q["is_outlier"] and q["nearest_document"] in reason}
    assert {why for _, _, why in expected} == {CHANGED, REMOVED}  # both reasons occur
    report = by_retrieval["reports"]["r2"]
    assert _stale_set(report) == expected
    assert {q["source_from"] for q in report["since"]["questions_stale"]} == {FROM_RETRIEVAL}
    kept = {q["text"] for q in first["questions"] if not q["is_outlier"] and q["nearest_document"] == KEPT}
    assert kept and not kept & {question for question, _, _ in expected}  # Trumpet's questions stay fresh


def test_the_terminal_lists_the_stale_questions_with_their_reasons(by_column):
    code, out, err = by_column["runs"]["gated"]
    stale = by_column["reports"]["r2"]["since"]["questions_stale"]
    n = len({q["question"] for q in stale})
    assert f"  {n} questions went stale: their source document was removed or changed" in out
    drum = stale[0]  # the test set's order: the Drum questions come first
    assert drum["reason"] == CHANGED
    changed = drum["passages_changed"]
    assert (f"    {drum['question']} (row {drum['row'] + 1}): {EDITED} changed ({changed} "
            f"{'passage' if changed == 1 else 'passages'} changed)") in out
    listed = [line for line in out.splitlines() if line.startswith("    ") and (
        f": {EDITED} changed (" in line or line.endswith(f": {GONE} removed"))]
    assert len(listed) == MAX_LISTED < len(stale)  # a short list; the JSON report has them all
    assert f"    … and {len(stale) - MAX_LISTED} more (the JSON report lists them all)" in out
    flute = next(q for q in stale if q["reason"] == REMOVED)
    assert stale_words(flute) == f"{GONE} removed"


def test_fail_on_stale_exits_as_the_other_gates_do_and_its_junit_cases_fail(by_column):
    code, out, err = by_column["runs"]["gated"]
    assert code == GATE_FAILED
    n = len({q["question"] for q in by_column["reports"]["r2"]["since"]["questions_stale"]})
    assert f"{n} questions went stale since run 1" in err and "(--fail-on-stale)" in err
    assert "Recorded as run 2 (main)" in out  # everything written and recorded before the gate
    suite = next(s for s in ET.parse(by_column["work"] / "r2.xml").getroot().findall("testsuite")
                 if s.get("name") == "coverage.history")
    failed = {case.get("name"): case.find("failure").get("message") for case in suite.findall("testcase")
              if case.find("failure") is not None}
    stale = by_column["reports"]["r2"]["since"]["questions_stale"]
    for entry in stale:
        message = failed[f"stale question: {entry['question']} ({entry['source']})"]
        assert message.startswith(f"Stale since run 1: {entry['question']} (row {entry['row'] + 1}): {entry['source']}")
    assert len(failed) == len(stale)  # the stale cases only: no other gate was asked for


def test_without_the_gate_the_stale_cases_pass_and_the_run_succeeds(by_column):
    code, out, err = by_column["runs"]["ungated"]
    assert code == 0, err
    assert _stale_set(by_column["reports"]["r2-ungated"]) == _stale_set(by_column["reports"]["r2"])
    suite = next(s for s in ET.parse(by_column["work"] / "r2-ungated.xml").getroot().findall("testsuite")
                 if s.get("name") == "coverage.history")
    stale_cases = [case for case in suite.findall("testcase") if case.get("name").startswith("stale question: ")]
    assert len(stale_cases) == len(by_column["reports"]["r2"]["since"]["questions_stale"])
    assert all(case.find("failure") is None for case in stale_cases)
    assert all("passes without --fail-on-stale" in case.find("system-out").text for case in stale_cases)


def test_fail_on_stale_needs_an_earlier_run_to_compare_with(tmp_path, monkeypatch):
    _use_word_embedder(monkeypatch, tmp_path / "embedding-cache")
    (tmp_path / "docs").mkdir()
    shutil.copy(EXAMPLE / "docs" / EDITED, tmp_path / "docs" / EDITED)
    _example_questions(True).to_csv(tmp_path / "questions.csv", index=False)
    code, _, err = _run(_analyze(tmp_path, "r.json", "--fail-on-stale"))
    assert code == 2
    assert "--fail-on-stale compares with the last run recorded under the same label" in err
    assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- a history recorded before the sources were kept


def test_a_history_recorded_before_the_sources_were_kept_says_not_known(by_column, tmp_path, monkeypatch):
    """Run 1 copied into a history of schema 0003 (no passages, no question sources): it migrates, loads, and
    the gate cannot tell stale questions, so it passes and says so; run 2 recorded there keeps them."""
    _use_word_embedder(monkeypatch, tmp_path / "embedding-cache")
    old = tmp_path / "old.sqlite"
    empty_history_at(old, "0003")
    with contextlib.closing(sqlite3.connect(old)) as connection:
        connection.execute("ATTACH DATABASE ? AS head", (str(by_column["work"] / "run-1-only.sqlite"),))
        columns = ", ".join(row[1] for row in connection.execute("PRAGMA table_info(runs)"))
        assert "passages_digest" not in columns and "question_sources_digest" not in columns
        connection.execute("INSERT INTO parts SELECT * FROM head.parts")
        connection.execute(f"INSERT INTO runs ({columns}) SELECT {columns} FROM head.runs")
        connection.commit()
        connection.execute("DETACH DATABASE head")
    work = by_column["work"]  # the edited knowledge base of run 2
    code, out, err = _run(["analyze", "--docs", str(work / "docs"), "--questions", str(work / "questions.csv"),
                           "--out", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"), "--clusters", "3",
                           "--suggest", "0", "--quiet", "--record", "main", "--history", str(old),
                           "--fail-on-stale"])
    assert code == 0, err
    since = json.loads((tmp_path / "r.json").read_text())["since"]
    assert since["questions_stale"] is None  # not known, never "none went stale"
    assert since["documents_removed"] == [GONE]
    assert "  Stale questions: not known (run 1 (main, " in out and "did not record each question's source" in out
    suite = next(s for s in ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")
                 if s.get("name") == "coverage.history")
    (case,) = [c for c in suite.findall("testcase") if c.get("name") == "stale questions since run 1"]
    assert case.find("failure") is None and case.find("system-out").text.startswith("Not known:")
    with HistoryStore(old) as store:
        before, after = store.load(1), store.load(2)
    assert all(q.sources is None and q.row is None for q in before.questions)
    assert all(d.passages is None for d in before.documents)
    drum = next(q for q in after.questions if q.text == "Is the drum a member of the percussion group?")
    assert (drum.sources, drum.source_from, drum.row) == ((EDITED,), FROM_COLUMN, 0)
    assert all(d.passages for d in after.documents)
    assert stale_questions(before, after) is None
    assert stale_questions(after, after) == ()  # the same run again: nothing went stale


# ---------------------------------------------------------------- the rules, on runs made by hand

T0 = datetime(2026, 11, 2, 8, tzinfo=timezone.utc)


def _document(name: str, passages: tuple[str, ...] | None, known: bool = True) -> DocumentState:
    text = "|".join(passages or (name,))
    return DocumentState(name, passage_hash(text) * 5 + "0" * 4 if known else "", len(passages or ()), 1.0, False,
                         False, passages=None if passages is None else tuple(passage_hash(p) for p in passages))


def _question(text: str, sources, source_from: str = FROM_RETRIEVAL, row: int | None = 0) -> QuestionState:
    return QuestionState(question_hash(text), text, False, row=row, sources=sources, source_from=source_from)


def _run_of(documents, questions, hour: int = 8) -> RunSnapshot:
    return RunSnapshot(recorded_at=T0.replace(hour=hour), label="main", tool_version="test", provider="local",
                       model="m", support_threshold=0.5, threshold_reliable=True, headline={"tested_share": 0.5},
                       documents=tuple(documents), questions=tuple(questions), topics=())


@pytest.mark.parametrize("before, after, expected", [
    (["a", "b", "c"], ["a", "b", "c"], 0),
    (["a", "b", "c"], ["a", "B", "c"], 1),  # one edited
    (["a", "b"], ["a", "b", "c"], 1),  # one added
    (["a", "b", "c"], ["a"], 2),  # two removed
    (["a", "b"], ["A", "b", "c"], 2),  # one edited and one added
    (["a", "a", "b"], ["a", "b"], 1),  # a repeated passage counts as often as it occurs
])
def test_passages_changed_counts_each_edit_addition_and_removal_once(before, after, expected):
    assert passages_changed(before, after) == expected


def test_stale_questions_follow_the_earlier_runs_sources():
    previous = _run_of(
        [_document("a.md", ("one", "two", "three")), _document("b.md", ("x",)), _document("c.md", ("y",)),
         _document("d.md", ("z",), known=False), _document("e.md", None)],
        [_question("Q a", ("a.md",), FROM_COLUMN, row=3), _question("Q b", ("b.md",)), _question("Q c", ("c.md",)),
         _question("Q d", ("d.md",)), _question("Q e", ("e.md",)), _question("Q two", ("a.md", "b.md"), FROM_COLUMN),
         _question("Q off", ()), _question("Q gone", ("b.md",)), _question("Q elsewhere", ("nowhere.md",))])
    current = _run_of(
        [_document("a.md", ("one", "TWO", "three", "four")), _document("c.md", ("y",)), _document("d.md", ("zz",)),
         _document("e.md", ("new",)), _document("b2.md", ("x",))],
        [_question("Q a", None, row=None), _question("Q b", ("b2.md",)), _question("Q c", ("c.md",)),
         _question("Q d", ("d.md",)), _question("Q e", ("e.md",)), _question("Q two", ("a.md",)),
         _question("Q off", ()), _question("Q elsewhere", ("b2.md",)), _question("Q new", ("a.md",))], hour=9)
    found = [(q.question, q.source, q.reason, q.passages_changed, q.row, q.source_from)
             for q in stale_questions(previous, current)]
    assert found == [
        ("Q a", "a.md", CHANGED, 2, 3, FROM_COLUMN),  # its row at the earlier run when it has none now
        ("Q b", "b.md", REMOVED, None, 0, FROM_RETRIEVAL),  # what it retrieves now does not matter
        ("Q e", "e.md", CHANGED, None, 0, FROM_RETRIEVAL),  # the earlier passages are not known
        ("Q two", "a.md", CHANGED, 2, 0, FROM_COLUMN),
        ("Q two", "b.md", REMOVED, None, 0, FROM_COLUMN),
    ]  # c.md unchanged, d.md of unknown content, an off-topic question, one removed, a new one: none stale
    assert changes_since(previous, current, previous_run=4).to_dict()["questions_stale"][0] == {
        "question": "Q a", "row": 3, "source": "a.md", "source_from": FROM_COLUMN, "reason": CHANGED,
        "passages_changed": 2}
    unknown = _run_of(previous.documents, [_question("Q a", None, "", row=None)])
    assert stale_questions(unknown, current) is None and changes_since(unknown, current).questions_stale is None


def test_the_passages_to_replace_are_the_changed_documents_new_ones():
    previous = _run_of([_document("a.md", ("one", "two", "three")), _document("b.md", ("x",))],
                       [_question("Q a", ("a.md",)), _question("Q b", ("b.md",))])
    current = _run_of([_document("a.md", ("one", "TWO", "three", "four"))], previous.questions, hour=9)
    stale = stale_questions(previous, current)
    target = replacement_target(previous, stale, run=1)
    assert target.run == 1 and target.n_questions == 1
    assert target.documents == (("a.md", frozenset(passage_hash(p) for p in ("one", "two", "three"))),)
    chunks = ["one", "TWO", "three", "four", "x", "TWO"]
    documents = ["a.md", "a.md", "a.md", "a.md", "b.md", "c.md"]
    assert changed_passages(target, chunks, documents) == [1, 3]  # not another document's passage
    assert replacement_target(previous, None).documents == ()


def test_a_run_with_passages_and_sources_loads_back_exactly(tmp_path):
    previous = _run_of([_document("a.md", ("one", "two")), _document("b.md", None)],
                       [_question("Q a", ("a.md",), FROM_COLUMN, row=7), _question("Q b", None, "", row=None),
                        _question("Q c", (), "", row=2)])
    with HistoryStore(tmp_path / "h.sqlite") as store:
        loaded = store.load(store.record(previous).run)
    assert loaded == previous
    assert RunSnapshot.from_dict(json.loads(json.dumps(previous.to_dict()))) == previous


# ---------------------------------------------------------------- replacement questions for the changed passages


def test_replacement_questions_are_drafts_of_the_changed_passages_only_and_say_what_they_replace():
    from coverage_core.errors import ProviderError
    from coverage_core.suggest.replacements import REPLACES_STALE, replacement_questions
    from tests.test_gaps import DOCUMENTS, LABELS, TEXTS, VECTORS, _embed_by_words

    suggestions, failure = replacement_questions([6, 1], TEXTS, DOCUMENTS, VECTORS, LABELS, ["What is a violin?"])
    assert failure == ""
    assert [s.chunk for s in suggestions] == [6, 1]  # one each, in the passages' order, no other passage
    assert all(s.origin == REPLACES_STALE and s.cluster == int(LABELS[s.chunk]) for s in suggestions)
    assert all(s.document == DOCUMENTS[s.chunk] for s in suggestions)

    class Stopped:
        writes_languages = None

        def complete_text(self, *args, **kwargs):
            raise ProviderError("The model is not there.", "unavailable")

    written, failure = replacement_questions([6], TEXTS, DOCUMENTS, VECTORS, LABELS, [], writer=Stopped(),
                                             embed=_embed_by_words, support_threshold=0.5)
    assert failure == "The model is not there."
    assert [s.chunk for s in written] == [6] and written[0].origin == REPLACES_STALE  # a draft stands in


def test_the_gap_page_keeps_replacement_rows_and_words_their_origin():
    from coverage_core.suggest.questions import Suggestion
    from ui import formats
    from ui.views import gaps as view

    target = replacement_target(
        _run_of([_document("a.md", ("one", "two"))], [_question("Q a", ("a.md",))]),
        stale_questions(_run_of([_document("a.md", ("one", "two"))], [_question("Q a", ("a.md",))]),
                        _run_of([_document("a.md", ("one", "2"))], [_question("Q a", ("a.md",))])))
    chunks = [SimpleNamespace(text=text) for text in ("one", "2")]
    analysis = SimpleNamespace(corpus=SimpleNamespace(chunks=chunks, chunk_documents=["a.md", "a.md"]))
    assert view.replacement_passages(target, analysis) == [1]
    assert view.replacement_passages(None, analysis) == []
    rows = view.replacement_frame([Suggestion(cluster=2, text="What is 2?", origin="stale", document="a.md",
                                              passage="2", chunk=1)], ["one", "2 whole"])
    assert list(rows["origin"]) == ["stale"] and list(rows["passage"]) == ["2 whole"]
    assert formats.origin_words("stale") == "replaces a stale question"
    assert formats.origin_words("edited:stale") == "edited (from a replacement for a stale question)"
    fresh = view.suggestions_frame(SimpleNamespace(corpus=SimpleNamespace(chunks=[]), gaps=[]))
    assert list(view.merge_suggestions(rows, fresh)["question"]) == ["What is 2?"]  # outlives new gaps


def test_the_html_report_lists_the_stale_questions_escaped(by_column):
    from coverage_core.outputs.since_report import html_section

    since = dict(by_column["reports"]["r2"]["since"])
    page = html_section(since)
    assert f"<h3>Questions that went stale ({len(since['questions_stale'])})</h3>" in page
    since["questions_stale"] = [{"question": "<script>x</script>?", "row": 0, "source": "a.md", "reason": REMOVED}]
    assert "&lt;script&gt;x&lt;/script&gt;? (row 1): a.md removed" in html_section(since)
    assert "went stale" not in html_section({**since, "questions_stale": None})  # not known: no list


@pytest.mark.parametrize("kind, row", [
    ("passages", "abc"), ("passages", "XYZ" * 4), ("passages", 12),
    ("question_sources", [0, "guessed", None]), ("question_sources", [-1, "column", []]),
    ("question_sources", [0, "column", [3]]), ("question_sources", [0, "column"]),
])
def test_a_hand_edited_passage_or_source_entry_is_a_damaged_part(kind, row):
    from coverage_core.history.parts import ROW_CHECKS, DamagedPart

    with pytest.raises(DamagedPart):
        ROW_CHECKS[kind](row)
    assert ROW_CHECKS["passages"](None) is None and ROW_CHECKS["passages"]("0a" * 6) == "0a" * 6
