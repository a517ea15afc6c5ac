"""Which documents a test set's source column names for each question, as documents of the run.

The column is the one the retrieval check reads (:func:`coverage_core.checks.retrieval_labels.find_relevant_column`:
the one named, else one named like ``source``, ``relevant_sources`` or ``document``); a generator's
reference-passage column names passages, not documents, and is not read here. A cell's file names are matched to
the run's documents as the retrieval check matches them: without folders, case-folded, with or without the
extension. A question whose cell is blank or names no document of the run has no column source: its source is
then the document it retrieves (:mod:`coverage_core.history.snapshot`).
"""

from __future__ import annotations

from collections.abc import Sequence

from coverage_core.checks.retrieval_labels import (
    find_relevant_column,
    name_key,
    parse_relevant,
    passage_column,
    stem_key,
)
from coverage_core.errors import InputError
from coverage_core.types import QuestionSet

__all__ = ["column_sources", "source_column_of"]


def source_column_of(questions: QuestionSet, column: str | None = None) -> str | None:
    """The test set's column naming each question's source documents: ``column`` when the file has it, else one
    detected by name; None when there is none (or it is the question column or a generator's passage column)."""
    columns = [str(c) for c in questions.frame.columns]
    try:
        found = find_relevant_column(columns, column)
    except InputError:  # a column named for another file (a setting kept from an earlier upload): detect one
        found = find_relevant_column(columns, None)
    if found is None or found == questions.question_column or found == passage_column(questions):
        return None
    return found


def column_sources(questions: QuestionSet, documents: Sequence[str], column: str | None = None
                   ) -> dict[int, tuple[str, ...]]:
    """{question row: the documents of ``documents`` its source-column cell names, in the cell's order}, for the
    questions whose cell names at least one (module docstring); {} without a source column.

    Parameters
    ----------
    questions : QuestionSet, the test set as read (its ``frame`` keeps every column)
    documents : sequence of str, the run's document names
    column : str, optional; the source column to read (None: detected by name)
    """
    found = source_column_of(questions, column)
    if found is None:
        return {}
    by_key: dict[str, list[str]] = {}
    for name in documents:
        key = name_key(name)
        for each in {key, stem_key(key)} - {None}:
            by_key.setdefault(each, []).append(str(name))
    cells = questions.frame[found]
    sources: dict[int, tuple[str, ...]] = {}
    for question in questions.questions:
        try:
            refs = parse_relevant(cells.iloc[question.row])
        except InputError:  # a page 0: the retrieval check says so; here the cell names nothing usable
            continue
        names = [name for ref in refs for name in by_key.get(ref.key, ())]
        if names:
            sources[question.row] = tuple(dict.fromkeys(names))
    return sources
