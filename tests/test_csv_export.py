"""Every CSV the project writes: readers see exactly the rows exported, and nothing starts a formula.

The core (``safe_csv.neutralise_formula``, ``safe_csv.to_safe_csv`` and the
improved test set, ``ui.exports.improved_csv``) is checked exhaustively on short
strings over an alphabet of formula prefixes, line breaks, quotes and
delimiters, and on a list of hostile cells, reading every file back with both
``csv.reader`` and ``pandas.read_csv``. The dashboard side: Streamlit's own
table download is turned off in .streamlit/config.toml, and each page's CSV
buttons serve files built by ``to_safe_csv`` (captured from
``st.download_button`` while the page runs in AppTest, since AppTest has no
server to fetch the file from).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
import re
import tomllib
from types import SimpleNamespace

import pandas as pd
import pytest
import streamlit

from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.outputs.safe_csv import neutralise_formula, to_safe_csv
from tests.app_support import DOCS, EXAMPLE, run_page, seed_session, subset_csv
from tests.helpers import PROJECT
from ui import exports, state
from ui.views.gaps import MARKER_COLUMN

LINE_BREAK = re.compile(r"\r\n|\r|\n")
HOSTILE = [
    "\r=1+1",
    "\n+1",
    "  =1",
    "\t=1",
    "@SUM(A1)",
    "-2+3",
    "What is a drum?\r=cmd|' /C calc'!A0",
    "line one\r\nline two\n=2",
    'say "cheese"',
    '"',
    "a,b",
    "a;b",
    "a\tb",
    "Grüße aus Zürich — 東京は?",
    "",
    "   ",
    " \t ",
    "\r",
    "\n\n",
    "'=already neutral",
]
DELIMITERS = [",", ";", "\t"]
# Characters that matter: formula prefixes, whitespace, line breaks, a quote, delimiters, plain text.
ALPHABET = ["=", "+", "-", "@", " ", "\t", "\r", "\n", '"', ",", ";", "a"]


def starts_formula(text: str) -> bool:
    """What no cell or line of an export may start with: the rule stated on its own, not the code's version."""
    return text.lstrip().startswith(("=", "+", "-", "@")) or text.lstrip(" \n").startswith(("\t", "\r"))


def formula_starts(cell: str) -> list[str]:
    """The cell itself and each of its lines that a spreadsheet could read as a formula."""
    return [part for part in [cell, *LINE_BREAK.split(cell)] if starts_formula(part)]


def short_strings(max_length: int):
    for length in range(max_length + 1):
        for letters in itertools.product(ALPHABET, repeat=length):
            yield "".join(letters)


def read_back(data: bytes, delimiter: str) -> tuple[list[list[str]], pd.DataFrame]:
    """The export as csv.reader rows and as a pandas frame of text."""
    assert data.startswith(b"\xef\xbb\xbf")  # BOM: spreadsheets then read UTF-8
    text = data.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    frame = pd.read_csv(io.StringIO(text, newline=""), sep=delimiter, dtype=str, keep_default_na=False)
    return rows, frame


def assert_no_line_starts_a_formula(data: bytes) -> None:
    """Even a reader that ignores quotes and splits at every line break sees no formula at a line start."""
    for line in LINE_BREAK.split(data.decode("utf-8-sig")):
        assert not starts_formula(line), repr(line)



# ---------------------------------------------------------------- neutralise_formula


def test_neutralise_formula_prefixes_every_dangerous_line():
    expected = {
        "\r=1+1": "'\r'=1+1",
        "\n+1": "'\n'+1",
        "  =1": "'  =1",
        "\t=1": "'\t=1",
        "@SUM(A1)": "'@SUM(A1)",
        "-2+3": "'-2+3",
        "What is a drum?\r=cmd|' /C calc'!A0": "What is a drum?\r'=cmd|' /C calc'!A0",
        "a\r\n  @b\nc": "a\r\n'  @b\nc",
        "a\r\n\r\nb": "a\r\n\r\nb",  # blank lines are left alone
        "\0=1": "'\0=1",  # NUL: on OWASP ASVS's list
        "   ": "   ",
        "": "",
        "2+2=4": "2+2=4",
        "'=1": "'=1",
    }
    assert {cell: neutralise_formula(cell) for cell in expected} == expected
    assert neutralise_formula(1.5) == 1.5 and neutralise_formula(None) is None


def test_neutralise_formula_on_every_short_string():
    """Exhaustive up to four characters: nothing starts a formula, only ' is added, at line starts; idempotent."""
    for cell in short_strings(4):
        safe = neutralise_formula(cell)
        assert not formula_starts(safe), repr(cell)
        assert safe.replace("'", "") == cell, repr(cell)
        added = [m.start() for m in re.finditer("'", safe)]
        assert all(i == 0 or safe[i - 1] in "\r\n" for i in added), repr(cell)
        assert neutralise_formula(safe) == safe, repr(cell)


# ---------------------------------------------------------------- to_safe_csv


@pytest.mark.parametrize("delimiter", DELIMITERS)
def test_safe_csv_round_trips_every_short_string(delimiter):
    cells = list(short_strings(3))
    frame = pd.DataFrame({"cell": cells, "other": list(reversed(cells))})
    rows, back = read_back(to_safe_csv(frame, delimiter=delimiter), delimiter)
    expected = [[neutralise_formula(a), neutralise_formula(b)] for a, b in zip(frame["cell"], frame["other"])]
    assert rows == [["cell", "other"], *expected]
    assert back.values.tolist() == expected


@pytest.mark.parametrize("delimiter", DELIMITERS)
def test_safe_csv_keeps_every_hostile_cell_in_its_row(delimiter):
    """Between other cells, and alone in a one-column file (pandas drops an unquoted whitespace-only line)."""
    frames = [pd.DataFrame({"a": "x", "q": HOSTILE, "b": list(reversed(HOSTILE))})]
    frames += [pd.DataFrame({"q": [cell, "after"]}) for cell in HOSTILE]
    for frame in frames:
        data = to_safe_csv(frame, delimiter=delimiter)
        rows, back = read_back(data, delimiter)
        expected = frame.map(neutralise_formula).values.tolist()
        assert rows == [list(frame.columns), *expected]
        assert back.values.tolist() == expected
        assert_no_line_starts_a_formula(data)


def test_safe_csv_quotes_text_and_writes_numbers_as_values():
    frame = pd.DataFrame(
        {"=header": ["a\rb"], "count": [3], "score": [-0.25], "low": [True], "blank": [None], "edge": [float("-inf")]}
    )
    text = to_safe_csv(frame).decode("utf-8-sig")
    assert text == '"\'=header","count","score","low","blank","edge"\r\n"a\rb",3,-0.25,True,"","\'-inf"\r\n'


# ---------------------------------------------------------------- the improved test set


def user_file(delimiter: str) -> bytes:
    """A question file as a user might have it, hostile cells in the question and the other columns."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(["question", "notes", "=owner"])
    for i, cell in enumerate(HOSTILE):
        writer.writerow([f"Question {i}: {cell}" if i % 2 else cell, cell, f"team {i}"])
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("delimiter", DELIMITERS)
def test_improved_csv_is_the_users_file_plus_the_accepted_rows(delimiter):
    questions = read_questions(user_file(delimiter), name="mine.csv")
    assert questions.delimiter == delimiter
    original = questions.frame
    assert len(original) == len(HOSTILE) and original["notes"].tolist() == HOSTILE  # the input itself is intact
    accepted = ["=HYPERLINK(\"http://example.com\")", "How long do koalas sleep?", "@SUM(A1) bananas"]

    data = exports.improved_csv(questions, accepted)
    rows, back = read_back(data, delimiter)  # read with the user's own delimiter
    header = ["question", "notes", "'=owner", MARKER_COLUMN]
    kept = [[neutralise_formula(v) for v in row] + [""] for row in original.values.tolist()]
    added = [[neutralise_formula(text), "", "", "yes"] for text in accepted]
    assert rows == [header, *kept, *added]
    assert list(back.columns) == header and back.values.tolist() == kept + added
    assert_no_line_starts_a_formula(data)

    # The file goes back into the tool as it is: same delimiter, same cells.
    again = read_questions(data, name="mine-improved.csv")
    assert again.delimiter == delimiter
    assert again.frame.values.tolist() == kept + added


# ---------------------------------------------------------------- the dashboard


def test_table_downloads_have_human_headers_and_stay_formula_safe():
    frame = pd.DataFrame({
        "text": ["=1+1", "What is a drum?"], "max_similarity": [0.5, 0.25], "is_outlier": [True, False],
        "tested_share": [0.1, 0.9], "nearest document": ["@evil.txt", "drums.txt"], "n_chunks": [3, 4],
    })
    original = frame.copy()
    rows, back = read_back(exports.table_csv(frame), ",")
    assert rows[0] == ["Question", "Best similarity", "Off-topic", "Tested share", "Nearest document", "Passages"]
    assert [row[0] for row in rows[1:]] == ["'=1+1", "What is a drum?"]
    assert [row[4] for row in rows[1:]] == ["'@evil.txt", "drums.txt"]
    assert [row[1] for row in rows[1:]] == ["0.5", "0.25"]  # numbers stay values
    pd.testing.assert_frame_equal(frame, original)  # only the file is renamed, never the table

    # A page's own labels win (its column_config), and a hostile label is neutralised like any header.
    import streamlit as st
    config = {"n_chunks": st.column_config.NumberColumn("chunks", format="%d"),
              "text": st.column_config.TextColumn(width="large"),  # no label: the default name
              "tested_share": st.column_config.NumberColumn("=share tested")}
    rows, _ = read_back(exports.table_csv(frame, exports.column_labels(config)), ",")
    assert rows[0] == ["Question", "Best similarity", "Off-topic", "'=share tested", "Nearest document", "Chunks"]

    # Two columns that would share a header keep apart: the second keeps its field name.
    rows, _ = read_back(exports.table_csv(pd.DataFrame({"size": [1], "n_chunks": [2]})), ",")
    assert rows[0] == ["Passages", "n_chunks"]

    # Names the user chose (a compared file's) keep their spelling.
    rows, _ = read_back(exports.table_csv(pd.DataFrame({"topic": ["t"], "tests_v2.csv": [0.5]}), as_is=["tests_v2.csv"]), ",")
    assert rows[0] == ["Topic", "tests_v2.csv"]


def test_streamlit_built_in_table_download_is_off():
    config = tomllib.loads((PROJECT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["disableDataExport"] is True


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    return module_cache_dir


HOSTILE_QUESTION = "What is a drum?\r=cmd|' /C calc'!A0"
HOSTILE_DOCUMENT = "=1+1 Koala.txt"


@pytest.fixture(scope="module")
def hostile_session(cache_dir):
    """A finished run whose questions, labels and a document name are hostile (Koala renamed)."""
    documents = read_documents([EXAMPLE / "docs" / name for name in DOCS]).documents
    documents = [dataclasses.replace(d, name=HOSTILE_DOCUMENT) if d.name == "Koala.txt" else d for d in documents]
    frame = pd.read_csv(io.BytesIO(subset_csv(("Drum", "Zebra"))), dtype=str, keep_default_na=False)
    extra = pd.DataFrame(
        [
            [HOSTILE_QUESTION, "\r=1+1", "Drum", "Drum.txt", "@SUM(A1)", "yes"],
            ["  =HYPERLINK(\"http://x\") how are drums tuned?", "-2+3", "Drum", "=evil.txt", "\t=1", "no"],
            ["-2+3 stripes on a zebra?", "+1", "Zebra", "Zebra.txt", "easy", "no"],
        ],
        columns=frame.columns,
    )
    data = pd.concat([frame, extra], ignore_index=True).to_csv(index=False, lineterminator="\r\n").encode("utf-8")

    values, _ = seed_session(
        SimpleNamespace(documents=documents, warnings=[]), data, state.Settings(n_clusters=3), make_embedder("local"), EmbeddingCache(cache_dir),
        names=[d.name for d in documents],
    )
    assert HOSTILE_QUESTION in values[state.QUESTIONS].texts
    return values


@pytest.fixture
def served(monkeypatch):
    """Label → data of every st.download_button the page renders (the real button still renders)."""
    found = {}
    real = streamlit.download_button

    def capture(label, data, *args, **kwargs):
        found[label] = data
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", capture)
    return found


def served_csv(served: dict, label: str) -> bytes:
    assert label in served, f"no download button {label!r} among {list(served)}"
    data = served[label]
    assert callable(data), "the file should be built only when the button is clicked"
    return data()


def is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell)) and cell.strip() == cell
    except ValueError:
        return cell in ("True", "False")


def assert_human_headers(header: list[str], shown: pd.DataFrame) -> None:
    """One header per shown column, in order, each a human name: no field name's underscore, a capital first."""
    assert len(header) == len(shown.columns)
    for name in header:
        assert "_" not in name and name[:1] == name[:1].upper(), header
    assert not {"max_similarity", "is_outlier", "tested_share", "n_tested", "n_questions"} & set(header)


def assert_safe_table(data: bytes, shown: pd.DataFrame) -> list[list[str]]:
    """The file holds exactly the table shown (under human headers, column by column), text neutralised, and
    nothing in it starts a formula."""
    rows, back = read_back(data, ",")
    assert_human_headers(rows[0], shown)
    assert len(rows) == len(shown) + 1 and len(back) == len(shown)
    for position, column in enumerate(shown.columns):
        if shown[column].dtype == object or pd.api.types.is_string_dtype(shown[column]):
            got = back.iloc[:, position].tolist()
            assert got == [neutralise_formula(v) if isinstance(v, str) else "" if v is None else str(v) for v in shown[column]]
    for row in rows[1:]:
        for cell in row:
            if not is_number(cell):
                assert not formula_starts(cell), repr(cell)
    return rows


def shown_with(at, column: str) -> pd.DataFrame:
    """The table on the page that has ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with a {column!r} column"
    return found[0]


@pytest.mark.slow
def test_results_page_downloads_are_formula_safe(hostile_session, served):
    values = hostile_session
    at = run_page("pages/3_results.py", values)
    assert_safe_table(served_csv(served, "Download the topics (CSV)"), shown_with(at, "example passage"))

    at.session_state[state.W_RESULTS_TABS] = "Documents"
    at.run()
    rows = assert_safe_table(served_csv(served, "Download the documents (CSV)"), shown_with(at, "verdict"))
    assert "'" + HOSTILE_DOCUMENT in [row[0] for row in rows]

    at.session_state[state.W_RESULTS_TABS] = "Off-topic questions"
    at.session_state[state.W_SHOW_ALL_QUESTIONS] = True
    at.run()
    assert not at.exception
    rows = assert_safe_table(served_csv(served, "Download every question (CSV)"), shown_with(at, "override"))
    header = rows[0]
    assert {"Off-topic", "Override", "Best similarity", "Nearest document"} <= set(header)
    assert len(rows) - 1 == len(values[state.QUESTIONS].questions)
    questions = [row[header.index("Question")] for row in rows[1:]]
    assert "What is a drum?\r'=cmd|' /C calc'!A0" in questions


@pytest.mark.slow
def test_fitness_page_download_is_formula_safe(hostile_session, served):
    at = run_page("pages/5_fitness.py", hostile_session)
    rows = assert_safe_table(served_csv(served, "Download these questions (CSV)"), shown_with(at, "nearest passage"))
    header = rows[0]
    assert "What is a drum?\r'=cmd|' /C calc'!A0" in [row[header.index("Question")] for row in rows[1:]]


@pytest.mark.slow
def test_retrieval_page_downloads_are_formula_safe(hostile_session, served):
    at = run_page("pages/7_retrieval.py", hostile_session)
    failures = shown_with(at, "expected is in the knowledge base")
    assert_safe_table(served_csv(served, "Download the failures (CSV)"), failures)
    labelled = shown_with(at, "retrieved (rank order)")
    rows = assert_safe_table(served_csv(served, "Download every labelled question (CSV)"), labelled)
    relevant = [row[rows[0].index("Relevant")] for row in rows[1:]]
    assert "'=evil.txt" in relevant


@pytest.mark.slow
def test_gap_page_improved_csv_is_formula_safe(hostile_session, served):
    run_page("pages/4_gaps.py", hostile_session)
    data = served_csv(served, "Improved test set (CSV, +0 rows)")
    questions = hostile_session[state.QUESTIONS]
    assert data == exports.improved_csv(questions, [])
    rows, _ = read_back(data, questions.delimiter)
    assert len(rows) == 1 + len(questions.frame)
    assert rows[-3][:2] == ["What is a drum?\r'=cmd|' /C calc'!A0", "'\r'=1+1"]
    assert_no_line_starts_a_formula(data)
