"""JSON nested without end, lone surrogates, oversize LLM answers, a newline in a file name and a zip bomb
(issue 22): each ends in correct handling or one sentence (exit 2), never an internal error (exit 3), and
the rest of the input is still read.

Every hostile file is made here, in ``tmp_path``; only the zip bomb's size limit is relied on (it is a
module constant). No test loads the embedding model: a small hashing embedder stands in where the command
line runs an analysis.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from coverage_core import bounded_json
from coverage_core.cli import EXIT_OK, EXIT_UNUSABLE, main
from coverage_core.errors import InputError, ProviderError
from coverage_core.inputs.questions import read_questions
from coverage_core.saved import analysis as saved_analysis
from coverage_core.saved.analysis import load_analysis, save_analysis, zip_folder
from coverage_core.stages import subjects
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.llm import MAX_REPLY_CHARS, parse_json_loose
from coverage_core.suggest.questions import MAX_SUGGESTION_CHARS
from coverage_core.verdicts import is_gap
from tests.fakes import FakeEmbedder, chat_reply
from tests.helpers import JAKARTA, PROJECT, VIOLIN, chat_client

CHAT = "/v1/chat/completions"
DOCUMENT_TEXT = {
    "drum.txt": "A drum is a percussion instrument. Drums are struck with sticks or hands to make rhythm. " * 8,
    "flute.txt": "A flute is a wind instrument. Flutes are played by blowing across a hole in the tube. " * 8,
}


@pytest.fixture
def hash_embedder(monkeypatch):
    from coverage_core import embedding_steps

    def bag_of_words(config, api_key=None, **limits):
        return FakeEmbedder(model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64)

    monkeypatch.setattr(embedding_steps, "build_embedder", bag_of_words)


def _docs(tmp_path, names=tuple(DOCUMENT_TEXT)):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in zip(names, DOCUMENT_TEXT.values()):
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def _analyze(docs, questions, out, *extra):
    # --suggest 0: no local model writing questions, which takes most of a small run.
    return ["analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(out), "--quiet",
            "--suggest", "0", "--clusters", "2", *extra]


def _one_sentence(err: str) -> str:
    """The one line the command line printed to stderr: a sentence, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    assert lines[0].startswith("coverage_core: ") and lines[0].endswith(".")
    return lines[0]


def _is_sentence(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message and message.endswith("."), message
    assert message.rstrip(".").count(". ") == 0, message


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------- 1. question files nested 100,000 deep
def test_a_question_file_nested_100000_deep_is_one_sentence_and_its_other_lines_are_read(tmp_path, capsys,
                                                                                         hash_embedder, cache_dir):
    docs = _docs(tmp_path)
    deep_json = tmp_path / "deep.json"
    deep_json.write_text(_nested(100_000), encoding="utf-8")
    assert main(_analyze(docs, deep_json, tmp_path / "r.json")) == EXIT_UNUSABLE
    sentence = _one_sentence(capsys.readouterr().err)
    assert "deep.json nests lists or objects more than 64 levels deep" in sentence

    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text('{"question": "What is a drum?"}\n{"question": ' + _nested(100_000) + "}\n"
                          '{"question": "How is a flute played?"}\n', encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(_analyze(docs, deep_lines, out)) == EXIT_OK
    assert "1 line (2) could not be read as a JSON object and was skipped; fix or delete it." in capsys.readouterr().err
    assert [q["text"] for q in json.loads(out.read_text())["questions"]] == ["What is a drum?",
                                                                            "How is a flute played?"]


# ---------------------------------------------------------------- 2. a 1.9 MB reference_contexts cell of brackets
@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_a_ragas_context_cell_of_19_mb_of_nested_brackets_is_one_passage_not_a_crash(tmp_path, capsys, form,
                                                                                   hash_embedder, cache_dir):
    cell = _nested(950_000)  # 1.9 MB
    path = tmp_path / f"ragas.{form}"
    if form == "jsonl":
        rows = [{"user_input": "What is a drum?", "reference_contexts": cell, "reference": "A drum."},
                {"user_input": "How is a flute played?", "reference_contexts": ["Flutes are played by blowing."],
                 "reference": "By blowing."}]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    else:
        path.write_text("user_input,reference_contexts,reference\nWhat is a drum?," + cell + ",A drum.\n"
                        "How is a flute played?,['Flutes are played by blowing.'],By blowing.\n", encoding="utf-8")
    started = time.monotonic()
    assert main(_analyze(_docs(tmp_path), path, tmp_path / "r.json")) == EXIT_OK
    assert time.monotonic() - started < 60
    assert "Read as a RAGAS test set: 2 questions" in capsys.readouterr().err


# ---------------------------------------------------------------- 3. a lone surrogate escape
def test_a_lone_surrogate_in_a_ragas_file_becomes_a_replacement_character(tmp_path, capsys, hash_embedder,
                                                                          cache_dir):
    path = tmp_path / "ragas.jsonl"
    path.write_text(
        '{"user_input": "What is a \\ud800 drum?", "reference_contexts": ["A drum \\udfff is struck."], '
        '"reference": "x\\udc00", "\\ud801key": 1}\n'
        '{"user_input": "How is a \\ud83d\\ude00 flute played?", "reference_contexts": [], "reference": "y"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    assert main(_analyze(_docs(tmp_path), path, out)) == EXIT_OK  # embedded, cached, reported
    texts = [q["text"] for q in json.loads(out.read_text(encoding="utf-8"))["questions"]]
    assert texts == ["What is a \ufffd drum?", "How is a \U0001f600 flute played?"]  # a real pair is kept
    read = read_questions(path)
    assert "\ufffdkey" in read.frame.columns
    for cell in (text for column in read.frame.columns for text in (column, *read.frame[column])):
        cell.encode("utf-8")  # every cell and column name encodes
    # A Python list literal (RAGAS's CSV) may spell one too.
    csv = tmp_path / "ragas.csv"
    csv.write_text("user_input,reference_contexts,reference\nWhat is a drum?,\"['A \\ud800 drum', 'b']\",x\n",
                   encoding="utf-8")
    from coverage_core.inputs.testset_formats import reference_passages

    assert reference_passages(read_questions(csv).frame["reference_contexts"][0]) == ("A \ufffd drum", "b")
    assert bounded_json.clean_text("a\ud800b\udfff") == "a\ufffdb\ufffd"


# ---------------------------------------------------------------- 4. and 5. hostile LLM answers
GOOD_ANSWER = {"themes": ["jakarta"], "questions": [{"question": "Why is Indonesia moving its capital?", "passage": 1}]}


def _gaps(server):
    """Two gaps (violin, Jakarta), each asked of the LLM at ``server``: (gaps, warnings)."""
    labels = np.array([0] * 4 + [1] * 4)
    vectors = np.zeros((8, 2))
    vectors[np.arange(8), labels] = 1.0
    vectors[np.arange(8), 1 - labels] = 0.1 * (np.arange(8) % 4)
    coverage = np.array([0.4, 0.5])
    config = GapConfig(n_passages=3, n_suggestions=2)
    return analyze_gaps(
        VIOLIN + JAKARTA, ["violin.pdf"] * 4 + ["jakarta.txt"] * 4, vectors, labels, np.eye(2),
        np.array([0.3, 0.5, 0.8, 0.2] * 2), coverage, [], config, chat_client(server, "sk-x"),
        is_gap=is_gap(coverage, None, GapConfig(rule="coverage")),
    )


def _answer_violin_with(reply: str):
    def handler(body):
        prompt = body["messages"][1]["content"]
        return chat_reply(reply if "violin" in prompt else json.dumps(GOOD_ANSWER))
    return handler


def test_an_llm_answer_nested_50000_deep_is_a_bad_response_and_the_other_gap_gets_its_questions(fake_api):
    deep = '{"questions": ' + _nested(50_000) + "}"
    fake_api.handle(CHAT, _answer_violin_with(deep))
    with pytest.raises(ProviderError) as caught:
        chat_client(fake_api, "sk-x").complete_json("system", "Write about the violin.")
    assert caught.value.kind == "bad_response"
    _is_sentence(str(caught.value))
    assert "more than 64 levels deep" in str(caught.value)
    # Wrapped in prose, or never closed, it is found as quickly: no search from every one of its brackets.
    started = time.monotonic()
    for reply in ("Here you go: " + deep, "```json\n" + "[" * 50_000 + "\n```", "[" * 50_000 + " {" * 50_000):
        with pytest.raises(ValueError):
            parse_json_loose(reply)
    assert time.monotonic() - started < 5

    started = time.monotonic()
    gaps, warnings = _gaps(fake_api)
    assert time.monotonic() - started < 30
    violin, jakarta = sorted(gaps, key=lambda gap: gap.cluster)
    assert violin.suggestions and all(s.origin == "draft" for s in violin.suggestions)
    assert [s.text for s in jakarta.suggestions if s.origin == "llm"] == ["Why is Indonesia moving its capital?"]
    (warning,) = warnings
    assert warning.startswith("Cluster 0: offline question drafts are shown because the LLM failed: ")
    assert "did not return valid JSON twice in a row" in warning and "\n" not in warning


def test_an_llm_question_of_12_mb_is_dropped_not_kept(fake_api):
    huge = {"themes": [], "questions": [{"question": "Why " + "very " * 240_000 + "long?", "passage": 1}]}
    reply = json.dumps(huge)
    assert len(reply) > 1_200_000
    fake_api.handle(CHAT, _answer_violin_with(reply))
    gaps, warnings = _gaps(fake_api)
    violin, jakarta = sorted(gaps, key=lambda gap: gap.cluster)
    assert all(s.origin == "draft" and len(s.text) <= MAX_SUGGESTION_CHARS for s in violin.suggestions)
    assert [s.origin for s in jakarta.suggestions] == ["llm"]
    (warning,) = warnings
    assert f"more than the {MAX_REPLY_CHARS:,} a reply may have" in warning and "\n" not in warning
    # Refused at once, not asked again: one request per gap.
    assert len(fake_api.requests_to(CHAT)) == 2

    # Under the reply limit, each question is still held to a test question's length.
    long = {"themes": [], "questions": [
        {"question": "Why " + "very " * (MAX_SUGGESTION_CHARS // 5) + "long?", "passage": 1},
        {"question": "What is a violin bow strung with, \ud800?", "passage": 3},
    ]}
    fake_api.handle(CHAT, _answer_violin_with(json.dumps(long)))
    gaps, warnings = _gaps(fake_api)
    violin = min(gaps, key=lambda gap: gap.cluster)
    assert [s.text for s in violin.suggestions if s.origin == "llm"] == ["What is a violin bow strung with, \ufffd?"]
    assert warnings == []


# ---------------------------------------------------------------- 6. a newline in a document's name
def test_a_document_named_with_a_newline_is_analysed_like_any_other(tmp_path, hash_embedder, cache_dir):
    # The function that failed: its extension split used "." in a fullmatch, which stops at a newline.
    # A newline splits words as a space does, and the extension still comes off.
    assert subjects._name_stems(["new\nline.txt"]) == subjects._name_stems(["new line.txt"])
    (both, subject), = subjects._name_stems(["new\nline.txt"])
    assert b"new" in subject and both > subject
    docs = _docs(tmp_path, ["drum.txt", "new\nline.txt"])
    questions = tmp_path / "questions.csv"
    questions.write_text("question\nWhat is a drum?\nHow is a flute played?\n", encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(_analyze(docs, questions, out)) == EXIT_OK
    # Named on one line, so it cannot print as a line of its own in the terminal or a report.
    assert {d["name"] for d in json.loads(out.read_text())["documents"]} == {"drum.txt", "new line.txt"}


def test_a_document_name_cannot_fake_a_line_of_the_terminal_summary(tmp_path, hash_embedder, cache_dir, capsys):
    fake = "drum.txt: tested\r\nUntested documents (0)\u202e.txt"
    docs = _docs(tmp_path, ["flute.txt", fake])
    questions = tmp_path / "questions.csv"
    questions.write_text("question\nHow is a flute played?\n", encoding="utf-8")
    assert main(_analyze(docs, questions, tmp_path / "r.json")) == EXIT_OK
    printed = capsys.readouterr().out
    assert not [line for line in printed.splitlines() if line.startswith("Untested documents (0)")]  # no faked line
    assert "\r" not in printed and "\u202e" not in printed
    assert "drum.txt: tested Untested documents (0).txt" in printed


@pytest.mark.slow
def test_a_document_named_with_a_newline_runs_through_the_command_line_with_the_real_model(tmp_path):
    docs = _docs(tmp_path, ["drum.txt", "new\nline.txt"])
    questions = tmp_path / "questions.csv"
    questions.write_text("question\nWhat is a drum?\nHow is a flute played?\n", encoding="utf-8")
    out = tmp_path / "r.json"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COVERAGE_CORE_CACHE_DIR=str(tmp_path / "c"))
    command = [sys.executable, "-m", "coverage_core", *_analyze(docs, questions, out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=PROJECT, env=env)
    assert result.returncode == EXIT_OK, result.stderr
    assert "new line.txt" in {d["name"] for d in json.loads(out.read_text())["documents"]}


# ---------------------------------------------------------------- 7. a zip bomb as a saved analysis
def test_a_saved_analysis_zip_whose_chunks_unpack_thousands_of_times_its_size_is_refused_unread(
        analysis, tmp_path, monkeypatch):
    folder = save_analysis(analysis, tmp_path / "saved")
    bomb = saved_analysis.ZIP_RATIO_FROM_BYTES + 64 * 1024  # a bit over the size the ratio applies from
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (*saved_analysis.FILES, saved_analysis.MANIFEST):
            if name == saved_analysis.CHUNKS:
                archive.writestr(name, bytes(bomb))  # zeros: about a thousand times smaller packed
            else:
                archive.write(folder / name, name)
    data = buffer.getvalue()
    assert zipfile.ZipFile(io.BytesIO(data)).getinfo(saved_analysis.CHUNKS).compress_size * 100 < bomb
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, info, *a, **k: opened.append(
        getattr(info, "filename", info)) or real_open(self, info, *a, **k))
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            load_analysis(data, "bomb.zip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert message.startswith("chunks.parquet in bomb.zip would unpack to 1 MB from ") and "far more than" in message
    assert "zip the saved analysis folder again" in message
    _is_sentence(message)
    assert saved_analysis.CHUNKS not in opened and peak < bomb  # not a byte of it unpacked
    # Under the ratio the same zip opens; a member that unpacks to more than its limit is cut off as it comes.
    assert load_analysis(zip_folder(folder), "saved.zip").corpus.chunks
    with zipfile.ZipFile(io.BytesIO(zip_folder(folder))) as archive:
        info = archive.getinfo(saved_analysis.REPORT)
        with pytest.raises(ValueError):
            saved_analysis._unpack(archive, info, info.file_size - 1)
        assert len(saved_analysis._unpack(archive, info, info.file_size)) == info.file_size
