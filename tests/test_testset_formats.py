"""Test sets written by RAGAS, DeepEval and Giskard: read with no column chosen, and their reference
passages used as the retrieval check's relevant passages."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from coverage_core.checks import retrieval, retrieval_labels
from coverage_core.checks.retrieval_labels import PassageRef, find_relevant_column, passage_chunks
from coverage_core.checks.runner import run_retrieval_check
from coverage_core.errors import InputError
from coverage_core.inputs import testset_formats
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.inputs.testset_formats import detect_format, parse_list_cell, reference_passages
from coverage_core.types import Chunk, Document
from tests.fakes import FakeEmbedder
from tests.helpers import FIXTURES, PROJECT, measured_analysis

TESTSETS = FIXTURES / "testsets"
DOCS = PROJECT / "examples" / "wiki-qa" / "docs"

# (file, tool, question column, context column) as each generator writes them.
FILES = [
    ("ragas_testset.jsonl", "RAGAS", "user_input", "reference_contexts"),
    ("ragas_testset.csv", "RAGAS", "user_input", "reference_contexts"),
    ("ragas_v01_testset.csv", "RAGAS", "question", "contexts"),
    ("deepeval_goldens.json", "DeepEval", "input", "context"),
    ("deepeval_goldens.csv", "DeepEval", "input", "context"),
    ("giskard_testset.jsonl", "Giskard", "question", "reference_context"),
]


# ---------------------------------------------------------------- reading the fixtures


@pytest.mark.parametrize(("name", "tool", "question", "context"), FILES)
def test_each_generators_file_loads_without_choosing_a_column(name, tool, question, context):
    questions = read_questions(TESTSETS / name)
    assert questions.question_column == question
    assert len(questions.questions) == 16
    assert all(text.endswith("?") or len(text) > 10 for text in questions.texts)
    assert str(questions.warnings[0]) == (
        f"{name}: Read as a {tool} test set: 16 questions with their reference passages."
    )
    found = detect_format(list(questions.frame.columns))
    assert (found.tool, found.context_column) == (tool, context)
    # Every question's reference passage is read back whole (the paragraphs have at least 20 words).
    passages = [reference_passages(cell, found.context_style) for cell in questions.frame[context]]
    assert all(len(p) == 1 and len(p[0].split()) >= 20 for p in passages)


def test_the_same_set_reads_the_same_in_every_format():
    texts = {name: read_questions(TESTSETS / name).texts for name, *_ in FILES}
    contexts = {}
    for name, _, _, column in FILES:
        questions = read_questions(TESTSETS / name)
        style = detect_format(list(questions.frame.columns)).context_style
        contexts[name] = [reference_passages(cell, style) for cell in questions.frame[column]]
    first = FILES[0][0]
    for name in texts:
        assert texts[name] == texts[first], name
        assert contexts[name] == contexts[first], name


def test_a_plain_question_table_is_not_taken_for_a_generators_file():
    questions = read_questions(b"question,answer,source\nWhat is a drum?,An instrument,Drum.txt\n", name="plain.csv")
    assert questions.warnings == []
    assert detect_format(list(questions.frame.columns)) is None
    assert find_relevant_column(list(questions.frame.columns)) == "source"


def test_a_ragas_evaluation_dataset_keeps_its_retrieved_contexts_out():
    # v0.1 evaluation data: "contexts" are what the RAG system retrieved, not references.
    found = detect_format(["question", "answer", "contexts", "ground_truth"])
    assert found.tool == "RAGAS" and found.context_column is None
    questions = read_questions(b'question,answer,contexts,ground_truth\nWhy?,x,"[\'a\']",y\n', name="eval.csv")
    assert str(questions.warnings[0]) == "eval.csv: Read as a RAGAS test set: 1 question (without reference passages)."


def test_the_note_counts_questions_without_passages():
    lines = [{"user_input": "What is a flute?", "reference_contexts": ["A flute is a woodwind."]},
             {"user_input": "What is a drum?", "reference_contexts": []},
             {"user_input": "Who was Volta?", "reference": "A physicist."}]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    questions = read_questions(data, name="t.jsonl")
    assert questions.warnings[0].message == (
        "Read as a RAGAS test set: 3 questions, 1 of them with their reference passages."
    )
    assert testset_formats.is_format_note(questions.warnings[0])
    assert not testset_formats.is_format_note("t.jsonl: 2 questions repeat an earlier one exactly")


def test_an_explicit_question_column_still_wins():
    questions = read_questions(TESTSETS / "deepeval_goldens.csv", question_column="expected_output")
    assert questions.question_column == "expected_output"
    assert not any(testset_formats.is_format_note(w) for w in questions.warnings)


# ---------------------------------------------------------------- list cells


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("['a, b', 'c']", ["a, b", "c"]),  # Python's str(list), as RAGAS's to_csv writes it
        ('["x", "y \\"q\\""]', ["x", 'y "q"']),  # JSON
        ("[\"it's\", 'say \"hi\"']", ["it's", 'say "hi"']),  # mixed quoting of str(list)
        ("['  padded  ', '', None]", ["padded"]),
        ("[1, {'k': 2}]", ["1", '{"k": 2}']),
        ("not a list", None),
        ("[unbalanced", None),
        ("['a'] trailing", None),
        ("", None),
        ("__import__('os')", None),  # never evaluated
    ],
)
def test_list_cells_are_parsed_as_literals_only(cell, expected):
    assert parse_list_cell(cell) == expected


def test_reference_passages_by_style():
    assert reference_passages("one | two|  two ", "pipe") == ("one", "two")
    assert reference_passages("['p|q']", "pipe") == ("p|q",)  # a list wins over the separator
    giskard = "Document 12: The drum is struck.\n\nDocument abc-3: A flute is blown.\n  more"
    assert reference_passages(giskard, "documents") == ("The drum is struck.", "A flute is blown. more")
    assert reference_passages("A passage | with a bar", "list") == ("A passage | with a bar",)
    assert reference_passages(float("nan")) == () and reference_passages("  ") == ()


# ---------------------------------------------------------------- JSON shapes and bad JSON


@pytest.mark.parametrize(
    "text",
    [
        '[{"input": "Q1?", "context": ["c1"]}, {"input": "Q2?", "context": null}]',
        '{"goldens": [{"input": "Q1?", "context": ["c1"]}, {"input": "Q2?"}]}',
        '{"input": ["Q1?", "Q2?"], "context": [["c1"], null]}',
        '{"input": {"0": "Q1?", "1": "Q2?"}, "context": {"0": ["c1"], "1": null}}',  # pandas to_json()
        '{"input": "Q1?", "context": ["c1"]}\n{"input": "Q2?"}\n',
    ],
)
def test_every_json_shape_gives_the_same_table(text):
    questions = read_questions(text.encode(), name="goldens.json")
    assert questions.texts == ["Q1?", "Q2?"]
    assert questions.frame["context"].iloc[0] == '["c1"]'
    assert questions.frame["context"].iloc[1] == ""


def test_a_bad_json_line_is_skipped_with_one_sentence_and_the_rest_kept():
    data = b'{"question": "Q1?", "reference_context": "Document 1: x"}\n{broken\n[1]\n{"question": "Q2?"}\n'
    questions = read_questions(data, name="set.jsonl")
    assert questions.texts == ["Q1?", "Q2?"]
    skipped = [w.message for w in questions.warnings if "skipped" in w.message]
    assert skipped == ["2 lines (2, 3) could not be read as a JSON object and were skipped; fix or delete them."]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"{not json at all", "could not be read as JSON"),
        (b"[1, 2, 3]", "is a JSON list but not of objects"),
        (b"[]", "holds no records"),
        (b'"just a string"', "holds no records"),
    ],
)
def test_unreadable_json_is_one_sentence(data, expected):
    with pytest.raises(InputError) as raised:
        read_questions(data, name="bad.json")
    message = str(raised.value)
    assert expected in message and message.count(". ") == 0 and "Traceback" not in message


# ---------------------------------------------------------------- passages as relevant chunks


WORDS = "the river delta carries water slowly past old mills toward a wide and shallow bay".split()


def test_passage_chunks_finds_containing_spanning_and_edge_chunks():
    text = " ".join(f"w{i}" for i in range(60))
    chunks = [" ".join(f"w{i}" for i in range(s, s + 20)) for s in (0, 20, 40)]
    inside = " ".join(f"w{i}" for i in range(22, 30))  # within chunk 1
    across = " ".join(f"w{i}" for i in range(5, 45))  # chunk 1 whole, chunk 0 three quarters, chunk 2 a quarter
    elsewhere = "entirely different words that appear in no chunk of this corpus at all"
    short = "w41 w42"  # shorter than a run: one run of two words
    found = passage_chunks([inside, across, elsewhere, short, text], chunks)
    assert found[0] == {1}
    assert found[1] == {0, 1}  # chunk 2 shares 1 of its 16 runs: below 30 %
    assert found[2] == frozenset()
    assert found[3] == {2}
    assert found[4] == {0, 1, 2}


def test_passages_match_whatever_the_case_punctuation_and_spacing():
    chunk = "The Drum is a member of the percussion group, technically classified as a membranophone."
    assert passage_chunks(["the drum is a MEMBER of the percussion group  technically classified"], [chunk]) == [{0}]


def test_find_relevant_column_prefers_reference_passages():
    columns = ["input", "actual_output", "expected_output", "context", "source_file"]
    assert find_relevant_column(columns) == "context"
    assert find_relevant_column(columns, "source_file") == "source_file"


def _tiny_retrieval(relevant):
    chunks = [Chunk("a.txt", " ".join(WORDS[:8]), 0, 10), Chunk("b.txt", " ".join(WORDS[8:]), 0, 10),
              Chunk("c.txt", "comet orbit ice tail dust gas", 0, 10)]
    chunk_vectors = np.eye(3)
    question_vectors = np.array([[0.1, 1.0, 0.0], [1.0, 0.0, 0.2]])
    return retrieval.evaluate_retrieval(question_vectors, chunk_vectors, chunks, relevant, k=1,
                                        documents=[Document(c.document, c.text) for c in chunks])


def test_evaluate_retrieval_scores_reference_passages():
    relevant = [(PassageRef(" ".join(WORDS[8:14])),), (PassageRef("no such passage anywhere in it"),)]
    result = _tiny_retrieval(relevant)
    assert result.per_question["hit_at_k"].tolist() == [1, 0]
    assert result.hit_at_k == pytest.approx(0.5)
    assert result.unknown_sources == ("\u201cno such passage anywhere in it\u201d",)
    assert any("1 reference passage of the test set is in no passage" in note for note in result.notes)
    assert not any("no document or page" in note for note in result.notes)


def test_a_passage_in_a_retrieved_chunk_of_another_document_does_not_count():
    # Question 0 retrieves chunk 1 (b.txt); its passage is in chunk 0 (a.txt): a miss, though the same words.
    result = _tiny_retrieval([(PassageRef(" ".join(WORDS[:6])),), None])
    assert result.per_question["hit_at_k"].tolist() == [0]
    assert result.n_unlabelled == 1


# ---------------------------------------------------------------- the whole product, no column chosen


@pytest.fixture(scope="module")
def fixture_analysis():
    documents = read_documents([DOCS]).documents
    questions = read_questions(TESTSETS / "ragas_testset.jsonl")
    embedder = FakeEmbedder(vectors="words", width=256, max_tokens=400)
    return measured_analysis(documents, questions, embedder)


def test_the_retrieval_check_runs_on_reference_passages_with_no_column_chosen(fixture_analysis):
    result = run_retrieval_check(fixture_analysis)
    assert result is not None and result.relevant_column == "reference_contexts"
    assert result.n_labelled == 16 and result.n_unlabelled == 0
    # Every reference paragraph is verbatim in the example's documents, so every one is found in a chunk.
    assert result.unknown_sources == ()
    assert all(label.startswith("\u201c") for labels in result.per_question["relevant"] for label in labels)
    assert 0.0 <= result.hit_at_k <= 1.0 and result.hit_at_k > 0


@pytest.mark.parametrize("name", [name for name, *_ in FILES])
def test_every_format_gives_the_same_relevant_passages(fixture_analysis, name):
    questions = read_questions(TESTSETS / name)
    relevant = retrieval_labels.relevant_from_questions(questions)
    expected = retrieval_labels.relevant_from_questions(fixture_analysis.questions)
    assert [tuple(r.key for r in refs) for refs in relevant] == [tuple(r.key for r in refs) for refs in expected]


def test_a_frame_of_the_users_columns_is_kept_as_text():
    questions = read_questions(TESTSETS / "giskard_testset.jsonl")
    assert isinstance(questions.frame, pd.DataFrame)
    assert list(questions.frame.columns) == ["id", "question", "reference_answer", "reference_context",
                                             "conversation_history", "metadata"]
    assert questions.frame["conversation_history"].iloc[0] == "[]"
    assert json.loads(questions.frame["metadata"].iloc[0])["question_type"] == "simple"
