"""Test sets written by generators (RAGAS, DeepEval, Giskard): JSON records and their columns.

:func:`coverage_core.inputs.questions.read_questions` calls this module, so
every reader of question files (command line, dashboard upload, Compare page)
gets these formats with no column to choose. The formats, as the tools write
them:

* **RAGAS** ``Testset`` (v0.2 and later): ``user_input``,
  ``reference_contexts`` (a list of passages), ``reference`` (the answer),
  ``synthesizer_name``; ``to_jsonl`` writes one JSON object per line,
  ``to_csv`` / ``to_pandas().to_csv`` write the list as a Python list
  literal (``['…', '…']``). Older testsets (v0.1): ``question``,
  ``contexts``, ``ground_truth``, ``evolution_type``. In an *evaluation*
  dataset of v0.1 (it has an ``answer`` column) ``contexts`` are what the
  RAG system retrieved, not references, so they are not used.
* **DeepEval** goldens (``EvaluationDataset.save_as``): ``input``,
  ``actual_output``, ``expected_output``, ``context`` (a list of passages),
  ``source_file``; as a JSON array of objects, or as CSV where the context
  passages are joined with ``|``.
* **Giskard** ``QATestset.save``: JSON lines with ``id``, ``question``,
  ``reference_answer``, ``reference_context`` (one string: the passages as
  ``Document <id>: <text>`` joined by blank lines), ``conversation_history``
  and ``metadata``.

:func:`records_frame` turns JSON (an array of objects, JSON lines, an object
of columns, or an object holding one such array) into the all-text table the
question reader keeps: lists and objects are kept as JSON text.
:func:`detect_format` names the tool from the columns, and
:func:`reference_passages` reads one context cell, whichever way it was
written, into its passages.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from coverage_core import bounded_json
from coverage_core.errors import InputError
from coverage_core.types import IngestWarning
from coverage_core.validation import is_blank
from coverage_core.wording import count, plural

__all__ = [
    "ToolFormat",
    "describe",
    "detect_format",
    "is_format_note",
    "looks_like_json",
    "parse_list_cell",
    "records_frame",
    "reference_passages",
]

# How a tool writes several passages in one context cell.
LIST = "list"  # a JSON or Python list literal (RAGAS, DeepEval JSON)
PIPE = "pipe"  # DeepEval's CSV: the passages joined with "|"
DOCUMENTS = "documents"  # Giskard: "Document <id>: <text>" blocks joined by blank lines

# Keys of a JSON object that hold the records themselves ({"goldens": [...]}).
_RECORD_KEYS = ("samples", "goldens", "data", "records", "rows", "questions", "test_cases", "testset", "items")
_GISKARD_DOCUMENT = re.compile(r"(?:^|\n\s*\n)\s*Document [^\n:]{1,100}:[ \t]*")
# Longest list literal parsed as a list (ast.literal_eval on huge cells is slow).
_MAX_LITERAL_CHARS = 2_000_000
_JSON_ADVICE = "save it as a JSON array of objects or as JSON lines (one object per line)"


@dataclass(frozen=True)
class ToolFormat:
    """A test set written by a generator: which tool, and which column holds what.

    ``context_column`` holds each question's reference passages (None when
    the file has none); ``context_style`` says how one cell holds several
    (:data:`LIST`, :data:`PIPE` or :data:`DOCUMENTS`).
    """

    tool: str
    question_column: str
    context_column: str | None = None
    answer_column: str | None = None
    context_style: str = LIST


def _by_name(columns: Sequence[object]) -> dict[str, str]:
    """Lower-cased, stripped name -> the column as spelled (first one wins)."""
    names: dict[str, str] = {}
    for column in columns:
        names.setdefault(str(column).strip().casefold(), str(column))
    return names


def detect_format(columns: Sequence[object]) -> ToolFormat | None:
    """The generator that wrote a table with these columns, or None for any other table.

    Giskard: ``question`` with ``reference_context`` or ``reference_answer``.
    RAGAS: ``user_input`` with ``reference_contexts``, ``reference`` or
    ``synthesizer_name``; or (v0.1) ``question`` with ``ground_truth`` and
    ``contexts`` or ``evolution_type``. DeepEval: ``input`` with
    ``expected_output``, ``context``, ``actual_output``, ``retrieval_context``
    or ``source_file``. Names match ignoring case and surrounding spaces.
    """
    names = _by_name(columns)
    has = names.__contains__
    if has("question") and (has("reference_context") or has("reference_answer")):
        return ToolFormat("Giskard", names["question"], names.get("reference_context"),
                          names.get("reference_answer"), DOCUMENTS)
    if has("user_input") and (has("reference_contexts") or has("reference") or has("synthesizer_name")):
        return ToolFormat("RAGAS", names["user_input"], names.get("reference_contexts"), names.get("reference"))
    truth = names.get("ground_truth") or names.get("ground_truths")
    if has("question") and truth and (has("contexts") or has("evolution_type")):
        # With an "answer" column this is an evaluation dataset: its contexts were retrieved, not references.
        context = None if has("answer") else names.get("contexts")
        return ToolFormat("RAGAS", names["question"], context, truth)
    deepeval = ("expected_output", "context", "actual_output", "retrieval_context", "source_file")
    if has("input") and any(has(name) for name in deepeval):
        return ToolFormat("DeepEval", names["input"], names.get("context"), names.get("expected_output"), PIPE)
    return None


def parse_list_cell(cell) -> list[str] | None:
    """The items of a cell holding a list literal (JSON, or Python as ``str(list)`` writes it); None otherwise.

    Items that are not text are kept as their JSON (or ``str``) form; blank
    items are dropped, lone surrogates become U+FFFD. A list nested more than
    :data:`~coverage_core.bounded_json.MAX_DEPTH` deep (a cell of
    brackets) is no list of passages: None.
    """
    if is_blank(cell):
        return None
    text = str(cell).strip()
    if not (text.startswith("[") and text.endswith("]")) or len(text) > _MAX_LITERAL_CHARS:
        return None
    try:
        value = bounded_json.loads(text, what="The cell")
    except bounded_json.JSONError as error:
        if error.kind != "syntax":  # nested too deep for a list of passages: the cell is one passage
            return None
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        # A Python literal may nest (up to the parser's 200 levels) and spell lone surrogates ('\ud800').
        if bounded_json.depth_over(value, bounded_json.MAX_DEPTH):
            return None
        value = bounded_json.clean_value(value)
    if not isinstance(value, (list, tuple)):
        return None
    return [item.strip() if isinstance(item, str) else _as_text(item) for item in value if not is_blank(item)]


def reference_passages(cell, style: str = LIST) -> tuple[str, ...]:
    """The reference passages in one context cell, in order, without blanks or repeats.

    A list literal gives its items (whatever the style); otherwise a
    :data:`PIPE` cell is split at ``|``, a :data:`DOCUMENTS` cell at its
    ``Document <id>:`` headers (which are dropped), and a :data:`LIST` cell
    is one passage.
    """
    if is_blank(cell):
        return ()
    items = parse_list_cell(cell)
    if items is None:
        text = str(cell)
        if style == PIPE:
            items = text.split("|")
        elif style == DOCUMENTS:
            items = _GISKARD_DOCUMENT.split(text)
        else:
            items = [text]
    elif style == DOCUMENTS:
        items = [part for item in items for part in _GISKARD_DOCUMENT.split(item)]
    passages = (" ".join(item.split()) for item in items)
    return tuple(dict.fromkeys(passage for passage in passages if passage))




NOTE_PREFIX = "Read as a "


def is_format_note(message: object) -> bool:
    """Whether a reader's warning (``str(IngestWarning)`` or its message) is the sentence of :func:`describe`."""
    text = str(message)
    return text.startswith(NOTE_PREFIX) or (": " + NOTE_PREFIX) in text and " test set: " in text


def describe(tool_format: ToolFormat, n_questions: int, n_with_passages: int) -> str:
    """The one sentence telling the user how the file was read."""
    head = f"{NOTE_PREFIX}{tool_format.tool} test set: {count(n_questions, 'question')}"
    if tool_format.context_column is None or n_with_passages == 0:
        return f"{head} (without reference passages)."
    if n_with_passages >= n_questions:
        return f"{head} with {'its' if n_questions == 1 else 'their'} reference passages."
    return f"{head}, {n_with_passages:,} of them with their reference passages."


def looks_like_json(text: str, name: str) -> bool:
    """True for a ``.json`` / ``.jsonl`` file, or text that starts like JSON (``[`` or ``{``)."""
    if name.casefold().endswith((".json", ".jsonl", ".ndjson")):
        return True
    return text.lstrip("\ufeff \t\r\n")[:1] in ("[", "{")


def records_frame(text: str, name: str) -> tuple[pd.DataFrame, list[IngestWarning]]:
    """The table of a JSON test set, every cell as text, and a warning per skipped line.

    Reads a JSON array of objects, JSON lines (one object per line, as
    RAGAS's ``to_jsonl`` and Giskard's ``save`` write), an object of
    equal-length columns (``{"user_input": [...], ...}``, or pandas'
    ``{"column": {"0": ...}}``), or an object holding one array of records
    (``{"goldens": [...]}``). Columns are the keys in order of first
    appearance; lists and objects become JSON text, null an empty cell;
    lone surrogates (``"\\ud800"``) become U+FFFD. Parsing is bounded
    (:func:`coverage_core.bounded_json.loads`): a line nested more than
    :data:`~coverage_core.bounded_json.MAX_DEPTH` deep is skipped like
    any unreadable line. Raises InputError, in one sentence, when no record
    can be read.
    """
    body = text.lstrip("\ufeff \t\r\n")
    warnings: list[IngestWarning] = []
    try:
        value = bounded_json.loads(body, what=f"The question file {name}", advice=_JSON_ADVICE)
    except bounded_json.JSONError as error:
        # JSON lines fail as one document ("Extra data"), and so does a file whose one bad line is nested too
        # deep: each line is read on its own, and only a file without any readable line is refused.
        records, warnings = _json_lines(body, name, error)
    else:
        records = _records(value, name)
    frame = _frame(records)
    if frame.empty:
        raise InputError(f"The question file {name} holds no records; add one object per question.")
    return frame, warnings


def _records(value, name: str) -> list[dict]:
    if isinstance(value, list):
        records = [item for item in value if isinstance(item, dict)]
        if value and not records:
            raise InputError(
                f"The question file {name} is a JSON list but not of objects; write one object per question, "
                'such as {"question": "…"}.'
            )
        return records
    if isinstance(value, dict):
        for key in _RECORD_KEYS:
            if isinstance(value.get(key), list) and any(isinstance(item, dict) for item in value[key]):
                return [item for item in value[key] if isinstance(item, dict)]
        columns = {str(key): column for key, column in value.items() if isinstance(column, (list, dict))}
        lengths = {len(column) for column in columns.values()}
        if columns and len(columns) == len(value) and len(lengths) == 1:
            return _column_records(columns)
        return [value]
    raise InputError(f"The question file {name} is JSON but holds no records; write one object per question.")


def _column_records(columns: dict) -> list[dict]:
    """Records of ``{"column": [values]}`` or pandas' ``{"column": {"row": value}}``."""
    rows: dict[str, dict] = {}
    for column, values in columns.items():
        pairs = values.items() if isinstance(values, dict) else enumerate(values)
        for row, value in pairs:
            rows.setdefault(str(row), {})[column] = value
    return list(rows.values())


def _json_lines(body: str, name: str, error: bounded_json.JSONError) -> tuple[list[dict], list[IngestWarning]]:
    """The objects of the lines of ``body`` and a warning naming the lines that are none; when no line is
    one, InputError: ``error`` (the whole file's) when it was nested too deep, else a sentence with its detail."""
    records: list[dict] = []
    bad: list[int] = []
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = bounded_json.loads(line, what=f"Line {number} of {name}")
        except bounded_json.JSONError:
            bad.append(number)
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            bad.append(number)
    if not records:
        if error.kind != "syntax":
            raise error
        raise InputError(f"The question file {name} could not be read as JSON ({error.detail}); {_JSON_ADVICE}.")
    warnings = []
    if bad:
        shown = ", ".join(str(number) for number in bad[:5]) + (" …" if len(bad) > 5 else "")
        warnings.append(IngestWarning(
            name,
            f"{count(len(bad), 'line')} ({shown}) could not be read as a JSON object and "
            f"{plural(len(bad), 'was', 'were')} skipped; fix or delete {plural(len(bad), 'it', 'them')}.",
        ))
    return records, warnings


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _frame(records: list[dict]) -> pd.DataFrame:
    columns = list(dict.fromkeys(str(key) for record in records for key in record))
    data = {column: [_as_text(record.get(column)) for record in records] for column in columns}
    return pd.DataFrame(data, columns=columns, dtype=str)
