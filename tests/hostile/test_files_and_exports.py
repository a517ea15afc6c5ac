"""Documents folders, PDFs and exported cells against hostile input (issue 22).

Folders: a link inside a documents folder that leads outside it is not read
(its target could be any file the reading user can open), nor is a pipe or
device named like a document. PDFs: a small file crafted to be slow to read
is cut off by a time budget per file and per call, the rest of the input
still read. Exports: a cell a spreadsheet would run as a formula is
neutralised, a signed plain number (``-0.5``) is the user's value and kept.

Every hostile file is generated in ``tmp_path``; no test loads the embedding model.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
import threading
import time

import pandas as pd
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_documents, read_uploaded_documents
from coverage_core.inputs.pdf import PdfBudget, PdfClock, read_pdf
from coverage_core.inputs.questions import read_questions
from coverage_core.inputs.text import Unreadable
from coverage_core.outputs.safe_csv import neutralise_formula, to_safe_csv
from tests.helpers import PDFS
from ui import exports

SECRET = "sk-live-do-not-embed-4242"


def _write(path, text="A note about drums and flutes."):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _texts(result) -> str:
    return " ".join(document.text for document in result.documents) + " ".join(map(str, result.warnings))


# ---------------------------------------------------------------- links and special files


@pytest.fixture
def leaky_folder(tmp_path):
    """docs/ with a file, a link to a secret file outside and a link to a folder outside."""
    docs, outside = tmp_path / "docs", tmp_path / "private-area"
    _write(docs / "a.txt")
    _write(outside / "secret.txt", SECRET)
    _write(outside / "keys" / "id.md", SECRET)
    os.symlink(outside / "secret.txt", docs / "leak.txt")
    os.symlink("../private-area/keys", docs / "leakdir")  # relative links leave the folder just as well
    return docs


def test_links_leading_outside_the_folder_are_skipped_with_a_warning_naming_the_link(leaky_folder):
    result = read_documents([leaky_folder])

    assert [document.name for document in result.documents] == ["a.txt"]
    assert [warning.source for warning in result.warnings] == ["leak.txt", "leakdir"]
    for warning in result.warnings:
        assert warning.message == (
            "It is a link to something outside the folder, so it was skipped; "
            "copy what it points to into the folder if it should be read."
        )
    assert SECRET not in _texts(result)
    said = " ".join(map(str, result.warnings))
    assert "private-area" not in said and "secret" not in said and "keys" not in said  # the target is not named


def test_following_links_out_is_the_callers_explicit_choice(leaky_folder):
    result = read_documents([leaky_folder], follow_symlinks=True)

    assert [document.name for document in result.documents] == ["a.txt", "leak.txt", "leakdir/id.md"]
    assert result.warnings == []


def test_a_link_to_a_link_that_leads_out_is_judged_by_where_it_ends(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "a.txt")
    _write(tmp_path / "secret.md", SECRET)
    (docs / "inner").mkdir()
    os.symlink(tmp_path / "secret.md", docs / "inner" / "hop.md")
    os.symlink("inner/hop.md", docs / "0-alias.md")  # points inside the folder, at a link that leaves it

    result = read_documents([docs])

    assert [document.name for document in result.documents] == ["a.txt"]
    assert [warning.source for warning in result.warnings] == ["0-alias.md", "inner/hop.md"]
    assert SECRET not in _texts(result)


def test_links_staying_inside_the_folder_are_read_once(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "sub" / "b.md", "Notes on the oboe.")
    _write(docs / "z.txt", "Notes on the tuba.")
    os.symlink("sub/b.md", docs / "alias.md")
    os.symlink("sub", docs / "again")
    os.symlink(docs / "z.txt", docs / "absolute.txt")  # absolute, still inside

    result = read_documents([docs])

    assert sorted(document.text for document in result.documents) == ["Notes on the oboe.", "Notes on the tuba."]
    assert [document.name for document in result.documents] == ["sub/b.md", "z.txt"]
    assert result.warnings == []


def test_a_folder_named_through_a_link_is_walked_with_its_own_bounds(tmp_path):
    docs = tmp_path / "real" / "docs"
    _write(docs / "a.txt")
    _write(docs / "sub" / "b.txt", "Inside, reached by a link.")
    _write(tmp_path / "real" / "secret.txt", SECRET)
    os.symlink("sub/b.txt", docs / "inside.txt")
    os.symlink("../secret.txt", docs / "leak.txt")
    named = tmp_path / "docs-link"
    os.symlink(docs, named)  # the user named this link: it is read, and bounds the walk

    result = read_documents([named])

    assert [document.name for document in result.documents] == ["a.txt", "sub/b.txt"]
    assert [warning.source for warning in result.warnings] == ["leak.txt"]
    assert SECRET not in _texts(result)


def test_a_file_named_directly_is_read_even_through_a_link(tmp_path):
    _write(tmp_path / "elsewhere" / "chosen.md", "Chosen by the user.")
    named = tmp_path / "here.md"
    os.symlink(tmp_path / "elsewhere" / "chosen.md", named)

    result = read_documents([named])

    assert [document.text for document in result.documents] == ["Chosen by the user."]


def test_only_links_out_of_a_folder_give_nothing_readable_in_one_sentence(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(tmp_path / "secret.txt", SECRET)
    os.symlink(tmp_path / "secret.txt", docs / "leak.txt")

    with pytest.raises(InputError) as raised:
        read_documents([docs])

    message = str(raised.value)
    assert f"{docs} contains no PDF, TXT or Markdown files" in message
    assert "leak.txt is a link to something outside the folder" in message
    assert SECRET not in message and "\n" not in message


def _read_in_thread(paths, seconds: float):
    """read_documents(paths) in a thread; (finished, result or error). A hang is reported, not waited out."""
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = read_documents(paths)
        except Exception as error:  # noqa: BLE001 - handed back to the test
            outcome["result"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), outcome.get("result")


def test_a_pipe_named_like_a_document_is_skipped_without_blocking(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "a.txt")
    pipe = docs / "pipe.txt"
    os.mkfifo(pipe)  # opening it for reading would wait for a writer forever

    finished, result = _read_in_thread([docs], 20)
    if not finished:  # release the blocked reader before failing
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    assert finished, "reading a folder with a FIFO blocked"

    assert [document.name for document in result.documents] == ["a.txt"]
    assert [str(warning) for warning in result.warnings] == [
        "pipe.txt: It is not a regular file (a pipe, device or socket), so it was skipped; "
        "save its content to a regular file if it should be read."
    ]


def test_a_file_larger_than_the_limit_is_refused_before_reading(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "a.txt")
    _write(docs / "big.md", "x" * 5000)

    result = read_documents([docs], max_bytes=1000)

    assert [document.name for document in result.documents] == ["a.txt"]
    assert [warning.source for warning in result.warnings] == ["big.md"]
    assert "more than the 1000 bytes limit" in result.warnings[0].message


# ---------------------------------------------------------------- PDFs crafted to be slow


def _name(value: str) -> NameObject:
    return NameObject(value)


def _stream(data: bytes) -> DecodedStreamObject:
    stream = DecodedStreamObject()
    stream.set_data(data)
    return stream


def _text(line: str) -> bytes:
    return f"BT /F1 11 Tf 72 720 Td ({line}) Tj ET\n".encode()


def _glyphs(count: int) -> bytes:
    """Text shown one glyph per operator: tiny compressed, slow to extract (tens of µs per operator)."""
    return b"BT /F1 11 Tf " + b"(x) Tj\n" * count + b"ET\n"


def _pdf(*pages: bytes, form: bytes | None = None) -> bytes:
    """A PDF with one page per content stream; ``form`` becomes the form XObject /Fm1 pages may draw."""
    writer = PdfWriter()
    font = DictionaryObject(
        {_name("/Type"): _name("/Font"), _name("/Subtype"): _name("/Type1"), _name("/BaseFont"): _name("/Helvetica")}
    )
    fonts = DictionaryObject({_name("/F1"): font})
    resources = DictionaryObject({_name("/Font"): fonts})
    if form is not None:
        xobject = _stream(form).flate_encode()
        xobject[_name("/Type")] = _name("/XObject")
        xobject[_name("/Subtype")] = _name("/Form")
        xobject[_name("/Resources")] = DictionaryObject({_name("/Font"): fonts})
        # Streams must be indirect objects; pypdf's writer has no public call for that.
        resources[_name("/XObject")] = DictionaryObject({_name("/Fm1"): writer._add_object(xobject)})
    for content in pages:
        page = writer.add_blank_page(612, 792)
        page[_name("/Resources")] = resources
        page[_name("/Contents")] = writer._add_object(_stream(content).flate_encode())
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


class Ticker:
    """A clock that moves one second each time it is read: budgets in reads, the same on any machine."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


def _clock(per_file: float, per_call: float = 1e9, size: int = 0) -> PdfClock:
    return PdfClock(PdfBudget(seconds_per_file=per_file, seconds_per_call=per_call, seconds_per_mb=0), size, Ticker())


@pytest.fixture(scope="module")
def slow_pdf() -> bytes:
    return _pdf(_text("Opening remarks"), _glyphs(3000), _text("Closing remarks"))


def test_a_pdf_over_its_budget_keeps_the_pages_read_and_names_the_rest(slow_pdf):
    warnings_: list = []
    document = read_pdf("slow.pdf", slow_pdf, None, warnings_, _clock(per_file=500))

    assert "Opening remarks" in document.text and "Closing remarks" not in document.text
    assert document.text.count("x") < 500  # cut within the page, not after it
    assert [span.page for span in document.pages] == [1, 2, 3]
    assert [str(warning) for warning in warnings_] == [
        "slow.pdf: Pages 2 to 3 were left out because reading took longer than the 500 s allowed for this PDF; "
        "split it or print it to a new PDF to include them."
    ]


def test_the_same_pdf_within_its_budget_is_read_fully(slow_pdf):
    warnings_: list = []
    document = read_pdf("slow.pdf", slow_pdf, None, warnings_, _clock(per_file=100_000))

    assert "Closing remarks" in document.text and document.text.count("x") == 3000
    assert warnings_ == []


def test_a_pdf_out_of_time_on_its_first_page_is_skipped_as_a_whole():
    data = _pdf(_glyphs(3000), _text("Never reached"))

    with pytest.raises(Unreadable) as raised:
        read_pdf("first.pdf", data, None, [], _clock(per_file=500))

    assert raised.value.sentence("first.pdf") == (
        "first.pdf took longer than the 500 s allowed for reading it (it may be built to be slow to read); "
        "split it into smaller PDFs or print it to a new PDF."
    )


def test_slow_text_inside_a_form_is_cut_too():
    # pypdf catches every error raised inside a form XObject; the page must still stop there.
    data = _pdf(_text("Cover"), b"q /Fm1 Do Q\n", _text("Appendix"), form=_glyphs(3000))
    warnings_: list = []

    document = read_pdf("form.pdf", data, None, warnings_, _clock(per_file=500))

    assert "Cover" in document.text and "Appendix" not in document.text
    assert [warning.message.split(" were left out")[0] for warning in warnings_] == ["Pages 2 to 3"]


def test_once_the_call_budget_is_spent_further_pdfs_are_skipped_and_say_so(slow_pdf):
    clock = _clock(per_file=1e9, per_call=500)
    warnings_: list = []
    first = read_pdf("one.pdf", slow_pdf, None, warnings_, clock)
    with pytest.raises(Unreadable) as raised:
        read_pdf("two.pdf", _pdf(_text("Fine on its own")), None, warnings_, clock)

    assert "Opening remarks" in first.text
    assert [str(warning) for warning in warnings_] == [
        "one.pdf: Pages 2 to 3 were left out because reading PDFs took longer than the 500 s allowed for one run; "
        "read this PDF in a separate run to include them."
    ]
    assert raised.value.sentence("two.pdf") == (
        "two.pdf could not be read within the 500 s allowed for reading PDFs in one run; read it in a separate run."
    )


def test_an_upload_with_a_slow_pdf_finishes_in_time_and_keeps_the_rest():
    # Real time: 150,000 glyph operators take several seconds to extract; the budget allows one.
    slow = _pdf(_text("Opening remarks"), _glyphs(150_000), _text("Closing remarks"))
    files = [("slow.pdf", slow), ("good.pdf", _pdf(_text("A good page"))), ("notes.txt", b"Plain notes.")]
    budget = PdfBudget(seconds_per_file=1, seconds_per_call=1, seconds_per_mb=0)

    started = time.monotonic()
    result = read_uploaded_documents(files, pdf_budget=budget)
    elapsed = time.monotonic() - started

    assert [document.name for document in result.documents] == ["slow.pdf", "notes.txt"]
    assert "Opening remarks" in result.documents[0].text and "Closing remarks" not in result.documents[0].text
    assert [warning.source for warning in result.warnings] == ["good.pdf", "slow.pdf"]
    assert result.warnings[0].message == (
        "It could not be read within the 1 s allowed for reading PDFs in one run, so it was skipped; "
        "read it in a separate run."
    )
    assert "were left out" in result.warnings[1].message
    assert elapsed < 15  # parsing the page is not interruptible; extracting it whole would take far longer


def test_real_pdfs_read_as_before_within_the_default_budget():
    names = ["pdflatex-4-pages.pdf", "multicolumn.pdf", "google-doc-document.pdf"]
    result = read_documents([PDFS / name for name in names])

    assert [document.name for document in result.documents] == names
    assert result.warnings == []
    assert [len(document.pages) for document in result.documents] == [4, 3, 1]


# ---------------------------------------------------------------- exported cells


KEPT = ["-0.5", "+2", "-1e5", "-1E+05", "-.5", "-3%", "1,000", "-1,000.50", "-1.000,5", "+0", "  -7  ", "12"]
NEUTRALISED = [
    "-2+3", "+A1", "-sum(1)", "=1+1", "@SUM(A1)", "\t=1", "\t-0.5", "-3 degrees at night",
    "-", "+", "--5", "-1e", "-1-1", "+1:1", "-0.5*A1", "-inf", "-nan", "-1+cmd|' /C calc'!A0",
]


@pytest.mark.parametrize("cell", KEPT)
def test_a_plain_number_is_the_users_value_and_stays_as_it_is(cell):
    assert neutralise_formula(cell) == cell


@pytest.mark.parametrize("cell", NEUTRALISED)
def test_a_cell_a_spreadsheet_would_evaluate_is_neutralised(cell):
    safe = neutralise_formula(cell)
    assert safe == "'" + cell


def test_only_a_whole_cell_counts_as_a_number():
    # A spreadsheet reads the whole cell; one with a line break is text whose lines are checked one by one.
    assert neutralise_formula("Temperature\n-0.5") == "Temperature\n'-0.5"
    assert neutralise_formula("-0.5\n") == "'-0.5\n"
    assert neutralise_formula("\r-1") == "'\r'-1"
    assert neutralise_formula("\t-0.5") == "'\t-0.5" and neutralise_formula("-0.5\t") == "'-0.5\t"


# Signs, digits, separators, exponent, percent, and what a formula needs: letters, brackets, references, pipes.
CELL_ALPHABET = ["-", "+", "1", "0", ".", ",", "e", "%", "A", "(", ":", "|", " "]
CALLABLE = re.compile(r"[^0-9.,eE%+\- \u00a0\u202f']")


def test_no_kept_signed_cell_can_call_anything_exhaustively():
    """Every string up to five characters: a kept cell that starts with a sign has nothing a formula calls with."""
    kept_signed = 0
    for length in range(1, 6):
        for letters in itertools.product(CELL_ALPHABET, repeat=length):
            cell = "".join(letters)
            safe = neutralise_formula(cell)
            assert safe in (cell, "'" + cell), repr(cell)
            if safe == cell and cell.lstrip().startswith(("+", "-")):
                kept_signed += 1
                assert not CALLABLE.search(cell), repr(cell)
                # A sign only at the start or after an exponent's e: nothing is added, subtracted or joined.
                assert not re.search(r"[^eE\s][+-]", cell.strip()[1:]), repr(cell)
                assert neutralise_formula(safe) == safe
    assert kept_signed > 100  # the property is not empty: numbers were seen and kept


def _csv_rows(data: bytes, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""), delimiter=delimiter))


def test_safe_csv_gives_numbers_back_unchanged_and_formulas_neutralised():
    frame = pd.DataFrame({"value": KEPT + NEUTRALISED})

    rows = _csv_rows(to_safe_csv(frame))

    assert rows[0] == ["value"]
    assert [row[0] for row in rows[1:]] == KEPT + [neutralise_formula(cell) for cell in NEUTRALISED]
    assert all(row[0].startswith("'") for row in rows[1 + len(KEPT):])


def test_the_improved_question_file_keeps_the_users_signed_numbers(tmp_path):
    source = tmp_path / "questions.csv"
    source.write_text(
        "question;score;note\nWhat is a drum?;-0.5;+2\nWhat is a flute?;+3%;=1+1\nWhy, though?;-1,5;-sum(1)\n",
        encoding="utf-8",
    )
    questions = read_questions(source)

    rows = _csv_rows(exports.improved_csv(questions, ["What is an oboe?"]), delimiter=";")

    header = rows[0]
    table = {name: [row[header.index(name)] for row in rows[1:4]] for name in ("question", "score", "note")}
    assert table == {
        "question": ["What is a drum?", "What is a flute?", "Why, though?"],
        "score": ["-0.5", "+3%", "-1,5"],
        "note": ["+2", "'=1+1", "'-sum(1)"],
    }
    assert rows[4][header.index("question")] == "What is an oboe?"
