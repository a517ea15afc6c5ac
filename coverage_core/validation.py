"""Checks and small text helpers shared by every module of the core.

Like scikit-learn's ``utils/validation.py``: each input is checked once, in
one place, and a bad one raises :class:`~coverage_core.errors.InputError`
with one plain sentence saying what to do.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from coverage_core.errors import InputError

__all__ = [
    "check_vectors",
    "column_key",
    "find_column",
    "is_blank",
    "listed_columns",
    "resolve_column",
    "shorten",
    "unit_rows",
]


def shorten(text: Any, limit: int, *, at_word: bool = False) -> str:
    """``text`` on one line (runs of whitespace become one space), at most ``limit`` characters.

    A longer text is cut and ends with "…". ``at_word`` cuts at the last
    space in the second half of the limit, so no word is split (for
    sentences shown to people); otherwise at the limit.
    """
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    if at_word:
        cut = flat.rfind(" ", 0, limit)
        return flat[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"
    return flat[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------
# cells and columns of the question table
# --------------------------------------------------------------------------


def is_blank(value: Any) -> bool:
    """True for a cell that holds nothing: None, NaN, pandas' NA/NaT, or only whitespace."""
    import pandas as pd  # here, so importing this module needs numpy only
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def column_key(name: Any) -> str:
    """How column names are compared: case-folded, without accents, spaces, ``_`` and ``-``.

    ``"Questão"``, ``"questao"`` and ``"QUESTAO"`` have one key; so have
    ``"Is Answerable"`` and ``"is-answerable"``.
    """
    decomposed = unicodedata.normalize("NFKD", str(name))
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    return re.sub(r"[\s_\-]+", "", plain).casefold()


def find_column(columns: Sequence[Any], candidates: Sequence[str]) -> str | None:
    """The first column matching a candidate, ignoring case, spaces, ``_`` and ``-``.

    Candidates are tried in order, so the earlier ones are preferred; the
    column name is returned as spelled in the file (as ``str``).
    """
    by_key: dict[str, str] = {}
    for column in columns:
        by_key.setdefault(column_key(column), str(column))
    for candidate in candidates:
        if (found := by_key.get(column_key(candidate))) is not None:
            return found
    return None


def listed_columns(columns: Sequence[Any], most: int = 20) -> str:
    """``'a', 'b'`` for a message: the first ``most`` columns, then "and N more"; "none" if there are none."""
    names = [str(column) for column in columns]
    if not names:
        return "none"
    shown = ", ".join(f"'{name}'" for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def resolve_column(
    columns: Sequence[Any],
    wanted: str | None,
    candidates: Sequence[str],
    *,
    what: str,
    source: str | None = None,
) -> str | None:
    """The column to use for one role (question, label, relevant source) of a question table.

    ``wanted`` is the name the user gave. None, an empty or an all-whitespace
    name mean "not given": then the first column named like one of
    ``candidates`` (earlier ones preferred, see :func:`find_column`) is
    returned, or None when none is. A given name is matched exactly first,
    then ignoring case, spaces, ``_`` and ``-``; when no column matches,
    :class:`InputError` says so in one sentence that lists the columns.

    Parameters
    ----------
    columns : sequence of column names (str() is applied)
    wanted : str or None
    candidates : sequence of str
        Names to detect the column by, in order of preference.
    what : str
        The role, for the message: "question", "label", "relevant-source".
    source : str, optional
        The file's name, for the message.

    Returns
    -------
    str or None, as spelled in the file
    """
    names = [str(column) for column in columns]
    if wanted is None or not str(wanted).strip():
        return find_column(names, candidates)
    wanted = str(wanted)
    if wanted in names:
        return wanted
    found = find_column(names, [wanted])
    if found is None:
        where = f"the question file {source}" if source else "the question file"
        raise InputError(
            f"The {what} column {wanted!r} is not in {where}; name one of its columns: {listed_columns(names)}."
        )
    return found


# --------------------------------------------------------------------------
# vectors
# --------------------------------------------------------------------------


def check_vectors(x: Any, name: str, *, allow_empty: bool = False, dim: int | None = None) -> np.ndarray:
    """``x`` as a finite 2-d float32 array of shape (rows, dimensions).

    ``allow_empty`` accepts zero rows (an empty 1-d input becomes shape
    ``(0, dim or 0)``); ``dim`` is the number of dimensions the rows must
    have (those of the chunk vectors, which the message names). Anything
    else raises :class:`InputError` naming ``name``.
    """
    try:
        array = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a 2-d array of numbers.") from None
    if array.ndim == 1 and array.size == 0 and allow_empty:
        array = array.reshape(0, dim or 0)
    if array.ndim != 2:
        raise InputError(f"{name} must be a 2-d array (rows, dimensions); got {array.ndim} dimension(s).")
    if array.shape[0] == 0 and not allow_empty:
        raise InputError(f"{name} is empty; at least one row is needed.")
    if dim is not None and array.shape[0] and array.shape[1] != dim:
        raise InputError(
            f"{name} has {array.shape[1]} dimensions but the chunk vectors have {dim}; "
            "embed everything with the same model."
        )
    if not np.isfinite(array).all():
        raise InputError(f"{name} contains NaN or infinite values.")
    return array


def unit_rows(vectors: Any, name: str = "vectors") -> np.ndarray:
    """Rows scaled to length 1; a zero row stays zero (similarity 0 to anything).

    Float input keeps its precision (float64 stays float64); anything else
    becomes float32. The input is not modified. Raises :class:`InputError`
    unless ``vectors`` is 2-d.

    Parameters
    ----------
    vectors : array-like of shape (n, d)
    name : str
        For the message.

    Returns
    -------
    ndarray of shape (n, d)
    """
    array = np.asarray(vectors)
    if not np.issubdtype(array.dtype, np.floating):
        try:
            array = array.astype(np.float32)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a 2-d array of numbers.") from None
    if array.ndim != 2:
        raise InputError(f"{name} must be a 2-d array (rows, dimensions); got {array.ndim} dimension(s).")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0).astype(array.dtype)
