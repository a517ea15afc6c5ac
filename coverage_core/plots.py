"""Plotly figures of an analysis. Builders take data and return a ``go.Figure``.

Nothing here displays anything: the dashboard passes the figures to
``st.plotly_chart`` and the HTML report embeds them. The builders take plain
tables (pandas) so they can be tested, and reused, without running an
analysis; :func:`map_frames` turns an analysis and its 2-D projection into
the tables :func:`coverage_map` draws.

User text (questions, passages, file names) is shown only in hover labels and
is HTML-escaped first: Plotly renders a subset of HTML in labels, and a
question such as ``<a href=...>`` must show as text, not as a link.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core.topics import cluster_name, display_names

if TYPE_CHECKING:  # only for type hints: this module must import without the pipeline
    from coverage_core.pipeline import Analysis
    from coverage_core.projection import Projection

__all__ = [
    "CLUSTER_COLOURS",
    "METRIC_LABELS",
    "before_after_clusters",
    "cluster_colour",
    "cluster_coverage_bar",
    "coverage_map",
    "document_coverage_bar",
    "hover_text",
    "map_frames",
    "metric_comparison_bar",
    "similarity_polar",
    "similarity_ranked",
]

# 24 + 26 distinct colours; more clusters than that cycle.
CLUSTER_COLOURS = (
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
    "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE",
    "#862A16", "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038",
    "#AA0DFE", "#3283FE", "#85660D", "#782AB6", "#565656", "#1C8356", "#16FF32", "#F7E1A0",
    "#E2E2E2", "#1CBE4F", "#C4451C", "#DEA0FD", "#FE00FA", "#325A9B", "#FEAF16", "#F8A19F",
    "#90AD1C", "#F6222E", "#1CFFCE", "#2ED9FF", "#B10DA1", "#C075A6", "#FC1CBF", "#B00068",
    "#FBE426", "#FA0087",
)
GAP_COLOUR = "#d62728"
COVERED_COLOUR = "#1f77b4"
LOW_COLOUR = "#d62728"
QUESTION_COLOUR = "#111111"
OUTLIER_COLOUR = "#ff7f0e"

METRIC_LABELS = {
    "tested_share": "Tested share",
    "basic": "Basic",
    "weighted": "Weighted (= basic)",
    "balanced": "Balanced",
    "multi_threshold": "Multi-threshold",
    "multi_n": "Multi-N",
}

HOVER_CHARS = 160


def cluster_colour(cluster: int) -> str:
    return CLUSTER_COLOURS[int(cluster) % len(CLUSTER_COLOURS)]


def hover_text(text: object, limit: int = HOVER_CHARS) -> str:
    """``text`` on one line, shortened to ``limit`` characters, HTML-escaped for a hover label."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return html.escape(flat, quote=False)


def _layout(fig: go.Figure, title: str, **extra) -> go.Figure:
    fig.update_layout(
        title={"text": html.escape(title, quote=False)},
        margin={"l": 50, "r": 20, "t": 60, "b": 50},
        hoverlabel={"align": "left"},
        **extra,
    )
    return fig


# --------------------------------------------------------------------------
# clusters and documents
# --------------------------------------------------------------------------


def cluster_coverage_bar(clusters: pd.DataFrame, gap_threshold: float | None = None) -> go.Figure:
    """Coverage per cluster, gaps in red, with the gap threshold as a dashed line.

    ``clusters`` has the columns of ``Analysis.clusters``: ``cluster``,
    ``size``, ``share``, ``coverage``, ``n_questions`` (``is_gap`` optional).
    Bars are sorted by coverage, lowest first, so the worst topics lead.
    """
    frame = clusters.sort_values(["coverage", "cluster"], na_position="first").reset_index(drop=True)
    if "is_gap" in frame:
        is_gap = frame["is_gap"].astype(bool).to_numpy()
    elif gap_threshold is not None:
        is_gap = (frame["coverage"] < gap_threshold).to_numpy()
    else:
        is_gap = np.zeros(len(frame), dtype=bool)
    labels = display_names(frame["cluster"], frame["label"] if "label" in frame else None)
    fig = go.Figure(
        go.Bar(
            x=labels,
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
            line={"dash": "dash", "color": "#555"},
            annotation_text=f"gap threshold {gap_threshold:.2f}",
            annotation_position="top left",
        )
    fig.update_xaxes(title="topic (lowest coverage first)", type="category")
    fig.update_yaxes(title="coverage (relative)")
    return _layout(fig, "Coverage per cluster (red: gap)", showlegend=False)


def document_coverage_bar(documents: pd.DataFrame) -> go.Figure:
    """Coverage per document; documents flagged ``is_low`` in red.

    ``documents`` has the columns of ``Analysis.documents``: ``document``,
    ``n_chunks``, ``coverage``, ``is_low``.
    """
    frame = documents.sort_values(["coverage", "document"]).reset_index(drop=True)
    low = frame["is_low"].astype(bool).to_numpy()
    names = [hover_text(name, 60) for name in frame["document"]]
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
    fig.update_yaxes(title="", type="category", automargin=True)
    return _layout(
        fig, "Coverage per document (red: untested or possibly misaligned)",
        showlegend=False, height=max(260, 28 * len(frame) + 120),
    )


def before_after_clusters(before: pd.DataFrame, after: pd.DataFrame, names: Sequence[str] = ("before", "after")) -> go.Figure:
    """Grouped bars of per-cluster coverage of two question sets on the same clusters."""
    merged = before[["cluster", "coverage"]].merge(
        after[["cluster", "coverage"]], on="cluster", suffixes=("_a", "_b"), how="outer"
    ).sort_values("coverage_a", na_position="first")
    names_by_cluster = dict(zip(before["cluster"], before["label"])) if "label" in before else {}
    labels = display_names(merged["cluster"], [names_by_cluster.get(c, "") for c in merged["cluster"]])
    delta = (merged["coverage_b"] - merged["coverage_a"]).to_numpy()
    fig = go.Figure()
    for column, name, colour in (("coverage_a", names[0], "#9ecae1"), ("coverage_b", names[1], "#08519c")):
        fig.add_trace(
            go.Bar(
                x=labels,
                y=merged[column],
                name=html.escape(str(name), quote=False),
                marker={"color": colour},
                customdata=delta,
                hovertemplate="%{x}<br>coverage %{y:.3f}<br>change %{customdata:+.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(title="topic", type="category")
    fig.update_yaxes(title="coverage (relative)")
    return _layout(fig, f"Per-cluster coverage: {names[0]} vs {names[1]}", barmode="group")


def metric_comparison_bar(sets: Mapping[str, Mapping[str, float]]) -> go.Figure:
    """Grouped bars of the coverage metrics of several question sets (same corpus and clusters)."""
    fig = go.Figure()
    palette = ("#9ecae1", "#08519c", "#fd8d3c", "#31a354")
    for position, (name, values) in enumerate(sets.items()):
        keys = [key for key in METRIC_LABELS if key in values]
        fig.add_trace(
            go.Bar(
                x=[METRIC_LABELS[key] for key in keys],
                y=[values[key] for key in keys],
                name=html.escape(str(name), quote=False),
                marker={"color": palette[position % len(palette)]},
                hovertemplate="%{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(title="coverage (relative)")
    return _layout(fig, "Coverage metrics", barmode="group")


# --------------------------------------------------------------------------
# the 2-D map
# --------------------------------------------------------------------------


def map_frames(analysis: "Analysis", projection: "Projection") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables :func:`coverage_map` draws, from an analysis and its projection.

    The projection may be older than the clustering (it is recomputed only
    when the vectors change): chunk colours always use the current labels.
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
    if "label" in analysis.clusters:
        chunk_frame["label"] = analysis.clusters["label"].to_numpy()[chunk_frame["cluster"].to_numpy()]
    table = analysis.question_table
    n = min(len(table), len(projection.question_xy))
    question_frame = pd.DataFrame(
        {
            "x": projection.question_xy[:n, 0],
            "y": projection.question_xy[:n, 1],
            "text": table["text"].to_numpy()[:n],
            "document": table["nearest_document"].to_numpy()[:n],
            "cluster": table["cluster"].to_numpy()[:n],
            "is_outlier": table["is_outlier"].to_numpy()[:n].astype(bool),
        }
    )
    return chunk_frame, question_frame


def coverage_map(
    chunks: pd.DataFrame,
    questions: pd.DataFrame,
    metrics: Mapping[str, float] | None = None,
    caption: str | None = None,
) -> go.Figure:
    """Chunks coloured by cluster, questions as large markers, off-topic ones apart.

    ``chunks``: columns ``x``, ``y``, ``cluster``, ``text``, ``document``.
    ``questions``: columns ``x``, ``y``, ``text``, ``document`` (nearest
    document), ``cluster``, ``is_outlier``. Hover shows the shortened text,
    its file and its cluster; ``metrics`` are written in a corner box.
    """
    fig = go.Figure()
    clusters = sorted(pd.unique(chunks["cluster"])) if len(chunks) else []
    by_label = dict(zip(chunks["cluster"], chunks["label"])) if "label" in chunks else {}
    legend = dict(zip(clusters, display_names(clusters, [by_label.get(c, "") for c in clusters])))
    for cluster in clusters:
        part = chunks[chunks["cluster"] == cluster]
        name = cluster_name(cluster, by_label.get(cluster, ""))
        fig.add_trace(
            go.Scattergl(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=html.escape(legend[cluster], quote=False),
                legendgroup="chunks",
                legendgrouptitle={"text": "chunks"} if cluster == min(chunks["cluster"]) else None,
                marker={"size": 6, "color": cluster_colour(cluster), "opacity": 0.55},
                customdata=np.column_stack(
                    [[hover_text(t) for t in part["text"]], [hover_text(d, 80) for d in part["document"]]]
                ),
                hovertemplate=(
                    "<b>chunk</b> of %{customdata[1]}<br>" + html.escape(name, quote=False)
                    + "<br>%{customdata[0]}<extra></extra>"
                ),
            )
        )
    for flag, name, symbol, colour in (
        (False, "questions", "diamond", QUESTION_COLOUR),
        (True, "off-topic questions", "x", OUTLIER_COLOUR),
    ):
        part = questions[questions["is_outlier"].astype(bool) == flag]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=name,
                legendgroup="questions",
                marker={
                    "size": 13,
                    "symbol": symbol,
                    "color": colour,
                    "line": {"width": 1.5, "color": "white"},
                },
                customdata=np.column_stack(
                    [
                        [hover_text(t) for t in part["text"]],
                        [hover_text(d, 80) for d in part["document"]],
                        [html.escape(cluster_name(c, by_label.get(c, "")), quote=False) for c in part["cluster"]],
                    ]
                ),
                hovertemplate=(
                    f"<b>{name[:-1]}</b><br>%{{customdata[0]}}<br>nearest file: %{{customdata[1]}}"
                    "<br>%{customdata[2]}<extra></extra>"
                ),
            )
        )
    if metrics:
        lines = [f"{METRIC_LABELS.get(k, k)}: {v:.3f}" for k, v in metrics.items() if k in METRIC_LABELS]
        fig.add_annotation(
            text="<b>coverage</b> (relative)<br>" + "<br>".join(lines),
            xref="paper", yref="paper", x=0.0, y=1.0, xanchor="left", yanchor="top",
            showarrow=False, align="left", bgcolor="rgba(255,255,255,0.85)", bordercolor="#999",
            borderwidth=1,
        )
    if caption:
        fig.add_annotation(
            text=html.escape(caption, quote=False), xref="paper", yref="paper", x=0.0, y=-0.06,
            xanchor="left", yanchor="top", showarrow=False, font={"size": 11, "color": "#555"},
        )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    return _layout(fig, "Map of chunks and questions", height=640, legend={"itemsizing": "constant"})


# --------------------------------------------------------------------------
# knowledge-base fitness: how well the corpus supports each question
# --------------------------------------------------------------------------


# The two groups both fitness views draw: (is below the threshold, legend name, colour).
_SUPPORT_GROUPS = (
    (False, "supported", COVERED_COLOUR),
    (True, "the knowledge base may not answer this", GAP_COLOUR),
)


def _fitness_frame(questions: pd.DataFrame, threshold: float) -> pd.DataFrame:
    frame = questions.sort_values(["max_similarity", "row"] if "row" in questions else ["max_similarity"],
                                  ascending=[False, True] if "row" in questions else [False])
    frame = frame.reset_index(drop=True)
    frame["rank"] = np.arange(1, len(frame) + 1)
    frame["unsupported"] = frame["max_similarity"] < threshold
    return frame


def similarity_ranked(questions: pd.DataFrame, threshold: float) -> go.Figure:
    """Every question's best similarity to any chunk, in decreasing order.

    ``questions`` has ``text``, ``max_similarity``, ``nearest_document`` (and
    optionally ``row``). Questions below ``threshold`` are drawn in red: the
    knowledge base may not answer them.
    """
    frame = _fitness_frame(questions, threshold)
    fig = go.Figure()
    for flag, name, colour in _SUPPORT_GROUPS:
        part = frame[frame["unsupported"] == flag]
        fig.add_trace(
            go.Scatter(
                x=part["rank"],
                y=part["max_similarity"],
                mode="markers",
                name=name,
                marker={"color": colour, "size": 7},
                customdata=np.column_stack(
                    [[hover_text(t) for t in part["text"]], [hover_text(d, 80) for d in part["nearest_document"]]]
                ),
                hovertemplate="#%{x}: similarity %{y:.3f}<br>%{customdata[0]}<br>nearest file: %{customdata[1]}<extra></extra>",
            )
        )
    fig.add_hline(
        y=threshold, line={"dash": "dash", "color": "#555"},
        annotation_text=f"threshold {threshold:.2f}", annotation_position="bottom left",
    )
    fig.update_xaxes(title="questions, best supported first")
    fig.update_yaxes(title="best similarity to any chunk")
    return _layout(fig, "How well the knowledge base supports each question")


def similarity_polar(questions: pd.DataFrame, threshold: float) -> go.Figure:
    """Questions around a circle; distance from the centre is 1 − best similarity.

    Well-supported questions sit near the centre. Angles group questions by
    their cluster (one sector per cluster, questions spread within it), so a
    topic whose questions all sit far out stands out. The dashed circle is
    the threshold.
    """
    frame = questions.copy()
    frame["r"] = 1.0 - frame["max_similarity"].astype(float)
    clusters = sorted(pd.unique(frame["cluster"])) if "cluster" in frame and len(frame) else [0]
    if "cluster" not in frame:
        frame["cluster"] = 0
    frame = frame.sort_values(["cluster", "r"]).reset_index(drop=True)
    theta = np.zeros(len(frame))
    sector = 360.0 / max(len(clusters), 1)
    for position, cluster in enumerate(clusters):
        members = np.flatnonzero(frame["cluster"].to_numpy() == cluster)
        if members.size:
            theta[members] = position * sector + (np.arange(members.size) + 0.5) * sector * 0.9 / members.size
    frame["theta"] = theta
    frame["unsupported"] = frame["max_similarity"] < threshold
    fig = go.Figure()
    for flag, name, colour in _SUPPORT_GROUPS:
        part = frame[frame["unsupported"] == flag]
        fig.add_trace(
            go.Scatterpolar(
                r=part["r"],
                theta=part["theta"],
                mode="markers",
                name=name,
                marker={"color": colour, "size": 8},
                customdata=np.column_stack(
                    [
                        [hover_text(t) for t in part["text"]],
                        [hover_text(d, 80) for d in part["nearest_document"]],
                        part["max_similarity"],
                        part["cluster"].astype(int),
                    ]
                ),
                hovertemplate=(
                    "%{customdata[0]}<br>similarity %{customdata[2]:.3f}<br>nearest file: %{customdata[1]}"
                    "<br>cluster %{customdata[3]}<extra></extra>"
                ),
            )
        )
    circle = np.linspace(0, 360, 181)
    fig.add_trace(
        go.Scatterpolar(
            r=np.full(circle.shape, 1.0 - threshold), theta=circle, mode="lines",
            line={"dash": "dash", "color": "#555"}, name=f"threshold {threshold:.2f}", hoverinfo="skip",
        )
    )
    outer = max(1.0 - threshold, float(frame["r"].max()) if len(frame) else 1.0) * 1.05
    fig.update_layout(
        polar={
            "radialaxis": {"range": [0, outer], "angle": 90, "tickangle": 90},
            "angularaxis": {
                "tickmode": "array",
                "tickvals": [(i + 0.45) * sector for i in range(len(clusters))],
                "ticktext": [f"C{int(c)}" for c in clusters],
            },
        }
    )
    return _layout(fig, "Distance from the centre = 1 − best similarity (centre: well supported)", height=560)


# --------------------------------------------------------------------------
# answerability: labelled questions, dimension sweep, MDS map
# --------------------------------------------------------------------------

__all__ += ["answerability_box", "dimension_sweep_chart", "mds_map"]

ANSWERABLE_COLOUR = COVERED_COLOUR
UNANSWERABLE_COLOUR = GAP_COLOUR
UNLABELLED_COLOUR = "#7f7f7f"
CHUNK_COLOUR = "#9ecae1"


def _answerable_floats(labels, n: int) -> np.ndarray:
    """Labels as 1.0 / 0.0 / NaN (strings parsed as ``answerability.parse_answerable`` does)."""
    from coverage_core.answerability import _labels

    return _labels(labels, n)


def _caption(fig: go.Figure, caption: str | None, below_px: int) -> go.Figure:
    """``caption`` as grey text ``below_px`` pixels under the plot area, wrapped, with room made for it."""
    if caption:
        import textwrap

        lines = textwrap.wrap(" ".join(str(caption).split()), 130) or [""]
        fig.add_annotation(
            text="<br>".join(html.escape(line, quote=False) for line in lines),
            xref="paper", yref="paper", x=0.0, y=0.0, yshift=-below_px, xanchor="left", yanchor="top",
            showarrow=False, align="left", font={"size": 11, "color": "#555"},
        )
        fig.update_layout(margin={"b": below_px + 16 * len(lines) + 16})
    return fig


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
            y=float(threshold), line={"dash": "dash", "color": "#555"},
            annotation_text=f"threshold {float(threshold):.2f}", annotation_position="top left",
        )
    n_unlabelled = int(np.isnan(y).sum())
    fig.update_xaxes(title=f"{n_unlabelled} unlabelled question(s) not shown" if n_unlabelled else "")
    fig.update_yaxes(title="best similarity to any chunk")
    return _layout(fig, "Best similarity of answerable and not-answerable questions", showlegend=False)


def dimension_sweep_chart(frame: pd.DataFrame, caption: str | None = None) -> go.Figure:
    """Rank agreement (and, with labels, AUROC and point-biserial r) against the dimensions used.

    ``frame`` is the table of ``answerability.dimension_sweep``: ``d``,
    ``method``, ``spearman`` and optionally ``auroc`` and
    ``point_biserial_r``. Dimensions are drawn as evenly spaced categories,
    smallest first. ``caption`` (e.g. ``answerability.truncation_note``) is
    written under the chart.
    """
    table = frame.sort_values("d").reset_index(drop=True)
    ds = [str(int(d)) for d in table["d"]]
    methods = table["method"].astype(str).to_numpy() if "method" in table else np.full(len(table), "")
    fig = go.Figure()
    series = (
        ("spearman", "rank agreement with the full size (Spearman)", "#08519c", "circle"),
        ("auroc", "AUROC (answerable vs not)", "#31a354", "diamond"),
        ("point_biserial_r", "point-biserial r", "#fd8d3c", "square"),
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
    _layout(
        fig, "How the per-question similarities change with fewer dimensions",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.0},
    )
    fig.update_layout(margin={"t": 90})
    return _caption(fig, caption, below_px=50)


def mds_map(chunks: pd.DataFrame, questions: pd.DataFrame, caption: str | None = None) -> go.Figure:
    """Questions and chunks placed by MDS on 1 − cosine, questions split by label.

    ``chunks``: columns ``x``, ``y``, ``text`` (``document`` optional).
    ``questions``: ``x``, ``y``, ``text``, optionally ``answerable``
    (1 / 0 / NaN) and ``max_similarity`` (see
    ``answerability.mds_frames``). Hover shows shortened, HTML-escaped text.
    ``caption`` says what was sampled (``MdsPoints.caption``).
    """
    fig = go.Figure()
    documents = chunks["document"] if "document" in chunks else pd.Series([""] * len(chunks))
    fig.add_trace(
        go.Scattergl(
            x=chunks["x"],
            y=chunks["y"],
            mode="markers",
            name="chunks",
            marker={"size": 6, "color": CHUNK_COLOUR, "opacity": 0.6},
            customdata=np.column_stack(
                [[hover_text(t) for t in chunks["text"]], [hover_text(d, 80) for d in documents]]
            ).reshape(len(chunks), 2),
            hovertemplate="<b>chunk</b> of %{customdata[1]}<br>%{customdata[0]}<extra></extra>",
        )
    )
    if "answerable" in questions:
        flags = _answerable_floats(questions["answerable"].to_numpy(), len(questions))
        groups = (
            (flags == 1.0, "answerable questions", "diamond", ANSWERABLE_COLOUR),
            (flags == 0.0, "not-answerable questions", "x", UNANSWERABLE_COLOUR),
            (np.isnan(flags), "unlabelled questions", "diamond-open", UNLABELLED_COLOUR),
        )
    else:
        groups = ((np.ones(len(questions), dtype=bool), "questions", "diamond", QUESTION_COLOUR),)
    similarity = (
        questions["max_similarity"].astype(float).to_numpy()
        if "max_similarity" in questions else np.full(len(questions), np.nan)
    )
    for mask, name, symbol, colour in groups:
        if not mask.any():
            continue
        part = questions[mask]
        fig.add_trace(
            go.Scatter(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=name,
                marker={"size": 11, "symbol": symbol, "color": colour, "line": {"width": 1, "color": "white"}},
                customdata=np.column_stack(
                    [[hover_text(t) for t in part["text"]],
                     [f"{s:.3f}" if np.isfinite(s) else "n/a" for s in similarity[mask]]]
                ),
                hovertemplate=(
                    f"<b>{name[:-1]}</b><br>%{{customdata[0]}}<br>best similarity %{{customdata[1]}}<extra></extra>"
                ),
            )
        )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    _layout(fig, "MDS map of questions and chunks (1 − cosine)", height=640, legend={"itemsizing": "constant"})
    return _caption(fig, caption, below_px=8)


# --------------------------------------------------------------------------
# chunking comparison
# --------------------------------------------------------------------------

__all__ += ["chunking_comparison_chart"]

CHUNKING_METRICS = (
    ("basic", "basic coverage", "#9ecae1"),
    ("balanced", "balanced coverage", "#08519c"),
    ("precision_at_k", "precision@k", "#fdae6b"),
    ("recall_at_k", "recall@k", "#e6550d"),
    ("mrr", "MRR", "#31a354"),
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
    _layout(
        fig, "Coverage and retrieval per chunk configuration", barmode="group",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.0},
    )
    fig.update_layout(margin={"t": 90})
    return fig
