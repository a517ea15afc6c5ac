"""Plotly figures of an analysis. Builders take data and return a ``go.Figure``.

Nothing here displays anything: the dashboard passes the figures to
``st.plotly_chart`` and the HTML report embeds them. The builders take plain
tables (pandas) so they can be tested, and reused, without running an
analysis; :func:`map_frames` turns an analysis and its 2-D projection into
the tables :func:`coverage_map` draws.

User text (questions, passages, file names) is shown only in hover labels and
is HTML-escaped first: Plotly renders a subset of HTML in labels, and a
question such as ``<a href=...>`` must show as text, not as a link.

Every figure must read at 1280 px wide and in a half-width column
(~420 px); the rules live in :func:`_layout`:

* a title of at most :data:`TITLE_MAX_CHARS` characters, details and notes
  in a smaller subtitle under it (wrapped), with a top margin made for both;
* the legend in a horizontal row under the plot (``"below"``), or beside
  it for maps with many entries (``"side"``); legend names are shortened to
  :data:`LEGEND_MAX_CHARS` characters (:func:`legend_name`), the full name
  stays in the hover label;
* clusters are named by their topic label (``"koala · species · australia"``,
  :func:`coverage_core.stages.topics.display_names`), never by their number alone
  when a label exists;
* colour encodes the verdict the same way everywhere: problems (gap,
  untested, not supported, not answerable, off-topic) are the warm
  :data:`PROBLEM_COLOUR`, healthy values the neutral :data:`OK_COLOUR`;
  cluster colours on the maps never use red or orange.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core.stages.topics import display_names

if TYPE_CHECKING:  # only for type hints: this module must import without the pipeline
    from coverage_core.pipeline import Analysis
    from coverage_core.outputs.projection import Projection

__all__ = [
    "CLUSTER_COLOURS",
    "LEGEND_MAX_CHARS",
    "METRIC_LABELS",
    "OK_COLOUR",
    "PROBLEM_COLOUR",
    "TITLE_MAX_CHARS",
    "before_after_clusters",
    "cluster_colour",
    "cluster_coverage_bar",
    "coverage_map",
    "document_coverage_bar",
    "hover_text",
    "legend_name",
    "map_frames",
    "metric_comparison_bar",
    "similarity_polar",
    "similarity_ranked",
    "traffic_topics",
    "traffic_weekly",
]

# Colour encodes the verdict, the same in every figure: the warm colour marks
# what needs attention, the neutral one what is fine.
PROBLEM_COLOUR = "#e6550d"  # gap, untested, not supported, not answerable, off-topic
OK_COLOUR = "#4c78a8"  # covered, supported, answerable
GAP_COLOUR = LOW_COLOUR = PROBLEM_COLOUR
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
    "weighted": "Weighted (= basic)",
    "balanced": "Balanced",
    "multi_threshold": "Multi-threshold",
    "multi_n": "Multi-N",
}

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


def cluster_colour(cluster: int) -> str:
    return CLUSTER_COLOURS[int(cluster) % len(CLUSTER_COLOURS)]


def _flat(text: object) -> str:
    return " ".join(str(text).split())


def _shorten(text: object, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (``…`` at the end when cut); not escaped."""
    flat = _flat(text)
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def hover_text(text: object, limit: int = HOVER_CHARS) -> str:
    """``text`` on one line, shortened to ``limit`` characters, HTML-escaped for a hover label."""
    return html.escape(_shorten(text, limit), quote=False)


def legend_name(text: object, limit: int = LEGEND_MAX_CHARS) -> str:
    """A legend entry or tick label: ``text`` shortened to ``limit`` characters and HTML-escaped."""
    return hover_text(text, limit)


def _hover_data(texts, documents, *extra) -> np.ndarray:
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


def _layout(
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


def _topic_names(clusters: Sequence[int], labels=None) -> dict[int, str]:
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


def _category_axis(names: Sequence[object], limit: int = LEGEND_MAX_CHARS) -> tuple[list[str], dict]:
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


# --------------------------------------------------------------------------
# clusters and documents
# --------------------------------------------------------------------------


def cluster_coverage_bar(clusters: pd.DataFrame, gap_threshold: float | None = None) -> go.Figure:
    """Coverage per topic, gaps in the warm colour, with the gap threshold as a dashed line.

    ``clusters`` has the columns of ``Analysis.clusters``: ``cluster``,
    ``size``, ``share``, ``coverage``, ``n_questions`` (``is_gap`` and
    ``label`` optional). Bars are sorted by coverage, lowest first, so the
    worst topics lead; they are named by topic label (shortened on the axis,
    in full in the hover).
    """
    frame = clusters.sort_values(["coverage", "cluster"], na_position="first").reset_index(drop=True)
    if "is_gap" in frame:
        is_gap = frame["is_gap"].astype(bool).to_numpy()
    elif gap_threshold is not None:
        is_gap = (frame["coverage"] < gap_threshold).to_numpy()
    else:
        is_gap = np.zeros(len(frame), dtype=bool)
    names = display_names(frame["cluster"], frame["label"] if "label" in frame else None)
    x, axis = _category_axis(names)
    fig = go.Figure(
        go.Bar(
            x=x,
            y=frame["coverage"].fillna(0.0),
            marker={"color": [GAP_COLOUR if g else COVERED_COLOUR for g in is_gap]},
            customdata=np.column_stack(
                [frame["size"], frame["share"] * 100, frame["n_questions"], np.where(is_gap, "gap", "")]
            ),
            hovertemplate=(
                "%{x}<br>coverage %{y:.3f}<br>%{customdata[0]} chunks (%{customdata[1]:.1f}%)"
                "<br>%{customdata[2]} questions cover it<br>%{customdata[3]}<extra></extra>"
            ),
            name="coverage",
        )
    )
    if gap_threshold is not None:
        fig.add_hline(
            y=gap_threshold,
            line={"dash": "dash", "color": NEUTRAL_LINE},
            annotation_text=f"gap threshold {gap_threshold:.2f}",
            annotation_position="top left",
        )
    fig.update_xaxes(title="topic (lowest coverage first)", **axis)
    fig.update_yaxes(title="coverage (relative)")
    return _layout(fig, "Coverage per topic", "Orange: gap (a topic the questions barely test).", legend=None)


def document_coverage_bar(documents: pd.DataFrame) -> go.Figure:
    """Coverage per document; documents flagged ``is_low`` in the warm colour.

    ``documents`` has the columns of ``Analysis.documents``: ``document``,
    ``n_chunks``, ``coverage``, ``is_low``.
    """
    frame = documents.sort_values(["coverage", "document"]).reset_index(drop=True)
    low = frame["is_low"].astype(bool).to_numpy()
    names, axis = _category_axis(frame["document"], 40)
    fig = go.Figure(
        go.Bar(
            x=frame["coverage"],
            y=names,
            orientation="h",
            marker={"color": [LOW_COLOUR if flag else COVERED_COLOUR for flag in low]},
            customdata=np.column_stack(
                [frame["n_chunks"], np.where(low, "untested or possibly misaligned", "")]
            ),
            hovertemplate="%{y}<br>coverage %{x:.3f}<br>%{customdata[0]} chunks<br>%{customdata[1]}<extra></extra>",
        )
    )
    fig.update_xaxes(title="coverage (relative)")
    fig.update_yaxes(title="", **axis)
    return _layout(
        fig, "Coverage per document", "Orange: untested or possibly misaligned.",
        legend=None, height=max(260, 28 * len(frame) + 120),
    )


def before_after_clusters(before: pd.DataFrame, after: pd.DataFrame, names: Sequence[str] = ("before", "after")) -> go.Figure:
    """Grouped bars of per-topic coverage of two question sets on the same clusters."""
    merged = before[["cluster", "coverage"]].merge(
        after[["cluster", "coverage"]], on="cluster", suffixes=("_a", "_b"), how="outer"
    ).sort_values("coverage_a", na_position="first")
    source = before if "label" in before else after
    topics = _topic_names(merged["cluster"], source[["cluster", "label"]] if "label" in source else None)
    x, axis = _category_axis([topics[int(c)] for c in merged["cluster"]])
    delta = (merged["coverage_b"] - merged["coverage_a"]).to_numpy()
    fig = go.Figure()
    for column, name, colour in (("coverage_a", names[0], "#9ecae1"), ("coverage_b", names[1], "#08519c")):
        fig.add_trace(
            go.Bar(
                x=x,
                y=merged[column],
                name=legend_name(name),
                marker={"color": colour},
                customdata=delta,
                hovertemplate=(
                    "%{x}<br>coverage %{y:.3f}<br>change %{customdata:+.3f}<extra>"
                    + hover_text(name, 80) + "</extra>"
                ),
            )
        )
    fig.update_xaxes(title="topic", **axis)
    fig.update_yaxes(title="coverage (relative)")
    return _layout(
        fig, "Coverage per topic, before and after",
        f"{_shorten(names[0], 60)} (light) vs {_shorten(names[1], 60)} (dark)", barmode="group",
    )


# Series colours for question sets and metrics: blues, greens, purple, none warm
# (warm means a problem, see PROBLEM_COLOUR).
SERIES_COLOURS = ("#9ecae1", "#08519c", "#74c476", "#756bb1", "#31a354", "#636363")


def metric_comparison_bar(sets: Mapping[str, Mapping[str, float]]) -> go.Figure:
    """Grouped bars of the coverage metrics of several question sets (same corpus and clusters)."""
    fig = go.Figure()
    for position, (name, values) in enumerate(sets.items()):
        keys = [key for key in METRIC_LABELS if key in values]
        fig.add_trace(
            go.Bar(
                x=[METRIC_LABELS[key] for key in keys],
                y=[values[key] for key in keys],
                name=legend_name(name),
                marker={"color": SERIES_COLOURS[position % len(SERIES_COLOURS)]},
                hovertemplate="%{x}: %{y:.3f}<extra>" + hover_text(name, 80) + "</extra>",
            )
        )
    fig.update_yaxes(title="coverage (relative)")
    return _layout(fig, "Coverage metrics per question set", barmode="group")


# --------------------------------------------------------------------------
# the 2-D map
# --------------------------------------------------------------------------


def map_frames(analysis: "Analysis", projection: "Projection") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables :func:`coverage_map` draws, from an analysis and its projection.

    The projection may be older than the clustering (it is recomputed only
    when the vectors change): chunk colours always use the current labels.
    Only the drawn (possibly sampled) chunks and questions are in the
    tables; ``projection.caption`` says what was sampled.
    Both tables carry the topic ``label`` of each point's cluster when the
    analysis has labels.
    """
    chunks = analysis.corpus.chunks
    index = np.asarray(projection.chunk_index, dtype=int)
    chunk_frame = pd.DataFrame(
        {
            "x": projection.chunk_xy[:, 0] if len(index) else [],
            "y": projection.chunk_xy[:, 1] if len(index) else [],
            "cluster": analysis.clustering.labels[index],
            "text": [chunks[i].text for i in index],
            "document": [chunks[i].document for i in index],
        }
    )
    table = analysis.question_table
    drawn = getattr(projection, "question_index", None)  # None: every question, in order
    rows = np.arange(len(projection.question_xy)) if drawn is None else np.asarray(drawn, dtype=int)
    keep = rows < len(table)
    rows, question_xy = rows[keep], np.asarray(projection.question_xy)[keep]
    question_frame = pd.DataFrame(
        {
            "x": question_xy[:, 0],
            "y": question_xy[:, 1],
            "text": table["text"].to_numpy()[rows],
            "document": table["nearest_document"].to_numpy()[rows],
            "cluster": table["cluster"].to_numpy()[rows],
            "is_outlier": table["is_outlier"].to_numpy()[rows].astype(bool),
        }
    )
    if "label" in analysis.clusters:
        by_cluster = dict(zip((int(c) for c in analysis.clusters["cluster"]), analysis.clusters["label"]))
        for frame in (chunk_frame, question_frame):
            frame["label"] = [by_cluster.get(int(c), "") for c in frame["cluster"]]
    return chunk_frame, question_frame


# Question markers on the maps: hollow or translucent and no larger than
# needed, so that the passages under them stay visible.
CHUNK_MARKER = {"size": 7, "opacity": 0.7}
QUESTION_MARKER = {"size": 9, "opacity": 0.75, "line": {"width": 1.5}}


def _question_trace(part: pd.DataFrame, name: str, symbol: str, colour: str, customdata, details: str, **extra):
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


def _metrics_line(metrics: Mapping[str, float] | None) -> str:
    if not metrics:
        return ""
    values = [f"{METRIC_LABELS[k]} {v:.3f}".replace(" ", "\u00a0") for k, v in metrics.items() if k in METRIC_LABELS]
    return ("Coverage (relative): " + " · ".join(values)) if values else ""


def coverage_map(
    chunks: pd.DataFrame,
    questions: pd.DataFrame,
    metrics: Mapping[str, float] | None = None,
    caption: str | None = None,
    labels=None,
) -> go.Figure:
    """Chunks coloured by topic, questions as hollow diamonds, off-topic ones apart.

    ``chunks``: columns ``x``, ``y``, ``cluster``, ``text``, ``document``
    (``label`` optional). ``questions``: columns ``x``, ``y``, ``text``,
    ``document`` (nearest document), ``cluster``, ``is_outlier``. Hover
    shows the shortened text, its file and its topic. Topics are named by
    ``labels`` (the clusters table, or a mapping cluster → label) or else by
    the chunks' ``label`` column; legend names are shortened. ``metrics``
    and ``caption`` are written in the subtitle, so nothing covers the map.
    """
    fig = go.Figure()
    clusters = sorted(int(c) for c in pd.unique(chunks["cluster"])) if len(chunks) else []
    if labels is None and "label" in chunks:
        labels = dict(zip((int(c) for c in chunks["cluster"]), chunks["label"]))
    topics = _topic_names(clusters + [int(c) for c in questions["cluster"]], labels)
    for position, cluster in enumerate(clusters):
        part = chunks[chunks["cluster"] == cluster]
        fig.add_trace(
            go.Scattergl(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=legend_name(topics[cluster]),
                legendgroup="chunks",
                legendgrouptitle={"text": "chunks by topic"} if position == 0 else None,
                marker={**CHUNK_MARKER, "color": cluster_colour(cluster)},
                customdata=_hover_data(part["text"], part["document"]),
                hovertemplate=(
                    "<b>chunk</b> of %{customdata[1]}<br>topic: " + hover_text(topics[cluster])
                    + "<br>%{customdata[0]}<extra></extra>"
                ),
            )
        )
    for flag, name, symbol, colour in (
        (False, "questions", "diamond-open", QUESTION_COLOUR),
        (True, "off-topic questions", "x-thin-open", OUTLIER_COLOUR),
    ):
        part = questions[questions["is_outlier"].astype(bool) == flag]
        if part.empty:
            continue
        customdata = _hover_data(
            part["text"], part["document"], ["topic: " + hover_text(topics[int(c)]) for c in part["cluster"]]
        )
        fig.add_trace(
            _question_trace(
                part, name, symbol, colour, customdata, "nearest file: %{customdata[1]}<br>%{customdata[2]}",
                legendgroup="questions",
            )
        )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    return _layout(fig, "Map of chunks and questions", [_metrics_line(metrics), caption or ""], legend="side", height=640)


# --------------------------------------------------------------------------
# knowledge-base fitness: how well the corpus supports each question
# --------------------------------------------------------------------------


UNSUPPORTED_NAME = "the knowledge base may not answer this"
# The two groups both fitness views draw: (is below the threshold, legend name, colour).
_SUPPORT_GROUPS = (
    (False, "supported", OK_COLOUR),
    (True, UNSUPPORTED_NAME, PROBLEM_COLOUR),
)


def _fitness_frame(questions: pd.DataFrame) -> pd.DataFrame:
    frame = questions.sort_values(["max_similarity", "row"] if "row" in questions else ["max_similarity"],
                                  ascending=[False, True] if "row" in questions else [False])
    frame = frame.reset_index(drop=True)
    frame["rank"] = np.arange(1, len(frame) + 1)
    return frame


def _support_groups(frame: pd.DataFrame, threshold: float) -> list[tuple[pd.DataFrame, str, str]]:
    """(questions, legend name, colour) for the questions at or above ``threshold``, then those below it."""
    unsupported = frame["max_similarity"] < threshold
    return [(frame[unsupported == flag], name, colour) for flag, name, colour in _SUPPORT_GROUPS]


def _question_topics(frame: pd.DataFrame, labels) -> list[str]:
    """The topic name of each question (``cluster`` column, named by ``labels`` or a ``label`` column), escaped."""
    if "cluster" not in frame:
        return [""] * len(frame)
    if labels is None and "label" in frame:
        labels = dict(zip((int(c) for c in frame["cluster"]), frame["label"]))
    topics = _topic_names(frame["cluster"], labels)
    return [hover_text(topics[int(c)]) for c in frame["cluster"]]


def similarity_ranked(questions: pd.DataFrame, threshold: float, labels=None) -> go.Figure:
    """Every question's best similarity to any chunk, in decreasing order.

    ``questions`` has ``text``, ``max_similarity``, ``nearest_document`` (and
    optionally ``row`` and ``cluster``). Questions below ``threshold`` are
    drawn in the warm colour: the knowledge base may not answer them. With a
    ``cluster`` column the hover names each question's topic, by ``labels``
    (the clusters table, or a mapping cluster → label) when given.
    """
    frame = _fitness_frame(questions)
    frame["topic"] = _question_topics(frame, labels)
    fig = go.Figure()
    for part, name, colour in _support_groups(frame, threshold):
        fig.add_trace(
            go.Scatter(
                x=part["rank"],
                y=part["max_similarity"],
                mode="markers",
                name=name,
                marker={"color": colour, "size": 6},
                customdata=_hover_data(part["text"], part["nearest_document"], part["topic"]),
                hovertemplate=(
                    "#%{x}: similarity %{y:.3f}<br>%{customdata[0]}<br>nearest file: %{customdata[1]}"
                    + ("<br>topic: %{customdata[2]}" if "cluster" in frame else "") + "<extra></extra>"
                ),
            )
        )
    fig.add_hline(
        y=threshold, line={"dash": "dash", "color": NEUTRAL_LINE},
        annotation_text=f"threshold {threshold:.2f}", annotation_position="top left",
    )
    fig.update_xaxes(title="questions, best supported first", nticks=6)
    fig.update_yaxes(title="best similarity to any chunk", nticks=6)
    return _layout(
        fig, "Support for each question",
        "Best similarity to any chunk, highest first; dashed: the threshold.", height=460,
    )


def _polar_tick_names(names: Sequence[str]) -> list[str]:
    """Short angular tick labels: a topic's first term when that is distinct, else the name shortened."""
    firsts = [name.split("·")[0].strip() for name in names]
    distinct = len(set(firsts)) == len(firsts)
    return [legend_name(first if distinct else name, POLAR_TICK_CHARS) for first, name in zip(firsts, names)]


def similarity_polar(questions: pd.DataFrame, threshold: float, labels=None) -> go.Figure:
    """Questions around a circle; distance from the centre is 1 − best similarity.

    Well-supported questions sit near the centre. Angles group questions by
    their cluster (one sector per topic, questions spread within it), so a
    topic whose questions all sit far out stands out. The dashed circle is
    the threshold. Sectors are named by ``labels`` (the clusters table, or a
    mapping cluster → label; else a ``label`` column of ``questions``, else
    the cluster numbers): the tick shows the topic's first term, the hover
    the whole label.
    """
    frame = questions.copy()
    frame["r"] = 1.0 - frame["max_similarity"].astype(float)
    if "cluster" not in frame:
        frame["cluster"] = 0
    clusters = sorted(int(c) for c in pd.unique(frame["cluster"])) if len(frame) else [0]
    frame = frame.sort_values(["cluster", "r"]).reset_index(drop=True)
    if labels is None and "label" in frame:
        labels = dict(zip((int(c) for c in frame["cluster"]), frame["label"]))
    topics = _topic_names(clusters, labels)
    frame["topic"] = [hover_text(topics[int(c)]) for c in frame["cluster"]]
    # The sectors share the circle but an empty wedge at the top, where the
    # radial axis and its labels sit clear of the points.
    theta = np.zeros(len(frame))
    sector = (360.0 - POLAR_AXIS_GAP) / max(len(clusters), 1)
    start = 90.0 + POLAR_AXIS_GAP / 2
    for position, cluster in enumerate(clusters):
        members = np.flatnonzero(frame["cluster"].to_numpy() == cluster)
        if members.size:
            theta[members] = start + position * sector + (np.arange(members.size) + 0.5) * sector * 0.9 / members.size
    frame["theta"] = theta % 360.0
    fig = go.Figure()
    for part, name, colour in _support_groups(frame, threshold):
        fig.add_trace(
            go.Scatterpolar(
                r=part["r"],
                theta=part["theta"],
                mode="markers",
                name=name,
                marker={"color": colour, "size": 7, "opacity": 0.85},
                customdata=_hover_data(
                    part["text"], part["nearest_document"], part["max_similarity"], part["topic"]
                ),
                hovertemplate=(
                    "%{customdata[0]}<br>similarity %{customdata[2]:.3f}<br>nearest file: %{customdata[1]}"
                    "<br>topic: %{customdata[3]}<extra></extra>"
                ),
            )
        )
    circle = np.linspace(0, 360, 181)
    fig.add_trace(
        go.Scatterpolar(
            r=np.full(circle.shape, 1.0 - threshold), theta=circle, mode="lines",
            line={"dash": "dash", "color": NEUTRAL_LINE}, name=f"threshold {threshold:.2f}", hoverinfo="skip",
        )
    )
    outer = max(1.0 - threshold, float(frame["r"].max()) if len(frame) else 1.0) * 1.05
    step_r = 0.1 if outer <= 0.45 else 0.25 if outer <= 1.1 else 0.5
    radial_ticks = [round(v, 2) for v in np.arange(step_r, outer, step_r)][:4]
    # Every k-th sector is named when there are many, so the names never overlap.
    step = max(1, math.ceil(len(clusters) / POLAR_MAX_TICKS))
    shown = list(range(0, len(clusters), step))
    ticks = _polar_tick_names([topics[c] for c in clusters])
    fig.update_layout(
        polar={
            # The radial axis points up through the empty wedge, with at most
            # four small labels.
            "radialaxis": {
                "range": [0, outer], "angle": 90, "tickangle": 90, "side": "counterclockwise", "nticks": 4,
                "tickmode": "array", "tickvals": radial_ticks, "ticktext": [f"{v:g}" for v in radial_ticks],
                "tickfont": {"size": 10, "color": NEUTRAL_LINE},
            },
            "angularaxis": {
                "tickmode": "array",
                "tickvals": [(start + (i + 0.45) * sector) % 360.0 for i in shown],
                "ticktext": [ticks[i] for i in shown],
                "tickfont": {"size": 11},
            },
            "domain": {"x": [0.08, 0.92], "y": [0.0, 1.0]},
        }
    )
    return _layout(
        fig, "Question support by topic",
        "Distance from the centre = 1 − best similarity; near the centre = well supported. "
        "Dashed: the threshold.",
        height=500, margin={"l": 30, "r": 30},
    )


# --------------------------------------------------------------------------
# answerability: labelled questions, dimension sweep, MDS map
# --------------------------------------------------------------------------

__all__ += ["answerability_box", "dimension_sweep_chart", "mds_map"]

ANSWERABLE_COLOUR = OK_COLOUR
UNANSWERABLE_COLOUR = PROBLEM_COLOUR
UNLABELLED_COLOUR = "#7f7f7f"
CHUNK_COLOUR = "#9ecae1"


def _answerable_floats(labels, n: int) -> np.ndarray:
    """Labels as 1.0 / 0.0 / NaN (strings parsed as ``answerability.parse_answerable`` does)."""
    from coverage_core.checks.answerability import binary_labels

    return binary_labels(labels, n)


def answerability_box(similarities, labels, threshold: float | None = None, texts: Sequence[str] | None = None) -> go.Figure:
    """Best similarity to any chunk of the answerable and the not-answerable questions.

    One box per label (``"answerable"``, ``"not answerable"``; unlabelled
    questions are left out and counted in the axis title), every question
    drawn as a point, and ``threshold`` (e.g. the Youden threshold of
    ``answerability.answerability``) as a dashed line. ``texts``, when given,
    label the points' hover (shortened, HTML-escaped).
    """
    scores = np.asarray(similarities, dtype=np.float64)
    y = _answerable_floats(labels, scores.shape[0])
    words = [hover_text(t) for t in texts] if texts is not None else [""] * scores.shape[0]
    if len(words) != scores.shape[0]:
        raise ValueError(f"texts must hold one text per question ({scores.shape[0]}); got {len(words)}.")
    fig = go.Figure()
    for value, name, colour in ((1.0, "answerable", ANSWERABLE_COLOUR), (0.0, "not answerable", UNANSWERABLE_COLOUR)):
        members = np.flatnonzero(y == value)
        fig.add_trace(
            go.Box(
                y=scores[members],
                name=name,
                x=[f"{name} (n={members.size})"] * members.size,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker={"color": colour, "size": 5, "opacity": 0.6},
                line={"color": colour},
                customdata=np.array([words[i] for i in members], dtype=object),
                hovertemplate="similarity %{y:.3f}<br>%{customdata}<extra>%{fullData.name}</extra>",
            )
        )
    if threshold is not None and np.isfinite(threshold):
        fig.add_hline(
            y=float(threshold), line={"dash": "dash", "color": NEUTRAL_LINE},
            annotation_text=f"threshold {float(threshold):.2f}", annotation_position="top left",
        )
    n_unlabelled = int(np.isnan(y).sum())
    fig.update_xaxes(title=f"{n_unlabelled} unlabelled question(s) not shown" if n_unlabelled else "")
    fig.update_yaxes(title="best similarity to any chunk")
    return _layout(
        fig, "Similarity of answerable vs not-answerable questions",
        "Best similarity of each question to any chunk, by its label.", legend=None,
    )


def dimension_sweep_chart(frame: pd.DataFrame, caption: str | None = None) -> go.Figure:
    """Rank agreement (and, with labels, AUROC and point-biserial r) against the dimensions used.

    ``frame`` is the table of ``answerability.dimension_sweep``: ``d``,
    ``method``, ``spearman`` and optionally ``auroc`` and
    ``point_biserial_r``. Dimensions are drawn as evenly spaced categories,
    smallest first. ``caption`` (e.g. ``answerability.truncation_note``) is
    written in the subtitle.
    """
    table = frame.sort_values("d").reset_index(drop=True)
    ds = [str(int(d)) for d in table["d"]]
    methods = table["method"].astype(str).to_numpy() if "method" in table else np.full(len(table), "")
    fig = go.Figure()
    series = (
        ("spearman", "rank agreement with the full size (Spearman)", "#08519c", "circle"),
        ("auroc", "AUROC (answerable vs not)", "#31a354", "diamond"),
        ("point_biserial_r", "point-biserial r", "#756bb1", "square"),
    )
    for column, name, colour, symbol in series:
        if column not in table:
            continue
        fig.add_trace(
            go.Scatter(
                x=ds,
                y=table[column].astype(float),
                mode="lines+markers",
                name=name,
                line={"color": colour},
                marker={"color": colour, "symbol": symbol, "size": 9},
                customdata=methods,
                hovertemplate="%{x} dimensions (%{customdata}): %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(title="dimensions used", type="category")
    fig.update_yaxes(title="value")
    return _layout(fig, "How similarities change with fewer dimensions", caption or None)


def mds_map(chunks: pd.DataFrame, questions: pd.DataFrame, caption: str | None = None) -> go.Figure:
    """Questions and chunks placed by MDS on 1 − cosine, questions split by label.

    ``chunks``: columns ``x``, ``y``, ``text`` (``document`` optional).
    ``questions``: ``x``, ``y``, ``text``, optionally ``answerable``
    (1 / 0 / NaN) and ``max_similarity`` (see
    ``answerability.mds_frames``). Hover shows shortened, HTML-escaped text.
    ``caption`` says what was sampled (``MdsPoints.caption``); it is written
    in the subtitle.
    """
    fig = go.Figure()
    documents = chunks["document"] if "document" in chunks else pd.Series([""] * len(chunks))
    fig.add_trace(
        go.Scattergl(
            x=chunks["x"],
            y=chunks["y"],
            mode="markers",
            name="chunks",
            marker={**CHUNK_MARKER, "color": CHUNK_COLOUR},
            customdata=_hover_data(chunks["text"], documents),
            hovertemplate="<b>chunk</b> of %{customdata[1]}<br>%{customdata[0]}<extra></extra>",
        )
    )
    if "answerable" in questions:
        flags = _answerable_floats(questions["answerable"].to_numpy(), len(questions))
        groups = (
            (flags == 1.0, "answerable questions", "diamond-open", ANSWERABLE_COLOUR),
            (flags == 0.0, "not-answerable questions", "x-thin-open", UNANSWERABLE_COLOUR),
            (np.isnan(flags), "unlabelled questions", "circle-open", UNLABELLED_COLOUR),
        )
    else:
        groups = ((np.ones(len(questions), dtype=bool), "questions", "diamond-open", QUESTION_COLOUR),)
    similarity = (
        questions["max_similarity"].astype(float).to_numpy()
        if "max_similarity" in questions else np.full(len(questions), np.nan)
    )
    for mask, name, symbol, colour in groups:
        if not mask.any():
            continue
        part = questions[mask]
        customdata = np.column_stack(
            [[hover_text(t) for t in part["text"]],
             [f"{s:.3f}" if np.isfinite(s) else "n/a" for s in similarity[mask]]]
        )
        fig.add_trace(_question_trace(part, name, symbol, colour, customdata, "best similarity %{customdata[1]}"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    return _layout(fig, "MDS map of questions and chunks (1 − cosine)", caption or None, legend="side", height=640)


# --------------------------------------------------------------------------
# chunking comparison
# --------------------------------------------------------------------------

__all__ += ["chunking_comparison_chart"]

# Blues for coverage, greens and purple for retrieval: none warm (warm means a problem).
CHUNKING_METRICS = (
    ("basic", "basic coverage", "#9ecae1"),
    ("balanced", "balanced coverage", "#08519c"),
    ("precision_at_k", "precision@k", "#a1d99b"),
    ("recall_at_k", "recall@k", "#31a354"),
    ("mrr", "MRR", "#756bb1"),
)


def chunking_comparison_chart(table: pd.DataFrame, k: int | None = None) -> go.Figure:
    """Grouped bars of coverage and retrieval metrics, one group per chunk configuration.

    ``table`` is the table of ``chunking_comparison.compare_chunkings``:
    ``chunk_size``, ``chunk_overlap``, ``n_chunks`` and the metric columns
    ``basic``, ``balanced``, ``precision_at_k``, ``recall_at_k``, ``mrr``.
    Configurations keep the table's order and are labelled ``size/overlap``;
    a metric with no value in any row (no relevant-source column) gets no
    trace, and a row without values (it failed) keeps its empty group. ``k``
    names the cut-off in the legend.
    """
    labels = [f"{int(size)}/{int(overlap)}" for size, overlap in zip(table["chunk_size"], table["chunk_overlap"])]
    chunks = (
        [f"{int(n):,}" if pd.notna(n) else "n/a" for n in table["n_chunks"]]
        if "n_chunks" in table else ["n/a"] * len(table)
    )
    fig = go.Figure()
    for column, name, colour in CHUNKING_METRICS:
        if column not in table:
            continue
        y = pd.to_numeric(table[column], errors="coerce").astype(float)
        if y.isna().all():
            continue
        if k is not None:
            name = name.replace("@k", f"@{int(k)}")
        fig.add_trace(
            go.Bar(
                x=labels,
                y=y,
                name=name,
                marker={"color": colour},
                customdata=chunks,
                hovertemplate="%{x} (%{customdata} chunks): %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(title="chunk size / overlap (characters)", type="category")
    fig.update_yaxes(title="value", range=[0, 1])
    return _layout(fig, "Coverage and retrieval per chunk configuration", barmode="group")


def traffic_topics(topics: pd.DataFrame, n: int = 12) -> go.Figure:
    """Horizontal stacked bars of the ``n`` most asked, least tested traffic topics: tested and untested queries.

    ``topics`` is :attr:`coverage_core.checks.traffic.TrafficResult.topics` (already ranked).
    """
    shown = topics.head(n).iloc[::-1]
    names, axis = _category_axis(list(shown["label"]), 40)  # escaped: labels come from users' queries
    tested = (shown["volume"] * shown["tested_share"]).round().astype(int)
    untested = shown["volume"] - tested
    fig = go.Figure()
    for values, name, colour in ((untested, "not tested", PROBLEM_COLOUR), (tested, "tested", OK_COLOUR)):
        fig.add_trace(go.Bar(
            y=names, x=values, name=name, orientation="h", marker={"color": colour},
            hovertemplate="%{y}<br>%{x:,} queries " + name + "<extra></extra>",
        ))
    fig.update_xaxes(title="queries (counting repeats)")
    fig.update_yaxes(**axis)
    return _layout(
        fig, "Most asked, least tested", "Traffic topics ranked by queries × share not tested",
        barmode="stack", height=max(320, 40 * len(shown) + 160),
    )


def traffic_weekly(weekly: pd.DataFrame) -> go.Figure:
    """The tested share of each week's traffic (``TrafficResult.weekly``), with the week's volume on hover."""
    fig = go.Figure(go.Scatter(
        x=[str(week) for week in weekly["week"]], y=weekly["tested_share"], mode="lines+markers",
        marker={"color": OK_COLOUR}, customdata=weekly["volume"], name="tested share",
        hovertemplate="week of %{x}<br>%{y:.0%} tested of %{customdata:,} queries<extra></extra>",
    ))
    fig.update_yaxes(title="share of the week's queries tested", tickformat=".0%", range=[0, 1])
    fig.update_xaxes(title="week (Monday)", type="category")
    return _layout(fig, "Does the test set keep up with traffic?", "Tested share of each week's queries",
                   legend=None)
