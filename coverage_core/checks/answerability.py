"""Answerability analysis: does a question's best similarity predict whether
the knowledge base can answer it?

A question table may carry a label saying, for each question, whether the
corpus answers it (``covered`` / ``not covered``, ``yes`` / ``no`` ...). With
such labels this module measures how well each question's best cosine
similarity to any chunk separates the two groups, and which similarity
threshold separates them best, so the dashboard's "the knowledge base may
not answer this" threshold can be set from data instead of by eye.

Functions are pure and take plain arrays, like :mod:`coverage_core.metrics`:

* labels: :data:`ANSWERABLE_COLUMN_NAMES`, :func:`find_label_column`, :func:`binary_labels`,
  :func:`parse_answerable`, :func:`question_labels`;
* statistics: :func:`answerability` (point-biserial r, AUROC, Youden
  threshold) and :func:`answerability_section` (its report entry);
* dimensions: :func:`dimension_sweep` (how the per-question similarities
  change with fewer embedding dimensions) and :func:`truncation_note`;
* a map: :func:`mds_points` (metric MDS on 1 - cosine, via
  :func:`coverage_core.outputs.projection.project_2d`) and :func:`mds_frames`.

Labels are floats: 1.0 answerable, 0.0 not answerable, NaN unlabelled.

scipy and scikit-learn are imported inside the functions that need them, so
importing this module (as :mod:`coverage_core.outputs.plots` does) stays cheap.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coverage_core import metrics
from coverage_core.errors import InputError
from coverage_core.validation import check_vectors, is_blank, resolve_column, shorten

__all__ = [
    "ANSWERABLE_COLUMN_NAMES",
    "AnswerabilityResult",
    "DEFAULT_FITNESS_THRESHOLD",
    "DEFAULT_MDS_POINTS",
    "DEFAULT_SWEEP_DIMS",
    "MdsPoints",
    "NEGATIVE_LABELS",
    "POSITIVE_LABELS",
    "QuestionLabels",
    "UNLABELLED_VALUES",
    "answerability",
    "answerability_section",
    "binary_labels",
    "dimension_sweep",
    "find_label_column",
    "mds_frames",
    "mds_points",
    "parse_answerable",
    "question_labels",
    "truncation_note",
]

DEFAULT_FITNESS_THRESHOLD = 0.4
"""Best similarity below which a question is marked "the knowledge base may
not answer this" until the user (or labelled data, see :func:`answerability`)
sets another: the one default of the knowledge-base fitness view, the HTML
report and the dashboard."""

# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------

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
            f"{shorten(value, 30)!r} ({count} row{'s' if count > 1 else ''})"
            for value, count in bad.most_common(_MAX_LISTED)
        )
        more = f" and {len(bad) - _MAX_LISTED} other value(s)" if len(bad) > _MAX_LISTED else ""
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


def _similarities(similarities) -> np.ndarray:
    try:
        array = np.asarray(similarities, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("similarities must be numbers (each question's best similarity to any chunk).") from None
    if array.ndim != 1:
        raise InputError(
            f"similarities must be a 1-d array (one best similarity per question); got shape {array.shape}."
        )
    return array


# --------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerabilityResult:
    """Result of :func:`answerability`; fields that cannot be computed are NaN and
    ``note`` says why in plain words."""

    n_labelled: int
    n_answerable: int
    n_unanswerable: int
    point_biserial_r: float
    p_value: float
    auroc: float
    threshold: float
    youden_j: float
    sensitivity: float
    specificity: float
    note: str | None = None


def answerability(similarities, labels) -> AnswerabilityResult:
    """How well each question's best similarity to any chunk predicts its label.

    Only labelled questions count. With ``s_i`` a question's best similarity
    (``metrics.question_support``), ``A`` the answerable and ``U`` the
    not-answerable questions, ``n_1 = |A|``, ``n_0 = |U|``, ``n = n_1 + n_0``:

    * **Point-biserial correlation** (``scipy.stats.pointbiserialr``), the
      Pearson correlation between the 0/1 label and ``s``::

          r = (mean_A s - mean_U s) / sd(s) * sqrt(n_1 n_0 / n^2)

      with ``sd`` the population standard deviation over all ``n``. Positive:
      answerable questions sit closer to the corpus. ``p_value`` is the
      two-sided test of ``r = 0``, ``t = r sqrt((n - 2) / (1 - r^2))`` on
      ``n - 2`` degrees of freedom.
    * **AUROC** (``sklearn.metrics.roc_auc_score``), the chance that a random
      answerable question has a higher best similarity than a random
      not-answerable one, ties counting half::

          AUROC = (1 / (n_1 n_0)) sum_{i in A} sum_{j in U} ([s_i > s_j] + [s_i = s_j] / 2)

      0.5 is chance, 1.0 perfect separation.
    * **Youden threshold** (from ``sklearn.metrics.roc_curve``). Calling a
      question answerable when ``s >= t``::

          TPR(t) = |{i in A : s_i >= t}| / n_1
          FPR(t) = |{j in U : s_j >= t}| / n_0
          J(t)   = TPR(t) - FPR(t)

      J is evaluated at every distinct observed score. At the best score
      ``s*`` the reported ``threshold`` is the midpoint between ``s*`` (the
      lowest score still called answerable) and the next lower observed score
      (the highest called not answerable), so it can be put on a slider:
      questions with ``s < threshold`` are the ones "the knowledge base may
      not answer". Ties in J go to the highest threshold (fewest false
      "answerable" calls; more questions flagged). ``youden_j``,
      ``sensitivity = TPR`` and ``specificity = 1 - FPR`` are reported at it.
      If no cut does better than chance (max J = 0) the threshold is NaN.

    Degenerate inputs never raise: with fewer than 2 labelled questions, or
    only one class, every statistic is NaN; with all labelled similarities
    equal, ``r``, ``p_value`` and the threshold are NaN and AUROC is 0.5 (all
    pairs tied). ``note`` then says what is missing.

    Parameters
    ----------
    similarities : array-like of shape (m,)
        Each question's best similarity to any chunk, finite where labelled.
    labels : array-like of shape (m,)
        1 / 0 / NaN floats, booleans, or raw label strings (parsed with
        :func:`parse_answerable`).

    Returns
    -------
    AnswerabilityResult
    """
    scores = _similarities(similarities)
    y = binary_labels(labels, scores.shape[0])
    labelled = ~np.isnan(y)
    if not np.isfinite(scores[labelled]).all():
        raise InputError("similarities contains NaN or infinite values for labelled questions.")
    s, y = scores[labelled], y[labelled]
    n = int(s.shape[0])
    n_1 = int((y == 1.0).sum())
    n_0 = n - n_1
    nan = math.nan
    empty = dict(point_biserial_r=nan, p_value=nan, auroc=nan, threshold=nan, youden_j=nan,
                 sensitivity=nan, specificity=nan)
    counts = dict(n_labelled=n, n_answerable=n_1, n_unanswerable=n_0)
    if n < 2:
        return AnswerabilityResult(
            **counts, **empty,
            note=f"Only {n} question(s) carry an answerability label; at least one answerable and "
            "one not-answerable question are needed.",
        )
    if n_1 == 0 or n_0 == 0:
        which = "answerable" if n_0 == 0 else "not answerable"
        return AnswerabilityResult(
            **counts, **empty,
            note=f"All {n} labelled questions are {which}; label some of the other kind to measure how "
            "well similarity separates them.",
        )
    if np.ptp(s) == 0:
        return AnswerabilityResult(
            **counts, **{**empty, "auroc": 0.5},
            note=f"All {n} labelled questions have the same best similarity ({s[0]:.3f}), so similarity "
            "cannot separate answerable from not-answerable questions.",
        )

    from scipy.stats import pointbiserialr
    from sklearn.metrics import roc_auc_score, roc_curve

    with warnings.catch_warnings():
        # n == 2 gives r = +-1 with p = 1 and a warning; the values are right.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = pointbiserialr(y.astype(bool), s)
    auroc = float(roc_auc_score(y, s))
    fpr, tpr, cuts = roc_curve(y, s, drop_intermediate=False)
    j = tpr - fpr
    best = int(np.argmax(j))  # cuts decrease, so the first maximum is the highest threshold
    note = None
    if j[best] <= 0:
        threshold = youden = sensitivity = specificity = nan
        note = ("No similarity threshold separates answerable from not-answerable questions better than "
                "chance: answerable questions are not closer to the corpus here.")
    else:
        # best is neither the first cut (+inf, J = 0) nor the last (lowest score, J = 0).
        threshold = float((cuts[best] + cuts[best + 1]) / 2.0)
        youden, sensitivity, specificity = float(j[best]), float(tpr[best]), float(1.0 - fpr[best])
        if auroc < 0.5:
            note = ("Answerable questions are on the whole less similar to the corpus than "
                    "not-answerable ones; check that the labels are not reversed.")
    return AnswerabilityResult(
        **counts,
        point_biserial_r=float(result.statistic),
        p_value=float(result.pvalue),
        auroc=auroc,
        threshold=threshold,
        youden_j=youden,
        sensitivity=sensitivity,
        specificity=specificity,
        note=note,
    )


def _json_float(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 6)


def answerability_section(result: AnswerabilityResult, label_column: str | None) -> dict:
    """The report's answerability entry, with plain JSON types (NaN -> None).

    Returns exactly ``{"label_column", "n_labelled", "point_biserial_r",
    "p_value", "auroc", "threshold"}``; floats are rounded to 6 decimals like
    the rest of the report. ``p_value`` is not rounded to zero: a p-value
    below 1e-6 is kept as is (rounding would claim it is exactly 0).
    """
    p_value = result.p_value
    return {
        "label_column": None if label_column is None else str(label_column),
        "n_labelled": int(result.n_labelled),
        "point_biserial_r": _json_float(result.point_biserial_r),
        "p_value": None if p_value is None or not math.isfinite(p_value) else float(f"{p_value:.6g}"),
        "auroc": _json_float(result.auroc),
        "threshold": _json_float(result.threshold),
    }


# --------------------------------------------------------------------------
# dimensions
# --------------------------------------------------------------------------

DEFAULT_SWEEP_DIMS = (32, 64, 128, 256, None)

def truncation_note(provider: str, model: str | None) -> str | None:
    """A plain sentence when ``model`` was not trained to be truncated, else None.

    Matryoshka-trained models (OpenAI ``text-embedding-3-*``; Voyage models
    that accept ``output_dimension``) keep most of their quality in their
    first dimensions, so no note is needed. For models the providers' own
    metadata marks as not trained that way (the bundled all-MiniLM-L6-v2,
    ada-002, the fixed-size voyage-3 and voyage-3-lite; see
    :func:`coverage_core.embeddings.trained_for_truncation`), the note says
    that low-dimension rows of a sweep show how much the result degrades
    when dimensions are cut, not what a smaller model would give. For models
    we have no information on, it says we do not know.
    """
    from coverage_core.embeddings import DEFAULT_MODELS, trained_for_truncation
    from coverage_core.embeddings.local import model_base_name

    provider = (provider or "").strip().lower()
    name = (model or "").strip()
    if provider not in DEFAULT_MODELS:
        return _UNKNOWN_TRUNCATION.format(name=f"{name or 'the model'} ({provider or 'unknown provider'})")
    name = name or DEFAULT_MODELS[provider]
    trained = trained_for_truncation(provider, name)
    if trained:
        return None
    if trained is None:
        return _UNKNOWN_TRUNCATION.format(name=name)
    return _NOT_TRAINED.format(name=model_base_name(name) if provider == "local" else name)


_NOT_TRAINED = (
    "{name} was not trained for truncation: its first dimensions are not a smaller embedding, so the "
    "lower-dimension rows show how much the results degrade when dimensions are cut, not what a "
    "smaller model would give."
)
_UNKNOWN_TRUNCATION = (
    "We don't know whether {name} was trained for truncation (Matryoshka); if it was not, the "
    "lower-dimension rows only show how much the results degrade when dimensions are cut."
)


def _sweep_dims(dims, full: int) -> list[int]:
    chosen: set[int] = set()
    for d in dims:
        if d is None:
            chosen.add(full)
            continue
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise InputError(f"Dimensions to sweep must be whole numbers of at least 1 (or None for all); got {d!r}.")
        if int(d) < full:
            chosen.add(int(d))
    return sorted(chosen)


def _best_similarity(questions: np.ndarray, chunks: np.ndarray, block_size: int | None) -> np.ndarray:
    # Blockwise over chunk rows (metrics._BLOCK_ELEMENTS similarities at a
    # time); rows are re-normalised there, zero rows count as similarity 0.
    return metrics.question_support(questions, chunks, block_size)[0]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape[0] < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def dimension_sweep(
    question_vectors,
    chunk_vectors,
    dims: Sequence[int | None] = DEFAULT_SWEEP_DIMS,
    labels=None,
    embed_at: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None,
    *,
    block_size: int | None = None,
) -> pd.DataFrame:
    """Per-question best similarities from fewer embedding dimensions.

    For each ``d`` the vectors are cut to their first ``d`` dimensions and
    re-normalised to unit length, and every question's best similarity to
    any chunk is recomputed (blockwise, as :func:`metrics.question_support`:
    20,000 chunks x 2,000 questions never form one matrix). ``None`` in
    ``dims`` stands for the full size ``D``; sizes ``>= D`` are dropped (the
    full row is the reference), duplicates removed, rows sorted by ``d``.

    With ``embed_at`` (for models trained for shortening, e.g. OpenAI
    text-embedding-3 with the API's ``dimensions`` parameter), each ``d < D``
    is embedded afresh: ``embed_at(d)`` must return ``(question_vectors,
    chunk_vectors)`` for the same texts, and truncation is not used. See
    :func:`truncation_note` for what the truncated rows mean for models that
    were not trained for it.

    Parameters
    ----------
    question_vectors : array-like of shape (m, D)
    chunk_vectors : array-like of shape (n, D)
    dims : sequence of int or None
    labels : array-like of shape (m,), optional
        Answerability labels (see :func:`answerability`).
    embed_at : callable d -> (ndarray (m, d'), ndarray (n, d')), optional
    block_size : int, optional
        Chunk rows per block (default: about 32 MB of similarities).

    Returns
    -------
    DataFrame, one row per ``d``, columns:

    * ``d``: dimensions used;
    * ``method``: ``"full"``, ``"truncated"`` or ``"embedded"`` (``embed_at``);
    * ``spearman``: Spearman rank correlation (``scipy.stats.spearmanr``) of
      the per-question best similarities at ``d`` with the full-size ones
      (1.0 for the full row; NaN with fewer than 2 questions or constant
      similarities);
    * ``mean_similarity``: mean best similarity at ``d``;
    * with ``labels``: ``point_biserial_r`` and ``auroc`` at ``d``, as in
      :func:`answerability`.
    """
    chunks = check_vectors(chunk_vectors, "chunk_vectors")
    questions = check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1])
    m, full = questions.shape[0], questions.shape[1]
    y = binary_labels(labels, m) if labels is not None else None
    reference = _best_similarity(questions, chunks, block_size)
    rows = []
    for d in _sweep_dims(dims, full):
        if d == full:
            method, best = "full", reference
        elif embed_at is not None:
            method = "embedded"
            returned = embed_at(d)
            if not isinstance(returned, (tuple, list)) or len(returned) != 2:
                raise InputError(f"embed_at({d}) must return (question_vectors, chunk_vectors).")
            q_d, c_d = returned
            c_d = check_vectors(c_d, f"chunk vectors at {d} dimensions")
            q_d = check_vectors(q_d, f"question vectors at {d} dimensions", dim=c_d.shape[1])
            if q_d.shape[0] != m or c_d.shape[0] != chunks.shape[0] or q_d.shape[1] != c_d.shape[1]:
                raise InputError(
                    f"embed_at({d}) returned {q_d.shape} question and {c_d.shape} chunk vectors; expected "
                    f"{m} and {chunks.shape[0]} rows of the same size."
                )
            best = _best_similarity(q_d, c_d, block_size)
        else:
            method = "truncated"
            best = _best_similarity(questions[:, :d], chunks[:, :d], block_size)
        agreement = _spearman(best, reference)
        if d == full and math.isfinite(agreement):
            agreement = 1.0  # the reference itself (spearmanr may land an ulp below 1)
        row = {"d": d, "method": method, "spearman": agreement, "mean_similarity": float(best.mean())}
        if y is not None:
            found = answerability(best, y)
            row["point_biserial_r"] = found.point_biserial_r
            row["auroc"] = found.auroc
        rows.append(row)
    columns = ["d", "method", "spearman", "mean_similarity"] + (["point_biserial_r", "auroc"] if y is not None else [])
    frame = pd.DataFrame(rows, columns=columns)
    frame["d"] = frame["d"].astype(np.int64)
    return frame


# --------------------------------------------------------------------------
# the MDS map
# --------------------------------------------------------------------------

# MDS is quadratic in points (dissimilarity matrix and SMACOF iterations):
# on 2 cores with wiki-qa vectors 800 points take 2-5 s, 1,000 points 4-9 s
# (the iteration count varies with the data), 1,500 points 10 s or more.
DEFAULT_MDS_POINTS = 800


@dataclass(frozen=True)
class MdsPoints:
    """2-D MDS coordinates of (a sample of) the questions and chunks.

    ``chunk_index`` / ``question_index`` index into the full lists;
    ``chunk_xy`` / ``question_xy`` are aligned with them.
    """

    chunk_index: np.ndarray
    chunk_xy: np.ndarray
    question_index: np.ndarray
    question_xy: np.ndarray
    n_chunks_total: int
    n_questions_total: int
    seconds: float
    chunks_by_cluster: bool = False

    @property
    def sampled(self) -> bool:
        return len(self.chunk_index) < self.n_chunks_total or len(self.question_index) < self.n_questions_total

    @property
    def caption(self) -> str:
        """One sentence saying what is drawn, e.g. "1,000 of 20,000 chunks and all 185 questions shown ..."."""
        n_c, n_q = len(self.chunk_index), len(self.question_index)
        if not self.sampled:
            return f"All {n_c:,} chunks and {n_q:,} questions shown."
        chunks = f"{n_c:,} of {self.n_chunks_total:,} chunks" if n_c < self.n_chunks_total else f"all {n_c:,} chunks"
        questions = (
            f"{n_q:,} of {self.n_questions_total:,} questions" if n_q < self.n_questions_total else f"all {n_q:,} questions"
        )
        chunks_sampled, questions_sampled = n_c < self.n_chunks_total, n_q < self.n_questions_total
        if chunks_sampled and self.chunks_by_cluster:
            how = "chunks sampled evenly across clusters" + (", questions at random" if questions_sampled else "")
        elif chunks_sampled:
            how = "both sampled at random" if questions_sampled else "chunks sampled at random"
        else:
            how = "questions sampled at random"
        text = f"{chunks} and {questions} shown ({how}, as MDS is slow on many points); statistics use all of them."
        return text[0].upper() + text[1:]


def mds_points(
    question_vectors,
    chunk_vectors,
    *,
    chunk_labels=None,
    max_points: int = DEFAULT_MDS_POINTS,
    random_state: int | None = 0,
) -> MdsPoints:
    """Place questions and chunks on one 2-D map by metric MDS on ``1 - cos``.

    Uses :func:`coverage_core.outputs.projection.project_2d` with ``method="mds"``
    (scikit-learn ``MDS(metric="precomputed", init="classical_mds")`` on the
    cosine dissimilarities of all drawn points), after sampling so that at
    most ``max_points`` points are drawn: questions keep up to half of the
    budget (more if there are few chunks), chunks take the rest, chosen at
    random or, with ``chunk_labels``, evenly across clusters. ``project_2d``
    caps MDS at 2,000 points whatever ``max_points`` says.

    Parameters
    ----------
    question_vectors : array-like of shape (m, d)
    chunk_vectors : array-like of shape (n, d)
    chunk_labels : array-like of shape (n,), optional
        Cluster of each chunk, to sample chunks evenly across topics.
    max_points : int, at least 4
    random_state : int or None

    Returns
    -------
    MdsPoints
    """
    from coverage_core.outputs.projection import project_2d, sample_evenly

    chunks = check_vectors(chunk_vectors, "chunk_vectors")
    questions = check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1])
    if int(max_points) < 4:
        raise InputError(f"max_points must be at least 4; got {max_points}.")
    max_points = int(max_points)
    m, n = questions.shape[0], chunks.shape[0]
    by_cluster = chunk_labels is not None
    labels = np.zeros(n, dtype=np.intp) if chunk_labels is None else np.asarray(chunk_labels)
    if labels.shape != (n,):
        raise InputError(f"chunk_labels must hold one cluster label per chunk ({n}); got shape {labels.shape}.")
    if m + n <= max_points:
        n_q = m
    else:
        n_q = min(m, max(max_points // 2, max_points - n))
    rng = np.random.default_rng(random_state)
    question_index = np.arange(m) if n_q == m else np.sort(rng.choice(m, size=n_q, replace=False))
    # Chunks are sampled here (project_2d would keep at least 200 of them).
    chunk_index = sample_evenly(labels, max(max_points - n_q, 1), random_state)
    started = time.perf_counter()
    projection = project_2d(
        chunks[chunk_index], questions[question_index], labels[chunk_index], method="mds",
        max_points=len(chunk_index) + n_q, random_state=random_state,
    )
    # project_2d draws every point passed, except above its own MDS cap of
    # 2,000 points, where it samples the chunks further.
    return MdsPoints(
        chunk_index=chunk_index[np.asarray(projection.chunk_index)],
        chunk_xy=np.asarray(projection.chunk_xy, dtype=np.float64),
        question_index=(
            question_index if projection.question_index is None
            else question_index[np.asarray(projection.question_index)]
        ),
        question_xy=np.asarray(projection.question_xy, dtype=np.float64),
        n_chunks_total=n,
        n_questions_total=m,
        seconds=time.perf_counter() - started,
        chunks_by_cluster=by_cluster and len(np.unique(labels)) > 1,
    )


def mds_frames(
    points: MdsPoints,
    chunk_texts: Sequence[str],
    question_texts: Sequence[str],
    *,
    chunk_documents: Sequence[str] | None = None,
    labels=None,
    similarities=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables :func:`coverage_core.outputs.plots.mds_map` draws.

    Returns ``(chunks, questions)``: ``chunks`` with ``x``, ``y``, ``text``,
    ``document``; ``questions`` with ``x``, ``y``, ``text`` and, when given,
    ``answerable`` (1 / 0 / NaN) and ``max_similarity``. Texts are raw; the
    figure shortens and escapes them.
    """
    ci, qi = np.asarray(points.chunk_index, dtype=np.intp), np.asarray(points.question_index, dtype=np.intp)
    chunk_texts, question_texts = list(chunk_texts), list(question_texts)
    if len(chunk_texts) != points.n_chunks_total or len(question_texts) != points.n_questions_total:
        raise InputError(
            f"mds_frames needs all {points.n_chunks_total} chunk texts and {points.n_questions_total} question "
            f"texts; got {len(chunk_texts)} and {len(question_texts)}."
        )
    documents = list(chunk_documents) if chunk_documents is not None else [""] * len(chunk_texts)
    chunks = pd.DataFrame(
        {
            "x": points.chunk_xy[:, 0] if len(ci) else np.zeros(0),
            "y": points.chunk_xy[:, 1] if len(ci) else np.zeros(0),
            "text": [chunk_texts[i] for i in ci],
            "document": [documents[i] for i in ci],
        }
    )
    questions = pd.DataFrame(
        {
            "x": points.question_xy[:, 0] if len(qi) else np.zeros(0),
            "y": points.question_xy[:, 1] if len(qi) else np.zeros(0),
            "text": [question_texts[i] for i in qi],
        }
    )
    if labels is not None:
        questions["answerable"] = binary_labels(labels, points.n_questions_total)[qi]
    if similarities is not None:
        questions["max_similarity"] = _similarities(similarities)[qi]
    return chunks, questions
