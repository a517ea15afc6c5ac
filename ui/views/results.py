"""The Results page's tables: clusters, documents, off-topic questions, near-duplicate groups."""

from __future__ import annotations

import numpy as np
import pandas as pd

from coverage_core.measure import document_verdict_warnings, tested_level
from coverage_core.outputs.plots import documents_by_urgency, topics_by_urgency
from coverage_core.outputs.report import offtopic_reason_words
from coverage_core.results import Analysis

CLUSTER_COLUMNS = ("topic", "tested_share", "is_gap", "n_tested", "size", "n_questions", "cluster", "example passage")
"""The topic table's shown columns, in order: the verdict (tested share, gap) right after the topic's name,
so that it is visible at 1280 px without scrolling; the other columns are in the CSV download. Under the
coverage-score gap rule the score the verdict reads follows the tested share (:func:`cluster_columns`)."""
SHARE_COLUMNS = ("tested_share", "share")
"""The shares of the topic and document tables, shown as whole percentages (``ui.columns.percents``)."""


def warnings_beside_the_verdict(analysis: Analysis) -> list[str]:
    """The analysis's warnings but those about untested and under-tested documents, which the page lists above."""
    listed = set(document_verdict_warnings(
        analysis.documents, analysis.config.tested_k, tested_level(analysis.calibration)))
    return [warning for warning in analysis.warnings if warning not in listed]


def cluster_table(analysis: Analysis) -> pd.DataFrame:
    """The clusters, most urgent first (as the per-topic chart: gaps, then by the figure shown), the
    :data:`CLUSTER_COLUMNS` first."""
    ordered = topics_by_urgency(analysis.clusters, analysis.config.gaps)
    frame = ordered.drop(columns=["representative_chunks"])
    if "label" in frame:
        frame = frame.rename(columns={"label": "topic"})
    frame["example passage"] = [chunks[0] if len(chunks) else "" for chunks in ordered["representative_chunks"]]
    first = cluster_columns(frame, analysis.config.gaps.rule)
    return frame[first + [column for column in frame if column not in first]]


def cluster_columns(table: pd.DataFrame, rule: str = "tested_share") -> list[str]:
    """The :data:`CLUSTER_COLUMNS` ``table`` has, in order; before topics are labelled the number names them.
    Under gap ``rule`` "coverage" the coverage score follows the tested share: the order reads it."""
    shown = [column for column in CLUSTER_COLUMNS if column in table]
    if "topic" not in table and "cluster" in shown:
        shown.insert(0, shown.pop(shown.index("cluster")))
    if rule == "coverage" and "coverage" in table:
        shown.insert(shown.index("tested_share") + 1 if "tested_share" in shown else 1, "coverage")
    return shown



DOCUMENT_COLUMNS = ("document", "verdict", "n_questions", "n_tested", "n_chunks", "tested_share",
                    "is_untested", "is_undertested", "is_low")
"""The document table's columns, in order: the verdict in words right after the name (the relative coverage
score is for method experts only: the CSV of the topics has the scores)."""


def document_table(analysis: Analysis) -> pd.DataFrame:
    """Every document, untested first, then under-tested, then the rest; least tested first within each."""
    frame = documents_by_urgency(analysis.documents)
    frame["verdict"] = np.select(
        [frame["is_untested"], frame["is_undertested"], frame["is_low"]],
        ["untested", "under-tested", "covered far less than the others"], default="",
    )
    return frame[[c for c in DOCUMENT_COLUMNS if c in frame]]


def off_topic_table(analysis: Analysis, overrides) -> pd.DataFrame:
    """Every question with its off-topic score (above 0 exactly when flagged), decision, reason in words and
    the numbers behind it, any override and its support (best similarity to any chunk), highest score first."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "off-topic score": table["offtopic_score"].astype(float),
            "off-topic": table["is_outlier"].astype(bool),
            "reason": [offtopic_reason_words(reason) for reason in table["offtopic_reason"]],
            "detail": table["offtopic_detail"].astype(str),
            "override": [
                "included by you" if int(r) in overrides.include else "excluded by you" if int(r) in overrides.exclude else ""
                for r in table["row"]
            ],
            "nearest document": table["nearest_document"],
            "best similarity": table["max_similarity"].astype(float),
        }
    )
    return frame.sort_values(["off-topic score", "row"], ascending=[False, True]).reset_index(drop=True)


def duplicate_table(analysis: Analysis) -> pd.DataFrame:
    """The groups of near-duplicate questions, largest first (``Analysis.duplicate_table``), other rows as text."""
    table = analysis.duplicate_table()
    table["other_rows"] = [", ".join(map(str, rows)) for rows in table["other_rows"]]
    return table.rename(
        columns={"n_questions": "questions", "other_rows": "other rows", "min_similarity": "lowest similarity"}
    )


def duplicate_members(analysis: Analysis, row: int) -> pd.DataFrame:
    """The questions of the near-duplicate group whose representative is file row ``row``, in file order."""
    groups = analysis.duplicate_groups
    rows = np.asarray(analysis.questions.rows)
    members = np.flatnonzero(groups.representative == int(np.flatnonzero(rows == row)[0]))
    return pd.DataFrame(
        {
            "row": rows[members],
            "question": [analysis.questions.questions[i].text for i in members],
            "similarity to the representative": groups.similarity[members],
        }
    )
