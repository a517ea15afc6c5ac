"""Plotly figures of an analysis. Builders take data and return a ``go.Figure``.

One module per family: :mod:`~coverage_core.outputs.plots.coverage` (the
verdict and coverage per topic and document, the 2-D map),
:mod:`~coverage_core.outputs.plots.fitness` (knowledge-base fitness and
answerability), :mod:`~coverage_core.outputs.plots.checks`
(chunking comparison, traffic), on the shared look of
:mod:`~coverage_core.outputs.plots.style`; every builder is importable from here.
:mod:`~coverage_core.outputs.plots.urgency` holds the one order, most urgent
first, in which the charts and the topic tables list topics and documents.

Nothing here displays anything: the dashboard passes the figures to
``st.plotly_chart`` and the HTML report embeds them. The builders take plain
tables (pandas) so they can be tested, and reused, without running an
analysis; :func:`map_frames` turns an analysis and its 2-D projection into
the tables :func:`coverage_map` draws.

User text (questions, passages, file names) is shown only in hover labels and
is HTML-escaped first: Plotly renders a subset of HTML in labels, and a
question such as ``<a href=...>`` must show as text, not as a link.

Every figure must read at 1280 px wide and in a half-width column
(~420 px); the rules live in :func:`coverage_core.outputs.plots.style.layout`:

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
  :data:`PROBLEM_COLOUR` (a milder one, under-tested, the lighter
  :data:`UNDERTESTED_COLOUR`), healthy values the neutral :data:`OK_COLOUR`;
  cluster colours on the maps never use red or orange.
"""

from __future__ import annotations

from coverage_core.outputs.plots.checks import chunking_comparison_chart, traffic_topics, traffic_weekly
from coverage_core.outputs.plots.coverage import (
    before_after_clusters,
    cluster_coverage_bar,
    coverage_map,
    document_coverage_bar,
    document_verdict_bar,
    map_frames,
    metric_comparison_bar,
    topic_verdict_bar,
)
from coverage_core.outputs.plots.fitness import (
    answerability_box,
    dimension_sweep_chart,
    mds_map,
    similarity_polar,
    similarity_ranked,
)
from coverage_core.outputs.plots.style import (
    CLUSTER_COLOURS,
    LEGEND_MAX_CHARS,
    METRIC_LABELS,
    OK_COLOUR,
    PROBLEM_COLOUR,
    TITLE_MAX_CHARS,
    UNDERTESTED_COLOUR,
    cluster_colour,
    hover_text,
    legend_name,
)
from coverage_core.outputs.plots.urgency import (
    document_cut,
    document_verdicts,
    documents_by_urgency,
    gap_measure,
    topic_gaps,
    topics_by_urgency,
)

__all__ = [
    "CLUSTER_COLOURS",
    "LEGEND_MAX_CHARS",
    "METRIC_LABELS",
    "OK_COLOUR",
    "PROBLEM_COLOUR",
    "TITLE_MAX_CHARS",
    "UNDERTESTED_COLOUR",
    "answerability_box",
    "before_after_clusters",
    "chunking_comparison_chart",
    "cluster_colour",
    "cluster_coverage_bar",
    "coverage_map",
    "dimension_sweep_chart",
    "document_coverage_bar",
    "document_cut",
    "document_verdict_bar",
    "document_verdicts",
    "documents_by_urgency",
    "gap_measure",
    "hover_text",
    "legend_name",
    "map_frames",
    "mds_map",
    "metric_comparison_bar",
    "similarity_polar",
    "similarity_ranked",
    "topic_gaps",
    "topic_verdict_bar",
    "topics_by_urgency",
    "traffic_topics",
    "traffic_weekly",
]
