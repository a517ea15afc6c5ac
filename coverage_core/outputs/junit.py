"""CI outputs that work from a saved JSON report (schema version 6, 5, 4, 3, 2 or 1).

* :func:`junit_xml` turns a report into JUnit XML, so a CI system lists what
  is untested: one test case for the support level, one for the gated
  metric, one per cluster and one per document. A cluster fails when the
  report marks it ``is_gap``, a document when it is ``is_untested`` or
  ``is_undertested`` (the report's absolute decisions against the support
  level τ; an untested document's case names the gap that holds it, its own
  or its topic's, and the questions suggested from it); the others are
  included as *passing* test cases, so a CI system
  can track each of them over time and the number of tests stays stable
  between runs. A report with a ``since`` section (``analyze --record``)
  adds the history suite: the tested-share change and each new untested
  document. A schema-1 report has no such decisions: there, coverage
  below the gap threshold fails.

  An under-tested document fails too, with its own type
  (``coverage.undertested``, where an untested one is ``coverage.untested``):
  up to schema 3 these very documents failed as untested, so passing them now
  would turn a red build green with nothing added to the test set, and JUnit
  has no "warning" a CI page shows (a note in ``system-out`` goes unread).
  The type and message ("tested, but thinly") keep it apart for whoever
  filters. When τ could not be calibrated (``calibration.reliable`` false),
  the ``support level`` case is an *error*: every verdict rests on the
  model's default level, and a passing document or topic must not look
  verified; each suite also says so in its properties and passing cases.
* :func:`diff_reports` compares two reports: metric deltas, per-document
  coverage deltas (documents are matched by name, because cluster ids are not
  stable between runs), documents and questions added or removed.

Everything here reads plain dicts, never an :class:`~coverage_core.results.Analysis`,
so it runs from reports saved by earlier runs.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from coverage_core import bounded_json, wording
from coverage_core.errors import InputError
from coverage_core.outputs.report_upgrade import upgrade_report
from coverage_core.outputs.since_report import junit_cases
from coverage_core.stages.topics import cluster_name
from coverage_core.suggest.gaps import GAP_COVERAGE_THRESHOLD, GapConfig
from coverage_core.validation import is_number, is_whole, shorten
from coverage_core.verdicts import cross_language_problem, gate_failed, is_gap, is_untested_traffic

__all__ = [
    "DocumentDelta",
    "DocumentEntry",
    "MetricDelta",
    "ReportDiff",
    "check_report",
    "diff_reports",
    "format_diff",
    "junit_xml",
    "load_report",
    "metric_drop",
    "write_junit",
    "xml_safe",
]

SUPPORTED_SCHEMA_VERSION = 6
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6)
"""Versions :func:`check_report` accepts: diff reads only metrics, documents
and questions, which versions 2 to 6 kept; JUnit falls back to coverage on
version 1; :func:`load_report` maps the fields versions 3 to 6 renamed or added."""
DEFAULT_GAP_THRESHOLD = GAP_COVERAGE_THRESHOLD  # a schema-1 report without its own gap threshold
# Order in which known metrics are shown; unknown ones follow alphabetically.
_METRIC_ORDER = ("tested_share", "basic", "weighted", "balanced", "multi_threshold", "multi_n")
# Characters XML 1.0 does not allow anywhere (PDF text often carries them).
_ILLEGAL_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SHORT_TEXT = 160


# --------------------------------------------------------------------------- helpers


def xml_safe(text: Any) -> str:
    """``text`` as a string with the characters XML 1.0 forbids removed.

    Control characters (other than tab, newline, carriage return), lone
    surrogates and U+FFFE/U+FFFF are dropped; escaping ``<``, ``&`` … is left
    to ElementTree.
    """
    return _ILLEGAL_XML.sub("", "" if text is None else str(text))


def _number(value: Any) -> float | None:
    """A finite float, or None for null / NaN / anything that is not a number."""
    if not is_number(value):
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _gap_threshold(report: Mapping, gap_threshold: float | None) -> float:
    if gap_threshold is not None:
        return float(gap_threshold)
    configured = (report.get("config") or {}).get("gaps", {})
    value = _number(configured.get("gap_threshold")) if isinstance(configured, Mapping) else None
    return DEFAULT_GAP_THRESHOLD if value is None else value


def _decided(report: Mapping) -> bool:
    """Whether the report carries its own decisions (is_gap / is_untested: schema 2 and later)."""
    version = report.get("schema_version")
    return is_whole(version) and version >= 2


# --------------------------------------------------------------------------- reading reports


def check_report(report: Any, label: str = "the report") -> dict:
    """``report`` if it looks like a schema-1 to -6 report; else :class:`InputError` (one sentence)."""
    if not isinstance(report, dict) or "schema_version" not in report:
        raise InputError(f"{label} is not a coverage report (it has no schema_version).")
    version = report["schema_version"]
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        raise InputError(
            f"{label} has report schema version {version!r}, but this coverage_core reads "
            f"versions {', '.join(map(str, READABLE_SCHEMA_VERSIONS[:-1]))} and {READABLE_SCHEMA_VERSIONS[-1]}; "
            "re-run analyze to make a new report."
        )
    if not isinstance(report.get("metrics"), dict):
        raise InputError(f"{label} is not a complete coverage report (its metrics are missing).")
    for section, key in (("documents", "name"), ("questions", "text"), ("clusters", "id")):
        items = report.get(section)
        if not isinstance(items, list) or not all(isinstance(item, dict) and key in item for item in items):
            raise InputError(f"{label} is not a complete coverage report (its {section} list is missing or malformed).")
    return report


def load_report(path: str | Path) -> dict:
    """Read and check a JSON report, with older field names mapped to schema 4's
    (:func:`~coverage_core.outputs.report.upgrade_report`); unusable files raise :class:`InputError`.

    A missing or unreadable file raises :class:`OSError` as usual.
    """
    name = Path(path).name
    data = Path(path).read_bytes()
    try:
        report = bounded_json.loads(data, what=f"{name} is not a coverage report:", advice="")
    except bounded_json.JSONError as error:
        raise InputError(_report_sentence(name, error)) from None
    return upgrade_report(check_report(report, name))


def _report_sentence(name: str, error) -> str:
    """Why ``name`` cannot be read as a report, in one sentence, from :class:`bounded_json.JSONError`."""
    if error.kind == "encoding":
        return f"{name} is not a coverage report (it is not UTF-8 text)."
    if error.kind == "depth":
        return (f"{name} is not a coverage report (it nests lists or objects more than {bounded_json.MAX_DEPTH} "
                "levels deep).")
    return f"{name} is not a coverage report (not valid JSON: {error.detail})."


# --------------------------------------------------------------------------- JUnit XML


def _testcase(parent: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(parent, "testcase", classname=classname, name=xml_safe(name), time="0")


def _fail(case: ET.Element, message: str, text: str, kind: str) -> None:
    failure = ET.SubElement(case, "failure", message=xml_safe(message), type=kind)
    failure.text = xml_safe(text)


def _system_out(case: ET.Element, text: str) -> None:
    ET.SubElement(case, "system-out").text = xml_safe(text)


def _suite(root: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name)


def _count(suite: ET.Element) -> tuple[int, int, int, int]:
    cases = suite.findall("testcase")
    failures = sum(1 for case in cases if case.find("failure") is not None)
    errors = sum(1 for case in cases if case.find("error") is not None)
    skipped = sum(1 for case in cases if case.find("skipped") is not None)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", "0")
    return len(cases), failures, errors, skipped


def _unreliable_note(report: Mapping) -> str | None:
    """One sentence when the report's support level could not be calibrated (None when it was, or is not recorded)."""
    calibration = report.get("calibration")
    if not isinstance(calibration, Mapping) or calibration.get("reliable", True) is not False:
        return None
    reason = " ".join(str(calibration.get("reason") or "").split())
    level = _number(calibration.get("support_threshold"))
    return (f"{reason + ' ' if reason else ''}This verdict rests on the embedding model's default support level "
            f"{_fmt(level, '.2f')}, not one calibrated on these documents, so it may be wrong.")


def _calibration_properties(suite: ET.Element, report: Mapping) -> None:
    """The support level and whether it was calibrated, as properties of ``suite`` (reports with a calibration)."""
    calibration = report.get("calibration")
    if not isinstance(calibration, Mapping):
        return
    properties = suite.find("properties")
    if properties is None:
        properties = ET.Element("properties")
        suite.insert(0, properties)
    for name, value in (("support_threshold", _fmt(_number(calibration.get("support_threshold")), ".6f")),
                        ("calibration_method", str(calibration.get("method", ""))),
                        ("calibration_reliable", "false" if _unreliable_note(report) else "true")):
        ET.SubElement(properties, "property", name=name, value=xml_safe(value))


def _calibration_suite(root: ET.Element, report: Mapping) -> None:
    """One case, ``support level``: an error when τ could not be calibrated, passing otherwise."""
    calibration = report["calibration"]
    suite = _suite(root, "coverage.calibration")
    _calibration_properties(suite, report)
    case = _testcase(suite, "coverage.calibration", "support level")
    level = _fmt(_number(calibration.get("support_threshold")), ".3f")
    facts = (f"support level {level} ({xml_safe(calibration.get('method', 'n/a'))}), "
             f"{calibration.get('n_probes', 'n/a')} probes, separation {_fmt(_number(calibration.get('separation')))}")
    note = _unreliable_note(report)
    if note:
        error = ET.SubElement(case, "error", message=xml_safe(note), type="coverage.calibration_unreliable")
        error.text = xml_safe(f"{note}\n{facts}")
    else:
        _system_out(case, f"The support level was calibrated on these documents: {facts}.")


def _metric_suite(root: ET.Element, report: Mapping, metric: str, threshold: float | None) -> None:
    suite = _suite(root, "coverage.metric")
    properties = ET.SubElement(suite, "properties")
    for name, value in report["metrics"].items():
        ET.SubElement(properties, "property", name=xml_safe(name), value=_fmt(_number(value), ".6f"))
    if threshold is not None:
        ET.SubElement(properties, "property", name="fail_below", value=f"{threshold:.6f}")
    value = _number(report["metrics"].get(metric))
    case = _testcase(suite, "coverage.metric", metric)
    if threshold is None:
        detail = f"{metric} coverage {_fmt(value)}; no threshold set (--fail-below)."
    elif gate_failed(value, threshold):
        detail = (
            f"{metric} coverage is not defined; required {threshold:.3f}."
            if value is None
            else f"{metric} coverage {value:.3f} is below the required {threshold:.3f}."
        )
        _fail(case, detail, f"{detail}\nAll metrics: " + ", ".join(
            f"{name} {_fmt(_number(v))}" for name, v in report["metrics"].items()
        ), "coverage.below_threshold")
    else:
        detail = f"{metric} coverage {value:.3f} meets the required {threshold:.3f}."
    _system_out(case, f"{detail}\nvalue={_fmt(value, '.6f')} threshold={_fmt(threshold, '.6f')}")


def _cluster_suite(root: ET.Element, report: Mapping, schema_1: GapConfig) -> None:
    suite = _suite(root, "coverage.clusters")
    _calibration_properties(suite, report)
    def order(cluster: Mapping) -> tuple:
        rank, ident = cluster.get("gap_rank"), cluster["id"]
        return (rank is None, rank or 0, not isinstance(ident, int), ident if isinstance(ident, int) else 0, str(ident))

    for cluster in sorted(report["clusters"], key=order):
        coverage = _number(cluster.get("coverage"))
        size = cluster.get("size")
        share = _number(cluster.get("share"))
        name = cluster_name(cluster["id"], cluster.get("label"))
        case = _testcase(suite, "coverage.clusters", name)
        facts = (
            f"coverage {_fmt(coverage)}, {_counted(size, 'chunk')}"
            + (f" ({share:.1%} of the corpus)" if share is not None else "")
            + f", {_counted(cluster.get('n_questions', 'n/a'), 'question')} covering it"
        )
        themes = [shorten(xml_safe(t), 60) for t in cluster.get("themes") or []]
        lines = [f"{name}: {facts}"]
        if themes:
            lines.append("themes: " + ", ".join(themes))
        for passage in (cluster.get("representative_chunks") or [])[:3]:
            lines.append(f"passage: {shorten(xml_safe(passage), _SHORT_TEXT)}")
        suggestions = cluster.get("suggested_questions") or []
        for suggestion in suggestions[:3]:
            text = suggestion.get("text") if isinstance(suggestion, Mapping) else suggestion
            lines.append(f"suggested question: {shorten(xml_safe(text), _SHORT_TEXT)}")
        tested = _number(cluster.get("tested_share"))
        if "is_gap" in cluster and tested is not None:
            lines.insert(1, f"tested share {tested:.1%} ({cluster.get('n_tested', 'n/a')} of {size} passages reached by a question)")
        if coverage is None:
            ET.SubElement(case, "skipped", message="empty cluster: coverage is not defined")
        elif _decided(report) and cluster.get("is_gap"):
            about = f" ({', '.join(themes[:3])})" if themes else ""
            shown = f"only {tested:.1%} of its passages are tested" if tested is not None else "marked a gap"
            message = f"{name}{about}: {shown}; it is a gap"
            _fail(case, message, "\n".join(lines), "coverage.gap")
            continue
        elif not _decided(report) and is_gap(coverage, None, schema_1):
            about = f" ({', '.join(themes[:3])})" if themes else ""
            message = f"{name}{about}: coverage {coverage:.3f} is below the gap threshold {schema_1.gap_threshold:.3f}"
            _fail(case, message, "\n".join(lines), "coverage.gap")
            continue
        _system_out(case, "\n".join(_with_note(lines, report)))


def _with_note(lines: list[str], report: Mapping) -> list[str]:
    """``lines`` of a passing case, after the sentences saying why it may be wrong: an unreliable calibration,
    questions in another language than the documents."""
    notes = [note for note in (_unreliable_note(report), _cross_language_note(report)) if note]
    return [*notes, *lines]


def _cross_language_note(report: Mapping) -> str:
    """:func:`~coverage_core.verdicts.cross_language_problem` of the report's language summary ("" without one)."""
    languages = report.get("languages")
    if not isinstance(languages, Mapping):
        return ""
    shares = {where: [(str(entry.get("code", "")), str(entry.get("name", "")), _number(entry.get("share")) or 0.0)
                      for entry in languages.get(where) or () if isinstance(entry, Mapping)]
              for where in ("documents", "questions")}
    return cross_language_problem(shares["documents"], shares["questions"])


def _document_suite(root: ET.Element, report: Mapping, schema_1: GapConfig) -> None:
    suite = _suite(root, "coverage.documents")
    _calibration_properties(suite, report)
    asking = Counter(
        q.get("nearest_document") for q in report["questions"] if not q.get("is_outlier")
    )
    for document in report["documents"]:
        name = str(document["name"])
        coverage = _number(document.get("coverage"))
        case = _testcase(suite, "coverage.documents", name)
        n_chunks, n_questions = document.get("n_chunks", "n/a"), document.get("n_questions")
        asked = (f"targeted by {_counted(n_questions, 'on-topic question')}" if n_questions is not None
                 else f"the nearest document of {_counted(asking.get(name, 0), 'on-topic question')}")
        lines = [f"{name}: coverage {_fmt(coverage)}, {_counted(n_chunks, 'chunk')}, {asked}"]
        tested = _number(document.get("tested_share"))
        if tested is not None:
            lines.append(f"tested share {tested:.1%} ({_counted(document.get('n_tested', 'n/a'), 'passage')} tested by a question)")
        if document.get("is_low"):
            lines.append("flagged: covered far less than the other documents (untested or possibly misaligned)")
        lines.extend(_gap_lines(report, name))
        lines = _with_note(lines, report)
        if coverage is None:
            ET.SubElement(case, "skipped", message="coverage is not defined")
        elif _decided(report):
            if document.get("is_untested"):
                _fail(case, f"{name}: {_untested_shown(report, document, tested)}; it is untested", "\n".join(lines),
                      "coverage.untested")
                continue
            if document.get("is_undertested"):
                by = f", by {_counted(n_questions, 'question')}" if n_questions is not None else ""
                shown = f"{tested:.0%} of {n_chunks} passages{by}" if tested is not None else "marked under-tested"
                _fail(case, f"{name}: tested, but thinly: {shown}; it is under-tested", "\n".join(lines),
                      "coverage.undertested")
                continue
        elif is_gap(coverage, None, schema_1):  # schema 1 judged documents by the gap rule too
            message = f"{name}: coverage {coverage:.3f} is below the gap threshold {schema_1.gap_threshold:.3f}"
            _fail(case, message, "\n".join(lines), "coverage.gap")
            continue
        _system_out(case, "\n".join(lines))


def _gap_lines(report: Mapping, name: str) -> list[str]:
    """The gap that holds untested document ``name`` (``gaps[].untested_documents``, schema 6) and the
    questions suggested from its passages; none in a report without it."""
    for gap in report.get("gaps") or ():
        if isinstance(gap, Mapping) and name in (gap.get("untested_documents") or ()):
            own = "its own gap" if gap.get("document") == name else "held by the topic gap"
            lines = [f"gap {gap.get('rank')}, {own}: {xml_safe(str(gap.get('label') or ''))}"]
            return lines + [f"suggested question: {shorten(xml_safe(str(s.get('question') or '')), _SHORT_TEXT)}"
                            for s in gap.get("suggestions") or () if isinstance(s, Mapping) and s.get("kept")
                            and s.get("document") == name and s.get("question")][:3]
    return []


def _counted(value, noun: str, plural_form: str | None = None) -> str:
    """A report's count with its noun in agreement; a value an older report lacks ("n/a") keeps the plural."""
    if isinstance(value, int) and not isinstance(value, bool):
        return wording.count(int(value), noun, plural_form)
    return f"{value} {plural_form or noun + 's'}"


def _untested_shown(report: Mapping, document: Mapping, tested: float | None) -> str:
    """Why an untested document is untested, as the report's schema decided it."""
    if report.get("schema_version", 0) >= 4:
        return f"no on-topic question targets any of its {document.get('n_chunks', 'n/a')} passages"
    return f"only {tested:.1%} of its passages are tested" if tested is not None else "marked untested"


def _traffic_suite(root: ET.Element, traffic: Mapping) -> None:
    """One case per production-traffic topic, failing when its traffic is mostly untested and it is frequent
    (:func:`coverage_core.verdicts.is_untested_traffic`), and one for the queries with no answer in the
    documents, failing when they are unmet demand (their ``is_unmet``). Passing cases say first when the
    queries are in another language than the documents (the section's ``language_problem``)."""
    suite = _suite(root, "coverage.traffic")
    total = max(int(traffic.get("n_queries") or 0), 1)
    notes = [str(traffic["language_problem"])] if traffic.get("language_problem") else []
    for topic in traffic.get("topics", []):
        label, volume = str(topic.get("label")), int(topic.get("volume") or 0)
        tested, answerable = float(topic.get("tested_share") or 0.0), float(topic.get("answerable_share") or 0.0)
        case = _testcase(suite, "coverage.traffic", f"traffic: {label}")
        lines = [
            f"{label}: {_counted(volume, 'query', 'queries')} ({volume / total:.1%} of traffic), {tested:.0%} tested, "
            f"{answerable:.0%} answerable by the documents",
            *(f"example: {example}" for example in topic.get("examples", [])),
        ]
        if topic.get("is_unmet"):
            lines.append("the documents answer little of it: a gap in the knowledge base, not only in the tests")
        if is_untested_traffic(volume / total, tested):
            _fail(case, f"{label}: only {tested:.0%} of its {volume:,} queries are tested", "\n".join(lines),
                  "coverage.traffic")
        else:
            _system_out(case, "\n".join([*notes, *lines]))
    unanswered = traffic.get("unanswered")
    if unanswered and int(unanswered.get("volume") or 0):
        volume = int(unanswered.get("volume") or 0)
        case = _testcase(suite, "coverage.traffic", "traffic: no answer in the documents")
        lines = [
            f"{volume:,} queries ({volume / total:.1%} of traffic) have no answer in the documents",
            *(f"example: {example}" for example in unanswered.get("examples", [])),
        ]
        if unanswered.get("is_unmet"):
            _fail(case, f"{volume:,} queries ({volume / total:.0%} of traffic) have no answer in the documents: "
                  "a gap in the knowledge base", "\n".join(lines), "coverage.traffic")
        else:
            _system_out(case, "\n".join([*notes, *lines]))


def _history_suite(root: ET.Element, since: Mapping, fail_on_drop: float | None, fail_on_stale: bool = False) -> None:
    """The cases of :func:`coverage_core.outputs.since_report.junit_cases`: the change since the earlier run."""
    suite = _suite(root, "coverage.history")
    for case in junit_cases(since, fail_on_drop, fail_on_stale):
        element = _testcase(suite, "coverage.history", case.name)
        if case.failure:
            _fail(element, case.failure, case.text, "coverage.history")
        else:
            _system_out(element, case.text)


def junit_xml(
    report: Mapping,
    gate_metric: str = "basic",
    gate_threshold: float | None = None,
    gap_threshold: float | None = None,
    fail_on_drop: float | None = None,
    fail_on_stale: bool = False,
) -> str:
    """JUnit XML (a UTF-8 document as ``str``) for a report dict (schema 1 to 6).

    Suites: ``coverage.calibration`` (a report with a ``calibration`` section; an error when τ could not be
    calibrated), ``coverage.metric`` (fails when ``gate_metric`` is below ``gate_threshold``),
    ``coverage.clusters`` and ``coverage.documents`` (one case each; gaps, untested and under-tested documents
    fail), ``coverage.traffic`` (with a ``traffic`` section: frequent, mostly untested topics fail) and
    ``coverage.history`` (with a ``since`` section: a tested-share drop over ``fail_on_drop`` points fails, as
    does each document added or changed since then that no question tests, and each question gone stale with
    ``fail_on_stale``). Passing cases carry their
    coverage; an undefined coverage (an empty cluster) is a skipped case.
    Why: CI tracks every cluster and document over time; each suite in full: docs/ci.md, *The JUnit file*.

    Parameters
    ----------
    report : Mapping, a coverage report dict
    gate_metric : str, the metric the ``coverage.metric`` case is named after and gates on
    gate_threshold : float, optional; None: that case always passes
    gap_threshold : float, optional; schema 1 only (None: the report's configured gap threshold)
    fail_on_drop : float, optional; the tested-share points the history may fall by
    fail_on_stale : bool; a stale question's case fails (else it passes, saying why it is stale)

    Returns
    -------
    str

    Raises
    ------
    InputError
        ``report`` is not a complete coverage report.
    """
    report = upgrade_report(check_report(report))
    # A schema-1 report carries no decisions: the coverage rule decides there.
    schema_1 = GapConfig(rule="coverage", gap_threshold=_gap_threshold(report, gap_threshold))
    root = ET.Element("testsuites", name="coverage_core")
    if isinstance(report.get("calibration"), Mapping):
        _calibration_suite(root, report)
    _metric_suite(root, report, gate_metric, gate_threshold)
    _cluster_suite(root, report, schema_1)
    _document_suite(root, report, schema_1)
    if report.get("traffic"):
        _traffic_suite(root, report["traffic"])
    if isinstance(report.get("since"), Mapping):
        _history_suite(root, report["since"], fail_on_drop, fail_on_stale)
    totals = [0, 0, 0, 0]
    for suite in root.findall("testsuite"):
        for i, n in enumerate(_count(suite)):
            totals[i] += n
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    root.set("skipped", str(totals[3]))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(xml: str, path: str | Path) -> None:
    Path(path).write_text(xml, encoding="utf-8")


# --------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class MetricDelta:
    name: str
    old: float | None
    new: float | None
    delta: float | None  # new - old; None when either is undefined


@dataclass(frozen=True)
class DocumentDelta:
    name: str
    old_coverage: float | None
    new_coverage: float | None
    delta: float | None
    old_chunks: int | None
    new_chunks: int | None


@dataclass(frozen=True)
class DocumentEntry:
    name: str
    coverage: float | None
    n_chunks: int | None


@dataclass(frozen=True)
class ReportDiff:
    """What changed from ``old`` to ``new``; every delta is new − old."""

    metrics: tuple[MetricDelta, ...]
    counts: tuple[tuple[str, int | None, int | None], ...]
    documents: tuple[DocumentDelta, ...]  # in both reports, biggest drop first
    documents_added: tuple[DocumentEntry, ...]
    documents_removed: tuple[DocumentEntry, ...]
    questions_added: tuple[str, ...]
    questions_removed: tuple[str, ...]
    config_changes: tuple[tuple[str, Any, Any], ...]  # (dotted key, old, new); settings that change scores

    def metric(self, name: str) -> MetricDelta | None:
        return next((m for m in self.metrics if m.name == name), None)

    def to_dict(self) -> dict:
        return asdict(self)


def _delta(old: float | None, new: float | None) -> float | None:
    return None if old is None or new is None else round(new - old, 6)


def _metric_names(old: Mapping, new: Mapping) -> list[str]:
    common = set(old) & set(new)
    known = [name for name in _METRIC_ORDER if name in common]
    return known + sorted(common - set(known))


def _flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(config, Mapping):
        return {prefix: config}
    flat: dict[str, Any] = {}
    for key, value in config.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


# Config entries that do not change the metrics: inputs, outcomes (the
# screening threshold follows from the questions), and settings applied after
# scoring (gap threshold and ranking, near-duplicate threshold).
_NOT_SETTINGS = ("inputs", "screening_threshold", "gaps", "redundancy_threshold")


def _config_changes(old: Any, new: Any) -> tuple[tuple[str, Any, Any], ...]:
    def settings(config: Any) -> dict[str, Any]:
        flat = _flatten(config if isinstance(config, Mapping) else {})
        return {k: v for k, v in flat.items() if k.split(".")[0] not in _NOT_SETTINGS}

    before, after = settings(old), settings(new)
    return tuple(
        (key, before.get(key), after.get(key))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    )


def _normalize(text: Any) -> str:
    return " ".join(str(text).split())


def _question_changes(old: list, new: list) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Questions only in new / only in old, matched by whitespace-normalised text.

    Matching counts repeats: a question asked twice before and once now is
    one removal.
    """
    old_texts = [_normalize(q["text"]) for q in old]
    new_texts = [_normalize(q["text"]) for q in new]
    old_counts, new_counts = Counter(old_texts), Counter(new_texts)

    def only(texts: list[str], mine: Counter, theirs: Counter) -> tuple[str, ...]:
        surplus = mine - theirs
        out = []
        for text in texts:
            if surplus[text] > 0:
                surplus[text] -= 1
                out.append(text)
        return tuple(out)

    return only(new_texts, new_counts, old_counts), only(old_texts, old_counts, new_counts)


def diff_reports(old: Mapping, new: Mapping) -> ReportDiff:
    """Compare two reports (dicts of schema 1, 2 or 3, in any mix); see :class:`ReportDiff`."""
    old = upgrade_report(check_report(old, "the old report"))
    new = upgrade_report(check_report(new, "the new report"))
    metrics = tuple(
        MetricDelta(name, a, b, _delta(a, b))
        for name in _metric_names(old["metrics"], new["metrics"])
        for a, b in [(_number(old["metrics"][name]), _number(new["metrics"][name]))]
    )
    old_summary, new_summary = old.get("summary") or {}, new.get("summary") or {}
    counts = tuple(
        (key, old_summary.get(key), new_summary.get(key))
        for key in ("n_documents", "n_chunks", "n_questions", "n_outliers")
        if key in old_summary or key in new_summary
    )
    old_docs = {str(d["name"]): d for d in old["documents"]}
    new_docs = {str(d["name"]): d for d in new["documents"]}
    both = []
    for name in old_docs.keys() & new_docs.keys():
        a, b = old_docs[name], new_docs[name]
        before, after = _number(a.get("coverage")), _number(b.get("coverage"))
        both.append(DocumentDelta(name, before, after, _delta(before, after), a.get("n_chunks"), b.get("n_chunks")))
    both.sort(key=lambda d: (d.delta is None, d.delta if d.delta is not None else 0.0, d.name))

    def entries(docs: dict, names: set) -> tuple[DocumentEntry, ...]:
        return tuple(
            DocumentEntry(name, _number(docs[name].get("coverage")), docs[name].get("n_chunks")) for name in sorted(names)
        )

    added, removed = _question_changes(old["questions"], new["questions"])
    return ReportDiff(
        metrics=metrics,
        counts=counts,
        documents=tuple(both),
        documents_added=entries(new_docs, new_docs.keys() - old_docs.keys()),
        documents_removed=entries(old_docs, old_docs.keys() - new_docs.keys()),
        questions_added=added,
        questions_removed=removed,
        config_changes=_config_changes(old.get("config"), new.get("config")),
    )


def metric_drop(diff: ReportDiff, metric: str) -> float | None:
    """How far ``metric`` fell (old − new; negative when it rose), or None if not comparable."""
    delta = diff.metric(metric)
    return None if delta is None or delta.delta is None else -delta.delta


def _listing(title: str, items: list[str], sign: str, limit: int) -> list[str]:
    lines = ["", f"{title} ({len(items)})"]
    lines += [f"  {sign} {item}" for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"  … and {len(items) - limit} more (write them all with --json)")
    return lines


def format_diff(diff: ReportDiff, old_label: str = "old", new_label: str = "new", limit: int = 50) -> str:
    """A plain-text comparison for the terminal (at most ``limit`` lines per list)."""
    lines = [f"Comparing {old_label} → {new_label}"]
    if diff.config_changes:
        lines.append("")
        lines.append("Settings differ, so scores may not be comparable (they are relative to model and chunking):")
        for key, a, b in diff.config_changes:
            lines.append(f"  {key}: {a!r} → {b!r}")
    lines.append("")
    lines.append(f"{'metric':<18} {'old':>8} {'new':>8} {'delta':>8}")  # 18: testable_share_max
    for m in diff.metrics:
        lines.append(f"{m.name:<18} {_fmt(m.old):>8} {_fmt(m.new):>8} {_signed(m.delta):>8}")
    if diff.counts:
        lines.append("")
        lines.append(
            "; ".join(f"{key[2:]} {'n/a' if a is None else a} → {'n/a' if b is None else b}" for key, a, b in diff.counts)
        )
    if diff.documents:
        lines.append("")
        lines.append(f"{'document':<40} {'old':>8} {'new':>8} {'delta':>8} {'chunks':>11}")
        for d in diff.documents:
            chunks = f"{d.old_chunks}→{d.new_chunks}" if d.old_chunks != d.new_chunks else f"{d.new_chunks}"
            lines.append(
                f"{d.name[:40]:<40} {_fmt(d.old_coverage):>8} {_fmt(d.new_coverage):>8} {_signed(d.delta):>8} {chunks:>11}"
            )
    if diff.documents_added:
        lines += _listing(
            "Documents added", [f"{d.name} (coverage {_fmt(d.coverage)}, {d.n_chunks} chunks)" for d in diff.documents_added], "+", limit
        )
    if diff.documents_removed:
        lines += _listing(
            "Documents removed", [f"{d.name} (coverage {_fmt(d.coverage)}, {d.n_chunks} chunks)" for d in diff.documents_removed], "-", limit
        )
    if diff.questions_added or diff.questions_removed:
        if diff.questions_added:
            lines += _listing("Questions added", [shorten(xml_safe(q), 110) for q in diff.questions_added], "+", limit)
        if diff.questions_removed:
            lines += _listing("Questions removed", [shorten(xml_safe(q), 110) for q in diff.questions_removed], "-", limit)
    else:
        lines += ["", "No questions added or removed."]
    return "\n".join(lines)
