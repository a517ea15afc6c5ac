"""The standalone HTML report: offline (plotly.js inline once), charts, every section, escaped text."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from coverage_core.chunking import ChunkingConfig
from coverage_core.html_report import build_html_report
from coverage_core.pipeline import AnalysisConfig, Corpus, EmbeddedTexts, cluster_chunks, find_gaps, measure
from coverage_core.projection import project_2d
from coverage_core.types import Chunk, Document, Question, QuestionSet

EVIL = "<script>alert('owned')</script>"


def _question_set(texts):
    frame = pd.DataFrame({"question": texts})
    return QuestionSet(frame, "question", [Question(i, t) for i, t in enumerate(texts)])


@pytest.fixture(scope="module")
def analysis():
    """A synthetic analysis (no model): three topics, questions on two of them."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 16)).astype(np.float32)
    topic = np.repeat([0, 1, 2], 20)
    chunk_vectors = centres[topic] + 0.3 * rng.standard_normal((60, 16)).astype(np.float32)
    chunk_vectors /= np.linalg.norm(chunk_vectors, axis=1, keepdims=True)
    names = ["alpha.txt", "beta.txt", "<b>gamma</b>.md"]
    words = ["river delta water flow.", "violin string bow music.", "comet orbit ice tail."]
    chunks = [Chunk(names[t], f"{words[t]} Passage {i} about {words[t]}", 0, 10) for i, t in enumerate(topic)]
    corpus = Corpus([Document(n, "") for n in names], chunks, EmbeddedTexts(chunk_vectors, 0, 60, 0))
    question_vectors = centres[[0, 0, 1, 1, 0, 1]] + 0.3 * rng.standard_normal((6, 16)).astype(np.float32)
    question_vectors = np.vstack([question_vectors, -centres[2:3] + rng.standard_normal((1, 16)).astype(np.float32)])
    question_vectors /= np.linalg.norm(question_vectors, axis=1, keepdims=True)
    texts = ["Where does the river flow?", "How deep is the delta?", "How is a violin tuned?",
             "What is a bow made of?", "=HYPERLINK(\"x\")", "Who plays violin?", EVIL]
    questions = _question_set(texts)
    embedded = EmbeddedTexts(question_vectors.astype(np.float32), 0, 7, 0)
    config = AnalysisConfig(chunking=ChunkingConfig(), n_clusters=3)
    clustering = cluster_chunks(corpus, 3, 0)
    return find_gaps(measure(config, corpus, questions, embedded, clustering))


def test_report_is_one_offline_document_with_charts(analysis):
    report = build_html_report(analysis, inputs={"documents": ["alpha.txt"], "questions": "q.csv"})
    assert report.startswith("<!DOCTYPE html>") and report.rstrip().endswith("</html>")
    # plotly.js is inline exactly once, and nothing is loaded from a network.
    assert report.count("plotly.js v") == 1 or report.count("* plotly.js") == 1
    assert len(report) > 3_000_000
    assert not re.search(r"<script[^>]+src=", report)
    assert not re.search(r"<link[^>]+href=[\"']https?:", report)
    # (plotly.js itself names a CDN only as the default map-topology URL of geo charts, unused here.)
    charts = report.count("Plotly.newPlot(")
    assert charts == 4  # clusters, documents, ranked and polar fitness


def test_report_has_every_section_and_the_numbers(analysis):
    report = build_html_report(analysis)
    for heading in ("Coverage", "Clusters", "Gaps", "Documents", "Off-topic questions",
                    "Near-duplicate questions", "Knowledge-base fitness"):
        assert f"<h2>{heading}</h2>" in report
    assert f"{analysis.metrics['basic']:.3f}" in report and f"{analysis.metrics['balanced']:.3f}" in report
    assert "equals basic by construction" in report
    assert "relative, not absolute" in report
    if analysis.gaps and analysis.gaps[0].suggestions:
        assert analysis.gaps[0].suggestions[0].text.split("(")[0].strip()[:20] in report.replace("&#x27;", "'").replace("&quot;", '"')


def test_user_text_is_escaped(analysis):
    report = build_html_report(analysis, inputs={"questions": EVIL})
    assert EVIL not in report
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in report
    assert "<b>gamma</b>" not in report and "&lt;b&gt;gamma&lt;/b&gt;.md" in report
    # Inside chart JSON, Plotly escapes < and / so no text can close the script tag.
    assert "</script><script>alert" not in report


def test_map_and_before_after_sections(analysis):
    from coverage_core.pipeline import add_questions

    projection = project_2d(analysis.corpus.vectors, analysis.question_vectors, analysis.clustering.labels, method="pca")
    improved_questions = add_questions(analysis.questions, ["Where do comets orbit?"])
    vectors = np.vstack([analysis.question_vectors, analysis.corpus.vectors[50:51]])
    improved = measure(
        analysis.config, analysis.corpus, improved_questions,
        EmbeddedTexts(vectors, 0, len(vectors), 0), analysis.clustering,
    )
    report = build_html_report(analysis, projection=projection, improved=improved, fitness_threshold=0.3)
    assert "<h2>Map of chunks and questions</h2>" in report and "Map shows all 60 chunks." in report
    assert "<h2>Improved test set</h2>" in report and "1 question(s) added" in report
    change = improved.metrics["basic"] - analysis.metrics["basic"]
    assert f"{change:+.3f}" in report
    assert report.count("Plotly.newPlot(") == 6
    assert "Below 0.30 the knowledge base may not answer" in report
