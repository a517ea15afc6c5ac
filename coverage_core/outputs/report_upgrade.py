"""Older JSON reports read as the current schema: renamed fields mapped, the keys later versions added.

What each schema version changed is in :mod:`coverage_core.outputs.report`;
:func:`upgrade_report` gives a report of any earlier version the current
version's names and keys, keeping its ``schema_version``.
"""

from __future__ import annotations

from collections.abc import Mapping

from coverage_core.errors import InputError
from coverage_core.languages import UNDETERMINED
from coverage_core.outputs.gap_report import gaps_from_clusters

__all__ = ["RENAMED_FIELDS", "upgrade_report"]

RENAMED_FIELDS = {
    ("calibration", "topic_threshold"): "question_support_threshold",
    ("traffic", "answer_threshold"): "question_support_threshold",
}
"""``(section, old name) -> new name`` for the fields schema 3 renamed."""


def upgrade_report(report: Mapping) -> dict:
    """A copy of ``report`` (schema 1 to 6) with schema 6's field names and keys.

    Renamed fields go under their schema-3 names; a report older than schema 4
    gets the keys schema 4 added, one older than schema 5 those schema 5 added
    (every language ``"und"``), one older than schema 6 its ``gaps``, as the
    report module's docstring says. Only the changed sections are copied; ``schema_version`` stays, as it tells which
    decisions the report carries (before schema 4, ``is_untested`` was "less
    than 30% of the passages reached at τ", with no top-k).

    The report may come from anyone (a saved analysis, a file given to
    compare): a section of the wrong type is left as it is rather than
    upgraded, so any JSON object comes through; anything else is an
    InputError.
    """
    if not isinstance(report, Mapping):
        raise InputError(f"The report is a JSON {type(report).__name__}, not an object; give a report this program wrote.")
    upgraded = dict(report)
    for (section, old), new in RENAMED_FIELDS.items():
        fields = upgraded.get(section)
        if isinstance(fields, Mapping) and old in fields:
            fields = dict(fields)
            fields.setdefault(new, fields.pop(old))
            upgraded[section] = fields
    version = upgraded.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        return upgraded
    if version < 4:
        _add_schema_4_keys(upgraded)
    if version < 5:
        _add_schema_5_keys(upgraded)
    if version < 6:
        upgraded.setdefault("gaps", gaps_from_clusters(_plain_clusters(upgraded.get("clusters"))))
    return upgraded


def _plain_clusters(clusters) -> list:
    """The clusters of an old report with the lists its gaps are built from as lists (of text for the themes),
    whatever the file held there."""
    if not isinstance(clusters, list):
        return []
    plain = []
    for cluster in clusters:
        if not isinstance(cluster, Mapping):
            continue
        themes, suggested = cluster.get("themes"), cluster.get("suggested_questions")
        plain.append({
            **cluster, "themes": [str(theme) for theme in themes] if isinstance(themes, list) else [],
            "suggested_questions": suggested if isinstance(suggested, list) else [],
        })
    return plain


def _add_schema_5_keys(report: dict) -> None:
    report.setdefault("languages", {"documents": [], "questions": []})
    for section in ("documents", "questions"):
        if isinstance(report.get(section), list):
            report[section] = [
                {"language": UNDETERMINED, **item} if isinstance(item, Mapping) else item for item in report[section]
            ]


def _add_schema_4_keys(report: dict) -> None:
    calibration = report.get("calibration")
    if isinstance(calibration, Mapping) and "reliable" not in calibration:
        method = str(calibration.get("method") or "")
        fell_back = method.startswith("default")
        report["calibration"] = {
            **calibration, "reliable": not fell_back,
            "reason": f"The support level is a default: {method.removeprefix('default: ')}." if fell_back else "",
        }
    if isinstance(report.get("documents"), list):
        report["documents"] = [
            {"n_questions": None, "is_undertested": False, **document} if isinstance(document, Mapping) else document
            for document in report["documents"]
        ]
    if isinstance(report.get("questions"), list):
        report["questions"] = [
            {"offtopic_reason": None if question.get("is_outlier") else "", "offtopic_detail": None,
             "offtopic_score": None, "offtopic_rule": None if question.get("is_outlier") else "", **question} if isinstance(question, Mapping) else question
            for question in report["questions"]
        ]
