"""What changed since an earlier run: documents, questions, topics, the tested share and its reason."""

import hashlib
import json
from datetime import datetime, timedelta, timezone

import pytest

from coverage_core.history import (
    DocumentChange,
    DocumentState,
    QuestionState,
    RunSnapshot,
    TopicChange,
    TopicState,
    changes_since,
)
from coverage_core.history.snapshot import question_hash

MINUS = "\N{MINUS SIGN}"
# The keys of the JSON report's `since` section, as issue 23 names them, plus the reason sentence and (issue 47)
# the settings and verdict counts that changed.
SINCE_KEYS = {"run", "label", "recorded_at", "tested_share_change", "documents_added", "documents_removed",
              "documents_changed", "questions_added", "questions_removed", "topics_lost", "topics_gained", "reason",
              "settings_changed", "verdicts_changed", "questions_stale"}
START = datetime(2026, 5, 4, 12, 0, tzinfo=timezone.utc)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def document(name, version=0, untested=False, share=None):
    share = (0.0 if untested else 0.6) if share is None else share
    return DocumentState(name, digest(f"{name} v{version}"), 10, share, untested, False)


def question(text, offtopic=False):
    return QuestionState(question_hash(text), text, offtopic)


def topic(label, members, share=0.6, gap=None):
    """A topic of the documents named in ``members`` ({name: chunks}, version 0)."""
    pairs = tuple((digest(f"{name} v0"), chunks) for name, chunks in members.items())
    return TopicState(label, sum(members.values()), 3, share, share < 0.5 if gap is None else gap, pairs)


def run(documents=(), questions=(), topics=(), tested_share=0.5, hours=0, label="main", **settings):
    return RunSnapshot(
        recorded_at=START + timedelta(hours=hours), label=label, tool_version="0.1.0",
        provider=settings.get("provider", "local"), model=settings.get("model", "all-MiniLM-L6-v2"),
        support_threshold=settings.get("support_threshold", 0.5), threshold_reliable=True,
        headline={"tested_share": tested_share}, documents=tuple(documents), questions=tuple(questions),
        topics=tuple(topics),
    )


BASE_DOCUMENTS = [document("a.md"), document("b.md"), document("c.md", untested=True)]
BASE_QUESTIONS = [question("What is a?"), question("Where is b?"), question("Why c?")]


def test_documents_added_removed_and_changed_are_found_by_name_and_content():
    previous = run(BASE_DOCUMENTS, tested_share=0.5)
    current = run([document("a.md"), document("b.md", version=1, untested=True), document("d.md", untested=True),
                   document("e.md", share=0.4)], tested_share=0.45, hours=1)
    changes = changes_since(previous, current, previous_run=7)
    assert changes.documents_added == (DocumentChange("d.md", True, 0.0), DocumentChange("e.md", False, 0.4))
    assert changes.documents_removed == ("c.md",)
    assert changes.documents_changed == (DocumentChange("b.md", True, 0.0),)
    assert changes.new_untested == (DocumentChange("d.md", True, 0.0), DocumentChange("b.md", True, 0.0))
    assert (changes.run, changes.label, changes.recorded_at) == (7, "main", START)
    assert changes.tested_share_change == pytest.approx(-5.0)


def test_an_unknown_content_is_never_a_change():
    unknown = DocumentState("a.md", "", 10, 0.6, False, False)
    assert changes_since(run([unknown]), run([document("a.md")])).documents_changed == ()
    assert changes_since(run([document("a.md")]), run([unknown])).documents_changed == ()


def test_a_renamed_document_is_removed_and_added():
    moved = DocumentState("new/a.md", BASE_DOCUMENTS[0].content_hash, 10, 0.6, False, False)
    changes = changes_since(run(BASE_DOCUMENTS[:1]), run([moved]))
    assert changes.documents_removed == ("a.md",) and [d.name for d in changes.documents_added] == ["new/a.md"]


def test_questions_are_matched_by_their_text_whatever_the_spacing():
    current = [question("What  is\na? "), question("Why c?"), question("Who wrote d?")]
    changes = changes_since(run(questions=BASE_QUESTIONS), run(questions=current))
    assert changes.questions_added == ("Who wrote d?",)
    assert changes.questions_removed == ("Where is b?",)


def test_topics_are_matched_by_their_documents_across_renumbering_and_renaming():
    previous = run(topics=[topic("rivers", {"a.md": 8, "b.md": 2}), topic("violins", {"c.md": 9}),
                           topic("comets", {"b.md": 7}, share=0.0)])
    # Re-clustered: other order, other labels, one document's share moved a little.
    current = run(topics=[topic("comet · orbit", {"b.md": 6}, share=0.7), topic("string · bow", {"c.md": 9}, share=0.0),
                          topic("delta · water", {"a.md": 8, "b.md": 3})])
    changes = changes_since(previous, current)
    assert changes.topics_lost == (TopicChange("string · bow", 0.6, 0.0),)
    assert changes.topics_gained == (TopicChange("comet · orbit", 0.0, 0.7),)


def test_a_topic_that_split_still_matches_its_larger_part():
    previous = run(topics=[topic("music", {"a.md": 10, "b.md": 10}, share=0.6)])
    current = run(topics=[topic("drums", {"a.md": 10}, share=0.6), topic("flutes", {"b.md": 10}, share=0.7)])
    changes = changes_since(previous, current)
    assert changes.topics_lost == () and changes.topics_gained == ()


def test_a_tested_topic_that_disappeared_is_lost_and_a_new_tested_one_gained():
    previous = run(topics=[topic("rivers", {"a.md": 5}), topic("comets", {"c.md": 5}, share=0.0)])
    current = run(topics=[topic("volcanoes", {"d.md": 5}, share=0.8), topic("untested new", {"e.md": 5}, share=0.0)])
    changes = changes_since(previous, current)
    assert changes.topics_lost == (TopicChange("rivers", 0.6, None),)
    assert changes.topics_gained == (TopicChange("volcanoes", None, 0.8),)


def test_topics_without_known_members_fall_back_to_equal_labels():
    previous = run(topics=[TopicState("rivers", 10, 2, 0.6, False), TopicState("comets", 10, 0, 0.0, True)])
    current = run(topics=[TopicState("comets", 10, 1, 0.55, False), TopicState("rivers", 10, 0, 0.2, True)])
    changes = changes_since(previous, current)
    assert changes.topics_lost == (TopicChange("rivers", 0.6, 0.2),)
    assert changes.topics_gained == (TopicChange("comets", 0.0, 0.55),)


def test_a_gap_with_some_tests_has_no_tests_to_lose():
    previous = run(topics=[topic("rivers", {"a.md": 5}, share=0.3, gap=True)])
    current = run(topics=[topic("rivers", {"a.md": 5}, share=0.0)])
    assert changes_since(previous, current).topics_lost == ()


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [
        (run(BASE_DOCUMENTS, tested_share=0.5),
         run(BASE_DOCUMENTS + [document(n, untested=True) for n in ("d", "e", "f")], tested_share=0.459),
         f"+3 documents, none tested: {MINUS}4.1 points"),
        (run(questions=BASE_QUESTIONS, topics=[topic("t", {"a.md": 4})], tested_share=0.42),
         run(questions=BASE_QUESTIONS[:1], topics=[topic("t", {"a.md": 4}, share=0.0)], tested_share=0.40),
         f"2 questions removed; 1 topic lost its tests: {MINUS}2.0 points"),
        (run(BASE_DOCUMENTS, BASE_QUESTIONS), run(BASE_DOCUMENTS, BASE_QUESTIONS),
         "No change in documents, questions, settings or verdicts: +0.0 points"),
        (run(BASE_DOCUMENTS), run(BASE_DOCUMENTS[:2] + [document("d.md")], BASE_QUESTIONS[:1], tested_share=0.53),
         "+1 document, tested; 1 document removed; +1 question: +3.0 points"),
        (run(BASE_DOCUMENTS), run([document("a.md", 1, untested=True), document("b.md", 1)] + BASE_DOCUMENTS[2:],
                                  tested_share=0.4999),
         "2 documents changed, 1 untested now: +0.0 points"),
        (run(BASE_DOCUMENTS), run(BASE_DOCUMENTS, model="bge-m3", tested_share=0.6),
         "Model all-MiniLM-L6-v2 → bge-m3: +10.0 points"),
        (run(BASE_DOCUMENTS), run(BASE_DOCUMENTS, support_threshold=0.55, tested_share=None),
         "Level τ 0.50 → 0.55: change in tested share not known"),
    ],
    ids=["documents added", "questions removed", "nothing", "mixed", "changed", "model", "unknown share"],
)
def test_the_reason_is_one_sentence_from_its_parts(before, after, reason):
    assert changes_since(before, after).reason == reason


def test_the_tested_share_change_is_in_points_and_unknown_without_both_shares():
    assert changes_since(run(tested_share=0.25), run(tested_share=0.3125)).tested_share_change == pytest.approx(6.25)
    assert changes_since(run(tested_share=None), run(tested_share=0.3)).tested_share_change is None


def test_to_dict_is_exactly_the_reports_since_section():
    previous = run(BASE_DOCUMENTS, BASE_QUESTIONS, [topic("t", {"a.md": 4})], tested_share=0.5)
    current = run([document("a.md", 1), document("d.md", untested=True)], BASE_QUESTIONS[1:],
                  [topic("t", {"a.md": 4}, share=0.0)], tested_share=0.4, hours=2)
    section = json.loads(json.dumps(changes_since(previous, current, previous_run=3).to_dict(), allow_nan=False))
    assert set(section) == SINCE_KEYS
    assert (section["run"], section["label"]) == (3, "main")
    assert datetime.fromisoformat(section["recorded_at"]) == START
    assert section["documents_added"] == [{"name": "d.md", "is_untested": True, "tested_share": 0.0}]
    assert section["documents_changed"] == [{"name": "a.md", "is_untested": False, "tested_share": 0.6}]
    assert section["documents_removed"] == ["b.md", "c.md"]
    assert section["questions_removed"] == ["What is a?"] and section["questions_added"] == []
    assert section["topics_lost"] == [{"label": "t", "tested_share_before": 0.6, "tested_share_after": 0.0}]
    assert section["tested_share_change"] == pytest.approx(-10.0)
    assert section["questions_stale"] is None  # runs made without the questions' sources: not known, never []


def test_changes_between_two_analyses_name_the_new_untested_documents(analysis):
    """Two real runs of the synthetic analysis: the second adds two documents no question is about."""
    import dataclasses

    from coverage_core.history import snapshot_of, topic_documents_of
    from coverage_core.outputs.report import build_report

    report = build_report(analysis)
    chunk_texts = {}
    for chunk in analysis.corpus.chunks:
        chunk_texts.setdefault(chunk.document, []).append(chunk.text)
    members = topic_documents_of(analysis)
    first = snapshot_of(report, analysis.corpus.documents, chunk_texts_by_document=chunk_texts,
                        topic_documents=members, label="main")
    grown = json.loads(json.dumps(report))
    for name in ("new-1.md", "new-2.md"):
        grown["documents"].append({"name": name, "n_chunks": 2, "n_tested": 0, "tested_share": 0.0,
                                   "is_untested": True, "is_undertested": False})
        chunk_texts[name] = [f"{name} passage"]
    grown["questions"] = grown["questions"][1:]
    documents = analysis.corpus.documents + [dataclasses.replace(analysis.corpus.documents[0], name=n, text=n)
                                             for n in ("new-1.md", "new-2.md")]
    second = snapshot_of(grown, documents, chunk_texts_by_document=chunk_texts, topic_documents=members,
                         label="main", recorded_at=first.recorded_at + timedelta(minutes=5))
    changes = changes_since(first, second, previous_run=1)
    assert [d.name for d in changes.new_untested] == ["new-1.md", "new-2.md"]
    assert changes.questions_removed == (report["questions"][0]["text"],)
    assert changes.documents_changed == () and changes.topics_lost == () and changes.topics_gained == ()
    assert changes.reason.startswith("+2 documents, none tested; 1 question removed; untested documents ")


def test_the_decisions_recorded_since_the_earlier_run_are_named_and_stay_out_of_the_report():
    from dataclasses import replace

    from coverage_core.decisions import SuggestionDecision

    kept = SuggestionDecision("What is a?", "local", "accepted", "What is a?", 0, "a.md")
    edited = SuggestionDecision("Where exactly is b?", "llm", "accepted", "Where is b?", 1, "b.md")
    rejected = SuggestionDecision("Why c?", "local", "rejected", "Why c?", 2, "c.md")
    before = replace(run(BASE_DOCUMENTS, BASE_QUESTIONS), decisions=(kept, rejected))
    now = replace(run(BASE_DOCUMENTS, BASE_QUESTIONS, hours=1),
                  decisions=(replace(kept, question="What  is\na?"), edited, replace(rejected, decision="accepted")))
    changes = changes_since(before, now, previous_run=1)
    # re-wrapping is no new decision; a question decided otherwise now is one
    assert changes.decisions_added == (edited, now.decisions[2])
    assert changes.reason.startswith("No change in documents") and set(changes.to_dict()) == SINCE_KEYS
    unknown_before = replace(before, decisions=None)
    assert changes_since(unknown_before, now).decisions_added == now.decisions  # none recorded before: all new
    assert changes_since(before, replace(now, decisions=None)).decisions_added == ()  # not known now: none named
    assert changes_since(before, before).decisions_added == ()
