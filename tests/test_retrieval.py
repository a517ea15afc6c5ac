"""Retrieval check: labels, top-k retrieval and metrics worked out by hand."""

import json
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from coverage_core.checks.retrieval import (
    SourceRef,
    evaluate_retrieval,
    parse_relevant,
    retrieval_section,
    top_k_chunks,
)
from coverage_core.checks.retrieval_labels import RELEVANT_COLUMN_NAMES, find_relevant_column, relevant_from_questions
from coverage_core.errors import InputError
from coverage_core.inputs.questions import read_questions
from coverage_core.types import Chunk, Document, PageSpan
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"


def chunk(document: str, page: int | None = None, text: str = "", start: int = 0, end: int = 0) -> Chunk:
    return Chunk(document=document, text=text or f"text of {document}", start=start, end=end, page=page)


# Five chunks in the plane; lengths vary on purpose (retrieval must normalise).
#   chunk 0  a.txt  (2, 0)      direction (1, 0)
#   chunk 1  b.txt  (4, 3)      direction (0.8, 0.6)
#   chunk 2  a.txt  (0.6, 0.8)
#   chunk 3  c.txt  (0, 5)      direction (0, 1)
#   chunk 4  b.txt  (-1, 0)
CHUNK_VECTORS = np.array([[2.0, 0.0], [4.0, 3.0], [0.6, 0.8], [0.0, 5.0], [-1.0, 0.0]])
CHUNKS = [chunk("a.txt"), chunk("b.txt"), chunk("a.txt"), chunk("c.txt"), chunk("b.txt")]
# Question (3, 0), direction (1, 0): similarities 1, 0.8, 0.6, 0, -1
#   -> ranking 0 (a), 1 (b), 2 (a), 3 (c), 4 (b); top 3 retrieves [a, b, a].
EAST = [3.0, 0.0]
# Question (0, 2), direction (0, 1): similarities 0, 0.6, 0.8, 1, 0
#   -> ranking 3 (c), 2 (a), 1 (b), then 0 and 4 tied at 0 (lower index first).
NORTH = [0.0, 2.0]


def evaluate(questions, relevant, k=3, **options):
    questions = np.array(questions, dtype=float)
    return evaluate_retrieval(questions, CHUNK_VECTORS, CHUNKS, relevant, k=k, **options)


def row_metrics(result, i=0):
    record = result.per_question.iloc[i]
    return (record.precision_at_k, record.recall_at_k, record.hit_at_k, record.reciprocal_rank)


# --------------------------------------------------------------------------
# top_k_chunks
# --------------------------------------------------------------------------


def test_top_k_by_hand():
    indices, similarities = top_k_chunks([EAST, NORTH], CHUNK_VECTORS, 3)
    assert indices.tolist() == [[0, 1, 2], [3, 2, 1]]
    assert np.allclose(similarities, [[1.0, 0.8, 0.6], [1.0, 0.8, 0.6]], atol=1e-6)
    # All five: ties at similarity 0 (chunks 0 and 4 for NORTH) go to the lower index.
    indices, similarities = top_k_chunks([EAST, NORTH], CHUNK_VECTORS, 5)
    assert indices.tolist() == [[0, 1, 2, 3, 4], [3, 2, 1, 0, 4]]
    assert np.allclose(similarities[0], [1.0, 0.8, 0.6, 0.0, -1.0], atol=1e-6)


def test_top_k_matches_brute_force_argsort_with_small_blocks():
    rng = np.random.default_rng(7)
    chunks = rng.normal(size=(53, 12)) * rng.uniform(0.1, 5.0, size=(53, 1))
    questions = rng.normal(size=(17, 12))
    unit_c = chunks / np.linalg.norm(chunks, axis=1, keepdims=True)
    unit_q = questions / np.linalg.norm(questions, axis=1, keepdims=True)
    sims = unit_q @ unit_c.T
    for k in (1, 7, 53):
        expected = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        for block_size in (1, 3, 17, None):
            indices, similarities = top_k_chunks(questions, chunks, k, block_size=block_size)
            assert indices.shape == (17, k)
            assert np.array_equal(indices, expected), (k, block_size)
            assert np.allclose(similarities, np.take_along_axis(sims, expected, axis=1), atol=1e-5)
            assert np.all(np.diff(similarities, axis=1) <= 0)


def test_top_k_ties_are_broken_by_lowest_chunk_index_across_the_cut():
    # One-hot, doubled and zero vectors: every similarity is exactly -1, 0 or 1,
    # so there are many exact ties, including at the k-th place.
    basis = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [-1, 0, 0], [0, 2, 0]], dtype=float)
    rng = np.random.default_rng(3)
    chunks = basis[rng.integers(0, len(basis), size=40)]
    questions = basis[rng.integers(0, len(basis), size=25)]
    def unit(x):
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.where(norms > 0, norms, 1)

    sims = unit(questions) @ unit(chunks).T
    for k in (1, 4, 11, 40):
        expected = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        for block_size in (2, None):
            indices, _ = top_k_chunks(questions, chunks, k, block_size=block_size)
            assert np.array_equal(indices, expected), (k, block_size)


def test_top_k_clips_k_and_accepts_no_questions():
    indices, similarities = top_k_chunks([EAST], CHUNK_VECTORS, 99)
    assert indices.shape == similarities.shape == (1, 5)
    indices, similarities = top_k_chunks(np.zeros((0, 2)), CHUNK_VECTORS, 3)
    assert indices.shape == (0, 3)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "5", None])
def test_top_k_refuses_bad_k(k):
    with pytest.raises(InputError, match="at least 1"):
        top_k_chunks([EAST], CHUNK_VECTORS, k)


def test_top_k_refuses_mismatched_dimensions():
    with pytest.raises(InputError, match="same model"):
        top_k_chunks([[1.0, 0.0, 0.0]], CHUNK_VECTORS, 2)


def test_top_k_never_holds_the_full_similarity_matrix():
    # 20,000 chunks x 1,000 questions: 80 MB of float32 similarities if held
    # at once (plus 160 MB of argpartition indices); the blocks stay near 32 MB.
    rng = np.random.default_rng(0)
    chunks = rng.normal(size=(20_000, 8)).astype(np.float32)
    questions = rng.normal(size=(1_000, 8)).astype(np.float32)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        indices, _ = top_k_chunks(questions, chunks, 10)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert indices.shape == (1_000, 10)
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.1f} MB"


# --------------------------------------------------------------------------
# metrics by hand
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label, expected",
    [
        # retrieved [a, b, a] for EAST, k = 3
        ("a.txt", (2 / 3, 1.0, 1, 1.0)),  # a repeats: 2 relevant chunks, 1 relevant file
        ("b.txt", (1 / 3, 1.0, 1, 1 / 2)),
        ("c.txt", (0.0, 0.0, 0, 0.0)),
        ("b.txt | c.txt", (1 / 3, 1 / 2, 1, 1 / 2)),  # two relevant files, one found
        ("a.txt; b.txt", (1.0, 1.0, 1, 1.0)),
        ("c.txt|b.txt|a.txt", (1.0, 2 / 3, 1, 1.0)),
    ],
)
def test_metrics_by_hand(label, expected):
    result = evaluate([EAST], [label])
    assert result.per_question.iloc[0].retrieved == ["a.txt", "b.txt", "a.txt"]
    assert np.allclose(row_metrics(result), expected)
    assert np.allclose(
        (result.precision_at_k, result.recall_at_k, result.hit_at_k, result.mrr), expected
    )


def test_averages_over_several_questions_by_hand():
    # EAST retrieves [a, b, a]; NORTH retrieves [c, a, b].
    #   q0 EAST  relevant b:  P 1/3, R 1, hit 1, RR 1/2
    #   q1 NORTH relevant b:  P 1/3, R 1, hit 1, RR 1/3
    #   q2 NORTH relevant a|c: P 2/3, R 1, hit 1, RR 1
    #   q3 EAST  relevant c:  P 0,   R 0, hit 0, RR 0
    result = evaluate([EAST, NORTH, NORTH, EAST], ["b.txt", "b.txt", "a.txt|c.txt", "c.txt"])
    assert math.isclose(result.precision_at_k, (1 / 3 + 1 / 3 + 2 / 3 + 0) / 4)
    assert math.isclose(result.recall_at_k, 3 / 4)
    assert math.isclose(result.hit_at_k, 3 / 4)
    assert math.isclose(result.mrr, (1 / 2 + 1 / 3 + 1 + 0) / 4)
    assert result.per_question["first_relevant_rank"].tolist()[:3] == [2, 3, 1]
    assert pd.isna(result.per_question["first_relevant_rank"].iloc[3])


def test_names_match_ignoring_case_directories_and_extension():
    for label in ("A.TXT", "docs/a.txt", "C:\\corpus\\a.txt", "a", "A"):
        result = evaluate([EAST], [label])
        assert row_metrics(result) == pytest.approx((2 / 3, 1.0, 1, 1.0)), label
        assert result.unknown_sources == ()


def test_labels_can_be_given_as_refs_strings_or_cells():
    by_refs = evaluate([EAST], [[SourceRef("b.txt"), SourceRef("c.txt")]])
    by_strings = evaluate([EAST], [["b.txt", "c.txt"]])
    by_cell = evaluate([EAST], ["b.txt | c.txt"])
    for result in (by_strings, by_cell):
        assert row_metrics(result) == pytest.approx(row_metrics(by_refs))
    # The same source twice is one relevant item.
    assert evaluate([EAST], ["b.txt | B.txt | b"]).recall_at_k == pytest.approx(1.0)


def test_unknown_source_counts_as_relevant_but_unretrievable():
    result = evaluate([EAST, EAST], ["a.txt | Zebra.txt", "zebra"])
    # q0: a found, Zebra not: P 2/3, R 1/2, hit 1, RR 1.  q1: nothing.
    assert row_metrics(result, 0) == pytest.approx((2 / 3, 1 / 2, 1, 1.0))
    assert row_metrics(result, 1) == pytest.approx((0.0, 0.0, 0, 0.0))
    # "zebra" is a different label from "Zebra.txt": an extension-less label
    # matches a file with an extension, not another label.
    assert result.unknown_sources == ("Zebra.txt", "zebra")
    assert any("Zebra.txt" in note for note in result.notes)


def test_unknown_sources_are_listed_once_each_in_order():
    result = evaluate([EAST] * 3, ["x.pdf", "y.pdf | X.PDF", "a.txt | y.pdf"])
    assert result.unknown_sources == ("x.pdf", "y.pdf")


def test_unlabelled_rows_are_left_out_and_counted():
    result = evaluate(
        [EAST, NORTH, EAST, EAST, EAST],
        ["b.txt", None, "", float("nan"), " ; "],
        rows=[10, 11, 12, 13, 14],
        question_texts=["q10", "q11", "q12", "q13", "q14"],
        relevant_column="source",
    )
    assert result.n_labelled == 1 and result.n_unlabelled == 4
    assert result.per_question["row"].tolist() == [10]
    assert result.per_question["question"].tolist() == ["q10"]
    assert result.mrr == pytest.approx(1 / 2)
    assert any("4 of 5" in note and "'source'" in note for note in result.notes)


def test_no_labelled_question_gives_nan_and_says_why():
    result = evaluate([EAST, NORTH], [None, ""])
    assert result.n_labelled == 0 and result.n_unlabelled == 2
    assert math.isnan(result.precision_at_k) and math.isnan(result.mrr)
    assert result.per_question.empty and result.failures.empty
    assert any("No question names a relevant source" in note for note in result.notes)


def test_k_larger_than_the_corpus_is_clipped_with_a_note():
    # k = 10 > 5 chunks: k = 5, retrieved [a, b, a, c, b].
    result = evaluate([EAST], ["b.txt"], k=10)
    assert result.k == 5 and result.k_requested == 10
    assert row_metrics(result) == pytest.approx((2 / 5, 1.0, 1, 1 / 2))
    assert any("You asked for 10 passages" in note and "so 5 were used" in note for note in result.notes)


def test_k_one():
    assert row_metrics(evaluate([EAST], ["a.txt"], k=1)) == pytest.approx((1.0, 1.0, 1, 1.0))
    assert row_metrics(evaluate([EAST], ["b.txt"], k=1)) == pytest.approx((0.0, 0.0, 0, 0.0))


def test_zero_vectors():
    # A zero chunk has similarity 0 to every question: it ranks below positive
    # and above negative similarities.
    chunk_vectors = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [0.5, 0.5]])
    chunks = [chunk("a.txt"), chunk("zero.txt"), chunk("b.txt"), chunk("c.txt")]
    result = evaluate_retrieval([[1.0, 0.0], [0.0, 0.0]], chunk_vectors, chunks, ["zero.txt", "a.txt"], k=3)
    assert result.per_question.iloc[0].retrieved == ["a.txt", "c.txt", "zero.txt"]
    assert row_metrics(result, 0) == pytest.approx((1 / 3, 1.0, 1, 1 / 3))
    # A zero question (failed embedding) retrieves nothing relevant, even
    # though its tied top 3 (chunks 0, 1, 2 by index) include a.txt.
    assert result.per_question.iloc[1].retrieved_chunks == [0, 1, 2]
    assert row_metrics(result, 1) == pytest.approx((0.0, 0.0, 0, 0.0))
    assert any("all-zero vector" in note for note in result.notes)


def test_failures_list_question_expected_and_what_was_retrieved():
    chunks = [
        chunk("a.txt", text="Alpha   passage\nabout a."),
        chunk("b.txt", text="Beta " * 100),
        chunk("a.txt"),
        chunk("c.txt"),
        chunk("b.txt"),
    ]
    result = evaluate_retrieval(
        np.array([EAST, NORTH, EAST], dtype=float), CHUNK_VECTORS, chunks,
        ["c.txt | zebra.txt", "c.txt", None], k=2,
        rows=[4, 5, 6], question_texts=["Where is C?", "North?", "unlabelled"],
    )
    failures = result.failures
    assert failures["row"].tolist() == [4, 4]  # row 5 retrieved c.txt first
    assert failures["question"].tolist() == ["Where is C?"] * 2
    assert failures["expected"].tolist() == ["c.txt | zebra.txt"] * 2
    assert failures["rank"].tolist() == [1, 2]
    assert failures["source"].tolist() == ["a.txt", "b.txt"]
    assert np.allclose(failures["similarity"], [1.0, 0.8], atol=1e-6)
    assert failures["passage"].iloc[0] == "Alpha passage about a."
    assert len(failures["passage"].iloc[1]) <= 200 and failures["passage"].iloc[1].endswith("…")
    assert failures["chunk"].tolist() == [0, 1]


# --------------------------------------------------------------------------
# page-level labels
# --------------------------------------------------------------------------

# report.pdf: page 1 = [0, 10), page 2 = [12, 22), page 3 = [24, 34).
REPORT = Document(
    name="report.pdf",
    text="x" * 34,
    pages=(PageSpan(1, 0, 10), PageSpan(2, 12, 22), PageSpan(3, 24, 34)),
)
NOTES = Document(name="notes.txt", text="y" * 20)
PAGE_CHUNKS = [
    chunk("report.pdf", page=1, start=0, end=10),  # pages 1-1
    chunk("report.pdf", page=1, start=5, end=20),  # pages 1-2 (starts on 1, ends on 2)
    chunk("report.pdf", page=3, start=24, end=34),  # pages 3-3
    chunk("notes.txt", page=None, start=0, end=20),
]
PAGE_VECTORS = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8], [0.8, 0.6]])
# Question (1, 0): similarities 0, 1, 0.6, 0.8 -> ranking 1, 3, 2, 0; top 3 = [1, 3, 2].


def evaluate_pages(labels, documents=(REPORT, NOTES), k=3):
    return evaluate_retrieval(
        [[1.0, 0.0]] * len(labels), PAGE_VECTORS, PAGE_CHUNKS, labels, k=k, documents=documents
    )


@pytest.mark.parametrize(
    "label, expected",
    [
        ("report.pdf", (2 / 3, 1.0, 1, 1.0)),  # file level: chunks 1 and 2
        ("report.pdf#page=2", (1 / 3, 1.0, 1, 1.0)),  # chunk 1 spans pages 1-2
        ("report.pdf p.3", (1 / 3, 1.0, 1, 1 / 3)),  # chunk 2 at rank 3
        ("report.pdf#1", (1 / 3, 1.0, 1, 1.0)),  # chunk 1 starts on page 1; chunk 0 not retrieved
        # Two (file, page) items, both found: chunks 1 and 2 relevant.
        ("report.pdf#2 | report.pdf#3", (2 / 3, 1.0, 1, 1.0)),
        # Page 3 found, page 1 (chunk 0, rank 4) found by chunk 1's span.
        ("report.pdf:1; report.pdf:3", (2 / 3, 1.0, 1, 1.0)),
        ("notes.txt | report.pdf page 3", (2 / 3, 1.0, 1, 1 / 2)),  # ranks 2 and 3
    ],
)
def test_page_level_metrics_by_hand(label, expected):
    result = evaluate_pages([label])
    assert row_metrics(result) == pytest.approx(expected)
    assert result.unknown_sources == ()


def test_page_span_needs_the_documents():
    # Without the documents only the start page (Chunk.page) is known, so
    # chunk 1 (pages 1-2) no longer matches page 2; page 2 is then not in the
    # corpus at all.
    result = evaluate_pages(["report.pdf#page=2"], documents=None)
    assert row_metrics(result) == pytest.approx((0.0, 0.0, 0, 0.0))
    assert result.unknown_sources == ("report.pdf#page=2",)


def test_pages_that_do_not_exist_are_unknown_sources():
    # Page 9 of report.pdf and any page of a text file can never be retrieved.
    result = evaluate_pages(["report.pdf#9 | report.pdf#3", "notes.txt#1"])
    assert row_metrics(result, 0) == pytest.approx((1 / 3, 1 / 2, 1, 1 / 3))
    assert row_metrics(result, 1) == pytest.approx((0.0, 0.0, 0, 0.0))
    assert result.unknown_sources == ("report.pdf#page=9", "notes.txt#page=1")


def test_retrieved_pages_are_reported():
    result = evaluate_pages(["report.pdf#2"])
    assert result.per_question.iloc[0].retrieved == ["report.pdf", "notes.txt", "report.pdf"]
    assert result.per_question.iloc[0].retrieved_pages == [1, None, 3]


# --------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    [
        "report.pdf#page=3", "report.pdf#3", "report.pdf#p3", "report.pdf # page 3",
        "report.pdf:3", "report.pdf p3", "report.pdf p.3", "report.pdf P. 3",
        "report.pdf page 3", "report.pdf Page 3", "report.pdf pg 3",
        "report.pdf, page 3", "report.pdf, p. 3", "  report.pdf#PAGE=3  ", '"report.pdf#3"',
    ],
)
def test_page_forms(cell):
    assert parse_relevant(cell) == (SourceRef("report.pdf", 3),)


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("a.pdf|b.txt", ("a.pdf", "b.txt")),
        ("a.pdf ; b.txt", ("a.pdf", "b.txt")),
        (" a.pdf | b.txt ; c.md ", ("a.pdf", "b.txt", "c.md")),
        ("a.pdf||;b.txt;", ("a.pdf", "b.txt")),
        ("Smith, Jones and Co.pdf", ("Smith, Jones and Co.pdf",)),  # a comma is not a separator
        ("Chapter 3.txt", ("Chapter 3.txt",)),
        ("namep3", ("namep3",)),
        ("folder/My File.PDF", ("folder/My File.PDF",)),
        ("a.pdf | A.PDF | b.txt", ("a.pdf", "b.txt")),  # repeats kept once
    ],
)
def test_separators_and_whitespace(cell, expected):
    assert tuple(ref.name for ref in parse_relevant(cell)) == expected
    assert all(ref.page is None for ref in parse_relevant(cell))


def test_mixed_file_and_page_labels():
    assert parse_relevant("a.pdf#2; a.pdf | a.pdf p.2 | b.txt") == (
        SourceRef("a.pdf", 2), SourceRef("a.pdf"), SourceRef("b.txt"),
    )


@pytest.mark.parametrize("cell", [None, "", "   ", float("nan"), np.nan, pd.NA, " | ; "])
def test_blank_cells_have_no_labels(cell):
    assert parse_relevant(cell) == ()


def test_page_zero_is_refused():
    with pytest.raises(InputError, match="count from 1"):
        parse_relevant("report.pdf#0")


def test_source_ref_round_trips_through_str():
    for ref in (SourceRef("docs/a b.pdf", 12), SourceRef("x.txt")):
        assert parse_relevant(str(ref)) == (ref,)
    assert SourceRef("Docs\\Report.PDF").key == "report.pdf"


# --------------------------------------------------------------------------
# columns
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns, expected",
    [
        (["question", "answer", "source"], "source"),
        (["Question", "Relevant Sources"], "Relevant Sources"),
        (["question", "relevant-source"], "relevant-source"),
        (["question", "FILE_NAME"], "FILE_NAME"),
        (["question", "Document"], "Document"),
        # Earlier names are preferred whatever the column order.
        (["question", "document", "source", "relevant_sources"], "relevant_sources"),
        (["question", "answer", "article"], None),
    ],
)
def test_column_detection(columns, expected):
    assert find_relevant_column(columns) == expected


def test_explicit_column():
    assert find_relevant_column(["question", "article"], "article") == "article"
    assert find_relevant_column(["question", "Article File"], "article_file") == "Article File"
    with pytest.raises(InputError) as error:
        find_relevant_column(["question", "answer", "src"], "origin")
    message = str(error.value)
    assert "'origin'" in message and "'question', 'answer', 'src'" in message


def test_column_names_are_distinct_after_normalizing():
    keys = [name.replace("_", "").lower() for name in RELEVANT_COLUMN_NAMES]
    assert len(set(keys)) == len(keys)


def test_relevant_from_questions_reads_the_users_rows():
    csv = (
        "question,Source,notes\n"
        "What is A?,a.txt,\n"
        ",b.txt,blank question row is skipped\n"
        "What is B?,b.txt#page=2 | c.txt,\n"
        "Unlabelled?,,\n"
    ).encode()
    questions = read_questions(csv, name="q.csv")
    assert questions.rows == [0, 2, 3]
    relevant = relevant_from_questions(questions)
    assert relevant == [(SourceRef("a.txt"),), (SourceRef("b.txt", 2), SourceRef("c.txt")), None]
    assert relevant_from_questions(questions, "notes")[0] is None


def test_relevant_from_questions_errors_name_the_problem():
    questions = read_questions(b"question,answer\nWhat?,That.\n", name="q.csv")
    with pytest.raises(InputError, match="No column naming the relevant sources.*'question', 'answer'"):
        relevant_from_questions(questions)
    questions = read_questions(b"question,source\nWhat?,a.pdf\nWhy?,b.pdf#0\n", name="q.csv")
    with pytest.raises(InputError, match="Row 2 of 'source'.*count from 1"):
        relevant_from_questions(questions)


def test_length_mismatches_are_refused():
    with pytest.raises(InputError, match="one entry per question"):
        evaluate([EAST], ["a.txt", "b.txt"])
    with pytest.raises(InputError, match="one entry per chunk vector"):
        evaluate_retrieval([EAST], CHUNK_VECTORS, CHUNKS[:3], ["a.txt"])


# --------------------------------------------------------------------------
# report section
# --------------------------------------------------------------------------

SECTION_KEYS = {
    "k", "precision_at_k", "recall_at_k", "hit_at_k", "mrr", "n_labelled", "n_unlabelled",
    "relevant_column", "unknown_sources", "questions",
}
QUESTION_KEYS = {
    "row", "relevant", "retrieved", "precision_at_k", "recall_at_k", "hit_at_k", "reciprocal_rank",
}


def plain_types_only(value) -> bool:
    if value is None or type(value) in (int, float, str):
        return True
    if type(value) is list:
        return all(plain_types_only(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and plain_types_only(v) for k, v in value.items())
    return False


def test_retrieval_section_schema():
    result = evaluate(
        np.array([EAST, NORTH, EAST]), ["b.txt | zebra.pdf", None, "report.pdf#page=2"],
        rows=np.array([3, 4, 5]), relevant_column="source",
    )
    section = retrieval_section(result)
    assert set(section) == SECTION_KEYS
    assert section["k"] == 3 and section["n_labelled"] == 2 and section["n_unlabelled"] == 1
    assert section["relevant_column"] == "source"
    assert section["unknown_sources"] == ["zebra.pdf", "report.pdf#page=2"]
    assert [set(q) for q in section["questions"]] == [QUESTION_KEYS, QUESTION_KEYS]
    first = section["questions"][0]
    assert first == {
        "row": 3, "relevant": ["b.txt", "zebra.pdf"], "retrieved": ["a.txt", "b.txt", "a.txt"],
        "precision_at_k": 0.333333, "recall_at_k": 0.5, "hit_at_k": 1, "reciprocal_rank": 0.5,
    }
    assert section["mrr"] == pytest.approx(0.25)
    assert plain_types_only(section)
    json.dumps(section, allow_nan=False)


def test_retrieval_section_without_labels_is_json():
    section = retrieval_section(evaluate([EAST], [None]))
    assert section["precision_at_k"] is None and section["mrr"] is None and section["questions"] == []
    assert plain_types_only(section)
    json.dumps(section, allow_nan=False)


# --------------------------------------------------------------------------
# end to end with the real local model
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_bundled_example_end_to_end(tmp_path):
    from coverage_core.embedding_steps import embed_corpus, embed_questions
    from coverage_core.embeddings import EmbeddingCache, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig

    documents = read_documents([EXAMPLE / "docs"]).documents
    questions = read_questions(EXAMPLE / "questions.csv")
    column = find_relevant_column(questions.frame.columns)
    assert column == "source"
    relevant = relevant_from_questions(questions, column)
    embedder, cache = make_embedder("local"), EmbeddingCache(tmp_path / "cache")
    corpus = embed_corpus(documents, ChunkingConfig(), embedder, cache)
    question_vectors = embed_questions(questions, embedder, cache).vectors

    def run(chunk_vectors, k):
        return evaluate_retrieval(
            question_vectors, chunk_vectors, corpus.chunks, relevant, k=k,
            rows=questions.rows, question_texts=questions.texts,
            relevant_column=column, documents=documents,
        )

    result = run(corpus.vectors, 5)
    # The off-topic questions (Zebra, Berlin) have an empty source cell.
    blank = int((questions.frame["source"].str.strip() == "").sum())
    assert blank > 0 and result.n_unlabelled == blank
    assert result.n_labelled == len(questions.questions) - blank
    assert result.unknown_sources == ()

    # Chance: the same evaluation with the chunk vectors shuffled, so each
    # question retrieves 5 chunks that have nothing to do with it.
    rng = np.random.default_rng(0)
    chance = [run(corpus.vectors[rng.permutation(len(corpus.chunks))], 5) for _ in range(5)]
    chance_hit = np.mean([c.hit_at_k for c in chance])
    chance_mrr = np.mean([c.mrr for c in chance])
    assert result.hit_at_k >= 0.85 and result.hit_at_k >= chance_hit + 0.3, (result.hit_at_k, chance_hit)
    assert result.mrr >= 0.7 and result.mrr >= 2 * chance_mrr, (result.mrr, chance_mrr)

    table = result.per_question
    assert set(result.failures["row"]) == set(table.loc[table["hit_at_k"] == 0, "row"])

    # At k = 1 some questions miss; each is listed with what came back instead.
    strict = run(corpus.vectors, 1)
    table = strict.per_question
    missed = set(table.loc[table["hit_at_k"] == 0, "row"])
    assert missed and set(strict.failures["row"]) == missed
    source_of_row = dict(zip(questions.rows, questions.frame["source"].iloc[questions.rows]))
    text_of_row = dict(zip(questions.rows, questions.texts))
    for failure in strict.failures.itertuples():
        assert failure.expected == source_of_row[failure.row]
        assert failure.source.lower() != failure.expected.lower()
        assert failure.question == text_of_row[failure.row]
        assert failure.rank == 1 and failure.passage
    json.dumps(retrieval_section(result), allow_nan=False)
