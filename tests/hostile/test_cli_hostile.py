"""The command line against hostile input (issue 22): no data loss, no unbounded read, exit codes a CI can trust,
nothing raw on the terminal.

Every test generates its files in ``tmp_path``; none loads the embedding model (a small hashing embedder
stands in where an analysis runs).
"""

import json
import os
import subprocess
import sys

import pytest

from coverage_core import cli, measure as measure_stage
from coverage_core.cli import EXIT_BELOW_THRESHOLD, EXIT_INTERNAL, EXIT_OK, EXIT_UNUSABLE, main
from coverage_core.errors import InputError
from coverage_core.inputs import files, questions as questions_module
from coverage_core.inputs.questions import read_questions
from coverage_core.session import analyze, distinct_questions
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT, refuse_work

ESC = "\x1b"
# Characters a hostile file name or question may carry to drive the terminal.
HOSTILE = (ESC + "[2J", ESC + "]0;owned\x07", "\r", "\x9b31m", "\u202e", "\x08")
DOCUMENT_TEXT = {
    "drum.txt": "A drum is a percussion instrument. Drums are struck with sticks or hands to make rhythm. " * 8,
    "flute.txt": "A flute is a wind instrument. Flutes are played by blowing across a hole in the tube. " * 8,
}


def _knowledge_base(tmp_path, question_lines=("What is a drum?", "How is a flute played?")):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCUMENT_TEXT.items():
        (docs / name).write_text(text, encoding="utf-8")
    questions = tmp_path / "questions.csv"
    questions.write_text("question\n" + "".join(f"{line}\n" for line in question_lines), encoding="utf-8")
    return docs, questions


@pytest.fixture
def nothing_read(monkeypatch):
    """Fail the test if the CLI reads a document or question file, or builds an embedder."""
    refuse_work(monkeypatch, "work started before the paths were checked")


@pytest.fixture
def hash_embedder(monkeypatch):
    from coverage_core import embedding_steps

    def bag_of_words(config, api_key=None, **limits):
        return FakeEmbedder(model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64)

    monkeypatch.setattr(embedding_steps, "build_embedder", bag_of_words)


def _one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("coverage_core: ")
    return lines[0]


def _analyze(docs, questions, out, *extra):
    # --suggest 0: no local model writing questions, which takes most of a small run.
    return ["analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(out), "--quiet",
            "--suggest", "0", *extra]


# ---------------------------------------------------------------- 1. no output overwrites an input or an output
def _collisions(tmp_path):
    """(name, extra args, the file that must survive) for every way an output can name an input."""
    docs, questions = _knowledge_base(tmp_path)
    link = tmp_path / "link.csv"
    link.symlink_to(questions)
    hard = tmp_path / "hard.txt"
    os.link(docs / "drum.txt", hard)
    traffic = tmp_path / "traffic.csv"
    traffic.write_text("query\nWhat is a drum?\n", encoding="utf-8")
    report = tmp_path / "r.json"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "oboe.md").write_text("An oboe is a double-reed wind instrument.", encoding="utf-8")
    (docs / "linked").symlink_to(elsewhere)  # a folder the documents reader may follow
    (docs / "loop").symlink_to(docs)  # and a loop the check must not follow for ever
    return docs, questions, [
        ("out is the question file", ["--out", str(questions)], questions),
        ("out is a document inside --docs", ["--out", str(docs / "flute.txt")], docs / "flute.txt"),
        ("out is a symlink to the question file", ["--out", str(link)], questions),
        ("out is a hard link to a document", ["--out", str(hard)], docs / "drum.txt"),
        ("out is a document in a linked folder", ["--out", str(elsewhere / "oboe.md")], elsewhere / "oboe.md"),
        ("out reached through a symlinked folder", ["--out", str(tmp_path / "again" / "questions.csv")], questions),
        ("out is the traffic file", ["--out", str(traffic), "--traffic", str(traffic)], traffic),
        ("junit is the question file", ["--out", str(report), "--junit", str(questions)], questions),
        ("junit is out", ["--out", str(report), "--junit", str(tmp_path / "again" / "r.json")], None),
        ("save-analysis holds out", ["--out", str(tmp_path / "saved" / "report.json"),
                                     "--save-analysis", str(tmp_path / "saved")], None),
    ]


def test_an_output_naming_an_input_or_another_output_is_refused_before_any_work(tmp_path, capsys, nothing_read):
    docs, questions, cases = _collisions(tmp_path)
    (tmp_path / "again").symlink_to(tmp_path)
    (tmp_path / "saved").mkdir()
    for name, extra, survivor in cases:
        before = survivor.read_bytes() if survivor is not None else None
        args = ["analyze", "--docs", str(docs), "--questions", str(questions), "--quiet", *extra]
        assert main(args) == EXIT_UNUSABLE, name
        sentence = _one_sentence(capsys.readouterr().err)
        flag = "--junit" if "junit" in name else "--save-analysis" if "save-analysis" in name else "--out"
        assert flag in sentence, (name, sentence)
        assert "name another" in sentence or "name different" in sentence, (name, sentence)
        if survivor is not None:
            assert survivor.read_bytes() == before, name
    assert not (tmp_path / "r.json").exists()


def test_an_output_in_a_docs_folder_that_is_no_document_is_still_allowed(tmp_path, hash_embedder, cache_dir):
    docs, questions = _knowledge_base(tmp_path)
    out = docs / "report.json"  # no document: the documents reader never reads it
    out.write_text("{}", encoding="utf-8")
    assert main(_analyze(docs, questions, out, "--clusters", "2")) == EXIT_OK
    assert json.loads(out.read_text())["summary"]["n_questions"] == 2


def test_diff_json_naming_a_report_it_compares_is_refused(tmp_path, capsys):
    report = tmp_path / "old.json"
    report.write_text("{}", encoding="utf-8")
    assert main(["diff", str(report), str(report), "--json", str(report)]) == EXIT_UNUSABLE
    assert "--json" in _one_sentence(capsys.readouterr().err)
    assert report.read_text() == "{}"


# ---------------------------------------------------------------- 2. bad output paths fail first
def test_an_unwritable_output_path_is_refused_before_any_work(tmp_path, capsys, nothing_read):
    docs, questions = _knowledge_base(tmp_path)
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    cases = [
        (["--out", str(tmp_path / "missing" / "r.json")], "--out", "does not exist"),
        (["--out", str(tmp_path)], "--out", "is a folder"),
        (["--out", str(tmp_path / "r.json"), "--junit", str(tmp_path / "no" / "j.xml")], "--junit", "does not exist"),
        (["--out", str(tmp_path / "r.json"), "--junit", str(tmp_path)], "--junit", "is a folder"),
        (["--out", str(a_file / "r.json")], "--out", "is not a folder"),
        (["--out", str(tmp_path / "r.json"), "--save-analysis", str(a_file / "saved")], "--save-analysis", "is a file"),
    ]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases.append((["--out", str(fifo)], "--out", "not a regular file"))
    for extra, flag, reason in cases:
        args = ["analyze", "--docs", str(docs), "--questions", str(questions), "--quiet", *extra]
        assert main(args) == EXIT_UNUSABLE, extra
        sentence = _one_sentence(capsys.readouterr().err)
        assert flag in sentence and reason in sentence, (extra, sentence)


# ---------------------------------------------------------------- 3. no unbounded or blocking read
def test_a_question_path_that_is_no_regular_file_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "questions.fifo"
    os.mkfifo(fifo)  # no writer: opening it would block forever
    for path, reason in ((os.devnull, "not a regular file"), (fifo, "not a regular file"), (tmp_path, "is a folder"),
                         (tmp_path / "none.csv", "does not exist")):
        with pytest.raises(InputError, match=reason):
            read_questions(path)


def test_a_fifo_or_dev_zero_as_questions_ends_the_cli_at_once(tmp_path):
    docs, _ = _knowledge_base(tmp_path)
    fifo = tmp_path / "questions.fifo"
    os.mkfifo(fifo)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COVERAGE_CORE_CACHE_DIR=str(tmp_path / "c"))
    for source in (fifo, "/dev/zero"):
        command = [sys.executable, "-m", "coverage_core", *_analyze(docs, source, tmp_path / "r.json")]
        # A reader that blocks or reads forever would hit the timeout and fail the test.
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PROJECT, env=env)
        assert result.returncode == EXIT_UNUSABLE, result.stderr
        assert "not a regular file" in _one_sentence(result.stderr)


def test_a_device_or_fifo_as_vectors_or_as_a_report_to_diff_is_refused_at_once(tmp_path, capsys):
    docs, questions = _knowledge_base(tmp_path)
    fifo = tmp_path / "old.fifo"
    os.mkfifo(fifo)
    vectors = ["analyze", "--vectors", os.devnull, "--questions", str(questions), "--out", str(tmp_path / "r.json")]
    for args in (vectors, ["diff", str(fifo), str(fifo)]):
        assert main(args) == EXIT_UNUSABLE, args
        assert "not a regular file" in _one_sentence(capsys.readouterr().err)


def test_a_question_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("question\n" + "Is this long?\n" * 100, encoding="utf-8")
    with pytest.raises(InputError, match="over the .* limit"):
        files.read_user_file(path, "question file", max_bytes=path.stat().st_size - 1)
    assert files.read_user_file(path, "question file", max_bytes=path.stat().st_size) == path.read_bytes()


# ---------------------------------------------------------------- 4. repeats measured once, a ceiling
def test_more_distinct_questions_than_the_ceiling_are_refused_with_one_sentence(tmp_path, monkeypatch):
    ceiling = 50
    monkeypatch.setattr(questions_module, "MAX_QUESTIONS", ceiling)
    path = tmp_path / "q.csv"
    path.write_text("question\n" + "".join(f"Question {i}?\n" for i in range(ceiling + 1)), encoding="utf-8")
    with pytest.raises(InputError, match=f"more than {ceiling:,} distinct questions") as refused:
        read_questions(path)
    assert str(refused.value).count(".") <= 2  # one sentence (the file name holds a dot)
    # Repeats do not count: many copies of few questions are read.
    path.write_text("question\n" + "".join(f"Question {i % 3}?\n" for i in range(ceiling * 10)), encoding="utf-8")
    read = read_questions(path)
    assert len(read.questions) == ceiling * 10 and len(read.duplicates) == ceiling * 10 - 3


def test_exact_repeats_are_embedded_and_measured_once(tmp_path, monkeypatch):
    n_copies = 3000
    docs, path = _knowledge_base(tmp_path, ["What is a drum?"] * n_copies + ["How is a flute played?"])
    read = read_questions(path)
    assert len(read.questions) == n_copies + 1
    seen = []
    fit = measure_stage.fit_screener

    def spy(config, corpus, questions, *args, **kwargs):
        seen.append(len(questions.questions))
        return fit(config, corpus, questions, *args, **kwargs)

    monkeypatch.setattr(measure_stage, "fit_screener", spy)
    from coverage_core.config import AnalysisConfig
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.suggest.gaps import GapConfig

    embedder = FakeEmbedder(model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64)
    config = AnalysisConfig(n_clusters=2, gaps=GapConfig(n_suggestions=0))
    analysis = analyze(config, read_documents([docs]).documents, read,
                       embedder=embedder, cache=None)
    assert seen == [2]
    assert analysis.questions.texts == ["What is a drum?", "How is a flute played?"]
    assert len(analysis.question_vectors) == len(analysis.question_table) == 2
    assert sum(texts.count("What is a drum?") for texts in embedder.embed_calls) == 1
    # The file's table keeps every row for exports; the repeats stay listed.
    assert len(analysis.questions.frame) == n_copies + 1 and len(analysis.questions.duplicates) == n_copies - 1
    assert distinct_questions(read).rows == [0, n_copies]


def test_the_cli_reports_repeats_and_measures_them_once(tmp_path, capsys, hash_embedder, cache_dir):
    docs, questions = _knowledge_base(tmp_path, ["What is a drum?"] * 500 + ["How is a flute played?"])
    out = tmp_path / "r.json"
    assert main(_analyze(docs, questions, out, "--clusters", "2")) == EXIT_OK
    report = json.loads(out.read_text())
    assert report["summary"]["n_questions"] == 2
    assert [q["row"] for q in report["questions"]] == [0, 500]
    assert "499 questions repeat an earlier one exactly" in capsys.readouterr().err


# ---------------------------------------------------------------- 5. exit codes
def test_an_internal_error_has_its_own_exit_code_and_one_sentence(tmp_path, capsys, monkeypatch):
    docs, questions = _knowledge_base(tmp_path)

    def bug(args):
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "_run_analyze", bug)
    monkeypatch.delenv(cli.DEBUG_VARIABLE, raising=False)
    code = main(_analyze(docs, questions, tmp_path / "r.json"))
    assert code == EXIT_INTERNAL and code not in (EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_UNUSABLE)
    sentence = _one_sentence(capsys.readouterr().err)
    assert "internal error (KeyError)" in sentence and cli.DEBUG_VARIABLE in sentence
    monkeypatch.setenv(cli.DEBUG_VARIABLE, "1")
    assert main(_analyze(docs, questions, tmp_path / "r.json")) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "a bug" in err


def test_running_out_of_memory_is_an_unusable_input_not_a_bug(tmp_path, capsys, monkeypatch):
    docs, questions = _knowledge_base(tmp_path)

    def exhausted(args):
        raise MemoryError

    monkeypatch.setattr(cli, "_run_analyze", exhausted)
    assert main(_analyze(docs, questions, tmp_path / "r.json")) == EXIT_UNUSABLE
    assert "ran out of memory" in _one_sentence(capsys.readouterr().err)


# ---------------------------------------------------------------- 6. nothing raw on the terminal
def _assert_plain(text: str) -> None:
    for hostile in HOSTILE:
        assert hostile not in text, repr(hostile)
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)


def test_control_characters_in_names_and_questions_never_reach_the_terminal(tmp_path, capsys, hash_embedder,
                                                                           cache_dir):
    docs, _ = _knowledge_base(tmp_path)
    (docs / f"evil{ESC}[31m{HOSTILE[1]}.txt").write_text(DOCUMENT_TEXT["drum.txt"], encoding="utf-8")
    (docs / f"empty{ESC}[2J.txt").write_text("", encoding="utf-8")  # a warning names it
    questions = tmp_path / f"q{ESC}[1A.csv"
    lines = [f"What is a drum?{hostile}" for hostile in HOSTILE] + ["How is a flute played?", ""]
    questions.write_text("question\n" + "\n".join(f'"{line}"' for line in lines) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(_analyze(docs, questions, out, "--clusters", "2", "--fail-below", "1")) == EXIT_BELOW_THRESHOLD
    captured = capsys.readouterr()
    assert "basic" in captured.out and "warning:" in captured.err
    _assert_plain(captured.out)
    _assert_plain(captured.err)
    # The report keeps the text as written: only the terminal is protected.
    assert any(ESC in q["text"] for q in json.loads(out.read_text())["questions"])


def test_control_characters_in_an_error_or_a_usage_error_are_removed(tmp_path, capsys):
    docs, _ = _knowledge_base(tmp_path)
    missing = tmp_path / f"gone{ESC}]0;owned\x07.csv"
    assert main(_analyze(docs, missing, tmp_path / "r.json")) == EXIT_UNUSABLE
    sentence = _one_sentence(capsys.readouterr().err)
    assert "does not exist" in sentence
    _assert_plain(sentence)
    assert main(_analyze(docs, missing, tmp_path / "r.json", "--strictness", f"{ESC}[2Jhigh")) == EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert "--strictness" in _one_sentence(err)
    _assert_plain(err)


def test_a_link_out_of_a_docs_folder_is_read_only_with_follow_symlinks(tmp_path, capsys, hash_embedder, cache_dir):
    docs, questions = _knowledge_base(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "oboe.txt").write_text("An oboe is a double-reed wind instrument played in orchestras. " * 8,
                                      encoding="utf-8")
    (docs / "oboe.txt").symlink_to(outside / "oboe.txt")
    read = {}
    for extra in ((), ("--follow-symlinks",)):
        out = tmp_path / f"r{len(extra)}.json"
        assert main(_analyze(docs, questions, out, "--clusters", "2", *extra)) == EXIT_OK
        read[extra] = {d["name"] for d in json.loads(out.read_text())["documents"]}
        capsys.readouterr()
    assert "oboe.txt" not in read[()] and "oboe.txt" in read[("--follow-symlinks",)]
