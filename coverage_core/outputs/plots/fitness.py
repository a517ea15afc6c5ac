"""Knowledge-base fitness figures: how well the corpus supports each question, and
the answerability figures (labelled questions, dimension sweep, MDS map)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core import wording
from coverage_core.outputs.plots.style import (
    CHUNK_MARKER,
    NEUTRAL_LINE,
    OK_COLOUR,
    POLAR_AXIS_GAP,
    POLAR_MAX_TICKS,
    POLAR_TICK_CHARS,
    PROBLEM_COLOUR,
    QUESTION_COLOUR,
    hover_data,
    hover_text,
    layout,
    legend_name,
    question_trace,
    topic_names,
)

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


def _support_figure(
    frame: pd.DataFrame, threshold: float, trace, position: dict[str, str], marker: dict, *,
    hover: Sequence[str], template: str,
) -> go.Figure:
    """A figure holding one marker trace per support group of ``frame`` (supported, then below ``threshold``).

    Args:
        trace: The trace class, e.g. ``go.Scatter``.
        position: Each position argument of ``trace`` and the ``frame`` column it takes, e.g. ``{"x": "rank"}``.
        marker: The marker settings besides the group's colour.
        hover: The ``frame`` columns of each point's ``customdata``, in order.
        template: The ``hovertemplate`` that shows them.

    Both fitness views draw the two groups alike; only where a question sits and what its hover says differ.
    """
    fig = go.Figure()
    for part, name, colour in _support_groups(frame, threshold):
        fig.add_trace(
            trace(
                **{argument: part[column] for argument, column in position.items()},
                mode="markers",
                name=name,
                marker={"color": colour, **marker},
                customdata=hover_data(*(part[column] for column in hover)),
                hovertemplate=template,
            )
        )
    return fig


def _question_topics(frame: pd.DataFrame, labels) -> list[str]:
    """The topic name of each question (``cluster`` column, named by ``labels`` or a ``label`` column), escaped."""
    if "cluster" not in frame:
        return [""] * len(frame)
    if labels is None and "label" in frame:
        labels = dict(zip((int(c) for c in frame["cluster"]), frame["label"]))
    topics = topic_names(frame["cluster"], labels)
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
    fig = _support_figure(
        frame, threshold, go.Scatter, {"x": "rank", "y": "max_similarity"}, {"size": 6},
        hover=("text", "nearest_document", "topic"),
        template="#%{x}: similarity %{y:.3f}<br>%{customdata[0]}<br>nearest file: %{customdata[1]}"
        + ("<br>topic: %{customdata[2]}" if "cluster" in frame else "") + "<extra></extra>",
    )
    fig.add_hline(
        y=threshold, line={"dash": "dash", "color": NEUTRAL_LINE},
        annotation_text=f"threshold {threshold:.2f}", annotation_position="top left",
    )
    fig.update_xaxes(title="questions, best supported first", nticks=6)
    fig.update_yaxes(title="best similarity to any chunk", nticks=6)
    return layout(
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
    frame, clusters, topics = _polar_frame(questions, labels)
    start, sector = _place_in_sectors(frame, clusters)
    fig = _support_figure(
        frame, threshold, go.Scatterpolar, {"r": "r", "theta": "theta"}, {"size": 7, "opacity": 0.85},
        hover=("text", "nearest_document", "max_similarity", "topic"),
        template="%{customdata[0]}<br>similarity %{customdata[2]:.3f}<br>nearest file: %{customdata[1]}"
        "<br>topic: %{customdata[3]}<extra></extra>",
    )
    circle = np.linspace(0, 360, 181)
    fig.add_trace(
        go.Scatterpolar(
            r=np.full(circle.shape, 1.0 - threshold), theta=circle, mode="lines",
            line={"dash": "dash", "color": NEUTRAL_LINE}, name=f"threshold {threshold:.2f}", hoverinfo="skip",
        )
    )
    fig.update_layout(polar=_polar_axes(frame, threshold, [topics[c] for c in clusters], start, sector))
    return layout(
        fig, "Question support by topic",
        "Distance from the centre = 1 − best similarity; near the centre = well supported. "
        "Dashed: the threshold.",
        height=500, margin={"l": 30, "r": 30},
    )


def _polar_frame(questions: pd.DataFrame, labels) -> tuple[pd.DataFrame, list[int], dict[int, str]]:
    """(questions with ``r`` and escaped ``topic``, sorted by cluster and r; the clusters; their names)."""
    frame = questions.copy()
    frame["r"] = 1.0 - frame["max_similarity"].astype(float)
    if "cluster" not in frame:
        frame["cluster"] = 0
    clusters = sorted(int(c) for c in pd.unique(frame["cluster"])) if len(frame) else [0]
    frame = frame.sort_values(["cluster", "r"]).reset_index(drop=True)
    if labels is None and "label" in frame:
        labels = dict(zip((int(c) for c in frame["cluster"]), frame["label"]))
    topics = topic_names(clusters, labels)
    frame["topic"] = [hover_text(topics[int(c)]) for c in frame["cluster"]]
    return frame, clusters, topics


def _place_in_sectors(frame: pd.DataFrame, clusters: list[int]) -> tuple[float, float]:
    """Set each question's angle ``theta``: one sector per cluster; returns (first sector's start, sector width)."""
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
    return start, sector


def _polar_axes(frame: pd.DataFrame, threshold: float, names: list[str], start: float, sector: float) -> dict:
    """The polar layout: radial ticks in the empty wedge, one angular tick per named sector."""
    outer = max(1.0 - threshold, float(frame["r"].max()) if len(frame) else 1.0) * 1.05
    step_r = 0.1 if outer <= 0.45 else 0.25 if outer <= 1.1 else 0.5
    radial_ticks = [round(v, 2) for v in np.arange(step_r, outer, step_r)][:4]
    # Every k-th sector is named when there are many, so the names never overlap.
    step = max(1, math.ceil(len(names) / POLAR_MAX_TICKS))
    shown = list(range(0, len(names), step))
    ticks = _polar_tick_names(names)
    return {
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


# --------------------------------------------------------------------------
# answerability: labelled questions, dimension sweep, MDS map
# --------------------------------------------------------------------------

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
    fig.update_xaxes(title=f"{wording.count(n_unlabelled, 'unlabelled question')} not shown" if n_unlabelled else "")
    fig.update_yaxes(title="best similarity to any chunk")
    return layout(
        fig, "Similarity of answerable vs not-answerable questions",
        "Best similarity of each question to any chunk, by its label.", legend=None,
    )


SWEEP_NAMES = {
    "spearman": "ranking kept (vs all dimensions)",
    "auroc": "labels told apart",
    "point_biserial_r": "link to the labels",
}
"""The dimension sweep's measures in plain words (the chart's legend and the page's table): the statistics'
names (Spearman, AUROC, point-biserial r) are explained only in the Knowledge-base fitness page's label
analysis."""


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
        ("spearman", SWEEP_NAMES["spearman"], "#08519c", "circle"),
        ("auroc", SWEEP_NAMES["auroc"], "#31a354", "diamond"),
        ("point_biserial_r", SWEEP_NAMES["point_biserial_r"], "#756bb1", "square"),
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
    return layout(fig, "How similarities change with fewer dimensions", caption or None)


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
            customdata=hover_data(chunks["text"], documents),
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
        fig.add_trace(question_trace(part, name, symbol, colour, customdata, "best similarity %{customdata[1]}"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    return layout(fig, "Map of questions and passages (MDS)", caption or None, legend="side", height=640)
