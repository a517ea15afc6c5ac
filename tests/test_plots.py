"""Figure builders on synthetic data: what each figure holds, read from fig.to_dict()."""

from __future__ import annotations

import base64

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from coverage_core import plots


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
    assert bar["marker"]["color"] == [plots.GAP_COLOUR, plots.GAP_COLOUR, plots.COVERED_COLOUR, plots.COVERED_COLOUR]
    shapes = data["layout"]["shapes"]
    assert shapes[0]["y0"] == shapes[0]["y1"] == 0.7
    assert "gap threshold 0.70" in data["layout"]["annotations"][0]["text"]


def test_cluster_bar_without_is_gap_uses_the_threshold(clusters):
    fig = plots.cluster_coverage_bar(clusters.drop(columns=["is_gap"]), gap_threshold=0.7)
    colours = fig.to_dict()["data"][0]["marker"]["color"]
    assert colours.count(plots.GAP_COLOUR) == 2


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
    assert bar["marker"]["color"] == [plots.LOW_COLOUR, plots.COVERED_COLOUR]
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
    assert question["marker"]["symbol"] == "diamond" and outlier["marker"]["symbol"] == "x"
    assert question["marker"]["size"] > chunk_traces[0]["marker"]["size"]
    # Hover: shortened text, its file and its cluster; user text escaped.
    hover = values(chunk_traces[0]["customdata"])
    assert hover[0][0].endswith("…") and len(hover[0][0]) <= plots.HOVER_CHARS
    assert hover[0][1] == "a.txt"
    assert "cluster 0" in chunk_traces[0]["hovertemplate"]
    outlier_hover = values(outlier["customdata"])[0]
    assert outlier_hover[0] == "&lt;img src=x onerror=alert(1)&gt;"
    assert outlier_hover[1:] == ["b.txt", "cluster 1"]
    annotations = [a["text"] for a in data["layout"]["annotations"]]
    assert any("Basic: 0.610" in a and "Balanced: 0.550" in a for a in annotations)
    assert any("Map shows all 4 chunks." in a for a in annotations)


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
    assert names == ["rank agreement with the full size (Spearman)", "AUROC (answerable vs not)", "point-biserial r"]
    spearman, auroc, r = data["data"]
    assert spearman["x"] == ["32", "128", "384"]
    assert values(spearman["y"]) == pytest.approx([0.78, 0.93, 1.0])
    assert values(auroc["y"]) == pytest.approx([0.94, 0.98, 0.99])
    assert values(r["y"]) == pytest.approx([0.48, 0.61, 0.66])
    assert values(spearman["customdata"]) == ["truncated", "truncated", "full"]
    assert data["layout"]["xaxis"]["type"] == "category"
    assert any("MiniLM &lt;was&gt; not trained" in a["text"] for a in data["layout"]["annotations"])
    unlabelled = plots.dimension_sweep_chart(frame[["d", "method", "spearman"]]).to_dict()
    assert [t["name"] for t in unlabelled["data"]] == ["rank agreement with the full size (Spearman)"]
    assert not unlabelled["layout"].get("annotations")


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
    assert hover[0][0].endswith("…") and len(hover[0][0]) <= plots.HOVER_CHARS
    assert hover[2] == ["&lt;i&gt;x&lt;/i&gt;", "&lt;c&gt;.txt"]
    assert values(answerable["x"]) == [0.5, 1.5] and values(unanswerable["x"]) == [2.5]
    assert values(answerable["customdata"])[1] == ["&lt;script&gt;alert(1)&lt;/script&gt;", "0.600"]
    assert values(unlabelled["customdata"])[0][1] == "n/a"
    symbols = {t["name"]: t["marker"]["symbol"] for t in data["data"][1:]}
    assert len(set(symbols.values())) == 3 and chunk_trace["marker"]["size"] < answerable["marker"]["size"]
    assert any("&lt;sampled&gt;" in a["text"] for a in data["layout"]["annotations"])


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
