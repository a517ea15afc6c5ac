"""The ``since`` section in words: terminal lines, HTML (escaped), JUnit cases, and reports that carry it."""

import json
import xml.etree.ElementTree as ET

import pytest

from coverage_core.outputs import junit, since_report
from coverage_core.outputs.report_upgrade import upgrade_report
from coverage_core.saved.schema import check_report as check_saved_report
from tests.helpers import make_report

EVIL = '<script>alert("x")</script>&.txt'


def _since(**changes):
    since = {
        "run": 4, "label": "main", "recorded_at": "2026-11-27T21:05:00+00:00", "tested_share_change": -4.1,
        "documents_added": [{"name": "new.txt", "is_untested": True, "tested_share": 0.0},
                            {"name": "tested.txt", "is_untested": False, "tested_share": 0.4}],
        "documents_removed": ["old.txt"],
        "documents_changed": [{"name": "edited.txt", "is_untested": True, "tested_share": 0.0}],
        "questions_added": ["What is new?"], "questions_removed": ["What was old?", "Gone?"],
        "topics_lost": [{"label": "drums · rhythm", "tested_share_before": 0.6, "tested_share_after": 0.0}],
        "topics_gained": [],
        "reason": "+2 documents, 1 tested: −4.1 points",
    }
    since.update(changes)
    return since


def test_summary_block_names_the_run_the_reason_and_every_list():
    lines = since_report.summary_lines(_since())
    assert lines[0] == "Since run 4 (main, 2026-11-27 21:05 UTC): +2 documents, 1 tested: −4.1 points."
    text = "\n".join(lines)
    assert "Documents added (2)\n    new.txt: untested\n    tested.txt: tested (40% of its passages)" in text
    assert "Documents changed (1)\n    edited.txt: untested" in text
    assert "Documents removed (1)\n    old.txt" in text
    assert "Questions: 1 added, 2 removed" in text
    assert "Topics that lost their tests (1)\n    drums · rhythm: tested share 60% → 0%" in text
    assert "Topics that gained tests" not in text


def test_long_lists_are_cut_with_a_count_of_the_rest():
    many = [{"name": f"doc-{i}.txt", "is_untested": True, "tested_share": 0.0} for i in range(since_report.MAX_LISTED + 7)]
    lines = since_report.summary_lines(_since(documents_added=many))
    assert sum(line.startswith("    doc-") for line in lines) == since_report.MAX_LISTED
    assert "    … and 7 more (the JSON report lists them all)" in lines


def test_new_untested_and_the_drop_are_read_from_the_section():
    since = _since()
    assert [d["name"] for d in since_report.new_untested(since)] == ["new.txt", "edited.txt"]
    assert since_report.tested_share_drop(since) == pytest.approx(4.1)
    assert since_report.drop_exceeds(since, 4.0) and not since_report.drop_exceeds(since, 4.1)
    assert not since_report.drop_exceeds(since, None)
    assert not since_report.drop_exceeds(_since(tested_share_change=None), 0.0)
    assert not since_report.drop_exceeds(_since(tested_share_change=2.0), 0.0)  # a rise is no drop


def test_a_section_from_anyone_is_read_without_failing():
    junk = {"run": "x", "documents_added": "not a list", "documents_changed": [1, None, {"no": "name"}],
            "topics_lost": ["text"], "tested_share_change": "NaN", "recorded_at": "yesterday"}
    lines = since_report.summary_lines(junk)
    assert lines[0].startswith("Since run x (yesterday): The tested share changed by n/a.")
    assert since_report.new_untested(junk) == [] and since_report.tested_share_drop(junk) is None
    assert "What changed since run x" in since_report.html_section(junk)
    assert [case.failure for case in since_report.junit_cases(junk, 1.0)] == [""]


def test_html_section_escapes_every_name_and_question():
    page = since_report.html_section(_since(documents_added=[{"name": EVIL, "is_untested": True, "tested_share": 0}],
                                            questions_added=[EVIL], label="<b>main</b>"))
    assert "<script>" not in page and "<b>main" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;.txt" in page
    assert page.startswith('<section id="since"><h2>What changed since run 4 (&lt;b&gt;main&lt;/b&gt;')
    assert since_report.html_section(None) == ""


def test_junit_cases_fail_for_each_new_untested_document_and_for_a_drop_over_the_limit():
    cases = since_report.junit_cases(_since(), fail_on_drop=1.0)
    assert [case.name for case in cases] == ["tested share since run 4", "new.txt", "edited.txt"]
    assert cases[0].failure.startswith("The tested share fell by 4.1 points since run 4 (main, ")
    assert cases[1].failure == "new.txt was added since run 4 and no question tests it."
    assert cases[2].failure == "edited.txt was changed since run 4 and no question tests it."
    assert since_report.junit_cases(_since(), fail_on_drop=None)[0].failure == ""  # no limit: the change is told
    assert since_report.junit_cases(_since(), fail_on_drop=5.0)[0].failure == ""


def test_junit_xml_adds_the_history_suite_only_to_a_report_with_since():
    plain = ET.fromstring(junit.junit_xml(make_report()).split("\n", 1)[1])
    assert "coverage.history" not in [suite.get("name") for suite in plain.findall("testsuite")]
    report = make_report()
    report["since"] = _since(documents_added=[{"name": EVIL, "is_untested": True, "tested_share": 0.0}])
    root = ET.fromstring(junit.junit_xml(report, fail_on_drop=10.0).split("\n", 1)[1])
    suite = next(s for s in root.findall("testsuite") if s.get("name") == "coverage.history")
    assert [case.get("name") for case in suite.findall("testcase")] == ["tested share since run 4", EVIL, "edited.txt"]
    assert suite.get("failures") == "2"  # the two untested documents; a 4.1-point drop is within 10
    assert int(root.get("failures")) >= 2


def test_reports_with_since_are_read_back_by_diff_and_saved_analyses(tmp_path):
    report = make_report()
    report["since"] = _since()
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert junit.load_report(path)["since"] == report["since"]
    assert upgrade_report(report)["since"] == report["since"]
    assert check_saved_report(report, "the saved analysis", "report.json")[0]["since"] == report["since"]
    diff = junit.diff_reports(junit.load_report(path), junit.load_report(path))
    assert diff.to_dict()  # compared as any report


def test_first_run_sentence():
    assert (since_report.first_run_sentence("h.sqlite") ==
            "No earlier run in h.sqlite to compare with; this is the first.")
    assert "No earlier run labelled main in" in since_report.first_run_sentence("h.sqlite", "main")
