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
* **negative score**: its best similarity to any chunk of *another* document.

τ is the threshold that best separates the two (:func:`youden_threshold`).
With one document there are no negatives, and with too few probes the
estimate is noise: τ then falls back to :data:`DEFAULT_SUPPORT_THRESHOLD`,
and ``Calibration.method`` says so.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np

from coverage_core.errors import InputError
from coverage_core.validation import unit_rows
from coverage_core.types import Chunk

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

MIN_PROBES = 20
"""Fewer usable probes than this and τ falls back to the default."""

MIN_PROBE_WORDS = 5
"""A probe sentence has at least this many words (headings, list items and
citations are not queries), and the chunk left without it as many."""

MAX_PROBE_WORDS = 60

SUPPORT_THRESHOLD_RANGE = (0.0, 1.0)
"""A support threshold override is a cosine similarity in (0, 1]."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")

Embed = Callable[[Sequence[str]], np.ndarray]
"""``embed(texts) -> array (len(texts), d)``: the embedder the chunks were embedded with."""


@dataclass(frozen=True)
class Calibration:
    """The support threshold τ of one (model, corpus) and how it was found.

    ``method`` is ``"pseudo-queries"`` (calibrated), ``"override"`` (set by
    the user), or ``"default: …"`` with the reason τ fell back to
    :data:`DEFAULT_SUPPORT_THRESHOLD`. Medians are of the probes' positive
    and negative scores (None when not calibrated); ``separation`` is
    Youden's J at τ (how cleanly the corpus separates its own passages from
    other documents' at that level, 1 = perfectly).
    """

    support_threshold: float
    method: str
    n_probes: int = 0
    positive_median: float | None = None
    negative_median: float | None = None
    separation: float | None = None
    labelled_threshold: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


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


def _unit(vectors) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise InputError("Vectors must be a 2-D array.")
    return unit_rows(array)


def sample_probes(
    chunks: Sequence[Chunk], max_probes: int = MAX_PROBES, random_state: int = 0
) -> list[tuple[int, str, str]]:
    """``(chunk index, sentence, chunk text without it)`` for up to ``max_probes`` sentences.

    Candidates are sentences of ``MIN_PROBE_WORDS``..``MAX_PROBE_WORDS`` words
    whose chunk keeps at least ``MIN_PROBE_WORDS`` words without them. Drawn
    round-robin over the documents (each document's candidates shuffled with
    ``random_state``), so a long document cannot take every probe.
    """
    rng = np.random.default_rng(random_state)
    by_document: dict[str, list[tuple[int, str, str]]] = {}
    for index, chunk in enumerate(chunks):
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
    probes: list[tuple[int, str, str]] = []
    depth = 0
    while len(probes) < max_probes and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(probes) < max_probes:
                probes.append(queue[depth])
        depth += 1
    return probes


def calibration_texts(
    chunks: Sequence[Chunk], random_state: int = 0, *, max_probes: int = MAX_PROBES
) -> list[str]:
    """The texts :func:`calibrate` would embed for these chunks, without embedding anything.

    The probe sentences, then their chunks without them (at most
    ``2 * max_probes``, i.e. :data:`MAX_CALIBRATION_TEXTS`); empty when
    calibration would fall back to the default (one document, too few
    usable sentences), since nothing is embedded then. For cost estimates.
    """
    if len({chunk.document for chunk in chunks}) < 2:
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
    max_probes: int = MAX_PROBES,
) -> Calibration:
    """Calibrate τ on this corpus with pseudo-queries (see the module docstring).

    ``chunk_vectors`` are the chunks' vectors, row for row; ``embed`` embeds
    texts with the same model (the pipeline passes the cached embedder).
    Embeds ``2 x n_probes`` texts (the probes and their chunks without them).
    """
    vectors = _unit(chunk_vectors)
    if vectors.shape[0] != len(chunks):
        raise InputError(f"There are {len(chunks)} chunks but {vectors.shape[0]} chunk vectors.")
    documents = np.array([chunk.document for chunk in chunks], dtype=object)
    if len(set(documents.tolist())) < 2:
        return Calibration(
            DEFAULT_SUPPORT_THRESHOLD,
            "default: one document, so no passage of another document to tell apart from",
        )
    probes = sample_probes(chunks, max_probes, random_state)
    if len(probes) < MIN_PROBES:
        return Calibration(
            DEFAULT_SUPPORT_THRESHOLD,
            f"default: only {len(probes)} usable sentences (at least {MIN_PROBES} are needed to calibrate)",
            n_probes=len(probes),
        )
    texts = [sentence for _, sentence, _ in probes] + [rest for _, _, rest in probes]
    embedded = _unit(embed(texts))
    n = len(probes)
    probe_vectors, rest_vectors = embedded[:n], embedded[n:]
    positives = np.einsum("ij,ij->i", probe_vectors, rest_vectors)
    owner = np.array([chunks[i].document for i, _, _ in probes], dtype=object)
    similarity = probe_vectors @ vectors.T  # (n_probes, n_chunks): at most 400 rows
    similarity[owner[:, None] == documents[None, :]] = -np.inf
    negatives = similarity.max(axis=1)
    threshold, separation = youden_threshold(positives, negatives)
    threshold = float(np.clip(threshold, 1e-6, 1.0))
    return Calibration(
        threshold,
        "pseudo-queries",
        n_probes=n,
        positive_median=float(np.median(positives)),
        negative_median=float(np.median(negatives)),
        separation=separation,
    )


def override(threshold: float) -> Calibration:
    """τ set by the user: no calibration runs."""
    low, high = SUPPORT_THRESHOLD_RANGE
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) or not (
        low < threshold <= high
    ):
        raise InputError(f"The support threshold must be a cosine similarity in ({low:g}, {high:g}] (got {threshold!r}).")
    return Calibration(float(threshold), "override")


def default() -> Calibration:
    """τ for stages run without a calibration (e.g. measuring before calibrating)."""
    return Calibration(DEFAULT_SUPPORT_THRESHOLD, "default: not calibrated")
