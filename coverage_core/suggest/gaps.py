"""Gap analysis: which topics the test questions miss, and questions to fill them.

A *gap* is a cluster of chunks whose coverage is below
``GapConfig.gap_threshold``. For each gap we report what it is about
(c-TF-IDF keyphrases), the passages that most need a question (the least
covered of its most representative chunks), and suggested questions:

* offline (default): question **drafts** templated from those passages,
  marked ``origin="draft"``; they are a starting point for a person to edit,
  not finished test questions;
* with an LLM (:class:`~coverage_core.suggest.llm.ChatClient`): questions the model
  wrote from the passages, marked ``origin="llm"``. If the LLM fails for a
  gap, that gap falls back to drafts and a warning says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core.errors import InputError, ProviderError
from coverage_core.suggest.llm import ChatClient
from coverage_core.validation import shorten, unit_rows
from coverage_core.stages.topics import MAX_CHUNKS_PER_CLUSTER, N_LABEL_TERMS, N_SPARE_TERMS, cluster_terms, stem_word

__all__ = [
    "Gap",
    "GapConfig",
    "Suggestion",
    "analyse_gaps",
    "extract_themes",
    "rank_gaps",
    "representative_chunks",
    "representatives_by_cluster",
]

# How many of a cluster's most central chunks count as "representative";
# the least covered of these become the gap's passages.
N_REPRESENTATIVE = 10
# Longest passage text sent to the LLM / kept in a Suggestion, in characters.
PROMPT_PASSAGE_CHARS = 1200
SUGGESTION_PASSAGE_CHARS = 300
# Existing questions shown to the LLM so it does not repeat them.
N_EXISTING_IN_PROMPT = 20
# LLM failures after which asking again for the next gap is pointless.
_FATAL_KINDS = {"auth", "connection", "timeout", "rate_limit"}
# A threshold on a coverage score (1 - a cosine distance in [0, 2]): above
# the lowest coverage, -1, and at most the highest, 1. The CLI reads it too.
COVERAGE_THRESHOLD_RANGE = (-1.0, 1.0)


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
    """

    gap_threshold: float = GAP_COVERAGE_THRESHOLD
    size_weight: float = 0.3
    rule: str = "tested_share"
    tested_share_threshold: float = GAP_TESTED_SHARE
    n_themes: int = 5
    n_suggestions: int = 3
    n_passages: int = 3

    def __post_init__(self):
        low, high = COVERAGE_THRESHOLD_RANGE
        if not low < self.gap_threshold <= high:
            raise InputError(
                f"gap_threshold is a coverage and must be in ({low:g}, {high:g}]; got {self.gap_threshold}."
            )
        if not 0 <= self.size_weight <= 1:
            raise InputError(f"size_weight must be between 0 and 1; got {self.size_weight}.")
        if self.rule not in GAP_RULES:
            raise InputError(f"The gap rule must be one of {', '.join(GAP_RULES)}; got {self.rule!r}.")
        if not 0 < self.tested_share_threshold <= 1:
            raise InputError(
                f"tested_share_threshold is a share of passages and must be in (0, 1]; got {self.tested_share_threshold}."
            )
        for name in ("n_themes", "n_suggestions", "n_passages"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"{name} must be a whole number, at least 1; got {value}.")


@dataclass(frozen=True)
class Suggestion:
    """A suggested test question for a gap.

    ``origin`` is ``"llm"`` (written by the model) or ``"draft"`` (templated
    offline, to be edited). ``document`` and ``passage`` (shortened) are the
    source the question is answerable from; empty when an LLM question cited
    no valid passage.
    """

    cluster: int
    text: str
    origin: str
    document: str
    passage: str


def _suggestion(cluster: int, text: str, origin: str, index: int | None, chunk_texts, chunk_documents) -> Suggestion:
    """A :class:`Suggestion` answerable from chunk ``index`` (None: no passage, empty source)."""
    if index is None:
        return Suggestion(cluster=cluster, text=text, origin=origin, document="", passage="")
    return Suggestion(
        cluster=cluster,
        text=text,
        origin=origin,
        document=str(chunk_documents[index]),
        passage=shorten(chunk_texts[index], SUGGESTION_PASSAGE_CHARS, at_word=True),
    )


@dataclass(frozen=True)
class Gap:
    """An under-covered cluster.

    ``passages`` are chunk indices of its least-covered representative
    chunks, worst first.
    """

    cluster: int
    coverage: float
    size: int
    share: float
    priority: float
    themes: tuple[str, ...]
    passages: tuple[int, ...]
    suggestions: tuple[Suggestion, ...]


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
    cluster_coverage, cluster_sizes, config: GapConfig | None = None, is_gap=None
) -> list[tuple[int, float]]:
    """Clusters with coverage below ``config.gap_threshold``, most urgent first.

    ``is_gap`` (bool per cluster), when given, is the decision instead (e.g.
    the tested-share rule of :class:`GapConfig`); the ranking is the same.

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
    if is_gap is None:
        is_gap = coverage < config.gap_threshold
    is_gap = (sizes > 0) & ~np.isnan(coverage) & np.asarray(is_gap, dtype=bool)
    gaps = [(int(k), float(priority[k])) for k in np.flatnonzero(is_gap)]
    return sorted(gaps, key=lambda item: (-item[1], item[0]))


# Rows compared with their centroid at a time: bounds the temporaries (the
# rows as float32 and their centroids) to ~100 MB at 384 dimensions.
_BLOCK_ROWS = 65_536


def _cosine_to_centres(rows: np.ndarray, centres: np.ndarray, centre_norms: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row (m, d) with the centre beside it (m, d); 0 for a zero row.

    Row by row (einsum, no BLAS): a row's value does not depend on which
    other rows are in the call, so one cluster at a time and all clusters
    at once rank identically.
    """
    dots = np.einsum("ij,ij->i", rows, centres)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows)) * np.maximum(centre_norms, 1e-12)
    return dots / np.where(norms > 0, norms, 1.0)


def _similarities(vectors: np.ndarray, index, labels: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Cosine of chunks ``index`` (an index array, or None for all) to their own cluster's centroid, in blocks."""
    centre_norms = np.linalg.norm(centroids, axis=1)
    n = len(vectors) if index is None else len(index)
    similarity = np.empty(n, dtype=np.float32)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n)
        rows = vectors[start:stop] if index is None else vectors[index[start:stop]]
        own = labels[start:stop] if index is None else labels[index[start:stop]]
        # Only these rows are converted: a float64 corpus is never copied whole.
        similarity[start:stop] = _cosine_to_centres(
            np.asarray(rows, dtype=np.float32), centroids[own], centre_norms[own]
        )
    return similarity


def representative_chunks(chunk_vectors, labels, centroids, cluster: int, n: int) -> np.ndarray:
    """Indices of the ``n`` chunks of ``cluster`` closest to its centroid (cosine), closest first.

    For every cluster at once use :func:`representatives_by_cluster` (one
    pass over the chunks instead of one per cluster); both rank the same.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n_chunks, d)
    labels : array-like of shape (n_chunks,)
    centroids : array-like of shape (K, d), any length
    cluster : int
    n : int

    Returns
    -------
    ndarray of int, at most ``n`` (fewer if the cluster is smaller).
    """
    vectors = np.asarray(chunk_vectors)
    labels = np.asarray(labels)
    centroids = np.asarray(centroids, dtype=np.float32)
    members = np.flatnonzero(labels == cluster)
    if members.size == 0 or n < 1:
        return np.zeros(0, dtype=np.intp)
    own = np.full(len(labels), 0, dtype=np.intp)  # index into the one-row centroid table below
    similarity = _similarities(vectors, members, own, centroids[[cluster]])
    order = np.lexsort((members, -similarity))  # ties: lower index first
    return members[order[:n]].astype(np.intp)


def representatives_by_cluster(chunk_vectors, labels, centroids, n: int) -> list[np.ndarray]:
    """:func:`representative_chunks` of every cluster, in one blocked pass over the chunks.

    Parameters
    ----------
    chunk_vectors : array-like of shape (n_chunks, d)
    labels : array-like of shape (n_chunks,), int in 0..K-1
    centroids : array-like of shape (K, d)
    n : int

    Returns
    -------
    list of K int arrays: each cluster's at most ``n`` chunks closest to
    its centroid, closest first (ties: lower index first); empty for an
    empty cluster.
    """
    vectors = np.asarray(chunk_vectors)
    labels = np.asarray(labels, dtype=np.intp)
    centroids = np.asarray(centroids, dtype=np.float32)
    k = len(centroids)
    if labels.shape != (len(vectors),):
        raise InputError(f"labels must hold one cluster label per chunk ({len(vectors)}); got shape {labels.shape}.")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise InputError(f"labels must be cluster numbers 0..{k - 1}.")
    if n < 1 or not labels.size:
        return [np.zeros(0, dtype=np.intp) for _ in range(k)]
    similarity = _similarities(vectors, None, labels, centroids)
    order = np.lexsort((np.arange(len(labels)), -similarity, labels))
    starts = np.searchsorted(labels[order], np.arange(k + 1))
    return [order[starts[c] : min(starts[c] + n, starts[c + 1])].astype(np.intp) for c in range(k)]


def _least_covered(representatives: np.ndarray, min_distances: np.ndarray, n: int) -> list[int]:
    """The ``n`` representatives farthest from any question, worst first."""
    distances = min_distances[representatives]
    order = np.argsort(-distances, kind="stable")
    return [int(i) for i in representatives[order[:n]]]


# --------------------------------------------------------------------------
# suggestions
# --------------------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_]+")


def _normalise(text: str) -> str:
    """Lowercase, punctuation and whitespace runs collapsed: for duplicate checks."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


# Sentence ends: . ! ? (optionally closed by a quote or bracket) before a space, or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")
# Markers of markup, captions and furniture: such sentences are never quoted.
_NOT_PROSE = re.compile(
    r"=|https?:|www\.|<[^>]*>|\{\{|\}\}|\[\[|\]\]|\||^\s*[*#•·\-–—>]|^\W*(?:fig(?:ure)?|table|photo|image|caption|source|note|see also)\b",
    re.IGNORECASE,
)
# A sentence that needs the one before it to make sense.
_DANGLING_START = re.compile(
    r"^(?:it|its|this|these|that|those|they|their|he|his|she|her|him|them|such|there|here|however|also|"
    r"thus|hence|then|both|which|another|the latter|the former)\b",
    re.IGNORECASE,
)
# "X is a Y…": a definition, asked back as "What is X?".
_DEFINITION = re.compile(
    r"^(?P<subject>(?:(?:The|An|A) )?[A-Z][\w'-]*(?: [\w'-]+){0,3}?)(?: \([^)]{1,80}\))?,? "
    r"(?P<verb>is|are|was|were) (?:an?|the|one of the) \w",
)
_MIN_SENTENCE_WORDS, _MAX_SENTENCE_WORDS = 8, 45


# A period after these does not end a sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Mt|No|vs|etc|ca|approx|e\.g|i\.e)|\b[A-Z])\.$")
# Reference-list debris: dates of citations, "pp.", "Retrieved", "ISBN", stripped markup (", ," "()").
_CITATION = re.compile(
    r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}\b|\bpp?\. ?\d|\bretrieved\b"
    r"|\bisbn\b|\bdoi\b|,\s*,|\(\s*\)|\(\s*[,;]",
    re.IGNORECASE,
)


def _sentences(text: str) -> list[str]:
    """The complete sentences of a chunk: a fragment cut off at either end of the chunk is left out."""
    parts: list[str] = []
    for part in (" ".join(p.split()) for p in _SENTENCE_END.split(text)):
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] += " " + part
        elif part:
            parts.append(part)
    return [p for p in parts if re.match(r"[\"“‘]?[A-Z]", p) and re.search(r"[.!?][\"'”’)\]]*$", p)]


def _is_prose(sentence: str, strict: bool = True) -> bool:
    """A sentence a tester can quote: not markup, a caption, a list of numbers or a heading.

    Not ``strict``: any sentence of 5 words or more that is not markup,
    numbers or a reference (for passages of short sentences only).
    """
    words = sentence.split()
    shortest = _MIN_SENTENCE_WORDS if strict else 5
    if not shortest <= len(words) <= _MAX_SENTENCE_WORDS or _NOT_PROSE.search(sentence):
        return False
    alphabetic = [w for w in words if _WORD.fullmatch(w.strip(".,;:!?()\"'“”‘’"))]
    if len(alphabetic) < 0.7 * len(words) or _CITATION.search(sentence):
        return False  # numbers, codes, references
    if not strict:
        return True
    if sum(w[:1].isupper() for w in words[1:]) > 0.4 * (len(words) - 1):
        return False  # a title, a caption or a reference: "The Flute Book: A Complete Guide for …"
    # Prose has function words; captions and title lists ("Statue of James Watt in Leeds") few.
    function = sum(w.lower().strip(".,;:!?()\"'“”‘’") in ENGLISH_STOP_WORDS for w in words)
    return function >= 0.2 * len(words)


def _key_sentences(text: str, theme_words: set[str], strict: bool = True) -> list[str]:
    """The chunk's quotable sentences, best first.

    Best is most content-word dense: distinct content words (theme words
    count double) per square root of length, so neither the shortest nor
    the longest sentence wins by size alone; a sentence starting with a
    pronoun or "However" needs its context and ranks last.
    """
    scored = []
    for position, sentence in enumerate(_sentences(text)):
        if not _is_prose(sentence, strict):
            continue
        words = [w.lower() for w in _WORD.findall(sentence)]
        content = {w for w in words if len(w) > 2 and w not in ENGLISH_STOP_WORDS}
        density = (len(content) + len(content & theme_words)) / np.sqrt(len(words))
        scored.append((bool(_DANGLING_START.match(sentence)), -density, position, sentence))
    return [sentence for *_, sentence in sorted(scored)]


def _question_from(sentence: str) -> str | None:
    """A real question from a definitional sentence ("The koala is an …" → "What is the koala?"), else None."""
    match = _DEFINITION.match(sentence)
    if not match:
        return None
    subject = match["subject"]
    first, _, rest = subject.partition(" ")
    if first.lower() in ENGLISH_STOP_WORDS - {"the", "an", "a"}:
        return None  # "Some of …", "Most …", "Many …"
    if first in ("The", "An", "A"):
        subject = first.lower() + " " + rest
    verb = {"is": "is", "are": "are", "was": "was", "were": "were"}[match["verb"]]
    return f"What {verb} {subject}?"


DRAFT_PREFIX = "Write a question answered by:"
"""How an offline draft that the tester still has to word as a question begins."""


def is_unfinished_draft(text: str) -> bool:
    """Whether ``text`` is still an offline draft (``DRAFT_PREFIX`` …), not a question a user would ask."""
    return str(text).strip().lower().startswith(DRAFT_PREFIX.lower())


def _draft_questions(
    cluster: int, passages: list[int], chunk_texts, chunk_documents, themes: Sequence[str], n: int, seen: set[str]
) -> list[Suggestion]:
    """Offline drafts from the key sentences of the least covered passages.

    Each draft quotes a real sentence of a passage: a definitional sentence
    becomes the question it answers ("What is the koala?"); any other is
    offered as ``Write a question answered by: “<sentence>”``, a draft the
    tester finishes. Drafts take the best sentence of every passage first,
    then the second best, and so on, until ``n`` distinct drafts exist. A
    passage without a quotable sentence (markup, captions, numbers) gives none.
    """
    theme_words = {w for phrase in themes for w in _WORD.findall(phrase.lower())}
    ranked = [[(index, s) for s in _key_sentences(chunk_texts[index], theme_words)] for index in passages]
    if not any(ranked):  # only short sentences: accept any plain one
        ranked = [[(index, s) for s in _key_sentences(chunk_texts[index], theme_words, False)] for index in passages]
    drafts: list[Suggestion] = []
    for depth in range(max((len(r) for r in ranked), default=0)):
        for candidates in ranked:
            if len(drafts) == n or depth >= len(candidates):
                continue
            index, sentence = candidates[depth]
            text = _question_from(sentence) or f"{DRAFT_PREFIX} “{sentence}”"
            if _normalise(text) in seen:
                continue
            seen.add(_normalise(text))
            drafts.append(_suggestion(cluster, text, "draft", index, chunk_texts, chunk_documents))
    return drafts


_SYSTEM_PROMPT = (
    "You write test questions for evaluating a retrieval-augmented generation (RAG) system. "
    "Every question must be answerable from the given passages alone. Reply with JSON only."
)


def _existing_sample(existing_questions: Sequence[str], themes: Sequence[str]) -> list[str]:
    """Existing questions on this topic (sharing theme words), so the LLM avoids them."""
    words = {stem_word(w) for phrase in themes for w in _WORD.findall(phrase.lower())}
    scored = []
    for position, question in enumerate(existing_questions):
        overlap = len({stem_word(w) for w in _WORD.findall(str(question).lower())} & words)
        if overlap:
            scored.append((-overlap, position, str(question)))
    return [question for _, _, question in sorted(scored)[:N_EXISTING_IN_PROMPT]]


def _llm_prompt(themes: Sequence[str], passage_texts: list[str], existing: list[str], n_questions: int) -> str:
    lines = [
        "The passages below come from one topic of a knowledge base that the current test questions "
        "barely cover.",
        f"Topic keywords: {', '.join(themes) if themes else '(none found)'}.",
        "",
        "Passages:",
    ]
    lines += [f"[{i}] {shorten(text, PROMPT_PASSAGE_CHARS, at_word=True)}" for i, text in enumerate(passage_texts, 1)]
    lines += ["", "Existing test questions on this topic (do not repeat or paraphrase them):"]
    lines += [f"- {shorten(q, 300, at_word=True)}" for q in existing] or ["(none)"]
    lines += [
        "",
        f"Write {n_questions} new test questions. Each question must be answerable from the passage it cites, "
        "using only information stated in that passage. Prefer the first passages: they are the least covered.",
        "Also give 3 to 5 short phrases (1-3 words each) naming the topic.",
        'Reply with JSON only, in exactly this form: {"themes": ["..."], '
        '"questions": [{"question": "...", "passage": <number of the passage>}]}',
    ]
    return "\n".join(lines)


def _parse_llm_answer(answer, n_passages: int) -> tuple[list[str], list[tuple[str, int | None]]]:
    """Themes and (question, 0-based passage or None) from the model's JSON."""
    if not isinstance(answer, dict):
        raise ValueError("the reply is not a JSON object")
    themes = []
    raw_themes = answer.get("themes")
    if isinstance(raw_themes, list):
        themes = [shorten(t, 60, at_word=True) for t in raw_themes if isinstance(t, str) and t.strip()][:5]
    questions = []
    raw_questions = answer.get("questions")
    for item in raw_questions if isinstance(raw_questions, list) else []:
        text, passage = (item, None) if isinstance(item, str) else (None, None)
        if isinstance(item, dict):
            text, passage = item.get("question"), item.get("passage")
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            number = int(passage)
        except (TypeError, ValueError):
            number = 0
        questions.append((" ".join(text.split()), number - 1 if 1 <= number <= n_passages else None))
    if not questions:
        raise ValueError("the reply holds no questions")
    return themes, questions


def _llm_questions(
    llm: ChatClient,
    cluster: int,
    themes: Sequence[str],
    prompt_passages: list[int],
    chunk_texts,
    chunk_documents,
    existing_questions: Sequence[str],
    n: int,
    seen: set[str],
    chunk_vectors=None,
    embed=None,
    support_threshold: float | None = None,
) -> tuple[list[str], list[Suggestion], int]:
    prompt = _llm_prompt(
        themes, [chunk_texts[i] for i in prompt_passages], _existing_sample(existing_questions, themes), n
    )
    answer = llm.complete_json(_SYSTEM_PROMPT, prompt)
    try:
        llm_themes, questions = _parse_llm_answer(answer, len(prompt_passages))
    except ValueError as error:
        raise ProviderError(f"The LLM reply could not be used: {error}.", kind="bad_response") from None
    fresh = []
    for text, passage in questions:
        if _normalise(text) not in seen and _normalise(text) not in {_normalise(t) for t, _ in fresh}:
            fresh.append((text, prompt_passages[passage] if passage is not None else None))
    n_dropped = 0
    if fresh and embed is not None and support_threshold is not None:
        fresh, n_dropped = _reaching_passages(fresh, prompt_passages, chunk_vectors, embed, support_threshold)
    suggestions = []
    for text, index in fresh:
        if len(suggestions) == n:
            break
        seen.add(_normalise(text))
        suggestions.append(_suggestion(cluster, text, "llm", index, chunk_texts, chunk_documents))
    if not suggestions:
        if n_dropped:
            error = ProviderError(f"none of its questions reached their passage ({n_dropped} dropped)", kind="bad_response")
            error.dropped = n_dropped
            raise error
        raise ProviderError("The LLM only repeated existing questions.", kind="bad_response")
    return llm_themes, suggestions, n_dropped


def _reaching_passages(fresh, prompt_passages, chunk_vectors, embed, support_threshold: float):
    """The (question, chunk) pairs whose question embedding reaches its passage, and how many did not.

    A question reaches its passage when their cosine similarity is at least
    ``support_threshold``. A question that cited no valid passage is matched
    to the prompt passage it is most similar to.
    """
    question_vectors = np.asarray(embed([text for text, _ in fresh]), dtype=np.float64)
    passages = np.asarray(np.asarray(chunk_vectors)[prompt_passages], dtype=np.float64)
    similarity = unit_rows(question_vectors) @ unit_rows(passages).T  # (questions, prompt passages)
    kept = []
    for row, (text, index) in enumerate(fresh):
        column = prompt_passages.index(index) if index is not None else int(np.argmax(similarity[row]))
        if similarity[row, column] >= support_threshold:
            kept.append((text, prompt_passages[column]))
    return kept, len(fresh) - len(kept)


# --------------------------------------------------------------------------
# the analysis
# --------------------------------------------------------------------------


def analyse_gaps(
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
    is_gap=None,
) -> tuple[list[Gap], list[str]]:
    """Find the under-covered clusters and suggest questions for them.

    Parameters
    ----------
    chunk_texts, chunk_documents : sequences of n str
    chunk_vectors : array-like of shape (n, d)
    labels : array-like of shape (n,), int in 0..K-1
    centroids : array-like of shape (K, d)
    min_distances : array-like of shape (n,), each chunk's distance to its
        nearest question
    cluster_coverage : array-like of shape (K,)
    existing_questions : the test questions already there; suggestions
        never repeat them (compared lowercase, ignoring punctuation)
    config : GapConfig
    llm : ChatClient, optional; without it suggestions are offline drafts
    embed : callable, optional, list of str -> array (m, d) in the space of
        ``chunk_vectors``; with ``support_threshold`` it checks LLM questions
    support_threshold : float, optional
        An LLM question is kept only if the cosine similarity of its
        embedding to its source passage is at least this; the others are
        dropped and counted in a warning. None: no check.

    is_gap : array-like of shape (K,), bool, optional
        Which clusters are gaps (the pipeline's ``clusters["is_gap"]``);
        None: coverage below ``config.gap_threshold``.

    Returns
    -------
    gaps : list of Gap, most urgent first
    warnings : list of str, one sentence each (LLM failures and fallbacks)
    """
    config = config or GapConfig()
    texts = [str(t) for t in chunk_texts]
    documents = list(chunk_documents)
    vectors = np.asarray(chunk_vectors)
    labels = np.asarray(labels, dtype=np.intp)
    centroids = np.asarray(centroids, dtype=np.float32)
    distances = np.asarray(min_distances, dtype=np.float64)
    coverage = np.asarray(cluster_coverage, dtype=np.float64)
    n_clusters = _check_gap_inputs(len(texts), documents, vectors, labels, centroids, distances, coverage)

    sizes = np.bincount(labels, minlength=n_clusters)
    ranked = rank_gaps(coverage, sizes, config, is_gap=is_gap)
    if not ranked:
        return [], []
    themes = extract_themes(texts, labels, n_clusters, config.n_themes)
    seen = {_normalise(str(q)) for q in existing_questions}
    warnings: list[str] = []
    n_unsupported = 0

    gaps = []
    n_representative = max(N_REPRESENTATIVE, config.n_passages)
    if len(ranked) > 1:
        by_cluster = representatives_by_cluster(vectors, labels, centroids, n_representative)
    for cluster, priority in ranked:
        if len(ranked) > 1:
            representatives = by_cluster[cluster]
        else:  # one gap: its own cluster's rows are all that need reading
            representatives = representative_chunks(vectors, labels, centroids, cluster, n_representative)
        passages = _least_covered(representatives, distances, config.n_passages)
        gap_themes = list(themes[cluster])
        suggestions = None
        if llm is not None:
            gap_themes, suggestions, dropped, fatal = _llm_suggestions(
                llm, cluster, gap_themes, passages, representatives, texts, documents,
                existing_questions, config, seen, vectors, embed, support_threshold, warnings,
            )
            n_unsupported += dropped
            if fatal:
                llm = None  # the next gaps would fail the same way
        if suggestions is None:
            suggestions = _draft_questions(
                cluster, passages, texts, documents, gap_themes, config.n_suggestions, seen
            )
        gaps.append(
            Gap(
                cluster=cluster,
                coverage=float(coverage[cluster]),
                size=int(sizes[cluster]),
                share=float(sizes[cluster] / len(texts)),
                priority=priority,
                themes=tuple(gap_themes),
                passages=tuple(passages),
                suggestions=tuple(suggestions),
            )
        )
    if n_unsupported:
        warnings.append(_unsupported_warning(n_unsupported, support_threshold))
    return gaps, warnings


def _check_gap_inputs(n, documents, vectors, labels, centroids, distances, coverage) -> int:
    """The number of clusters; InputError when the inputs of :func:`analyse_gaps` do not fit the ``n`` chunks."""
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


def _llm_suggestions(
    llm, cluster, themes, passages, representatives, texts, documents,
    existing_questions, config, seen, vectors, embed, support_threshold, warnings,
):
    """One gap's themes and questions from the LLM, how many of its questions
    were dropped, and whether the LLM failed in a way the next gaps would too.

    On failure a warning is added and the suggestions are None, so the gap
    falls back to drafts.
    """
    # The least covered passages first, then the two most central
    # ones for context if not already there.
    prompt_passages = passages + [int(i) for i in representatives[:2] if int(i) not in passages]
    try:
        llm_themes, suggestions, dropped = _llm_questions(
            llm, cluster, themes, prompt_passages, texts, documents,
            existing_questions, config.n_suggestions, seen, vectors, embed, support_threshold,
        )
    except ProviderError as error:
        fatal = error.kind in _FATAL_KINDS
        if fatal:
            warnings.append(f"The LLM is unavailable, so offline question drafts are shown instead: {error}")
        else:
            warnings.append(
                f"Cluster {cluster}: offline question drafts are shown because the LLM failed: {error}"
            )
        return themes, None, getattr(error, "dropped", 0), fatal
    return llm_themes or themes, suggestions, dropped, False


def _unsupported_warning(n_unsupported: int, support_threshold: float) -> str:
    return (
        f"{n_unsupported} suggested question{'s' if n_unsupported != 1 else ''} did not reach "
        f"{'their passage' if n_unsupported != 1 else 'its passage'} (cosine similarity below "
        f"{support_threshold:.3f}) and {'were' if n_unsupported != 1 else 'was'} dropped."
    )
