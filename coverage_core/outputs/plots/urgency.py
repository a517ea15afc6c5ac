"""The one order in which charts and tables list topics and documents: most urgent first.

The verdicts themselves are taken in :mod:`coverage_core.verdicts`; this
module only orders what they decided, so that the Results page's charts and
topic table and the HTML report list a topic or a document at the same place.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coverage_core import verdicts
from coverage_core.suggest.gaps import GapConfig

__all__ = [
    "UNDERTESTED",
    "UNTESTED",
    "document_cut",
    "document_verdicts",
    "documents_by_urgency",
    "gap_measure",
    "topic_gaps",
    "topics_by_urgency",
]

UNTESTED = "untested"
UNDERTESTED = "under-tested"


def gap_measure(gaps: GapConfig) -> tuple[str, float]:
    """The clusters-table column the gap verdict reads under ``gaps.rule``, and its cut."""
    if gaps.rule == "coverage":
        return "coverage", gaps.gap_threshold
    return "tested_share", gaps.tested_share_threshold


def topic_gaps(clusters: pd.DataFrame, gaps: GapConfig) -> np.ndarray:
    """Which topics are gaps: the table's ``is_gap``, or :func:`coverage_core.verdicts.is_gap` without it."""
    if "is_gap" in clusters:
        return clusters["is_gap"].to_numpy(dtype=bool)
    tested_share = clusters["tested_share"] if "tested_share" in clusters else None
    return verdicts.is_gap(clusters["coverage"], tested_share, gaps)


def topics_by_urgency(clusters: pd.DataFrame, gaps: GapConfig | None = None) -> pd.DataFrame:
    """The clusters table (``Analysis.clusters``), most urgent topic first, index reset.

    Gaps come first, then the other topics; each group by the figure the
    chart and the table show (:func:`gap_measure`: the tested share under
    the default rule) ascending, rounded to the whole percent they are shown
    at (a two-decimal score under rule ``"coverage"``), so the order reads
    off the page; ties by size descending, then by cluster number. Topics
    with no measure (empty clusters) come last. ``is_gap`` is read from the
    table, or decided by :func:`coverage_core.verdicts.is_gap` when the
    column is missing. (The gap lists keep the core's own ranking,
    :func:`coverage_core.suggest.gaps.rank_gaps`.)
    """
    gaps = gaps or GapConfig()
    frame = clusters.reset_index(drop=True)
    is_gap = topic_gaps(frame, gaps)
    column, _ = gap_measure(gaps)
    shown = frame[column].astype(float).round(2)  # a share at whole percent, a score at two decimals
    keyed = frame.assign(_gap=~is_gap, _measure=shown)
    keyed = keyed.sort_values(["_gap", "_measure", "size", "cluster"], ascending=[True, True, False, True],
                              na_position="last", kind="stable")
    return frame.loc[keyed.index].reset_index(drop=True)


def document_cut() -> float:
    """The tested share under which a targeted document is under-tested (:data:`coverage_core.verdicts.UNDERTESTED_SHARE`)."""
    return float(verdicts.UNDERTESTED_SHARE)


def _flag(documents: pd.DataFrame, column: str) -> np.ndarray:
    if column in documents:
        return documents[column].fillna(False).to_numpy(dtype=bool)
    return np.zeros(len(documents), dtype=bool)


def document_verdicts(documents: pd.DataFrame) -> np.ndarray:
    """Each document's verdict as a word: :data:`UNTESTED`, :data:`UNDERTESTED` or ``""`` (fine).

    Read from the documents table's ``is_untested`` and, when the table has
    it, ``is_undertested`` columns; untested wins when both are set.
    """
    untested, undertested = _flag(documents, "is_untested"), _flag(documents, "is_undertested")
    return np.where(untested, UNTESTED, np.where(undertested, UNDERTESTED, ""))


def documents_by_urgency(documents: pd.DataFrame) -> pd.DataFrame:
    """The documents table (``Analysis.documents``), most urgent document first, index reset.

    Untested documents first, then under-tested ones, then the rest
    (:func:`document_verdicts`); within each, by tested share ascending,
    ties by document name.
    """
    frame = documents.reset_index(drop=True)
    verdict = document_verdicts(frame)
    group = np.select([verdict == UNTESTED, verdict == UNDERTESTED], [0, 1], default=2)
    keyed = frame.assign(_group=group, _share=frame["tested_share"].astype(float), _name=frame["document"].astype(str))
    keyed = keyed.sort_values(["_group", "_share", "_name"], na_position="last", kind="stable")
    return frame.loc[keyed.index].reset_index(drop=True)
