"""CSV that any reader splits into the same rows and no spreadsheet runs as formulas (OWASP "CSV injection")."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FORMULA_PREFIXES", "neutralise_formula", "to_safe_csv"]

# Spreadsheet programs run a cell that starts with one of these as a formula
# (OWASP "CSV injection", which lists tab and carriage return too; ASVS 1.2.10
# adds NUL). Leading whitespace is looked past: importers may trim it.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0")

# A spreadsheet reads a cell that parses as a number as that number, sign or
# not (-0.5, +2, -1e5, -.5, -3%, -1,000.50), not as a formula; neutralising
# it would turn the user's value into text. Such a cell cannot call anything
# even where it were evaluated: no letter but an exponent's e, no operator but
# signs. Separators of every locale count, as the reader's locale is unknown.
_SIGNED_NUMBER = re.compile(r"[+-](?:[0-9]+(?:[.,'\u00a0\u202f][0-9]+)*[.,]?|[.,][0-9]+)(?:[eE][+-]?[0-9]+)?%?")

# Where a CSV reader or a spreadsheet starts a new line: a reader that ignores
# quotes, or someone pasting the text, starts a new row there.
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def _starts_formula(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula, looking past leading whitespace."""
    head = text.lstrip()
    lead = text[: len(text) - len(head)]
    return head.startswith(FORMULA_PREFIXES) or any(prefix in lead for prefix in FORMULA_PREFIXES)


def neutralise_formula(cell: Any) -> Any:
    """A text cell with ``'`` put before every line a spreadsheet could run as a formula.

    The cell as a whole is checked too, since one that starts with a line
    break starts with a carriage return or whitespace: ``"\\r=1+1"`` becomes
    ``"'\\r'=1+1"``. A cell that is a signed plain number (``-0.5``, ``+2``,
    ``-3%``, spaces around it allowed) is a value, not a formula, and is kept
    as it is; a line of a longer cell is not, since a spreadsheet reads the
    whole cell, which is then no number. Nothing else changes, so removing
    the added ``'`` gives the cell back. Idempotent; values that are not text
    are returned as they are.
    """
    if not isinstance(cell, str) or _SIGNED_NUMBER.fullmatch(cell.strip(" ")):
        return cell
    pieces = _LINE_BREAK.split(cell)  # lines at even positions, the breaks between them
    for i in range(0, len(pieces), 2):
        if _starts_formula(pieces[i]) or (i == 0 and _starts_formula(cell)):
            pieces[i] = "'" + pieces[i]
    return "".join(pieces)


def _safe_value(value: Any) -> Any:
    """A value as to_safe_csv writes it: text neutralised, numbers, booleans and blanks kept."""
    if isinstance(value, str):
        return neutralise_formula(value)
    if value is None or value is pd.NA or value is pd.NaT or isinstance(value, (bool, int, np.bool_, np.integer)):
        return value
    if isinstance(value, (float, np.floating)):
        # An infinity is written as the text "-inf", which a spreadsheet reads as a formula.
        return neutralise_formula(str(float(value))) if math.isinf(value) else value
    return neutralise_formula(str(value))


def to_safe_csv(frame: pd.DataFrame, delimiter: str = ",") -> bytes:
    """``frame`` as CSV that any reader splits into the same rows and no spreadsheet runs as formulas.

    Every text cell and header goes through :func:`neutralise_formula` and is
    written in double quotes; numbers and booleans are written bare, as
    values. ``delimiter`` separates cells (a question file's export keeps the
    file's own). UTF-8 with a BOM, so Excel reads accents; CRLF line ends (RFC 4180).
    """
    safe = frame.map(_safe_value)
    safe.columns = [neutralise_formula(str(column)) for column in frame.columns]
    buffer = io.StringIO()
    # Quoting every text cell, not only those with a quote, the delimiter, CR or
    # LF: pandas drops a row whose only cell is whitespace unless it is quoted.
    safe.to_csv(buffer, index=False, sep=delimiter, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)
    return buffer.getvalue().encode("utf-8-sig")
