"""Figure builders on synthetic data: what each figure holds, read from fig.to_dict()."""

from __future__ import annotations

import base64
import colorsys
import html
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from coverage_core import verdicts
from coverage_core.outputs import plots
from coverage_core.outputs.plots import style
from coverage_core.outputs.plots.checks import CHUNKING_METRICS
from coverage_core.suggest.gaps import GapConfig, rank_gaps


def values(data) -> list:
    """A trace array as a list, whether Plotly stored it plainly or as typed binary (bdata)."""
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        if "shape" in data:
            array = array.reshape([int(n) for n in str(data["shape"]).split(",")])
        return array.tolist()
    return list(np.asarray(data).tolist())


@pytest.fixture
def clusters():
    return pd.DataFrame(
        {
            "cluster": [0, 1, 2, 3],
            "size": [40, 10, 30, 20],
            "share": [0.4, 0.1, 0.3, 0.2],
            "coverage": [0.8, 0.3, 0.65, 0.9],
            "n_questions": [5, 0, 2, 7],
            "is_gap": [False, True, True, False],
        }
    )


@pytest.fixture
def questions():
    return pd.DataFrame(
        {
            "row": [0, 1, 2, 3, 4],
            "text": ["good", "<script>alert(1)</script>", "fine", "far away", "close"],
            "max_similarity": [0.8, 0.2, 0.6, 0.1, 0.9],
            "nearest_document": ["a.txt", "b.txt", "a.txt", "c.txt", "b.txt"],
            "cluster": [0, 1, 0, 2, 1],
        }
    )


def test_cluster_bar_sorts_worst_first_and_colours_gaps(clusters):
    fig = plots.cluster_coverage_bar(clusters, gap_threshold=0.7)
    assert isinstance(fig, go.Figure)
    data = fig.to_dict()
    bar = data["data"][0]
    assert bar["type"] == "bar"
    assert bar["x"] == ["C1", "C2", "C0", "C3"]
    assert values(bar["y"]) == pytest.approx([0.3, 0.65, 0.8, 0.9])
    assert bar["marker"]["color"] == [style.GAP_COLOUR, style.GAP_COLOUR, style.COVERED_COLOUR, style.COVERED_COLOUR]
    shapes = data["layout"]["shapes"]
    assert shapes[0]["y0"] == shapes[0]["y1"] == 0.7
    assert "gap threshold 0.70" in data["layout"]["annotations"][0]["text"]


def test_cluster_bar_without_is_gap_uses_the_threshold(clusters):
    fig = plots.cluster_coverage_bar(clusters.drop(columns=["is_gap"]), gap_threshold=0.7)
    colours = fig.to_dict()["data"][0]["marker"]["color"]
    assert colours.count(style.GAP_COLOUR) == 2


def test_cluster_bar_handles_an_empty_cluster():
    frame = pd.DataFrame(
        {"cluster": [0, 1], "size": [3, 0], "share": [1.0, 0.0], "coverage": [0.5, np.nan], "n_questions": [1, 0]}
    )
    bar = plots.cluster_coverage_bar(frame).to_dict()["data"][0]
    assert values(bar["y"]) == [0.0, 0.5]  # NaN drawn as an empty bar, first


def test_document_bar_flags_low_documents_and_escapes_names():
    documents = pd.DataFrame(
        {"document": ["a.txt", "<b>b</b>.md"], "n_chunks": [5, 2], "coverage": [0.7, 0.2], "is_low": [False, True]}
    )
    data = plots.document_coverage_bar(documents).to_dict()
    bar = data["data"][0]
    assert bar["orientation"] == "h"
    assert bar["y"] == ["&lt;b&gt;b&lt;/b&gt;.md", "a.txt"]
    assert bar["marker"]["color"] == [style.LOW_COLOUR, style.COVERED_COLOUR]
    assert "untested or possibly misaligned" in str(bar["customdata"])


def test_coverage_map_draws_clusters_questions_and_outliers_apart():
    chunks = pd.DataFrame(
        {
            "x": [0.0, 1.0, 2.0, 3.0],
            "y": [0.0, 1.0, 0.0, 1.0],
            "cluster": [0, 0, 1, 2],
            "text": ["alpha " * 100, "beta", "gamma", "delta"],
            "document": ["a.txt", "a.txt", "b.txt", "c.txt"],
        }
    )
    points = pd.DataFrame(
        {
            "x": [0.5, 2.5],
            "y": [0.5, 0.5],
            "text": ["What is alpha?", "<img src=x onerror=alert(1)>"],
            "document": ["a.txt", "b.txt"],
            "cluster": [0, 1],
            "is_outlier": [False, True],
        }
    )
    data = plots.coverage_map(chunks, points, {"basic": 0.61, "balanced": 0.55}, caption="Map shows all 4 chunks.").to_dict()
    names = [trace["name"] for trace in data["data"]]
    assert names == ["C0", "C1", "C2", "questions", "off-topic questions"]  # no labels in this frame
    chunk_traces, question, outlier = data["data"][:3], data["data"][3], data["data"][4]
    assert len({t["marker"]["color"] for t in chunk_traces}) == 3
    assert question["marker"]["symbol"] == "diamond-open" and outlier["marker"]["symbol"] == "x-thin-open"
    # Hover: shortened text, its file and its cluster; user text escaped.
    hover = values(chunk_traces[0]["customdata"])
    assert hover[0][0].endswith("…") and len(hover[0][0]) <= style.HOVER_CHARS
    assert hover[0][1] == "a.txt"
    assert "topic: C0" in chunk_traces[0]["hovertemplate"]
    outlier_hover = values(outlier["customdata"])[0]
    assert outlier_hover[0] == "&lt;img src=x onerror=alert(1)&gt;"
    assert outlier_hover[1:] == ["b.txt", "topic: C1"]
    # Metrics and caption are in the subtitle: no box covers the map.
    subtitle = data["layout"]["title"]["subtitle"]["text"]
    assert "Basic\u00a00.610" in subtitle and "Balanced\u00a00.550" in subtitle
    assert "Map shows all 4 chunks." in subtitle
    assert not data["layout"].get("annotations")


def test_ranked_similarity_is_decreasing_and_marks_unsupported(questions):
    data = plots.similarity_ranked(questions, threshold=0.5).to_dict()
    supported, unsupported = data["data"]
    assert unsupported["name"] == "the knowledge base may not answer this"
    ys = values(supported["y"]) + values(unsupported["y"])
    xs = values(supported["x"]) + values(unsupported["x"])
    ranked = [y for _, y in sorted(zip(xs, ys))]
    assert ranked == sorted(ranked, reverse=True) == pytest.approx([0.9, 0.8, 0.6, 0.2, 0.1])
    assert values(unsupported["y"]) == pytest.approx([0.2, 0.1])
    assert data["layout"]["shapes"][0]["y0"] == 0.5
    assert "&lt;script&gt;" in str(unsupported["customdata"])


def test_polar_distance_is_one_minus_similarity(questions):
    data = plots.similarity_polar(questions, threshold=0.5).to_dict()
    supported, unsupported, circle = data["data"]
    assert supported["type"] == "scatterpolar"
    r = values(supported["r"]) + values(unsupported["r"])
    assert sorted(r) == pytest.approx(sorted(1 - questions["max_similarity"]))
    assert max(values(supported["r"])) <= 0.5 < min(values(unsupported["r"]))
    assert set(values(circle["r"])) == {0.5}
    theta = values(supported["theta"]) + values(unsupported["theta"])
    assert all(0 <= t < 360 for t in theta)
    assert data["layout"]["polar"]["angularaxis"]["ticktext"] == ["C0", "C1", "C2"]


def test_before_after_bars_pair_clusters(clusters):
    after = clusters.assign(coverage=clusters["coverage"] + [0.0, 0.3, 0.1, 0.0])
    data = plots.before_after_clusters(clusters, after, names=("v1", "v2")).to_dict()
    first, second = data["data"]
    assert (first["name"], second["name"]) == ("v1", "v2")
    assert first["x"] == second["x"] == ["C1", "C2", "C0", "C3"]
    assert values(second["y"]) == pytest.approx([0.6, 0.75, 0.8, 0.9])
    assert values(first["customdata"]) == pytest.approx([0.3, 0.1, 0.0, 0.0])
    assert data["layout"]["barmode"] == "group"


def test_metric_comparison_groups_sets():
    data = plots.metric_comparison_bar(
        {"old": {"basic": 0.5, "balanced": 0.4}, "new": {"basic": 0.6, "balanced": 0.55}}
    ).to_dict()
    assert [t["name"] for t in data["data"]] == ["old", "new"]
    assert data["data"][1]["x"] == ["Basic", "Balanced"]
    assert values(data["data"][1]["y"]) == pytest.approx([0.6, 0.55])


def test_hover_text_shortens_flattens_and_escapes():
    assert plots.hover_text("a\n\n  b") == "a b"
    assert plots.hover_text("x" * 500, 20) == "x" * 19 + "…"
    assert plots.hover_text("<a href='javascript:1'>") == "&lt;a href='javascript:1'&gt;"


# --------------------------------------------------------------------------
# answerability figures
# --------------------------------------------------------------------------


def test_answerability_box_splits_by_label_and_draws_the_threshold():
    similarities = [0.2, 0.8, 0.3, 0.9, 0.5, 0.7]
    labels = ["no", "yes", "not covered", "Covered", "", "1"]
    texts = ["a", "<b>bold</b>", "c", "d", "e", "f"]
    data = plots.answerability_box(similarities, labels, threshold=0.45, texts=texts).to_dict()
    answerable, unanswerable = data["data"]
    assert (answerable["type"], answerable["name"], unanswerable["name"]) == ("box", "answerable", "not answerable")
    assert values(answerable["y"]) == pytest.approx([0.8, 0.9, 0.7])
    assert values(unanswerable["y"]) == pytest.approx([0.2, 0.3])
    assert answerable["x"][0] == "answerable (n=3)" and unanswerable["x"][0] == "not answerable (n=2)"
    assert answerable["boxpoints"] == "all"
    assert values(answerable["customdata"])[0] == "&lt;b&gt;bold&lt;/b&gt;"
    shape = data["layout"]["shapes"][0]
    assert shape["y0"] == shape["y1"] == 0.45
    assert any("threshold 0.45" in a["text"] for a in data["layout"]["annotations"])
    assert "1 unlabelled" in data["layout"]["xaxis"]["title"]["text"]


def test_answerability_box_without_threshold_has_no_line():
    data = plots.answerability_box(np.array([0.1, 0.9]), np.array([0.0, 1.0]), threshold=float("nan")).to_dict()
    assert not data["layout"].get("shapes")
    assert [values(t["y"]) for t in data["data"]] == [[0.9], [0.1]]


def test_dimension_sweep_chart_draws_each_measure_against_sorted_dimensions():
    frame = pd.DataFrame(
        {
            "d": [384, 32, 128],
            "method": ["full", "truncated", "truncated"],
            "spearman": [1.0, 0.78, 0.93],
            "mean_similarity": [0.6, 0.7, 0.63],
            "point_biserial_r": [0.66, 0.48, 0.61],
            "auroc": [0.99, 0.94, 0.98],
        }
    )
    data = plots.dimension_sweep_chart(frame, caption="MiniLM <was> not trained for truncation.").to_dict()
    names = [t["name"] for t in data["data"]]
    assert names == ["ranking kept (vs all dimensions)", "labels told apart", "link to the labels"]  # plain words
    spearman, auroc, r = data["data"]
    assert spearman["x"] == ["32", "128", "384"]
    assert values(spearman["y"]) == pytest.approx([0.78, 0.93, 1.0])
    assert values(auroc["y"]) == pytest.approx([0.94, 0.98, 0.99])
    assert values(r["y"]) == pytest.approx([0.48, 0.61, 0.66])
    assert values(spearman["customdata"]) == ["truncated", "truncated", "full"]
    assert data["layout"]["xaxis"]["type"] == "category"
    assert "MiniLM &lt;was&gt; not trained" in data["layout"]["title"]["subtitle"]["text"]
    unlabelled = plots.dimension_sweep_chart(frame[["d", "method", "spearman"]]).to_dict()
    assert [t["name"] for t in unlabelled["data"]] == ["ranking kept (vs all dimensions)"]
    assert "subtitle" not in unlabelled["layout"]["title"]


def test_mds_map_separates_chunks_and_labelled_questions_and_escapes_text():
    chunks = pd.DataFrame(
        {"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 0.5], "text": ["alpha " * 100, "beta", "<i>x</i>"],
         "document": ["a.txt", "b.txt", "<c>.txt"]}
    )
    questions = pd.DataFrame(
        {
            "x": [0.5, 1.5, 2.5, 3.0],
            "y": [0.5, 0.2, 0.1, 0.0],
            "text": ["What is alpha?", "<script>alert(1)</script>", "Zebra?", "unknown"],
            "answerable": [1.0, 1.0, 0.0, np.nan],
            "max_similarity": [0.71, 0.6, 0.2, np.nan],
        }
    )
    data = plots.mds_map(chunks, questions, caption="3 of 30 chunks shown <sampled>.").to_dict()
    names = [t["name"] for t in data["data"]]
    assert names == ["chunks", "answerable questions", "not-answerable questions", "unlabelled questions"]
    chunk_trace, answerable, unanswerable, unlabelled = data["data"]
    assert values(chunk_trace["x"]) == [0.0, 1.0, 2.0]
    hover = values(chunk_trace["customdata"])
    assert hover[0][0].endswith("…") and len(hover[0][0]) <= style.HOVER_CHARS
    assert hover[2] == ["&lt;i&gt;x&lt;/i&gt;", "&lt;c&gt;.txt"]
    assert values(answerable["x"]) == [0.5, 1.5] and values(unanswerable["x"]) == [2.5]
    assert values(answerable["customdata"])[1] == ["&lt;script&gt;alert(1)&lt;/script&gt;", "0.600"]
    assert values(unlabelled["customdata"])[0][1] == "n/a"
    symbols = {t["name"]: t["marker"]["symbol"] for t in data["data"][1:]}
    assert len(set(symbols.values())) == 3 and chunk_trace["marker"]["size"] < answerable["marker"]["size"]
    assert "&lt;sampled&gt;" in data["layout"]["title"]["subtitle"]["text"]


def test_mds_map_without_labels_draws_one_question_trace():
    chunks = pd.DataFrame({"x": [0.0], "y": [0.0], "text": ["c"]})
    questions = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, 0.0], "text": ["q1", "q2"]})
    data = plots.mds_map(chunks, questions).to_dict()
    assert [t["name"] for t in data["data"]] == ["chunks", "questions"]
    assert values(data["data"][1]["customdata"]) == [["q1", "n/a"], ["q2", "n/a"]]


def test_chunking_comparison_chart_groups_metrics_by_configuration():
    table = pd.DataFrame(
        {
            "chunk_size": [500, 1000, 2000],
            "chunk_overlap": [0, 200, 200],
            "n_chunks": [40, 22, np.nan],
            "basic": [0.61, 0.58, np.nan],
            "balanced": [0.55, 0.52, np.nan],
            "precision_at_k": [0.4, 0.5, np.nan],
            "recall_at_k": [0.8, 0.9, np.nan],
            "mrr": [0.7, 0.75, np.nan],
            "error": [None, None, "chunk_overlap must be smaller than chunk_size"],
        }
    )
    data = plots.chunking_comparison_chart(table, k=5).to_dict()
    names = [trace["name"] for trace in data["data"]]
    assert names == ["basic coverage", "balanced coverage", "precision@5", "recall@5", "MRR"]
    assert data["layout"]["barmode"] == "group"
    first = data["data"][0]
    assert list(first["x"]) == ["500/0", "1000/200", "2000/200"]  # the failed row keeps its (empty) group
    assert values(first["y"])[:2] == pytest.approx([0.61, 0.58]) and np.isnan(values(first["y"])[2])
    assert list(values(first["customdata"])) == ["40", "22", "n/a"]


def test_chunking_comparison_chart_without_retrieval_draws_coverage_only():
    table = pd.DataFrame(
        {
            "chunk_size": [500], "chunk_overlap": [0], "n_chunks": [3], "basic": [0.5], "balanced": [0.4],
            "precision_at_k": [np.nan], "recall_at_k": [np.nan], "mrr": [np.nan],
        }
    )
    data = plots.chunking_comparison_chart(table).to_dict()
    assert [trace["name"] for trace in data["data"]] == ["basic coverage", "balanced coverage"]


def test_charts_name_clusters_by_their_topic_label():
    clusters = pd.DataFrame(
        {"cluster": [0, 1], "size": [3, 2], "share": [0.6, 0.4], "coverage": [0.8, 0.3], "n_questions": [2, 0],
         "label": ["koala · marsupial · eucalyptus", ""]}
    )
    bar = plots.cluster_coverage_bar(clusters, 0.7)
    assert list(bar.data[0].x) == ["C1", "koala · marsupial · eucalyptus"]  # no label: the number
    pair = plots.before_after_clusters(clusters, clusters.assign(coverage=[0.9, 0.5]))
    assert "koala · marsupial · eucalyptus" in list(pair.data[0].x)


# --------------------------------------------------------------------------
# readability at 1280 px and in half-width columns: the shared layout rules
# --------------------------------------------------------------------------

TOPICS = [
    "koala · species · australia",
    "lobster · metanephrops · live claws",
    "flute · trumpet · drum",
    "james watt · greenock · birmingham engines",
]
CLUSTER_NUMBER = re.compile(r"\bcluster \d+\b|\bC\d+\b")


@pytest.fixture
def labelled(clusters):
    return clusters.assign(label=TOPICS)


@pytest.fixture
def map_points():
    chunks = pd.DataFrame(
        {
            "x": [0.0, 1.0, 2.0, 3.0, 4.0],
            "y": [0.0, 1.0, 0.0, 1.0, 2.0],
            "cluster": [0, 0, 1, 2, 3],
            "text": ["alpha", "beta", "gamma", "delta", "epsilon"],
            "document": ["a.txt", "a.txt", "b.txt", "c.txt", "d.txt"],
            "label": [TOPICS[0], TOPICS[0], TOPICS[1], TOPICS[2], TOPICS[3]],
        }
    )
    questions = pd.DataFrame(
        {
            "x": [0.5, 2.5, 3.5], "y": [0.5, 0.5, 1.0], "text": ["q1", "q2", "q3"],
            "document": ["a.txt", "b.txt", "d.txt"], "cluster": [0, 1, 3], "is_outlier": [False, True, False],
        }
    )
    return chunks, questions


def all_figures(labelled, questions, map_points) -> dict[str, go.Figure]:
    """One of every public figure, built with topic labels wherever a figure shows clusters."""
    chunks, points = map_points
    after = labelled.assign(coverage=labelled["coverage"] + 0.05)
    sweep = pd.DataFrame({"d": [384, 64], "method": ["full", "truncated"], "spearman": [1.0, 0.8], "auroc": [0.9, 0.85]})
    table = pd.DataFrame(
        {"chunk_size": [500, 1000], "chunk_overlap": [0, 100], "n_chunks": [4, 2], "basic": [0.5, 0.6],
         "balanced": [0.4, 0.5], "precision_at_k": [0.3, 0.4], "recall_at_k": [0.6, 0.7], "mrr": [0.5, 0.6]}
    )
    mds_questions = points.assign(answerable=[1.0, 0.0, np.nan], max_similarity=[0.7, 0.2, 0.5])
    tested = labelled.assign(n_tested=[30, 1, 10, 18], tested_share=[0.75, 0.1, 0.33, 0.9])
    return {
        "topic_verdict_bar": plots.topic_verdict_bar(tested),
        "document_verdict_bar": plots.document_verdict_bar(pd.DataFrame({
            "document": ["a.txt", "b.txt", "a very long file name of a report, version 2.pdf"], "n_chunks": [3, 2, 9],
            "n_tested": [3, 0, 1], "tested_share": [1.0, 0.0, 1 / 9], "is_untested": [False, True, False],
            "is_undertested": [False, False, True], "n_questions": [4, 0, 1],
        })),
        "cluster_coverage_bar": plots.cluster_coverage_bar(labelled, 0.7),
        "document_coverage_bar": plots.document_coverage_bar(
            pd.DataFrame({"document": ["a.txt", "b.txt"], "n_chunks": [3, 2], "coverage": [0.7, 0.2], "is_low": [False, True]})
        ),
        "before_after_clusters": plots.before_after_clusters(
            labelled, after, ("a very long question file name, version one.csv", "questions-v2.csv")
        ),
        "metric_comparison_bar": plots.metric_comparison_bar({"old": {"basic": 0.5}, "new": {"basic": 0.6}}),
        "coverage_map": plots.coverage_map(chunks, points, {"basic": 0.6, "balanced": 0.5}, "Map shows all 5 chunks."),
        "similarity_ranked": plots.similarity_ranked(questions, 0.5, labels=labelled),
        "similarity_polar": plots.similarity_polar(questions, 0.5, labels=labelled),
        "answerability_box": plots.answerability_box([0.2, 0.8, 0.6], [0, 1, 1], 0.5),
        "dimension_sweep_chart": plots.dimension_sweep_chart(sweep, "A long note about truncation. " * 4),
        "mds_map": plots.mds_map(chunks, mds_questions, "All 5 chunks and 3 questions shown."),
        "chunking_comparison_chart": plots.chunking_comparison_chart(table, 5),
        "traffic_topics": plots.traffic_topics(pd.DataFrame({
            "label": ["koala · eucalyptus · sleep", "<b>refund</b> · policy"], "volume": [120, 40],
            "tested_share": [0.1, 0.75],
        })),
        "traffic_weekly": plots.traffic_weekly(pd.DataFrame({
            "week": ["2026-11-02", "2026-11-09"], "volume": [300, 280], "tested_share": [0.4, 0.55],
        })),
    }


def test_all_figures_covers_every_public_figure_builder(labelled, questions, map_points):
    helpers = {
        "cluster_colour", "hover_text", "legend_name", "map_frames", "document_cut", "document_verdicts",
        "documents_by_urgency", "gap_measure", "topic_gaps", "topics_by_urgency",
    }
    builders = {name for name in plots.__all__ if callable(getattr(plots, name)) and name not in helpers}
    assert set(all_figures(labelled, questions, map_points)) == builders == set(FIGURES)


FIGURES = (
    "topic_verdict_bar", "document_verdict_bar", "cluster_coverage_bar", "document_coverage_bar", "before_after_clusters", "metric_comparison_bar", "coverage_map",
    "similarity_ranked", "similarity_polar", "answerability_box", "dimension_sweep_chart", "mds_map",
    "chunking_comparison_chart", "traffic_topics", "traffic_weekly",
)


def test_traffic_figures_escape_query_text_and_split_tested_from_untested():
    figure = plots.traffic_topics(pd.DataFrame({
        "label": ["<b>refund</b> · policy", "koala · sleep"], "volume": [40, 120], "tested_share": [0.75, 0.1],
    }))
    untested, tested = figure.data
    assert (untested.name, tested.name) == ("not tested", "tested")
    assert list(untested.x) == [108, 10] and list(tested.x) == [12, 30]  # bottom-up: the first row drawn on top
    ticks = figure.layout.yaxis.ticktext
    assert "&lt;b&gt;refund&lt;/b&gt; · policy" in ticks and not any("<b>" in t for t in ticks)
    weekly = plots.traffic_weekly(pd.DataFrame({"week": ["2026-11-02"], "volume": [3], "tested_share": [0.5]}))
    assert weekly.to_dict()["layout"]["yaxis"]["tickformat"] == ".0%"


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_has_a_short_title_room_for_it_and_a_compact_legend(name, labelled, questions, map_points):
    figure = all_figures(labelled, questions, map_points)[name].to_dict()
    layout, data = figure["layout"], figure["data"]
    title = layout["title"]
    assert 0 < len(html.unescape(title["text"])) <= plots.TITLE_MAX_CHARS
    assert title["xanchor"] == "left" and title["yanchor"] == "top"
    subtitle_lines = title.get("subtitle", {}).get("text", "").split("<br>") if "subtitle" in title else []
    assert all(len(html.unescape(line)) <= style.SUBTITLE_LINE_CHARS for line in subtitle_lines)
    assert layout["margin"]["t"] >= 56 + 17 * len(subtitle_lines)  # the title and subtitle never touch the plot
    legend = layout.get("legend", {})
    if layout.get("showlegend") is False:
        return
    entries = [trace["name"] for trace in data if trace.get("showlegend", True) and trace.get("name")]
    if legend.get("orientation") == "h":
        assert legend["yanchor"] == "bottom" and legend["y"] == 0 and legend["yref"] == "container"  # under the plot
    else:  # beside the plot: only maps, with short names
        assert name in {"coverage_map", "mds_map"}
        assert all(len(html.unescape(entry)) <= plots.LEGEND_MAX_CHARS for entry in entries)


def test_layout_rejects_a_title_too_long_to_fit():
    with pytest.raises(ValueError, match="title longer"):
        style.layout(go.Figure(), "x" * (plots.TITLE_MAX_CHARS + 1))


def texts_of(fig: go.Figure) -> list[str]:
    """Every text a reader can see in a figure: names, categories, ticks, hover templates and data, titles."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            if "bdata" in node:
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)
        elif isinstance(node, np.ndarray) and node.dtype == object:
            walk(node.tolist())

    walk(fig.to_dict())
    return found


@pytest.mark.parametrize("name", [
    "topic_verdict_bar", "cluster_coverage_bar", "before_after_clusters", "coverage_map", "similarity_ranked", "similarity_polar",
])
def test_labelled_clusters_are_named_by_topic_never_by_number(name, labelled, questions, map_points):
    fig = all_figures(labelled, questions, map_points)[name]
    shown = texts_of(fig)
    numbered = [text for text in shown if CLUSTER_NUMBER.search(html.unescape(text))]
    assert not numbered, numbered
    # The topics themselves are there (shortened where space is short, whole in the hover).
    joined = html.unescape(" ".join(shown))
    assert "koala" in joined and "lobster" in joined


def test_long_topic_labels_are_shortened_in_legends_and_whole_in_the_hover(map_points):
    chunks, points = map_points
    data = plots.coverage_map(chunks, points).to_dict()
    watt = next(t for t in data["data"] if t["name"].startswith("james watt"))
    assert len(watt["name"]) <= plots.LEGEND_MAX_CHARS and watt["name"].endswith("…")
    assert TOPICS[3] in watt["hovertemplate"]
    bar = plots.cluster_coverage_bar(pd.DataFrame(
        {"cluster": [0, 1], "size": [1, 1], "share": [0.5, 0.5], "coverage": [0.2, 0.9], "n_questions": [0, 1],
         "label": [TOPICS[3], TOPICS[0]]}
    )).to_dict()
    axis = bar["layout"]["xaxis"]
    assert bar["data"][0]["x"] == [TOPICS[3], TOPICS[0]]  # whole names: the hover shows %{x}
    assert axis["ticktext"][0].endswith("…") and all(len(t) <= plots.LEGEND_MAX_CHARS for t in axis["ticktext"])


def test_polar_chart_has_a_fitting_title_thinned_radial_ticks_and_topic_sectors(questions, labelled):
    data = plots.similarity_polar(questions, 0.5, labels=labelled).to_dict()
    layout = data["layout"]
    assert len(layout["title"]["text"]) <= 60
    radial = layout["polar"]["radialaxis"]
    assert radial.get("showticklabels") is False or len(radial["tickvals"]) <= 4
    assert 0 not in radial["tickvals"]  # no "0" label on top of the centre points
    assert layout["polar"]["angularaxis"]["ticktext"] == ["koala", "lobster", "flute"]
    hover = [row[3] for trace in data["data"][:2] for row in values(trace["customdata"])]
    assert set(hover) == {TOPICS[0], TOPICS[1], TOPICS[2]}
    # The radial axis sits in an empty wedge: no question is drawn within it.
    theta = values(data["data"][0]["theta"]) + values(data["data"][1]["theta"])
    assert all(abs(t - radial["angle"]) >= style.POLAR_AXIS_GAP / 2 for t in theta)


def test_polar_chart_thins_sector_names_when_there_are_many_clusters():
    n = 40
    many = pd.DataFrame(
        {"text": [f"q{i}" for i in range(n)], "max_similarity": np.linspace(0.1, 0.9, n),
         "nearest_document": ["a"] * n, "cluster": list(range(n))}
    )
    labels = {i: f"topic{i} · longer word · third" for i in range(n)}
    axis = plots.similarity_polar(many, 0.5, labels=labels).to_dict()["layout"]["polar"]["angularaxis"]
    assert len(axis["ticktext"]) <= style.POLAR_MAX_TICKS
    assert all(len(text) <= style.POLAR_TICK_CHARS for text in axis["ticktext"])


def test_polar_chart_falls_back_to_cluster_numbers_without_labels(questions):
    axis = plots.similarity_polar(questions, 0.5).to_dict()["layout"]["polar"]["angularaxis"]
    assert axis["ticktext"] == ["C0", "C1", "C2"]


def test_map_question_markers_leave_the_passages_visible(map_points):
    chunks, points = map_points
    for data in (
        plots.coverage_map(chunks, points).to_dict()["data"],
        plots.mds_map(chunks, points.assign(answerable=[1.0, 0.0, np.nan])).to_dict()["data"],
    ):
        chunk_marker = next(t for t in data if t["type"] == "scattergl")["marker"]
        for trace in (t for t in data if t["type"] == "scatter"):
            marker = trace["marker"]
            hollow = marker["symbol"].endswith("-open")
            assert hollow or marker.get("opacity", 1) < 1, trace["name"]
            assert marker.get("opacity", 1) <= 0.8
            assert marker["size"] <= 1.5 * chunk_marker["size"], trace["name"]


def hue(colour: str) -> float:
    red, green, blue = (int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4))
    h, _, s = colorsys.rgb_to_hls(red, green, blue)
    return h * 360 if s > 0.25 else -1.0  # greys have no hue


def is_red(colour: str) -> bool:
    return colour.lower() in {"red", "#d62728", "#fb0d0d"} or 0 <= hue(colour) < 15 or hue(colour) >= 330


def is_warm(colour: str) -> bool:
    return is_red(colour) or 0 <= hue(colour) <= 50


def test_healthy_values_are_never_red_and_verdicts_share_their_colours(clusters, questions, map_points):
    assert not is_warm(plots.OK_COLOUR) and is_warm(plots.PROBLEM_COLOUR)
    assert not any(is_warm(colour) for colour in plots.CLUSTER_COLOURS)
    # Cluster bar: the covered topics neutral, the gaps warm.
    colours = plots.cluster_coverage_bar(clusters, 0.7).to_dict()["data"][0]["marker"]["color"]
    gaps = dict(zip(["C1", "C2", "C0", "C3"], colours))
    assert is_warm(gaps["C1"]) and is_warm(gaps["C2"]) and not is_warm(gaps["C0"]) and not is_warm(gaps["C3"])
    # Documents, fitness and answerability: one warm colour for the problem, one neutral for the rest.
    documents = plots.document_coverage_bar(
        pd.DataFrame({"document": ["a", "b"], "n_chunks": [1, 1], "coverage": [0.9, 0.1], "is_low": [False, True]})
    ).to_dict()["data"][0]["marker"]["color"]
    assert documents == [plots.PROBLEM_COLOUR, plots.OK_COLOUR]
    for figure in (plots.similarity_ranked(questions, 0.5), plots.similarity_polar(questions, 0.5)):
        supported, unsupported = figure.to_dict()["data"][:2]
        assert supported["marker"]["color"] == plots.OK_COLOUR and unsupported["marker"]["color"] == plots.PROBLEM_COLOUR
    answerable, unanswerable = plots.answerability_box([0.2, 0.8], [0, 1]).to_dict()["data"]
    assert answerable["marker"]["color"] == plots.OK_COLOUR and unanswerable["marker"]["color"] == plots.PROBLEM_COLOUR
    chunks, points = map_points
    off_topic = next(t for t in plots.coverage_map(chunks, points).to_dict()["data"] if t["name"] == "off-topic questions")
    assert off_topic["marker"]["color"] == plots.PROBLEM_COLOUR
    # Series that are neither good nor bad (question sets, metrics) are never warm.
    neutral = [
        *(t["marker"]["color"] for t in plots.metric_comparison_bar({str(i): {"basic": 0.5} for i in range(6)}).data),
        *(colour for _, _, colour in CHUNKING_METRICS),
    ]
    assert not any(is_warm(colour) for colour in neutral), neutral


# --------------------------------------------------------------------------
# charts plot the verdict: tested share, the cut, most urgent first
# --------------------------------------------------------------------------


@pytest.fixture
def topics():
    """Two gaps whose rank_gaps order (by coverage and size) is not their tested-share order, three other
    topics (two with the same tested share) and an empty one."""
    return pd.DataFrame(
        {
            "cluster": [0, 1, 2, 3, 4, 5],
            "size": [10, 10, 10, 5, 20, 0],
            "share": [10 / 55, 10 / 55, 10 / 55, 5 / 55, 20 / 55, 0.0],
            "coverage": [0.8, 0.5, 0.2, 0.7, 0.6, np.nan],
            "n_tested": [8, 1, 4, 3, 12, 0],
            "tested_share": [0.8, 0.1, 0.4, 0.6, 0.6, np.nan],
            "n_questions": [3, 1, 1, 2, 4, 0],
            "is_gap": [False, True, True, False, False, False],
            "label": ["river · delta", "violin · bow", "comet · orbit", "<b>tea</b> · leaf", "koala · gum", "empty"],
        }
    )


def test_topics_by_urgency_puts_gaps_first_then_the_least_tested_as_shown(topics):
    gaps = GapConfig()
    ranked = [k for k, _ in rank_gaps(topics["coverage"], topics["size"], gaps, is_gap=topics["is_gap"])]
    assert ranked == [2, 1]  # the core's ranking: the gap with the lower coverage leads, though more tested
    order = plots.topics_by_urgency(topics, gaps)["cluster"].tolist()
    # The table and the chart show the tested share: gaps first, each group by it ascending (not the core's
    # ranking, which reads a score they do not show), the larger of two equal shares first, the empty topic last.
    assert order == [1, 2, 4, 3, 0, 5]
    # the input is left as it was
    assert topics["cluster"].tolist() == [0, 1, 2, 3, 4, 5]


def test_topics_by_urgency_decides_gaps_when_the_table_has_no_verdict(topics):
    order = plots.topics_by_urgency(topics.drop(columns=["is_gap"]), GapConfig(tested_share_threshold=0.5))
    assert order["cluster"].tolist() == [1, 2, 4, 3, 0, 5]


def test_documents_by_urgency_untested_then_under_tested_then_the_rest():
    documents = pd.DataFrame({
        "document": ["e.txt", "d.txt", "c.txt", "b.txt", "a.txt", "f.txt"],
        "n_chunks": [10, 10, 10, 10, 10, 10], "n_tested": [9, 2, 0, 1, 9, 0],
        "tested_share": [0.9, 0.2, 0.0, 0.1, 0.9, 0.0],
        "is_untested": [False, False, True, False, False, True],
        "is_undertested": [False, True, False, True, False, False],
    })
    order = plots.documents_by_urgency(documents)["document"].tolist()
    assert order == ["c.txt", "f.txt", "b.txt", "d.txt", "a.txt", "e.txt"]
    assert plots.document_verdicts(documents).tolist() == ["", "under-tested", "untested", "under-tested", "", "untested"]
    # Before the under-tested verdict exists, only the untested lead.
    old = documents.drop(columns=["is_undertested"])
    assert plots.documents_by_urgency(old)["document"].tolist() == ["c.txt", "f.txt", "b.txt", "d.txt", "a.txt", "e.txt"]
    assert set(plots.document_verdicts(old)) == {"", "untested"}


def test_topic_chart_draws_tested_share_the_configs_cut_and_gap_colours_most_urgent_on_top(topics):
    gaps = GapConfig(tested_share_threshold=0.45)
    fig = plots.topic_verdict_bar(topics, gaps)
    data = fig.to_dict()
    bar = data["data"][0]
    assert bar["orientation"] == "h"
    expected = plots.topics_by_urgency(topics, gaps)
    names = dict(zip(topics["cluster"], ["river · delta", "violin · bow", "comet · orbit", "&lt;b&gt;tea&lt;/b&gt; · leaf",
                                         "koala · gum", "empty"]))
    assert list(bar["y"]) == [names[c] for c in expected["cluster"]]
    # The empty topic's bar is a sliver (MIN_BAR), so it shows its colour; its label still says 0%.
    assert values(bar["x"]) == pytest.approx([0.1, 0.4, 0.6, 0.6, 0.8, plots.coverage.MIN_BAR], abs=1e-12)
    # Each bar says its share at its end, in whole percent, so the empty topic reads "0%", not a blank row.
    assert list(bar["text"]) == ["10%", "40%", "60%", "60%", "80%", "0%"]
    assert bar["texttemplate"] == "%{text}" and bar["textposition"] == "outside" and bar["cliponaxis"] is False
    assert data["layout"]["xaxis"]["range"][1] >= 1.1  # room for the label of a full bar
    assert bar["marker"]["color"] == [style.GAP_COLOUR] * 2 + [style.OK_COLOUR] * 4
    yaxis = data["layout"]["yaxis"]
    assert yaxis["range"][0] > yaxis["range"][1]  # reversed: the first (most urgent) row on top
    (line,) = data["layout"]["shapes"]
    assert line["x0"] == line["x1"] == pytest.approx(gaps.tested_share_threshold, abs=1e-12)
    assert data["layout"]["annotations"][0]["text"] == "gap below 45%"
    assert data["layout"]["xaxis"]["tickformat"] == ".0%"
    # The hover gives the passages tested of the topic's total.
    assert "%{customdata[0]} of %{customdata[1]} passages tested" in bar["hovertemplate"]
    assert [row[:2] for row in values(bar["customdata"])][:2] == [["1", "10"], ["4", "10"]]


def test_topic_chart_under_the_coverage_rule_draws_coverage_and_its_cut(topics):
    gaps = GapConfig(rule="coverage", gap_threshold=0.55)
    data = plots.topic_verdict_bar(topics.drop(columns=["is_gap"]), gaps).to_dict()
    bar = data["data"][0]
    assert values(bar["x"])[:2] == pytest.approx([0.2, 0.5], abs=1e-12)  # the two gaps, coverage below 0.55
    assert bar["marker"]["color"][:2] == [style.GAP_COLOUR] * 2 and style.GAP_COLOUR not in bar["marker"]["color"][2:]
    assert data["layout"]["shapes"][0]["x0"] == pytest.approx(0.55, abs=1e-12)
    assert data["layout"]["annotations"][0]["text"] == "gap below 0.55"
    assert list(bar["text"])[:2] == ["0.20", "0.50"]  # coverage is a score, not a share


def test_topic_chart_shortens_long_topic_names_on_the_axis(topics):
    long_name = "james watt · greenock · birmingham engines"
    axis = plots.topic_verdict_bar(topics.assign(label=[long_name, *topics["label"][1:]])).to_dict()["layout"]["yaxis"]
    watt = axis["tickvals"].index(long_name)
    assert axis["ticktext"][watt] == style.shorten_label(long_name, plots.LEGEND_MAX_CHARS)
    assert all(len(html.unescape(text)) <= plots.LEGEND_MAX_CHARS for text in axis["ticktext"])


def test_document_chart_colours_each_verdict_and_draws_the_verdicts_cut():
    documents = pd.DataFrame({
        "document": ["ok.txt", "<i>none</i>.md", "few.txt"], "n_chunks": [4, 3, 10], "n_tested": [4, 0, 1],
        "tested_share": [1.0, 0.0, 0.1], "is_untested": [False, True, False], "is_undertested": [False, False, True],
        "n_questions": [5, 0, 1],
    })
    data = plots.document_verdict_bar(documents).to_dict()
    bar = data["data"][0]
    assert list(bar["y"]) == ["&lt;i&gt;none&lt;/i&gt;.md", "few.txt", "ok.txt"]
    assert bar["marker"]["color"] == [style.UNTESTED_COLOUR, style.UNDERTESTED_COLOUR, style.OK_COLOUR]
    assert is_warm(style.UNDERTESTED_COLOUR) and style.UNDERTESTED_COLOUR != style.UNTESTED_COLOUR
    cut = verdicts.UNDERTESTED_SHARE
    assert plots.document_cut() == cut
    assert data["layout"]["shapes"][0]["x0"] == pytest.approx(cut, abs=1e-12)
    assert data["layout"]["annotations"][0]["text"] == f"under-tested below {cut:.0%}"
    rows = values(bar["customdata"])
    assert rows[1][:4] == ["1", "10", "1 question targets it", "under-tested"]
    assert "%{customdata[0]} of %{customdata[1]} passages tested" in bar["hovertemplate"]
    # Without the under-tested column the line marks the untested cut, and a given cut is drawn as given.
    old = documents.drop(columns=["is_undertested", "n_questions"])
    data = plots.document_verdict_bar(old, cut=0.25).to_dict()
    assert data["layout"]["shapes"][0]["x0"] == pytest.approx(0.25, abs=1e-12)
    assert data["layout"]["annotations"][0]["text"] == "untested below 25%"
    assert data["data"][0]["marker"]["color"] == [style.UNTESTED_COLOUR, style.OK_COLOUR, style.OK_COLOUR]
