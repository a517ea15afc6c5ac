"""CI outputs from hand-made schema-1 report dicts: JUnit XML and report diffs."""

import copy
import json
import xml.etree.ElementTree as ET

import pytest

from coverage_core import verdicts
from coverage_core.cli import main
from coverage_core.errors import InputError
from coverage_core.outputs import junit
from tests.helpers import REPORT_METRICS, make_report, report_cluster, report_question


def _parse(xml):
    root = ET.fromstring(xml.encode("utf-8"))
    cases = root.findall("./testsuite/testcase")
    return root, {(c.get("classname"), c.get("name")): c for c in cases}


# --------------------------------------------------------------------------- JUnit


def test_junit_counts_every_cluster_and_document_and_fails_the_gaps():
    root, cases = _parse(junit.junit_xml(make_report(), "basic", None))
    assert root.tag == "testsuites"
    assert [s.get("name") for s in root.findall("testsuite")] == ["coverage.metric", "coverage.clusters", "coverage.documents"]
    # 1 metric + 3 clusters + 3 documents; below 0.7: cluster 1 and Koala.txt.
    assert root.get("tests") == "7" and root.get("failures") == "2" and root.get("errors") == "0"
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
    failed = {key for key, case in cases.items() if case.find("failure") is not None}
    assert failed == {("coverage.clusters", "cluster 1"), ("coverage.documents", "Koala.txt")}
    for case in cases.values():
        assert case.get("time") == "0"
    gap = cases[("coverage.clusters", "cluster 1")].find("failure")
    assert gap.get("type") == "coverage.gap"
    assert "0.420" in gap.get("message") and "0.700" in gap.get("message") and "koala" in gap.get("message")
    assert "10 chunks" in gap.text and "eucalyptus" in gap.text and "arboreal" in gap.text
    assert "What do koalas eat?" in gap.text
    koala = cases[("coverage.documents", "Koala.txt")].find("failure")
    assert "0.410" in koala.get("message") and "untested or possibly misaligned" in koala.text
    # Passing clusters and documents carry their coverage so CI can track them.
    assert "0.800" in cases[("coverage.documents", "Drum.txt")].find("system-out").text


def test_junit_gate_fails_below_the_threshold_and_passes_otherwise():
    report = make_report()
    _, cases = _parse(junit.junit_xml(report, "balanced", 0.7))
    gate = cases[("coverage.metric", "balanced")]
    failure = gate.find("failure")
    assert failure is not None and failure.get("type") == "coverage.below_threshold"
    assert "0.650" in failure.get("message") and "0.700" in failure.get("message")
    assert "value=0.650000 threshold=0.700000" in gate.find("system-out").text

    root, cases = _parse(junit.junit_xml(report, "basic", 0.7))
    gate = cases[("coverage.metric", "basic")]
    assert gate.find("failure") is None
    assert "value=0.720000 threshold=0.700000" in gate.find("system-out").text
    assert root.get("failures") == "2"  # only the gaps

    _, cases = _parse(junit.junit_xml(report, "basic", None))
    assert "no threshold" in cases[("coverage.metric", "basic")].find("system-out").text
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["balanced"] == "0.650000" and properties["fail_below"] == "0.700000"


def test_junit_gap_threshold_comes_from_the_report_or_the_argument():
    report = make_report()
    report["config"]["gaps"]["gap_threshold"] = 0.79
    root, _ = _parse(junit.junit_xml(report))
    # cluster 1 (0.42), cluster 2 (0.77), Koala (0.41), Flute (0.78)
    assert root.get("failures") == "4"
    root, _ = _parse(junit.junit_xml(report, gap_threshold=0.3))
    assert root.get("failures") == "0"


def test_junit_undefined_values():
    report = make_report()
    report["clusters"].append(report_cluster(3, None, size=0))
    report["metrics"]["basic"] = None
    root, cases = _parse(junit.junit_xml(report, "basic", 0.5))
    assert cases[("coverage.clusters", "cluster 3")].find("skipped") is not None
    assert root.get("skipped") == "1"
    assert "not defined" in cases[("coverage.metric", "basic")].find("failure").get("message")
    assert verdicts.gate_failed(None, 0.5)
    assert not verdicts.gate_failed(None, None) and not verdicts.gate_failed(0.5, 0.5)


def test_junit_strips_control_characters_and_escapes_markup():
    dirty = "Tom & Jerry <b>\x00bold\x0c</b>\x1b[0m \ud800 end\ufffe"
    report = make_report()
    report["documents"][0]["name"] = "Koala & <friends>\x07.pdf"
    report["clusters"][1]["themes"] = ["<script>", "a&b", "form\x0bfeed"]
    report["clusters"][1]["representative_chunks"] = [dirty]
    xml = junit.junit_xml(report, "basic", 0.9)
    assert "&amp;" in xml and "&lt;script&gt;" in xml and "<script>" not in xml
    for bad in "\x00\x07\x0b\x0c\x1b\ud800\ufffe":
        assert bad not in xml
    xml.encode("utf-8")  # no lone surrogates left
    _, cases = _parse(xml)
    koala = cases[("coverage.documents", "Koala & <friends>.pdf")]
    assert koala.find("failure") is not None
    gap = cases[("coverage.clusters", "cluster 1")].find("failure")
    assert "<script>, a&b, formfeed" in gap.get("message")
    assert "Tom & Jerry <b>bold</b>[0m end" in gap.text
    assert junit.xml_safe("a\tb\nc\rd") == "a\tb\nc\rd"


def test_junit_shortens_long_passages():
    report = make_report()
    report["clusters"][1]["representative_chunks"] = ["word " * 400]
    gap = _parse(junit.junit_xml(report))[1][("coverage.clusters", "cluster 1")].find("failure")
    passage = next(line for line in gap.text.splitlines() if line.startswith("passage: "))
    assert len(passage) <= len("passage: ") + 160 and passage.endswith("…")


# --------------------------------------------------------------------------- diff


def _renamed_clusters(report):
    for cluster in report["clusters"]:
        cluster["id"] += 10
    report["clusters"].reverse()
    return report


def test_diff_metric_deltas_and_documents_matched_by_name():
    old = make_report()
    new = _renamed_clusters(copy.deepcopy(old))
    new["metrics"].update(basic=0.75, balanced=0.6)
    new["documents"] = [
        {"name": "Flute.txt", "n_chunks": 16, "coverage": 0.7, "is_low": False},
        {"name": "Drum.txt", "n_chunks": 15, "coverage": 0.85, "is_low": False},
        {"name": "Lobster.txt", "n_chunks": 5, "coverage": 0.3, "is_low": True},
    ]
    diff = junit.diff_reports(old, new)
    assert [m.name for m in diff.metrics] == list(REPORT_METRICS)
    assert diff.metric("basic").old == 0.72 and diff.metric("basic").new == 0.75
    assert diff.metric("basic").delta == pytest.approx(0.03)
    assert diff.metric("balanced").delta == pytest.approx(-0.05)
    assert diff.metric("weighted").delta == 0
    assert junit.metric_drop(diff, "balanced") == pytest.approx(0.05)
    # Biggest drop first; Koala is gone and Lobster is new.
    assert [(d.name, d.delta) for d in diff.documents] == [("Flute.txt", pytest.approx(-0.08)), ("Drum.txt", pytest.approx(0.05))]
    assert diff.documents[0].old_chunks == 15 and diff.documents[0].new_chunks == 16
    assert [d.name for d in diff.documents_added] == ["Lobster.txt"]
    assert [d.name for d in diff.documents_removed] == ["Koala.txt"]
    assert diff.questions_added == diff.questions_removed == ()
    assert diff.config_changes == ()  # renamed clusters and other inputs are not settings

    text = junit.format_diff(diff, "old.json", "new.json")
    assert "old.json → new.json" in text
    assert "basic" in text and "0.720" in text and "0.750" in text and "+0.030" in text and "-0.050" in text
    assert text.index("Flute.txt") < text.index("Drum.txt")
    assert "+ Lobster.txt" in text and "- Koala.txt" in text
    assert "No questions added or removed." in text


def test_diff_questions_matched_by_whitespace_normalized_text():
    old = make_report()
    new = make_report(questions=[
        report_question(0, "  What is a   drum?\n"),  # same question, other whitespace
        report_question(1, "What do koalas eat?", "Koala.txt"),
        report_question(2, "What do koalas eat?", "Koala.txt"),
        report_question(3, "Where do zebras live?", outlier=True),
    ])
    diff = junit.diff_reports(old, new)
    assert diff.questions_added == ("What do koalas eat?", "What do koalas eat?")
    assert diff.questions_removed == ("How is a flute played?",)
    text = junit.format_diff(diff)
    assert "Questions added (2)" in text and "+ What do koalas eat?" in text
    assert "Questions removed (1)" in text and "- How is a flute played?" in text
    assert "questions 3 → 3" in text


def test_diff_notes_changed_settings():
    new = make_report()
    new["config"]["chunking"]["chunk_size"] = 500
    new["config"]["screening_threshold"] = 9.9  # an outcome, not a setting
    new["config"]["gaps"]["gap_threshold"] = 0.5  # applied after scoring
    diff = junit.diff_reports(make_report(), new)
    assert diff.config_changes == (("chunking.chunk_size", 1000, 500),)
    assert "Settings differ" in junit.format_diff(diff)


def test_diff_lists_are_capped_in_text_but_complete_in_json():
    new = make_report(questions=[report_question(i, f"Question number {i}?") for i in range(60)])
    diff = junit.diff_reports(make_report(), new)
    assert len(diff.questions_added) == 60
    text = junit.format_diff(diff, limit=50)
    assert "… and 10 more" in text and "Question number 49?" in text and "Question number 50?" not in text
    assert len(json.loads(json.dumps(diff.to_dict()))["questions_added"]) == 60


@pytest.mark.parametrize(
    "report, expected",
    [
        ([1, 2], "no schema_version"),
        ({"metrics": {}}, "no schema_version"),
        (make_report(schema_version=7), "schema version 7"),
        (make_report(metrics=None), "metrics"),
        (make_report(documents=[{"coverage": 0.5}]), "documents"),
        (make_report(questions="nope"), "questions"),
    ],
)
def test_check_report_rejects_non_reports(report, expected):
    with pytest.raises(InputError, match=expected):
        junit.check_report(report, "x.json")


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def reports(tmp_path):
    old, new = make_report(), _renamed_clusters(make_report())
    new["metrics"]["basic"] = 0.69  # fell by 0.03
    new["questions"].append(report_question(3, "What do koalas eat?", "Koala.txt"))
    paths = tmp_path / "old.json", tmp_path / "new.json"
    for path, report in zip(paths, (old, new)):
        path.write_text(json.dumps(report), encoding="utf-8")
    return tuple(str(p) for p in paths)


def test_cli_diff_prints_the_table_and_writes_json(reports, tmp_path, capsys):
    out = tmp_path / "diff.json"
    assert main(["diff", *reports, "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "basic" in captured.out and "-0.030" in captured.out and "+ What do koalas eat?" in captured.out
    assert captured.err == ""
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["old"] == reports[0] and written["new"] == reports[1]
    assert written["questions_added"] == ["What do koalas eat?"]
    assert {m["name"]: m["delta"] for m in written["metrics"]}["basic"] == pytest.approx(-0.03)


@pytest.mark.parametrize(
    "options, code",
    [
        (["--fail-on-drop", "0.05"], 0),
        (["--fail-on-drop", "0.02"], 1),
        (["--fail-on-drop", "0.02", "--metric", "balanced"], 0),  # balanced did not change
        (["--fail-on-drop", "0"], 1),
    ],
)
def test_cli_diff_fail_on_drop(reports, capsys, options, code):
    assert main(["diff", *reports, *options]) == code
    err = capsys.readouterr().err
    if code == 1:
        assert err.strip() == f"basic coverage fell by 0.030, more than the allowed {float(options[1]):.3f}."
    else:
        assert err == ""


def test_cli_diff_a_rise_never_fails(reports, capsys):
    assert main(["diff", reports[1], reports[0], "--fail-on-drop", "0"]) == 0


@pytest.mark.parametrize(
    "content, expected",
    [
        ("{not json", "new.json is not a coverage report (not valid JSON"),
        (b"\xff\xfe\x00garbage", "new.json is not a coverage report (it is not UTF-8 text)."),
        ('{"a": 1}', "new.json is not a coverage report (it has no schema_version)."),
        ("[]", "new.json is not a coverage report (it has no schema_version)."),
        (json.dumps(make_report(schema_version=7)), "new.json has report schema version 7"),
        (None, "new.json does not exist; check the path."),
    ],
)
def test_cli_diff_bad_input_exits_2_with_one_sentence(reports, tmp_path, capsys, content, expected):
    bad = tmp_path / "bad" / "new.json"
    bad.parent.mkdir()
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif content is not None:
        bad.write_text(content, encoding="utf-8")
    assert main(["diff", reports[0], str(bad), "--fail-on-drop", "0.1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coverage_core: ") and expected in lines[0]
    assert lines[0].endswith(".")


def test_cli_diff_undefined_metric_or_negative_drop_exits_2(reports, tmp_path, capsys):
    report = make_report()
    report["metrics"]["basic"] = None
    path = tmp_path / "undefined.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["diff", reports[0], str(path), "--fail-on-drop", "0.1"]) == 2
    assert "not defined in both reports" in capsys.readouterr().err
    assert main(["diff", *reports, "--fail-on-drop", "-1"]) == 2
    assert "must be at least 0" in capsys.readouterr().err


def test_cli_diff_usage_errors_exit_2(reports, capsys):
    assert main(["diff", reports[0]]) == 2
    assert main(["diff", *reports, "--metric", "nonsense"]) == 2
    assert main(["diff", *reports, "--fail-on-drop", "lots"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_diff_reads_a_schema_2_report_against_a_schema_3_one(tmp_path, capsys):
    """Schema 3 renamed calibration.topic_threshold and traffic.answer_threshold; older reports still diff."""
    old = make_report(schema_version=2, calibration={"support_threshold": 0.48, "topic_threshold": 0.37},
                      traffic={"support_threshold": 0.48, "answer_threshold": 0.37})
    new = make_report(schema_version=3, calibration={"support_threshold": 0.48, "question_support_threshold": 0.37})
    new["metrics"]["basic"] -= 0.05
    paths = [tmp_path / "old.json", tmp_path / "new.json"]
    for path, report in zip(paths, (old, new)):
        path.write_text(json.dumps(report), encoding="utf-8")
    loaded = junit.load_report(paths[0])
    assert loaded["calibration"] == {"support_threshold": 0.48, "question_support_threshold": 0.37,
                                     "reliable": True, "reason": ""}
    assert loaded["traffic"] == {"support_threshold": 0.48, "question_support_threshold": 0.37}
    assert old["calibration"]["topic_threshold"] == 0.37  # the caller's dict is left as it was
    diff = junit.diff_reports(old, new)
    assert diff.metric("basic").delta == pytest.approx(-0.05)
    assert main(["diff", *map(str, paths), "--fail-on-drop", "0.1"]) == 0
    assert "basic" in capsys.readouterr().out


def test_ci_reads_the_schema_the_report_writes():
    from coverage_core.outputs import junit as ci_module
    from coverage_core.outputs.report import SCHEMA_VERSION

    assert ci_module.SUPPORTED_SCHEMA_VERSION == SCHEMA_VERSION


def test_junit_names_clusters_by_their_topic_label():
    report = make_report()
    report["clusters"][1]["label"] = "koala · marsupial · eucalyptus"
    root, cases = _parse(junit.junit_xml(report, "basic", None))
    names = {name for suite, name in cases if suite == "coverage.clusters"}
    assert names == {"cluster 0", "cluster 1: koala · marsupial · eucalyptus", "cluster 2"}


# --------------------------------------------------------------------------- schema 4: under-tested, unreliable τ


def schema_4_report(reliable=True, reason=""):
    """A schema-4 report: Koala untested (no question), Flute under-tested, Drum tested."""
    report = make_report(schema_version=4, calibration={
        "support_threshold": 0.5, "method": "model default" if not reliable else "pseudo-queries", "n_probes": 300,
        "separation": 0.1 if not reliable else 0.7, "question_support_threshold": 0.5,
        "reliable": reliable, "reason": reason,
    })
    report["clusters"][1]["is_gap"] = True
    documents = {
        "Koala.txt": dict(n_tested=0, tested_share=0.0, n_questions=0, is_untested=True, is_undertested=False),
        "Flute.txt": dict(n_tested=2, tested_share=2 / 15, n_questions=2, is_untested=False, is_undertested=True),
        "Drum.txt": dict(n_tested=9, tested_share=0.6, n_questions=5, is_untested=False, is_undertested=False),
    }
    for document in report["documents"]:
        document.update(documents[document["name"]])
    return report


def test_junit_fails_untested_and_undertested_documents_each_with_its_own_type():
    root, cases = _parse(junit.junit_xml(schema_4_report(), "basic", None))
    assert [s.get("name") for s in root.findall("testsuite")][0] == "coverage.calibration"
    koala = cases[("coverage.documents", "Koala.txt")].find("failure")
    assert koala.get("type") == "coverage.untested"
    assert koala.get("message") == "Koala.txt: no on-topic question targets any of its 10 passages; it is untested"
    flute = cases[("coverage.documents", "Flute.txt")].find("failure")
    assert flute.get("type") == "coverage.undertested"
    assert flute.get("message") == "Flute.txt: tested, but thinly: 13% of 15 passages, by 2 questions; it is under-tested"
    assert "targeted by 2 on-topic questions" in flute.text
    drum = cases[("coverage.documents", "Drum.txt")]
    assert drum.find("failure") is None and "targeted by 5 on-topic questions" in drum.find("system-out").text
    # A calibrated level is one passing case; nothing errs.
    level = cases[("coverage.calibration", "support level")]
    assert level.find("error") is None and "calibrated on these documents" in level.find("system-out").text
    assert root.get("errors") == "0" and root.get("failures") == "3"  # cluster 1, Koala, Flute
    properties = {p.get("name"): p.get("value") for p in root.find("testsuite[@name='coverage.documents']").iter("property")}
    assert properties["calibration_reliable"] == "true" and properties["support_threshold"] == "0.500000"


def test_junit_an_unreliable_support_level_is_an_error_and_no_case_passes_silently():
    reason = "The documents do not separate their own passages from the others' (separation 0.10)."
    root, cases = _parse(junit.junit_xml(schema_4_report(reliable=False, reason=reason), "basic", None))
    error = cases[("coverage.calibration", "support level")].find("error")
    assert error.get("type") == "coverage.calibration_unreliable"
    assert error.get("message").startswith(reason) and "default support level 0.50" in error.get("message")
    assert root.get("errors") == "1" and root.find("testsuite[@name='coverage.calibration']").get("errors") == "1"
    for suite in ("coverage.clusters", "coverage.documents"):
        properties = {p.get("name"): p.get("value") for p in root.find(f"testsuite[@name='{suite}']").iter("property")}
        assert properties["calibration_reliable"] == "false" and properties["calibration_method"] == "model default"
    passing = [case for case in cases.values() if case.get("classname") in ("coverage.clusters", "coverage.documents")
               and case.find("failure") is None]
    assert passing and all(case.find("system-out").text.startswith(reason) for case in passing)


def test_junit_passing_cases_say_first_that_questions_in_another_language_may_make_them_wrong():
    report = schema_4_report()
    report["languages"] = {"documents": [{"code": "de", "name": "German", "share": 1.0, "n_documents": 3}],
                           "questions": [{"code": "en", "name": "English", "share": 1.0, "n_questions": 9}]}
    _, cases = _parse(junit.junit_xml(report, "basic", None))
    passing = [case for case in cases.values() if case.get("classname") in ("coverage.clusters", "coverage.documents")
               and case.find("failure") is None]
    assert passing and all(case.find("system-out").text.startswith("The questions are in English and the documents "
                                                                   "in German:") for case in passing)
    report["languages"]["questions"][0].update(code="de", name="German")
    _, cases = _parse(junit.junit_xml(report, "basic", None))
    assert not any("another language" in (case.find("system-out").text or "") for case in cases.values()
                   if case.find("system-out") is not None)


def test_junit_reads_an_older_reports_default_level_as_unreliable():
    report = make_report(schema_version=3, calibration={"support_threshold": 0.5, "method": "default: one document",
                                                        "question_support_threshold": 0.5})
    root, cases = _parse(junit.junit_xml(report, "basic", None))
    error = cases[("coverage.calibration", "support level")].find("error")
    assert error is not None and "one document" in error.get("message")
    assert report["calibration"].get("reliable") is None  # the caller's dict is left as it was
