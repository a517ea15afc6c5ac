"""Answerability labels of a question table: which column holds them and what they say.

Labels are floats: 1.0 answerable, 0.0 not answerable, NaN unlabelled. The
statistics over them are in :mod:`coverage_core.checks.answerability`, which
re-exports these names.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.validation import is_blank, resolve_column, shorten

# Names of an answerability label column, in order of preference. Matching
# ignores case, spaces, underscores and hyphens (as for the question column),
# so "Is Answerable" and "is-answerable" match "is_answerable". The generic
# "label" comes last: it is the most likely to mean something else.
ANSWERABLE_COLUMN_NAMES = (
    "answerable",
    "is_answerable",
    "answerability",
    "covered",
    "is_covered",
    "in_corpus",
    "in_knowledge_base",
    "in_kb",
    "has_answer",
    "label",
    "labels",
)

# Accepted spellings, compared after lower-casing and turning runs of spaces,
# underscores and hyphens into one space ("Not_Covered" -> "not covered").
# Numbers are accepted in any float spelling of 1 and 0 ("1", "1.0", "0.00").
POSITIVE_LABELS = ("covered", "yes", "y", "1", "true", "answerable")
NEGATIVE_LABELS = ("not covered", "uncovered", "no", "n", "0", "false", "unanswerable", "not answerable")
# Cells that mean "no label": blanks and the usual missing-value markers.
UNLABELLED_VALUES = ("", "na", "n/a", "nan", "none", "null", "unknown", "?")

_POSITIVE = frozenset(POSITIVE_LABELS)
_NEGATIVE = frozenset(NEGATIVE_LABELS)
_UNLABELLED = frozenset(UNLABELLED_VALUES)
_ACCEPTED = (
    "covered / not covered, yes / no, 1 / 0, true / false, answerable / unanswerable or y / n "
    "(any case), and leave unlabelled rows blank"
)
_MAX_LISTED = 5


def find_label_column(columns: Sequence[str], explicit: str | None = None) -> str | None:
    """The answerability label column of a question table, or None.

    With ``explicit`` (a name the user gave) that column must exist: it is
    matched as :func:`coverage_core.validation.resolve_column` matches
    (exactly, then with case, spaces, ``_`` and ``-`` ignored) and an
    ``InputError`` lists the columns when it is missing. Without it (None or
    blank) the first column named like one of
    :data:`ANSWERABLE_COLUMN_NAMES` is returned, as spelled in the file.
    """
    return resolve_column(columns, explicit, ANSWERABLE_COLUMN_NAMES, what="label")


def _label_key(value: object) -> str:
    return re.sub(r"[\s_\-]+", " ", str(value)).strip().lower()


def _parse_one(value: object) -> float | None:
    """1.0, 0.0, NaN, or None when the value is not a label."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, np.bool_)):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if math.isnan(number):
            return math.nan
        return number if number in (0.0, 1.0) else None
    key = _label_key(value)
    if key in _UNLABELLED:
        return math.nan
    if key in _POSITIVE:
        return 1.0
    if key in _NEGATIVE:
        return 0.0
    try:
        number = float(key)
    except ValueError:
        return None
    return number if number in (0.0, 1.0) else None


def parse_answerable(values, column: str | None = None) -> np.ndarray:
    """Answerability labels as floats: 1.0 answerable, 0.0 not, NaN unlabelled.

    Accepted (case-insensitive; spaces, ``_`` and ``-`` alike): ``covered``,
    ``yes``, ``y``, ``1``, ``true``, ``answerable`` for answerable;
    ``not covered``, ``uncovered``, ``no``, ``n``, ``0``, ``false``,
    ``unanswerable``, ``not answerable`` for not answerable; booleans and the
    numbers 1 and 0 in any form (``1.0``). Blank cells and the markers in
    :data:`UNLABELLED_VALUES` (``NA``, ``n/a``, ``unknown``, ``?`` ...) are
    unlabelled.

    Anything else raises an ``InputError`` naming the offending values (up to
    five, with their row counts) and the accepted spellings. A typo silently
    turned into "unlabelled" would shrink and bias the labelled set without
    anyone noticing, so the user is asked to fix it instead.
    (:func:`question_labels` is more lenient with a column it only guessed.)

    Parameters
    ----------
    values : array-like of shape (m,)
        Strings, booleans, numbers or None, mixed as a CSV column may be.
    column : str, optional
        The column's name, for the message.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    if isinstance(values, (str, bytes)):
        raise InputError("parse_answerable takes a column of labels (one per question), not a single string.")
    items = list(values.tolist() if isinstance(values, (np.ndarray, pd.Series, pd.Index)) else values)
    parsed = np.empty(len(items), dtype=np.float64)
    bad: Counter[str] = Counter()
    for position, value in enumerate(items):
        label = _parse_one(value)
        if label is None:
            bad[" ".join(str(value).split())] += 1
            parsed[position] = math.nan
        else:
            parsed[position] = label
    if bad:
        listed = ", ".join(
            f"{shorten(value, 30)!r} ({count} {wording.plural(count, 'row')})"
            for value, count in bad.most_common(_MAX_LISTED)
        )
        more = f" and {wording.count(len(bad) - _MAX_LISTED, 'other value')}" if len(bad) > _MAX_LISTED else ""
        where = f"The label column {column!r}" if column else "The answerability labels"
        raise InputError(
            f"{where} holds values that are not answerable labels: {listed}{more}; use {_ACCEPTED}."
        )
    return parsed


@dataclass(frozen=True)
class QuestionLabels:
    """The labels of a question set, aligned with its questions.

    ``column`` is the label column used (None: no labels); ``labels`` has one
    float per question in ``QuestionSet.questions`` (all NaN when there is no
    column); ``notes`` holds plain sentences for the user (e.g. why a guessed
    column was not used).
    """

    column: str | None
    labels: np.ndarray
    notes: tuple[str, ...] = field(default=())

    @property
    def n_labelled(self) -> int:
        return int(np.isfinite(self.labels).sum())


def question_labels(questions, label_column: str | None = None) -> QuestionLabels:
    """Find and parse the label column of a :class:`~coverage_core.types.QuestionSet`.

    A column the user named (``label_column``) is parsed strictly: values
    that are not labels raise ``InputError`` (see :func:`parse_answerable`).
    A column only *guessed* from its name (``label`` may well hold topic
    names) is dropped instead when it holds such values, with a note saying
    so and how to use it anyway; the analysis then runs without labels. The
    question column itself is never taken as the label column.

    Returns
    -------
    QuestionLabels, with ``labels`` of shape (len(questions.questions),)
    """
    frame = questions.frame
    rows = np.asarray(questions.rows, dtype=np.intp)
    unlabelled = np.full(len(rows), np.nan)
    explicit = not is_blank(label_column)
    if explicit:
        column = find_label_column(frame.columns, label_column)
    else:
        candidates = [c for c in frame.columns if str(c) != questions.question_column]
        column = find_label_column(candidates)
    if column is None:
        return QuestionLabels(None, unlabelled)
    cells = frame[column].to_numpy(dtype=object)[rows] if len(rows) else np.zeros(0, dtype=object)
    if explicit:
        return QuestionLabels(column, parse_answerable(cells, column))
    try:
        labels = parse_answerable(cells, column)
    except InputError as error:
        return QuestionLabels(
            None,
            unlabelled,
            (
                f"Column {column!r} was not used as answerability labels: {error} "
                "If it is not a label column, ignore this.",
            ),
        )
    notes = ()
    if not np.isfinite(labels).any():
        notes = (f"Column {column!r} looks like an answerability label column but every cell is blank.",)
    return QuestionLabels(column, labels, notes)


def binary_labels(labels, m: int) -> np.ndarray:
    """Answerability labels as floats in {1, 0, NaN}, one per question; strings are parsed.

    Numbers must be 1 (answerable), 0 (not) or NaN (unlabelled); strings and
    mixed columns go through :func:`parse_answerable`. A wrong length or any
    other value raises ``InputError``.

    Parameters
    ----------
    labels : array-like of shape (m,)
    m : int, the number of questions

    Returns
    -------
    ndarray of shape (m,), float64
    """
    array = np.asarray(labels)
    if array.ndim != 1 or array.shape[0] != m:
        raise InputError(
            f"labels must hold one answerability label per question ({m}); got shape {array.shape}."
        )
    if array.dtype.kind in "biuf":
        values = array.astype(np.float64)
        known = values[~np.isnan(values)]
        if not np.isin(known, (0.0, 1.0)).all():
            odd = sorted(set(known[~np.isin(known, (0.0, 1.0))].tolist()))[:_MAX_LISTED]
            raise InputError(
                f"Numeric answerability labels must be 1 (answerable), 0 (not answerable) or NaN "
                f"(unlabelled); found {', '.join(repr(v) for v in odd)}."
            )
        return values
    return parse_answerable(array)
