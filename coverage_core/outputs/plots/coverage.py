"""Coverage figures: coverage per topic and per document, question sets compared, the 2-D map."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core import verdicts, wording
from coverage_core.outputs.plots.style import (
    CHUNK_MARKER,
    COVERED_COLOUR,
    GAP_COLOUR,
    LEGEND_MAX_CHARS,
    LOW_COLOUR,
    METRIC_LABELS,
    NEUTRAL_LINE,
    OUTLIER_COLOUR,
    QUESTION_COLOUR,
    UNDERTESTED_COLOUR,
    UNTESTED_COLOUR,
    category_axis,
    cluster_colour,
    hover_data,
    hover_text,
    layout,
    legend_name,
    question_trace,
    shorten_label,
    topic_names,
)
from coverage_core.outputs.plots.urgency import (
    UNDERTESTED,
    UNTESTED,
    document_cut,
    document_verdicts,
    documents_by_urgency,
    gap_measure,
    topic_gaps,
    topics_by_urgency,
)
from coverage_core.stages.topics import display_names
from coverage_core.suggest.gaps import GapConfig

if TYPE_CHECKING:  # only for type hints: this module must import without the analysis modules
    from coverage_core.projection import Projection
    from coverage_core.results import Analysis


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
        is_gap = verdicts.is_gap(frame["coverage"], None, GapConfig(rule="coverage", gap_threshold=gap_threshold))
    else:
        is_gap = np.zeros(len(frame), dtype=bool)
    names = display_names(frame["cluster"], frame["label"] if "label" in frame else None)
    x, axis = category_axis(names)
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
                "<br>%{customdata[2]} on-topic questions closest to it<br>%{customdata[3]}<extra></extra>"
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
    return layout(fig, "Coverage per topic", "Orange: gap (a topic the questions barely test).", legend=None)


def document_coverage_bar(documents: pd.DataFrame) -> go.Figure:
    """Coverage per document; documents flagged ``is_low`` in the warm colour.

    ``documents`` has the columns of ``Analysis.documents``: ``document``,
    ``n_chunks``, ``coverage``, ``is_low``.
    """
    frame = documents.sort_values(["coverage", "document"]).reset_index(drop=True)
    low = frame["is_low"].astype(bool).to_numpy()
    names, axis = category_axis(frame["document"], 40)
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
    return layout(
        fig, "Coverage per document", "Orange: untested or possibly misaligned.",
        legend=None, height=max(260, 28 * len(frame) + 120),
    )


# Height of one bar row of the verdict charts, and room for the title and axis.
ROW_PX = 26
BASE_PX = 150
MIN_BAR = 0.012
"""How long a verdict chart draws a bar at 0 (on the 0-1 axis): a sliver in the row's colour, so a topic or a
document with nothing tested shows its orange like the others (its label still says 0%)."""


def _verdict_bar(
    names: Sequence[object], values, colours: Sequence[str], customdata: np.ndarray, hovertemplate: str,
    cut: float, cut_text: str, share: bool, limit: int,
) -> go.Figure:
    """Horizontal bars, the first row on top, with a dashed vertical line at ``cut`` labelled ``cut_text``.

    A blank row above the first bar holds the line's label, so it never
    covers a bar. ``share``: the values are shares, drawn 0-100%. Each bar
    is labelled with its value at its end (a whole percent for a share), and
    a bar at 0 is drawn :data:`MIN_BAR` long, so the worst rows show their
    colour too; the label and the hover (``%{hovertext}`` in
    ``hovertemplate``) keep the true value.
    """
    y, axis = category_axis(names, limit)
    true = np.nan_to_num(np.asarray(values, dtype=np.float64))
    fig = go.Figure(
        go.Bar(
            x=np.maximum(true, MIN_BAR),
            y=y,
            orientation="h",
            marker={"color": list(colours)},
            customdata=customdata,
            hovertemplate=hovertemplate,
            text=[f"{v:.0%}" if share else f"{v:.2f}" for v in true],
            hovertext=[f"{v:.0%}" if share else f"{v:.3f}" for v in true],
            texttemplate="%{text}",
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.add_vline(
        x=cut, line={"dash": "dash", "color": NEUTRAL_LINE},
        annotation_text=cut_text, annotation_position="top right",
    )
    fig.update_yaxes(title="", range=[len(y) - 0.5, -1.5], **axis)
    if share:
        fig.update_xaxes(range=[0, 1.1], tickformat=".0%")  # room for a full bar's label
    return fig


def topic_verdict_bar(clusters: pd.DataFrame, gaps: GapConfig | None = None) -> go.Figure:
    """Tested share per topic, most urgent on top, gaps in the warm colour, the gap cut as a dashed line.

    ``clusters`` has the columns of ``Analysis.clusters``: ``cluster``,
    ``size``, ``coverage``, ``n_tested``, ``tested_share`` (``is_gap``,
    ``n_questions`` and ``label`` optional). The bars draw what the gap
    verdict reads (:func:`~coverage_core.outputs.plots.urgency.gap_measure`:
    the tested share, or the coverage score under rule ``"coverage"``) and
    the line sits at its cut; rows follow
    :func:`~coverage_core.outputs.plots.urgency.topics_by_urgency`. Topics are
    named by label, shortened on the axis, whole in the hover, which also
    gives the passages tested of the topic's total.
    """
    gaps = gaps or GapConfig()
    frame = topics_by_urgency(clusters, gaps)
    column, cut = gap_measure(gaps)
    share = column == "tested_share"
    is_gap = topic_gaps(frame, gaps)
    names = display_names(frame["cluster"], frame["label"] if "label" in frame else None)
    questions = (
        [f"{wording.count(int(n), 'on-topic question')} closest to it" for n in frame["n_questions"]]
        if "n_questions" in frame else [""] * len(frame)
    )
    customdata = np.column_stack([
        frame["n_tested"].astype(int), frame["size"].astype(int), questions, np.where(is_gap, "gap", ""),
    ]).reshape(len(frame), 4)
    measure = "tested share %{hovertext}" if share else "coverage %{hovertext}"
    fig = _verdict_bar(
        names, frame[column], [GAP_COLOUR if g else COVERED_COLOUR for g in is_gap], customdata,
        "%{y}<br>%{customdata[0]} of %{customdata[1]} passages tested<br>" + measure
        + "<br>%{customdata[2]}<br><b>%{customdata[3]}</b><extra></extra>",
        cut, f"gap below {cut:.0%}" if share else f"gap below {cut:.2f}", share, LEGEND_MAX_CHARS,
    )
    fig.update_xaxes(title="share of the topic's passages tested" if share else "coverage (relative)")
    cut_words = f"fewer than {cut:.0%} of its passages tested" if share else f"coverage below {cut:.2f}"
    return layout(
        fig, "Tested share per topic" if share else "Coverage per topic",
        f"Gaps first, then {'the least tested' if share else 'the lowest scores'}. Orange: gap ({cut_words}).",
        legend=None, height=max(280, ROW_PX * len(frame) + BASE_PX),
    )


def document_verdict_bar(documents: pd.DataFrame, cut: float | None = None) -> go.Figure:
    """Tested share per document, most urgent on top, coloured by verdict, the cut as a dashed line.

    ``documents`` has the columns of ``Analysis.documents``: ``document``,
    ``n_chunks``, ``n_tested``, ``tested_share``, ``is_untested``
    (``is_undertested`` and ``n_questions`` optional). Untested documents
    are in the warm colour, under-tested ones in a lighter warm colour
    (:func:`~coverage_core.outputs.plots.urgency.document_verdicts`); rows
    follow :func:`~coverage_core.outputs.plots.urgency.documents_by_urgency`.
    ``cut`` (default :func:`~coverage_core.outputs.plots.urgency.document_cut`)
    is where the line is drawn. The hover gives the passages tested of the
    document's total.
    """
    cut = document_cut() if cut is None else float(cut)
    frame = documents_by_urgency(documents)
    verdict = document_verdicts(frame)
    split = "is_undertested" in frame  # untested (no question targets it) told apart from under-tested
    colours = [
        UNTESTED_COLOUR if v == UNTESTED else UNDERTESTED_COLOUR if v == UNDERTESTED else COVERED_COLOUR
        for v in verdict
    ]
    questions = (
        [f"{wording.count(int(n), 'question')} {wording.plural(int(n), 'targets', 'target')} it" for n in frame["n_questions"]]
        if "n_questions" in frame else [""] * len(frame)
    )
    customdata = np.column_stack([
        frame["n_tested"].astype(int), frame["n_chunks"].astype(int), questions, verdict,
    ]).reshape(len(frame), 4)
    fig = _verdict_bar(
        frame["document"], frame["tested_share"], colours, customdata,
        "%{y}<br>%{customdata[0]} of %{customdata[1]} passages tested (%{hovertext})"
        "<br>%{customdata[2]}<br><b>%{customdata[3]}</b><extra></extra>",
        cut, f"{UNDERTESTED if split else UNTESTED} below {cut:.0%}", True, 40,
    )
    fig.update_xaxes(title="share of the document's passages tested")
    subtitle = (
        f"Untested first, then under-tested, then the least tested. Orange: untested (no question targets it); "
        f"light orange: under-tested (fewer than {cut:.0%} of its passages tested)."
        if split else f"Least tested first. Orange: untested (fewer than {cut:.0%} of its passages tested)."
    )
    return layout(
        fig, "Tested share per document", subtitle, legend=None, height=max(280, ROW_PX * len(frame) + BASE_PX),
    )


def before_after_clusters(before: pd.DataFrame, after: pd.DataFrame, names: Sequence[str] = ("before", "after")) -> go.Figure:
    """Grouped bars of per-topic coverage of two question sets on the same clusters."""
    merged = before[["cluster", "coverage"]].merge(
        after[["cluster", "coverage"]], on="cluster", suffixes=("_a", "_b"), how="outer"
    ).sort_values("coverage_a", na_position="first")
    source = before if "label" in before else after
    topics = topic_names(merged["cluster"], source[["cluster", "label"]] if "label" in source else None)
    x, axis = category_axis([topics[int(c)] for c in merged["cluster"]])
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
    return layout(
        fig, "Coverage per topic, before and after",
        f"{shorten_label(names[0], 60)} (light) vs {shorten_label(names[1], 60)} (dark)", barmode="group",
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
    return layout(fig, "Coverage metrics per question set", barmode="group")


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
    topics = topic_names(clusters + [int(c) for c in questions["cluster"]], labels)
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
                customdata=hover_data(part["text"], part["document"]),
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
        customdata = hover_data(
            part["text"], part["document"], ["topic: " + hover_text(topics[int(c)]) for c in part["cluster"]]
        )
        fig.add_trace(
            question_trace(
                part, name, symbol, colour, customdata, "nearest file: %{customdata[1]}<br>%{customdata[2]}",
                legendgroup="questions",
            )
        )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    return layout(fig, "Map of chunks and questions", [_metrics_line(metrics), caption or ""], legend="side", height=640)
