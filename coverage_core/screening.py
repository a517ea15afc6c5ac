"""Off-topic question screening, referenced to the knowledge base.

A test question is off-topic when the knowledge base has nothing about it.
The method this product follows suggests LocalOutlierFactor on the question
embeddings alone; that measures whether a question is *unusual among the
questions*, not whether the *documents* support it, and it fails exactly
where it matters: questions about one missing topic arrive in a group, form
a dense cluster of their own and look perfectly normal to LOF. On the
wiki-qa data with four articles removed, LOF-on-questions ranks the
orphaned questions at chance (AUROC about 0.5; see
``benchmarks/eval_screening.py``). So the score here is built from the
question-to-chunk similarities and, when the texts are available, on
whether the question's distinctive words occur together in some chunk; the
LOF score is still reported as ``lof_score_`` for users who know the method,
but no decision rests on it.
"""

from __future__ import annotations

import html
import re
import string
import warnings
from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.neighbors import LocalOutlierFactor
from threadpoolctl import threadpool_limits

from coverage_core.errors import InputError
from coverage_core.metrics import as_unit_rows, best_matches

# Fewer questions than this give no usable "bulk" for the robust z-score, so
# nothing is flagged automatically (users can still force questions out).
MIN_QUESTIONS_FOR_DECISION = 5

# Chunk-side density: each chunk's mean cosine to its DENSITY_NEIGHBORS
# nearest chunks, searched within its cluster, among at most MAX_REFERENCE
# chunks sampled from that cluster (k is scaled down with the sample).
DENSITY_NEIGHBORS = 20
MAX_REFERENCE = 2000
# Up to this many neighbours, their mean is taken by repeated maxima, not a partition.
_REPEATED_MAX_UP_TO = 4

# Chunks kept per question from the screener's pass over the question x chunk
# similarities, so that the retrieval check (k = 5 by default) needs no second pass.
TOP_CHUNKS_KEPT = 10

# Question-side smoothing: average with the QUESTION_NEIGHBORS most similar
# questions.
QUESTION_NEIGHBORS = 10

# Rows of questions per block of the question x chunk similarity matrix
# (block x n_chunks float32: 512 x 20,000 is 40 MB).
BLOCK_ROWS = 512

# The question-neighbour search prunes from PRUNE_FACTOR * k * NEIGHBOR_GROUP
# questions on (see _nearest_questions); below that the plain search is as
# fast. Runs of 32, 64 or 128 questions timed the same at 25,600 questions.
NEIGHBOR_GROUP = 64
PRUNE_FACTOR = 8

STRICTNESS_RANGE = (0.0, 1.0)

# Score spreads below this are float rounding (scores are cosine differences
# of order 0.1), i.e. the scores are all the same.
TIED_SCALE = 1e-6

# Lexical evidence (used when question and chunk texts are given).
# Words shorter than this are ignored (initials, typing noise, "of", "24").
MIN_WORD_LENGTH = 3
# Words that say what kind of question it is, not what it is about; they are
# left out with scikit-learn's English stop words. "happen(ed)" is here
# because "What happened in 1887?" asks about the year, and encyclopaedic
# text hardly ever uses the verb. The second line is how questions refer to
# the source itself ("According to the text, what does the knowledge base
# say about …?", "Regarding this topic, …"): no passage needs those words to answer them.
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how whether did does do done was "
    "were is are be been many much happen happened".split()
    + "according knowledge base say says said tell describe explain mention mentioned "
    "text document documents passage article source see regarding topic".split()
)
# One suffix is stripped, the first that matches, if at least 3 letters remain
# (and never from words ending in "ss"): a crude stemmer that folds plurals
# and the usual inflections (retire, retired, retires -> "retir"; ant, ants).
# A second pass (retirement -> retire -> retir) merged too many distinct
# words: F1 0.84 vs 0.85, worst split 0.76 vs 0.80.
# Misspelt question words are matched to a corpus word one edit away when
# their stem has at least MIN_FIXABLE_LENGTH letters (shorter words have too
# many neighbours: "zhou" -> "zhu"), for at most MAX_SPELLING_FIXES distinct
# words per call (each costs about 300 lookups per chunk).
MIN_FIXABLE_LENGTH = 5
MAX_SPELLING_FIXES = 200
SUFFIXES = ("ments", "ment", "ings", "ing", "ies", "ied", "ed", "es", "s", "e", "y")
# Weight of the lexical component in the relative rule's combined score (the
# embedding component has 1 - LEXICAL_WEIGHT).
LEXICAL_WEIGHT = 0.5

# Absolute decision, used when a support threshold tau is given: the
# constants of support_margin() and margin_cut(). EMBEDDING_UNIT (cosine) and
# LEXICAL_UNIT (coverage) are one unit of evidence each; LEXICAL_CUT (70% of
# the question's idf-weighted content words together in one chunk) is the
# lexical counterpart of tau. Tuned on half the wiki-qa articles with whole kinds of article removed
# (benchmarks/eval_offtopic.py --tune: the tightest cut keeping precision and
# recall >= 0.8 at 5%, 45% and 65% off-topic, between -0.7 and -0.8).
MARGIN_LEXICAL_WEIGHT = 0.6
EMBEDDING_UNIT = 0.1
LEXICAL_CUT = 0.7
LEXICAL_UNIT = 0.25
STRICTNESS_SPAN = 1.5

# ASCII punctuation and control characters separate words.
_SEPARATORS_ASCII = string.punctuation.encode("ascii") + bytes(range(32)) + b"\x7f"
_TO_SPACE = bytes.maketrans(_SEPARATORS_ASCII, b" " * len(_SEPARATORS_ASCII))
# So do U+0080..U+00BF (control characters, no-break space, quotes, symbols)
# and U+2000..U+203F (spaces, dashes, quotes, bullets, ellipsis), UTF-8 encoded.
_SEPARATORS_UTF8 = re.compile(rb"\xc2[\x80-\xbf]|\xe2\x80[\x80-\xbf]")
_STOP = frozenset(
    w.encode("ascii") for w in (set(ENGLISH_STOP_WORDS) | QUESTION_WORDS)
)


def _words(text: str) -> list[bytes]:
    """Lower-cased words of ``text``, split at whitespace and punctuation.

    Works on UTF-8 bytes: ``bytes.translate`` and ``split`` run at C speed,
    about twice as fast as a regular expression on 20,000 chunks.
    (Lower-casing the bytes instead of the text would save another 0.08 s
    there, but would leave non-ASCII capitals such as "É" unfolded.)
    """
    if "&" in text:
        text = html.unescape(text)  # "&#39853;", "&amp;"
    raw = text.lower().encode("utf-8", "replace")
    if b"\xc2" in raw or b"\xe2\x80" in raw:
        raw = _SEPARATORS_UTF8.sub(b" ", raw)
    return raw.translate(_TO_SPACE).split()


def normalise_word(word: bytes) -> bytes:
    """Stem of a lower-cased word: the first matching suffix of ``SUFFIXES``
    is stripped if at least 3 characters remain (not from words in "ss")."""
    if word.endswith(b"ss"):
        return word
    for suffix in _SUFFIXES_B:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_SUFFIXES_B = tuple(s.encode("ascii") for s in SUFFIXES)


def _question_terms(text: str) -> list[bytes]:
    """Distinct stems of the content words of a question, in order."""
    stems = (
        normalise_word(w)
        for w in _words(text)
        if len(w) >= MIN_WORD_LENGTH and w not in _STOP
    )
    return list(dict.fromkeys(stems))


# Text hashed per block (bytes of lower-cased UTF-8): big enough that numpy's
# per-call cost vanishes, small enough that a block's 64-bit work arrays stay
# near 100 MB.
HASH_BLOCK_BYTES = 1 << 22
# Words are hashed as polynomials in this odd base modulo 2**64 (see _hash_words).
_HASH_BASE = 0x100000001B3
_HASH_BASE_INVERSE = pow(_HASH_BASE, -1, 1 << 64)
# Slots of the table that finds word hashes among the wanted ones in _presence (32 MB).
_TABLE_SIZE = 1 << 23
_CHUNK_BREAK = "\x01"  # joins the texts of a block; _words makes it a space, _TO_SPACE_KEEP keeps it
_TO_SPACE_KEEP = bytes(b if b == 1 else _TO_SPACE[b] for b in range(256))
_powers: dict[int, np.ndarray] = {}


def _power_table(base: int, length: int) -> np.ndarray:
    """``base**i mod 2**64`` for i < length (uint64), kept between calls."""
    table = _powers.get(base)
    if table is None or len(table) < length:
        size = max(length, HASH_BLOCK_BYTES * 2)
        table = np.full(size, base, dtype=np.uint64)
        table[0] = 1
        np.cumprod(table, out=table)  # wraps modulo 2**64
        _powers[base] = table
    return table[:length]


def _hash_words(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets and 64-bit hashes of the words of ``raw`` (runs of bytes other than space and 0x01).

    ``hash(w) = sum_i w[i] * B**i mod 2**64`` for the bytes ``w[i]`` of a
    word, ``B`` = ``_HASH_BASE``, from one running sum over the block:
    ``(S[end] - S[start]) * B**-start``. A word's hash depends on its
    bytes only, so hashing the wanted words the same way finds them.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    is_word = (data != 32) & (data != 1)
    edges = np.diff(is_word.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    with np.errstate(over="ignore"):
        running = np.empty(len(data) + 1, dtype=np.uint64)
        running[0] = 0
        np.cumsum(data * _power_table(_HASH_BASE, len(data)), out=running[1:])
        hashes = (running[ends] - running[starts]) * _power_table(_HASH_BASE_INVERSE, len(data))[starts]
    return starts, hashes


def _lowered(texts: Sequence[str]) -> bytes:
    """The texts as ``_words`` prepares them (unescaped, lower-cased, UTF-8, separators made spaces),
    joined by 0x01 bytes."""
    joined = f" {_CHUNK_BREAK} ".join(t.replace(_CHUNK_BREAK, " ") for t in texts)
    if "&" in joined:
        joined = html.unescape(joined)  # "&#39853;", "&amp;"
    raw = joined.lower().encode("utf-8", "replace")
    if b"\xc2" in raw or b"\xe2\x80" in raw:
        raw = _SEPARATORS_UTF8.sub(b" ", raw)
    return raw.translate(_TO_SPACE_KEEP)


def _text_blocks(chunk_texts: Sequence[str]):
    """``(chunk of each word, hash of each word)`` of the chunks, one block of text at a time."""
    n = len(chunk_texts)
    first = 0
    while first < n:
        # As many chunks as fill about HASH_BLOCK_BYTES (characters stand in for bytes).
        size, last = 0, first
        while last < n and (last == first or size < HASH_BLOCK_BYTES):
            size += len(chunk_texts[last]) + 3
            last += 1
        raw = _lowered(chunk_texts[first:last])
        breaks = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 1)
        if len(breaks) != last - first - 1:  # unescaping made a 0x01 (never seen): chunk by chunk
            parts = [b" ".join(_words(t)) for t in chunk_texts[first:last]]
            raw = b" \x01 ".join(parts)
            breaks = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 1)
        starts, hashes = _hash_words(raw)
        yield first + np.searchsorted(breaks, starts), hashes
        first = last


def _presence(chunk_texts: Sequence[str], stem_id: dict[bytes, int]) -> tuple[np.ndarray, np.ndarray]:
    """Which chunks hold each stem, as postings: ``indices[indptr[j] : indptr[j + 1]]`` are
    the chunks holding stem ``j``, ascending (the layout of a CSC matrix).

    A chunk holds a stem when one of its words normalises to it
    (:func:`normalise_word`), i.e. is the stem or the stem plus one of
    ``SUFFIXES``. Every such form is hashed (:func:`_hash_words`) and looked
    up among the hashes of the chunks' words, so the texts are read at numpy
    speed; a form found is checked to normalise to its stem. Each block's
    (chunk, stem) pairs are kept once, as int32, and placed straight into
    the postings: at a million chunks they are about 10^8.
    """
    forms = list(dict.fromkeys(stem + suffix for stem in stem_id for suffix in (b"",) + _SUFFIXES_B))
    n_stems = len(stem_id)
    if not forms:
        return np.zeros(n_stems + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    _, form_hashes = _hash_words(b" ".join(forms))
    keys, first_form = np.unique(form_hashes, return_index=True)
    # A table from the low bits of a hash to the one key with those bits
    # (-1 when several share them) finds most words with one lookup; a
    # binary search per word was most of the time.
    low = (keys & (_TABLE_SIZE - 1)).astype(np.int64)
    table = np.zeros(_TABLE_SIZE, dtype=np.int32)
    table[low] = np.arange(1, len(keys) + 1, dtype=np.int32)
    table[low[np.bincount(low, minlength=_TABLE_SIZE)[low] > 1]] = -1
    # The stem each form found stands for (-1: it normalises to another stem; -2: not seen yet).
    column = np.full(len(keys), -2, dtype=np.int32)
    pairs: list[tuple[np.ndarray, np.ndarray]] = []  # per block: stems, and chunks, sorted by stem
    counts = np.zeros(n_stems, dtype=np.int64)
    for owner, hashes in _text_blocks(chunk_texts):
        slot = table[(hashes & (_TABLE_SIZE - 1)).astype(np.int64)]
        maybe = np.flatnonzero(slot)
        where = slot[maybe].astype(np.int64) - 1
        shared = np.flatnonzero(where < 0)
        if len(shared):
            where[shared] = np.minimum(np.searchsorted(keys, hashes[maybe[shared]]), len(keys) - 1)
        hit = keys[where] == hashes[maybe]
        key, chunk = where[hit], owner[maybe[hit]]
        for k in np.unique(key[column[key] == -2]).tolist():
            column[k] = stem_id.get(normalise_word(forms[first_form[k]]), -1)
        stem = column[key]
        kept = stem >= 0
        stem, chunk = stem[kept], chunk[kept].astype(np.int32)
        order = np.argsort(stem, kind="stable")  # chunks stay ascending within a stem
        stem, chunk = stem[order], chunk[order]
        new = np.ones(len(stem), dtype=bool)  # two forms, or two mentions, of a stem in a chunk count once
        new[1:] = (stem[1:] != stem[:-1]) | (chunk[1:] != chunk[:-1])
        stem, chunk = stem[new], chunk[new]
        counts += np.bincount(stem, minlength=n_stems)
        pairs.append((stem, chunk))
    indptr = np.zeros(n_stems + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    filled = indptr[:-1].copy()
    while pairs:  # blocks in chunk order, each freed once placed
        stem, chunk = pairs.pop(0)
        first = np.searchsorted(stem, stem)  # where each stem's run starts in this block
        indices[filled[stem] + (np.arange(len(stem)) - first)] = chunk
        filled += np.bincount(stem, minlength=n_stems)
    return indptr, indices


def _one_edit(word: bytes) -> set[bytes]:
    """Words one deletion, swap of neighbours, substitution or insertion of
    a letter a-z away from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    letters = [bytes((c,)) for c in range(ord("a"), ord("z") + 1)]
    edits = {a + b[1:] for a, b in splits if b}
    edits |= {a + b[1:2] + b[0:1] + b[2:] for a, b in splits if len(b) > 1}
    edits |= {a + c + b[1:] for a, b in splits if b for c in letters}
    edits |= {a + c + b for a, b in splits for c in letters}
    edits.discard(word)
    return edits


def _spelling_fixes(
    chunk_texts: Sequence[str], absent: list[bytes]
) -> tuple[dict[bytes, bytes], dict[bytes, np.ndarray]]:
    """Corpus words one edit away from question words the corpus lacks.

    A question word that occurs in no chunk but is one typing slip from a
    word that does ("borvn", "cimbals") is almost always that word
    misspelt; counting it as absent made well-supported questions look
    off-topic. Only stems of at least ``MIN_FIXABLE_LENGTH`` letters are
    fixed (shorter ones have too many neighbours), at most
    ``MAX_SPELLING_FIXES`` of them, and each to its most frequent neighbour.

    Returns the fixes (absent stem -> corpus stem) and the chunks holding
    each corpus stem a fix points to (sorted chunk indices).
    """
    candidates = [t for t in absent if len(t) >= MIN_FIXABLE_LENGTH and t.isalpha()]
    candidates = candidates[:MAX_SPELLING_FIXES]
    if not candidates:
        return {}, {}
    neighbours = {t: {normalise_word(e) for e in _one_edit(t)} for t in candidates}
    variant_id: dict[bytes, int] = {}
    for variants in neighbours.values():
        for v in variants:
            if len(v) >= 3:
                variant_id.setdefault(v, len(variant_id))
    indptr, indices = _presence(chunk_texts, variant_id)
    df = np.diff(indptr)
    fixes = {}
    for stem, variants in neighbours.items():
        found = [(int(df[variant_id[v]]), v) for v in variants if v in variant_id and df[variant_id[v]]]
        if found:
            fixes[stem] = max(found)[1]
    postings = {v: indices[indptr[variant_id[v]] : indptr[variant_id[v] + 1]] for v in set(fixes.values())}
    return fixes, postings


def _best_share(postings: list[np.ndarray], weights: np.ndarray, scratch: np.ndarray) -> tuple[float, int]:
    """The largest ``sum_i weights[i] * [chunk in postings[i]]`` over the chunks, and the first chunk reaching it.

    Exact, without visiting most chunks: terms are added heaviest (rarest)
    first to a partial sum over the chunks holding them; once the best
    partial sum exceeds the weight of the terms not yet added, no chunk
    outside those seen can reach it, and of those only the ones whose
    partial sum plus that weight can still reach it are completed.
    ``postings`` are sorted chunk indices; ``scratch`` is an all-zero
    float64 array with one entry per chunk, left all zero. Returns
    (0.0, -1) when no chunk holds any term.
    """
    order = np.argsort(-weights, kind="stable")
    weights = weights[order].astype(np.float64)
    postings = [postings[i] for i in order]
    remaining = np.concatenate([np.cumsum(weights[::-1])[::-1][1:], [0.0]])
    best_partial = 0.0
    last = len(weights) - 1
    for j, chunks in enumerate(postings):
        if len(chunks):
            scratch[chunks] += weights[j]
            best_partial = max(best_partial, float(scratch[chunks].max()))
        if best_partial > remaining[j]:
            last = j
            break
    seen = np.concatenate(postings[: last + 1])
    if not len(seen):
        return 0.0, -1
    partial = scratch[seen]
    scratch[seen] = 0.0
    # Rounding slack: a chunk is dropped only when it is clearly below the best.
    keep = partial + remaining[last] >= best_partial - 1e-9
    survivors, first = np.unique(seen[keep], return_index=True)
    full = partial[keep][first]
    for j in range(last + 1, len(postings)):
        chunks = postings[j]
        if len(chunks):
            where = np.minimum(np.searchsorted(chunks, survivors), len(chunks) - 1)
            full = full + weights[j] * (chunks[where] == survivors)
    top = int(np.argmax(full))
    if full[top] <= 0.0:
        return 0.0, -1
    return float(full[top]), int(survivors[top])


def lexical_coverage(
    question_texts: Sequence[str], chunk_texts: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """How well the best chunk covers each question's distinctive words.

    Each content word of a question (not a stop or question word, at least
    ``MIN_WORD_LENGTH`` characters, stemmed by :func:`normalise_word`) is
    weighted by its inverse document frequency over the chunks,
    ``idf = ln((1 + n_chunks) / (1 + df)) + 1`` (scikit-learn's smoothed
    idf): a word found in no chunk gets the largest weight. A question's
    coverage is the largest, over chunks, idf-weighted share of its words
    that the chunk contains. A word found in no chunk but one typing slip
    away from a corpus word counts as that word (see ``_spelling_fixes``).

    Returns
    -------
    coverage : ndarray of shape (n_questions,)
        In [0, 1]; NaN for a question without content words.
    best_chunk : ndarray of shape (n_questions,), int
        Chunk reaching that coverage (-1 when NaN or no word was found).
    absent_words : list of list of str
        Each question's content words that occur in no chunk (misspellings
        of corpus words excluded).
    """
    terms = [_question_terms(t) for t in question_texts]
    n = len(terms)
    if n == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64), []
    stem_id: dict[bytes, int] = {}
    for ts in terms:
        for t in ts:
            stem_id.setdefault(t, len(stem_id))
    n_chunks = len(chunk_texts)
    indptr, indices = _presence(chunk_texts, stem_id)
    postings = [indices[indptr[j] : indptr[j + 1]] for j in range(len(stem_id))]
    fixes, fixed_postings = _spelling_fixes(chunk_texts, [t for t, j in stem_id.items() if not len(postings[j])])
    for t, fix in fixes.items():
        postings[stem_id[t]] = fixed_postings[fix]
    df = np.fromiter(map(len, postings), dtype=np.int64, count=len(postings))
    idf = np.log((1.0 + n_chunks) / (1.0 + df)) + 1.0

    coverage = np.full(n, np.nan)
    best_chunk = np.full(n, -1, dtype=np.int64)
    scratch = np.zeros(n_chunks)
    for q, ts in enumerate(terms):
        if ts:
            ids = [stem_id[t] for t in ts]
            weights = idf[ids] / idf[ids].sum()
            coverage[q], best_chunk[q] = _best_share([postings[j] for j in ids], weights, scratch)
    coverage = np.minimum(coverage, 1.0)  # float rounding
    absent_words = [
        [t.decode("utf-8", "replace") for t in ts if df[stem_id[t]] == 0] for ts in terms
    ]
    return coverage, best_chunk, absent_words


def _robust_center_scale(x: np.ndarray) -> tuple[float, float]:
    """Median and robust spread (1.4826 * MAD; 1.2533 * mean absolute
    deviation when more than half the values tie). Spread 0 = all equal."""
    if not len(x):
        return 0.0, 0.0
    center = float(np.median(x))
    scale = 1.4826 * float(np.median(np.abs(x - center)))
    if scale < TIED_SCALE:
        scale = 1.2533 * float(np.mean(np.abs(x - center)))
    if scale < TIED_SCALE:
        scale = 0.0
    return center, scale


def strictness_to_z(strictness: float) -> float:
    """Robust z-score above which a question is flagged.

    ``z = 3.5 - 2.5 * strictness``: strictness 0 flags only extreme questions
    (z > 3.5), the default 0.5 flags z > 2.25, strictness 1 flags z > 1.0.
    """
    _check_strictness(strictness)
    return 3.5 - 2.5 * float(strictness)


def support_margin(
    max_similarity: np.ndarray, lexical_coverage: np.ndarray, support_threshold: float
) -> np.ndarray:
    """How far each question is above the documents' support level (> 0 = supported).

    ``(1 - MARGIN_LEXICAL_WEIGHT) * (max_similarity - tau) / EMBEDDING_UNIT +
    MARGIN_LEXICAL_WEIGHT * (coverage - LEXICAL_CUT) / LEXICAL_UNIT``. A question
    without lexical evidence (no texts, or no content words: NaN coverage)
    is judged on its similarity alone, ``(max_similarity - tau) /
    EMBEDDING_UNIT``. Each question's margin depends only on that question
    and the chunks, never on the other questions.
    """
    emb = (np.asarray(max_similarity, dtype=np.float64) - support_threshold) / EMBEDDING_UNIT
    lex = (np.asarray(lexical_coverage, dtype=np.float64) - LEXICAL_CUT) / LEXICAL_UNIT
    known = np.isfinite(lex)
    return np.where(
        known,
        (1.0 - MARGIN_LEXICAL_WEIGHT) * emb + MARGIN_LEXICAL_WEIGHT * np.where(known, lex, 0.0),
        emb,
    )


def margin_cut(strictness: float) -> float:
    """Support margin below which a question is flagged (absolute rule).

    ``STRICTNESS_SPAN * (strictness - 1)``: strictness 1 flags every
    question short of the support level (margin < 0), the default 0.5 those
    short by more than 0.75 of a unit, strictness 0 by more than 1.5 units.
    """
    _check_strictness(strictness)
    return STRICTNESS_SPAN * (float(strictness) - 1.0)


def _check_strictness(strictness) -> None:
    lo, hi = STRICTNESS_RANGE
    if not isinstance(strictness, (int, float, np.integer, np.floating)) or not (
        lo <= float(strictness) <= hi
    ):
        raise InputError(
            f"strictness must be a number between {lo} and {hi}, got {strictness!r}. "
            "Valid values are 0 (flag only extreme questions) to 1 (flag many); "
            "the default is 0.5."
        )


def _as_matrix(X, name: str) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < 1:
        raise InputError(f"{name} must be a 2-D array (n, n_features), got shape {X.shape}.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float32)
    if not np.isfinite(X).all():
        raise InputError(f"{name} contains NaN or infinite values; check the embeddings.")
    return as_unit_rows(np.ascontiguousarray(X, dtype=np.float32))


def _top_k_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k largest values of each row of ``sims`` (n, m), 1 <= k <= m."""
    if k == 1:
        return sims.max(axis=1)
    if k <= _REPEATED_MAX_UP_TO:
        # A few maxima, each taken out in turn, beat a partition of the row
        # (at a million chunks in 50 clusters, k is 2 of 2,000 references).
        rows = np.arange(len(sims))
        total = np.zeros(len(sims), dtype=np.float64)
        taken = []
        for _ in range(k):
            best = sims.argmax(axis=1)
            total += sims[rows, best]
            taken.append((best, sims[rows, best].copy()))
            sims[rows, best] = -np.inf
        for best, values in taken:  # the caller's block, as it was
            sims[rows, best] = values
        return (total / k).astype(sims.dtype)
    part = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
    return part.mean(axis=1)


def chunk_density(
    chunk_vectors: np.ndarray,
    chunk_labels: np.ndarray | None = None,
    n_neighbors: int = DENSITY_NEIGHBORS,
    max_reference: int = MAX_REFERENCE,
    random_state: int | None = 0,
) -> np.ndarray:
    """How crowded the knowledge base is around each chunk.

    Parameters
    ----------
    chunk_vectors : ndarray of shape (n_chunks, n_features)
        Unit-length chunk embeddings.
    chunk_labels : ndarray of shape (n_chunks,) or None
        Cluster of each chunk. Neighbours are searched within the chunk's
        cluster (nearest neighbours almost always share a K-means cell), which
        keeps the cost near ``n_chunks**2 / K`` instead of ``n_chunks**2``.
        None treats all chunks as one cluster.
    n_neighbors : int
        Number of nearest chunks averaged.
    max_reference : int
        At most this many chunks per cluster are used as neighbours (a seeded
        random sample); ``n_neighbors`` is scaled down with the sampling rate
        so the estimate keeps the same meaning.

    Returns
    -------
    density : ndarray of shape (n_chunks,)
        Mean cosine similarity of each chunk to its nearest other chunks; 0
        for a chunk alone in its cluster.
    """
    n = chunk_vectors.shape[0]
    labels = np.zeros(n, dtype=np.int64) if chunk_labels is None else np.asarray(chunk_labels)
    rng = np.random.default_rng(random_state)
    density = np.zeros(n, dtype=np.float32)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        if len(members) < 2:
            continue
        if len(members) > max_reference:
            reference = np.sort(rng.choice(members, size=max_reference, replace=False))
        else:
            reference = members
        k = max(1, round(min(n_neighbors, len(members) - 1) * len(reference) / len(members)))
        k = min(k, len(reference) - 1)
        ref_vectors = chunk_vectors[reference]
        position = np.full(n, -1, dtype=np.int64)
        position[reference] = np.arange(len(reference))
        for start in range(0, len(members), BLOCK_ROWS):
            block = members[start : start + BLOCK_ROWS]
            sims = chunk_vectors[block] @ ref_vectors.T
            # A chunk is not its own neighbour.
            j = position[block]
            rows = np.flatnonzero(j >= 0)
            sims[rows, j[rows]] = -np.inf
            density[block] = _top_k_mean(sims, k)
    return density


def _density_threads(n_chunks: int, chunk_labels) -> int:
    """BLAS threads for :func:`chunk_density`: one for the many small products
    of small clusters (more threads spun on them and ran 4x slower on a busy
    2-core machine), all for clusters big enough that each product is
    ``BLOCK_ROWS x MAX_REFERENCE``."""
    if chunk_labels is None:
        return None if n_chunks > 4 * MAX_REFERENCE else 1
    sizes = np.bincount(np.asarray(chunk_labels))
    return None if np.median(sizes[sizes > 0]) > 4 * MAX_REFERENCE else 1


def _nearest_questions(Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each question's k most similar other questions, most similar first; 1 <= k < n.

    Exact, one block of ``BLOCK_ROWS`` questions at a time. From
    ``PRUNE_FACTOR * k * NEIGHBOR_GROUP`` questions on, picking k of n
    similarities per question takes longer than the products (and a block's
    full index array is 200 MB at 50,000), so the questions are first cut into
    runs of ``NEIGHBOR_GROUP`` and only the k runs with the largest maxima
    are searched: every question with a similarity above the k-th largest
    lies in a run whose maximum is above it, and there are fewer than k such
    runs, so the k runs hold the k largest values.

    Returns indices and cosine similarities, both of shape (n, k).
    """
    n = Q.shape[0]
    index = np.empty((n, k), dtype=np.int64)
    similarity = np.empty((n, k), dtype=np.float32)
    pruned = n >= PRUNE_FACTOR * k * NEIGHBOR_GROUP
    full = n // NEIGHBOR_GROUP * NEIGHBOR_GROUP
    # Reused between blocks: at 50,000 questions a fresh block is 100 MB of
    # new pages each time.
    rows = min(BLOCK_ROWS, n)
    buffer = np.empty((rows, n), dtype=np.float32)
    halves = np.empty((rows, full // NEIGHBOR_GROUP, NEIGHBOR_GROUP // 2), dtype=np.float32) if pruned else None
    for start in range(0, n, BLOCK_ROWS):
        block = Q[start : start + BLOCK_ROWS]
        b = len(block)
        sims = np.matmul(block, Q.T, out=buffer[:b])
        own = np.arange(b)
        sims[own, start + own] = -np.inf  # not its own neighbour
        candidates, values = None, sims
        if pruned:
            # Each run's maximum by halving (a max over a short last axis is 2x slower).
            runs = sims[:, :full].reshape(b, -1, NEIGHBOR_GROUP)
            width = NEIGHBOR_GROUP // 2
            maxima = np.maximum(runs[..., :width], runs[..., width:], out=halves[:b])
            while width > 1:
                width //= 2
                np.maximum(maxima[..., :width], maxima[..., width : 2 * width], out=maxima[..., :width])
            maxima = maxima[..., 0]
            if full < n:
                maxima = np.hstack([maxima, sims[:, full:].max(axis=1, keepdims=True)])
            best_runs = np.argpartition(-maxima, k - 1, axis=1)[:, :k]
            candidates = (best_runs[:, :, None] * NEIGHBOR_GROUP + np.arange(NEIGHBOR_GROUP)).reshape(b, -1)
            values = np.take_along_axis(sims, np.minimum(candidates, n - 1), axis=1)
            values[candidates >= n] = -np.inf  # past the end of a short last run
        top = np.argpartition(-values, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(values, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        index[start : start + b] = top if candidates is None else np.take_along_axis(candidates, top, axis=1)
        similarity[start : start + b] = np.take_along_axis(top_sims, order, axis=1)
    return index, similarity


def _lof_scores(
    neighbours: np.ndarray, similarity: np.ndarray, k: int, notes: list[str]
) -> np.ndarray:
    """LocalOutlierFactor on the questions alone, from their neighbour lists.

    ``neighbours`` and ``similarity`` (n, m >= k) are sorted, most similar
    first. They become a sparse distance graph (Euclidean distance between
    unit vectors, which orders neighbours like cosine), so LOF needs no
    second search. Each row starts with the question itself at distance 0,
    as scikit-learn expects of a graph built on its own training set.
    """
    n, m = neighbours.shape
    distance = np.sqrt(np.clip(2.0 - 2.0 * similarity.astype(np.float64), 0.0, None))
    data = np.hstack([np.zeros((n, 1)), distance]).ravel()
    indices = np.hstack([np.arange(n)[:, None], neighbours]).ravel()
    graph = sparse.csr_matrix(
        (data, indices, np.arange(0, n * (m + 1) + 1, m + 1)), shape=(n, n)
    )
    lof = LocalOutlierFactor(n_neighbors=k, metric="precomputed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lof.fit(graph)
    for w in caught:
        notes.append(f"LOF: {w.message}")
    return -lof.negative_outlier_factor_


def apply_overrides(
    is_outlier: np.ndarray,
    rows: Sequence[int],
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> np.ndarray:
    """Apply the user's decisions on top of the automatic screening.

    Parameters
    ----------
    is_outlier : ndarray of shape (n_questions,), bool
        Automatic decision (True = off-topic, left out of the analysis).
    rows : sequence of int, length n_questions
        0-based row of each question in the user's file.
    force_include : sequence of int
        File rows to keep as on-topic whatever the screening says.
    force_exclude : sequence of int
        File rows to treat as off-topic whatever the screening says. A row in
        both lists is excluded (the more cautious choice).

    Returns
    -------
    is_outlier : ndarray of shape (n_questions,), bool
        A new array; rows not present in ``rows`` are ignored.
    """
    decision = np.array(is_outlier, dtype=bool, copy=True)
    rows = np.asarray(rows)
    if decision.shape != rows.shape:
        raise InputError(
            f"is_outlier and rows must have the same length, got {decision.shape[0]} "
            f"and {rows.shape[0]}."
        )
    if len(force_include):
        decision[np.isin(rows, np.asarray(list(force_include)))] = False
    if len(force_exclude):
        decision[np.isin(rows, np.asarray(list(force_exclude)))] = True
    return decision


class QuestionScreener:
    """Score every question for being off-topic, judged against the documents.

    Method (each step measured on the eight wiki-qa splits of
    ``benchmarks/eval_screening.py``, four articles removed per split; the
    figures are mean AUROC over the splits, and F1 of the default decision):

    1. **Support from the documents (embeddings).** ``support(q) = max_c
       [cos(q, c) - density_weight * density(c)]``, where ``density(c)`` is
       the mean cosine of chunk ``c`` to its 20 nearest chunks (searched
       within its cluster). Plain best cosine (``density_weight=0``) already
       beats LOF-on-questions by far (0.90 vs 0.52). Subtracting the density
       asks more of a match where the documents crowd together: in a region
       with many similar chunks (several instrument or language articles)
       being somewhat close to one of them is weak evidence, while a chunk
       with no close siblings is matched only by questions about it
       (0.90 -> 0.92). The embedding score is ``-support(q)``.
    2. **Lexical evidence (when the texts are given).** Embeddings judge a
       question by its gist, so they fail in two ways: a missing topic with
       a close cousin present looks covered (Finnish questions are as close
       to the Swedish chunks as Swedish questions are), and a question
       without context ("What happened in 1887?") matches no chunk well
       although a chunk mentions the year. Both are settled by the words: is
       there a chunk that contains the question's *distinctive* words
       together? Each content word (not a stop or question word, at least 3
       characters, crudely stemmed so that "retire", "retired" and "retires"
       match) is weighted by its idf over the chunks (a word in no chunk,
       like "zebra" or "Finnish" once its article is gone, weighs most); the
       *coverage* of a question is the largest idf-weighted share of its
       words found in one chunk (:func:`lexical_coverage`). The lexical
       score ``1 - coverage`` and the embedding score are each turned into a
       robust z-score (median and 1.4826 * MAD, or 1.2533 * mean absolute
       deviation when more than half the values tie, as for the coverage,
       where most questions are fully covered) and averaged with equal
       weights; a component with no spread is left out. Alone (before step
       3) the lexical score does better than the embedding score (AUROC 0.93
       vs 0.91, best F1 0.69 vs 0.52), and the two err on different
       questions: combined and smoothed, AUROC 0.95 -> 0.98 and F1 0.62 ->
       0.86. Tried and dropped: the best TF-IDF cosine to any chunk (F1
       0.70), the share of words absent from the whole corpus (most
       off-topic words occur somewhere: "Melbourne" in two chunks of other
       articles), coverage by the embedding's best 1 or 5 chunks only
       (lower), truncation stemming (unstable with the length), weights 1/3
       or 2/3 for the lexical part (no better), and clipping both z-scores
       at 3 (fewer on-topic questions flagged with nothing removed, but in
       small question sets the off-topic questions no longer reached the
       cut).
    3. **Smoothing over neighbouring questions.** Being off-topic is a
       property of a topic, and questions about one topic come in groups, so
       each question's own score is averaged with that of its 10 most
       similar questions (by embedding): ``score = (1 - w) * own + w * mean
       of neighbours``, ``w = neighbor_weight`` (scaled down when there are
       fewer than 10 other questions). This removes much per-question noise
       (embeddings only: 0.92 -> 0.95, worst split 0.93). With the lexical
       evidence the neighbours' *median* replaces their mean: a missing word
       gives a large z, and a mean would pass part of it on to every on-topic
       question that has an off-topic one among its neighbours (Swedish
       questions next to a group of Finnish ones; wiki-qa F1 0.86 vs 0.85). The price: a lone
       off-topic question among on-topic neighbours is pulled towards them
       (isolated off-topic questions, embeddings only: 0.89 vs 0.92 for plain
       best cosine; with the texts 0.96); set ``neighbor_weight=0`` if
       off-topic questions are expected to be isolated.
    4. **Data-adaptive decision.** Scores are compared with the bulk of the
       questions by a robust z-score, ``z = (score - median) / (1.4826 *
       MAD)``, so the cut adapts to the corpus and the embedding model
       without assuming how many questions are off-topic. A question is
       flagged when ``z > 3.5 - 2.5 * strictness``; the default (z > 2.25)
       had the best mean F1 of the cuts tried for the embeddings alone; with
       the texts it gives 0.86, z > 2.5 (strictness 0.4) 0.87. A two-component
       Gaussian mixture on the scores did worse (F1 0.49 vs 0.62).

    5. **Decision against the documents (when ``support_threshold`` is
       given).** The robust z-score of step 4 compares a question with the
       *other questions*, so off-topic questions raise their own bar: on
       wiki-qa its recall falls from 1.0 when they are 8 of 58 questions to
       0.075 at 40 of 90, and to 0 when most of the set is off-topic. With a
       calibrated support level ``tau`` (the cosine at which a question
       reaches a passage for this model and corpus;
       ``coverage_core.calibration``) each question is judged on its own
       evidence alone, its *support margin* (:func:`support_margin`): how
       far its raw best cosine to any chunk is above tau (the scale tau is
       calibrated on; the density correction of step 1 is relative to the
       corpus, not to tau), plus how far the lexical coverage of step 2 is
       above ``LEXICAL_CUT``, each in units of evidence and weighted, so
       either kind of evidence can make up for a shortfall in the other (a
       cousin topic's question: cosine above tau, its key name in no chunk;
       a context-free question: low cosine, its words together in a chunk).
       A question is flagged when its margin is below :func:`margin_cut`
       of the strictness. The constants were chosen on the tuning half of
       wiki-qa in ``benchmarks/eval_offtopic.py --tune``, with whole kinds
       of article removed from the corpus (neighbours' median smoothing and
       the density-corrected support gained at most 0.04 F1 there and were
       left out; so did the top-3 mean, the peak over the mean and a
       logistic fit of them, none better than the two terms).
       The margin depends on that question and the chunks only, so the
       decision does not change with how many other questions are
       off-topic; the neighbour smoothing of step 3 (which depends on the
       mix) feeds ``outlier_score_``, the ranking, but not this decision.
       On the report half of ``benchmarks/eval_offtopic.py`` (tau from
       pseudo-queries): precision / recall 0.96 / 0.80 with 45% of the
       questions off-topic and 0.97 / 0.78 at 65% (the relative rule: 0 / 0
       at both), but 0.59 / 0.78 at 5% (relative rule 0.66 / 0.76): about
       3% of on-topic questions fall short of tau on both kinds of evidence
       (generic or context-free questions), which weighs heavily when
       off-topic questions are rare. Missed are mostly questions on a
       missing topic with a cousin present (a missing language among other
       languages), whose words and gist other articles share.

    With the texts, on wiki-qa: AUROC 0.98 (worst split 0.97), F1 of the
    default decision 0.86 (worst 0.81); with no article removed (only the 9
    Zebra questions off-topic) all 9 are flagged and 3.2% of the on-topic
    questions (2.3% at strictness 0.4). Embeddings only: AUROC 0.95 (worst
    0.93), F1 0.62, and 6% of the on-topic questions flagged with nothing
    removed.

    Also tried and dropped (embeddings): mean of the top-k chunk
    similarities (worse than the best one alone), LOF fitted on the chunks
    with ``novelty=True`` (0.89, and slow on 20,000 chunks), normalising the
    support per cluster, the margin between the best and second-best
    cluster, similarity to cluster centroids, centring the embeddings,
    mutual-neighbour smoothing, and adding the question-side density
    (better F1 for groups, much worse for isolated off-topic questions).

    LocalOutlierFactor on the question embeddings, the method's literal
    recipe, is computed for information only (``lof_score_``): it measures
    whether a question is unusual among the questions, and a group of
    questions about one missing topic looks normal to it (AUROC 0.52).

    Known limits: questions whose distinctive words are typos or spellings
    the documents do not use ("borvn", "dipthongs") lose lexical support;
    a few generic questions ("Regarding this topic, what did X do?") are
    still flagged; a missing topic whose words all occur together in a
    cousin's chunks is still missed.

    Parameters
    ----------
    strictness : float, default=0.5
        In ``[0, 1]``; higher flags more. Maps to the robust z-score cut
        ``3.5 - 2.5 * strictness`` (0 -> 3.5, 0.5 -> 2.25, 1 -> 1.0).
    n_neighbors : int, default=20
        Neighbours for the informational LOF on question embeddings.
        Lowered to ``n_questions - 1`` when there are fewer questions.
    random_state : int or None, default=0
        Seed for the chunk sample used by the density estimate on large
        clusters.
    density_weight : float, default=0.5
        Weight of the chunk-side density in step 1 (0 = plain best cosine).
    neighbor_weight : float, default=0.5
        Weight ``w`` of the neighbouring questions in step 3, in ``[0, 1)``.
    support_threshold : float or None, default=None
        Calibrated support level tau, a cosine in ``(0, 1]``
        (``coverage_core.calibration.calibrate(...).support_threshold``).
        Given, ``is_outlier_`` is decided per question against the
        documents (step 5) and does not depend on the other questions;
        None keeps the relative rule of step 4.

    Attributes
    ----------
    outlier_score_ : ndarray of shape (n_questions,)
        Higher = more likely off-topic. Embeddings only: ``-support``
        smoothed (step 3). With texts: the averaged z-scores, smoothed.
    is_outlier_ : ndarray of shape (n_questions,), bool
        Decision at ``strictness``.
    threshold_ : float
        Relative rule: score above which a question is flagged (``inf``
        when no decision is possible). With ``support_threshold``: the
        support margin below which a question is flagged.
    support_margin_ : ndarray of shape (n_questions,) or None
        Step 5's margin (> 0 = supported by the documents); None without
        ``support_threshold``.
    embedding_score_ : ndarray of shape (n_questions,)
        ``-support(q)`` of step 1, before combining and smoothing.
    lexical_coverage_ : ndarray of shape (n_questions,)
        Step 2's coverage in [0, 1] (1 = one chunk holds all the question's
        distinctive words); NaN without texts or for a question without
        content words (such questions get the median lexical score).
    lexical_chunk_ : ndarray of shape (n_questions,), int
        Chunk reaching that coverage; -1 when none (no texts, no content
        words, or no word found).
    absent_words_ : list of list of str
        Each question's content words (stemmed) found in no chunk; empty
        lists without texts. Useful to explain a flag.
    lof_score_ : ndarray of shape (n_questions,)
        LocalOutlierFactor on question embeddings alone (about 1 = inlier,
        larger = more outlying); NaN with fewer than 2 questions.
        Informational only.
    max_similarity_ : ndarray of shape (n_questions,)
        Best cosine similarity of each question to any chunk.
    nearest_chunk_ : ndarray of shape (n_questions,), int
        Index of that chunk.
    question_top_chunks_, question_top_similarities_ : ndarray of shape (n_questions, TOP_CHUNKS_KEPT)
        Each question's most similar chunks, most similar first (ties: lower
        chunk index first), from the same pass: the retrieval check at k up
        to ``TOP_CHUNKS_KEPT`` reads them (``pipeline.check_retrieval``).
    chunk_nearest_question_, chunk_max_similarity_ : ndarray of shape (n_chunks,)
        Each chunk's most similar question (any question, off-topic or not)
        and that similarity, from the same pass: ``pipeline.measure`` starts
        the coverage figures from them instead of a second pass.
    center_, scale_ : float
        Median and robust spread (1.4826 * MAD) of ``outlier_score_``.
    warnings_ : list of str
        Plain-language notes about degenerate inputs.
    """

    def __init__(
        self,
        strictness: float = 0.5,
        n_neighbors: int = 20,
        random_state: int | None = 0,
        density_weight: float = 0.5,
        neighbor_weight: float = 0.5,
        support_threshold: float | None = None,
    ):
        self.strictness = strictness
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.density_weight = density_weight
        self.neighbor_weight = neighbor_weight
        self.support_threshold = support_threshold

    def fit(
        self,
        question_vectors,
        chunk_vectors,
        chunk_labels=None,
        *,
        question_texts: Sequence[str] | None = None,
        chunk_texts: Sequence[str] | None = None,
        lexical: tuple[np.ndarray, np.ndarray, list[list[str]]] | None = None,
    ) -> "QuestionScreener":
        """Score and screen the questions.

        Parameters
        ----------
        question_vectors : array-like of shape (n_questions, n_features)
        chunk_vectors : array-like of shape (n_chunks, n_features)
            Embeddings from the same model; rows need not be normalised.
        chunk_labels : array-like of shape (n_chunks,), optional
            Topic cluster of each chunk (``ChunkClusterer.labels_``). Only
            used to make the density estimate fast; None is fine for small
            corpora.
        question_texts : sequence of str, length n_questions, optional
        chunk_texts : sequence of str, length n_chunks, optional
            The texts behind the vectors. Pass both whenever available: they
            add the lexical evidence of step 2 of the method, which catches
            missing topics with a close cousin in the documents and spares
            context-free questions, and on wiki-qa raises the F1 of the
            default decision from 0.62 to about 0.86. Without them the
            screening uses the embeddings alone. Entries that are not
            strings count as empty texts.
        lexical : tuple, optional
            ``lexical_coverage(question_texts, chunk_texts)`` computed before
            for these same texts. It does not depend on the clustering, so
            a refit after re-clustering can skip its cost (most of the fit).

        Returns
        -------
        self : QuestionScreener
        """
        self._check_parameters()
        Q, C, chunk_labels, question_texts, chunk_texts = self._check_inputs(
            question_vectors, chunk_vectors, chunk_labels, question_texts, chunk_texts
        )
        notes: list[str] = []
        max_sim, nearest, own = self._document_support(Q, C, chunk_labels)
        own, lexical_used = self._add_lexical_evidence(own, question_texts, chunk_texts, lexical, notes)
        score = self._smooth_over_neighbours(Q, own, lexical_used, notes)
        self._prepare_decision(score, max_sim, notes)

        self.outlier_score_ = score
        self.max_similarity_ = max_sim
        self.nearest_chunk_ = nearest
        self.n_questions_ = Q.shape[0]
        self.warnings_ = notes
        self.is_outlier_ = self.decide(self.strictness)
        self.threshold_ = self._threshold(self.strictness)
        return self

    def _check_parameters(self) -> None:
        _check_strictness(self.strictness)
        if not isinstance(self.n_neighbors, (int, np.integer)) or self.n_neighbors < 1:
            raise InputError(
                f"n_neighbors must be an integer >= 1, got {self.n_neighbors!r}. "
                "Valid values are 1, 2, 3, ...; the default is 20."
            )
        if not 0 <= self.density_weight <= 1:
            raise InputError(
                f"density_weight must be between 0 and 1, got {self.density_weight!r}. "
                "Valid values are 0 (plain best cosine) to 1; the default is 0.5."
            )
        if not 0 <= self.neighbor_weight < 1:
            raise InputError(
                f"neighbor_weight must be at least 0 and below 1, got "
                f"{self.neighbor_weight!r}. Valid values are 0 (no smoothing) up to "
                "but excluding 1; the default is 0.5."
            )
        tau = self.support_threshold
        if tau is not None and (
            isinstance(tau, bool)
            or not isinstance(tau, (int, float, np.integer, np.floating))
            or not 0 < float(tau) <= 1
        ):
            raise InputError(
                f"support_threshold must be a cosine similarity in (0, 1] or None, got "
                f"{tau!r}. Pass the calibrated level (coverage_core.calibration), or None "
                "to decide by the questions' robust z-scores."
            )

    @staticmethod
    def _check_inputs(question_vectors, chunk_vectors, chunk_labels, question_texts, chunk_texts):
        """Unit-row float32 matrices, the labels as an array and the texts as
        lists of str (None stays None); InputError if they do not fit together."""
        Q = _as_matrix(question_vectors, "question_vectors")
        C = _as_matrix(chunk_vectors, "chunk_vectors")
        if Q.shape[1] != C.shape[1]:
            raise InputError(
                f"Questions have {Q.shape[1]} features but chunks have {C.shape[1]}; "
                "embed both with the same model."
            )
        if C.shape[0] < 1:
            raise InputError("chunk_vectors is empty; at least one chunk is needed.")
        if chunk_labels is not None:
            chunk_labels = np.asarray(chunk_labels)
            if chunk_labels.shape != (C.shape[0],):
                raise InputError(
                    f"chunk_labels must have one label per chunk ({C.shape[0]}), "
                    f"got shape {chunk_labels.shape}."
                )
        if (question_texts is None) != (chunk_texts is None):
            raise InputError(
                "Pass both question_texts and chunk_texts (for the lexical evidence) "
                "or neither (embeddings only); got only "
                f"{'question_texts' if chunk_texts is None else 'chunk_texts'}."
            )
        if question_texts is not None:
            question_texts = [t if isinstance(t, str) else "" for t in question_texts]
            chunk_texts = [t if isinstance(t, str) else "" for t in chunk_texts]
            if len(question_texts) != Q.shape[0] or len(chunk_texts) != C.shape[0]:
                raise InputError(
                    "question_texts and chunk_texts must have one text per vector: got "
                    f"{len(question_texts)} question texts for {Q.shape[0]} question "
                    f"vectors and {len(chunk_texts)} chunk texts for {C.shape[0]} chunk "
                    "vectors."
                )
        return Q, C, chunk_labels, question_texts, chunk_texts

    def _document_support(self, Q: np.ndarray, C: np.ndarray, chunk_labels):
        """Step 1, in one pass over the chunk x question similarities (:func:`metrics.best_matches`):
        each question's best cosine, its chunk, and the embedding score (sets
        ``embedding_score_``, and each chunk's best question in
        ``chunk_nearest_question_`` and ``chunk_max_similarity_``)."""
        if self.density_weight > 0:
            with threadpool_limits(limits=_density_threads(C.shape[0], chunk_labels), user_api="blas"):
                density = chunk_density(C, chunk_labels, random_state=self.random_state)
            penalty = self.density_weight * density
        else:
            penalty = None
        found = best_matches(C, Q, chunk_penalty=penalty, top_k=TOP_CHUNKS_KEPT)
        max_sim = found.question_similarity.astype(np.float32)
        support = found.question_support if penalty is not None else max_sim
        self.chunk_nearest_question_ = found.nearest_question
        self.chunk_max_similarity_ = found.chunk_similarity
        self.question_top_chunks_ = found.top_chunks
        self.question_top_similarities_ = found.top_similarities
        own = -support.astype(np.float64)
        self.embedding_score_ = own
        return max_sim, found.nearest_chunk.astype(np.int64), own

    def _add_lexical_evidence(self, own, question_texts, chunk_texts, lexical, notes):
        """Step 2: the score combined with the lexical evidence when there are
        texts, and whether it was used (sets ``lexical_coverage_``,
        ``lexical_chunk_`` and ``absent_words_``)."""
        n = len(own)
        self.lexical_coverage_ = np.full(n, np.nan)
        self.lexical_chunk_ = np.full(n, -1, dtype=np.int64)
        self.absent_words_ = [[] for _ in range(n)]
        if question_texts is None or not n:
            return own, False
        if lexical is None:
            lexical = lexical_coverage(question_texts, chunk_texts)
        elif len(lexical[0]) != n:
            raise InputError(
                f"lexical holds evidence for {len(lexical[0])} questions, not {n}; "
                "compute it with lexical_coverage() for these question texts."
            )
        coverage, best_chunk, absent = lexical
        self.lexical_coverage_ = coverage
        self.lexical_chunk_ = best_chunk
        self.absent_words_ = absent
        return self._combine(own, 1.0 - coverage, notes)

    def _smooth_over_neighbours(self, Q, own, lexical_used, notes) -> np.ndarray:
        """Step 3: each score averaged with those of the most similar
        questions (sets ``lof_score_``, from the same neighbour search)."""
        n = len(own)
        if n < 2:
            self.lof_score_ = np.full(n, np.nan)
            notes.append(
                f"LOF needs at least 2 questions, got {n}; lof_score_ is NaN."
            )
            return own
        k_lof = self.n_neighbors
        if k_lof >= n:
            notes.append(
                f"With only {n} questions, the local outlier score (lof_score) uses {n - 1} neighbours "
                f"instead of {k_lof}; it is reported only and decides nothing."
            )
            k_lof = n - 1
        k = min(QUESTION_NEIGHBORS, n - 1)
        with threadpool_limits(limits=1, user_api="blas"):
            neighbours, similarity = _nearest_questions(Q, max(k, k_lof))
        # With fewer neighbours than usual their average is trusted less
        # (two questions would otherwise end up with the same score).
        weight = self.neighbor_weight * k / QUESTION_NEIGHBORS
        # With the lexical evidence the neighbours' median: a missing
        # word gives a large z, and a mean would pass part of it on to
        # every on-topic question that has the off-topic one among its
        # neighbours.
        smooth = np.median if lexical_used else np.mean
        score = (1 - weight) * own + weight * smooth(own[neighbours[:, :k]], axis=1)
        self.lof_score_ = _lof_scores(neighbours, similarity, k_lof, notes)
        return score

    def _prepare_decision(self, score, max_sim, notes) -> None:
        """Steps 4 and 5: what the decision reads (sets ``center_``,
        ``scale_`` and ``support_margin_``), with a note when the relative
        rule can flag nothing."""
        n = len(score)
        tau = self.support_threshold
        self.center_, scale = _robust_center_scale(score)
        self.scale_ = scale
        if tau is not None:
            # The absolute rule needs no bulk of questions.
            self.support_margin_ = support_margin(
                max_sim, self.lexical_coverage_, float(tau)
            )
            return
        self.support_margin_ = None
        if n < MIN_QUESTIONS_FOR_DECISION:
            notes.append(
                f"Only {n} question(s): too few to tell what is usual, so none is "
                "flagged automatically; exclude off-topic questions by hand."
            )
        elif scale == 0.0:
            notes.append("All questions score the same; none is flagged as off-topic.")

    @staticmethod
    def _combine(
        embedding: np.ndarray, lexical: np.ndarray, notes: list[str]
    ) -> tuple[np.ndarray, bool]:
        """Average of the two components' robust z-scores (weights
        ``1 - LEXICAL_WEIGHT`` and ``LEXICAL_WEIGHT``), and whether the
        lexical component was used.

        Questions without content words (NaN) take the lexical median (z 0).
        A component that does not vary carries no information and is left out.
        """
        known = np.isfinite(lexical)
        if not known.any():
            notes.append(
                "No question has a content word (all are stop or question words), so "
                "the lexical evidence is not used."
            )
            return embedding, False
        e_center, e_scale = _robust_center_scale(embedding)
        l_center, l_scale = _robust_center_scale(lexical[known])
        if l_scale == 0.0:
            return embedding, False
        z_lex = np.where(known, (np.where(known, lexical, l_center) - l_center) / l_scale, 0.0)
        if e_scale == 0.0:
            return z_lex, True
        z_emb = (embedding - e_center) / e_scale
        return (1.0 - LEXICAL_WEIGHT) * z_emb + LEXICAL_WEIGHT * z_lex, True

    def _threshold(self, strictness: float) -> float:
        if self.support_margin_ is not None:
            return margin_cut(strictness)
        if self.n_questions_ < MIN_QUESTIONS_FOR_DECISION or self.scale_ == 0.0:
            return float("inf")
        return self.center_ + strictness_to_z(strictness) * self.scale_

    def decide(self, strictness: float) -> np.ndarray:
        """Decision for another strictness, from the stored scores (no refit).

        Parameters
        ----------
        strictness : float in [0, 1]

        Returns
        -------
        is_outlier : ndarray of shape (n_questions,), bool
            Flags at a higher strictness are a superset of those at a lower one.
        """
        _check_strictness(strictness)
        if self.support_margin_ is not None:
            return self.support_margin_ < self._threshold(strictness)
        return self.outlier_score_ > self._threshold(strictness)
