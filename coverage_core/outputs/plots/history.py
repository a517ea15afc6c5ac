"""Figures of the history of runs: the tested share over time, the verdict counts over time, and when each
document became tested or untested.

The builders take plain tables: :func:`runs_frame` turns the runs of a
:class:`~coverage_core.history.HistoryStore` (``RunInfo``, headline figures only) into the table the first
two figures draw; the timeline takes ``HistoryStore.document_timeline``'s change points as they come.
Labels (a branch, a commit, a release) and document names are user text: they reach the figures only
through :func:`~coverage_core.outputs.plots.style.hover_text` (escaped, shortened).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core.outputs.plots.style import (
    NEUTRAL_LINE,
    OK_COLOUR,
    PROBLEM_COLOUR,
    UNDERTESTED_COLOUR,
    category_axis,
    hover_text,
    layout,
)

__all__ = [
    "DATE_FORMAT",
    "TIMELINE_DOCUMENTS",
    "VERDICT_SERIES",
    "document_timeline_chart",
    "run_names",
    "runs_frame",
    "tested_share_over_time",
    "timeline_documents",
    "verdict_counts_over_time",
]

DATE_FORMAT = "%Y-%m-%d %H:%M UTC"
"""How a run's time is written in hover labels and run names (runs are recorded in UTC)."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

# The verdict counts of a run, as the figure names and draws them: problems are warm (the milder under-tested
# lighter), off-topic questions neutral, so the two document verdicts stand out.
VERDICT_SERIES = (
    ("n_untested_documents", "untested documents", PROBLEM_COLOUR, "solid"),
    ("n_undertested_documents", "under-tested documents", UNDERTESTED_COLOUR, "solid"),
    ("n_gaps", "topics that are gaps", PROBLEM_COLOUR, "dash"),
    ("n_offtopic_questions", "off-topic questions", NEUTRAL_LINE, "dot"),
)

RUN_COLUMNS = ("run", "label", "recorded_at", "tested_share") + tuple(column for column, *_ in VERDICT_SERIES)

LONE_RUN_SPAN = pd.Timedelta(hours=1)
"""The span of the time axis when every run shown was recorded at one moment."""
TIMELINE_DOCUMENTS = 40
"""Documents the timeline draws at most (a row each): those untested now first, then the most recently changed."""

_TESTED, _UNTESTED = "tested", "untested"


def _headline_value(headline, name: str) -> float:
    value = headline.get(name) if headline is not None else None
    return float("nan") if value is None else float(value)


def runs_frame(runs: Iterable) -> pd.DataFrame:
    """One row per run (``RunInfo``), oldest first: ``run``, ``label`` ("" when unlabelled), ``recorded_at`` (UTC),
    ``tested_share`` (0..1) and the verdict counts of :data:`VERDICT_SERIES` (NaN where a run lacks one)."""
    rows = [
        {
            "run": int(info.run),
            "label": info.label or "",
            "recorded_at": pd.Timestamp(info.recorded_at),
            "tested_share": _headline_value(info.headline, "tested_share"),
            **{column: _headline_value(info.headline, column) for column, *_ in VERDICT_SERIES},
        }
        for info in runs
    ]
    frame = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    if len(frame):
        frame["recorded_at"] = pd.to_datetime(frame["recorded_at"], utc=True)
    return frame.sort_values("run", kind="stable").reset_index(drop=True)


def run_names(runs: pd.DataFrame) -> list[str]:
    """Each run's name as hover labels and lists show it: "run 3 · main · 2026-11-27 23:14 UTC" (not escaped)."""
    dates = _utc(runs["recorded_at"]).dt.strftime(DATE_FORMAT).fillna("")
    return [
        " · ".join(part for part in (f"run {run}", " ".join(str(label).split()), date) if part)
        for run, label, date in zip(runs["run"], runs["label"], dates)
    ]


def _utc(moments: pd.Series) -> pd.Series:
    return pd.to_datetime(moments, utc=True)


def _times(runs: pd.DataFrame) -> list[str]:
    """The runs' times as Plotly reads them: UTC without an offset (Plotly has no time zones; the axes say
    UTC), as a plain list that travels to the browser as it is."""
    return list(_utc(runs["recorded_at"]).dt.strftime(TIME_FORMAT))


def _time_axis(fig: go.Figure, runs: pd.DataFrame) -> None:
    """The time axis, titled; a single moment (one run) is drawn across ``LONE_RUN_SPAN``, so it reads as a date,
    not as ticks a millisecond apart (runs at different moments keep Plotly's range: their points stay apart)."""
    fig.update_xaxes(title="recorded (UTC)")
    moments = _utc(runs["recorded_at"]).dropna()
    if moments.empty or moments.max() > moments.min():
        return
    ends = pd.Series([moments.min() - LONE_RUN_SPAN / 2, moments.min() + LONE_RUN_SPAN / 2])
    fig.update_xaxes(range=list(ends.dt.strftime(TIME_FORMAT)))


def _array(values) -> np.ndarray:
    """``values`` (texts, times as text, None for a break) as an object array: Plotly takes an array as it is,
    where it checks a list item by item (seconds for the timeline of 1,000 runs)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _values(column: pd.Series) -> list[float | None]:
    return [None if pd.isna(value) else float(value) for value in column]


def _hover_names(runs: pd.DataFrame) -> list[str]:
    return [hover_text(name) for name in run_names(runs)]


def tested_share_over_time(runs: pd.DataFrame) -> go.Figure:
    """The tested share of each run (:func:`runs_frame`), one point per run; its name (run, label, date) on hover.

    Each point's ``customdata`` holds the run number first, so a selection on the chart names the runs picked.
    """
    fig = go.Figure(go.Scatter(
        x=_array(_times(runs)), y=_values(runs["tested_share"]), mode="lines+markers", name="tested share",
        marker={"color": OK_COLOUR, "size": 9}, line={"color": OK_COLOUR},
        customdata=_array([[int(run), name] for run, name in zip(runs["run"], _hover_names(runs))]),
        hovertemplate="%{customdata[1]}<br>%{y:.1%} of the knowledge base tested<extra></extra>",
    ))
    fig.update_yaxes(title="share of passages tested", tickformat=".0%", range=[0, 1.02])
    _time_axis(fig, runs)
    subtitle = "One point per recorded run. Pick two points to see what changed between them."
    return layout(fig, "Is the test set keeping up?", subtitle, legend=None, clickmode="event+select")


def verdict_counts_over_time(runs: pd.DataFrame) -> go.Figure:
    """How many untested and under-tested documents, gaps and off-topic questions each run had."""
    names, times = _array(_hover_names(runs)), _array(_times(runs))
    fig = go.Figure()
    for column, name, colour, dash in VERDICT_SERIES:
        fig.add_trace(go.Scatter(
            x=times, y=_values(runs[column]), mode="lines+markers", name=name,
            line={"color": colour, "dash": dash}, marker={"color": colour, "size": 6}, customdata=names,
            hovertemplate=f"%{{customdata}}<br>%{{y:,}} {name}<extra></extra>",
        ))
    fig.update_yaxes(title="count", rangemode="tozero")
    _time_axis(fig, runs)
    return layout(fig, "What needs attention, run by run", "The verdicts of each recorded run.")


def timeline_documents(
    timeline: Sequence[tuple[str, int, datetime, bool | None]], limit: int = TIMELINE_DOCUMENTS
) -> tuple[list[str], int]:
    """The documents the timeline draws, in row order, and how many documents the timeline has in all.

    A document's state is its last change point's (untested, tested, or gone: None). Documents untested now
    come first, then those tested now, then those gone; within each, the most recently changed first, ties by
    name. At most ``limit``.
    """
    last: dict[str, tuple[int, bool | None]] = {}
    for name, run, _, untested in timeline:
        if name not in last or run >= last[name][0]:
            last[name] = (int(run), untested)
    group = {True: 0, False: 1, None: 2}
    ordered = sorted(last, key=lambda name: (group[last[name][1]], -last[name][0], name))
    return ordered[:limit], len(ordered)


def document_timeline_chart(
    timeline: Sequence[tuple[str, int, datetime, bool | None]], runs: pd.DataFrame,
    limit: int = TIMELINE_DOCUMENTS,
) -> go.Figure:
    """When each document was tested or untested: a row per document (:func:`timeline_documents`), a line in
    the verdict's colour from each change to the next, a marker at each change.

    ``timeline`` holds ``HistoryStore.document_timeline``'s change points (name, run, recorded_at, is_untested:
    None when the document disappeared); ``runs`` (:func:`runs_frame`) gives each run's label and the last
    run's time, where the lines of documents still present end.
    """
    shown, total = timeline_documents(timeline, limit)
    rows = {name: position for position, name in enumerate(shown)}
    names = {int(run): hover_text(name) for run, name in zip(runs["run"], run_names(runs))}
    times = dict(zip((int(run) for run in runs["run"]), _times(runs)))
    end = max(times.values(), default=None)  # the strings sort as the times do
    by_document: dict[str, list[tuple[int, str, bool | None]]] = {name: [] for name in shown}
    for name, run, at, untested in timeline:
        if name in rows:
            run = int(run)
            by_document[name].append((run, times.get(run) or _times(pd.DataFrame({"recorded_at": [at]}))[0], untested))
    values, axis = category_axis(shown)
    lines = {_TESTED: ([], []), _UNTESTED: ([], [])}
    points = {_TESTED: ([], [], []), _UNTESTED: ([], [], []), None: ([], [], [])}
    for name, events in by_document.items():
        events.sort(key=lambda event: event[0])
        y = values[rows[name]]
        shown_name = hover_text(name, 80)
        for position, (run, at, untested) in enumerate(events):
            verdict = None if untested is None else _UNTESTED if untested else _TESTED
            said = "gone" if verdict is None else f"{verdict}"
            xs, ys, hovers = points[verdict]
            xs.append(at)
            ys.append(y)
            hovers.append(f"{shown_name}<br>{said} from {names.get(run, f'run {run}')}")
            if verdict is None:
                continue
            until = events[position + 1][1] if position + 1 < len(events) else end
            line_x, line_y = lines[verdict]
            line_x += [at, until, None]
            line_y += [y, y, None]
    # Traces as dicts, the figure made once: add_trace would copy every array again.
    traces = [
        {"type": "scatter", "x": _array(lines[verdict][0]), "y": _array(lines[verdict][1]), "mode": "lines",
         "name": verdict, "legendgroup": verdict, "line": {"color": colour, "width": 6}, "hoverinfo": "skip"}
        for verdict, colour in ((_TESTED, OK_COLOUR), (_UNTESTED, PROBLEM_COLOUR))
    ]
    for verdict, colour, symbol in ((_TESTED, OK_COLOUR, "circle"), (_UNTESTED, PROBLEM_COLOUR, "circle"),
                                    (None, NEUTRAL_LINE, "x")):
        xs, ys, hovers = points[verdict]
        if xs:
            traces.append({
                "type": "scatter", "x": _array(xs), "y": _array(ys), "mode": "markers",
                "name": verdict or "removed", "legendgroup": verdict or "removed", "showlegend": verdict is None,
                "marker": {"color": colour, "size": 10, "symbol": symbol}, "customdata": _array(hovers),
                "hovertemplate": "%{customdata}<extra></extra>",
            })
    fig = go.Figure(data=traces)
    fig.update_yaxes(**axis, autorange="reversed", title=None)
    _time_axis(fig, runs)
    subtitle = "A row per document, in the colour of its verdict from each change on."
    if total > len(shown):
        subtitle += f" {len(shown):,} of {total:,} documents shown: untested now first, then the latest changes."
    return layout(fig, "When each document was tested", subtitle, height=170 + 26 * max(len(shown), 1))
