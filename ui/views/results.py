"""The Results page's tables: clusters, documents, off-topic questions, near-duplicate groups."""

from __future__ import annotations

import numpy as np
import pandas as pd

from coverage_core.results import Analysis


def cluster_table(analysis: Analysis) -> pd.DataFrame:
    frame = analysis.clusters.drop(columns=["representative_chunks"]).copy()
    if "label" in frame:  # the topic's name right after its number
        frame.insert(1, "topic", frame.pop("label"))
    frame["example passage"] = [chunks[0] if len(chunks) else "" for chunks in analysis.clusters["representative_chunks"]]
    return frame


def document_table(analysis: Analysis) -> pd.DataFrame:
    frame = analysis.documents.copy()
    untested = frame["is_untested"] if "is_untested" in frame else np.zeros(len(frame), dtype=bool)
    frame["flag"] = np.where(untested, "untested", np.where(frame["is_low"], "covered far less than the others", ""))
    return frame.sort_values(["coverage", "document"]).reset_index(drop=True)


def off_topic_table(analysis: Analysis, overrides) -> pd.DataFrame:
    """Every question with its off-topic score, decision, any override and its support (best similarity
    to any chunk), highest score first."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "outlier score": table["outlier_score"].astype(float),
            "off-topic": table["is_outlier"].astype(bool),
            "override": [
                "included by you" if int(r) in overrides.include else "excluded by you" if int(r) in overrides.exclude else ""
                for r in table["row"]
            ],
            "nearest document": table["nearest_document"],
            "best similarity": table["max_similarity"].astype(float),
        }
    )
    return frame.sort_values(["outlier score", "row"], ascending=[False, True]).reset_index(drop=True)


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
