"""Against a real Arize Phoenix server (tests/phoenix/support.py; no mock of Phoenix): its traces read as the
query log, a dataset read as the test set, accepted questions written back and read again, every failure one
sentence with exit code 2, and the key sent to the named host only and written nowhere."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.traffic_documents import documents_sentence
from coverage_core.cli import main
from coverage_core.connectors import phoenix
from coverage_core.decisions import ACCEPTED, SuggestionDecision
from coverage_core.outputs.report import build_report, write_report
from tests.helpers import free_port
from tests.phoenix.conftest import ARTICLES, DATASET_NAME, PROJECT_NAME
from tests.phoenix.support import EXAMPLE, KOALA, recording_server, traffic_csv

KOALA_QUERIES = sum(times for _, times in KOALA) + 1  # and the one with an e-mail address


def _one_sentence(capsys) -> str:
    """The one line a refused run printed on stderr (nothing on a traceback's scale)."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coverage_core: "), captured.err
    assert "Traceback" not in captured.out + captured.err
    return lines[0]


def _accepted_report(analysis, path, questions) -> str:
    """A JSON report as the dashboard writes it after Apply, listing ``questions`` (dicts) as accepted."""
    write_report(build_report(analysis, {}, before=analysis, accepted=questions), path)
    return str(path)


# ---------------------------------------------------------------- traffic


@pytest.mark.slow
def test_the_example_traffic_from_phoenix_gives_the_figures_of_its_csv_log(phoenix_server, production,
                                                                           example_analysis, example_cache):
    """The target: the same traffic read from Phoenix's traces and from a CSV log gives the same report section,
    and Phoenix adds what production retrieval actually returned, beside the questions targeting each document."""
    from coverage_core.checks.runner import run_traffic_check
    from coverage_core.embeddings import make_embedder

    from_file = read_traffic(traffic_csv(production), "traffic.csv")
    log = phoenix.read_project_traffic(phoenix_server.address("projects", PROJECT_NAME), api_key=phoenix_server.key)
    assert log.queries == from_file.queries and log.counts.tolist() == from_file.counts.tolist()
    pd.testing.assert_frame_equal(log.weekly, from_file.weekly)
    assert any("[email]" in query for query in log.queries)  # masked before anything stores it
    assert log.warnings == [f"Read the Phoenix project '{PROJECT_NAME}' at {phoenix_server.url}: {len(production)} "
                            f"queries from its root spans; {len(production)} queries with the documents retrieval "
                            "returned."]

    embedder = make_embedder("local")
    expected = run_traffic_check(example_analysis, from_file, embedder, example_cache)
    found = run_traffic_check(example_analysis, log, embedder, example_cache)
    section = found.to_dict()
    retrieved = section.pop("retrieved_documents")
    assert section == expected.to_dict()
    sentence = documents_sentence(found.documents, log.retrieved.volume)
    assert found.headline().replace(f" {sentence}", "") == expected.headline()

    assert retrieved["n_queries_with_retrieval"] == len(production)
    rows = {row["document"]: row for row in retrieved["documents"]}
    targeted = dict(zip(example_analysis.documents["document"], example_analysis.documents["n_questions"]))
    assert rows["Koala.txt"] == {"document": "Koala.txt", "in_knowledge_base": True,
                                 "production_queries": KOALA_QUERIES,
                                 "production_share": round(KOALA_QUERIES / len(production), 6), "test_questions": 0}
    assert rows["kb/faq/account.md"]["in_knowledge_base"] is False  # production's own name: not in the knowledge base
    assert all(row["test_questions"] == targeted[name] for name, row in rows.items() if row["in_knowledge_base"])
    assert f"Koala.txt ({KOALA_QUERIES} queries)" in sentence


@pytest.mark.slow
def test_analyze_reads_a_dataset_as_questions_and_a_project_as_traffic(phoenix_server, production, test_dataset,
                                                                      tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(phoenix.API_KEY_VARIABLE, phoenix_server.key)
    monkeypatch.chdir(tmp_path)
    questions = phoenix_server.address("datasets", DATASET_NAME)
    traffic = phoenix_server.address("projects", PROJECT_NAME)
    out = tmp_path / "report.json"
    code = main(["analyze", "--docs", *(str(EXAMPLE / "docs" / f"{name}.txt") for name in ARTICLES),
                 "--questions", questions, "--traffic", traffic, "--out", str(out), "--junit",
                 str(tmp_path / "junit.xml"), "--html", str(tmp_path / "report.html"), "--save-analysis",
                 str(tmp_path / "saved"), "--cache-dir", str(tmp_path / "cache"), "--suggest", "0", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(out.read_text(encoding="utf-8"))
    assert len(report["questions"]) == len(test_dataset)
    assert report["config"]["inputs"]["questions_file"] == questions
    assert report["config"]["inputs"]["traffic_file"] == traffic
    assert report["retrieval"]["relevant_column"] == "source"  # the examples' metadata field, found by name
    koala = next(row for row in report["traffic"]["retrieved_documents"]["documents"] if row["document"] == "Koala.txt")
    assert (koala["production_queries"], koala["test_questions"]) == (KOALA_QUERIES, 0)
    assert "Production traffic:" in captured.out
    assert "no test question targets" in captured.out and f"Koala.txt ({KOALA_QUERIES} queries)" in captured.out
    # The key: in nothing printed, and in no file this run wrote (reports, saved analysis, caches).
    assert phoenix_server.key not in captured.out + captured.err
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(written) > 5
    assert not [path for path in written if phoenix_server.key.encode() in path.read_bytes()]


# ---------------------------------------------------------------- accepted questions


def test_push_accepted_writes_a_dataset_then_a_new_version_and_reads_back(phoenix_server, analysis, tmp_path,
                                                                         monkeypatch, capsys):
    from coverage_core.saved.analysis import save_analysis, zip_folder

    monkeypatch.setenv(phoenix.API_KEY_VARIABLE, phoenix_server.key)
    address = phoenix_server.address("datasets", "accepted questions")
    first = [{"question": "Where does the river end?", "origin": "local", "document": "alpha.txt",
              "passage": "river delta water flow."},
             {"question": "Who tunes a violin?", "origin": "you", "document": "", "passage": ""}]
    report = _accepted_report(analysis, tmp_path / "report.json", first)
    assert main(["push-accepted", report, "--to", address]) == 0
    assert capsys.readouterr().out.strip() == (f"Sent 2 accepted questions to the Phoenix dataset 'accepted questions' "
                                               f"at {phoenix_server.url} as a new dataset.")
    # The whole analysis, saved with one more accepted question (edited from the built-in model's).
    decisions = [SuggestionDecision(row["question"], row["origin"], ACCEPTED, document=row["document"],
                                    passage=row["passage"]) for row in first]
    decisions.append(SuggestionDecision("How long is a comet's tail?", "local", ACCEPTED, "How long is a tail?",
                                        document="<b>gamma</b>.md", passage="comet orbit ice tail."))
    save_analysis(analysis, tmp_path / "saved", report=json.loads((tmp_path / "report.json").read_text()),
                  decisions=decisions)
    (tmp_path / "analysis.zip").write_bytes(zip_folder(tmp_path / "saved"))
    assert main(["push-accepted", str(tmp_path / "analysis.zip"), "--to", address]) == 0
    assert capsys.readouterr().out.strip().endswith(
        "as a new version of the dataset; 2 questions were in it already.")

    questions = phoenix.read_dataset_questions(address, api_key=phoenix_server.key)
    assert questions.texts == [row["question"] for row in first] + ["How long is a comet's tail?"]
    client = phoenix_server.client()
    examples = {example["input"]["question"]: example
                for example in client.datasets.get_dataset(dataset="accepted questions").examples}
    comet = examples["How long is a comet's tail?"]
    assert comet["metadata"] == {"origin": "edited:local", "source_document": "<b>gamma</b>.md"}
    assert comet["output"] == {"source_passage": "comet orbit ice tail."}
    assert len(client.datasets.get_dataset_versions(dataset="accepted questions")) == 2
    # Everything there already: nothing sent, no version added.
    assert main(["push-accepted", report, "--to", address]) == 0
    assert capsys.readouterr().out.startswith("Nothing was sent to the Phoenix dataset 'accepted questions'")
    assert len(client.datasets.get_dataset_versions(dataset="accepted questions")) == 2


def test_a_dataset_keeps_its_own_question_field(phoenix_server, tmp_path):
    """Questions pushed to a dataset whose examples ask under ``query`` go there too, so its experiments run."""
    client = phoenix_server.client()
    client.datasets.create_dataset(name="support queries", inputs=[{"query": "How do I log in?"}],
                                   outputs=[{"answer": "With your e-mail."}])
    address = phoenix_server.address("datasets", "support queries")
    pushed = phoenix.push_accepted(address, [phoenix.AcceptedQuestion("How do I log out?", "traffic")],
                                   api_key=phoenix_server.key)
    assert (pushed.n_sent, pushed.created) == (1, False)
    inputs = [example["input"] for example in client.datasets.get_dataset(dataset="support queries").examples]
    assert sorted(fields["query"] for fields in inputs) == ["How do I log in?", "How do I log out?"]
    assert phoenix.read_dataset_questions(address, api_key=phoenix_server.key).question_column == "query"


# ---------------------------------------------------------------- refusals


@pytest.fixture
def small_inputs(tmp_path):
    """A one-document knowledge base and a one-question test set: enough to reach the Phoenix requests."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "drum.txt").write_text("A drum is a percussion instrument played with sticks.", encoding="utf-8")
    (tmp_path / "questions.csv").write_text("question\nWhat is a drum?\n", encoding="utf-8")
    return ["--docs", str(tmp_path / "kb"), "--questions", str(tmp_path / "questions.csv"), "--out",
            str(tmp_path / "report.json"), "--quiet"]


@pytest.mark.parametrize("case, words", [
    ("unreachable", "cannot be reached; check the address and that the server is running."),
    ("unknown project", "The Phoenix project 'no such project' at "),
    ("unknown dataset", "The Phoenix dataset 'no such dataset' at "),
    ("a dataset given as traffic", "--traffic: phoenix+http://"),
    ("no key", "asks for an API key; set PHOENIX_API_KEY to an API key of that server."),
    ("a wrong key", "did not accept the key in PHOENIX_API_KEY"),
])
def test_each_failure_is_one_sentence_and_exit_code_2(case, words, phoenix_server, production, small_inputs,
                                                      monkeypatch, capsys):
    monkeypatch.setenv(phoenix.API_KEY_VARIABLE, phoenix_server.key)
    project = phoenix_server.address("projects", PROJECT_NAME)
    extra = {
        "unreachable": ["--traffic", f"phoenix+http://127.0.0.1:{free_port()}/projects/x"],
        "unknown project": ["--traffic", phoenix_server.address("projects", "no such project")],
        "unknown dataset": ["--questions", phoenix_server.address("datasets", "no such dataset")],
        "a dataset given as traffic": ["--traffic", phoenix_server.address("datasets", DATASET_NAME)],
        "no key": ["--traffic", project],
        "a wrong key": ["--traffic", project],
    }[case]
    if case == "no key":
        monkeypatch.delenv(phoenix.API_KEY_VARIABLE)
    if case == "a wrong key":
        monkeypatch.setenv(phoenix.API_KEY_VARIABLE, "not-the-key")
    assert main(["analyze", *small_inputs, *extra]) == 2
    line = _one_sentence(capsys)
    assert words in line and line.endswith(".")
    assert "not-the-key" not in line and phoenix_server.key not in line


def test_push_accepted_to_a_server_that_is_not_there_is_one_sentence(analysis, tmp_path, capsys):
    report = _accepted_report(analysis, tmp_path / "report.json", [{"question": "Why?"}])
    assert main(["push-accepted", report, "--to", f"phoenix+http://127.0.0.1:{free_port()}/datasets/x"]) == 2
    assert "cannot be reached" in _one_sentence(capsys)


# ---------------------------------------------------------------- the key


def test_the_key_goes_to_the_named_host_only(phoenix_server, production, analysis, tmp_path, monkeypatch, capsys):
    """Proxies, Phoenix's own variables and a .env.phoenix file all name another local server: it hears nothing.
    A named host that redirects gets the key (it was named) and the redirect is not followed."""
    report = _accepted_report(analysis, tmp_path / "report.json", [{"question": "Why is the sky blue?"}])
    key = phoenix_server.key
    monkeypatch.chdir(tmp_path)
    with recording_server() as other:
        for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                         "PHOENIX_ENDPOINT", "PHOENIX_COLLECTOR_ENDPOINT", "PHOENIX_HOST", "PHOENIX_BASE_URL",
                         "OTEL_EXPORTER_OTLP_ENDPOINT"):
            monkeypatch.setenv(variable, other.url)
        monkeypatch.setenv("NO_PROXY", "")
        monkeypatch.setenv("no_proxy", "")
        monkeypatch.setenv("PHOENIX_CLIENT_HEADERS", "authorization=Bearer%20from-the-environment")
        (tmp_path / ".env.phoenix").write_text(f"PHOENIX_ENDPOINT={other.url}\nPHOENIX_API_KEY=from-a-file\n",
                                               encoding="utf-8")
        monkeypatch.setenv(phoenix.API_KEY_VARIABLE, key)
        assert main(["push-accepted", report, "--to", phoenix_server.address("datasets", "key check")]) == 0
        log = phoenix.read_project_traffic(phoenix_server.address("projects", PROJECT_NAME), api_key=key)
        assert log.n_queries == len(production)
        assert other.requests == []

        with recording_server(status=307, location=other.url) as named:
            assert main(["push-accepted", report, "--to", f"phoenix+{named.url}/datasets/x"]) == 2
            capsys.readouterr()
        assert named.requests and named.authorizations == [f"Bearer {key}"] * len(named.requests)
        assert other.requests == []


def test_the_dashboard_sends_the_accepted_questions_with_the_key_typed(phoenix_server, analysis, monkeypatch):
    """The Gap analysis page: the accepted rows go to the dataset named, with the key typed in its password
    field; a wrong key is one sentence in the page's words, and no key is shown."""
    from tests.app_support import run_page
    from ui import flow, state
    from ui.views import gaps as gaps_view

    monkeypatch.delenv(phoenix.API_KEY_VARIABLE, raising=False)
    monkeypatch.setattr(flow, "require_analysis", lambda: analysis)
    monkeypatch.setattr(flow, "gaps_for", lambda *args, **kwargs: analysis)
    rows = pd.DataFrame([{"accept": True, "question": "What flows into the delta?", "cluster": 0, "origin": "local",
                          "document": "alpha.txt", "passage": "river delta water flow.", "original": ""},
                         {"accept": False, "question": "Not sent?", "cluster": 1, "origin": "local",
                          "document": "beta.txt", "passage": "violin string bow music.", "original": ""}])
    at = run_page("pages/4_gaps.py", {state.SUGGESTIONS_EDITED: gaps_view.normalize_suggestions(rows)})
    at.text_input(key=state.W_PHOENIX_SERVER).set_value(phoenix_server.url + "/")
    at.text_input(key=state.W_PHOENIX_DATASET).set_value("from the dashboard")
    at.text_input(key=state.W_PHOENIX_KEY).set_value("a-wrong-key")
    at.button(key=state.W_PHOENIX_SEND).click().run()
    assert not at.exception
    errors = [error.value for error in at.error]
    assert any("did not accept the key in the API key field" in error for error in errors), errors
    at.text_input(key=state.W_PHOENIX_KEY).set_value(phoenix_server.key)
    at.button(key=state.W_PHOENIX_SEND).click().run()
    successes = [success.value for success in at.success]
    assert any("Sent 1 accepted question to the Phoenix dataset" in success for success in successes), successes
    page = json.dumps([element.value for kind in ("markdown", "caption", "success", "error")
                       for element in at.get(kind)])
    assert phoenix_server.key not in page and "a-wrong-key" not in page and "PHOENIX_API_KEY" not in page
    (example,) = phoenix_server.client().datasets.get_dataset(dataset="from the dashboard").examples
    assert example["input"] == {"question": "What flows into the delta?"}
    assert example["output"] == {"source_passage": "river delta water flow."}
    assert example["metadata"] == {"origin": "local", "source_document": "alpha.txt"}


def test_a_dashboard_address_with_a_password_is_refused_in_its_words():
    from coverage_core.errors import InputError
    from ui.phoenix_push import dataset_address

    with pytest.raises(InputError, match="type the key in the API key field instead") as raised:
        dataset_address("http://admin:hunter2@127.0.0.1:6006", "tests")
    assert "hunter2" not in str(raised.value)
    with pytest.raises(InputError, match="as it opens in a browser"):
        dataset_address("localhost:6006", "tests")
    assert str(dataset_address("https://px.example.org/root/", "my tests")) == \
        "phoenix+https://px.example.org/root/datasets/my%20tests"
