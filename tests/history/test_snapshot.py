"""What a run records: the snapshot of a real report, its fingerprints, and its exact round trip."""

import dataclasses
import hashlib
import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from coverage_core.errors import InputError
from coverage_core.history import RunSnapshot, snapshot_of, snapshot_of_analysis, topic_documents_of
from coverage_core.history.snapshot import TOPIC_DOCUMENTS_KEPT, question_hash
from coverage_core.outputs.report import build_report
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT, measured_analysis

EXAMPLE = PROJECT / "examples" / "wiki-qa"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def small_run():
    """Four documents of the bundled example measured with word vectors (no model, no gap suggestions), and its
    report."""
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions

    documents = read_documents([EXAMPLE / "docs"]).documents[:4]
    questions = read_questions(EXAMPLE / "questions.csv")
    analysis = measured_analysis(documents, questions, FakeEmbedder(vectors="words", width=96, max_tokens=400))
    return analysis, build_report(analysis)


def test_a_snapshot_of_a_real_report_holds_its_figures_and_fingerprints(small_run):
    analysis, report = small_run
    snapshot = snapshot_of_analysis(analysis, report, label="main")
    assert snapshot.label == "main" and snapshot.recorded_at.tzinfo is not None
    assert snapshot.headline["tested_share"] == pytest.approx(report["metrics"]["tested_share"])
    assert snapshot.headline["n_chunks"] == len(analysis.corpus.chunks)
    assert snapshot.headline["n_tested_chunks"] == sum(entry["n_tested"] for entry in report["documents"])
    assert snapshot.headline["n_gaps"] == sum(cluster["is_gap"] for cluster in report["clusters"])
    assert snapshot.support_threshold == pytest.approx(report["calibration"]["support_threshold"])
    assert snapshot.provider == report["config"]["embedding"]["provider"] and snapshot.model
    texts = {document.name: document.text for document in analysis.corpus.documents}
    assert [d.name for d in snapshot.documents] == [entry["name"] for entry in report["documents"]]
    for state, entry in zip(snapshot.documents, report["documents"]):
        assert state.content_hash == sha256(texts[state.name])
        assert (state.n_chunks, state.is_untested, state.is_undertested) == (
            entry["n_chunks"], entry["is_untested"], entry["is_undertested"])
    assert len(snapshot.questions) == len({" ".join(q["text"].split()) for q in report["questions"]})
    assert [t.label for t in snapshot.topics] == [cluster["label"] for cluster in report["clusters"]]


def test_each_topic_lists_its_largest_documents_by_content_hash(small_run):
    analysis, report = small_run
    snapshot = snapshot_of_analysis(analysis, report)
    hash_of = {document.name: sha256(document.text) for document in analysis.corpus.documents}
    expected = Counter((int(label), hash_of[chunk.document])
                       for label, chunk in zip(analysis.clustering.labels, analysis.corpus.chunks))
    for cluster, topic in zip(report["clusters"], snapshot.topics):
        assert topic.n_chunks == cluster["size"] == sum(chunks for _, chunks in topic.documents)
        assert dict(topic.documents) == {h: n for (label, h), n in expected.items() if label == cluster["id"]}
        assert [n for _, n in topic.documents] == sorted((n for _, n in topic.documents), reverse=True)


def test_topic_documents_of_counts_a_topics_chunks_in_each_document(analysis):
    members = topic_documents_of(analysis)
    expected = Counter(zip(analysis.clustering.labels.tolist(), analysis.corpus.chunk_documents))
    assert {(topic, name): n for topic, pairs in members.items() for name, n in pairs} == dict(expected)
    assert sum(n for pairs in members.values() for _, n in pairs) == len(analysis.corpus.chunks)


def test_a_document_without_text_is_hashed_from_its_chunks(analysis):
    snapshot = snapshot_of_analysis(analysis, build_report(analysis))
    for state in snapshot.documents:
        texts = [chunk.text for chunk in analysis.corpus.chunks if chunk.document == state.name]
        assert state.content_hash == sha256("\n\n".join(texts))
    assert all(topic.documents for topic in snapshot.topics)


def test_a_report_alone_has_unknown_contents_and_topics_without_members(analysis):
    snapshot = snapshot_of(build_report(analysis))
    assert {state.content_hash for state in snapshot.documents} == {""}
    assert all(topic.documents == () for topic in snapshot.topics)


def test_topics_keep_at_most_the_largest_members(analysis):
    report = build_report(analysis)
    names = [f"doc-{i}.txt" for i in range(TOPIC_DOCUMENTS_KEPT + 5)]
    report["documents"] = [{"name": name, "n_chunks": i + 1} for i, name in enumerate(names)]
    documents = [dataclasses.replace(analysis.corpus.documents[0], name=name, text=f"text {name}") for name in names]
    members = {cluster["id"]: [(name, i + 1) for i, name in enumerate(names)] for cluster in report["clusters"]}
    snapshot = snapshot_of(report, documents, topic_documents=members)
    kept = snapshot.topics[0].documents
    assert len(kept) == TOPIC_DOCUMENTS_KEPT
    assert kept[0] == (sha256(f"text {names[-1]}"), len(names))


def test_repeated_questions_are_listed_once_whatever_their_spacing(analysis):
    report = build_report(analysis)
    first = report["questions"][0]
    report["questions"].append({**first, "text": "  " + first["text"].replace(" ", "   \n") + " "})
    snapshot = snapshot_of(report)
    hashes = [q.text_hash for q in snapshot.questions]
    assert len(hashes) == len(set(hashes)) == len({q["text"] for q in report["questions"]}) - 1
    assert question_hash(first["text"]) in hashes


def test_document_text_is_stored_only_when_asked(small_run):
    analysis, report = small_run
    text = analysis.corpus.documents[0].text
    plain = snapshot_of_analysis(analysis, report)
    assert all(state.text is None for state in plain.documents)
    recorded = json.dumps(plain.to_dict())
    assert text[:200] not in recorded and all("text" not in entry for entry in plain.to_dict()["documents"])
    kept = snapshot_of_analysis(analysis, report, keep_text=True)
    assert {state.name: state.text for state in kept.documents}[analysis.corpus.documents[0].name] == text
    assert RunSnapshot.from_dict(json.loads(json.dumps(kept.to_dict()))) == kept


def test_the_round_trip_through_json_is_exact(small_run):
    analysis, report = small_run
    moment = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    snapshot = snapshot_of_analysis(analysis, report, label="release-1.2", recorded_at=moment)
    assert snapshot.recorded_at == moment and snapshot.recorded_at.utcoffset() == timedelta(0)
    record = json.loads(json.dumps(snapshot.to_dict(), allow_nan=False))
    assert record["recorded_at"] == "2026-03-01T07:30:15.123456+00:00"
    back = RunSnapshot.from_dict(record)
    assert back == snapshot
    assert isinstance(back.documents, tuple) and isinstance(back.topics[0].documents, tuple)
    assert all(isinstance(pair, tuple) for topic in back.topics for pair in topic.documents)
    assert back.to_dict() == snapshot.to_dict()


def _decisions():
    """The rows of a suggestions table as the dashboard makes them (ui.views.decisions), with a numpy cluster id."""
    import numpy as np

    from coverage_core.decisions import SuggestionDecision

    return [
        SuggestionDecision("Where does the delta flow?", "local", "accepted", "Where does the delta flow?",
                           np.int64(0), "alpha.txt", "The river delta …"),
        SuggestionDecision("How wide is the river  mouth?", "edited:local", "accepted", "How wide is the river?",
                           1, "alpha.txt", "The river is wide …"),
        SuggestionDecision("Which bow suits a violin?", "llm", "open", "Which bow suits a violin?", 2, "beta.txt"),
        SuggestionDecision("What are violin strings made of?", "draft", "open", "What is a string?", 2, "beta.txt"),
        SuggestionDecision("Which rivers form a delta?", "you", "accepted"),
        SuggestionDecision("What is a comet's tail?", "local", "rejected", "What is a comet's tail?", 0,
                           "<b>gamma</b>.md", "A comet …"),
    ]


def test_the_decisions_acted_on_are_kept_without_passages_and_round_trip_exactly(small_run):
    analysis, report = small_run
    made = _decisions()
    snapshot = snapshot_of_analysis(analysis, report, label="main", decisions=iter(made))  # read once only
    assert [d.question for d in snapshot.decisions] == [d.question for i, d in enumerate(made) if i != 2]
    assert all(d.passage == "" for d in snapshot.decisions)  # the knowledge base's text is not kept
    assert type(snapshot.decisions[0].cluster) is int and snapshot.decisions[3].cluster is None
    assert snapshot.decisions[1].origin == "local" and snapshot.decisions[1].edited
    assert (snapshot.headline["n_accepted_suggestions"], snapshot.headline["n_edited_suggestions"],
            snapshot.headline["n_rejected_suggestions"]) == (3, 2, 1)  # the counts stay, from the decisions
    record = json.loads(json.dumps(snapshot.to_dict(), allow_nan=False))
    assert record["decisions"][4] == {"decision": "rejected", "question": "What is a comet's tail?",
                                      "original": "What is a comet's tail?", "origin": "local", "cluster": 0,
                                      "document": "<b>gamma</b>.md"}
    assert "The river delta" not in json.dumps(record)
    back = RunSnapshot.from_dict(record)
    assert back == snapshot and back.to_dict() == snapshot.to_dict() and isinstance(back.decisions, tuple)
    none_decided = snapshot_of_analysis(analysis, report, decisions=[])
    assert none_decided.decisions == () and RunSnapshot.from_dict(none_decided.to_dict()).decisions == ()


def test_a_snapshot_without_decisions_has_none_known_and_so_has_a_record_before_they_were_kept(small_run):
    analysis, report = small_run
    snapshot = snapshot_of_analysis(analysis, report)
    assert snapshot.decisions is None and "n_accepted_suggestions" not in snapshot.headline
    record = snapshot.to_dict()
    assert record["decisions"] is None and RunSnapshot.from_dict(record).decisions is None
    del record["decisions"]  # as a record written before decisions were kept
    assert RunSnapshot.from_dict(record) == snapshot


def test_traffic_keeps_its_figures_and_none_of_its_queries(analysis):
    report = build_report(analysis)
    query = "how do I reset my secret password"
    report["traffic"] = {"n_queries": 40, "n_distinct": 12, "tested_share_weighted": 0.5,
                         "topics": [{"label": "accounts", "examples": [query]}],
                         "unanswered": {"examples": [query]}, "unneeded_tests": []}
    snapshot = snapshot_of(report)
    assert snapshot.traffic == {"n_queries": 40, "n_distinct": 12, "tested_share_weighted": 0.5, "n_topics": 1,
                                "n_unneeded_tests": 0}
    assert query not in json.dumps(snapshot.to_dict())
    assert snapshot_of(build_report(analysis)).traffic is None


def _damaged(record: dict, change) -> dict:
    record = json.loads(json.dumps(record))
    change(record)
    return record


DAMAGES = {
    "empty": lambda r: r.clear(),
    "a document that is no object": lambda r: r["documents"].append("x.txt"),
    "missing model": lambda r: r.pop("model"),
    "chunks as text": lambda r: r["documents"][0].update(n_chunks="12"),
    "share as a flag": lambda r: r["documents"][0].update(tested_share=True),
    "verdict as a number": lambda r: r["topics"][0].update(is_gap=1),
    "bad date": lambda r: r.update(recorded_at="yesterday"),
    "members not pairs": lambda r: r["topics"][0].update(documents=[["abc"]]),
    "questions not a list": lambda r: r.update(questions={"a": 1}),
    "headline of lists": lambda r: r.update(headline={"tested_share": [0.5]}),
    "newer format": lambda r: r.update(format=99),
    "decisions not a list": lambda r: r.update(decisions={"accepted": 1}),
    "an unknown decision": lambda r: r.update(decisions=[{"decision": "maybe", "question": "q", "original": "",
                                                          "origin": "you", "cluster": None, "document": ""}]),
    "a decision as a list": lambda r: r.update(decisions=[{"decision": ["accepted"], "question": "q",
                                                           "original": "", "origin": "you", "cluster": None,
                                                           "document": ""}]),
    "a decision's cluster as text": lambda r: r.update(decisions=[{"decision": "accepted", "question": "q",
                                                                   "original": "", "origin": "you", "cluster": "1",
                                                                   "document": ""}]),
    "a decision without its question": lambda r: r.update(decisions=[{"decision": "accepted", "original": "",
                                                                      "origin": "you", "document": ""}]),
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_damaged_record_is_one_plain_sentence(small_run, damage):
    analysis, report = small_run
    record = _damaged(snapshot_of_analysis(analysis, report).to_dict(), DAMAGES[damage])
    with pytest.raises(InputError) as raised:
        RunSnapshot.from_dict(record)
    message = str(raised.value)
    assert "\n" not in message and message.endswith(".") and message.count(". ") == 0
    assert "coverage_core" in message or "damaged" in message


@pytest.mark.parametrize("record", [[], "run", None])
def test_a_record_that_is_no_object_is_refused(record):
    with pytest.raises(InputError, match="damaged"):
        RunSnapshot.from_dict(record)


def test_a_report_without_its_sections_is_refused():
    with pytest.raises(InputError, match="config"):
        snapshot_of({"schema_version": 6, "documents": []})
    with pytest.raises(InputError, match="not a JSON object"):
        snapshot_of(["not", "a", "report"])
