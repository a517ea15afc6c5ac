"""The gaps and their suggestions in the JSON report, the terminal summary and older reports (gap_report)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from coverage_core.outputs.gap_report import (
    SUGGESTION_ORIGIN_WORDS,
    first_kept,
    gap_note,
    gaps_from_clusters,
    gaps_section,
    largest_gaps_lines,
    ordered_suggestions,
)
from coverage_core.outputs.report import build_report, summary_table, upgrade_report
from coverage_core.suggest.gaps import Gap, GapConfig
from coverage_core.suggest.questions import SUGGESTION_PASSAGE_CHARS, Suggestion
from tests.helpers import EVIL, make_report

NO_LANGUAGE = "The passage is in a language without draft wording."


def suggestion(cluster, text, *, origin="local", chunk=0, kept=True, reason="", document="alpha.txt", note=""):
    return Suggestion(cluster=cluster, text=text, origin=origin, document=document, passage=f"passage of {text}",
                      chunk=chunk, kept=kept, reason=reason, note=note)


def hand_made_gaps(analysis):
    """Three gaps: one with kept and dropped questions, one whose questions were all dropped, one with none."""
    clusters = analysis.clusters["cluster"].tolist()
    first, second, third = clusters[:3]
    return [
        Gap(first, 0.21, 20, 1 / 3, 0.9, ("comet", "orbit"), (0, 1),
            (suggestion(first, "Where do comets orbit?", chunk=0), suggestion(first, "What is a comet tail?", chunk=1,
                                                                               origin="llm")),
            dropped=(suggestion(first, "Is ice cold?", chunk=1, kept=False, reason="it does not reach its passage"),)),
        Gap(second, 0.35, 20, 1 / 3, 0.7, ("river",), (2,), (),
            dropped=(suggestion(second, "What flows?", chunk=2, kept=False, reason="it repeats a test question"),),
            note="Every question written for this gap was dropped."),
        Gap(third, 0.4, 20, 1 / 3, 0.5, ("violin",), (3,),
            (suggestion(third, "", origin="draft", chunk=None, document="", note=NO_LANGUAGE),)),
    ]


@pytest.fixture
def with_gaps(analysis):
    return dataclasses.replace(analysis, gaps=hand_made_gaps(analysis))


def test_every_gap_is_listed_most_urgent_first_with_its_figures(with_gaps):
    section = gaps_section(with_gaps)
    assert [g["rank"] for g in section] == [1, 2, 3]
    assert [g["cluster"] for g in section] == [gap.cluster for gap in with_gaps.gaps]
    table = with_gaps.clusters.set_index("cluster")
    for entry, gap in zip(section, with_gaps.gaps):
        assert entry["label"] == table.loc[gap.cluster, "label"]
        assert entry["tested_share"] == pytest.approx(float(table.loc[gap.cluster, "tested_share"]), abs=1e-6)
        assert entry["coverage"] == pytest.approx(gap.coverage, abs=1e-6)
        assert entry["size"] == gap.size and entry["themes"] == list(gap.themes)
        assert [p["chunk"] for p in entry["least_covered_passages"]] == list(gap.passages)
        for passage in entry["least_covered_passages"]:
            chunk = with_gaps.corpus.chunks[passage["chunk"]]
            assert passage["document"] == chunk.document
            assert len(passage["text"]) <= SUGGESTION_PASSAGE_CHARS and chunk.text.startswith(passage["text"][:10])
    json.dumps(section, allow_nan=False)


def test_kept_questions_come_first_then_the_dropped_ones_with_their_reason(with_gaps):
    first = gaps_section(with_gaps)[0]
    assert [(s["question"], s["kept"]) for s in first["suggestions"]] == [
        ("Where do comets orbit?", True), ("What is a comet tail?", True), ("Is ice cold?", False)]
    assert [s["reason"] for s in first["suggestions"]] == ["", "", "it does not reach its passage"]
    assert [s["origin"] for s in first["suggestions"]] == ["local", "llm", "local"]
    assert [s["chunk"] for s in first["suggestions"]] == [0, 1, 1]
    assert first["suggestions"][0] == {
        "question": "Where do comets orbit?", "origin": "local", "document": "alpha.txt",
        "passage": "passage of Where do comets orbit?", "chunk": 0, "kept": True, "reason": ""}
    assert first["note"] == ""


def test_a_gap_without_questions_says_why(with_gaps):
    dropped_only, textless = gaps_section(with_gaps)[1:]
    assert dropped_only["note"] == "Every question written for this gap was dropped."
    assert [s["kept"] for s in dropped_only["suggestions"]] == [False]
    # A passage that got no draft is no question: left out, its note says why the gap has none.
    assert textless["suggestions"] == [] and textless["note"] == NO_LANGUAGE
    assert first_kept(with_gaps.gaps[2]) is None and ordered_suggestions(with_gaps.gaps[2]) == []
    assert gap_note(with_gaps.gaps[0]) == ""


def test_the_report_carries_the_gaps_and_keeps_the_old_cluster_suggestions(with_gaps):
    report = build_report(with_gaps)
    assert report["gaps"] == gaps_section(with_gaps)
    by_id = {c["id"]: c for c in report["clusters"]}
    first = with_gaps.gaps[0]
    assert [q["text"] for q in by_id[first.cluster]["suggested_questions"]] == [s.text for s in first.suggestions]
    assert set(by_id[first.cluster]["suggested_questions"][0]) == {"text", "origin", "document", "passage"}
    json.dumps(report, allow_nan=False)


def test_no_suggestions_asked_for_leaves_every_gap_without_any(analysis):
    config = dataclasses.replace(analysis.config, gaps=GapConfig(n_suggestions=0))
    gaps = [dataclasses.replace(gap, suggestions=(), dropped=()) for gap in hand_made_gaps(analysis)]
    silent = dataclasses.replace(analysis, gaps=gaps, config=config)
    assert all(entry["suggestions"] == [] for entry in gaps_section(silent))
    lines = largest_gaps_lines(silent)
    assert lines.count("     no suggestions asked for") == len(gaps)


def test_the_summary_names_each_gaps_first_kept_question(with_gaps):
    lines = largest_gaps_lines(with_gaps)
    assert lines[:2] == ["", "Largest gaps"]
    first = next(i for i, line in enumerate(lines) if line.startswith("  1. "))
    assert lines[first + 1] == (f"     suggested ({SUGGESTION_ORIGIN_WORDS['local']}; from alpha.txt): "
                                "Where do comets orbit?")
    assert lines[first + 3] == "     no suggestion: Every question written for this gap was dropped."
    assert lines[first + 5] == f"     no suggestion: {NO_LANGUAGE}"
    assert "Is ice cold?" not in "\n".join(lines)  # a dropped question is never offered
    summary = summary_table(with_gaps).splitlines()
    assert summary[summary.index("Largest gaps") + 2] == lines[first + 1]


def test_only_the_largest_gaps_are_summarised(with_gaps):
    many = dataclasses.replace(with_gaps, gaps=with_gaps.gaps * 3)
    assert sum(line.startswith("  ") and ". cluster" in line for line in largest_gaps_lines(many)) == 5
    assert largest_gaps_lines(dataclasses.replace(with_gaps, gaps=[])) == []


def test_user_text_stays_text(analysis):
    evil = [Gap(0, 0.2, 20, 1 / 3, 0.9, (EVIL,), (0,), (suggestion(0, EVIL, document=EVIL),))]
    entry = gaps_section(dataclasses.replace(analysis, gaps=evil))[0]
    assert entry["themes"] == [EVIL] and entry["suggestions"][0]["document"] == EVIL
    assert entry["suggestions"][0]["question"] == " ".join(EVIL.split())


def test_an_older_report_gets_its_gaps_from_its_clusters():
    old = make_report(schema_version=5)
    upgraded = upgrade_report(old)
    assert "gaps" not in old and upgraded["schema_version"] == 5
    assert upgraded["gaps"] == gaps_from_clusters(old["clusters"])
    [gap] = upgraded["gaps"]
    assert (gap["rank"], gap["cluster"], gap["themes"]) == (1, 1, ["koala", "eucalyptus", "marsupial"])
    assert gap["coverage"] == pytest.approx(0.42) and gap["least_covered_passages"] == [] and gap["note"] == ""
    assert gap["suggestions"] == [{"question": "What do koalas eat?", "origin": "draft", "document": "Koala.txt",
                                   "passage": "p", "chunk": None, "kept": True, "reason": ""}]
    assert gaps_from_clusters(None) == []
