"""Read the test-question table: CSV or TSV, any common encoding and delimiter, or JSON.

Files saved by Excel in cp1252, semicolon-separated CSVs, one-column files
whose questions hold commas, empty rows: the reader returns clean data or
raises ``InputError`` saying, in one sentence, what is wrong and what to do.
Test sets written by RAGAS, DeepEval or Giskard (CSV, JSON or JSON lines)
are recognised by their columns (:mod:`coverage_core.inputs.testset_formats`):
their question column is used and one note says how the file was read.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path

import pandas as pd

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.inputs import testset_formats
from coverage_core.inputs.files import read_user_file
from coverage_core.inputs.text import Unreadable, decode_text, looks_binary
from coverage_core.types import IngestWarning, Question, QuestionSet
from coverage_core.validation import listed_columns, resolve_column

# Names of the question column in common tools (RAGAS uses "user_input",
# many exports "query" or "prompt") and languages (German, Spanish, Italian,
# Portuguese, French, Dutch, Swedish), in order of preference. Matching
# ignores case, accents, spaces, underscores and hyphens
# (coverage_core.validation.column_key), so "Questão" matches "questao" and
# "Requête" matches "requete".
QUESTION_COLUMN_NAMES = (
    "question",
    "questions",
    "question_text",
    "query",
    "queries",
    "user_input",
    "user_query",
    "prompt",
    "prompts",
    "frage",
    "fragen",
    "pregunta",
    "preguntas",
    "domanda",
    "domande",
    "questao",
    "questoes",
    "pergunta",
    "perguntas",
    "requete",
    "requetes",
    "vraag",
    "vragen",
    "fraga",
    "fragor",
    "consulta",
    "consultas",
    "input",
    "text",
)

# Delimiters a question table may use; the order breaks ties (a tab in a
# header is almost never part of a column name, a comma sometimes is).
DELIMITERS = ("\t", ";", ",")
_DELIMITER_NAMES = {"\t": "tabs", ";": "semicolons", ",": "commas"}
# A one-column file has no delimiter; parse it with one that cannot occur in
# text (ASCII unit separator) so commas inside questions stay in the cell.
_NO_DELIMITER = "\x1f"
_SNIFF_CHARS = 32_000
MAX_QUESTIONS = 100_000
"""Most distinct questions one analysis measures: every stage after embedding holds a row per question (and
the screener's neighbour search grows faster than that), so a file far larger is refused at once rather than
running for hours or out of memory. Exact repeats do not count: they are measured once."""


def read_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """The question file's table, every column as text, exactly as
    :func:`read_questions` reads it (so a user can pick the question column
    when none was detected)."""
    return _read_table(source, name)[0]


def _read_table(source: str | Path | bytes, name: str | None) -> tuple[pd.DataFrame, str, str | None, str]:
    """(frame, encoding, delimiter, name) of a question file; InputError if unusable."""
    frame, encoding, delimiter, name, _ = _read_file(source, name)
    return frame, encoding, delimiter, name


def _read_file(
    source: str | Path | bytes, name: str | None
) -> tuple[pd.DataFrame, str, str | None, str, list[IngestWarning]]:
    """(frame, encoding, delimiter, name, warnings) of a question file (CSV, TSV or JSON); InputError if unusable."""
    name, data = _question_bytes(source, name)
    if not data.strip():
        raise InputError(
            f"The question file {name} is empty; add a header row such as 'question' "
            "and one question per row."
        )
    if looks_binary(data):
        raise InputError(
            f"The question file {name} is not a text table (it contains binary data, "
            "as an Excel workbook does); save it as CSV and use that file."
        )
    try:
        text, encoding = decode_text(data)
    except Unreadable as problem:  # Shift-JIS read as Latin-1 would be garbled questions counted as English
        raise InputError(problem.sentence(f"The question file {name}")) from None
    if testset_formats.looks_like_json(text, name):
        frame, notes = testset_formats.records_frame(text, name)
        return frame, encoding, ",", name, notes
    delimiter = _detect_delimiter(text)
    return _parse_table(text, delimiter, name), encoding, delimiter, name, []


def read_questions(
    source: str | Path | bytes,
    question_column: str | None = None,
    name: str | None = None,
) -> QuestionSet:
    """Read a question table (CSV or TSV) as the user wrote it.

    ``source`` is a path or the raw bytes of an upload (then ``name`` names it
    in messages). The delimiter (comma, semicolon or tab) and encoding are
    detected; a file without any delimiter in its header is one column of
    questions, which may contain commas. A ``.json`` / ``.jsonl`` file (or
    text starting with ``[`` or ``{``) is read as JSON records
    (:func:`coverage_core.inputs.testset_formats.records_frame`). All columns
    are kept as text in ``frame``; blank question cells are skipped and
    counted, exact repeats are kept and listed in ``duplicates``. A test set
    written by RAGAS, DeepEval or Giskard is recognised by its columns: its
    question column is used (unless ``question_column`` names another) and
    the first warning says, in one sentence, how the file was read.
    """
    frame, encoding, delimiter, name, read_notes = _read_file(source, name)
    tool_format = testset_formats.detect_format(list(frame.columns))
    if tool_format is not None and (question_column is None or not str(question_column).strip()):
        question_column = tool_format.question_column
    column = _question_column(frame, question_column, name)
    questions, n_blank, duplicates = _collect_questions(frame, column, name)
    notes = [*read_notes, *_question_notes(name, column, n_blank, duplicates)]
    if tool_format is not None and column == tool_format.question_column:
        notes.insert(0, IngestWarning(name, _format_note(frame, questions, tool_format)))
    return QuestionSet(
        frame=frame,
        question_column=column,
        questions=questions,
        n_blank=n_blank,
        duplicates=duplicates,
        encoding=encoding,
        # A one-column file has no delimiter; a comma is what an export of it
        # should use (cells containing commas get quoted).
        delimiter=delimiter or ",",
        warnings=notes,
    )


def _format_note(frame: pd.DataFrame, questions: list[Question], tool_format: testset_formats.ToolFormat) -> str:
    """"Read as a RAGAS test set: …": the tool, the questions and how many carry reference passages."""
    with_passages = 0
    if tool_format.context_column is not None:
        cells = frame[tool_format.context_column]
        with_passages = sum(
            bool(testset_formats.reference_passages(cells.iloc[q.row], tool_format.context_style)) for q in questions
        )
    return testset_formats.describe(tool_format, len(questions), with_passages)


def _collect_questions(
    frame: pd.DataFrame, column: str, name: str
) -> tuple[list[Question], int, dict[int, int]]:
    """(questions, blank cells skipped, row of each exact repeat -> row it repeats)."""
    questions: list[Question] = []
    duplicates: dict[int, int] = {}
    first_row: dict[str, int] = {}
    n_blank = 0
    for row, cell in enumerate(frame[column]):
        question = cell.strip()
        if not question:
            n_blank += 1
            continue
        if question in first_row:
            duplicates[row] = first_row[question]
        else:
            first_row[question] = row
            if len(first_row) > MAX_QUESTIONS:
                raise InputError(
                    f"The question file {name} holds more than {MAX_QUESTIONS:,} distinct questions, more than "
                    "one analysis measures; split it into smaller test sets or keep a sample."
                )
        questions.append(Question(row=row, text=question))
    if not questions:
        raise InputError(
            f"The question column '{column}' in {name} is empty in all {len(frame)} rows; "
            "fill it in or choose another question column."
        )
    return questions, n_blank, duplicates


def _question_notes(
    name: str, column: str, n_blank: int, duplicates: dict[int, int]
) -> list[IngestWarning]:
    """Warnings about skipped blank cells and kept repeats."""
    notes: list[IngestWarning] = []
    if n_blank:
        notes.append(
            IngestWarning(
                name,
                f"{wording.count(n_blank, 'row')} with an empty '{column}' cell {wording.plural(n_blank, 'was', 'were')} skipped; "
                "fill them in or delete them.",
            )
        )
    if duplicates:
        row, first = next(iter(duplicates.items()))
        notes.append(
            IngestWarning(
                name,
                f"{wording.count(len(duplicates), 'question')} {wording.plural(len(duplicates), 'repeats', 'repeat')} an earlier one exactly (for example "
                f"row {row + 1} repeats row {first + 1}, counting rows below the header "
                "from 1); each is measured once, as the question it repeats, so delete them if they were not "
                "meant.",
            )
        )
    return notes


def _question_bytes(source: str | Path | bytes, name: str | None) -> tuple[str, bytes]:
    if isinstance(source, bytes):
        return name or "questions", source
    path = Path(source)
    # A regular file only, and never more than the size limit: /dev/zero or a FIFO must not hang the run.
    return name or path.name, read_user_file(path, "question file")


def _detect_delimiter(text: str) -> str | None:
    """Comma, semicolon or tab; None when the header has none (one column).

    csv.Sniffer looks at several lines and so copes with odd headers, but it
    guesses wrong on some files (a comma inside quoted questions of a
    semicolon file). Its answer is kept only if that delimiter occurs in the
    header outside quotes; otherwise the header's most frequent one is used.
    """
    header = next((line for line in text.splitlines() if line.strip()), "")
    counts = {delimiter: _count_outside_quotes(header, delimiter) for delimiter in DELIMITERS}
    if not any(counts.values()):
        return None
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # whole lines only
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        sniffed = None
    if sniffed in counts and counts[sniffed]:
        return sniffed
    return max(DELIMITERS, key=lambda delimiter: counts[delimiter])


def _count_outside_quotes(line: str, character: str) -> int:
    count, quoted = 0, False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == character and not quoted:
            count += 1
    return count


def _quoting(text: str, delimiter: str) -> int:
    """Standard CSV quoting if the file is valid quoted CSV, else quotes are literal.

    Tab-separated exports often contain cells like ``"muddy city," and more``
    that were never meant as CSV quoting; reading them with quoting would
    merge or alter cells.
    """
    try:
        for _ in csv.reader(io.StringIO(text), delimiter=delimiter, strict=True):
            pass
    except csv.Error:
        return csv.QUOTE_NONE
    return csv.QUOTE_MINIMAL


def _parse_table(text: str, delimiter: str | None, name: str) -> pd.DataFrame:
    sep = delimiter or _NO_DELIMITER
    try:
        with warnings.catch_warnings():
            # pandas only warns when a row has more cells than the header and
            # then drops the extra cells; that misreads the file, so fail.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.StringIO(text),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                index_col=False,
                quoting=_quoting(text, sep),
            )
    except pd.errors.EmptyDataError:
        raise InputError(
            f"The question file {name} is empty; add a header row such as 'question' "
            "and one question per row."
        ) from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as error:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(error))
        where = (
            f"line {found[2]} has {found[3]} cells but the header has {found[1]}"
            if found
            else "some rows have more cells than the header"
        )
        separator = _DELIMITER_NAMES.get(sep, "the delimiter")
        raise InputError(
            f"The question file {name} could not be read as a table separated by "
            f"{separator} ({where}); put cells that contain {separator} in double quotes."
        ) from None
    if frame.empty:
        raise InputError(
            f"The question file {name} has a header but no question rows; "
            "add one question per row."
        )
    return frame


def _question_column(frame: pd.DataFrame, wanted: str | None, name: str) -> str:
    columns = [str(column) for column in frame.columns]
    column = resolve_column(columns, wanted, QUESTION_COLUMN_NAMES, what="question", source=name)
    if column is None:
        raise InputError(
            f"No question column found in {name} (columns: {listed_columns(columns)}); choose the "
            "question column, the one that holds the questions."
        )
    return column
