"""The downloads: the label-driven checks a report holds, the JSON and HTML reports, the saved-analysis zip,
the improved CSV.

No Streamlit: the Gap analysis page hands these to :func:`ui.widgets.file_download`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coverage_core.checks.answerability import DEFAULT_FITNESS_THRESHOLD
from coverage_core.checks.runner import run_label_checks
from coverage_core.outputs.report import build_report
from coverage_core.outputs.safe_csv import to_safe_csv
from coverage_core.results import Analysis
from coverage_core.types import QuestionSet
from ui import formats
from ui.messages import user_message
from ui.views.gaps import Improvement, improved_questions, normalize_suggestions


def inputs_record(documents, question_file) -> dict:
    """File names for the report's config (never contents, never a key)."""
    record: dict[str, Any] = {}
    if documents is not None:
        record["documents"] = list(documents.names)
    if question_file is not None:
        record["questions"] = question_file.name
    return record


@dataclass(frozen=True)
class Checks:
    """The label-driven checks of an analysis: retrieval and answerability (None when the CSV has no such column)."""

    retrieval: Any = None
    labels: Any = None
    answerability: Any = None
    subquestions: Any = None
    retrieval_error: str | None = None
    answerability_error: str | None = None


def checks(analysis: Analysis, settings) -> Checks:
    """Retrieval and answerability for the user's columns and k (fast: one top-k pass).

    A check whose column is unusable is None, with the reason in its
    ``*_error``; the other check is still computed.
    """
    found = run_label_checks(analysis, settings.relevant_column or None, int(settings.retrieval_k),
                             settings.label_column or None)
    return Checks(
        retrieval=found.retrieval, labels=found.labels, answerability=found.answerability,
        retrieval_error=user_message(found.retrieval_error) if found.retrieval_error else None,
        answerability_error=user_message(found.answerability_error) if found.answerability_error else None,
    )


def _report_parts(found: Checks | None, improvement: Improvement | None) -> dict:
    """The keyword arguments both reports take for the checks that ran and the Apply result (None leaves them out)."""
    found = found or Checks()
    return dict(
        retrieval=found.retrieval, answerability=found.answerability, labels=found.labels,
        subquestions=found.subquestions,
        improved=improvement.after if improvement is not None else None,
        accepted=(list(improvement.accepted_rows) or None) if improvement is not None else None,
    )


def report_json(
    analysis: Analysis, inputs: dict | None = None, found: Checks | None = None,
    improvement: Improvement | None = None,
) -> bytes:
    """The JSON report: the analysis, the checks that ran and, given the analysis's own Apply result, before → after.

    ``improvement`` must belong to ``analysis`` (the caller checks it, as for the HTML report); None leaves
    ``after_apply`` out.
    """
    report = build_report(analysis, inputs, **_report_parts(found, improvement))
    return json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8")


def html_report(
    analysis: Analysis, inputs: dict | None = None, found: Checks | None = None,
    improvement: Improvement | None = None, *, projection=None, fitness_threshold: float = DEFAULT_FITNESS_THRESHOLD,
) -> bytes:
    """The HTML report (charts included, works offline): what :func:`report_json` holds, the 2-D map if one was
    drawn (``projection``) and the fitness threshold the user chose."""
    from coverage_core.outputs.html_report import build_html_report

    return build_html_report(
        analysis, inputs=inputs, projection=projection, fitness_threshold=fitness_threshold,
        **_report_parts(found, improvement),
    ).encode("utf-8")


def saved_analysis_zip(
    analysis: Analysis, report: bytes, *, from_vectors: bool, question_file_name: str | None, decisions=None,
) -> bytes:
    """``analysis`` as the zip of a saved-analysis folder (``coverage_core.saved.analysis``), holding ``report``
    (:func:`report_json`) and ``decisions``, the user's decisions about the suggested questions
    (:class:`~coverage_core.decisions.SuggestionDecision`; None: none): the Upload page opens it again without
    embedding anything, with the suggestions table as the user left it."""
    import tempfile
    from pathlib import Path

    from coverage_core.saved.analysis import save_analysis, zip_folder

    with tempfile.TemporaryDirectory(prefix="coverage-save-") as scratch:
        folder = Path(scratch) / "analysis"
        parsed = json.loads(report)
        save_analysis(analysis, folder, report=parsed, inputs=parsed.get("config", {}).get("inputs"),
                      from_vectors=from_vectors, question_file_name=question_file_name, decisions=decisions)
        return zip_folder(folder)


# Field names a downloaded table may still carry, as a spreadsheet reader would name them. Other names get their
# underscores turned into spaces and a capital first letter ("best similarity" -> "Best similarity").
CSV_HEADERS = {
    "text": "Question",
    "max_similarity": "Best similarity",
    "is_outlier": "Off-topic",
    "is_gap": "Gap",
    "tested_share": "Tested share",
    "n_tested": "Passages tested",
    "n_chunks": "Passages",
    "n_questions": "Questions",
    "n_clusters": "Topics (K)",
    "size": "Passages",
    "share": "Share of corpus",
    "label": "Topic",
    "multi_threshold_coverage": formats.metric_label("multi_threshold"),
    "multi_n_coverage": formats.metric_label("multi_n"),
    "mrr": formats.MRR_LABEL,
    "point_biserial_r": formats.POINT_BISERIAL_LABEL,
}


def csv_header(name: object, headers: dict | None = None) -> str:
    """The header a downloaded table gives column ``name``: ``headers``' label for it, else :data:`CSV_HEADERS`',
    else the name in words, with a capital first letter ("tested_share" -> "Tested share")."""
    label = str((headers or {}).get(name) or CSV_HEADERS.get(str(name)) or str(name).replace("_", " "))
    return label[:1].upper() + label[1:]


def column_labels(column_config: dict) -> dict:
    """The labels a page's ``st.column_config`` gives its columns (for :func:`table_csv`'s ``headers``)."""
    return {name: config["label"] for name, config in column_config.items()
            if isinstance(config, dict) and config.get("label")}


def table_csv(frame, headers: dict | None = None, as_is: Sequence = ()) -> bytes:
    """``frame`` as a formula-safe CSV (``to_safe_csv``) with human headers (:func:`csv_header`).

    Columns named in ``as_is`` (names the user chose, such as a compared file's) keep their name exactly.
    Only the file is renamed, never ``frame``; a header two columns would share keeps the first column's
    label and falls back to the field name for the second.
    """
    names: list[str] = []
    for column in frame.columns:
        header = str(column) if column in as_is else csv_header(column, headers)
        names.append(header if header not in names else str(column))
    return to_safe_csv(frame.set_axis(names, axis=1))


SUGGESTION_HEADERS = {
    "accept": "Accepted", "question": "Question", "origin": "Origin", "cluster": "Gap topic (cluster)",
    "document": "Source document", "passage": "Source passage", "original": "Suggested as",
}
"""The headers of the suggestions CSV (:func:`suggestions_csv`), in its column order."""


def suggestions_csv(table) -> bytes:
    """The suggestions table as the user left it, formula-safe: each row's question as it stands, whether it is
    accepted ("yes"/"no"), its origin in words ("edited (from built-in model)" for a rewritten suggestion,
    :func:`coverage_core.outputs.gap_report.origin_words`), its gap's topic, its source document and its whole
    source passage (cells are never shortened), and the text it was suggested as ("" for your own rows)."""
    frame = normalize_suggestions(table).assign(
        accept=lambda f: f["accept"].map({True: "yes", False: "no"}),
        origin=lambda f: f["origin"].map(formats.origin_words),
    )
    return table_csv(frame[list(SUGGESTION_HEADERS)], SUGGESTION_HEADERS)


def improved_csv(
    questions: QuestionSet, texts: Sequence[str], rows: Sequence[dict] = (), relevant_column: str | None = None
) -> bytes:
    """The user's own table, in its own delimiter, with accepted suggestions appended and marked, formula-safe.

    ``rows`` (:func:`ui.views.gaps.accepted_rows`) give each added question's source: its document goes into the
    file's own source column (``relevant_column``, else one the retrieval check recognises by name) or a new
    ``source_document`` column, its passage into ``source_passage``, whole (:func:`ui.views.gaps.with_sources`).
    """
    improved = improved_questions(questions, texts, rows, relevant_column)
    return to_safe_csv(improved.frame, delimiter=questions.delimiter)
