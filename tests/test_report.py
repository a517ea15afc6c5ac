import io

import pandas as pd
import pytest

from coverage_core.outputs.report import neutralise_formula, to_safe_csv


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
    retrieval_result,
    subquestion_result,
)


def test_optional_json_sections_absent_without_their_data(analysis):
    report = build_report(analysis)
    for key in ("after_apply", "retrieval", "answerability", "subquestions", "chunking_comparison"):
        assert key not in report
    assert report["schema_version"] == 3


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
    labels, answerability = answerability_result(analysis)
    report = build_report(
        analysis, retrieval=retrieval_result(analysis), answerability=answerability, labels=labels,
        subquestions=subquestion_result(analysis),
    )
    assert report["retrieval"]["relevant_column"] == "<i>source</i>"
    assert report["answerability"]["label_column"] == "<i>answerable</i>"
    assert report["subquestions"]["questions"][0]["question"] == EVIL
    assert [q.get("label") for q in report["questions"]] == [1, 1, 1, 1, 0, 1, 0]
