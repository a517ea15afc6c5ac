"""Figures of the checks: chunk configurations compared, and the traffic check."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from coverage_core.outputs.plots.style import OK_COLOUR, PROBLEM_COLOUR, category_axis, layout

# --------------------------------------------------------------------------
# chunking comparison
# --------------------------------------------------------------------------

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
    return layout(fig, "Coverage and retrieval per chunk configuration", barmode="group")


def traffic_topics(topics: pd.DataFrame, n: int = 12) -> go.Figure:
    """Horizontal stacked bars of the ``n`` most asked, least tested traffic topics: tested and untested queries.

    ``topics`` is :attr:`coverage_core.checks.traffic.TrafficResult.topics` (already ranked).
    """
    shown = topics.head(n).iloc[::-1]
    names, axis = category_axis(list(shown["label"]), 40)  # escaped: labels come from users' queries
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
    return layout(
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
    return layout(fig, "Does the test set keep up with traffic?", "Tested share of each week's queries",
                   legend=None)
