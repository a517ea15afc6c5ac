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
import os
import re
import string
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Sequence

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

# Threads for the chunk density's products and the word check's blocks of
# text (see _in_threads): at most this many, so that the blocks under way
# (up to 4 MB of products or 50 MB of word arrays each) stay a small part of
# the memory whatever the machine reports.
MAX_THREADS = 8

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


# Text read per block (bytes of lower-cased UTF-8): big enough that numpy's
# per-call cost vanishes, small enough that a block's work arrays (a few
# 8-byte values per word) stay near 50 MB.
HASH_BLOCK_BYTES = 1 << 22
# Odd 64-bit constants of the word hash (see _span_hashes).
_HASH_FOLD = np.uint64(0x100000001B3)
_HASH_MIX = np.uint64(0x9E3779B97F4A7C15)
# Slots per wanted hash in the table that finds words among them (see
# _lookup_table), a power of two up to _MAX_TABLE_SLOTS (32 MB): at 16, about
# one wanted hash in 16 shares its slot, and only words landing there need a
# binary search.
_SLOTS_PER_KEY = 16
_MAX_TABLE_SLOTS = 1 << 23
_CHUNK_BREAK = "\x01"  # joins the texts of a block; _words makes it a space, _TO_SPACE_KEEP keeps it
_TO_SPACE_KEEP = bytes(b if b == 1 else _TO_SPACE[b] for b in range(256))
_LOWER_TO_SPACE_KEEP = _TO_SPACE_KEEP.translate(
    bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
)
# Blocks are padded with spaces so that an 8-byte read at any word's start or
# before its end stays inside the buffer.
_PADDING = b" " * 8
# The first i bytes of a little-endian 8-byte read, i = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)
# normalise_word on numbers: each suffix as the little-endian value of its
# bytes (what the top bytes of the 8 bytes before a word's end hold when the
# word ends with it), and the last bytes that can end one.
_SUFFIX_VALUES = tuple((np.uint64(int.from_bytes(s, "little")), len(s)) for s in _SUFFIXES_B)
_SS_VALUE = np.uint64(int.from_bytes(b"ss", "little"))
_ENDS_A_SUFFIX = np.zeros(256, dtype=bool)
_ENDS_A_SUFFIX[[s[-1] for s in _SUFFIXES_B]] = True

# Lexical coverage at scale: with at least SINGLE_PASS_MIN_CHARS characters of
# chunk text, a sample is read first: one chunk in PRESENCE_SAMPLE_STEP and
# the chunks likely to hold the questions' words (LIKELY_CHUNKS_PER_QUESTION
# of each question's most similar ones, when the screener passes them). The
# words one edit away from the first PREDICTED_FIXES fixable question stems
# the sample lacks are then looked up in the same pass as the stems, so the
# texts are read once, not twice (a stem the sample lacks may still occur
# elsewhere; a misspelt one occurs nowhere; one found absent beyond those
# gets a second pass). Below that size the second pass costs less than the
# edits of the sample's false alarms (about 0.3 ms each).
SINGLE_PASS_MIN_CHARS = 20_000_000
PRESENCE_SAMPLE_STEP = 10
LIKELY_CHUNKS_PER_QUESTION = 2
PREDICTED_FIXES = 2 * MAX_SPELLING_FIXES


def _byte_reads(padded: bytes) -> np.ndarray:
    """Element i: the 8 bytes of ``padded`` from offset i on, as a little-endian uint64 (a view, no copy)."""
    return np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))


def _span_hashes(reads: np.ndarray, starts: np.ndarray, lengths: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """64-bit hashes of the byte spans ``[start, start + length)``, length >= 1, of ``reads``'s buffer
    (``heads`` = ``reads[starts]``).

    A span is read as little-endian 8-byte integers ``c_0, c_1, ...``, the
    last one cut to the bytes that remain, and hashed as
    ``h = (((c_0 * F + c_1) * F + c_2) ...) * M mod 2**64`` (``F`` =
    ``_HASH_FOLD``, ``M`` = ``_HASH_MIX``, both odd). Words hold no byte
    below 33, so spans of up to 8 bytes (most words) get distinct hashes;
    longer ones may collide with probability about 2**-64. The hash depends
    on the bytes only, so hashing the wanted stems the same way finds them.
    """
    hashes = heads & _BYTE_MASKS[np.minimum(lengths, 8)]
    longer = np.flatnonzero(lengths > 8)
    offset = 8
    while len(longer):
        rest = lengths[longer] - offset
        more = reads[starts[longer] + offset] & _BYTE_MASKS[np.minimum(rest, 8)]
        hashes[longer] = hashes[longer] * _HASH_FOLD + more
        longer = longer[rest > 8]
        offset += 8
    hashes *= _HASH_MIX
    return hashes


def _stem_lengths(reads: np.ndarray, ends: np.ndarray, lengths: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Length of each word (``heads`` = its first 8 bytes) once :func:`normalise_word` has cut its suffix."""
    # The 8 bytes up to each word's end, its last byte on top: the head moved
    # up for words of up to 8 bytes, a second read for longer ones.
    tails = heads << (np.uint64(64) - (np.minimum(lengths, 8) << 3).astype(np.uint64))
    longer = np.flatnonzero(lengths > 8)
    tails[longer] = reads[ends[longer] - 8]
    may_cut = np.flatnonzero(_ENDS_A_SUFFIX[tails >> np.uint64(56)] & (lengths >= 4))
    tails, kept = tails[may_cut], lengths[may_cut]
    cut = np.zeros(len(may_cut), dtype=lengths.dtype)
    # The bytes compared lie inside the word: the length test asks for more.
    open_ = (tails >> np.uint64(48)) != _SS_VALUE
    for value, size in _SUFFIX_VALUES:
        match = open_ & ((tails >> np.uint64(64 - 8 * size)) == value) & (kept >= size + 3)
        cut[match] = size
        open_ &= ~match
    stem_lengths = lengths.copy()
    stem_lengths[may_cut] -= cut
    return stem_lengths


def _word_spans(padded: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the words of ``padded`` (runs of bytes above 32: after
    ``_lowered`` separators are spaces or 0x01), which starts and ends with a space."""
    is_word = np.frombuffer(padded, dtype=np.uint8) > 32
    edges = np.flatnonzero(is_word[1:] != is_word[:-1]) + 1
    return edges[0::2], edges[1::2]


def _word_stem_hashes(padded: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets of the words of ``padded`` and the :func:`_span_hashes` of their
    :func:`normalise_word` stems, cut from the words in place."""
    reads = _byte_reads(padded)
    starts, ends = _word_spans(padded)
    heads = reads[starts]
    stem_lengths = _stem_lengths(reads, ends, ends - starts, heads)
    return starts, _span_hashes(reads, starts, stem_lengths, heads)


def _stem_hashes(stems: Sequence[bytes]) -> np.ndarray:
    """:func:`_span_hashes` of each stem as it is (no suffix cut), in order."""
    padded = _PADDING + b" ".join(stems) + _PADDING
    reads = _byte_reads(padded)
    starts, ends = _word_spans(padded)
    return _span_hashes(reads, starts, ends - starts, reads[starts])


def _lowered(texts: Sequence[str]) -> bytes:
    """The texts as ``_words`` prepares them (unescaped, lower-cased, UTF-8, separators made spaces),
    joined by 0x01 bytes (a text holding one has more of them: the caller checks the count)."""
    joined = f" {_CHUNK_BREAK} ".join(texts)
    if "&" in joined:
        joined = html.unescape(joined)  # "&#39853;", "&amp;"
    if joined.isascii():  # lower-cased by the byte table: 4x faster, the same for ASCII
        return joined.encode("ascii").translate(_LOWER_TO_SPACE_KEEP)
    raw = joined.lower().encode("utf-8", "replace")
    if b"\xc2" in raw or b"\xe2" in raw:  # single bytes: found at memchr speed
        raw = _SEPARATORS_UTF8.sub(b" ", raw)
    return raw.translate(_TO_SPACE_KEEP)


def _text_blocks(chunk_texts: Sequence[str]) -> list[tuple[int, int]]:
    """``(first, last)`` chunks of each block of text: a block ends with the chunk that brings
    it to ``HASH_BLOCK_BYTES`` (characters stand in for bytes)."""
    n = len(chunk_texts)
    reach = np.cumsum(np.fromiter(map(len, chunk_texts), dtype=np.int64, count=n) + 3)
    blocks, first = [], 0
    while first < n:
        before = int(reach[first - 1]) if first else 0
        last = min(n, int(np.searchsorted(reach, before + HASH_BLOCK_BYTES)) + 1)
        blocks.append((first, last))
        first = last
    return blocks


def _block_words(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The text (index into ``texts``) and the stem hash (:func:`_word_stem_hashes`) of each word of ``texts``."""
    padded = _PADDING + _lowered(texts) + _PADDING
    breaks = np.flatnonzero(np.frombuffer(padded, dtype=np.uint8) == 1)
    if len(breaks) != len(texts) - 1:  # a text held a 0x01, or unescaping made one: text by text
        padded = _PADDING + b" \x01 ".join(b" ".join(_words(t)) for t in texts) + _PADDING
        breaks = np.flatnonzero(np.frombuffer(padded, dtype=np.uint8) == 1)
    starts, hashes = _word_stem_hashes(padded)
    # Words before the first break are in text 0, and so on.
    per_text = np.diff(np.searchsorted(starts, breaks), prepend=0, append=len(starts))
    return np.repeat(np.arange(len(texts)), per_text), hashes


def _lookup_table(keys: np.ndarray) -> tuple[np.ndarray, np.uint64]:
    """A table from the top bits of a hash to the one key of ``keys`` (sorted, distinct) with
    those bits: 1 + its index, 0 for none, -1 for several; and the shift that gives those bits.
    The hashes are mixed (``_HASH_MIX``), so their top bits are spread evenly."""
    slots = min(_MAX_TABLE_SLOTS, 1 << max(10, int(len(keys) * _SLOTS_PER_KEY - 1).bit_length()))
    shift = np.uint64(64 - (slots.bit_length() - 1))
    slot = (keys >> shift).astype(np.int64)
    table = np.zeros(slots, dtype=np.int32)
    table[slot] = np.arange(1, len(keys) + 1, dtype=np.int32)
    table[slot[np.bincount(slot, minlength=slots)[slot] > 1]] = -1
    return table, shift


def _presence(chunk_texts: Sequence[str], stem_id: dict[bytes, int]) -> tuple[np.ndarray, np.ndarray]:
    """Which chunks hold each stem, as postings: ``indices[indptr[j] : indptr[j + 1]]`` are
    the chunks holding stem ``j``, ascending (the layout of a CSC matrix).

    A chunk holds a stem when one of its words normalises to it
    (:func:`normalise_word`). Each word's stem is cut and hashed in place
    (:func:`_word_stem_hashes`) and looked up among the hashes of the wanted
    stems, so the texts are read at numpy speed, blocks of them in threads
    (:func:`_in_threads`). Each block's (stem, chunk) pairs are sorted and
    kept once, the chunks as int32 with the stems' run lengths, and placed
    straight into the postings: at a million chunks they are about 10^8.
    """
    n_stems = len(stem_id)
    if not n_stems:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    ids = np.fromiter(stem_id.values(), dtype=np.int64, count=n_stems)
    stem_hashes = _stem_hashes(list(stem_id))
    order = np.argsort(stem_hashes)
    keys, key_stem = stem_hashes[order], ids[order]
    table, shift = _lookup_table(keys)

    def block_postings(block: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The block's stems found, in order, how many of its chunks hold each, and those chunks."""
        first, last = block
        owner, hashes = _block_words(chunk_texts[first:last])
        slot = table[hashes >> shift]
        maybe = np.flatnonzero(slot)
        where = slot[maybe].astype(np.int64) - 1
        shared = np.flatnonzero(where < 0)
        if len(shared):
            where[shared] = np.minimum(np.searchsorted(keys, hashes[maybe[shared]]), len(keys) - 1)
        hit = keys[where] == hashes[maybe]
        # One number per (stem, chunk), sorted: runs of a stem, its chunks ascending.
        n_block = last - first
        pair = key_stem[where[hit]] * n_block + owner[maybe[hit]]
        pair.sort()
        if len(pair) > 1:  # two forms, or two mentions, of a stem in a chunk count once
            pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
        stem = pair // n_block
        chunk = (pair - stem * n_block + first).astype(np.int32)
        run_starts = np.flatnonzero(np.concatenate(([True], stem[1:] != stem[:-1]))) if len(stem) else stem
        return stem[run_starts], np.diff(np.append(run_starts, len(stem))), chunk

    blocks = _in_threads(block_postings, _text_blocks(chunk_texts))
    counts = np.zeros(n_stems, dtype=np.int64)
    for run_stems, run_lengths, _ in blocks:
        counts[run_stems] += run_lengths
    indptr = np.zeros(n_stems + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    filled = indptr[:-1].copy()
    blocks.reverse()
    while blocks:  # in chunk order, each freed once placed
        run_stems, run_lengths, chunk = blocks.pop()
        run_offsets = np.cumsum(run_lengths) - run_lengths
        indices[np.repeat(filled[run_stems] - run_offsets, run_lengths) + np.arange(len(chunk))] = chunk
        filled[run_stems] += run_lengths
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


def _fixable(stem: bytes) -> bool:
    """Whether an absent stem may be matched to a corpus word one edit away (see ``_spelling_fixes``)."""
    return len(stem) >= MIN_FIXABLE_LENGTH and stem.isalpha()


def _edit_stems(stem: bytes) -> set[bytes]:
    """Stems (at least 3 bytes) of the words one edit away from ``stem``."""
    return {v for v in map(normalise_word, _one_edit(stem)) if len(v) >= 3}


def _maybe_absent(chunk_texts: Sequence[str], stems: list[bytes], likely_chunks) -> list[bytes]:
    """The first ``PREDICTED_FIXES`` of ``stems`` that a sample of the chunks lacks, in order
    (none below ``SINGLE_PASS_MIN_CHARS`` characters of text; see there)."""
    n = len(chunk_texts)
    if not stems or sum(map(len, chunk_texts)) < SINGLE_PASS_MIN_CHARS:
        return []
    sample = np.arange(0, n, PRESENCE_SAMPLE_STEP)
    if likely_chunks is not None:
        likely = np.asarray(likely_chunks, dtype=np.int64).ravel()
        sample = np.union1d(sample, likely[(likely >= 0) & (likely < n)])  # a hint: only the speed depends on it
    indptr, _ = _presence([chunk_texts[i] for i in sample], {t: j for j, t in enumerate(stems)})
    return [t for t, found in zip(stems, np.diff(indptr)) if not found][:PREDICTED_FIXES]


def _spelling_fixes(
    absent: list[bytes], edit_stems: dict[bytes, set[bytes]], holding: dict[bytes, np.ndarray]
) -> dict[bytes, bytes]:
    """Corpus stems one edit away from question stems the corpus lacks.

    A question word that occurs in no chunk but is one typing slip from a
    word that does ("borvn", "cimbals") is almost always that word
    misspelt; counting it as absent made well-supported questions look
    off-topic. Only stems of at least ``MIN_FIXABLE_LENGTH`` letters are
    fixed (shorter ones have too many neighbours), the first
    ``MAX_SPELLING_FIXES`` of them, and each to its most frequent neighbour
    (of equally frequent ones, the greatest in byte order).

    ``edit_stems`` holds :func:`_edit_stems` of each stem to fix, ``holding``
    the chunks holding each of those. Returns absent stem -> corpus stem.
    """
    fixes = {}
    for stem in [t for t in absent if _fixable(t)][:MAX_SPELLING_FIXES]:
        found = [(len(holding[v]), v) for v in edit_stems[stem] if len(holding[v])]
        if found:
            fixes[stem] = max(found)[1]
    return fixes


def _chunks_holding(chunk_texts: Sequence[str], stems: Iterable[bytes]) -> dict[bytes, np.ndarray]:
    """Each of ``stems`` -> the chunks holding it, ascending (:func:`_presence`)."""
    stem_id = {t: j for j, t in enumerate(dict.fromkeys(stems))}
    indptr, indices = _presence(chunk_texts, stem_id)
    return {t: indices[indptr[j] : indptr[j + 1]] for t, j in stem_id.items()}


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
    question_texts: Sequence[str], chunk_texts: Sequence[str], *, likely_chunks=None
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

    ``likely_chunks`` (array-like of chunk indices, optional) are chunks
    likely to hold the questions' words, such as each question's most
    similar chunks: on a large corpus they are read first to tell which
    words may be misspelt (see ``SINGLE_PASS_MIN_CHARS``). Only the speed
    depends on them, never the result.

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
    # The edits of the fixable stems a sample lacks are looked up in the same
    # pass as the stems (see SINGLE_PASS_MIN_CHARS).
    fixable = [t for t in stem_id if _fixable(t)]
    edit_stems = {t: _edit_stems(t) for t in _maybe_absent(chunk_texts, fixable, likely_chunks)}
    holding = _chunks_holding(chunk_texts, [*stem_id, *(v for vs in edit_stems.values() for v in vs)])
    absent = [t for t in stem_id if not len(holding[t])]
    late = [t for t in absent if _fixable(t)][:MAX_SPELLING_FIXES]
    late = [t for t in late if t not in edit_stems]
    if late:  # absent stems whose edits were not looked up: a second pass for those
        edit_stems.update((t, _edit_stems(t)) for t in late)
        holding.update(_chunks_holding(chunk_texts, [v for t in late for v in edit_stems[t] if v not in holding]))
    fixes = _spelling_fixes(absent, edit_stems, holding)
    postings = [holding[fixes.get(t, t)] for t in stem_id]
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
    # Each cluster's members, ascending, without comparing every label with every cluster.
    by_label = np.argsort(labels, kind="stable")
    sorted_labels = labels[by_label]
    bounds = np.concatenate(([0], np.flatnonzero(sorted_labels[1:] != sorted_labels[:-1]) + 1, [n]))

    def blocks():
        """(rows, reference vectors, rows' places among the references, k) per block of a cluster's members."""
        for begin, stop in zip(bounds[:-1], bounds[1:]):
            members = by_label[begin:stop]
            if len(members) < 2:
                continue
            if len(members) > max_reference:
                reference = np.sort(rng.choice(members, size=max_reference, replace=False))
            else:
                reference = members
            k = max(1, round(min(n_neighbors, len(members) - 1) * len(reference) / len(members)))
            k = min(k, len(reference) - 1)
            ref_vectors = chunk_vectors[reference]
            for first in range(0, len(members), BLOCK_ROWS):
                rows = members[first : first + BLOCK_ROWS]
                place = np.minimum(np.searchsorted(reference, rows), len(reference) - 1)
                yield rows, ref_vectors, np.where(reference[place] == rows, place, -1), k

    def fill(block) -> None:
        rows, ref_vectors, place, k = block
        sims = chunk_vectors[rows] @ ref_vectors.T
        own = np.flatnonzero(place >= 0)
        sims[own, place[own]] = -np.inf  # a chunk is not its own neighbour
        density[rows] = _top_k_mean(sims, k)

    # One BLAS thread per block, blocks in threads: OpenBLAS's own threads
    # spin, and ran fourfold slower on the many small products of a busy 2-core machine.
    with threadpool_limits(limits=1, user_api="blas"):
        _in_threads(fill, blocks())
    return density


def _worker_threads() -> int:
    """Threads for :func:`_in_threads`: the CPUs this process may use, at most ``MAX_THREADS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


def _in_threads(function, items: Iterable) -> list:
    """``[function(item) for item in items]``, computed in :func:`_worker_threads` threads
    (numpy releases the GIL in its loops), with at most two items per thread under way, so
    a lazy ``items`` is read only as fast as it is used."""
    workers = _worker_threads()
    if workers == 1:
        return [function(item) for item in items]
    results = []
    with ThreadPoolExecutor(workers, thread_name_prefix="screening") as pool:
        pending: deque = deque()
        for item in items:
            if len(pending) >= 2 * workers:
                results.append(pending.popleft().result())
            pending.append(pool.submit(function, item))
        results.extend(future.result() for future in pending)
    return results


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
       ``coverage_core.stages.calibration``) each question is judged on its own
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
        (``coverage_core.stages.calibration.calibrate(...).support_threshold``).
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
                f"{tau!r}. Pass the calibrated level (coverage_core.stages.calibration), or None "
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
            likely = self.question_top_chunks_[:, :LIKELY_CHUNKS_PER_QUESTION]
            lexical = lexical_coverage(question_texts, chunk_texts, likely_chunks=likely)
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
