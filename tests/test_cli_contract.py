"""The CLI's contract for every option and every cache state.

Unusable flag values are refused before anything is read or embedded (exit
2, one sentence naming the flag as typed); failures mid-run end with one
sentence on a line of its own; --help shows every default, read from the
core. Most tests here never load the embedding model: the validation tests
make the readers fail if called, the others use a small hashing embedder.
"""

import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from coverage_core import cli
from coverage_core.checks.retrieval import DEFAULT_K
from coverage_core.cli import main
from coverage_core.config import MULTI_THRESHOLD_RANGE, SEED_RANGE, AnalysisConfig
from coverage_core.embeddings import local as local_embedder
from coverage_core.embeddings.cache import CACHE_FILE_NAME
from coverage_core.offtopic.screener import STRICTNESS_RANGE
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.suggest.gaps import COVERAGE_THRESHOLD_RANGE, GapConfig
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT, refuse_work

EXAMPLE = PROJECT / "examples" / "wiki-qa"
TWO_DOCS = [str(EXAMPLE / "docs" / "Drum.txt"), str(EXAMPLE / "docs" / "Flute.txt")]


# --------------------------------------------------------------------------
# every bad flag value: exit 2, the flag named, one line, nothing read
# --------------------------------------------------------------------------

BAD_ANALYZE_VALUES = [
    (["--strictness", "2"], "--strictness must be between 0 and 1 (got 2); 0 flags only extreme questions, 1 flags many."),
    (["--strictness", "-0.5"], "--strictness must be between 0 and 1 (got -0.5); 0 flags only extreme questions, 1 flags many."),
    (["--strictness", "nan"], "--strictness must be between 0 and 1 (got nan); 0 flags only extreme questions, 1 flags many."),
    (["--strictness", "inf"], "--strictness"),
    (["--seed", "-1"], f"--seed must be between 0 and {SEED_RANGE[1]} (got -1)."),
    (["--seed", str(2**32)], f"--seed must be between 0 and {SEED_RANGE[1]} (got {2**32})."),
    (["--fail-below", "nan"], "--fail-below must be greater than -1 and at most 1 (got nan)."),
    (["--fail-below", "inf"], "--fail-below"),
    (["--fail-below=-inf"], "--fail-below must be greater than -1 and at most 1 (got -inf)."),
    (["--fail-below", "1.5"], "--fail-below"),
    (["--chunk-size", "0"], "--chunk-size must be at least 1 (got 0); it counts characters."),
    (["--chunk-size", "-5"], "--chunk-size"),
    (["--chunk-size", "150"], "--chunk-overlap must be smaller than --chunk-size (got 200 >= 150); "
                              "lower --chunk-overlap or raise --chunk-size."),
    (["--chunk-overlap", "-1"], "--chunk-overlap must be at least 0 (got -1); it counts characters."),
    (["--chunk-overlap", "1000"], "--chunk-overlap must be smaller than --chunk-size"),
    (["--clusters", "0"], "--clusters must be at least 1 (got 0)."),
    (["--clusters", "-3"], "--clusters"),
    (["--gap-threshold", "5"], "--gap-threshold must be greater than -1 and at most 1 (got 5); it is a coverage score."),
    (["--gap-threshold", "-1"], "--gap-threshold"),
    (["--gap-threshold", "nan"], "--gap-threshold"),
    (["--gap-threshold", "inf"], "--gap-threshold"),
    (["--multi-threshold", "0"], "--multi-threshold must be greater than 0 and at most 2 (got 0); it is a cosine "
                                    "distance, sensible from 0.15 to 0.8."),
    (["--multi-threshold", "3"], "--multi-threshold"),
    (["--multi-threshold", "nan"], "--multi-threshold"),
    (["--multi-n", "0"], "--multi-n must be at least 1 (got 0)."),
    (["--dimensions", "64"], "--dimensions 64 cannot be used: the local model always returns its native size"),
    (["--dimensions", "-1"], "--dimensions must be at least 1 (got -1)."),
    (["--embedder", "openai", "--dimensions", "0"], "--dimensions must be at least 1 (got 0)."),
    (["--embedder", "openai", "--dimensions", "5000"], "--dimensions 5000 cannot be used"),
    (["--embedder", "voyage", "--dimensions", "100"], "--dimensions 100 cannot be used"),
    (["--suggest", "-1"], "--suggest must be at least 0 (got -1); 0 writes no suggestions."),
    (["--suggest", "1.5"], "argument --suggest: invalid int value: '1.5'"),
    (["--k", "0"], "--k must be at least 1 (got 0); it is the number of chunks retrieved per question."),
    (["--k", "-2"], "--k"),
    (["--subquestions", "0"], "--subquestions must be at least 1 (got 0)."),
    (["--subquestions", "2"], "--subquestions needs an LLM"),
    (["--compare-chunking", "1000/abc"], "--compare-chunking: '1000/abc' is not a chunk configuration"),
    (["--compare-chunking", "500/0,150/200"], "--compare-chunking 150/200: OVERLAP must be smaller than SIZE"),
    (["--compare-chunking", "0/0"], "--compare-chunking 0/0: SIZE must be at least 1 (got 0); it counts characters."),
    (["--compare-chunking", ",,"], "--compare-chunking: the chunking grid is empty"),
    # argparse's own refusals name the flag too
    (["--k", "nan"], "argument --k: invalid int value: 'nan'"),
    (["--seed", "1.5"], "argument --seed: invalid int value: '1.5'"),
    (["--strictness", "high"], "argument --strictness: invalid float value: 'high'"),
    # no prefix abbreviations: --strict is not --strictness
    (["--strict", "0.5"], "unrecognized arguments: --strict 0.5"),
    (["--chunk", "500"], "unrecognized arguments: --chunk 500"),
]


@pytest.fixture
def nothing_read(monkeypatch):
    """Fail the test if the CLI reads a document or question file."""
    refuse_work(monkeypatch, "an input file was read before the flags were checked", embedder=False)
    # Keys for the API providers (constructing an embedder sends nothing).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")


def _analyze_args(tmp_path, extra):
    return [
        "analyze", "--docs", *TWO_DOCS, "--questions", str(EXAMPLE / "questions.csv"),
        "--out", str(tmp_path / "r.json"), "--cache-dir", str(tmp_path / "cache"), "--quiet", *extra,
    ]


def _assert_one_sentence(err: str, expected: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("coverage_core: ")
    assert expected in lines[0]


@pytest.mark.parametrize("extra, expected", BAD_ANALYZE_VALUES, ids=[" ".join(a) for a, _ in BAD_ANALYZE_VALUES])
def test_bad_analyze_value_is_refused_before_anything_is_read(tmp_path, capsys, nothing_read, extra, expected):
    models_loaded = len(local_embedder._MODELS)
    assert main(_analyze_args(tmp_path, extra)) == 2
    _assert_one_sentence(capsys.readouterr().err, expected)
    assert not (tmp_path / "cache").exists()  # nothing embedded, not even a cache opened
    assert not (tmp_path / "r.json").exists()
    assert len(local_embedder._MODELS) == models_loaded  # no model loaded


@pytest.mark.parametrize("value, requirement", [
    ("nan", "a finite number of at least 0"), ("inf", "a finite number of at least 0"), ("-0.1", "at least 0"),
    ("-inf", "a finite number of at least 0"),
])
def test_bad_fail_on_drop_is_refused_before_reports_are_read(tmp_path, capsys, value, requirement):
    # The report files do not exist: the flag is checked first.
    assert main(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), f"--fail-on-drop={value}"]) == 2
    _assert_one_sentence(capsys.readouterr().err, f"--fail-on-drop must be {requirement} (got {value}).")


def test_the_cli_reads_limits_from_the_core():
    """The CLI's limits are the core's: a value the core accepts passes the CLI, one it refuses does not."""
    for low, high in (STRICTNESS_RANGE, MULTI_THRESHOLD_RANGE, COVERAGE_THRESHOLD_RANGE, SEED_RANGE):
        assert low < high
    AnalysisConfig(random_state=SEED_RANGE[1], strictness=STRICTNESS_RANGE[1], multi_threshold=MULTI_THRESHOLD_RANGE[1])
    GapConfig(gap_threshold=COVERAGE_THRESHOLD_RANGE[1])
    from coverage_core.errors import InputError

    for bad in (
        dict(random_state=SEED_RANGE[1] + 1),
        dict(random_state=-1),
        dict(strictness=math.nan),
        dict(strictness=STRICTNESS_RANGE[1] + 0.1),
        dict(multi_threshold=MULTI_THRESHOLD_RANGE[0]),
    ):
        with pytest.raises(InputError):
            AnalysisConfig(**bad)
    with pytest.raises(InputError):
        GapConfig(gap_threshold=COVERAGE_THRESHOLD_RANGE[0])


def test_valid_edge_values_pass_the_checks(tmp_path, capsys, nothing_read, monkeypatch):
    """Values at the limits are accepted: the run gets as far as reading the documents (the stand-in
    reader's AssertionError is an internal error to main, shown whole in debug mode)."""
    extra = [
        "--strictness", "1", "--seed", str(SEED_RANGE[1]), "--gap-threshold", "1", "--multi-threshold", "2",
        "--fail-below", "1", "--chunk-size", "201", "--clusters", "1", "--multi-n", "1", "--k", "1",
        "--compare-chunking", "--embedder", "openai", "--dimensions", "1536",
    ]
    monkeypatch.setenv(cli.DEBUG_VARIABLE, "1")
    assert main(_analyze_args(tmp_path, extra)) == cli.EXIT_INTERNAL
    assert "an input file was read" in capsys.readouterr().err


# --------------------------------------------------------------------------
# --help and the usage line
# --------------------------------------------------------------------------


def _options(parser):
    return [action for action in parser._actions if action.option_strings and action.dest != "help"]


def test_every_flag_has_a_help_text_with_its_default():
    parser = cli._build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("analyze", "diff"):
        for action in _options(subparsers.choices[name]):
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            assert "(default: " in action.help or "(required)" in action.help, (name, action.option_strings)


def test_defaults_shown_are_the_cores(capsys):
    assert main(["analyze", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    options = text[text.index("options:"):]
    for flag, default in {
        "--chunk-size N": ChunkingConfig.chunk_size,
        "--chunk-overlap N": ChunkingConfig.chunk_overlap,
        "--gap-threshold X": GapConfig.gap_threshold,
        "--multi-threshold X": AnalysisConfig.multi_threshold,
        "--multi-n N": AnalysisConfig.multi_n,
        "--seed N": AnalysisConfig.random_state,
        "--k N": DEFAULT_K,
        "--suggest N": GapConfig().n_suggestions,
    }.items():
        shown = re.search(r"\(default: ([^)]*)\)", options[options.index(flag):])
        assert shown[1] == str(default), flag
    strictness = options[options.index("--strictness X"):]
    assert re.search(r"\(default: ([^)]*)\)", strictness)[1] == "0.5"


def test_usage_names_the_command_as_run(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/coverage-core"])
    assert cli._build_parser().format_usage().startswith("usage: coverage-core ")
    monkeypatch.setattr(sys, "argv", ["/work/coverage_core/__main__.py"])
    assert cli._build_parser().format_usage().startswith("usage: python -m coverage_core ")


@pytest.mark.slow
def test_console_script_usage_line():
    script = PROJECT / ".venv" / "bin" / "coverage-core"
    if not script.exists():
        pytest.skip("the console script is not installed in .venv")
    result = subprocess.run([str(script), "diff", "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: coverage-core diff ")


# --------------------------------------------------------------------------
# runs with a small hashing embedder (no model): long questions, cache states
# --------------------------------------------------------------------------


@pytest.fixture
def hash_embedder(monkeypatch):
    from coverage_core import embedding_steps

    def bag_of_words(config, api_key=None):
        return FakeEmbedder(model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64)

    monkeypatch.setattr(embedding_steps, "build_embedder", bag_of_words)


def _questions(tmp_path, cells):
    path = tmp_path / "questions.csv"
    lines = ["question"] + [f'"{cell}"' for cell in cells]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_huge_question_is_truncated_with_a_warning(tmp_path, capsys, cache_dir, hash_embedder):
    huge = " ".join(["drum"] * 200_000)  # 1 MB in one cell
    questions = _questions(tmp_path, ["What is a drum?", "How is a flute played?", huge, "Who plays the flute?"])
    out = tmp_path / "r.json"
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(questions), "--out", str(out), "--clusters", "3", "--quiet"]
    assert main(args) == 0
    captured = capsys.readouterr()
    expected = (
        "1 of 4 questions (row 3, counting rows below the header from 1) is longer than the model reads, "
        "so only its first 256 tokens were used"
    )
    assert f"warning: {expected}" in captured.err
    report = json.loads(out.read_text())
    assert any(expected in warning for warning in report["warnings"])
    # Nothing on the terminal repeats the cell.
    assert max(len(line) for line in (captured.out + captured.err).splitlines()) < 1000


def test_several_long_questions_are_counted_and_named(tmp_path, capsys, cache_dir, hash_embedder):
    long = " ".join(["flute"] * 300)
    cells = ["What is a drum?"] + [f"{long} {i}" for i in range(7)]
    out = tmp_path / "r.json"
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(_questions(tmp_path, cells)), "--out", str(out),
            "--clusters", "3", "--quiet"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "7 of 8 questions (rows 2, 3, 4, 5, 6 and 2 more, counting rows below the header from 1) are longer" in err
    assert "shorten each or split each into separate questions" in err


def test_an_empty_cache_file_is_rebuilt_with_a_warning(tmp_path, capsys, cache_dir, hash_embedder):
    cache_dir.mkdir(parents=True)
    (cache_dir / CACHE_FILE_NAME).write_bytes(b"")
    out = tmp_path / "r.json"
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(_questions(tmp_path, ["What is a drum?", "Flutes?"])),
            "--out", str(out), "--clusters", "3", "--quiet"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert f"warning: The embedding cache {cache_dir / CACHE_FILE_NAME} was an empty file, so it was started afresh" in err
    assert err.count("was an empty file") == 1
    report = json.loads(out.read_text())
    assert any("was an empty file" in warning for warning in report["warnings"])
    assert report["summary"]["embedded"] > 0
    # The rebuilt cache works: a second run embeds nothing and warns of nothing.
    assert main(args) == 0
    assert "was an empty file" not in capsys.readouterr().err
    assert json.loads(out.read_text())["summary"]["embedded"] == 0


def test_a_damaged_cache_file_stops_with_one_sentence(tmp_path, capsys, cache_dir, hash_embedder):
    questions = _questions(tmp_path, ["What is a drum?", "How is a flute played?"])
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(questions), "--out", str(tmp_path / "r.json"),
            "--clusters", "3", "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    path = cache_dir / CACHE_FILE_NAME
    data = bytearray(path.read_bytes())
    assert len(data) > 12288
    data[4096:12288] = np.random.default_rng(0).integers(0, 256, 8192, dtype=np.uint8).tobytes()  # dd over pages 2-3
    path.write_bytes(bytes(data))
    assert main(args) == 2
    _assert_one_sentence(capsys.readouterr().err, "delete the file or set COVERAGE_CORE_CACHE_DIR to another folder.")


# --------------------------------------------------------------------------
# a provider failing under a progress bar
# --------------------------------------------------------------------------


def test_provider_error_starts_on_its_own_line_after_the_progress_bar(tmp_path, capsys, cache_dir, fake_api, monkeypatch):
    from tests.fakes import error_reply

    monkeypatch.setenv("EMBEDDING_API_KEY", "sk-fake-for-tests")  # the key for a server other than OpenAI's
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-for-tests")
    fake_api.script("/v1/embeddings", [error_reply(401, "Incorrect API key provided")])
    args = [
        "analyze", "--docs", *TWO_DOCS, "--questions", str(_questions(tmp_path, ["What is a drum?"])),
        "--out", str(tmp_path / "r.json"), "--embedder", "openai", "--model", "fake-embed",
        "--base-url", f"{fake_api.url}/v1",
    ]  # no --quiet: the bars are drawn on stderr
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Embedding passages" in err  # a bar was drawn
    assert "Traceback" not in err
    lines = err.split("\n")
    errors = [line for line in lines if "coverage_core:" in line]
    assert len(errors) == 1 and errors[0].startswith("coverage_core: "), repr(err)
    assert "Embedding passages" not in errors[0]
    assert not (tmp_path / "r.json").exists()


def test_summary_and_junit_lead_with_the_support_level_then_untested_then_under_tested(tmp_path, capsys, cache_dir,
                                                                                       hash_embedder):
    questions = _questions(tmp_path, ["What is a drum?", "How is a drum played?", "Who plays drums?"])
    out, xml = tmp_path / "r.json", tmp_path / "j.xml"
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(questions), "--out", str(out), "--clusters", "3",
            "--quiet", "--junit", str(xml)]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    report = json.loads(out.read_text())
    assert report["schema_version"] == 6
    # Word-hashing vectors do not tell one document's sentences from the other's: τ falls back, and says so first.
    calibration = report["calibration"]
    assert calibration["reliable"] is False and calibration["reason"]
    assert lines[0].startswith("The support level could not be calibrated")
    # What tested means then (the ranking alone) is said in the terminal and in the JSON report alike.
    assert lines[0] == report["summary"]["headline"] and "whatever the similarity" in lines[0]
    untested = [d["name"] for d in report["documents"] if d["is_untested"]]
    undertested = [d["name"] for d in report["documents"] if d["is_undertested"]]
    assert untested or undertested, "only drum questions: the flute document is not tested"
    listed = []
    for title, names in (("Untested documents", untested), ("Under-tested documents", undertested)):
        if names:
            start = lines.index(f"{title} ({len(names)})")
            listed.append(start)
            assert {line.split(":")[0].strip() for line in lines[start + 1:start + 1 + len(names)]} == set(names)
    assert listed == sorted(listed) and listed[0] < next(i for i, line in enumerate(lines) if " documents, " in line)
    root = ET.parse(xml).getroot()
    assert [suite.get("name") for suite in root.findall("testsuite")][:2] == ["coverage.calibration", "coverage.metric"]
    assert root.find("testsuite/testcase/error").get("type") == "coverage.calibration_unreliable"
    assert root.get("errors") == "1"


DRUM_QUESTIONS = ["What is a drum?", "How is a drum played?", "Who plays drums?"]


def _run_with_suggest(tmp_path, capsys, n):
    out = tmp_path / f"r{n}.json"
    args = ["analyze", "--docs", *TWO_DOCS, "--questions", str(_questions(tmp_path, DRUM_QUESTIONS)), "--out", str(out),
            "--clusters", "3", "--quiet", "--suggest", str(n)]
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["config"]["gaps"]["n_suggestions"] == n
    assert report["gaps"], "only drum questions: the flute passages make a gap"
    return report, capsys.readouterr().out


def test_suggest_0_writes_gaps_without_any_suggestion(tmp_path, capsys, cache_dir, hash_embedder):
    report, summary = _run_with_suggest(tmp_path, capsys, 0)
    assert all(gap["suggestions"] == [] for gap in report["gaps"])
    assert all(cluster["suggested_questions"] == [] for cluster in report["clusters"])
    assert all(gap["least_covered_passages"] for gap in report["gaps"])  # the passages still say what to test
    assert "suggested (" not in summary and "no suggestions asked for" in summary


def test_suggest_2_keeps_at_most_2_per_gap_and_the_summary_names_the_first(tmp_path, capsys, cache_dir,
                                                                           hash_embedder):
    report, summary = _run_with_suggest(tmp_path, capsys, 2)
    for gap in report["gaps"]:
        kept = [s for s in gap["suggestions"] if s["kept"]]
        assert len(kept) <= 2
        assert [s["kept"] for s in gap["suggestions"]] == sorted((s["kept"] for s in gap["suggestions"]), reverse=True)
        assert all(s["origin"] in ("local", "llm", "draft") and (s["reason"] == "") is s["kept"]
                   for s in gap["suggestions"])
        assert kept or gap["note"], "a gap without a kept question says why"
    lines = summary.splitlines()
    first = report["gaps"][0]
    start = lines.index("Largest gaps")
    kept = [s for s in first["suggestions"] if s["kept"]]
    if kept:
        assert lines[start + 2].startswith("     suggested (") and lines[start + 2].endswith(kept[0]["question"])
    else:
        assert lines[start + 2] == f"     no suggestion: {first['note']}"
