import io

import pandas as pd
import pytest

from coverage_core.outputs.safe_csv import neutralise_formula, to_safe_csv


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("=SUM(A1:A2)", "'=SUM(A1:A2)"),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@cmd", "'@cmd"),
        ("\t=1", "'\t=1"),
        ("What is 2+2?", "What is 2+2?"),
        ("", ""),
        (None, None),
    ],
)
def test_neutralise_formula(cell, expected):
    assert neutralise_formula(cell) == expected


def test_safe_csv_neutralises_every_cell_and_header_but_keeps_text():
    frame = pd.DataFrame({"question": ["=1+1", "Why, though?"], "=bad header": ["@x", "ok"]})
    data = to_safe_csv(frame)
    assert data.startswith(b"\xef\xbb\xbf")  # BOM: spreadsheets then read UTF-8
    back = pd.read_csv(io.StringIO(data.decode("utf-8-sig")), dtype=str)
    assert list(back.columns) == ["question", "'=bad header"]
    assert back["question"].tolist() == ["'=1+1", "Why, though?"]
    assert back["'=bad header"].tolist() == ["'@x", "ok"]


# ---------------------------------------------------------------- after Apply and the optional sections
import json  # noqa: E402

from coverage_core.outputs.html_report import build_html_report  # noqa: E402
from coverage_core.outputs.report import ACCEPTED_PASSAGE_CHARS, METRIC_NAMES, build_report  # noqa: E402
from tests.helpers import (  # noqa: E402
    EVIL,
    LONG_PASSAGE,
    accepted_questions,
    answerability_result,
    improved_analysis,
    optional_check_results,
)


def test_optional_json_sections_absent_without_their_data(analysis):
    report = build_report(analysis)
    for key in ("after_apply", "retrieval", "answerability", "subquestions", "chunking_comparison"):
        assert key not in report
    assert report["schema_version"] == 6


def test_after_apply_holds_before_after_metrics_and_accepted_questions(analysis):
    improved = improved_analysis(analysis)
    report = build_report(analysis, improved=improved, accepted=accepted_questions())
    section = report["after_apply"]
    assert list(report)[-2:] == ["after_apply", "warnings"]
    for name in METRIC_NAMES:
        assert section["before"][name] == round(analysis.metrics[name], 6) == report["metrics"][name]
        assert section["after"][name] == round(improved.metrics[name], 6)
        assert section["change"][name] == round(section["after"][name] - section["before"][name], 6)
    assert section["n_questions_before"] == 7 and section["n_questions_after"] == 8 and section["n_accepted"] == 3
    llm, draft, own = section["accepted_questions"]
    assert llm == {"text": EVIL, "origin": "llm", "cluster": 2, "document": "<b>gamma</b>.md",
                   "passage": llm["passage"]}
    assert len(llm["passage"]) <= ACCEPTED_PASSAGE_CHARS and llm["passage"].endswith("…")
    assert llm["passage"][:-1] in " ".join(LONG_PASSAGE.split())
    assert draft == {"text": "Where do comets orbit?", "origin": "draft", "cluster": 2,
                     "document": "<b>gamma</b>.md", "passage": "comet orbit ice tail."}
    assert own == {"text": "My own question?", "origin": "you", "cluster": None, "document": None, "passage": None}
    json.dumps(report, allow_nan=False)  # plain JSON


def test_after_apply_seen_from_the_analysis_after(analysis):
    improved = improved_analysis(analysis)
    from_after = build_report(improved, before=analysis, accepted=accepted_questions())["after_apply"]
    from_before = build_report(analysis, improved=improved, accepted=accepted_questions())["after_apply"]
    assert from_after == from_before
    metrics_only = build_report(improved, before=dict(analysis.metrics))["after_apply"]
    assert metrics_only["before"] == from_before["before"] and metrics_only["after"] == from_before["after"]
    assert metrics_only["n_questions_before"] is None and metrics_only["accepted_questions"] == []


def test_after_apply_without_accepted_names_the_added_questions(analysis):
    section = build_report(analysis, improved=improved_analysis(analysis))["after_apply"]
    assert section["accepted_questions"] == [
        {"text": "Where do comets orbit?", "origin": None, "cluster": None, "document": None, "passage": None}
    ]


@pytest.mark.parametrize("build", [build_report, build_html_report], ids=["json", "html"])
def test_after_apply_arguments_are_checked(analysis, build):
    improved = improved_analysis(analysis)
    with pytest.raises(ValueError):
        build(analysis, improved=improved, before=analysis)
    with pytest.raises(ValueError):
        build(analysis, accepted=accepted_questions())


def test_optional_checks_still_written(analysis):
    report = build_report(analysis, **optional_check_results(analysis))
    assert report["retrieval"]["relevant_column"] == "<i>source</i>"
    assert report["answerability"]["label_column"] == "<i>answerable</i>"
    assert report["subquestions"]["questions"][0]["question"] == EVIL
    assert [q.get("label") for q in report["questions"]] == [1, 1, 1, 1, 0, 1, 0]


# ---------------------------------------------------------------- schema 4: the verdicts' fields and upgrading older reports
import dataclasses  # noqa: E402

from coverage_core.outputs.report import SCHEMA_VERSION, summary_table, upgrade_report  # noqa: E402
from coverage_core.stages.calibration import Calibration  # noqa: E402
from coverage_core.verdicts import Verdicts  # noqa: E402
from tests.helpers import make_report  # noqa: E402


def test_report_carries_the_schema_4_fields(analysis):
    report = build_report(analysis)
    assert report["schema_version"] == SCHEMA_VERSION == 6
    assert report["config"]["retrieval_k"] == analysis.config.retrieval_k
    calibration = report["calibration"]
    assert calibration["reliable"] is analysis.calibration.reliable is False
    assert calibration["reason"] == analysis.calibration.reason != ""
    table = analysis.documents.set_index("document")
    for document in report["documents"]:
        row = table.loc[document["name"]]
        assert document["n_questions"] == int(row["n_questions"])
        assert document["is_untested"] is bool(row["is_untested"]) and document["is_undertested"] is bool(row["is_undertested"])
        assert not (document["is_untested"] and document["is_undertested"])
    assert [d["name"] for d in report["documents"] if d["is_untested"]] == ["<b>gamma</b>.md"]
    for question in report["questions"]:
        assert {"offtopic_reason", "offtopic_detail", "offtopic_score"} <= set(question)
        # The score shown agrees with the decision: flagged exactly when above 0; on-topic questions have no reason.
        assert (question["offtopic_score"] > 0) is question["is_outlier"]
        assert (question["offtopic_reason"] == "") is (not question["is_outlier"])
    json.dumps(report, allow_nan=False)


def test_upgrade_gives_an_older_report_the_schema_4_keys():
    old = make_report(schema_version=3, calibration={"support_threshold": 0.5, "method": "default: one document",
                                                     "question_support_threshold": 0.5})
    upgraded = upgrade_report(old)
    assert upgraded["schema_version"] == 3  # it still tells which decisions the report carries
    assert upgraded["calibration"]["reliable"] is False and "one document" in upgraded["calibration"]["reason"]
    assert all(d["is_undertested"] is False and d["n_questions"] is None for d in upgraded["documents"])
    assert [(q["offtopic_reason"], q["offtopic_score"]) for q in upgraded["questions"]] == [("", None), ("", None),
                                                                                            (None, None)]
    assert "reliable" not in old["calibration"] and "is_undertested" not in old["documents"][0]  # a copy
    calibrated = make_report(schema_version=2, calibration={"support_threshold": 0.48, "method": "pseudo-queries"})
    assert upgrade_report(calibrated)["calibration"]["reliable"] is True
    current = make_report(schema_version=4, calibration={"method": "model default", "reliable": False, "reason": "x"})
    assert upgrade_report(current)["calibration"] == current["calibration"]  # schema 4's keys are left as written
    current = upgrade_report(current) | {"schema_version": SCHEMA_VERSION}
    assert upgrade_report(current) == current  # the current schema is left as written
    assert "gaps" in upgrade_report(make_report(schema_version=5)) and "gaps" not in make_report(schema_version=5)


def test_report_gaps_follow_the_analysis_gaps(analysis):
    """The synthetic analysis's own gaps (found by the core): one entry each, in order, suggestions kept first."""
    assert analysis.gaps, "the synthetic analysis has an untested topic"
    report = build_report(analysis)
    assert [g["cluster"] for g in report["gaps"]] == [gap.cluster for gap in analysis.gaps]
    assert [g["rank"] for g in report["gaps"]] == list(range(1, len(analysis.gaps) + 1))
    ranks = {c["id"]: c["gap_rank"] for c in report["clusters"] if c["gap_rank"] is not None}
    assert {g["cluster"]: g["rank"] for g in report["gaps"] if g["document"] is None} == ranks  # topic gaps
    for entry in report["gaps"]:
        kept = [s["kept"] for s in entry["suggestions"]]
        assert kept == sorted(kept, reverse=True)
        assert all((s["reason"] == "") is s["kept"] for s in entry["suggestions"])
        assert set(entry) == {"rank", "cluster", "document", "untested_documents", "label", "tested_share",
                              "coverage", "size", "themes", "least_covered_passages", "note", "suggestions"}


def test_summary_leads_with_the_unreliable_level_then_untested_then_under_tested(analysis):
    thin = analysis.documents.copy()
    thin.loc[thin["document"] == "beta.txt", ["is_undertested", "n_questions"]] = [True, 2]
    thin.loc[thin["document"] == "beta.txt", "tested_share"] = 0.12
    changed = dataclasses.replace(analysis, documents=thin)
    lines = summary_table(changed).splitlines()
    assert lines[0].startswith("The support level could not be calibrated on these documents")
    untested, undertested = lines.index("Untested documents (1)"), lines.index("Under-tested documents (1)")
    assert untested < undertested
    assert lines[untested + 1] == "  <b>gamma</b>.md: no on-topic question targets its 20 passages"
    assert lines[undertested + 1] == "  beta.txt: tested, but thinly: 12% of 20 passages, by 2 questions"
    calibrated = dataclasses.replace(analysis, calibration=Calibration(0.5, "pseudo-queries", n_probes=100))
    first = summary_table(calibrated).splitlines()[0]
    assert first == Verdicts.from_analysis(calibrated).headline and first[0].isdigit()  # the figures first


def test_an_unreliable_level_says_in_every_report_that_the_ranking_alone_decides(analysis):
    from coverage_core.verdicts import ranking_only_sentence

    assert not analysis.calibration.reliable  # the synthetic analysis is not calibrated
    ranking = ranking_only_sentence(analysis.config.tested_k)
    assert "whatever the similarity" in ranking
    summary, report = summary_table(analysis), json.loads(json.dumps(build_report(analysis)))
    assert summary.splitlines()[0] == report["summary"]["headline"] == Verdicts.from_analysis(analysis).headline
    assert report["summary"]["headline"].endswith(ranking)
    assert summary.count(ranking) == 2  # the headline, and the line on what tested means
    assert "at similarity ≥" not in summary
    calibrated = dataclasses.replace(analysis, calibration=Calibration(0.5, "pseudo-queries", n_probes=100))
    summary, report = summary_table(calibrated), build_report(calibrated)
    assert "whatever the similarity" not in summary and "whatever the similarity" not in report["summary"]["headline"]
    assert "at similarity ≥ 0.500, the support level (pseudo-queries)" in summary


def test_every_offtopic_reason_has_plain_words():
    from coverage_core.offtopic.screener import OFFTOPIC_REASONS
    from coverage_core.outputs.report import OFFTOPIC_REASON_WORDS, offtopic_reason_words

    assert set(OFFTOPIC_REASON_WORDS) == set(OFFTOPIC_REASONS) - {""}
    assert offtopic_reason_words("") == offtopic_reason_words(None) == ""
    assert offtopic_reason_words("no_support") == "no passage supports it"


def test_label_statistics_give_a_plain_name_before_the_statistician_s_one(analysis):
    """Issue 21 point 6: a product team reads 'link to answerability' before 'point-biserial r'."""
    labels, answerability = answerability_result(analysis)
    summary = summary_table(analysis, answerability=answerability)
    line = next(line for line in summary.splitlines() if "point-biserial r" in line)
    assert line.strip().startswith("link to answerability (point-biserial r)")
    assert "(AUROC)" in line and "best dividing line (Youden's J)" in line
    html = build_html_report(analysis, answerability=answerability, labels=labels)
    assert "<td>link to answerability (point-biserial r)</td>" in html
    assert "<td>point-biserial r</td>" not in html


# ---------------------------------------------------------------- the tested share's ceiling
def test_the_report_carries_the_tested_share_ceiling_beside_the_share_and_every_output_says_it(analysis):
    from html import escape

    from coverage_core.measure import measure

    report = json.loads(json.dumps(build_report(analysis), allow_nan=False))
    n_on_topic = int((~analysis.is_outlier).sum())
    assert (n_on_topic, len(analysis.is_outlier), analysis.config.tested_k, len(analysis.corpus.chunks)) == (5, 7, 5, 60)
    # The off-topic questions test nothing, so they are left out: 5 × 5 of 60 passages, not 7 × 5.
    metrics = report["metrics"]
    assert metrics["testable_share_max"] == round(25 / 60, 6) == round(analysis.metrics["testable_share_max"], 6)
    assert list(metrics) == [*METRIC_NAMES, "testable_share_max"]
    assert metrics["tested_share"] <= metrics["testable_share_max"]
    sentence = "5 on-topic questions at top 5 can test at most 42% of the knowledge base."
    assert sentence in report["summary"]["headline"]
    assert sentence in summary_table(analysis).splitlines()[0]  # the terminal's headline
    html = build_html_report(analysis)
    coverage = html[html.index("<h2>Coverage</h2>"):html.index("<h3>Scores for method experts</h3>")]
    assert escape(sentence) in coverage and "at most 25 of the 60 passages" in coverage  # on the tested-share card
    # Enough passages per question to reach every one (5 × 12 of 60): the ceiling is 1 and no output states it.
    wide = measure(dataclasses.replace(analysis.config, retrieval_k=12), analysis.corpus, analysis.questions,
                   analysis.question_embedding, analysis.clustering)
    report = build_report(wide)
    assert report["metrics"]["testable_share_max"] == wide.metrics["testable_share_max"] == 1.0
    for text in (report["summary"]["headline"], summary_table(wide), build_html_report(wide)):
        assert "can test at most" not in text
