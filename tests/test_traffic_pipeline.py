"""Production traffic end to end with the real local model: three of the bundled example's articles,
test questions about two of them, and a query log that mostly asks about the third."""

import csv

import pandas as pd
import pytest

from coverage_core import embedding_steps
from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.runner import run_traffic_check
from coverage_core.checks.traffic_answers import strip_masks
from coverage_core.config import AnalysisConfig
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.session import analyze
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"
ARTICLES = ("Koala", "Octopus", "Flute")


@pytest.fixture(scope="module")
def analysis_and_embedder(module_cache_dir):
    documents = read_documents([EXAMPLE / "docs" / f"{name}.txt" for name in ARTICLES]).documents
    with open(EXAMPLE / "questions.csv", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["article"] in ("Octopus", "Flute")]
    questions = read_questions(pd.DataFrame(rows).to_csv(index=False).encode(), name="questions.csv")
    embedder, cache = make_embedder("local"), EmbeddingCache(module_cache_dir)
    analysis = analyze(AnalysisConfig(), documents, questions, embedder=embedder, cache=cache)
    return analysis, embedder, cache, rows


@pytest.mark.slow
def test_traffic_against_the_example(analysis_and_embedder):
    analysis, embedder, cache, rows = analysis_and_embedder
    octopus = [row["question"] for row in rows if row["article"] == "Octopus"][:5]
    koala = ["What do koalas eat?", "Where do koalas live in the wild?", "How many hours a day does a koala sleep?",
             "Are koalas bears?", "What eats koalas? write to me at ann@example.org"]
    frame = pd.DataFrame({
        "query": octopus + [q.upper() for q in octopus[:2]] + koala,
        "count": [3] * len(octopus) + [1, 1] + [40, 30, 20, 10, 5],
    })
    log = read_traffic(frame.to_csv(index=False).encode(), "traffic.csv")
    assert log.n_distinct == len(octopus) + len(koala)  # the upper-case repeats merged
    assert log.n_queries == 3 * len(octopus) + 2 + 105
    result = run_traffic_check(analysis, log, embedder, cache)

    queries = result.queries.set_index("text")
    assert queries.loc[octopus, "is_tested"].all()
    assert not queries.loc[[q for q in log.queries if "koala" in q.lower()], "is_tested"].any()
    assert queries.loc["What do koalas eat?", "is_answerable"]
    assert result.tested_share_weighted == pytest.approx((3 * len(octopus) + 2) / log.n_queries)
    # Most asked, least tested: the koala topic leads, named after koalas.
    top = result.topics.iloc[0]
    assert "koala" in top["label"].lower() and top["tested_share"] == 0.0
    assert set(top["examples"]) <= set(koala) and top["volume"] >= 30
    # Untested real queries become suggestions, most asked first, with the passage that answers them.
    first = result.suggestions[0]
    assert first.text == top["examples"][0] and (first.origin, first.document) == ("traffic", "Koala.txt")
    # Nothing personal is shown or exported.
    assert "ann@example.org" not in str(result.to_dict()) and "[email]" in " ".join(log.queries)
    # Embedded once: a second look takes every query from the cache.
    again = embedding_steps.embed_stage([strip_masks(q) for q in log.queries], embedder, cache, "traffic queries", None)
    assert again.n_embedded == 0


@pytest.mark.slow
def test_cli_traffic_report_junit_and_headline(analysis_and_embedder, tmp_path, capsys):
    """`analyze --traffic`: the report's traffic section, one JUnit case per traffic topic, the headline."""
    import json
    import xml.etree.ElementTree as ET

    from coverage_core.cli import main

    _, _, _, rows = analysis_and_embedder
    questions = tmp_path / "questions.csv"
    pd.DataFrame(rows).to_csv(questions, index=False)
    log = tmp_path / "traffic.jsonl"
    lines = [{"query": "What do koalas eat?", "count": 50, "timestamp": "2026-11-02"},
             {"query": "Where do koalas live in the wild?", "count": 20, "timestamp": "2026-11-09"},
             {"query": rows[0]["question"], "count": 10, "timestamp": "2026-11-09"},
             {"query": "call me on +44 20 7946 0958 about koala fur", "timestamp": "2026-11-09"}]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    out, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    docs = [str(EXAMPLE / "docs" / f"{name}.txt") for name in ARTICLES]
    code = main(["analyze", "--docs", *docs, "--questions", str(questions), "--traffic", str(log),
                 "--out", str(out), "--junit", str(junit), "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Production traffic:" in printed and "of 81 queries (4 distinct) are tested" in printed
    report = json.loads(out.read_text())
    section = report["traffic"]
    assert (section["n_queries"], section["n_distinct"]) == (81, 4)
    assert section["tested_share_weighted"] == pytest.approx(10 / 81, abs=1e-6)
    assert [w["week"] for w in section["weekly"]] == ["2026-11-02", "2026-11-09"]
    assert report["config"]["inputs"]["traffic_file"] == "traffic.jsonl"
    assert "7946" not in out.read_text() and "[phone]" in out.read_text()
    cases = ET.parse(junit).getroot().findall("./testsuite[@name='coverage.traffic']/testcase")
    assert len(cases) == len(section["topics"]) >= 1
    failed = [case.get("name") for case in cases if case.find("failure") is not None]
    assert any("koala" in name for name in failed)


@pytest.mark.slow
def test_queries_the_documents_cannot_answer_are_one_group(analysis_and_embedder):
    """Account and support queries in a koala log: counted apart, never in a koala topic, never a topic word."""
    from coverage_core.checks.traffic import UNANSWERED_TOPIC
    from coverage_core.checks.traffic_answers import NO_ANSWER

    analysis, embedder, cache, _ = analysis_and_embedder
    koala = ["What do koalas eat?", "Where do koalas live in the wild?", "How long do koalas sleep each day?",
             "Are koalas bears? <EMAIL>", "What eats koalas? [REDACTED]", "Do {name}'s koalas drink water?"]
    support = ["How do I reset my password?", "How do I cancel my subscription?", "Where can I download my invoice?",
               "Hi <NAME>, my card XXXX was charged twice"]
    frame = pd.DataFrame({"query": koala + support, "count": [30, 20, 10, 10, 5, 5] + [12, 8, 4, 1]})
    log = read_traffic(frame.to_csv(index=False).encode(), "traffic.csv")
    result = run_traffic_check(analysis, log, embedder, cache)

    queries = result.queries.set_index("text")
    assert queries.loc[koala, "is_answerable"].all()
    assert not queries.loc[support, "is_answerable"].any()
    assert (queries.loc[support, "topic"] == UNANSWERED_TOPIC).all()
    group = result.unanswered
    assert (group.volume, group.n_distinct, group.is_unmet) == (25, 4, True)
    assert group.share == pytest.approx(25 / 105)
    assert result.unanswered_share_weighted == pytest.approx(1 - result.answerable_share_weighted)
    assert list(group.examples) == support[:3]
    assert f"25 queries have {NO_ANSWER} (24%)" in result.headline()
    section = result.to_dict()
    assert section["unanswered"]["volume"] == 25 and section["unanswered_share_weighted"] == pytest.approx(25 / 105)
    # The koala topics hold koala queries only, and no placeholder names them.
    assert int(result.topics["volume"].sum()) == 80
    words = " ".join(result.topics["label"]).lower()
    assert "koala" in words and not any(mask in words for mask in ("email", "redacted", "name", "xxxx"))
    # Suggestions: koala queries in the knowledge-base topic of the Koala passage answering them; the support
    # queries in none, marked as having no answer in the documents.
    labels = analysis.clustering.labels
    for suggestion in result.suggestions:
        if suggestion.text in support:
            assert (suggestion.cluster, suggestion.note, suggestion.document) == (-1, NO_ANSWER, "")
        else:
            assert suggestion.note == "" and suggestion.document == "Koala.txt"
            assert suggestion.cluster == labels[suggestion.chunk]
    assert {s.text for s in result.suggestions} >= {"What do koalas eat?", "How do I reset my password?"}
