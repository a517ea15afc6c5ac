"""The shared look of every figure: colours, text limits, hover text, the layout rules.

The rules are described in :mod:`coverage_core.outputs.plots`; the figure
modules of this package build on these helpers.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core.stages.topics import display_names

# Colour encodes the verdict, the same in every figure: the warm colour marks
# what needs attention, the neutral one what is fine.
PROBLEM_COLOUR = "#e6550d"  # gap, untested, not supported, not answerable, off-topic
OK_COLOUR = "#4c78a8"  # covered, supported, answerable
GAP_COLOUR = LOW_COLOUR = UNTESTED_COLOUR = PROBLEM_COLOUR
# A milder problem: a document some questions target, but too few of its passages.
UNDERTESTED_COLOUR = "#fdae6b"
COVERED_COLOUR = OK_COLOUR
OUTLIER_COLOUR = PROBLEM_COLOUR
QUESTION_COLOUR = "#111111"
NEUTRAL_LINE = "#555555"

# Cluster colours on the maps: cool and neutral hues only, so that no topic
# reads as a verdict (red, orange and pink are left out) and the off-topic
# questions' orange stays apart. More clusters than colours cycle; the legend
# and the hover name every topic.
CLUSTER_COLOURS = (
    "#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#7f7f7f", "#bcbd22", "#0b3d91", "#00a08b",
    "#aa0dfe", "#6c7c32", "#3283fe", "#1c8356", "#778aae", "#da16ff", "#90ad1c", "#2ed9ff",
    "#750d86", "#1cbe4f", "#511cfb", "#a777f1", "#325a9b", "#565656", "#1cffce", "#b10da1",
)

METRIC_LABELS = {
    "tested_share": "Tested share",
    "basic": "Basic",
    "weighted": "Weighted",
    "balanced": "Balanced",
    "multi_threshold": "Nearby-topic score",
    "multi_n": "Nearest-topics score",
}
"""Each metric's name as every chart, card and table prints it: plain words, no method jargon."""

HOVER_CHARS = 160
# A title this long fits in ~600 px at Plotly's default title font (17 px).
TITLE_MAX_CHARS = 60
# Subtitle lines are wrapped at this many characters (12 px font).
SUBTITLE_LINE_CHARS = 70
# Legend entries and category tick labels are shortened to this many characters.
LEGEND_MAX_CHARS = 28
# Angular tick labels of the polar chart (the circle is small in a half-width column).
POLAR_TICK_CHARS = 14
POLAR_MAX_TICKS = 12
# Degrees left empty at the top of the polar chart for the radial axis labels.
POLAR_AXIS_GAP = 36.0


NO_CHANGE = "no change"


def percent_points(before: float, after: float) -> tuple[str, str]:
    """A share after a change, as a whole percent, and its change in percentage points to one decimal (a change
    under a point is still a passage tested): ``("45%", "+2.8 pts")``. Each share is rounded to the tenth of a
    point before they are subtracted, so a change is never "-0.0 pts" (:data:`NO_CHANGE` then). The dashboard's
    cards and the HTML report both say it this way."""
    shown_before, shown_after = round(100 * float(before), 1) + 0.0, round(100 * float(after), 1) + 0.0
    difference = round(shown_after - shown_before, 1) + 0.0
    return f"{100 * float(after):.0f}%", NO_CHANGE if difference == 0 else f"{difference:+.1f} pts"


def cluster_colour(cluster: int) -> str:
    return CLUSTER_COLOURS[int(cluster) % len(CLUSTER_COLOURS)]


def _flat(text: object) -> str:
    return " ".join(str(text).split())


def shorten_label(text: object, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (``…`` at the end when cut); not escaped."""
    flat = _flat(text)
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def hover_text(text: object, limit: int = HOVER_CHARS) -> str:
    """``text`` on one line, shortened to ``limit`` characters, HTML-escaped for a hover label."""
    return html.escape(shorten_label(text, limit), quote=False)


def legend_name(text: object, limit: int = LEGEND_MAX_CHARS) -> str:
    """A legend entry or tick label: ``text`` shortened to ``limit`` characters and HTML-escaped."""
    return hover_text(text, limit)


def hover_data(texts, documents, *extra) -> np.ndarray:
    """Hover columns, one row per point: the text and the document name shortened
    and escaped (:func:`hover_text`), then the ``extra`` columns as given.

    Returns an array of shape (n, 2 + len(extra)), also for n = 0.
    """
    columns = [[hover_text(t) for t in texts], [hover_text(d, 80) for d in documents], *extra]
    return np.column_stack(columns).reshape(len(columns[0]), len(columns))


_LEGENDS = {
    # Under the plot, in rows: ``yref="container"`` pins it to the bottom of
    # the figure and Plotly grows the bottom margin so that it never covers
    # the axis title or tick labels.
    "below": {
        "orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
        "x": 0.0, "xanchor": "left", "title": {"text": ""},
    },
    # Beside the plot (maps, many short entries).
    "side": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1.0, "yanchor": "top", "itemsizing": "constant"},
}


def _subtitle_lines(subtitle: str | Sequence[str] | None) -> list[str]:
    """``subtitle`` wrapped at :data:`SUBTITLE_LINE_CHARS`; a sequence gives paragraphs, each on new lines.

    Non-breaking spaces (``"\u00a0"``) keep words together (e.g. a metric and its value).
    """
    if not subtitle:
        return []
    paragraphs = [subtitle] if isinstance(subtitle, str) else [p for p in subtitle if p]
    lines: list[str] = []
    for paragraph in paragraphs:
        flat = re.sub(r"[ \t\r\n\f\v]+", " ", str(paragraph)).strip()
        lines += textwrap.wrap(flat, SUBTITLE_LINE_CHARS, break_long_words=False, break_on_hyphens=False)
    return lines


def layout(
    fig: go.Figure,
    title: str,
    subtitle: str | Sequence[str] | None = None,
    *,
    legend: str | None = "below",
    **extra,
) -> go.Figure:
    """The shared layout rules of every figure (see the module docstring).

    ``title`` (plain text, at most :data:`TITLE_MAX_CHARS` characters) is
    drawn at the top left, ``subtitle`` (plain text or a list of paragraphs,
    any length, wrapped at :data:`SUBTITLE_LINE_CHARS`) under it in a smaller grey font; the top
    margin is made for both. ``legend`` is ``"below"``, ``"side"`` or None
    (no legend). ``extra`` goes to ``update_layout`` (``height``,
    ``barmode``, …); a ``legend`` dict there is merged over the placement.
    """
    if len(title) > TITLE_MAX_CHARS:
        raise ValueError(f"title longer than {TITLE_MAX_CHARS} characters: {title!r}")
    lines = _subtitle_lines(subtitle)
    heading = {
        "text": html.escape(title, quote=False),
        "x": 0.0, "xref": "paper", "xanchor": "left",
        "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 14},
        "font": {"size": 17},
    }
    if lines:
        heading["subtitle"] = {
            "text": "<br>".join(html.escape(line, quote=False) for line in lines),
            "font": {"size": 12, "color": NEUTRAL_LINE},
        }
    legend_extra = extra.pop("legend", {})
    margin = {"l": 50, "r": 20, "t": 56 + 17 * len(lines), "b": 16 if legend == "below" else 40}
    margin.update(extra.pop("margin", {}))
    fig.update_layout(
        title=heading,
        margin=margin,
        hoverlabel={"align": "left"},
        showlegend=legend is not None,
        **extra,
    )
    if legend is not None:
        fig.update_layout(legend={**_LEGENDS[legend], **legend_extra})
    return fig


def topic_names(clusters: Sequence[int], labels=None) -> dict[int, str]:
    """One display name per cluster (:func:`coverage_core.stages.topics.display_names`).

    ``labels`` is the clusters table (``cluster`` and ``label`` columns, as
    ``Analysis.clusters``), a mapping cluster → label, a sequence indexed by
    cluster number, or None (the numbers, ``"C3"``). Names are made distinct
    over every labelled cluster, not only ``clusters``.
    """
    by_cluster: dict[int, object] = {}
    if isinstance(labels, pd.DataFrame):
        if "label" in labels and "cluster" in labels:
            by_cluster = dict(zip((int(c) for c in labels["cluster"]), labels["label"]))
    elif isinstance(labels, Mapping):
        by_cluster = {int(c): label for c, label in labels.items()}
    elif labels is not None:
        by_cluster = dict(enumerate(labels))
    wanted = [int(c) for c in clusters]
    every = sorted(set(by_cluster) | set(wanted))
    names = display_names(every, [by_cluster.get(c, "") for c in every])
    return {c: name for c, name in zip(every, names)}


def category_axis(names: Sequence[object], limit: int = LEGEND_MAX_CHARS) -> tuple[list[str], dict]:
    """Category values and axis settings for long names (topics, files).

    The values are the full names, escaped (so categories never merge and
    the hover shows the whole name); the tick labels are shortened to
    ``limit`` characters.
    """
    values = [hover_text(name) for name in names]
    axis = {
        "type": "category", "tickmode": "array", "tickvals": values,
        "ticktext": [legend_name(name, limit) for name in names], "automargin": True,
    }
    return values, axis


# Question markers on the maps: hollow or translucent and no larger than
# needed, so that the passages under them stay visible.
CHUNK_MARKER = {"size": 7, "opacity": 0.7}
QUESTION_MARKER = {"size": 9, "opacity": 0.75, "line": {"width": 1.5}}


def question_trace(part: pd.DataFrame, name: str, symbol: str, colour: str, customdata, details: str, **extra):
    """Questions (columns ``x``, ``y``) on a map as hollow ``symbol`` markers in ``colour``.

    The hover names the group (``name`` without its plural ``s``), then the
    question (``customdata[0]``), then ``details`` (a hover template).
    """
    return go.Scatter(
        x=part["x"],
        y=part["y"],
        mode="markers",
        name=name,
        marker={**QUESTION_MARKER, "symbol": symbol, "color": colour, "line": {**QUESTION_MARKER["line"], "color": colour}},
        customdata=customdata,
        hovertemplate=f"<b>{name[:-1]}</b><br>%{{customdata[0]}}<br>{details}<extra></extra>",
        **extra,
    )
