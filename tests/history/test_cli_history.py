"""``analyze`` with a history: compared with the earlier run, recorded, gated; end to end through ``cli.main``.

A small word-hashing embedder stands in for the model (as in tests/test_cli_contract.py), so nothing here loads
it. The story: run 1 records two documents about instruments and four questions; run 2 adds two documents about
animals that no question asks about and removes one question.
"""

import contextlib
import io
import json
import shutil
import socket
import xml.etree.ElementTree as ET

import pytest

from coverage_core.cli import main
from coverage_core.history import HISTORY_ENV, RECORD_ENV
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT

DOCS = PROJECT / "examples" / "wiki-qa" / "docs"
FIRST_DOCUMENTS = ("Drum.txt", "Flute.txt")
ADDED_DOCUMENTS = ("Koala.txt", "Octopus.txt")
QUESTIONS = ["What is a drum?", "How is a drum played?", "How is a flute played?", "Who plays the flute in an orchestra?"]
REMOVED_QUESTION = QUESTIONS[-1]


def _use_word_embedder(patch: pytest.MonkeyPatch, cache) -> None:
    from coverage_core import embedding_steps

    patch.setenv("COVERAGE_CORE_CACHE_DIR", str(cache))
    patch.delenv(HISTORY_ENV, raising=False)
    patch.delenv(RECORD_ENV, raising=False)
    patch.setattr(embedding_steps, "build_embedder", lambda config, api_key=None: FakeEmbedder(
        model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64))


@pytest.fixture
def word_embedder(tmp_path, monkeypatch):
    _use_word_embedder(monkeypatch, tmp_path / "embedding-cache")


def _write_questions(path, questions):
    path.write_text("question\n" + "".join(f'"{q}"\n' for q in questions), encoding="utf-8")
    return path


def _knowledge_base(folder, names=FIRST_DOCUMENTS, questions=QUESTIONS):
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(DOCS / name, docs / name)
    return docs, _write_questions(folder / "questions.csv", questions)


def _run(args):
    """``main(args)`` with what it printed: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _analyze(docs, questions, out, *extra):
    # --suggest 0: no gap questions are written, so the bundled writing model never starts.
    return ["analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(out), "--clusters", "3",
            "--suggest", "0", "--quiet", *extra]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run 1 recorded under main; run 2 (two documents added, one question removed) with every output and gate."""
    work = tmp_path_factory.mktemp("history-runs")
    history = work / "history.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        _use_word_embedder(patch, work / "embedding-cache")
        docs, questions = _knowledge_base(work)
        first = _run(_analyze(docs, questions, work / "r1.json", "--record", "main", "--history", str(history)))
        for name in ADDED_DOCUMENTS:
            shutil.copy(DOCS / name, docs / name)
        _write_questions(questions, QUESTIONS[:-1])
        second = _run(_analyze(docs, questions, work / "r2.json", "--record", "main", "--history", str(history),
                               "--junit", str(work / "r2.xml"), "--html", str(work / "r2.html"),
                               "--fail-on-new-untested", "--fail-on-drop", "0.5"))
        # The same inputs again, compared with run 2: nothing fell, nothing new.
        third = _run(_analyze(docs, questions, work / "r3.json", "--record", "main", "--history", str(history),
                              "--fail-on-new-untested", "--fail-on-drop", "0.5"))
    reports = [json.loads((work / f"r{n}.json").read_text()) for n in (1, 2, 3)]
    return dict(work=work, history=history, runs=[first, second, third], reports=reports)


def test_the_first_run_has_no_since_and_is_recorded_as_run_1(two_runs):
    code, out, err = two_runs["runs"][0]
    assert code == 0, err
    assert "since" not in two_runs["reports"][0]
    assert f"No earlier run labelled main in {two_runs['history']} to compare with; this is the first." in out
    assert f"Recorded as run 1 (main) in {two_runs['history']}." in out
    from coverage_core.history import HistoryStore

    with HistoryStore(two_runs["history"]) as store:
        runs = store.runs()
    assert [(run.run, run.label) for run in runs] == [(1, "main"), (2, "main"), (3, "main")]
    assert runs[0].headline["tested_share"] == pytest.approx(two_runs["reports"][0]["metrics"]["tested_share"])


def test_the_second_run_names_the_new_untested_documents_and_the_removed_question(two_runs):
    since = two_runs["reports"][1]["since"]
    assert since["run"] == 1 and since["label"] == "main"
    added = {d["name"]: d for d in since["documents_added"]}
    assert set(added) == set(ADDED_DOCUMENTS)
    assert all(d["is_untested"] for d in added.values())
    assert since["documents_removed"] == [] and since["documents_changed"] == []
    assert since["questions_removed"] == [REMOVED_QUESTION] and since["questions_added"] == []
    assert since["tested_share_change"] < 0
    share = [report["metrics"]["tested_share"] for report in two_runs["reports"][:2]]
    assert since["tested_share_change"] == pytest.approx(100 * (share[1] - share[0]), abs=1e-6)
    # The summary: the block names the earlier run, gives the reason and lists both documents as untested.
    code, out, err = two_runs["runs"][1]
    assert "Since run 1 (main, " in out and since["reason"] in out
    for name in ADDED_DOCUMENTS:
        assert f"    {name}: untested" in out
    assert "Questions: 0 added, 1 removed" in out
    assert "Recorded as run 2 (main)" in out


def test_the_since_section_is_exactly_what_the_history_computes(two_runs):
    from coverage_core.history import HistoryStore, changes_since

    with HistoryStore(two_runs["history"]) as store:
        expected = changes_since(store.load(1), store.load(2), previous_run=1).to_dict()
    assert two_runs["reports"][1]["since"] == json.loads(json.dumps(expected))


def test_gates_fail_after_everything_is_written_and_recorded(two_runs):
    code, out, err = two_runs["runs"][1]
    assert code == 1
    assert "more than the allowed 0.5 (--fail-on-drop)" in err
    assert "2 documents added or changed since run 1" in err and all(name in err for name in ADDED_DOCUMENTS)
    assert "Traceback" not in err
    assert (two_runs["work"] / "r2.xml").exists() and (two_runs["work"] / "r2.html").exists()
    assert "Recorded as run 2 (main)" in out


def test_gates_pass_when_nothing_fell_and_nothing_is_new(two_runs):
    code, out, err = two_runs["runs"][2]
    assert code == 0, err
    since = two_runs["reports"][2]["since"]
    assert since["run"] == 2 and since["tested_share_change"] == pytest.approx(0, abs=1e-9)
    assert since["documents_added"] == [] and since["questions_removed"] == []


def test_junit_fails_one_case_per_new_untested_document_and_the_drop(two_runs):
    root = ET.parse(two_runs["work"] / "r2.xml").getroot()
    suite = next(s for s in root.findall("testsuite") if s.get("name") == "coverage.history")
    failed = {case.get("name"): case.find("failure").get("message") for case in suite.findall("testcase")
              if case.find("failure") is not None}
    for name in ADDED_DOCUMENTS:
        assert failed[name] == f"{name} was added since run 1 and no question tests it."
    assert "tested share since run 1" in failed
    assert suite.get("failures") == str(len(failed)) == "3"


def test_the_html_report_says_what_changed(two_runs):
    page = (two_runs["work"] / "r2.html").read_text(encoding="utf-8")
    section = page[page.index("What changed since run 1"):]
    section = section[:section.index("</section>")]
    assert all(name in section for name in ADDED_DOCUMENTS)
    assert "Questions removed (1)" in section and "Who plays the flute in an orchestra?" in section


def test_diff_reads_reports_that_carry_since(two_runs):
    work = two_runs["work"]
    code, out, err = _run(["diff", str(work / "r1.json"), str(work / "r2.json"), "--json", str(work / "d.json")])
    assert code == 0, err
    assert all(name in out for name in ADDED_DOCUMENTS)


@pytest.mark.parametrize("since", ["1", "main"])
def test_since_names_a_run_or_a_label(two_runs, tmp_path, word_embedder, since):
    work = two_runs["work"]
    history = tmp_path / "copy.sqlite"
    shutil.copy(two_runs["history"], history)
    code, out, err = _run(_analyze(work / "docs", work / "questions.csv", tmp_path / "r.json", "--history",
                                   str(history), "--since", since))
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    expected_run = 1 if since == "1" else 3  # a label names its last run
    assert report["since"]["run"] == expected_run
    assert "Recorded as" not in out  # compared only: nothing is recorded without a label


def test_environment_variables_choose_the_history_and_the_label(tmp_path, word_embedder, monkeypatch):
    docs, questions = _knowledge_base(tmp_path)
    history = tmp_path / "from-env.sqlite"
    monkeypatch.setenv(HISTORY_ENV, str(history))
    monkeypatch.setenv(RECORD_ENV, "release-1")
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json"))
    assert code == 0, err
    assert f"Recorded as run 1 (release-1) in {history}." in out
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json"))
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["since"]["label"] == "release-1"


def test_a_plain_analyze_creates_no_history(tmp_path, word_embedder, monkeypatch):
    from coverage_core.history import DEFAULT_HISTORY_FILE

    docs, questions = _knowledge_base(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json"))
    assert code == 0, err
    assert not (tmp_path / DEFAULT_HISTORY_FILE).exists()
    assert "since" not in json.loads((tmp_path / "r.json").read_text())
    assert "this is the first" not in out and "Recorded" not in out
    # --record alone writes the default file in the working directory.
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json", "--record", "main"))
    assert code == 0, err
    assert (tmp_path / DEFAULT_HISTORY_FILE).is_file()


def _one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coverage_core: ") and "Traceback" not in err, err
    return lines[0]


def test_a_damaged_history_stops_before_any_work_and_is_left_as_it_was(tmp_path, word_embedder):
    docs, questions = _knowledge_base(tmp_path)
    history = tmp_path / "damaged.sqlite"
    damaged = b"SQLite format 3\x00" + bytes(range(256)) * 64
    history.write_bytes(damaged)
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json", "--record", "main", "--history",
                                   str(history)))
    assert code == 2
    assert str(history) in _one_sentence(err)
    assert history.read_bytes() == damaged
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "embedding-cache").exists()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_server_is_one_sentence_that_never_shows_the_password(tmp_path, word_embedder):
    docs, questions = _knowledge_base(tmp_path)
    url = f"postgresql://coverage:secret@127.0.0.1:{_closed_port()}/history"
    code, out, err = _run(_analyze(docs, questions, tmp_path / "r.json", "--record", "main", "--history", url,
                                   "--junit", str(tmp_path / "r.xml")))
    assert code == 2
    sentence = _one_sentence(err)
    assert "coverage:***@127.0.0.1" in sentence
    assert "secret" not in out + err
    assert not any("secret" in path.read_text(errors="replace") for path in tmp_path.rglob("*") if path.is_file())
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("extra, expected", [
    (["--history", "{out}"], "--history {out} is also the --out file"),
    (["--fail-on-drop", "2"], "--fail-on-drop compares with the last run recorded under the same label; add "
                              "--record LABEL"),
    (["--fail-on-new-untested", "--fail-on-drop", "1"], "--fail-on-drop and --fail-on-new-untested compare"),
    (["--record", "main", "--fail-on-drop", "-1"], "--fail-on-drop must be"),
    (["--keep-document-text"], "--keep-document-text keeps the documents' text"),
    (["--record", " "], "--record is empty"),
    (["--since", "1", "--history", "{missing}"], "does not exist yet"),
])
def test_history_flags_are_checked_before_anything_is_read(tmp_path, word_embedder, extra, expected):
    docs, questions = _knowledge_base(tmp_path)
    out = tmp_path / "r.json"
    names = dict(out=out, missing=tmp_path / "missing.sqlite")
    code, _, err = _run(_analyze(docs, questions, out, *(part.format(**names) for part in extra)))
    assert code == 2
    assert expected.format(**names) in _one_sentence(err)
    assert not out.exists() and not (tmp_path / "embedding-cache").exists()
    assert not names["missing"].exists()


def test_kept_document_text_is_only_stored_when_asked_for(tmp_path, word_embedder):
    from coverage_core.history import HistoryStore

    docs, questions = _knowledge_base(tmp_path)
    history = tmp_path / "h.sqlite"
    assert _run(_analyze(docs, questions, tmp_path / "r.json", "--record", "a", "--history", str(history)))[0] == 0
    assert _run(_analyze(docs, questions, tmp_path / "r.json", "--record", "b", "--history", str(history),
                         "--keep-document-text"))[0] == 0
    with HistoryStore(history) as store:
        plain, kept = store.load(1), store.load(2)
    assert all(document.text is None for document in plain.documents)
    assert {document.name: document.text for document in kept.documents} == {
        name: (docs / name).read_text(encoding="utf-8") for name in FIRST_DOCUMENTS}
