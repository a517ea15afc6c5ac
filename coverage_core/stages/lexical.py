"""The lexical evidence of screening: do a question's distinctive words occur together in some chunk?

:func:`lexical_coverage` weights each content word of a question by its
idf over the chunks and finds the chunk holding the largest weighted share
of them. The machinery behind it reads a million chunks in seconds:

* words are split and stemmed on UTF-8 bytes (:func:`_words`,
  :func:`normalize_word`, a crude suffix stemmer), and in bulk as numbers:
  each word's stem is cut and hashed in place (:func:`_word_stem_hashes`);
* a byte-hashed word index (:func:`_presence`) lists, for each wanted
  stem, the chunks holding it, built block by block in threads;
* a spelling fixer (:func:`_spelling_fixes`) counts a question word found
  in no chunk as the corpus word one typing slip away;
* :func:`_best_share` finds each question's best chunk without visiting
  most chunks.

The method behind these choices is in ``docs/screening.md``.
"""

from __future__ import annotations

import html
import re
import string
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core.languages import (
    SPACELESS,
    UNDETERMINED,
    corpus_languages,
    has_spaceless_text,
    spaceless_stop_characters,
    stop_words,
    word_units,
)
from coverage_core.stages.compounds import compound_postings
from coverage_core.stages.spelled_years import spelled_years_as_digits
from coverage_core.threads import in_threads

__all__ = [
    "lexical_coverage", "LIKELY_CHUNKS_PER_QUESTION", "normalize_word", "Reading", "WordIndex",
    "corpus_reading",
]

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
    # Negated auxiliaries, as the apostrophe splits them ("Wasn't" -> "wasn", "t"): no passage writes them.
    + "isn aren wasn weren don doesn didn hasn haven hadn won wouldn couldn shouldn mustn needn".split()
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

# ASCII punctuation and control characters separate words.
_SEPARATORS_ASCII = string.punctuation.encode("ascii") + bytes(range(32)) + b"\x7f"
_TO_SPACE = bytes.maketrans(_SEPARATORS_ASCII, b" " * len(_SEPARATORS_ASCII))
# So do U+0080..U+00BF (control characters, no-break space, quotes, symbols),
# U+2000..U+203F (spaces, dashes, quotes, bullets, ellipsis), and the CJK and
# full-width punctuation of Chinese and Japanese text: U+3000..U+303F but the
# iteration and closing marks (U+3005..U+3007, in words: "人々"), and
# U+FF01..U+FF0F, U+FF1A..U+FF20, U+FF3B..U+FF40, U+FF5B..U+FF65, UTF-8 encoded.
_SEPARATORS_UTF8 = re.compile(
    rb"\xc2[\x80-\xbf]|\xe2\x80[\x80-\xbf]|\xe3\x80[\x80-\x84\x88-\xbf]"
    rb"|\xef\xbc[\x81-\x8f\x9a-\xa0\xbb-\xbf]|\xef\xbd[\x80\x9b-\xa5]"
)
# A byte every separator above starts with, to skip the substitution on text without one.
_SEPARATOR_LEADS = (b"\xc2", b"\xe2", b"\xe3", b"\xef")
STOP_WORDS = frozenset(
    w.encode("ascii") for w in (set(ENGLISH_STOP_WORDS) | QUESTION_WORDS)
)


def words_of(text: str) -> list[bytes]:
    """Lower-cased words of ``text``, split at whitespace and punctuation.

    Works on UTF-8 bytes: ``bytes.translate`` and ``split`` run at C speed,
    about twice as fast as a regular expression on 20,000 chunks.
    (Lower-casing the bytes instead of the text would save another 0.08 s
    there, but would leave non-ASCII capitals such as "É" unfolded.)
    """
    if "&" in text:
        text = html.unescape(text)  # "&#39853;", "&amp;"
    raw = text.lower().encode("utf-8", "replace")
    if any(lead in raw for lead in _SEPARATOR_LEADS):
        raw = _SEPARATORS_UTF8.sub(b" ", raw)
    return raw.translate(_TO_SPACE).split()


def normalize_word(word: bytes) -> bytes:
    """Stem of a lower-cased word: the first matching suffix of ``SUFFIXES``
    is stripped if at least 3 characters remain (not from words in "ss")."""
    if word.endswith(b"ss"):
        return word
    for suffix in _SUFFIXES_B:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_SUFFIXES_B = tuple(s.encode("ascii") for s in SUFFIXES)


def long_enough(word: bytes, stop_characters: frozenset[str] = frozenset()) -> bool:
    """Whether a lower-cased word is long enough to be a content word: ``MIN_WORD_LENGTH`` bytes for
    ASCII, as many characters otherwise ("été", not "où"), and a pair of characters of a spaceless
    script (:func:`~coverage_core.languages.word_units`: "首都") without one of ``stop_characters``
    ("的首": :func:`~coverage_core.languages.spaceless_stop_characters`), not a lone one ("的")."""
    if word.isascii():
        return len(word) >= MIN_WORD_LENGTH
    text = word.decode("utf-8", "replace")
    if len(text) == 2 and has_spaceless_text(text):
        return text[0] not in stop_characters and text[1] not in stop_characters
    return len(text) >= MIN_WORD_LENGTH


def _question_terms(
    text: str, stop: frozenset[bytes] = STOP_WORDS, stop_characters: frozenset[str] = frozenset()
) -> list[bytes]:
    """Distinct stems of the content words of a question (:func:`long_enough`, not in ``stop``), in order."""
    stems = (normalize_word(w) for w in words_of(text) if w not in stop and long_enough(w, stop_characters))
    return list(dict.fromkeys(stems))


_COMBINING_MARKS = re.compile("[\u0300-\u036f]")


def fold_accents(text: str) -> str:
    """``text`` without its accents ("Napoléon" -> "Napoleon"; Hangul and other composed scripts kept whole)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _COMBINING_MARKS.sub("", unicodedata.normalize("NFD", text)))


@lru_cache(maxsize=16)
def _stop_words_of(codes: tuple[str, ...]) -> frozenset[bytes]:
    """:data:`STOP_WORDS` and the stop words of the languages ``codes`` other than English, as written and
    without accents, as the word index reads them. English keeps :data:`STOP_WORDS` alone: stopwords-iso's
    English list holds content words ("computer", "information", "invention") that wiki-qa questions ask about."""
    others = stop_words(code for code in codes if code != "en")
    return STOP_WORDS | frozenset(w.encode("utf-8") for word in others for w in {word, fold_accents(word)})


# French writes one ordinal several ways, a century most often: "XXe", "XXème", "XXᵉ", "20ème" are one word
# ("XXe"), or a question written "au XXème siècle" asks about a period no passage (all "XXe") mentions.
FRENCH_ORDINAL_ENDINGS = "ᵉ|ième|ieme|ème|eme"
_FRENCH_ORDINAL = re.compile(rf"\b([IVXLC]{{1,7}}|\d{{1,3}})(?:{FRENCH_ORDINAL_ENDINGS}|e)(?!\w)")


NOUN_CAPITALISING_LANGUAGES = frozenset({"de", "lb"})
"""Languages (ISO 639-1) that capitalise every noun: German and Luxembourgish."""
COMPOUNDING_LANGUAGES = frozenset({"de", "lb"})
"""Languages whose compounds are written as one word and matched by their parts (:mod:`coverage_core.stages.compounds`)."""


@dataclass(frozen=True)
class Reading:
    """How a corpus's texts are read as words: ``stop`` words left out of every question's content
    words, whether texts are turned into word units (``spaceless``: Chinese, Japanese, Thai, …,
    whose words are not separated by spaces, read as character pairs,
    :func:`~coverage_core.languages.word_units`), whether accents are dropped (``accentless``:
    crowd-typed French questions write "differents", "possede" for "différents", "possède"), and the
    corpus's ``languages`` (ISO 639-1 codes), whose ``stop_characters`` (Chinese "的") make a character
    pair no word (:func:`long_enough`). The default reads English as it always was."""

    stop: frozenset[bytes] = STOP_WORDS
    spaceless: bool = False
    accentless: bool = False
    languages: tuple[str, ...] = ()
    stop_characters: frozenset[str] = frozenset()

    @property
    def folds_word_forms(self) -> bool:
        """Whether the word index matches a word's forms in every language of the corpus: English
        suffixes are cut and spaceless scripts do not inflect; other languages' inflections stay apart."""
        return not self.accentless

    @property
    def capitalises_nouns(self) -> bool:
        """Whether one of the corpus's languages writes every noun with a capital (German): a capital there
        says nothing of a name."""
        return any(code in NOUN_CAPITALISING_LANGUAGES for code in self.languages)

    @property
    def joins_compounds(self) -> bool:
        """Whether one of the corpus's languages writes compounds as one word ("Nationalmannschaft")."""
        return any(code in COMPOUNDING_LANGUAGES for code in self.languages)

    @property
    def english(self) -> bool:
        """Whether the corpus's largest language is English (or none was told): the rules that read English
        grammar (common content words, yes-or-no questions) apply only then."""
        return tuple(self.languages[:1]) in ((), ("en",))

    @property
    def french(self) -> bool:
        """Whether French is among the corpus's languages (its ordinals are read one way, :meth:`text`)."""
        return "fr" in self.languages

    def text(self, text: str) -> str:
        """``text`` as the word index reads it (unchanged for English)."""
        if self.french:
            text = _FRENCH_ORDINAL.sub(r"\1e", text)
        if self.accentless:
            text = fold_accents(text)
        return word_units(text) if self.spaceless else text

    def texts(self, texts: Sequence[str]) -> Sequence[str]:
        """:meth:`text` of each text (``texts`` itself when that changes nothing)."""
        changes = self.spaceless or self.accentless or self.french
        return [self.text(t) for t in texts] if changes else texts

    @staticmethod
    def questions(question_texts: Sequence[str]) -> list[str]:
        """The questions as their words are compared with the passages': years they spell out in digits
        (:func:`spelled_years_as_digits`), as passages write them. Before :meth:`texts`."""
        return [spelled_years_as_digits(t) if isinstance(t, str) else t for t in question_texts]


def corpus_reading(chunk_texts: Sequence[str], question_texts: Sequence[str] = ()) -> Reading:
    """The :class:`Reading` of a corpus: the stop words of its languages (``corpus_languages``, read from
    an even sample of the chunks), spaceless when one of them is, or a question holds spaceless text,
    accentless when one is neither English nor spaceless."""
    codes = corpus_languages(chunk_texts)
    spaceless = any(code in SPACELESS for code in codes) or any(has_spaceless_text(t) for t in question_texts)
    accentless = any(code not in SPACELESS and code not in ("en", UNDETERMINED) for code in codes)
    return Reading(_stop_words_of(tuple(sorted(codes))), spaceless, accentless, tuple(codes),
                   spaceless_stop_characters(codes))


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
# normalize_word on numbers: each suffix as the little-endian value of its
# bytes (what the top bytes of the 8 bytes before a word's end hold when the
# word ends with it).
# Single-byte suffixes with a last byte no other suffix has ("e", "y") are cut in one pass over all
# words; the others are grouped by their last byte, in SUFFIXES's order within a group, so each word
# is compared only with the suffixes it can end with.
_LONE_LAST_BYTES = tuple(
    s[-1] for s in _SUFFIXES_B if len(s) == 1 and sum(t[-1] == s[-1] for t in _SUFFIXES_B) == 1
)
_SUFFIX_GROUPS = tuple(
    (last, tuple((np.uint64(int.from_bytes(s, "little")), len(s)) for s in _SUFFIXES_B if s[-1] == last))
    for last in dict.fromkeys(s[-1] for s in _SUFFIXES_B) if last not in _LONE_LAST_BYTES
)
# A block's (stem, chunk) pairs are sorted as int32 when no pair number can exceed this.
_INT32_PAIR_LIMIT = np.iinfo(np.int32).max
_SS_VALUE = np.uint64(int.from_bytes(b"ss", "little"))

# Lexical coverage at scale: with at least SINGLE_PASS_MIN_CHARS characters of
# chunk text, a sample is read first: one chunk in PRESENCE_SAMPLE_STEP and
# the chunks likely to hold the questions' words (LIKELY_CHUNKS_PER_QUESTION
# of each question's most similar ones, when the screener passes them). The
# words one edit away from the first PREDICTED_FIXES fixable question stems
# the sample lacks are then looked up in the same pass as the stems, so the
# texts are read once, not twice (a stem the sample lacks may still occur
# elsewhere; a misspelt one occurs nowhere; one found absent beyond those
# gets a second pass). Below that size the second pass costs less than the
# edits of the sample's false alarms (about 0.3 ms each). The subjects' absent
# stems are fixed too, so at 200,000 chunks 400 predictions left about 250 to a
# second pass (docs/benchmarks.md).
SINGLE_PASS_MIN_CHARS = 20_000_000
PRESENCE_SAMPLE_STEP = 10
LIKELY_CHUNKS_PER_QUESTION = 2
PREDICTED_FIXES = 5 * MAX_SPELLING_FIXES


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
    """Length of each word (``heads`` = its first 8 bytes) once :func:`normalize_word` has cut its suffix."""
    # The 8 bytes up to each word's end, its last byte on top: the head moved
    # up for words of up to 8 bytes, a second read for longer ones.
    tails = heads << (np.uint64(64) - (np.minimum(lengths, 8) << 3).astype(np.uint64))
    longer = np.flatnonzero(lengths > 8)
    tails[longer] = reads[ends[longer] - 8]
    last_bytes = (tails >> np.uint64(56)).astype(np.uint8)
    lone = np.zeros(len(lengths), dtype=bool)
    for last in _LONE_LAST_BYTES:
        lone |= last_bytes == last
    stem_lengths = lengths - (lone & (lengths >= 4))
    for last, suffixes in _SUFFIX_GROUPS:
        ending = np.flatnonzero(last_bytes == last)
        ending_tails, kept = tails[ending], lengths[ending]
        cut = np.zeros(len(ending), dtype=lengths.dtype)
        # The bytes compared lie inside the word: the length test asks for more.
        open_ = (ending_tails >> np.uint64(48)) != _SS_VALUE
        for value, size in suffixes:
            match = open_ & ((ending_tails >> np.uint64(64 - 8 * size)) == value) & (kept >= size + 3)
            cut[match] = size
            open_ &= ~match
        stem_lengths[ending] -= cut
    return stem_lengths


def _word_spans(padded: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the words of ``padded`` (runs of bytes above 32: after
    ``_lowered`` separators are spaces or 0x01), which starts and ends with a space."""
    is_word = np.frombuffer(padded, dtype=np.uint8) > 32
    edges = np.flatnonzero(is_word[1:] != is_word[:-1]) + 1
    return edges[0::2], edges[1::2]


def _word_stem_hashes(padded: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets of the words of ``padded`` and the :func:`_span_hashes` of their
    :func:`normalize_word` stems, cut from the words in place."""
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
    if any(lead in raw for lead in _SEPARATOR_LEADS):  # single bytes: found at memchr speed
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
        padded = _PADDING + b" \x01 ".join(b" ".join(words_of(t)) for t in texts) + _PADDING
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
    (:func:`normalize_word`). Each word's stem is cut and hashed in place
    (:func:`_word_stem_hashes`) and looked up among the hashes of the wanted
    stems, so the texts are read at numpy speed, blocks of them in threads
    (:func:`~coverage_core.threads.in_threads`). Each block's (stem, chunk) pairs are sorted and
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
        if n_stems * n_block <= _INT32_PAIR_LIMIT:  # 32-bit keys sort in about half the time
            pair = pair.astype(np.int32)
        pair.sort()
        if len(pair) > 1:  # two forms, or two mentions, of a stem in a chunk count once
            pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
        stem = pair // n_block
        chunk = (pair - stem * n_block + first).astype(np.int32)
        run_starts = np.flatnonzero(np.concatenate(([True], stem[1:] != stem[:-1]))) if len(stem) else stem
        return stem[run_starts], np.diff(np.append(run_starts, len(stem))), chunk

    blocks = in_threads(block_postings, _text_blocks(chunk_texts))
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


@lru_cache(maxsize=8192)
def edit_stems(stem: bytes) -> frozenset[bytes]:
    """Stems (at least 3 bytes) of the words one edit away from ``stem`` (kept: the word check and the
    subjects ask for the same stems' edits, a few hundred normalisations each)."""
    return frozenset(v for v in map(normalize_word, _one_edit(stem)) if len(v) >= 3)


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

    ``edit_stems`` holds :func:`edit_stems` of each stem to fix, ``holding``
    the chunks holding each of those. Returns absent stem -> corpus stem.
    """
    fixes = {}
    for stem in [t for t in absent if _fixable(t)][:MAX_SPELLING_FIXES]:
        found = [(len(holding[v]), v) for v in edit_stems[stem] if len(holding[v])]
        if found:
            fixes[stem] = max(found)[1]
    return fixes


def chunks_holding(chunk_texts: Sequence[str], stems: Iterable[bytes]) -> dict[bytes, np.ndarray]:
    """Each of ``stems`` -> the chunks holding it, ascending (:func:`_presence`)."""
    stem_id = {t: j for j, t in enumerate(dict.fromkeys(stems))}
    indptr, indices = _presence(chunk_texts, stem_id)
    return {t: indices[indptr[j] : indptr[j + 1]] for t, j in stem_id.items()}


class WordIndex:
    """The chunks holding each stem asked of ``texts`` (:func:`chunks_holding`), kept: one pass over the
    texts per call that asks for stems not asked before, and none for the others. One screening shares
    one index between the word check and the subjects, which ask for mostly the same stems.

    ``texts`` are the chunk texts as the corpus's :class:`Reading` reads them (``reading.texts(...)``).
    """

    def __init__(self, texts: Sequence[str]):
        self.texts = texts
        self._holding: dict[bytes, np.ndarray] = {}

    def holding(self, stems: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """Each of ``stems`` -> the chunks holding it, ascending."""
        stems = list(dict.fromkeys(stems))
        missing = [t for t in stems if t not in self._holding]
        if missing:
            self._holding.update(chunks_holding(self.texts, missing))
        return {t: self._holding[t] for t in stems}


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


def _postings_with_fixes(chunk_texts: Sequence[str], stems: list[bytes], likely_chunks,
                         reading: Reading | None = None, index: WordIndex | None = None,
                         also: Sequence[bytes] = ()) -> list[np.ndarray]:
    """The chunks holding each of ``stems``, ascending; a stem in no chunk gets those of its spelling fix, if any,
    or, where the corpus's language joins compounds, those of its parts (:mod:`~coverage_core.stages.compounds`).
    ``also``: stems read in the same passes for a later user of ``index``, and, for those in no chunk, the
    stems one edit away (:func:`edit_stems`)."""
    index = index or WordIndex(chunk_texts)
    # The later user fixes any absent alphabetic stem, short ones too.
    also_fixable = [t for t in dict.fromkeys(also) if t.isalpha()]
    # The edits of the fixable stems a sample lacks are looked up in the same
    # pass as the stems (see SINGLE_PASS_MIN_CHARS).
    fixable = list(dict.fromkeys([*(t for t in stems if _fixable(t)), *also_fixable]))
    edits = {t: edit_stems(t) for t in _maybe_absent(chunk_texts, fixable, likely_chunks)}
    holding = index.holding([*stems, *also, *(v for vs in edits.values() for v in vs)])
    absent = [t for t in stems if not len(holding[t])]
    late = [t for t in absent if _fixable(t)][:MAX_SPELLING_FIXES]
    late += [t for t in also_fixable if not len(holding[t]) and t not in late]
    late = [t for t in late if t not in edits]
    if late:  # absent stems whose edits were not looked up: a second pass for those
        edits.update((t, edit_stems(t)) for t in late)
        holding.update(index.holding([v for t in late for v in edits[t]]))
    fixes = _spelling_fixes(absent, edits, holding)
    if reading is not None and reading.joins_compounds:
        parts = compound_postings([t for t in absent if t not in fixes], chunk_texts, normalize_word,
                                  lambda texts, wanted: index.holding(wanted))
        holding.update(parts)
    return [holding[fixes.get(t, t)] for t in stems]


def lexical_coverage(
    question_texts: Sequence[str], chunk_texts: Sequence[str], *, likely_chunks=None, reading: Reading | None = None,
    index: WordIndex | None = None, also: Sequence[bytes] = (),
) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """How well the best chunk covers each question's distinctive words.

    Each content word of a question (not a stop or question word, at least
    ``MIN_WORD_LENGTH`` characters, stemmed by :func:`normalize_word`) is
    weighted by its inverse document frequency over the chunks,
    ``idf = ln((1 + n_chunks) / (1 + df)) + 1`` (scikit-learn's smoothed
    idf): a word found in no chunk gets the largest weight. A question's
    coverage is the largest, over chunks, idf-weighted share of its words
    that the chunk contains. A word found in no chunk but one typing slip
    away from a corpus word counts as that word (see ``_spelling_fixes``).
    A year the question spells out counts as its digits
    (:func:`spelled_years_as_digits`: "nineteen fifty seven" is "1957").

    ``likely_chunks`` (array-like of chunk indices, optional) are chunks
    likely to hold the questions' words, such as each question's most
    similar chunks: on a large corpus they are read first to tell which
    words may be misspelt (see ``SINGLE_PASS_MIN_CHARS``). Only the speed
    depends on them, never the result.

    ``index`` (optional, a :class:`WordIndex` of these texts as ``reading`` reads them) keeps what is
    read for a later user, and ``also`` (stems) is read in the same pass for it; neither changes the result.

    ``reading`` (optional, :func:`corpus_reading` of these texts by default)
    says which words are stop words, those of the corpus's languages (French
    "quel", "est", "les" are no content words), and whether the texts are
    read as character pairs (Chinese: "南韓的首都" holds "首都"). An English
    corpus is read exactly as before languages were detected.

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
    n = len(question_texts)
    if n == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64), []
    if reading is None:
        reading = corpus_reading(chunk_texts, question_texts)
    chunk_texts = index.texts if index is not None else reading.texts(chunk_texts)
    terms = [_question_terms(t, reading.stop, reading.stop_characters) for t in reading.texts(reading.questions(question_texts))]
    stem_id: dict[bytes, int] = {}
    for ts in terms:
        for t in ts:
            stem_id.setdefault(t, len(stem_id))
    n_chunks = len(chunk_texts)
    postings = _postings_with_fixes(chunk_texts, list(stem_id), likely_chunks, reading, index, also)
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
