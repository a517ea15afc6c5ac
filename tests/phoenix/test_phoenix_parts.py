"""The Phoenix connector's parts that need no server: its addresses, the retrieved documents beside the tested
ones, the accepted questions read from the dashboard's downloads, and the command line's checks before any
request."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from coverage_core.checks.query_log import traffic_log
from coverage_core.checks.traffic_documents import document_table, documents_sentence, knowledge_base_name
from coverage_core.cli import main
from coverage_core.connectors import phoenix
from coverage_core.connectors.accepted import AcceptedQuestion, accepted_from_records, read_accepted
from coverage_core.decisions import ACCEPTED, OPEN, SuggestionDecision
from coverage_core.errors import InputError
from coverage_core.outputs.report import build_report, write_report


@pytest.mark.parametrize("text, server, kind, name", [
    ("phoenix+http://localhost:6006/projects/prod", "http://localhost:6006", "projects", "prod"),
    ("PHOENIX+HTTPS://phoenix.example.org/datasets/my%20tests/", "https://phoenix.example.org", "datasets",
     "my tests"),
    ("phoenix+http://[::1]:6006/phoenix/projects/rag", "http://[::1]:6006/phoenix", "projects", "rag"),
])
def test_an_address_names_the_server_and_the_project_or_dataset(text, server, kind, name):
    address = phoenix.parse_address(text)
    assert (address.server, address.kind, address.name) == (server, kind, name)
    assert phoenix.parse_address(str(address)) == address  # written back as it reads


@pytest.mark.parametrize("text, words", [
    ("phoenix+ftp://host/projects/a", "needs http:// or https://"),
    ("phoenix+http:///projects/a", "needs http:// or https:// and a host"),
    ("phoenix+http://host:99999/projects/a", "host or port that cannot be read"),
    ("phoenix+http://host/projects/", "names no Phoenix project or dataset"),
    ("phoenix+http://host/traces/a", "names no Phoenix project or dataset"),
    ("phoenix+http://host/projects/a?limit=3", "query or fragment"),
    ("http://host/projects/a", "is not a Phoenix address"),
])
def test_an_address_that_is_none_is_one_sentence(text, words):
    with pytest.raises(InputError) as raised:
        phoenix.parse_address(text)
    assert words in str(raised.value) and str(raised.value).count(". ") == 0


@pytest.mark.parametrize("text", ["phoenix+http://admin:s3cret-key@host:6006/projects/a",
                                  "phoenix+http://admin:s3cret-key@host:99999/projects/a",
                                  "phoenix+http://host:6006/projects/a?api_key=s3cret-key"])
def test_a_key_in_the_address_is_refused_and_never_repeated(text):
    with pytest.raises(InputError) as raised:
        phoenix.parse_address(text)
    assert "s3cret-key" not in str(raised.value)
    assert "PHOENIX_API_KEY" in str(raised.value) or "not repeated here" in str(raised.value)


def test_traces_come_from_a_project_and_questions_from_a_dataset():
    with pytest.raises(InputError, match="names a dataset, but traces are read from a project"):
        phoenix.parse_address("phoenix+http://h/datasets/a", phoenix.PROJECTS)
    with pytest.raises(InputError, match="names a project, but questions are read from and sent to a dataset"):
        phoenix.parse_address("phoenix+http://h/projects/a", phoenix.DATASETS)


@pytest.mark.parametrize("argv, flag", [
    (["--traffic", "phoenix+http://127.0.0.1:1/datasets/x"], "--traffic"),
    (["--traffic", "phoenix+http://127.0.0.1:1"], "--traffic"),
])
def test_the_command_line_refuses_a_bad_address_before_reading_anything(argv, flag, tmp_path, capsys):
    code = main(["analyze", "--docs", str(tmp_path / "missing"), "--questions", str(tmp_path / "missing.csv"),
                 "--out", str(tmp_path / "report.json"), *argv])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"coverage_core: {flag}: ")


def test_push_accepted_refuses_a_bad_address_before_reading_its_source(tmp_path, capsys):
    code = main(["push-accepted", str(tmp_path / "missing.json"), "--to", "phoenix+http://h/projects/x"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("coverage_core: --to: ")


# ---------------------------------------------------------------- documents production retrieval returns


def test_a_retrieved_document_is_the_knowledge_bases_by_file_name_or_stem():
    documents = ["Koala.txt", "docs/Drum.md", "Flute.txt"]
    assert knowledge_base_name("kb/Koala.txt", documents) == "Koala.txt"
    assert knowledge_base_name("C:\\kb\\koala.TXT#chunk-3", documents) == "Koala.txt"
    assert knowledge_base_name("Drum", documents) == "docs/Drum.md"
    assert knowledge_base_name("https://wiki/Flute.html", documents) == "Flute.txt"
    assert knowledge_base_name("faq/account.md", documents) is None


def test_retrieved_documents_stand_beside_the_questions_that_target_them():
    frame = pd.DataFrame({
        "query": ["koalas?", "koalas?", "KOALAS?", "drums?", "password?"],
        "timestamp": ["2026-11-02"] * 5,
        "documents": [["kb/Koala.txt", "Koala.txt#2"], ["kb/Koala.txt"], [], ["Drum.txt", "x.md"], ["faq.md"]],
    })
    log = traffic_log(frame, "log", [], documents_column="documents")
    assert log.queries == ["koalas?", "drums?", "password?"] and log.retrieved.volume == 4
    table = document_table(log.retrieved, ["Koala.txt", "Drum.txt", "Flute.txt"],
                           {"Drum.txt": 5, "Flute.txt": 2, "Koala.txt": 0})
    rows = {row.document: row for row in table.itertuples(index=False)}
    # Two names of Koala.txt in one trace count that query once.
    assert (rows["Koala.txt"].production_queries, rows["Koala.txt"].test_questions) == (2, 0)
    assert rows["Koala.txt"].production_share == pytest.approx(0.5)
    assert not rows["faq.md"].in_knowledge_base and rows["Flute.txt"].production_queries == 0
    assert list(table["document"])[:2] == ["Koala.txt", "Drum.txt"]  # most retrieved first
    sentence = documents_sentence(table, log.retrieved.volume)
    assert sentence.startswith("Production retrieval returned 4 documents for 4 queries; no test question targets "
                               "3 of them, most retrieved first: Koala.txt (2 queries)")
    assert sentence.endswith(" 1 document the test questions target was never retrieved.")


def test_a_log_without_retrieval_has_none():
    frame = pd.DataFrame({"query": ["a?"], "documents": [[]]})
    assert traffic_log(frame, "log", [], documents_column="documents").retrieved is None
    assert traffic_log(frame[["query"]], "log", []).retrieved is None


# ---------------------------------------------------------------- the accepted questions


def test_accepted_questions_from_records_once_each():
    records = [{"question": " What  do koalas eat? ", "origin": "edited:local", "document": "Koala.txt",
                "passage": "Koalas eat\neucalyptus."},
               {"text": "What do koalas eat?"}, {"text": ""}, {"text": float("nan")}, {"question": "Why?"}]
    assert accepted_from_records(records) == [
        AcceptedQuestion("What do koalas eat?", "edited:local", "Koala.txt", "Koalas eat eucalyptus."),
        AcceptedQuestion("Why?"),
    ]


def test_accepted_questions_are_read_from_a_report_and_from_a_saved_analysis(analysis, tmp_path):
    from coverage_core.saved.analysis import save_analysis

    report = build_report(analysis, {}, before=analysis, accepted=[
        {"question": "Where does the river end?", "origin": "local", "document": "alpha.txt",
         "passage": "river delta water flow."}])
    write_report(report, tmp_path / "report.json")
    assert read_accepted(tmp_path / "report.json") == [
        AcceptedQuestion("Where does the river end?", "local", "alpha.txt", "river delta water flow.")]
    decisions = [SuggestionDecision("How long is a comet's tail?", "llm", ACCEPTED, "How long is a tail?",
                                    cluster=2, document="<b>gamma</b>.md", passage="comet orbit ice tail. " * 30),
                 SuggestionDecision("Not this one?", "local", OPEN)]
    save_analysis(analysis, tmp_path / "saved", report=report, decisions=decisions)
    (accepted,) = read_accepted(tmp_path / "saved")
    assert accepted.origin == "edited:llm" and len(accepted.passage) > 300  # the whole passage, not the report's
    plain = build_report(analysis, {})
    write_report(plain, tmp_path / "plain.json")
    with pytest.raises(InputError, match="holds no accepted question; on the dashboard's Gap analysis page"):
        read_accepted(tmp_path / "plain.json")
    (tmp_path / "not-a-report.json").write_text(json.dumps([1, 2]), encoding="utf-8")
    with pytest.raises(InputError):
        read_accepted(tmp_path / "not-a-report.json")
