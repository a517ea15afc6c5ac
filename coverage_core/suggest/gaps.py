"""Gap analysis: which topics the test questions miss, and questions to fill them.

A *gap* is a cluster of chunks that :func:`coverage_core.verdicts.is_gap`
marks (mostly untested), or an untested document whose main topic is not
such a cluster (a *document gap*, :mod:`coverage_core.suggest.document_gaps`:
every untested document is in a gap). For each gap we report what it is about
(c-TF-IDF keyphrases), the passages that most need a question (the least
covered of its most representative chunks), and suggested questions:

* offline (default): real questions the bundled local model
  (:mod:`coverage_core.suggest.local_model`) wrote from those passages,
  marked ``origin="local"``, each kept only by the keep rule of
  :mod:`coverage_core.suggest.writing`; a passage without a kept question
  gets a question **draft** templated from its sentences
  (``origin="draft"``), a starting point for a person to edit;
* with the user's LLM (:class:`~coverage_core.suggest.llm.ChatClient`): questions
  that model wrote from the passages, marked ``origin="llm"``. If the LLM
  fails for a gap, that gap falls back to drafts and a warning says so.

Both are written in each passage's language (:mod:`coverage_core.suggest.questions`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from coverage_core.duplicates import NEAR_DUPLICATE_SIMILARITY
from coverage_core.errors import InputError
from coverage_core.languages import corpus_languages, detect_language, language_name
from coverage_core.stages.topics import MAX_CHUNKS_PER_CLUSTER, N_LABEL_TERMS, N_SPARE_TERMS, cluster_terms
from coverage_core.suggest.document_gaps import RankedGap, document_rows, gap_targets
from coverage_core.suggest.llm import ChatClient
from coverage_core.suggest.passages import (
    least_covered,
    representative_chunks,
    representatives_by_cluster,
    spread_passages,
)
from coverage_core.suggest.progress import WritingClock, WritingProgress
from coverage_core.suggest.questions import (
    Suggestion,
    draft_questions,
    duplicate_key,
    has_sentences,
    llm_suggestions,
    unsupported_warning,
)
from coverage_core.suggest.writing import PassageRanks, WritingConfig, example_questions, repeat_level, write_questions
from coverage_core.validation import check_scalar, unit_rows
from coverage_core.wording import count

__all__ = [
    "Gap",
    "GapConfig",
    "analyze_gaps",
    "extract_themes",
    "rank_gaps",
]

# How many of a cluster's most central chunks count as "representative";
# the least covered of these become the gap's passages.
N_REPRESENTATIVE = 10
# A threshold on a coverage score (1 - a cosine distance in [0, 2]): above
# the lowest coverage, -1, and at most the highest, 1. The CLI reads it too.
COVERAGE_THRESHOLD_RANGE = (-1.0, 1.0)
SHARE_RANGE = (0.0, 1.0)
"""``size_weight`` (0 and 1 included) and ``tested_share_threshold`` (above 0, at most 1)."""


GAP_RULES = ("tested_share", "coverage")
GAP_TESTED_SHARE = 0.5
"""A cluster is a gap (rule ``"tested_share"``) when less than half of its
passages are reached by a question: most of that topic is untested."""
GAP_COVERAGE_THRESHOLD = 0.7
"""The ``"coverage"`` rule's cut on a cluster's coverage score, and the one
JUnit applies to a schema-1 report."""


@dataclass(frozen=True)
class GapConfig:
    """Settings of the gap analysis.

    Which clusters are gaps depends on ``rule``:

    * ``"tested_share"`` (default): fewer than ``tested_share_threshold`` of
      the cluster's passages are reached by a question (similarity >= the
      calibrated support threshold τ, :mod:`coverage_core.stages.calibration`). An
      absolute decision: it does not depend on the other clusters' scores.
    * ``"coverage"``: the cluster's mean coverage (``1 - mean mindist``) is
      below ``gap_threshold``, the rule of schema-1 reports.

    Gaps are ranked by::

        priority = (1 - size_weight) * (1 - coverage) + size_weight * share

    where ``share`` is the cluster's fraction of all chunks: mostly how badly
    the topic is covered, partly how much of the knowledge base it is.

    Each gap gets up to ``n_suggestions`` suggested questions (0: none) from
    its ``n_passages`` least covered passages. The user's LLM writes them
    for every gap, and so does the bundled model (a few seconds per gap on a
    laptop, reported through ``analyze_gaps(progress=...)``), unless
    ``n_written_gaps`` limits it to that many of the most urgent gaps at a
    time: the others then get drafts until asked
    (``analyze_gaps(written=...)``). ``local_model`` False leaves the
    bundled local model out (drafts unless the user's LLM writes);
    ``worked_examples`` shows it one of the user's own test questions in
    the passage's language first (:func:`~coverage_core.suggest.writing.example_questions`).
    With a
    support level, the passages are chosen to spread the questions over the
    gap (:func:`spread_passages`, a question taken to test its source's
    ``spread_reach`` nearest passages); ``spread_reach`` None, or no
    support level: the least covered of the gap's most central passages.
    """

    gap_threshold: float = GAP_COVERAGE_THRESHOLD
    size_weight: float = 0.3
    rule: str = "tested_share"
    tested_share_threshold: float = GAP_TESTED_SHARE
    n_themes: int = 5
    n_suggestions: int = 5
    n_passages: int = 5
    n_written_gaps: int | None = None
    local_model: bool = True
    worked_examples: bool = True
    spread_reach: int | None = 5

    def __post_init__(self):
        low, high = COVERAGE_THRESHOLD_RANGE
        check_scalar(self.gap_threshold, "gap_threshold", float, min_val=low, max_val=high,
                     include_boundaries="right", hint="it is a coverage score")
        check_scalar(self.size_weight, "size_weight", float, min_val=SHARE_RANGE[0], max_val=SHARE_RANGE[1])
        if self.rule not in GAP_RULES:
            raise InputError(f"The gap rule must be one of {', '.join(GAP_RULES)}; got {self.rule!r}.")
        check_scalar(self.tested_share_threshold, "tested_share_threshold", float, min_val=SHARE_RANGE[0],
                     max_val=SHARE_RANGE[1], include_boundaries="right", hint="it is a share of passages")
        for name in ("n_themes", "n_passages", "n_written_gaps"):
            if getattr(self, name) is not None:
                check_scalar(getattr(self, name), name, int, min_val=1)
        if self.spread_reach is not None:
            check_scalar(self.spread_reach, "spread_reach", int, min_val=1)
        check_scalar(self.n_suggestions, "n_suggestions", int, min_val=0, hint="0 writes no suggestions")


@dataclass(frozen=True)
class Gap:
    """An under-covered cluster, or an untested document (a document gap).

    A document gap has its ``document``; its ``cluster`` is the document's
    main topic, and ``coverage``, ``size`` and ``share`` are the document's.
    ``untested`` are the untested documents the gap holds: a document gap's
    own, or those a topic gap carries (:mod:`coverage_core.suggest.document_gaps`);
    each has a suggestion from its passages when one could be written.
    ``passages`` are chunk indices of its least-covered representative
    chunks, worst first (a carried document's passage first).
    ``suggestions`` are the questions offered for it
    (kept generated questions, else drafts); ``dropped`` the generated
    questions that failed the keep rule, each with its ``reason``.
    ``note`` says, in one sentence, why the gap has no suggestion at all
    ("" when it has some). ``written`` is True when a model (the user's LLM
    or the bundled one) wrote for it, False when it holds drafts only
    because no model was asked.
    """

    cluster: int
    coverage: float
    size: int
    share: float
    priority: float
    themes: tuple[str, ...]
    passages: tuple[int, ...]
    suggestions: tuple[Suggestion, ...]
    dropped: tuple[Suggestion, ...] = ()
    note: str = ""
    written: bool = False
    document: str = ""
    untested: tuple[str, ...] = ()


# --------------------------------------------------------------------------
# themes: the cluster terms of coverage_core.stages.topics
# --------------------------------------------------------------------------


def extract_themes(
    chunk_texts: Sequence[str],
    labels,
    n_clusters: int,
    n_themes: int = 5,
    max_chunks_per_cluster: int | None = MAX_CHUNKS_PER_CLUSTER,
) -> list[list[str]]:
    """Keyphrases that set each cluster apart: :func:`coverage_core.stages.topics.cluster_terms` (c-TF-IDF).

    Returns n_clusters lists of up to ``n_themes`` lowercase phrases, best
    first; the first three are the cluster's topic label.
    """
    # Ranked as for the topic labels, so a gap's first themes are its label's terms.
    n_ranked = max(n_themes, N_LABEL_TERMS + N_SPARE_TERMS)
    terms = cluster_terms(chunk_texts, labels, n_clusters, n_ranked, max_chunks_per_cluster)
    return [t[:n_themes] for t in terms]


# --------------------------------------------------------------------------
# ranking, representative passages
# --------------------------------------------------------------------------


def rank_gaps(
    cluster_coverage, cluster_sizes, config: GapConfig | None = None, *, is_gap
) -> list[tuple[int, float]]:
    """The gap clusters, most urgent first.

    ``is_gap`` (bool per cluster) is the decision, taken by
    :func:`coverage_core.verdicts.is_gap`; this only orders the gaps.

    Priority is the mix documented in :class:`GapConfig`. Empty clusters and
    clusters with NaN coverage are not gaps.

    Parameters
    ----------
    cluster_coverage : array-like of shape (K,)
    cluster_sizes : array-like of shape (K,), chunks per cluster
    config : GapConfig

    Returns
    -------
    list of (cluster, priority), priority descending (ties: lower cluster first).
    """
    config = config or GapConfig()
    coverage = np.asarray(cluster_coverage, dtype=np.float64)
    sizes = np.asarray(cluster_sizes, dtype=np.float64)
    if coverage.ndim != 1 or coverage.shape != sizes.shape:
        raise InputError(
            f"cluster_coverage and cluster_sizes must be 1-d and of equal length; "
            f"got shapes {coverage.shape} and {sizes.shape}."
        )
    total = sizes.sum()
    if total <= 0:
        return []
    share = sizes / total
    priority = (1 - config.size_weight) * (1 - coverage) + config.size_weight * share
    is_gap = (sizes > 0) & ~np.isnan(coverage) & np.asarray(is_gap, dtype=bool)
    gaps = [(int(k), float(priority[k])) for k in np.flatnonzero(is_gap)]
    return sorted(gaps, key=lambda item: (-item[1], item[0]))


# --------------------------------------------------------------------------
# the analysis
# --------------------------------------------------------------------------


def analyze_gaps(
    chunk_texts: Sequence[str],
    chunk_documents: Sequence[str],
    chunk_vectors,
    labels,
    centroids,
    min_distances,
    cluster_coverage,
    existing_questions: Sequence[str],
    config: GapConfig | None = None,
    llm: ChatClient | None = None,
    embed=None,
    support_threshold: float | None = None,
    *,
    is_gap,
    writer: ChatClient | None = None,
    question_vectors=None,
    question_languages=None,
    written: Sequence[Gap] = (),
    untested_documents: Sequence[str] = (),
    document_gaps: Sequence[str] = (),
    progress: WritingProgress | None = None,
    near_duplicate_level: float = NEAR_DUPLICATE_SIMILARITY,
) -> tuple[list[Gap], list[str]]:
    """Find the under-covered clusters and untested documents, and suggest questions for them.

    Parameters
    ----------
    chunk_texts, chunk_documents, chunk_vectors, labels, centroids, min_distances, cluster_coverage
        The n chunks' texts, documents and vectors (n, d); their clusters (n,) in 0..K-1 and the K
        centroids (K, d); each chunk's distance to its nearest question (n,); each cluster's coverage (K,).
    existing_questions : sequence of str, the test questions, never repeated by a suggestion
    config : GapConfig, optional
    llm, writer : ChatClient, optional
        Your LLM; else the bundled model (needs ``embed`` and ``support_threshold``); else drafts.
    embed, support_threshold : callable and float, optional; a question must reach its passage
    is_gap : array-like of shape (K,), bool, from :func:`coverage_core.verdicts.is_gap`
    question_vectors, question_languages : the existing questions' vectors (m, d) and languages, optional
    written, untested_documents, document_gaps : sequences of Gap, str and str, optional
    progress : callable ``progress(done, total, seconds_left)``, optional
    near_duplicate_level : float; suggestions this near a test question (:func:`.writing.repeat_level`) are dropped

    Returns
    -------
    gaps : list of Gap, most urgent first
    warnings : list of str, one sentence each (LLM failures and fallbacks)

    Why: a gap is closed by questions; each parameter in full: docs/suggestions.md, *In Python*.
    """
    config = config or GapConfig()
    inputs = _GapInputs.checked(
        chunk_texts, chunk_documents, chunk_vectors, labels, centroids, min_distances, cluster_coverage
    )
    ranked = gap_targets(rank_gaps(inputs.coverage, inputs.sizes, config, is_gap=is_gap), inputs.documents,
                         inputs.labels, untested_documents, document_gaps, config.size_weight)
    if not ranked:
        return [], []
    if writer is not None and (embed is None or support_threshold is None):
        writer = None  # the keep rule cannot be checked
    return _write_gaps(
        inputs, ranked, config, existing_questions, llm, embed, support_threshold, writer, question_vectors,
        question_languages, {(gap.cluster, gap.document): gap for gap in written if gap.written}, progress,
        WritingConfig(duplicate_similarity=repeat_level(near_duplicate_level)),
    )


@dataclass(frozen=True)
class _GapInputs:
    """The chunk-level inputs of :func:`analyze_gaps`, as arrays checked against each other."""

    texts: list[str]
    documents: list[str]
    vectors: np.ndarray
    labels: np.ndarray
    centroids: np.ndarray
    distances: np.ndarray
    coverage: np.ndarray
    n_clusters: int
    sizes: np.ndarray

    @classmethod
    def checked(
        cls, chunk_texts, chunk_documents, chunk_vectors, labels, centroids, min_distances, cluster_coverage
    ) -> _GapInputs:
        texts = [str(t) for t in chunk_texts]
        documents = list(chunk_documents)
        vectors = np.asarray(chunk_vectors)
        labels = np.asarray(labels, dtype=np.intp)
        centroids = np.asarray(centroids, dtype=np.float32)
        distances = np.asarray(min_distances, dtype=np.float64)
        coverage = np.asarray(cluster_coverage, dtype=np.float64)
        n_clusters = _check_gap_inputs(len(texts), documents, vectors, labels, centroids, distances, coverage)
        sizes = np.bincount(labels, minlength=n_clusters)
        return cls(texts, documents, vectors, labels, centroids, distances, coverage, n_clusters, sizes)

    def representatives_of(self, ranked: Sequence[RankedGap], n_representative: int):
        """cluster -> its representative chunks; one pass over all rows serves several gaps."""
        if sum(not gap.document for gap in ranked) > 1:
            by_cluster = representatives_by_cluster(self.vectors, self.labels, self.centroids, n_representative)
            return lambda cluster: by_cluster[cluster]
        # One gap: its own cluster's rows are all that need reading.
        return lambda cluster: representative_chunks(self.vectors, self.labels, self.centroids, cluster, n_representative)

    def gap(self, target: RankedGap, rows: np.ndarray, themes: list[str], passages, suggestions, dropped=(),
            note: str = "", written: bool = False) -> Gap:
        """The Gap of ``target``; a document gap's figures are its document's (``rows``, its chunks)."""
        cluster = target.cluster
        coverage = float(np.mean(1.0 - self.distances[rows])) if target.document else float(self.coverage[cluster])
        size = len(rows) if target.document else int(self.sizes[cluster])
        return Gap(
            cluster=cluster,
            coverage=coverage,
            size=size,
            share=float(size / len(self.texts)),
            priority=target.priority,
            themes=tuple(themes),
            passages=tuple(int(p) for p in passages),
            suggestions=tuple(suggestions),
            dropped=tuple(dropped),
            note=note,
            written=written,
            document=target.document,
            untested=target.untested,
        )


def _write_gaps(
    inputs: _GapInputs,
    ranked: list[RankedGap],
    config: GapConfig,
    existing_questions: Sequence[str],
    llm: ChatClient | None,
    embed,
    support_threshold: float | None,
    writer: ChatClient | None = None,
    question_vectors=None,
    question_languages=None,
    kept: dict[tuple[int, str], Gap] | None = None,
    progress: WritingProgress | None = None,
    writing: WritingConfig | None = None,
) -> tuple[list[Gap], list[str]]:
    """One Gap per ranked gap: its themes, least-covered passages and suggested questions.

    ``kept`` ((cluster, document) -> Gap) are gaps already written for, reused as they are."""
    kept = kept or {}
    n_new = sum((gap.cluster, gap.document) not in kept for gap in ranked)
    if llm is None and writer is not None and config.n_written_gaps is not None:
        n_new = min(n_new, config.n_written_gaps)
    clock = WritingClock(n_new if config.n_suggestions and (llm is not None or writer is not None) else 0, progress)
    themes = extract_themes(inputs.texts, inputs.labels, inputs.n_clusters, config.n_themes)
    rows_of = document_rows(inputs.documents, [d for gap in ranked for d in gap.untested])
    themes_of = _document_themes(inputs, [gap.document for gap in ranked if gap.document], rows_of, config.n_themes)
    seen = {duplicate_key(str(q)) for q in existing_questions}
    seen.update(duplicate_key(s.text) for gap in kept.values() for s in gap.suggestions if s.text)
    warnings: list[str] = []
    n_unsupported = 0
    unwritable: Counter[str] = Counter()
    writes_languages = writer.writes_languages if writer is not None else None
    n_to_write = len(ranked) if config.n_written_gaps is None else config.n_written_gaps
    gaps = []
    n_representative = max(N_REPRESENTATIVE, config.n_passages)
    representatives_of = inputs.representatives_of(ranked, n_representative)
    # Suggestions are written in each passage's language; an unsure guess is chosen among the corpus's.
    languages = corpus_languages(inputs.texts)

    readable: dict[int, bool] = {}  # a chunk is asked about by several gaps and documents: its language read once

    def askable(chunk: int) -> bool:
        if chunk not in readable:
            readable[chunk] = has_sentences(inputs.texts[chunk], detect_language(inputs.texts[chunk], languages))
        return readable[chunk]

    ranks = PassageRanks(inputs.vectors) if writer is not None else None
    examples = example_questions(
        existing_questions, inputs.texts, ranks, embed, question_vectors=question_vectors,
        question_languages=question_languages, candidates=languages,
    ) if writer is not None and config.worked_examples else None
    for target in ranked:
        cluster = target.cluster
        if (cluster, target.document) in kept:
            gaps.append(kept[(cluster, target.document)])
            continue
        if target.document:
            rows = rows_of[target.document]
            representatives = _document_representatives(inputs.vectors, rows, n_representative)
            gap_themes = list(themes_of[target.document])
        else:
            rows = np.flatnonzero(inputs.labels == cluster)
            representatives = representatives_of(cluster)
            gap_themes = list(themes[cluster])
        passages = least_covered(representatives, inputs.distances, config.n_passages)
        if support_threshold is not None and config.spread_reach is not None:
            spread = spread_passages(rows, inputs.vectors, inputs.distances, support_threshold, config.n_passages,
                                     config.spread_reach, askable=askable)
            passages = spread or passages
        # A carried document's own rows in this topic: its least covered askable passage leads the gap's.
        carried = {d: rows_of[d][inputs.labels[rows_of[d]] == cluster] for d in target.untested if not target.document}
        firsts = [_least_covered_askable(own, inputs.distances, askable, 1)[0] for own in carried.values() if len(own)]
        passages = list(dict.fromkeys([*firsts, *passages]))[:max(config.n_passages, len(firsts))]
        if config.n_suggestions == 0:
            gaps.append(inputs.gap(target, rows, gap_themes, passages, (), note=NOTE_TURNED_OFF))
            continue
        n = max(config.n_suggestions, len(firsts))
        suggestions, dropped, written_for = None, (), False
        if llm is not None:
            written_for = True
            gap_themes, suggestions, n_dropped, fatal = llm_suggestions(
                llm, cluster, gap_themes, passages, representatives, inputs.texts, inputs.documents,
                existing_questions, replace(config, n_suggestions=n), seen, inputs.vectors, embed,
                support_threshold, warnings, languages,
            )
            n_unsupported += n_dropped
            if fatal:
                llm = None  # the next gaps would fail the same way
        elif writer is not None and n_to_write > 0:
            n_to_write -= 1
            written_for = True
            written = write_questions(
                writer, cluster, passages, inputs.texts, inputs.documents, inputs.vectors, embed,
                support_threshold, existing_vectors=question_vectors, candidates=languages,
                n=n, seen=seen, retrieval=ranks, examples=examples, config=writing,
            )
            dropped = written.dropped
            unwritable.update(written.unwritable)
            if len(written.unwritable) == len(passages):
                n_to_write += 1  # nothing was asked of the writer: the next gap may use its turn
            drafts = draft_questions(
                cluster, list(written.unwritten), inputs.texts, inputs.documents, gap_themes,
                n - len(written.kept), seen, languages,
            ) if written.unwritten and len(written.kept) < n else []
            suggestions = [*written.kept, *drafts]
            if written.failure:
                warnings.append(f"The built-in question writer stopped, so drafts are shown instead: {written.failure}")
                if written.fatal:
                    writer = None
        if suggestions is None:
            suggestions = draft_questions(
                cluster, passages, inputs.texts, inputs.documents, gap_themes, n, seen, languages
            )
        # Every untested document of the gap gets a suggestion from its own passages (a draft if need be).
        own_rows = {target.document: rows} if target.document else carried
        for document, own in own_rows.items():
            if len(own) and not any(s.text and s.document == document for s in suggestions):
                suggestions = [*suggestions, *draft_questions(
                    cluster, _least_covered_askable(own, inputs.distances, askable, N_REPRESENTATIVE),
                    inputs.texts, inputs.documents, gap_themes, 1, seen, languages,
                )]
        note = "" if any(s.text for s in suggestions) else no_suggestion_note(dropped)
        gaps.append(inputs.gap(target, rows, gap_themes, passages, suggestions, dropped, note, written_for))
        if written_for:
            clock.step()
    clock.finish()
    rest = sum(not gap.written for gap in gaps)
    if writer is not None and config.n_suggestions and rest:
        warnings.append(unwritten_warning(len(gaps) - rest, rest))
    if unwritable:
        warnings.append(unwritable_warning(unwritable, writes_languages or ()))
    if n_unsupported:
        warnings.append(unsupported_warning(n_unsupported, support_threshold))
    return gaps, warnings


def _least_covered_askable(rows: np.ndarray, min_distances: np.ndarray, askable, n: int) -> list[int]:
    """The first ``n`` of ``rows`` least covered first, those a question can be asked from (``askable``)
    before the others; ``askable`` is asked only until ``n`` are found (a document may have thousands of rows)."""
    order = [int(i) for i in np.asarray(rows)[np.argsort(-min_distances[rows], kind="stable")]]
    found, others = [], []
    for row in order:
        (found if askable(row) else others).append(row)
        if len(found) == n:
            return found
    return (found + others)[:n]


def _document_representatives(vectors: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` chunks of a document (``rows``) closest to its own centre, closest first."""
    own = np.asarray(vectors[rows], dtype=np.float32)
    centre = unit_rows(own).mean(axis=0, keepdims=True)
    return rows[representative_chunks(own, np.zeros(len(rows), dtype=np.intp), centre, 0, n)]


def _document_themes(inputs: _GapInputs, documents: Sequence[str], rows_of, n_themes: int) -> dict[str, list[str]]:
    """Each document gap's terms: c-TF-IDF with each such document a class of its own beside the topics."""
    if not documents:
        return {}
    labels = inputs.labels.copy()
    for i, document in enumerate(documents):
        labels[rows_of[document]] = inputs.n_clusters + i
    terms = extract_themes(inputs.texts, labels, inputs.n_clusters + len(documents), n_themes)
    return {document: terms[inputs.n_clusters + i] for i, document in enumerate(documents)}


NOTE_TURNED_OFF = "Suggestions are turned off."


def unwritten_warning(n_written: int, n_rest: int) -> str:
    """Which gaps the writer wrote for and how many hold drafts only, in one sentence."""
    written_for = "the most urgent gap" if n_written == 1 else f"the {n_written} most urgent gaps"
    return (
        f"Questions were written for {written_for}; the other {n_rest} "
        f"{'gap has' if n_rest == 1 else 'gaps have'} drafts to edit."
    )


def unwritable_warning(passages_by_language: Counter[str], writes_languages: Sequence[str]) -> str:
    """Which passages got drafts because the built-in writer does not write their language, in one sentence."""
    parts = [f"{count(n, 'passage')} in {language_name(code)}" for code, n in passages_by_language.most_common()]
    written = sorted(language_name(code) for code in writes_languages)
    return (
        f"The built-in question writer writes only {_listed(written)}, so {_listed(parts)} got drafts to edit; "
        "an LLM you connect writes questions in their language."
    )


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def no_suggestion_note(dropped: Sequence[Suggestion]) -> str:
    """Why a gap has no suggestion at all, in one sentence."""
    if dropped:
        return (
            f"No question could be kept: the {len(dropped)} written "
            f"{'question' if len(dropped) == 1 else 'questions'} failed the checks, and its least covered "
            "passages hold no sentence to draft one from (tables, lists or captions); write one yourself."
        )
    return (
        "No question could be suggested: its least covered passages hold no sentence to draft one from "
        "(tables, lists or captions); write one yourself."
    )


def _check_gap_inputs(n, documents, vectors, labels, centroids, distances, coverage) -> int:
    """The number of clusters; InputError when the inputs of :func:`analyze_gaps` do not fit the ``n`` chunks."""
    for name, length in (
        ("chunk_documents", len(documents)),
        ("chunk_vectors", vectors.shape[0] if vectors.ndim == 2 else -1),
        ("labels", labels.shape[0] if labels.ndim == 1 else -1),
        ("min_distances", distances.shape[0] if distances.ndim == 1 else -1),
    ):
        if length != n:
            raise InputError(f"{name} must have one entry per chunk ({n}); got {length}.")
    n_clusters = centroids.shape[0] if centroids.ndim == 2 else 0
    if coverage.shape != (n_clusters,):
        raise InputError(
            f"cluster_coverage must have one value per centroid ({n_clusters}); got shape {coverage.shape}."
        )
    if n and (labels.min() < 0 or labels.max() >= n_clusters):
        raise InputError(f"labels must be cluster numbers 0..{n_clusters - 1}.")
    return n_clusters
