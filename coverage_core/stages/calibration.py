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
  level that separates on- from off-topic questions (0.575 against a
  labelled 0.55 on a wiki-qa + Python-reference mix; other topics give 0.52:
  ``benchmarks/explore_calibration.py``). The off-topic rule reads it.

With a single document, other topics stand in for other documents; with a
single topic there are no negatives, and with too few probes the estimate is
noise: both levels then fall back to :data:`DEFAULT_SUPPORT_THRESHOLD`, and
``Calibration.method`` says so.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from coverage_core.errors import InputError
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.types import Chunk
from coverage_core.validation import check_scalar, unit_rows

DEFAULT_SUPPORT_THRESHOLD = 0.5
"""τ when the corpus cannot calibrate it (one document, too few sentences) and
in stages run without calibration. 0.5 is near the labelled answerability
threshold of all-MiniLM-L6-v2 on the wiki-qa articles (~0.53 averaged over
splits, 0.395 on the bundled 10-article example)."""

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
citations are not queries), and the chunk left without it as many."""

MAX_PROBE_WORDS = 60

SUPPORT_THRESHOLD_RANGE = (0.0, 1.0)
"""A support threshold override is a cosine similarity in (0, 1]."""

_CHUNK_BLOCK = 50_000

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")

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
    """

    support_threshold: float
    method: str
    n_probes: int = 0
    positive_median: float | None = None
    negative_median: float | None = None
    separation: float | None = None
    labelled_threshold: float | None = None
    question_support_threshold: float | None = None

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
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


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
    by_document: dict[str, list[int]] = {}
    for index, chunk in enumerate(chunks):
        by_document.setdefault(chunk.document, []).append(index)
    queues = [list(rng.permutation(by_document[name])) for name in sorted(by_document)]
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
    by_document: dict[str, list[tuple[int, str, str]]] = {}
    for index in _probe_chunk_pool(chunks, rng):
        chunk = chunks[index]
        sentences = _sentences(chunk.text)
        for position, sentence in enumerate(sentences):
            words = len(sentence.split())
            if not MIN_PROBE_WORDS <= words <= MAX_PROBE_WORDS:
                continue
            rest = " ".join(sentences[:position] + sentences[position + 1 :])
            if len(rest.split()) < MIN_PROBE_WORDS:
                continue
            by_document.setdefault(chunk.document, []).append((index, sentence, rest))
    queues = []
    for name in sorted(by_document):
        items = by_document[name]
        order = rng.permutation(len(items))
        queues.append([items[i] for i in order])
    return _round_robin(queues, max_probes)


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


def calibrate(
    chunks: Sequence[Chunk],
    chunk_vectors,
    embed: Embed,
    random_state: int = 0,
    *,
    topic_labels=None,
    max_probes: int = MAX_PROBES,
) -> Calibration:
    """Calibrate τ on this corpus with pseudo-queries (see the module docstring).

    ``chunk_vectors`` are the chunks' vectors, row for row; ``embed`` embeds
    texts with the same model (the pipeline passes the cached embedder).
    ``topic_labels`` give each chunk's topic (the corpus's automatic
    K-means clusters); None clusters the chunks here with
    :class:`~coverage_core.stages.clustering.ChunkClusterer` and ``random_state``.
    Embeds ``2 x n_probes`` texts (the probes and their chunks without them).
    """
    vectors, topics = _chunk_vectors_and_topics(chunks, chunk_vectors, topic_labels, random_state)
    documents = np.array([chunk.document for chunk in chunks], dtype=object)
    if np.unique(topics).size < 2:
        return Calibration(
            DEFAULT_SUPPORT_THRESHOLD,
            "default: a single topic, so no passage of another topic to tell apart from",
        )
    probes = sample_probes(chunks, max_probes, random_state)
    if len(probes) < MIN_PROBES:
        return Calibration(
            DEFAULT_SUPPORT_THRESHOLD,
            f"default: only {len(probes)} usable sentences (at least {MIN_PROBES} are needed to calibrate)",
            n_probes=len(probes),
        )
    return _calibrate_on_probes(probes, vectors, documents, topics, embed)


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
    probes, vectors: np.ndarray, documents: np.ndarray, topics: np.ndarray, embed: Embed
) -> Calibration:
    """τ from the probes: the Youden threshold between each probe's own chunk and the best chunk elsewhere."""
    texts = [sentence for _, sentence, _ in probes] + [rest for _, _, rest in probes]
    embedded = unit_rows(np.asarray(embed(texts), dtype=np.float32), "The embedded probe sentences")
    n = len(probes)
    probe_vectors, rest_vectors = embedded[:n], embedded[n:]
    positives = np.einsum("ij,ij->i", probe_vectors, rest_vectors)
    probe_chunks = [i for i, _, _ in probes]
    by_document, by_topic = _best_elsewhere(
        probe_vectors, vectors, (documents, topics), (documents[probe_chunks], topics[probe_chunks])
    )
    question_support_threshold = float(np.clip(youden_threshold(positives, by_topic)[0], 1e-6, 1.0))
    if np.unique(documents).size < 2:  # one document: its other topics stand in for other documents
        by_document = by_topic
    threshold, separation = youden_threshold(positives, by_document)
    return Calibration(
        float(np.clip(threshold, 1e-6, 1.0)),
        "pseudo-queries",
        n_probes=n,
        positive_median=float(np.median(positives)),
        negative_median=float(np.median(by_document)),
        separation=separation,
        question_support_threshold=question_support_threshold,
    )


def _best_elsewhere(probe_vectors: np.ndarray, vectors: np.ndarray, groupings, owners) -> list[np.ndarray]:
    """For each grouping (documents, topics), each probe's best similarity to a chunk outside its own group.

    One product per block of chunks serves every grouping, so a million chunks are read once.
    """
    best = [np.full(len(probe_vectors), -np.inf, dtype=np.float32) for _ in groupings]
    for start in range(0, len(vectors), _CHUNK_BLOCK):
        stop = start + _CHUNK_BLOCK
        similarity = probe_vectors @ vectors[start:stop].T
        for found, groups, own in zip(best, groupings, owners):
            outside = np.where(own[:, None] == groups[None, start:stop], -np.inf, similarity)
            np.maximum(found, outside.max(axis=1), out=found)
    return best


def override(threshold: float) -> Calibration:
    """τ set by the user: no calibration runs."""
    low, high = SUPPORT_THRESHOLD_RANGE
    check_scalar(threshold, "the support level", float, min_val=low, max_val=high, include_boundaries="right",
                 hint="it is a cosine similarity")
    return Calibration(float(threshold), "override")


def default() -> Calibration:
    """τ for stages run without a calibration (e.g. measuring before calibrating)."""
    return Calibration(DEFAULT_SUPPORT_THRESHOLD, "default: not calibrated")
