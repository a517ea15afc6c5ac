"""Column configs of the pages' tables: short headers that read whole at 1280 px, shares in whole percent.

Streamlit's table cuts a header to its column's width ("passages te"), so
every column here gets a width made for its label (:func:`header_width`),
and a longer explanation goes into the header's help. Shares are shown as
whole percentages, as the charts and the headline round them: a table gets
them through :func:`percents` (0-100) and :func:`percent_column`, never
Streamlit's "percent" format, which shows 44.44%.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import streamlit as st

PERCENT_FORMAT = "%d%%"
"""A whole percentage of a value already in 0-100 (:func:`percents`)."""
HEADER_CHAR_PX = 8
"""Width of one header character at the table's 14 px font, rounded up (wide letters included)."""
HEADER_PADDING_PX = 44
"""A header's padding, its sort arrow and its menu button."""
DASH = "—"
"""What a table shows for a value that does not exist (a page of a text file, a query without a topic)."""


def header_width(label: str, minimum: int = 0) -> int:
    """The width in pixels at which ``label`` shows whole as a column header."""
    return max(minimum, HEADER_CHAR_PX * len(label) + HEADER_PADDING_PX)


def fits(config: dict) -> bool:
    """Whether a column config's header reads whole at its width (a named width: small 75, medium 200, large 400)."""
    label = config.get("label") or ""
    width = config.get("width")
    if width is None:
        return not label
    return int({"small": 75, "medium": 200, "large": 400}.get(width, width)) >= header_width(label)


def percents(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """A copy of ``frame`` with each of ``columns`` (shares from 0 to 1) as a whole percentage from 0 to 100,
    rounded as ``f"{share:.0%}"`` rounds (empty where there is no share)."""
    shown = frame.copy()
    for column in columns:
        if column in shown:
            values = pd.to_numeric(shown[column], errors="coerce").astype(float)
            shown[column] = pd.array(
                [pd.NA if not math.isfinite(v) else int(np.round(100 * v)) for v in values], dtype="Int64"
            )
    return shown


def percent_column(label: str, *, bar: bool = False, help: str | None = None, minimum: int = 0):
    """A whole-percent column of :func:`percents` values: a bar from 0 to 100% with ``bar``, else a number."""
    if bar:
        return st.column_config.ProgressColumn(label, min_value=0, max_value=100, format=PERCENT_FORMAT, help=help,
                                               width=header_width(label, max(minimum, 110)))
    return st.column_config.NumberColumn(label, format=PERCENT_FORMAT, help=help, width=header_width(label, minimum))


def score_column(label: str, *, help: str | None = None):
    """A relative score (three decimals), its header whole: for the experts' tables only."""
    from ui import formats

    return st.column_config.NumberColumn(label, format=formats.SCORE_FORMAT, help=help, width=header_width(label))


def count_column(label: str, *, help: str | None = None, minimum: int = 0):
    """A count, its header whole."""
    return st.column_config.NumberColumn(label, help=help, width=header_width(label, minimum), format="%d")


def text_column(label: str, width: int | str = "medium", *, help: str | None = None):
    """A text column of ``width`` (at least its header's)."""
    if isinstance(width, int):
        width = header_width(label, width)
    return st.column_config.TextColumn(label, help=help, width=width)


def dashes(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """A copy of ``frame`` with each of ``columns`` as text, :data:`DASH` where it has no value (never "None")."""
    shown = frame.copy()
    for column in columns:
        if column in shown:
            shown[column] = [DASH if _missing(v) else str(v) for v in shown[column]]
    return shown


def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


# ---------------------------------------------------------------- the Results page's tables
def topic_columns() -> dict:
    """The Results topic table's columns (``ui.views.results.cluster_table`` after :func:`percents`)."""
    return {
        "cluster": count_column("cluster"),
        "topic": text_column("topic", 240),
        "tested_share": percent_column("share tested", bar=True, help="Share of the topic's passages that some "
                                       "on-topic question tests."),
        "is_gap": st.column_config.CheckboxColumn("gap", width=header_width("gap")),
        "n_tested": count_column("tested", help="Passages of the topic that some on-topic question tests."),
        "size": count_column("passages", help="Passages in the topic."),
        "n_questions": count_column(
            "questions", help="On-topic questions whose closest topic is this one (each question counts once)."),
        "share": percent_column("of corpus", help="The topic's share of all passages."),
        "example passage": text_column("most central passage", "large"),
    }


def document_columns() -> dict:
    """The Results document table's columns (``ui.views.results.document_table`` after :func:`percents`)."""
    return {
        "document": text_column("document", 220),
        "verdict": text_column("verdict", 100),  # "under-tested" whole
        "n_questions": count_column("questions", help="On-topic questions that target the document."),
        "n_tested": count_column("tested", help="Passages of the document that some on-topic question tests."),
        "n_chunks": count_column("passages", help="Passages in the document."),
        "tested_share": percent_column("share tested", bar=True, help="Share of the document's passages "
                                       "that some on-topic question tests."),
    }


def traffic_topic_columns() -> dict:
    """The Production traffic page's topic table (``ui.views.traffic.traffic_topic_table``)."""
    return {
        "topic": text_column("topic", 240),
        "queries": count_column("queries", help="Queries of the topic, repeats counted."),
        "share of traffic": percent_column("of traffic", help="The topic's share of all queries, repeats counted."),
        "tested": percent_column("share tested", help="Share of the topic's queries that a test question matches "
                                 "closely."),
        "most asked": text_column("most asked", "large"),
    }


# ---------------------------------------------------------------- the Gap analysis page's tables
GAP_TABLE_SHOWN = ("rank", "topic", "tested share", "size", "themes", "suggested questions", "cluster")
"""The gap table's shown columns (``ui.views.gaps.gap_table``): its relative score and corpus share are not."""
PASSAGES_SHOWN = ("cluster", "document", "page", "passage")
"""The least-covered passages' shown columns (``ui.views.gaps.least_covered_passages``): least covered first,
without the distance (a relative figure)."""


def gap_columns() -> dict:
    return {
        "rank": count_column("rank"),
        "topic": text_column("gap", 240),
        "tested share": percent_column("share tested", help="Share of the gap's passages that some on-topic "
                                       "question tests."),
        "size": count_column("passages"),
        "themes": text_column("themes", "medium"),
        "suggested questions": text_column("suggested questions", "large"),
        "cluster": count_column("cluster"),
    }


def passage_columns() -> dict:
    return {
        "cluster": count_column("cluster"),
        "document": text_column("document", 200),
        "page": count_column("page", help="The page of a PDF; a text file has none."),
        "passage": text_column("passage", "large"),
    }


def share_delta_columns(names: tuple[str, str]) -> dict:
    """The per-topic tested share before and after (``ui.views.compare.tested_share_deltas``)."""
    return {
        "topic": text_column("topic", 240),
        "passages": count_column("passages"),
        names[0]: percent_column(names[0], minimum=80),
        names[1]: percent_column(names[1], minimum=80),
        "change": text_column("change", 90, help="In percentage points, between the shares as shown."),
        "cluster": count_column("cluster"),
    }
