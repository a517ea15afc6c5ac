"""Checks and small text helpers shared by every module of the core.

Like scikit-learn's ``utils/validation.py``: each input is checked once, in
one place, and a bad one raises :class:`~coverage_core.errors.InputError`
with one plain sentence saying what to do.
"""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from coverage_core import wording
from coverage_core.errors import InputError

__all__ = [
    "SettingError",
    "all_finite",
    "check_scalar",
    "check_vectors",
    "column_key",
    "find_column",
    "is_blank",
    "is_number",
    "is_whole",
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
# numbers and settings
# --------------------------------------------------------------------------


def is_whole(value: Any) -> bool:
    """True for an int or numpy integer; bool is an int subclass but ``True`` as a count is surely a mistake."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_number(value: Any) -> bool:
    """True for a real number (int, float or their numpy kinds, NaN included); never for bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class SettingError(InputError):
    """An :class:`InputError` about one named setting.

    ``setting`` is the field name given to :func:`check_scalar` (its ``name`` without one) and
    ``requirement`` the rest of the sentence ("must be at least 1 (got 0)."),
    so a caller can name the setting its own way: the CLI says ``--multi-n``.
    """

    def __init__(self, message: str, setting: str | None = None, requirement: str | None = None):
        super().__init__(message)
        self.setting = setting
        self.requirement = requirement


_BOUNDARIES = ("both", "left", "right", "neither")


def check_scalar(
    x: Any,
    name: str,
    target_type: type | tuple[type, ...],
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: str = "both",
    hint: str | None = None,
    field: str | None = None,
):
    """``x`` if it is a finite number of ``target_type`` within the bounds; else :class:`SettingError`.

    Modelled on scikit-learn's ``check_scalar``, with one plain sentence
    instead of its TypeError/ValueError: "The multi-cluster N must be at
    least 1 (got 0)." ``int`` (or ``numbers.Integral``) accepts numpy
    integers and refuses bool and floats; ``float`` (or ``numbers.Real``)
    accepts any real number but bool; NaN and infinities are always refused.

    Parameters
    ----------
    x : object
    name : str
        The setting as the message names it: a parameter name (``"top_k"``,
        ``"--k"``) is used as it is, a name in words (``"the random seed"``)
        starts the sentence capitalised.
    target_type : type or tuple of types
    min_val, max_val : number, optional
        The bounds; None leaves that side open.
    include_boundaries : {"both", "left", "right", "neither"}, default "both"
        Which bounds ``x`` may equal, as in scikit-learn.
    hint : str, optional
        Ends the sentence after a semicolon, e.g. which values are sensible.
    field : str, optional
        The setting's field name (``"n_clusters"``), carried by the error as
        ``setting`` so a caller maps it to its own name (the CLI's flag)
        without reading the sentence; ``name`` when not given.

    Returns
    -------
    x, unchanged
    """
    if include_boundaries not in _BOUNDARIES:
        raise ValueError(f"include_boundaries must be one of {', '.join(_BOUNDARIES)}; got {include_boundaries!r}.")
    types = target_type if isinstance(target_type, tuple) else (target_type,)
    whole = all(issubclass(kind, numbers.Integral) for kind in types)
    right_type = is_whole(x) if whole else is_number(x)
    finite = right_type and math.isfinite(x)
    inside = finite and _within(x, min_val, max_val, include_boundaries)
    if inside:
        return x
    bounds = _bounds_phrase(min_val, max_val, include_boundaries)
    if not right_type:
        kind = "a whole number" if whole else "a number"
    elif not finite and (min_val is None or max_val is None):
        kind = "a finite number"  # the bounds alone would not rule it out
    else:
        kind = ""
    if kind and bounds.startswith("at "):
        bounds = "of " + bounds
    requirement = f"must be {' '.join(part for part in (kind, bounds) if part)} (got {_shown(x)})"
    requirement += f"; {hint}." if hint else "."
    raise SettingError(f"{_subject(name)} {requirement}", setting=field or name, requirement=requirement)


def _within(x, low, high, include_boundaries: str) -> bool:
    closed_low = include_boundaries in ("both", "left")
    closed_high = include_boundaries in ("both", "right")
    above = low is None or (x >= low if closed_low else x > low)
    below = high is None or (x <= high if closed_high else x < high)
    return above and below


def _bounds_phrase(low, high, include_boundaries: str) -> str:
    """"between 0 and 1", "greater than 0 and at most 2", "at least 1" …; "" without bounds."""
    closed_low = include_boundaries in ("both", "left")
    closed_high = include_boundaries in ("both", "right")
    if low is not None and high is not None and closed_low and closed_high:
        return f"between {_shown(low)} and {_shown(high)}"
    lower = None if low is None else f"{'at least' if closed_low else 'greater than'} {_shown(low)}"
    upper = None if high is None else f"{'at most' if closed_high else 'less than'} {_shown(high)}"
    return " and ".join(part for part in (lower, upper) if part)


def _shown(value: Any) -> str:
    """A value as a user would write it: 2 for 2.0, nan, inf; repr for anything not a number."""
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    return str(value) if is_whole(value) else repr(value)


def _subject(name: str) -> str:
    """``name`` starting a sentence: a name in words capitalised, a parameter or flag name as it is."""
    return name[:1].upper() + name[1:] if " " in name else name


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

    ``wanted`` None, empty or all whitespace means "not given": then the first column named like one of
    ``candidates`` (earlier ones preferred, see :func:`find_column`), or None when none is. A given name is
    matched exactly first, then ignoring case, spaces, ``_`` and ``-``, so a typed name need not be exact.

    Parameters
    ----------
    columns : sequence of column names (str() is applied)
    wanted : str or None, the name the user gave
    candidates : sequence of str, names to detect the column by, in order of preference
    what : str, the role, for the message: "question", "label", "relevant-source"
    source : str, optional, the file's name, for the message

    Returns
    -------
    str or None, as spelled in the file

    Raises
    ------
    InputError
        A given name matches no column; the one sentence lists the columns.
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
        raise InputError(f"{name} must be a 2-d array (rows, dimensions); got {wording.count(array.ndim, 'dimension')}.")
    if array.shape[0] == 0 and not allow_empty:
        raise InputError(f"{name} is empty; at least one row is needed.")
    if dim is not None and array.shape[0] and array.shape[1] != dim:
        raise InputError(
            f"{name} has {array.shape[1]} dimensions but the chunk vectors have {dim}; "
            "embed everything with the same model."
        )
    if not all_finite(array):
        raise InputError(f"{name} contains NaN or infinite values.")
    return array


# Rows checked for NaN and infinity at a time: a 6 MB mask at 384 dimensions, reused from the allocator's
# cache, where one mask of a million rows is a fresh 384 MB mapping that costs more in page faults than the check.
_FINITE_CHECK_ROWS = 16_384


def all_finite(array: np.ndarray) -> bool:
    """Whether every value of a 2-d float ``array`` is finite, checked in row blocks."""
    return all(np.isfinite(array[start : start + _FINITE_CHECK_ROWS]).all()
               for start in range(0, array.shape[0], _FINITE_CHECK_ROWS))


def unit_rows(vectors: Any, name: str = "vectors", *, copy: bool = True, out: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled to length 1; a zero row stays zero (similarity 0 to anything).

    The one place where the core normalises vectors. Float input keeps its
    precision (float64 stays float64); anything else becomes float32.

    Parameters
    ----------
    vectors : array-like of shape (n, d)
    name : str, for the message
    copy : bool, default True
        False lets the result be ``vectors`` itself, untouched, when it is a C-contiguous float32 array of
        unit rows (squared length within 2e-6 of 1, or 0); else a new array. Why: docs/developing.md, *Unit rows*.
    out : ndarray of shape (n, d), optional
        Where to write the result; ``out=vectors`` normalises a float array the caller gives up
        in place. The lengths are then summed in float64 without an (n, d) temporary.

    Returns
    -------
    ndarray of shape (n, d)

    Raises
    ------
    InputError
        Unless ``vectors`` is a 2-d array of numbers.
    """
    array = np.asarray(vectors)
    if not np.issubdtype(array.dtype, np.floating):
        try:
            array = array.astype(np.float32)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a 2-d array of numbers.") from None
    if array.ndim != 2:
        raise InputError(f"{name} must be a 2-d array (rows, dimensions); got {wording.count(array.ndim, 'dimension')}.")
    if out is not None:
        norms = np.sqrt(np.einsum("ij,ij->i", array, array, dtype=np.float64))
        return np.divide(array, np.where(norms > 0, norms, 1.0).astype(array.dtype)[:, None], out=out)
    if not copy and _has_unit_rows(array):
        return array
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0).astype(array.dtype)


def _has_unit_rows(array: np.ndarray) -> bool:
    """Whether ``array`` can serve as unit rows as it is (see ``copy`` in :func:`unit_rows`)."""
    if array.dtype != np.float32 or not array.flags.c_contiguous:
        return False
    squared = np.einsum("ij,ij->i", array, array)
    return bool(np.all((np.abs(squared - 1.0) <= 2e-6) | (squared == 0.0)))
