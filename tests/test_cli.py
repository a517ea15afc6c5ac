"""End-to-end: the real CLI, the real bundled model, the bundled wiki-qa slice.

The slice's ground truth (see examples/wiki-qa/README.md): Koala.txt and
Lobster.txt have no questions; Zebra and Berlin questions have no article.
"""

import csv
import json
import os
import subprocess
import sys

import pytest

from coverage_core.cli import main
from coverage_core.suggest.gaps import GapConfig
from tests.helpers import PDFS, PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"
UNTESTED = {"Koala.txt", "Lobster.txt"}


def _off_topic_rows():
    with open(EXAMPLE / "questions.csv", encoding="utf-8") as handle:
        return {i for i, row in enumerate(csv.DictReader(handle)) if row["article"] in {"Zebra", "Berlin"}}


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """One cold CLI run and one fully cached re-run, as separate processes."""
    work = tmp_path_factory.mktemp("cli")
    env = dict(os.environ, COVERAGE_CORE_CACHE_DIR=str(work / "cache"), HF_HUB_OFFLINE="1")
    command = [
        sys.executable, "-m", "coverage_core", "analyze",
        "--docs", str(EXAMPLE / "docs"),
        "--questions", str(EXAMPLE / "questions.csv"),
        "--quiet",
    ]
    runs = []
    for name in ("cold", "cached"):
        out = work / f"{name}.json"
        result = subprocess.run(command + ["--out", str(out)], env=env, capture_output=True, text=True, cwd=PROJECT)
        runs.append((result, json.loads(out.read_text()) if out.exists() else None))
    return runs


@pytest.fixture(scope="module")
def example_cache(example_run):
    """The embedding cache the module's CLI runs filled (the example, fully embedded)."""
    (result, _), _ = example_run
    return result.args[result.args.index("--out") + 1].rsplit("/", 1)[0] + "/cache"


@pytest.mark.slow
def test_cold_run_writes_a_complete_report(example_run):
    (result, report), _ = example_run
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert report["schema_version"] == 6
    scores = {"tested_share", "basic", "weighted", "balanced", "multi_threshold", "multi_n"}
    assert set(report["metrics"]) == scores | {"testable_share_max"}
    for name in scores:
        assert 0.0 < report["metrics"][name] < 1.0
    # 185 questions at top 5 can reach every passage of the example: no ceiling below the whole.
    assert report["metrics"]["testable_share_max"] == 1.0
    # The method's weighted coverage is basic coverage by construction.
    assert report["metrics"]["weighted"] == pytest.approx(report["metrics"]["basic"], abs=1e-6)
    assert report["summary"]["n_documents"] == 10
    assert report["summary"]["n_questions"] == 185
    assert sum(c["size"] for c in report["clusters"]) == report["summary"]["n_chunks"]
    assert sum(c["share"] for c in report["clusters"]) == pytest.approx(1.0, abs=1e-3)
    config = report["config"]
    assert config["chunking"] == {"chunk_size": 1000, "chunk_overlap": 200}
    assert config["embedding"]["provider"] == "local"
    # The summary table reaches stdout.
    assert "basic" in result.stdout and "cluster" in result.stdout


@pytest.mark.slow
def test_untested_articles_come_out_least_covered(example_run):
    (_, report), _ = example_run
    by_coverage = sorted(report["documents"], key=lambda d: d["coverage"])
    assert {d["name"] for d in by_coverage[:2]} == UNTESTED


@pytest.mark.slow
def test_decisions_on_the_example_are_absolute(example_run):
    """τ is calibrated without labels; the untested articles are is_untested, a minority of clusters are gaps."""
    (result, report), _ = example_run
    calibration = report["calibration"]
    assert calibration["method"] == "pseudo-queries" and calibration["n_probes"] > 100
    assert 0.3 < calibration["support_threshold"] < 0.7
    assert calibration["labelled_threshold"] is not None  # the example has an answerable column
    assert {d["name"] for d in report["documents"] if d["is_untested"]} == UNTESTED
    n_gaps = sum(c["is_gap"] for c in report["clusters"])
    assert 0 < n_gaps < len(report["clusters"]) / 2
    tested = sum(c["n_tested"] for c in report["clusters"])
    assert report["metrics"]["tested_share"] == pytest.approx(tested / report["summary"]["n_chunks"], abs=1e-6)
    first = result.stdout.splitlines()[0]
    assert f"({tested} of {report['summary']['n_chunks']} passages); 2 documents untested, 0 under-tested; " \
           f"{report['summary']['n_outliers']} questions off-topic. A passage counts as tested when a question " \
           f"retrieves it among its top {report['config']['tested_k']} passages" in first
    assert "% of the knowledge base is tested" in first


@pytest.mark.slow
def test_gaps_point_at_the_untested_articles(example_run):
    (_, report), _ = example_run
    gaps = sorted((c for c in report["clusters"] if c["is_gap"]), key=lambda c: c["gap_rank"])
    assert gaps, "the example has untested articles, so there must be gaps"
    top = gaps[0]
    assert 3 <= len(top["themes"]) <= 5
    assert top["suggested_questions"], "each gap gets suggested questions"
    assert {s["document"] for s in top["suggested_questions"]} & UNTESTED
    existing = {q["text"].lower() for q in report["questions"]}
    assert not {s["text"].lower() for s in top["suggested_questions"]} & existing
    # The top-level gaps list the same gaps in the same order, each with its least-covered passages
    # and the questions the clusters offer among its kept ones.
    assert [(g["rank"], g["cluster"]) for g in report["gaps"]] == [(c["gap_rank"], c["id"]) for c in gaps]
    first = report["gaps"][0]
    assert first["least_covered_passages"] and {p["document"] for p in first["least_covered_passages"]} & UNTESTED
    kept = [s["question"] for s in first["suggestions"] if s["kept"]]
    assert kept[:len(top["suggested_questions"])] == [" ".join(s["text"].split()) for s in top["suggested_questions"]
                                                      if s["text"].strip()]
    assert len(kept) <= GapConfig().n_suggestions  # the default, as --suggest is not given


@pytest.mark.slow
def test_off_topic_questions_are_flagged(example_run):
    (_, report), _ = example_run
    off_topic = _off_topic_rows()
    flagged = {q["row"] for q in report["questions"] if q["is_outlier"]}
    on_topic_flagged = flagged - off_topic
    assert len(flagged & off_topic) >= 0.75 * len(off_topic)
    assert len(on_topic_flagged) <= 0.05 * (185 - len(off_topic))
    for question in report["questions"]:
        assert {"row", "text", "max_similarity", "nearest_document", "cluster", "outlier_score", "is_outlier", "duplicate_of"} <= set(question)


@pytest.mark.slow
def test_closed_questions_of_a_document_subject_are_on_topic(example_run):
    """Yes-or-no questions about a document's subject that name something no passage mentions are answered
    by that document (no); one that names no document's subject is about what the documents lack."""
    (_, report), _ = example_run
    by_text = {q["text"]: q for q in report["questions"]}
    for text in ("Was Alessandro Volta an Egyptian?", "Is Malay the official language of Iraq?"):
        assert not by_text[text]["is_outlier"], by_text[text]["offtopic_detail"]
    berlin = by_text["Is Berlin the capital city of Germany?"]
    assert berlin["is_outlier"] and berlin["offtopic_reason"] == "absent_subject"


@pytest.mark.slow
def test_cached_rerun_embeds_nothing_and_agrees(example_run):
    (_, cold), (result, cached) = example_run
    assert result.returncode == 0, result.stderr
    assert cold["summary"]["embedded"] > 0
    assert cached["summary"]["embedded"] == 0
    assert cached["metrics"] == cold["metrics"]


@pytest.mark.slow
def test_fail_below_exits_1(tmp_path, cache_dir, example_run, capsys):
    # Reuses the module run's cache only through content keys: copy its dir.
    args = [
        "analyze", "--docs", str(EXAMPLE / "docs" / "Drum.txt"), str(EXAMPLE / "docs" / "Flute.txt"),
        "--questions", str(EXAMPLE / "questions.csv"), "--out", str(tmp_path / "r.json"),
        "--fail-below", "0.99", "--metric", "balanced", "--quiet", "--clusters", "3",
    ]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert "balanced coverage" in captured.err and "below the required 0.990" in captured.err


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--docs", "missing-folder"], "missing-folder does not exist"),
        (["--docs", str(PDFS / "imagemagick-images.pdf")], "imagemagick-images.pdf"),
        (["--questions", str(EXAMPLE / "docs" / "Drum.txt")], "column"),
    ],
)
def test_unusable_input_exits_2_with_one_sentence(tmp_path, cache_dir, capsys, args, expected):
    base = {"--docs": [str(EXAMPLE / "docs" / "Drum.txt")], "--questions": [str(EXAMPLE / "questions.csv")]}
    base[args[0]] = args[1:]
    argv = ["analyze", "--out", str(tmp_path / "r.json"), "--quiet"]
    for flag, values in base.items():
        argv += [flag, *values]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) >= 1
    assert err.strip().splitlines()[-1].startswith("coverage_core: ")
    assert not (tmp_path / "r.json").exists()


def test_bad_option_exits_2_without_usage_dump(capsys):
    assert main(["analyze", "--docs", "x", "--questions", "y", "--out", "z", "--metric", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nonsense" in err


@pytest.mark.slow
def test_junit_and_diff_on_the_example(tmp_path, tmp_path_factory, example_run, capsys):
    """analyze --junit (gate failing) on the example, from the module run's cache; then diff."""
    (_, cold), _ = example_run
    work = next(d for d in tmp_path_factory.getbasetemp().glob("cli*") if (d / "cold.json").exists())
    junit, out = tmp_path / "coverage.xml", tmp_path / "r.json"
    args = [
        "analyze", "--docs", str(EXAMPLE / "docs"), "--questions", str(EXAMPLE / "questions.csv"),
        "--out", str(out), "--junit", str(junit), "--cache-dir", str(work / "cache"),
        "--fail-below", "0.99", "--metric", "tested_share", "--quiet",
    ]
    assert main(args) == 1  # the gate fails, and the JUnit file is still written
    assert f"JUnit XML written to {junit}" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["summary"]["embedded"] == 0

    import xml.etree.ElementTree as ET

    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1 + 1 + len(report["clusters"]) + 10  # support level, gate, clusters, documents
    failed = {case.get("name") for case in cases if case.find("failure") is not None}
    gaps = {f"cluster {c['id']}: {c['label']}" for c in report["clusters"] if c["is_gap"]}  # named by topic
    untested = {d["name"] for d in report["documents"] if d["is_untested"]}
    assert failed == {"tested_share"} | gaps | untested  # the report's own decisions, no coverage threshold
    assert gaps and untested == UNTESTED
    assert int(root.get("failures")) == len(failed)

    assert main(["diff", str(work / "cold.json"), str(out), "--fail-on-drop", "0"]) == 0
    text = capsys.readouterr().out
    assert "No questions added or removed." in text and "+0.000" in text and "Koala.txt" in text


@pytest.mark.slow
def test_report_carries_retrieval_and_answerability_from_the_example_columns(example_run):
    (result, report), _ = example_run
    # The example names each question's article file in "source" (empty for
    # Zebra/Berlin) and says in "answerable" whether the corpus has its article.
    retrieval = report["retrieval"]
    assert retrieval["relevant_column"] == "source" and retrieval["k"] == 5
    assert retrieval["n_unlabelled"] == 14 and retrieval["n_labelled"] == 171
    assert retrieval["hit_at_k"] > 0.9 and retrieval["mrr"] > 0.8
    assert retrieval["precision_at_k"] <= retrieval["recall_at_k"] + 1e-9  # one relevant file per question
    assert len(retrieval["questions"]) == 171
    first = retrieval["questions"][0]
    assert first["relevant"] == ["Alessandro_Volta.txt"] and len(first["retrieved"]) == 5
    answerability = report["answerability"]
    assert answerability["label_column"] == "answerable" and answerability["n_labelled"] == 185
    assert answerability["auroc"] > 0.9 and answerability["point_biserial_r"] > 0.3
    assert answerability["p_value"] < 1e-6
    off_topic = _off_topic_rows()
    labels = {q["row"]: q["label"] for q in report["questions"]}
    assert {row for row, label in labels.items() if label == 0} == off_topic
    assert "Retrieval at k=5" in result.stdout and "Answerability labels" in result.stdout


def test_named_columns_that_do_not_exist_fail_before_embedding(tmp_path, capsys):
    args = ["analyze", "--docs", str(EXAMPLE / "docs"), "--questions", str(EXAMPLE / "questions.csv"),
            "--out", str(tmp_path / "r.json"), "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    assert main(args + ["--relevant-column", "gold"]) == 2
    error = capsys.readouterr().err
    assert "The relevant-source column 'gold' is not in the question file" in error
    assert "'source'" in error and "Traceback" not in error
    assert main(args + ["--label-column", "is_ok"]) == 2
    assert "'is_ok' is not in the question file" in capsys.readouterr().err
    assert main(args + ["--subquestions", "2"]) == 2  # no LLM configured
    assert "needs an LLM" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "r.json").exists()


@pytest.mark.slow
def test_subquestions_through_a_local_openai_compatible_server(tmp_path, example_cache, fake_api, capsys):
    from tests.fakes import chat_reply

    reply = json.dumps({"sub_questions": [
        {"text": "Who was Alessandro Volta?", "type": "core"},
        {"text": "What is the price of tea in Lisbon?", "type": "follow-up"},
    ]})
    fake_api.handle("/v1/chat/completions", lambda body: chat_reply(reply))
    out = tmp_path / "r.json"
    code = main([
        "analyze", "--docs", str(EXAMPLE / "docs"), "--questions", str(EXAMPLE / "questions.csv"),
        "--out", str(out), "--cache-dir", example_cache, "--quiet", "--k", "3",
        "--subquestions", "2", "--llm-model", "fake-chat", "--llm-base-url", f"{fake_api.url}/v1",
    ])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["retrieval"]["k"] == 3
    section = report["subquestions"]
    assert [q["row"] for q in section["questions"]] == [0, 1]
    sent = [r.body["messages"][-1]["content"] for r in fake_api.requests_to("/v1/chat/completions")]
    assert any("Was Alessandro Volta a professor of chemistry?" in m for m in sent)
    subs = section["questions"][0]["sub_questions"]
    assert [s["type"] for s in subs] == ["core", "follow-up"]
    # The corpus is about Volta, not tea prices.
    assert subs[0]["best_similarity"] > subs[1]["best_similarity"]
    assert subs[0]["supported"] and not subs[1]["supported"]


@pytest.mark.slow
def test_compare_chunking_adds_a_row_per_configuration(tmp_path, example_cache, capsys):
    out = tmp_path / "r.json"
    base = ["analyze", "--docs", str(EXAMPLE / "docs"), "--questions", str(EXAMPLE / "questions.csv"),
            "--out", str(out), "--cache-dir", example_cache, "--quiet"]
    assert main(base + ["--compare-chunking", "1000/200,1000/0"]) == 0
    report = json.loads(out.read_text())
    rows = report["chunking_comparison"]
    assert [(r["chunk_size"], r["chunk_overlap"]) for r in rows] == [(1000, 200), (1000, 0)]
    same = rows[0]  # the analysed configuration: everything cached, the same figures as the report's
    assert same["newly_embedded"] == 0 and same["n_chunks"] == report["summary"]["n_chunks"]
    assert same["basic"] == pytest.approx(report["metrics"]["basic"], abs=1e-6)
    assert same["mrr"] == pytest.approx(report["retrieval"]["mrr"], abs=1e-6)
    assert 0 < rows[1]["newly_embedded"] < rows[1]["n_chunks"]  # chunks both chunkings share are cached
    assert "Chunking comparison" in capsys.readouterr().out
    assert main(base + ["--compare-chunking", "1000/abc"]) == 2
    assert "'1000/abc' is not a chunk configuration" in capsys.readouterr().err


def test_core_messages_name_the_flag_that_fixes_them_on_the_command_line(tmp_path, capsys):
    questions = tmp_path / "q.csv"
    questions.write_text("title,answer\nKoalas,Australia\n", encoding="utf-8")
    args = ["analyze", "--docs", str(EXAMPLE / "docs"), "--questions", str(questions),
            "--out", str(tmp_path / "r.json"), "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    assert main(args) == 2
    error = capsys.readouterr().err
    # The core says it in words (the dashboard shows the same sentence) ...
    assert "choose the question column" in error
    # ... and the command line adds the flag, once.
    assert error.count("--question-column") == 1 and "Traceback" not in error
