"""Gap analysis: which topics the test questions miss, and questions to fill them.

A *gap* is a cluster of chunks whose coverage is below
``GapConfig.gap_threshold``. For each gap we report what it is about
(c-TF-IDF keyphrases), the passages that most need a question (the least
covered of its most representative chunks), and suggested questions:

* offline (default): question **drafts** templated from those passages,
  marked ``origin="draft"``; they are a starting point for a person to edit,
  not finished test questions;
* with an LLM (:class:`~coverage_core.llm.ChatClient`): questions the model
  wrote from the passages, marked ``origin="llm"``. If the LLM fails for a
  gap, that gap falls back to drafts and a warning says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from coverage_core.errors import InputError, ProviderError
from coverage_core.llm import ChatClient

__all__ = [
    "Gap",
    "GapConfig",
    "Suggestion",
    "analyse_gaps",
    "extract_themes",
    "rank_gaps",
    "representative_chunks",
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


@dataclass(frozen=True)
class GapConfig:
    """Settings of the gap analysis.

    Gaps are clusters with coverage below ``gap_threshold``, ranked by::

        priority = (1 - size_weight) * (1 - coverage) + size_weight * share

    where ``share`` is the cluster's fraction of all chunks: mostly how badly
    the topic is covered, partly how much of the knowledge base it is.
    """

    gap_threshold: float = 0.7
    size_weight: float = 0.3
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
# themes: class-based TF-IDF
# --------------------------------------------------------------------------

# Punctuation other than in-word apostrophes and hyphens ends a phrase.
_PHRASE_BREAK = re.compile(r"[^\w\s'-]+|\s['-]|['-]\s")


def _analyse(text: str) -> list[str]:
    """Words and adjacent word pairs of a text, for ``CountVectorizer(analyzer=...)``.

    Unlike the built-in analyser, pairs are only formed from words that are
    next to each other in the text: no pair spans a removed stop word, a
    number or punctuation (the built-in one turns "area is among the largest"
    into the fake phrase "area largest").
    """
    terms = []
    for segment in _PHRASE_BREAK.split(text.lower()):
        words = [
            w if len(w) >= 2 and w.isalpha() and w not in ENGLISH_STOP_WORDS else None
            for w in re.findall(r"\w+", segment)
        ]
        terms += [w for w in words if w]
        terms += [f"{a} {b}" for a, b in zip(words, words[1:]) if a and b]
    return terms


def _count_terms(texts: list[str]):
    """Chunk x term counts of words and word pairs, or (None, None) if no term survives."""
    # On tiny corpora a term seen in two chunks may not exist; then one is enough.
    for min_df in ((2, 1) if len(texts) >= 20 else (1,)):
        vectorizer = CountVectorizer(analyzer=_analyse, min_df=min_df)
        try:
            counts = vectorizer.fit_transform(texts)
        except ValueError:  # "empty vocabulary": only stop words, numbers, or nothing
            continue
        return counts, vectorizer.get_feature_names_out()
    return None, None


def _stem(word: str) -> str:
    # Crude plural folding, only to spot near-duplicate phrases.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _distinct_phrases(ranked: list[tuple[str, float]], n: int) -> list[str]:
    """Top ``n`` phrases without near-duplicates.

    Phrases sharing a word (plurals folded) are near-duplicates: "gogh",
    "van gogh", "gogh painted". Of those only the first ranked is kept,
    except that a longer phrase containing it replaces it when its weight is
    at least 0.7 times as large ("van gogh" over "gogh", but "violin used" does
    not replace "violin").
    """
    chosen: list[tuple[str, frozenset, float]] = []
    for phrase, weight in ranked:
        words = frozenset(_stem(w) for w in phrase.split())
        overlapping = [i for i, (_, other, _) in enumerate(chosen) if other & words]
        if not overlapping:
            if len(chosen) < n:
                chosen.append((phrase, words, weight))
        elif all(chosen[i][1] < words and weight >= 0.7 * chosen[i][2] for i in overlapping):
            chosen[overlapping[0]] = (phrase, words, weight)
            chosen = [c for i, c in enumerate(chosen) if i not in overlapping[1:]]
    return [phrase for phrase, _, _ in chosen]


# Chunks per cluster counted for themes. A topic's top phrases are stable long
# before this many passages, and counting words is the costly part of theme
# extraction on a large corpus (20,000 chunks of ~1,000 characters: 14 s with
# 300 per cluster on uniform word salad; with Zipfian text ~3 s at 100 and
# ~1.5 s at 50, where a topic still has ~8,000 words; benchmarks/bench_analysis.py).
MAX_THEME_CHUNKS_PER_CLUSTER = 50


def _evenly_per_cluster(labels: np.ndarray, cap: int) -> np.ndarray:
    """Indices keeping at most ``cap`` evenly spaced chunks of each cluster, in order."""
    keep = []
    for cluster in np.unique(labels):
        members = np.flatnonzero(labels == cluster)
        if len(members) > cap:
            members = members[np.linspace(0, len(members) - 1, cap).round().astype(np.intp)]
        keep.append(members)
    return np.sort(np.concatenate(keep)) if keep else np.array([], dtype=np.intp)


def extract_themes(
    chunk_texts: Sequence[str],
    labels,
    n_clusters: int,
    n_themes: int = 5,
    max_chunks_per_cluster: int | None = MAX_THEME_CHUNKS_PER_CLUSTER,
) -> list[list[str]]:
    """Keyphrases that set each cluster apart from the others (c-TF-IDF).

    Words and adjacent word pairs are counted per chunk (scikit-learn
    ``CountVectorizer``, English stop words removed, pairs never spanning a
    stop word or punctuation) and summed per cluster.
    With ``tf_{t,c}`` the count of term ``t`` in cluster ``c`` divided by all
    term counts of ``c``, ``f_t`` the count of ``t`` over all clusters and
    ``A`` the average number of terms per cluster::

        W_{t,c} = tf_{t,c} * log(1 + A / f_t)

    A term frequent in one cluster and rare elsewhere scores high. (The
    class-based TF-IDF idea of BERTopic, implemented here.) The top terms
    are then thinned of near-duplicates such as "gogh" next to "van gogh".

    Parameters
    ----------
    chunk_texts : sequence of n str
    labels : array-like of shape (n,), int in 0..n_clusters-1
    n_clusters : int
    n_themes : int, phrases per cluster
    max_chunks_per_cluster : int or None
        Larger clusters are represented by this many evenly spaced chunks
        (None: all).

    Returns
    -------
    list of n_clusters lists of up to ``n_themes`` lowercase phrases, best
    first; empty for a cluster without usable words (or when the whole
    corpus has none).
    """
    texts = [str(text) for text in chunk_texts]
    labels = np.asarray(labels, dtype=np.intp)
    if labels.shape != (len(texts),):
        raise InputError(f"labels must hold one cluster label per chunk ({len(texts)}); got shape {labels.shape}.")
    if labels.size and (labels.min() < 0 or labels.max() >= n_clusters):
        raise InputError(f"labels must be cluster numbers 0..{n_clusters - 1}.")
    themes: list[list[str]] = [[] for _ in range(n_clusters)]
    if not texts:
        return themes
    if max_chunks_per_cluster is not None:
        keep = _evenly_per_cluster(labels, max_chunks_per_cluster)
        texts, labels = [texts[i] for i in keep], labels[keep]
    counts, terms = _count_terms(texts)
    if counts is None:
        return themes

    membership = sp.csr_matrix(
        (np.ones(len(texts)), (labels, np.arange(len(texts)))), shape=(n_clusters, len(texts))
    )
    class_counts = np.asarray((membership @ counts).todense(), dtype=np.float64)  # (K, V)
    per_class = class_counts.sum(axis=1, keepdims=True)
    tf = np.divide(class_counts, per_class, out=np.zeros_like(class_counts), where=per_class > 0)
    average_terms = per_class.sum() / max(int((per_class > 0).sum()), 1)
    idf = np.log(1.0 + average_terms / class_counts.sum(axis=0))
    weights = tf * idf
    # Chunks of each cluster containing each term: breaks ties between
    # equally weighted terms (common in small corpora) in favour of spread.
    spread = np.asarray((membership @ (counts > 0).astype(np.float64)).todense())

    for k in range(n_clusters):
        present = np.flatnonzero(class_counts[k] > 0)
        if present.size == 0:
            continue
        # Best weight first, then most chunks, then alphabetical (reproducible).
        keys = (terms[present], -spread[k, present], -np.round(weights[k, present], 12))
        order = present[np.lexsort(keys)][: 10 * n_themes]
        themes[k] = _distinct_phrases([(str(terms[t]), float(weights[k, t])) for t in order], n_themes)
    return themes


# --------------------------------------------------------------------------
# ranking, representative passages
# --------------------------------------------------------------------------


def rank_gaps(cluster_coverage, cluster_sizes, config: GapConfig | None = None) -> list[tuple[int, float]]:
    """Clusters with coverage below ``config.gap_threshold``, most urgent first.

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
    is_gap = (sizes > 0) & ~np.isnan(coverage) & (coverage < config.gap_threshold)
    gaps = [(int(k), float(priority[k])) for k in np.flatnonzero(is_gap)]
    return sorted(gaps, key=lambda item: (-item[1], item[0]))


def representative_chunks(chunk_vectors, labels, centroids, cluster: int, n: int) -> np.ndarray:
    """Indices of the ``n`` chunks of ``cluster`` closest to its centroid (cosine), closest first.

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
    vectors = np.asarray(chunk_vectors, dtype=np.float32)
    labels = np.asarray(labels)
    centre = np.asarray(centroids, dtype=np.float32)[cluster]
    members = np.flatnonzero(labels == cluster)
    if members.size == 0 or n < 1:
        return np.zeros(0, dtype=np.intp)
    rows = vectors[members]
    norms = np.linalg.norm(rows, axis=1) * max(float(np.linalg.norm(centre)), 1e-12)
    similarity = (rows @ centre) / np.where(norms > 0, norms, 1.0)
    order = np.lexsort((members, -similarity))  # ties: lower index first
    return members[order[:n]].astype(np.intp)


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


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"


def _sentences(text: str) -> list[str]:
    parts = [" ".join(p.split()) for p in re.split(r"(?<=[.!?])\s+|\n+", text)]
    long_enough = [p for p in parts if len(p.split()) >= 4]
    return long_enough or [" ".join(text.split())]


def _draft_questions(
    cluster: int, passages: list[int], chunk_texts, chunk_documents, themes: Sequence[str], n: int, seen: set[str]
) -> list[Suggestion]:
    """Template question drafts from the passages' most on-topic sentences.

    Each passage's sentences are ranked by how many theme words they contain;
    drafts take the best sentence of every passage first, then the second
    best, and so on, until ``n`` distinct drafts exist.
    """
    theme_words = [set(_WORD.findall(phrase.lower())) for phrase in themes]
    all_theme_words = set().union(*theme_words) if theme_words else set()
    ranked = []
    for index in passages:
        sentences = _sentences(chunk_texts[index])
        hits = [len(set(_WORD.findall(s.lower())) & all_theme_words) for s in sentences]
        order = sorted(range(len(sentences)), key=lambda i: (-hits[i], i))
        ranked.append([(index, sentences[i]) for i in order])

    drafts: list[Suggestion] = []
    used: set[int] = set()
    for depth in range(max((len(r) for r in ranked), default=0)):
        for candidates in ranked:
            if len(drafts) == n or depth >= len(candidates):
                continue
            index, sentence = candidates[depth]
            words = set(_WORD.findall(sentence.lower()))
            # The theme the sentence mentions most; among equals, one not yet
            # used by this gap's drafts, for variety; then the best ranked.
            options = sorted(range(len(themes)), key=lambda t: (-len(theme_words[t] & words), t in used, t))
            if options and theme_words[options[0]] & words:
                used.add(options[0])
                theme = themes[options[0]]
            else:
                theme = themes[0] if themes else "this topic"
            quote = _shorten(sentence, 120).replace('"', "'")
            text = f'What does the knowledge base say about {theme} (see: "{quote}")?'
            if _normalise(text) in seen:
                continue
            seen.add(_normalise(text))
            drafts.append(
                Suggestion(
                    cluster=cluster,
                    text=text,
                    origin="draft",
                    document=str(chunk_documents[index]),
                    passage=_shorten(chunk_texts[index], SUGGESTION_PASSAGE_CHARS),
                )
            )
    return drafts


_SYSTEM_PROMPT = (
    "You write test questions for evaluating a retrieval-augmented generation (RAG) system. "
    "Every question must be answerable from the given passages alone. Reply with JSON only."
)


def _existing_sample(existing_questions: Sequence[str], themes: Sequence[str]) -> list[str]:
    """Existing questions on this topic (sharing theme words), so the LLM avoids them."""
    words = {_stem(w) for phrase in themes for w in _WORD.findall(phrase.lower())}
    scored = []
    for position, question in enumerate(existing_questions):
        overlap = len({_stem(w) for w in _WORD.findall(str(question).lower())} & words)
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
    lines += [f"[{i}] {_shorten(text, PROMPT_PASSAGE_CHARS)}" for i, text in enumerate(passage_texts, 1)]
    lines += ["", "Existing test questions on this topic (do not repeat or paraphrase them):"]
    lines += [f"- {_shorten(q, 300)}" for q in existing] or ["(none)"]
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
        themes = [_shorten(t, 60) for t in raw_themes if isinstance(t, str) and t.strip()][:5]
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
) -> tuple[list[str], list[Suggestion]]:
    prompt = _llm_prompt(
        themes, [chunk_texts[i] for i in prompt_passages], _existing_sample(existing_questions, themes), n
    )
    answer = llm.complete_json(_SYSTEM_PROMPT, prompt)
    try:
        llm_themes, questions = _parse_llm_answer(answer, len(prompt_passages))
    except ValueError as error:
        raise ProviderError(f"The LLM reply could not be used: {error}.", kind="bad_response") from None
    suggestions = []
    for text, passage in questions:
        if len(suggestions) == n or _normalise(text) in seen:
            continue
        seen.add(_normalise(text))
        index = prompt_passages[passage] if passage is not None else None
        suggestions.append(
            Suggestion(
                cluster=cluster,
                text=text,
                origin="llm",
                document=str(chunk_documents[index]) if index is not None else "",
                passage=_shorten(chunk_texts[index], SUGGESTION_PASSAGE_CHARS) if index is not None else "",
            )
        )
    if not suggestions:
        raise ProviderError("The LLM only repeated existing questions.", kind="bad_response")
    return llm_themes, suggestions


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

    Returns
    -------
    gaps : list of Gap, most urgent first
    warnings : list of str, one sentence each (LLM failures and fallbacks)
    """
    config = config or GapConfig()
    texts = [str(t) for t in chunk_texts]
    documents = list(chunk_documents)
    n = len(texts)
    vectors = np.asarray(chunk_vectors, dtype=np.float32)
    labels = np.asarray(labels, dtype=np.intp)
    centroids = np.asarray(centroids, dtype=np.float32)
    distances = np.asarray(min_distances, dtype=np.float64)
    coverage = np.asarray(cluster_coverage, dtype=np.float64)
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

    sizes = np.bincount(labels, minlength=n_clusters)
    ranked = rank_gaps(coverage, sizes, config)
    if not ranked:
        return [], []
    themes = extract_themes(texts, labels, n_clusters, config.n_themes)
    seen = {_normalise(str(q)) for q in existing_questions}
    warnings: list[str] = []

    gaps = []
    for cluster, priority in ranked:
        n_representative = max(N_REPRESENTATIVE, config.n_passages)
        representatives = representative_chunks(vectors, labels, centroids, cluster, n_representative)
        passages = _least_covered(representatives, distances, config.n_passages)
        gap_themes = list(themes[cluster])
        suggestions = None
        if llm is not None:
            # The least covered passages first, then the two most central
            # ones for context if not already there.
            prompt_passages = passages + [int(i) for i in representatives[:2] if int(i) not in passages]
            try:
                llm_themes, suggestions = _llm_questions(
                    llm, cluster, gap_themes, prompt_passages, texts, documents,
                    existing_questions, config.n_suggestions, seen,
                )
                gap_themes = llm_themes or gap_themes
            except ProviderError as error:
                if error.kind in _FATAL_KINDS:
                    warnings.append(f"The LLM is unavailable, so offline question drafts are shown instead: {error}")
                    llm = None  # the next gaps would fail the same way
                else:
                    warnings.append(
                        f"Cluster {cluster}: offline question drafts are shown because the LLM failed: {error}"
                    )
        if suggestions is None:
            suggestions = _draft_questions(
                cluster, passages, texts, documents, gap_themes, config.n_suggestions, seen
            )
        gaps.append(
            Gap(
                cluster=cluster,
                coverage=float(coverage[cluster]),
                size=int(sizes[cluster]),
                share=float(sizes[cluster] / n),
                priority=priority,
                themes=tuple(gap_themes),
                passages=tuple(passages),
                suggestions=tuple(suggestions),
            )
        )
    return gaps, warnings
