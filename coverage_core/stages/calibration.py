"""The support level τ, derived from the corpus itself, without labels.

A question *reaches* a passage when their cosine similarity is at least τ.
What similarity counts as "about this passage" depends on the embedding
model and on the corpus (MiniLM on short Wikipedia articles is not
text-embedding-3 on contracts), so τ is calibrated per (model, corpus) with
pseudo-queries taken from the corpus:

* **probes**: sentences sampled from the chunks (at most ``max_probes``,
  seeded, spread evenly over the documents), each taken out of its chunk;
* **positive score** of a probe: its similarity to *its own chunk with the
  sentence removed*, re-embedded. The chunk's stored vector contains the
  sentence itself, which inflates the score (a sentence is always close to a
  text that quotes it); the neighbouring chunk of the same document was the
  other option, but it is often about another section, so it mixes
  "different content of the same document" into the positives. The
  leave-one-out chunk is the same passage a question about that sentence's
  neighbourhood should reach, minus the leak; it costs one embedding per
  probe, which the embedding cache keeps;
* **negative scores**: its best similarity to any chunk of *another document*,
  and its best similarity to any chunk of *another topic* (another K-means
  cluster of the corpus).

Two levels come out, each the threshold that best separates the positives
from one kind of negatives (:func:`youden_threshold`), because the two
verdicts that read them ask different questions:

* ``support_threshold`` (τ, other documents): is this *passage* tested? A
  question about document A should not count as testing document B, even
  when B covers the same topic, so the level must tell documents apart.
  Tested share, untested documents and gaps read it.
* ``question_support_threshold`` (other topics): does this *question* have support? A
  question answered by any document of its topic is on-topic. On a corpus of
  sibling documents (fifteen pages of one manual) "the closest passage of
  another document" is often about the same thing, which pushes τ above the
  level that separates on- from off-topic questions. The off-topic rule reads it.

**Near-copies are not negatives.** A knowledge base often holds a sentence
twice: two versions of one plan, a policy quoted in a FAQ. The best passage
of another document is then the sentence's own copy, which scores above the
positive, and Youden's cut collapses towards zero (everything "tested"). So
each probe keeps its :data:`NEGATIVE_CANDIDATES` best chunks of each kind
from the vector pass and takes the best one that does not hold a near-copy
of it (:func:`holds_near_copy`); a probe whose candidates are all near-copies
has no negative of that kind. ``Calibration.n_near_duplicates`` counts the
probes that met a near-copy. When most of a document's probes have a
near-copy in one other document, the two are versions of one document
(:func:`_versions`): the rest of the other version is as close as the
probe's own passage, so a second vector pass takes negatives (of both kinds)
outside the merged family only.

**Knowing when it failed.** The levels are kept only when the corpus
separates its own passages from other documents' (:func:`reliability_problem`:
enough probes with negatives, positive median above the negative one,
Youden's J at least :data:`MIN_SEPARATION`, τ in
:data:`PLAUSIBLE_SUPPORT_RANGE`). When only other topics' J falls short,
questions read τ (small chunks split single documents into several topics).
Otherwise, and with a single topic or too
few probes, both levels fall back to the embedding model's own default
(measured once per model, see ``ModelSpec.default_support_threshold``), or
to :data:`DEFAULT_SUPPORT_THRESHOLD` for a model without one;
``Calibration.reliable`` is then False and ``reason`` says why, while the
measured medians and separation stay in the object. With a single document,
other topics stand in for other documents.

The measurements behind each level and constant are in ``docs/calibration.md``
(*Evidence for the constants*).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from coverage_core.blockwise import RunningTopK
from coverage_core.errors import InputError
from coverage_core.languages import word_units
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.threads import in_order, workers_for
from coverage_core.types import Chunk
from coverage_core.validation import check_scalar, unit_rows

DEFAULT_SUPPORT_THRESHOLD = 0.5
"""τ when the corpus cannot calibrate it (a single topic, too few sentences, no
separation) and the embedding model has no measured default of its own
(``ModelSpec.default_support_threshold``), and in stages run without calibration."""

MAX_PROBES = 400
"""Sentences sampled at most: enough for a stable threshold, cheap to embed."""

MAX_CALIBRATION_TEXTS = 2 * MAX_PROBES
"""Texts a calibration embeds at most (800): each probe sentence and its chunk
without it. Cost estimates import this number; nothing else restates it."""

PROBE_CHUNK_POOL = 20 * MAX_PROBES
"""Chunks searched for probe sentences at most (8,000): splitting a million chunks into
sentences would cost more than the rest of the calibration, and 8,000 chunks offer far
more candidates than :data:`MAX_PROBES` needs."""

MIN_PROBES = 20
"""Fewer usable probes than this and τ falls back to the default."""

MIN_PROBE_WORDS = 5
"""A probe sentence has at least this many words (headings, list items and
citations are not queries), and the chunk left without it as many. Words
are counted by :func:`probe_words`: in a script written without spaces
(Chinese, Japanese, Thai) each pair of characters counts as one, so a
Chinese sentence needs 6 characters and at most 61."""

MAX_PROBE_WORDS = 60

SUPPORT_THRESHOLD_RANGE = (0.0, 1.0)
"""A support threshold override is a cosine similarity in (0, 1]."""

NEGATIVE_CANDIDATES = 8
"""Best chunks of another document (and of another topic) kept per probe from the vector pass; the
negative is the best of them that is not a near-copy of the probe. More than a handful of copies of one
sentence is rare, and a probe copied into all of them is dropped rather than scored against a copy."""

NEAR_COPY_SHARE = 0.5
"""A chunk holds a near-copy of a probe when at least this share of the probe's word 3-shingles occurs in
it (:func:`holds_near_copy`); copies it misses are caught by :data:`VERSION_SHARE`."""

VERSION_SHARE = 0.3
"""Share of a document's probes with a near-copy in another document from which the two count as versions
of one document (:func:`_versions`): two editions of one plan share most sentences, while a FAQ quoting a
sentence or two of a policy stays a document of its own."""

MIN_SEPARATION = 0.15
"""Youden's J for other documents below this and the calibration is not trusted; for other topics, and
questions read τ rather than a level of their own."""

PLAUSIBLE_SUPPORT_RANGE = (0.1, 0.95)
"""A calibrated τ outside this range is not trusted: below 0.1 nearly any text reaches any passage,
above 0.95 only a copy of it does. Models whose cosines crowd high (ada-002: unrelated texts at ~0.7)
still calibrate inside it."""

# The method of :func:`default`'s level: no calibration ran at all (its reason only says so).
NOT_CALIBRATED = "default: not calibrated"

_CHUNK_BLOCK = 20_000  # probes x block similarities, masked copies and top-k indices stay ~100 MB

# Latin script: a stop, a space, then a capital or a digit ("e.g. the" goes on).
_LATIN_SENTENCE_END = r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])"
# Chinese and Japanese full stops need no space after them; a closing quote or bracket stays with them.
_CJK_SENTENCE_END = (
    r"|(?<=[\u3002\uff01\uff1f\uff1b])(?![\u300d\u300f\u201d\u2019\uff09\u300b])\s*"
    r"|(?<=[\u3002\uff01\uff1f\uff1b][\u300d\u300f\u201d\u2019\uff09\u300b])\s*"
)
# A line break ends a sentence too (headings, list items, paragraphs without a final stop).
_LINE_END = r"|\s*\n\s*"
_SENTENCE_END = re.compile(_LATIN_SENTENCE_END + _CJK_SENTENCE_END + _LINE_END)
# The same split for ASCII text, and for ASCII text on one line, without the alternatives that cannot
# match there: trying them at every position took most of the time.
_ASCII_SENTENCE_END = re.compile(_LATIN_SENTENCE_END + _LINE_END)
_ONE_LINE_ASCII_SENTENCE_END = re.compile(_LATIN_SENTENCE_END)
_WORD = re.compile(r"\w+")

Embed = Callable[[Sequence[str]], np.ndarray]
"""``embed(texts) -> array (len(texts), d)``: the embedder the chunks were embedded with."""


@dataclass(frozen=True)
class Calibration:
    """The support threshold τ of one (model, corpus) and how it was found.

    ``method`` is ``"pseudo-queries"`` (calibrated), ``"override"`` (set by
    the user), or ``"default: …"`` with the reason τ fell back to
    :data:`DEFAULT_SUPPORT_THRESHOLD`. ``question_support_threshold`` is the level a
    question needs to have support (τ itself unless calibrated on other topics);
    see the module docstring for why it differs. Medians are of the probes'
    positive and other-document negative scores (None when not calibrated);
    ``separation`` is Youden's J at τ (how cleanly the corpus separates its
    own passages from other documents' at that level, 1 = perfectly).
    ``reliable`` is False when the level could not be calibrated on these
    documents and rests on a fallback; ``reason`` then says why, in one
    plain sentence a headline can quote, and ``method`` is ``"default: model
    default"`` (the embedding model's measured default) or ``"default:
    generic default"`` (:data:`DEFAULT_SUPPORT_THRESHOLD`), or names the
    structural cause (a single topic, too few sentences, not calibrated).
    ``n_near_duplicates`` counts the probes with a near-copy in another
    document or topic, which were not taken as negatives.
    """

    support_threshold: float
    method: str
    n_probes: int = 0
    positive_median: float | None = None
    negative_median: float | None = None
    separation: float | None = None
    labelled_threshold: float | None = None
    question_support_threshold: float | None = None
    reliable: bool = True
    reason: str = ""
    n_near_duplicates: int = 0

    def __post_init__(self):
        # Only a calibration on other topics finds a level of its own; elsewhere questions read τ.
        if self.question_support_threshold is None:
            object.__setattr__(self, "question_support_threshold", self.support_threshold)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> Calibration:
        """The calibration :meth:`to_dict` wrote, also from before report schema 3 (``topic_threshold``)."""
        fields = dict(data)
        if "topic_threshold" in fields:
            fields.setdefault("question_support_threshold", fields.pop("topic_threshold"))
        return cls(**fields)


def youden_threshold(positives, negatives) -> tuple[float, float]:
    """The similarity τ maximising Youden's J between two groups of scores.

    A score ``s`` is taken as "reaches" when ``s >= τ``; with ``TPR(τ)`` the
    share of positives at or above τ and ``FPR(τ)`` the share of negatives at
    or above it, ``J(τ) = TPR(τ) - FPR(τ)``. Candidates are the midpoints
    between consecutive distinct scores (and the ends), so τ lies *between*
    the groups rather than on a sample; ties in J take the lowest τ.

    Returns ``(τ, J)``.
    """
    pos = np.asarray(positives, dtype=float).ravel()
    neg = np.asarray(negatives, dtype=float).ravel()
    if pos.size == 0 or neg.size == 0:
        raise InputError("Youden's threshold needs positive and negative scores.")
    values = np.unique(np.concatenate([pos, neg]))
    cuts = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    pos_sorted, neg_sorted = np.sort(pos), np.sort(neg)
    tpr = 1.0 - np.searchsorted(pos_sorted, cuts, side="left") / pos.size
    fpr = 1.0 - np.searchsorted(neg_sorted, cuts, side="left") / neg.size
    j = tpr - fpr
    best = int(np.argmax(j))
    return float(cuts[best]), float(j[best])


def _sentences(text: str) -> list[str]:
    """The sentences of ``text`` (:data:`_SENTENCE_END`), stripped, none empty."""
    if not text.isascii():
        ends = _SENTENCE_END
    else:
        ends = _ASCII_SENTENCE_END if "\n" in text else _ONE_LINE_ASCII_SENTENCE_END
    return [s.strip() for s in ends.split(text) if s.strip()]


def probe_words(text: str) -> int:
    """How many words ``text`` has for :data:`MIN_PROBE_WORDS`: its space-separated words, a run of a
    spaceless script counting as its character pairs (:func:`~coverage_core.languages.word_units`)."""
    return len(word_units(text).split())


def _round_robin(queues: list[list], limit: int) -> list:
    """Items taken one per queue in turn, until ``limit`` items or every queue is empty."""
    taken: list = []
    depth = 0
    while len(taken) < limit and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(taken) < limit:
                taken.append(queue[depth])
        depth += 1
    return taken


def _probe_chunk_pool(chunks: Sequence[Chunk], rng: np.random.Generator) -> list[int]:
    """Indices of the chunks whose sentences may become probes: all of them, or on a corpus of
    more than :data:`PROBE_CHUNK_POOL` chunks a seeded sample spread evenly over the documents."""
    if len(chunks) <= PROBE_CHUNK_POOL:
        return list(range(len(chunks)))
    # Each document's chunks, ascending, documents in name order: grouped by array, not chunk by chunk.
    codes, _ = pd.factorize(np.array([chunk.document for chunk in chunks], dtype=object), sort=True)
    by_document = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[by_document])) + 1
    queues = [list(rng.permutation(members)) for members in np.split(by_document, bounds)]
    return sorted(int(i) for i in _round_robin(queues, PROBE_CHUNK_POOL))


def sample_probes(
    chunks: Sequence[Chunk], max_probes: int = MAX_PROBES, random_state: int = 0
) -> list[tuple[int, str, str]]:
    """``(chunk index, sentence, chunk text without it)`` for up to ``max_probes`` sentences.

    Candidates are sentences of ``MIN_PROBE_WORDS``..``MAX_PROBE_WORDS`` words
    (from at most :data:`PROBE_CHUNK_POOL` chunks) whose chunk keeps at least ``MIN_PROBE_WORDS`` words without them. Drawn
    round-robin over the documents (each document's candidates shuffled with
    ``random_state``), so a long document cannot take every probe.
    """
    rng = np.random.default_rng(random_state)
    by_document: dict[str, list[tuple[int, int, list[str]]]] = {}
    for index in _probe_chunk_pool(chunks, rng):
        chunk = chunks[index]
        sentences = _sentences(chunk.text)
        # Word counts add up over sentences joined by a space, so the rest's count is a difference.
        words = [probe_words(sentence) for sentence in sentences]
        total = sum(words)
        for position, count in enumerate(words):
            if MIN_PROBE_WORDS <= count <= MAX_PROBE_WORDS and total - count >= MIN_PROBE_WORDS:
                by_document.setdefault(chunk.document, []).append((index, position, sentences))
    queues = []
    for name in sorted(by_document):
        items = by_document[name]
        order = rng.permutation(len(items))
        queues.append([items[i] for i in order])
    return [
        (index, sentences[position], " ".join(sentences[:position] + sentences[position + 1 :]))
        for index, position, sentences in _round_robin(queues, max_probes)
    ]


def calibration_texts(
    chunks: Sequence[Chunk], random_state: int = 0, *, max_probes: int = MAX_PROBES
) -> list[str]:
    """The texts :func:`calibrate` would embed for these chunks, without embedding anything.

    The probe sentences, then their chunks without them (at most
    ``2 * max_probes``, i.e. :data:`MAX_CALIBRATION_TEXTS`); empty when
    calibration would fall back to the default (fewer than two chunks, so
    a single topic; too few usable sentences), since nothing is embedded
    then. For cost estimates.
    """
    if len(chunks) < 2:
        return []
    probes = sample_probes(chunks, max_probes, random_state)
    if len(probes) < MIN_PROBES:
        return []
    return [sentence for _, sentence, _ in probes] + [rest for _, _, rest in probes]


Fallback = tuple[float, str]
"""``(level, method)`` a calibration falls back to: the embedding model's default support level and
``"default: model default"``, or :data:`DEFAULT_SUPPORT_THRESHOLD` and ``"default: generic default"``."""

GENERIC_FALLBACK: Fallback = (DEFAULT_SUPPORT_THRESHOLD, "default: generic default")


def model_fallback(level: float | None) -> Fallback:
    """The fallback for a model whose registry entry gives ``level`` (None: the model has no measured default)."""
    return GENERIC_FALLBACK if level is None else (float(level), "default: model default")


def calibrate(
    chunks: Sequence[Chunk],
    chunk_vectors,
    embed: Embed,
    random_state: int = 0,
    *,
    topic_labels=None,
    max_probes: int = MAX_PROBES,
    fallback: Fallback = GENERIC_FALLBACK,
) -> Calibration:
    """Calibrate τ on this corpus with pseudo-queries (see the module docstring).

    ``chunk_vectors`` are the chunks' vectors, row for row; ``embed`` embeds
    texts with the same model (:func:`coverage_core.session.calibrate_corpus` passes the cached embedder).
    ``topic_labels`` give each chunk's topic (the corpus's automatic
    K-means clusters); None clusters the chunks here with
    :class:`~coverage_core.stages.clustering.ChunkClusterer` and ``random_state``.
    ``fallback`` is the level (and method) used when the calibration cannot be
    trusted (:func:`model_fallback` of the model's registry entry).
    Embeds ``2 x n_probes`` texts (the probes and their chunks without them).
    """
    vectors, topics = _chunk_vectors_and_topics(chunks, chunk_vectors, topic_labels, random_state)
    documents = np.array([chunk.document for chunk in chunks], dtype=object)
    level, _ = fallback
    if np.unique(topics).size < 2:
        return Calibration(
            level,
            "default: a single topic, so no passage of another topic to tell apart from",
            reliable=False,
            reason="The documents form a single topic, so there is no other passage to tell theirs apart from.",
        )
    probes = sample_probes(chunks, max_probes, random_state)
    if len(probes) < MIN_PROBES:
        return Calibration(
            level,
            f"default: only {len(probes)} usable sentences (at least {MIN_PROBES} are needed to calibrate)",
            n_probes=len(probes),
            reliable=False,
            reason=f"Only {len(probes)} sentences are long enough to calibrate on (at least {MIN_PROBES} are needed).",
        )
    return _calibrate_on_probes(probes, chunks, vectors, documents, topics, embed, fallback)


def _chunk_vectors_and_topics(
    chunks: Sequence[Chunk], chunk_vectors, topic_labels, random_state: int
) -> tuple[np.ndarray, np.ndarray]:
    """The chunks' unit float32 vectors and each chunk's topic, checked against the chunks."""
    vectors = np.asarray(chunk_vectors)
    if vectors.ndim != 2:
        raise InputError("Vectors must be a 2-D array.")
    # Stored embeddings are usually unit rows already: used in place (a copy is 1.5 GB at a million chunks).
    vectors = unit_rows(np.ascontiguousarray(vectors, dtype=np.float32), copy=False)
    if vectors.shape[0] != len(chunks):
        raise InputError(f"There are {len(chunks)} chunks but {vectors.shape[0]} chunk vectors.")
    if topic_labels is None:
        topic_labels = ChunkClusterer(random_state=random_state).fit(vectors).labels_
    topics = np.asarray(topic_labels).ravel()
    if topics.shape[0] != len(chunks):
        raise InputError(f"There are {len(chunks)} chunks but {topics.shape[0]} topic labels.")
    return vectors, topics


def _calibrate_on_probes(
    probes, chunks: Sequence[Chunk], vectors: np.ndarray, documents: np.ndarray, topics: np.ndarray,
    embed: Embed, fallback: Fallback,
) -> Calibration:
    """τ from the probes: the Youden threshold between each probe's own chunk and the best chunk elsewhere
    that is not a near-copy; the fallback when :func:`reliability_problem` finds one."""
    texts = [sentence for _, sentence, _ in probes] + [rest for _, _, rest in probes]
    embedded = unit_rows(np.asarray(embed(texts), dtype=np.float32), "The embedded probe sentences")
    n = len(probes)
    probe_vectors, rest_vectors = embedded[:n], embedded[n:]
    positives = np.einsum("ij,ij->i", probe_vectors, rest_vectors)
    probe_chunks = [i for i, _, _ in probes]
    sentences = [sentence for _, sentence, _ in probes]
    candidates = _candidates_elsewhere(
        probe_vectors, vectors, (documents, topics), (documents[probe_chunks], topics[probe_chunks])
    )
    (by_document, copies), (by_topic, topic_copies) = _negatives_without_near_copies(sentences, chunks, candidates)
    n_near_duplicates = sum(1 for found, more in zip(copies, topic_copies) if found or more)
    families = _versions(documents, documents[probe_chunks], [documents[found] for found in copies])
    if families is not None:  # versions of one document: their other passages are no negatives either
        own_family = families[probe_chunks]
        candidates = _candidates_elsewhere(
            probe_vectors, vectors, (families, (topics, families)), (own_family, (topics[probe_chunks], own_family))
        )
        (by_document, _), (by_topic, _) = _negatives_without_near_copies(sentences, chunks, candidates)
        documents = families
    one_document = np.unique(documents).size < 2
    if one_document:  # its other topics stand in for other documents
        by_document = by_topic
    by_document, by_topic = by_document[np.isfinite(by_document)], by_topic[np.isfinite(by_topic)]
    measured = {
        "n_probes": n,
        "positive_median": float(np.median(positives)),
        "negative_median": float(np.median(by_document)) if by_document.size else None,
        "n_near_duplicates": n_near_duplicates,
    }
    threshold = separation = question_support_threshold = question_separation = None
    if by_document.size:
        threshold, separation = youden_threshold(positives, by_document)
        threshold = float(np.clip(threshold, 1e-6, 1.0))
    if by_topic.size:
        question_support_threshold, question_separation = youden_threshold(positives, by_topic)
        question_support_threshold = float(np.clip(question_support_threshold, 1e-6, 1.0))
    problem = reliability_problem(
        n, by_document.size, measured["positive_median"], measured["negative_median"], threshold, separation,
        one_document,
    )
    if problem:
        level, method = fallback
        return Calibration(level, method, separation=separation, reliable=False, reason=problem, **measured)
    if question_separation is None or question_separation < MIN_SEPARATION:
        question_support_threshold = None  # topics too close to tell apart: questions read τ
    return Calibration(threshold, "pseudo-queries", separation=separation,
                       question_support_threshold=question_support_threshold, **measured)


def reliability_problem(
    n_probes: int,
    n_negatives: int,
    positive_median: float,
    negative_median: float | None,
    threshold: float | None,
    separation: float | None,
    one_document: bool = False,
) -> str:
    """Why a calibration cannot be trusted, in one plain sentence; "" when it can.

    In order: fewer than :data:`MIN_PROBES` probes keep a negative from
    another document once near-copies are skipped; the positive median is not
    above the negative one; Youden's J for other documents is below
    :data:`MIN_SEPARATION`; τ lies outside :data:`PLAUSIBLE_SUPPORT_RANGE`.
    Other topics' J only decides whether questions get a level of their own
    (see the module docstring): small chunks cut a document into close
    topics of its own, which says nothing of whether τ tells documents apart.
    """
    # With one document its other topics stand in for other documents (:func:`calibrate`), and the sentence says so.
    elsewhere = "the document's passages on other topics" if one_document else "other documents' passages"
    if n_negatives < MIN_PROBES:
        return (f"Only {n_negatives} of {n_probes} sample sentences have no near-copy "
                f"{'on another topic' if one_document else 'in another document'}, "
                f"too few to calibrate on (at least {MIN_PROBES} are needed).")
    if negative_median is None or positive_median <= negative_median:
        return (f"Sample sentences are at least as close to {elsewhere} (median similarity "
                f"{negative_median:.2f}) as to their own ({positive_median:.2f}).")
    if separation is None or separation < MIN_SEPARATION:
        own = "a passage" if one_document else "a document's passages"
        return (f"This model hardly tells {own} from {elsewhere} here "
                f"(separation {separation or 0.0:.2f}, at least {MIN_SEPARATION:.2f} needed).")
    low, high = PLAUSIBLE_SUPPORT_RANGE
    if threshold is None or not low <= threshold <= high:
        return f"The calibrated support level {threshold or 0.0:.2f} lies outside the plausible range {low}-{high}."
    return ""


def word_shingles(text: str, size: int = 3) -> set[tuple[str, ...]]:
    """The text's runs of ``size`` consecutive words, lowercased, punctuation dropped (Chinese, Japanese
    and Thai read as character pairs, :func:`~coverage_core.languages.word_units`)."""
    words = _WORD.findall(word_units(text).lower())
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def holds_near_copy(sentence_shingles: set, chunk_shingles: set) -> bool:
    """Whether a chunk holds a near-copy of a sentence: ``|S ∩ C| / |S| >= NEAR_COPY_SHARE``, with S the
    sentence's word 3-shingles and C the chunk's (:func:`word_shingles`). Word order and wording within a
    few words must match, so a chunk on the same subject in other words is no near-copy."""
    if not sentence_shingles:
        return False
    return len(sentence_shingles & chunk_shingles) >= NEAR_COPY_SHARE * len(sentence_shingles)


def _negatives_without_near_copies(
    sentences: Sequence[str], chunks: Sequence[Chunk], candidates
) -> list[tuple[np.ndarray, list[list[int]]]]:
    """Per grouping: each probe's best candidate score that is not a near-copy (NaN: none left) and the
    near-copies met before it (chunk indices). Only the candidates' texts are split into shingles, at most
    ``2 x NEGATIVE_CANDIDATES`` chunks per probe."""
    chunk_shingles: dict[int, set] = {}
    sentence_shingles = [word_shingles(sentence) for sentence in sentences]
    results = []
    for indices, scores in candidates:
        negatives = np.full(len(sentences), np.nan)
        copies: list[list[int]] = [[] for _ in sentences]
        for probe, (row_indices, row_scores) in enumerate(zip(indices, scores)):
            for index, score in zip(row_indices.tolist(), row_scores.tolist()):
                if not np.isfinite(score):
                    break
                if index not in chunk_shingles:
                    chunk_shingles[index] = word_shingles(chunks[index].text)
                if holds_near_copy(sentence_shingles[probe], chunk_shingles[index]):
                    copies[probe].append(index)
                    continue
                negatives[probe] = score
                break
        results.append((negatives, copies))
    return results


def _versions(documents: np.ndarray, probe_documents: np.ndarray, copy_documents) -> np.ndarray | None:
    """Each chunk's *family*: its document merged with the documents that are versions of it, or None
    when no two documents are.

    Document B is a version of A when near-copies of at least :data:`VERSION_SHARE` of A's probes (and
    at least two) were found in B. Skipping the sentence's own copy is not enough there: the rest of the
    other version (the same sections, reworded or cut at other places) is as close as the sentence's own
    passage, so it cannot serve as "another document" either.
    """
    n_probes: dict = {}
    hits: dict = {}
    for document, found in zip(probe_documents, copy_documents):
        n_probes[document] = n_probes.get(document, 0) + 1
        for other in set(found):
            hits[document, other] = hits.get((document, other), 0) + 1
    parent: dict = {}

    def root(name):
        while parent.get(name, name) != name:
            name = parent[name]
        return name

    for (document, other), count in hits.items():
        if count >= max(2, VERSION_SHARE * n_probes[document]) and root(other) != root(document):
            parent[root(other)] = root(document)
    if not parent:
        return None
    return np.array([root(document) for document in documents], dtype=object)


def _candidates_elsewhere(probe_vectors: np.ndarray, vectors: np.ndarray, groupings, owners):
    """For each grouping (documents, topics): ``(indices, scores)``, each probe's :data:`NEGATIVE_CANDIDATES`
    most similar chunks outside its own group, best first (score -inf where fewer exist). A grouping may
    be a tuple of labellings (topics and families): outside means outside every one of them.

    One product per block of chunks serves every grouping, so a million chunks are read once; ties rank
    the lower chunk index first (:class:`~coverage_core.blockwise.RunningTopK`).
    """
    best = [RunningTopK(len(probe_vectors), min(NEGATIVE_CANDIDATES, len(vectors))) for _ in groupings]
    groupings, owners = zip(*(_as_codes(groups, own) for groups, own in zip(groupings, owners)))
    # Each grouping's (chunk labels, probes' own labels) pairs: one pair, or one per labelling of a tuple.
    label_pairs = [list(zip(*((groups, own) if isinstance(groups, tuple) else ((groups,), (own,)))))
                   for groups, own in zip(groupings, owners)]
    starts = range(0, len(vectors), _CHUNK_BLOCK)

    def outside_similarities(i: int, _) -> list[tuple]:
        start = starts[i]
        stop = start + _CHUNK_BLOCK
        similarity = probe_vectors @ vectors[start:stop].T
        masked = []
        for tracker, pairs in zip(best, label_pairs):
            found = tracker.above(similarity)
            if found is None:  # the first block: read whole, its own group's chunks masked
                inside = np.zeros(similarity.shape, dtype=bool)
                for labels, owner in pairs:
                    inside |= owner[:, None] == labels[None, start:stop]
                masked.append((np.where(inside, -np.inf, similarity), None))
                continue
            # Later blocks: the few entries above the k-th best so far, those in the probe's own group dropped.
            probes, chunks, values = found
            outside = np.ones(len(probes), dtype=bool)
            for labels, owner in pairs:
                outside &= owner[probes] != labels[start + chunks]
            masked.append((similarity, (probes[outside], chunks[outside], values[outside])))
        return masked

    def keep_best(i: int, masked: list[tuple]) -> None:
        for tracker, (similarity, found) in zip(best, masked):
            tracker.add_above(similarity, found, starts[i])

    in_order(outside_similarities, keep_best, len(starts), workers=workers_for(len(starts)))
    return [(tracker.indices, tracker.values) for tracker in best]


def _as_codes(groups, owners):
    """A labelling (or tuple of labellings) and the probes' own labels as integer codes of one space each:
    comparing document names as Python objects, probe by chunk, cost seconds at 200,000 chunks."""
    if isinstance(groups, tuple):
        pairs = [_as_codes(labels, owner) for labels, owner in zip(groups, owners)]
        return tuple(labels for labels, _ in pairs), tuple(owner for _, owner in pairs)
    # Hashed, not sorted: np.unique on a million document names took half a second. The codes are
    # np.unique's all the same (sort=True).
    codes, names = pd.factorize(np.asarray(groups), sort=True, use_na_sentinel=False)
    return codes.astype(np.intp), np.searchsorted(np.asarray(names), np.asarray(owners))


def override(threshold: float) -> Calibration:
    """τ set by the user: no calibration runs."""
    low, high = SUPPORT_THRESHOLD_RANGE
    check_scalar(threshold, "the support level", float, min_val=low, max_val=high, include_boundaries="right",
                 hint="it is a cosine similarity", field="support_threshold")
    return Calibration(float(threshold), "override")


def default(fallback: Fallback = GENERIC_FALLBACK) -> Calibration:
    """τ for stages run without a calibration (e.g. measuring before calibrating, no embedder at hand):
    the fallback's level, not trusted as a calibration."""
    return Calibration(fallback[0], NOT_CALIBRATED, reliable=False,
                       reason="The support level was not calibrated on these documents.")
