"""Answerability analysis: does a question's best similarity predict whether
the knowledge base can answer it?

A question table may carry a label saying, for each question, whether the
corpus answers it (``covered`` / ``not covered``, ``yes`` / ``no`` ...). With
such labels this module measures how well each question's best cosine
similarity to any chunk separates the two groups, and which similarity
threshold separates them best, so the dashboard's "the knowledge base may
not answer this" threshold can be set from data instead of by eye.

Functions are pure and take plain arrays, like :mod:`coverage_core.metrics`:

* labels: read from the question table by
  :mod:`coverage_core.checks.answerability_labels`;
* statistics: :func:`answerability` (point-biserial r, AUROC, Youden
  threshold) and :func:`answerability_section` (its report entry);
* dimensions: :func:`dimension_sweep` (how the per-question similarities
  change with fewer embedding dimensions) and :func:`truncation_note`;
* a map: :func:`mds_points` (metric MDS on 1 - cosine, via
  :func:`coverage_core.projection.project_2d`) and :func:`mds_frames`.

Labels are floats: 1.0 answerable, 0.0 not answerable, NaN unlabelled.

scipy and scikit-learn are imported inside the functions that need them, so
importing this module (as :mod:`coverage_core.outputs.plots` does) stays cheap.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core import metrics, wording
from coverage_core.checks.answerability_labels import binary_labels, parse_answerable
from coverage_core.errors import InputError
from coverage_core.validation import check_scalar, check_vectors

__all__ = [
    "AnswerabilityResult",
    "DEFAULT_FITNESS_THRESHOLD",
    "DEFAULT_MDS_POINTS",
    "DEFAULT_SWEEP_DIMS",
    "MdsPoints",
    "answerability",
    "answerability_section",
    "binary_labels",
    "dimension_sweep",
    "fitness_threshold",
    "mds_frames",
    "mds_points",
    "parse_answerable",
    "truncation_note",
]

DEFAULT_FITNESS_THRESHOLD = 0.4
"""Best similarity below which a question is marked "the knowledge base may
not answer this" until the user (or labelled data, see :func:`answerability`)
sets another: the one default of the knowledge-base fitness view, the HTML
report and the dashboard."""

MEASURE_NAMES = {
    "point_biserial_r": "link to answerability (point-biserial r)",
    "auroc": "chance an answerable question sits closer (AUROC)",
    "threshold": "best dividing line (Youden's J)",
}
"""The label statistics' names in every output, a plain name before the statistician's."""


def fitness_threshold(analysis) -> float:
    """The best similarity below which the fitness check says "the knowledge base may not answer this".

    The calibrated question support level the off-topic screening of
    ``analysis`` used (``analysis.screener.question_support_threshold``, from
    ``calibration.question_support_threshold``), so the fitness check and the
    Results page's off-topic count read one level: a question below it has no
    passage within reach. Results may still count a different number: it
    also keeps a question below the level whose words one passage holds
    together, and flags one above it whose named subject the documents never
    discuss (``offtopic_reason``). :data:`DEFAULT_FITNESS_THRESHOLD` when the
    screening had no level (a library call without calibration).
    """
    level = analysis.screener.question_support_threshold
    return DEFAULT_FITNESS_THRESHOLD if level is None else float(level)


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
    """How well each question's best similarity to any chunk predicts its label: an :class:`AnswerabilityResult`.

    Labelled questions only: point-biserial r, p-value, AUROC (formulas: ``_separation``) and the Youden
    threshold, J, sensitivity, specificity (``_youden_cut``); degenerate labels give NaN and a ``note``
    (``_degenerate_result``). Raises InputError for ``similarities`` not 1-d numbers, not finite where
    labelled, or an unreadable label. Why: set the fitness threshold from labels (docs/checks.md, *Answerability*).

    Parameters
    ----------
    similarities : array-like of shape (m,), each question's best similarity to any chunk
    labels : array-like of shape (m,), 1 / 0 / NaN floats, booleans or raw strings (:func:`parse_answerable`)
    """
    s, y = _labelled_scores(similarities, labels)
    return _degenerate_result(s, y) or _separation(s, y)


def _labelled_scores(similarities, labels) -> tuple[np.ndarray, np.ndarray]:
    """(best similarities, 1/0 labels) of the labelled questions."""
    scores = _similarities(similarities)
    y = binary_labels(labels, scores.shape[0])
    labelled = ~np.isnan(y)
    if not np.isfinite(scores[labelled]).all():
        raise InputError("similarities contains NaN or infinite values for labelled questions.")
    return scores[labelled], y[labelled]


def _class_counts(y: np.ndarray) -> dict[str, int]:
    n = int(y.shape[0])
    n_1 = int((y == 1.0).sum())
    return dict(n_labelled=n, n_answerable=n_1, n_unanswerable=n - n_1)


def _degenerate_result(s: np.ndarray, y: np.ndarray) -> AnswerabilityResult | None:
    """The result when the labelled questions cannot be separated at all, else None.

    Degenerate inputs never raise: with fewer than 2 labelled questions, or
    only one class, every statistic is NaN; with all labelled similarities
    equal, ``r``, ``p_value`` and the threshold are NaN and AUROC is 0.5 (all
    pairs tied). ``note`` then says what is missing.
    """
    counts = _class_counts(y)
    n, n_1, n_0 = counts["n_labelled"], counts["n_answerable"], counts["n_unanswerable"]
    nan = math.nan
    empty = dict(point_biserial_r=nan, p_value=nan, auroc=nan, threshold=nan, youden_j=nan,
                 sensitivity=nan, specificity=nan)
    if n < 2:
        return AnswerabilityResult(
            **counts, **empty,
            note=f"Only {wording.count(n, 'question')} {wording.plural(n, 'carries', 'carry')} an answerability label; at least one answerable and "
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
    return None


def _separation(s: np.ndarray, y: np.ndarray) -> AnswerabilityResult:
    """Point-biserial r, AUROC and the Youden threshold of two non-empty classes.

    With ``s_i`` a question's best similarity (``metrics.question_support``),
    ``A`` the answerable and ``U`` the not-answerable questions,
    ``n_1 = |A|``, ``n_0 = |U|``, ``n = n_1 + n_0``:

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
    * **Youden threshold**: :func:`_youden_cut`.
    """
    from scipy.stats import pointbiserialr
    from sklearn.metrics import roc_auc_score

    with warnings.catch_warnings():
        # n == 2 gives r = +-1 with p = 1 and a warning; the values are right.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = pointbiserialr(y.astype(bool), s)
    auroc = float(roc_auc_score(y, s))
    return AnswerabilityResult(
        **_class_counts(y),
        point_biserial_r=float(result.statistic),
        p_value=float(result.pvalue),
        auroc=auroc,
        **_youden_cut(s, y, auroc),
    )


def _youden_cut(s: np.ndarray, y: np.ndarray, auroc: float) -> dict:
    """threshold, youden_j, sensitivity, specificity and note at the best Youden cut.

    Calling a question answerable when ``s >= t`` (notation of :func:`_separation`)::

        TPR(t) = |{i in A : s_i >= t}| / n_1
        FPR(t) = |{j in U : s_j >= t}| / n_0
        J(t)   = TPR(t) - FPR(t)

    J is evaluated at every distinct observed score (``sklearn.metrics.roc_curve``).
    At the best score ``s*`` the reported ``threshold`` is the midpoint between
    ``s*`` (the lowest score still called answerable) and the next lower
    observed score (the highest called not answerable), so it can be put on a
    slider: questions with ``s < threshold`` are the ones "the knowledge base
    may not answer". Ties in J go to the highest threshold (why:
    docs/checks.md, *Answerability*). ``youden_j``, ``sensitivity = TPR`` and
    ``specificity = 1 - FPR`` are reported at it. If no cut does better than
    chance (max J = 0) the threshold, J, sensitivity and specificity are NaN
    and ``note`` says so; ``note`` also warns when ``auroc`` < 0.5 (reversed labels?).
    """
    from sklearn.metrics import roc_curve

    fpr, tpr, cuts = roc_curve(y, s, drop_intermediate=False)
    j = tpr - fpr
    best = int(np.argmax(j))  # cuts decrease, so the first maximum is the highest threshold
    note = None
    if j[best] <= 0:
        threshold = youden = sensitivity = specificity = math.nan
        note = ("No similarity threshold separates answerable from not-answerable questions better than "
                "chance: answerable questions are not closer to the corpus here.")
    else:
        # best is neither the first cut (+inf, J = 0) nor the last (lowest score, J = 0).
        threshold = float((cuts[best] + cuts[best + 1]) / 2.0)
        youden, sensitivity, specificity = float(j[best]), float(tpr[best]), float(1.0 - fpr[best])
        if auroc < 0.5:
            note = ("Answerable questions are on the whole less similar to the corpus than "
                    "not-answerable ones; check that the labels are not reversed.")
    return dict(threshold=threshold, youden_j=youden, sensitivity=sensitivity,
                specificity=specificity, note=note)


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
    from coverage_core.embeddings.registry import model_display_name

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
    return _NOT_TRAINED.format(name=model_display_name(provider, name))


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
        check_scalar(d, "dims", int, min_val=1, hint="they are whole numbers of dimensions, or None for all")
        if int(d) < full:
            chosen.add(int(d))
    return sorted(chosen)


def _best_similarity(questions: np.ndarray, chunks: np.ndarray, block_size: int | None) -> np.ndarray:
    # Blockwise over chunk rows (blockwise.BLOCK_ELEMENTS similarities at a
    # time); rows are re-normalised there, zero rows count as similarity 0.
    return metrics.question_support(questions, chunks, block_size)[0]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``) of ``a`` and ``b``.

    NaN with fewer than 2 values or either constant.
    """
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
    """Per-question best similarities from fewer embedding dimensions: a DataFrame, one row per ``d``.

    Each ``d`` cuts the vectors to their first ``d`` dimensions and re-normalises them; with ``embed_at``
    (models trained for shortening) ``embed_at(d)`` returns ``(question_vectors, chunk_vectors)`` of the
    same texts instead. ``None`` in ``dims`` is the full size ``D``; sizes ``>= D`` are dropped, the rest
    kept once each, sorted. Columns ``d``, ``method`` (``"full"``, ``"truncated"``, ``"embedded"``),
    ``spearman``, ``mean_similarity``, with ``labels`` ``point_biserial_r``, ``auroc`` (:func:`_sweep_row`).
    Raises InputError on vectors that do not match, a ``dims`` entry that is not a whole number >= 1, or
    an ``embed_at`` reply of the wrong shape. Why: docs/checks.md, *Answerability*; :func:`truncation_note`.

    Parameters
    ----------
    question_vectors, chunk_vectors : array-like of shape (m, D) and (n, D)
    dims : sequence of int or None
    labels : array-like of shape (m,), optional, answerability labels as in :func:`answerability`
    embed_at : callable d -> (ndarray (m, d'), ndarray (n, d')), optional
    block_size : int, optional, chunk rows per block (default: about 32 MB of similarities)
    """
    chunks = check_vectors(chunk_vectors, "chunk_vectors")
    questions = check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1])
    y = binary_labels(labels, questions.shape[0]) if labels is not None else None
    reference = _best_similarity(questions, chunks, block_size)
    rows = []
    for d in _sweep_dims(dims, questions.shape[1]):
        method, best = _similarities_at(d, questions, chunks, reference, embed_at, block_size)
        rows.append(_sweep_row(d, method, best, reference, y))
    return _sweep_frame(rows, with_labels=y is not None)


def _similarities_at(
    d: int,
    questions: np.ndarray,
    chunks: np.ndarray,
    reference: np.ndarray,
    embed_at: Callable[[int], tuple[np.ndarray, np.ndarray]] | None,
    block_size: int | None,
) -> tuple[str, np.ndarray]:
    """(method, each question's best similarity) at ``d`` dimensions."""
    if d == questions.shape[1]:
        return "full", reference
    if embed_at is None:
        return "truncated", _best_similarity(questions[:, :d], chunks[:, :d], block_size)
    m = questions.shape[0]
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
    return "embedded", _best_similarity(q_d, c_d, block_size)


def _sweep_row(d: int, method: str, best: np.ndarray, reference: np.ndarray, y: np.ndarray | None) -> dict:
    """One row of :func:`dimension_sweep`.

    * ``d``: dimensions used; ``method``: ``"full"``, ``"truncated"`` or ``"embedded"``;
    * ``spearman``: Spearman rank correlation (:func:`_spearman`) of the
      per-question best similarities at ``d`` with the full-size ones
      (1.0 for the full row; NaN with fewer than 2 questions or constant
      similarities);
    * ``mean_similarity``: mean best similarity at ``d``;
    * with labels ``y``: ``point_biserial_r`` and ``auroc`` at ``d``, as in
      :func:`answerability`.
    """
    agreement = _spearman(best, reference)
    if method == "full" and math.isfinite(agreement):
        agreement = 1.0  # the reference itself (spearmanr may land an ulp below 1)
    row = {"d": d, "method": method, "spearman": agreement, "mean_similarity": float(best.mean())}
    if y is not None:
        found = answerability(best, y)
        row["point_biserial_r"] = found.point_biserial_r
        row["auroc"] = found.auroc
    return row


def _sweep_frame(rows: list[dict], with_labels: bool) -> pd.DataFrame:
    columns = ["d", "method", "spearman", "mean_similarity"] + (["point_biserial_r", "auroc"] if with_labels else [])
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

    Uses :func:`coverage_core.projection.project_2d` with ``method="mds"``
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
    from coverage_core.projection import project_2d

    chunks = check_vectors(chunk_vectors, "chunk_vectors")
    questions = check_vectors(question_vectors, "question_vectors", dim=chunks.shape[1])
    if int(max_points) < 4:
        raise InputError(f"max_points must be at least 4; got {max_points}.")
    max_points = int(max_points)
    m, n = questions.shape[0], chunks.shape[0]
    labels = _chunk_clusters(chunk_labels, n)
    question_index, chunk_index = _mds_sample(m, labels, max_points, random_state)
    started = time.perf_counter()
    projection = project_2d(
        chunks[chunk_index], questions[question_index], labels[chunk_index], method="mds",
        max_points=len(chunk_index) + len(question_index), random_state=random_state,
    )
    # project_2d draws every point passed unless over its MDS cap of 2,000 points.
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
        chunks_by_cluster=chunk_labels is not None and len(np.unique(labels)) > 1,
    )


def _chunk_clusters(chunk_labels, n: int) -> np.ndarray:
    """One cluster label per chunk; all chunks in one cluster without ``chunk_labels``."""
    labels = np.zeros(n, dtype=np.intp) if chunk_labels is None else np.asarray(chunk_labels)
    if labels.shape != (n,):
        raise InputError(f"chunk_labels must hold one cluster label per chunk ({n}); got shape {labels.shape}.")
    return labels


def _mds_sample(
    m: int, labels: np.ndarray, max_points: int, random_state: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(question rows, chunk rows) to draw: at most ``max_points`` in all."""
    from coverage_core.projection import sample_evenly

    n = labels.shape[0]
    if m + n <= max_points:
        n_q = m
    else:
        n_q = min(m, max(max_points // 2, max_points - n))
    rng = np.random.default_rng(random_state)
    question_index = np.arange(m) if n_q == m else np.sort(rng.choice(m, size=n_q, replace=False))
    # Chunks are sampled here (project_2d would keep at least 200 of them).
    chunk_index = sample_evenly(labels, max(max_points - n_q, 1), random_state)
    return question_index, chunk_index


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
