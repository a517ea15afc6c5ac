"""The parts of a recorded run, as bytes: how the store writes them, and how it reads them back from a file that
may have been damaged or written by someone hostile.

Writing (:class:`PartWriter`) and reading share one set of limits and one set of shape checks, so a run this
module writes is always one it can read back, and a part it refuses could never have been written:

* every part inflates through :func:`inflate`, which stops at the part's limit (``MAX_PART_BYTES``, or
  ``MAX_JSON_PART_BYTES`` for JSON, whose Python objects take up to ~20 times their text) instead of
  inflating a 3 MB stream into 3 GB, and is checked against its digest (sha256 of kind and payload);
* JSON is read by :func:`parse_json`: no NaN or Infinity, no nesting deeper than the interpreter can follow
  (a ``RecursionError`` is a damaged part, not a crash), then checked field by field (types and ranges);
* a sliced list (:func:`read_sliced`) is walked level by level, at most ``MAX_SLICE_DEPTH`` levels and
  ``MAX_LIST_ITEMS`` items a level; a part met again at a deeper level is a cycle;
* a :class:`Reading` counts the inflated bytes one read takes (a part listed twice counts twice) and stops
  at its budget (``MAX_READ_BYTES`` for one run), so no file, however made, takes more memory or time than that.

Every refusal is a :class:`DamagedPart` whose message is a short fixed reason (never data from the file); the
store turns it into one sentence naming the run.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from coverage_core.decisions import DECISIONS
from coverage_core.history.snapshot import PASSAGE_HASH_CHARS, SOURCE_ORIGINS

__all__ = [
    "COMPRESSION_LEVEL",
    "MAX_FIGURES",
    "MAX_FIGURES_CHARS",
    "MAX_JSON_PART_BYTES",
    "MAX_LIST_ITEMS",
    "MAX_PART_BYTES",
    "MAX_READ_BYTES",
    "MAX_SLICE_DEPTH",
    "SLICE_MAX",
    "SLICE_TARGET",
    "DamagedPart",
    "PartWriter",
    "Reading",
    "TooLarge",
    "check_figures",
    "digest_of",
    "document_states",
    "figures_of",
    "finite_figures",
    "inflate",
    "is_digest",
    "json_text",
    "offtopic_rows",
    "part_limit",
    "parse_json",
    "read_sliced",
    "stored_limit",
    "topic_rows",
    "verdicts",
    "verdicts_payload",
    "document_states_payload",
]

SLICE_TARGET = 32
"""Average items per list slice: an edited document rewrites its slice (~3 KB: the slice holding a given
document is on average twice the average slice) and one index part of ~32 digests per level above it."""
SLICE_MAX = 16 * SLICE_TARGET
COMPRESSION_LEVEL = 6

MAX_PART_BYTES = 64 * 1024**2
"""Most bytes one part may inflate to (a kept document text, or the per-document states of ~7M documents);
inflation stops one byte past it, so a zlib bomb costs at most this much memory."""
MAX_JSON_PART_BYTES = 16 * 1024**2
"""Most bytes a JSON part may inflate to: parsed, JSON takes up to ~20 times its text (``[[],[],…]``)."""
MAX_READ_BYTES = 512 * 1024**2
"""Most inflated bytes one read of one run may take in all (a part listed twice counts twice)."""
MAX_LIST_ITEMS = 1_000_000
"""Most documents or questions in one run, and most entries of any level of a sliced list."""
MAX_SLICE_DEPTH = 12
"""Most levels of a sliced list: 32 slices a level on average reach 32**12 items, far past ``MAX_LIST_ITEMS``."""
MAX_FIGURES = 256
"""Most figures in a run's headline or traffic section (about 20 are written)."""
MAX_FIGURES_CHARS = 16_384
"""Longest headline or traffic text (JSON) a run may hold; a longer one is read no further."""
MAX_COUNT = 10**15
"""Largest count (chunks, questions, documents) a figure may hold: past 2**53 a float no longer holds it."""

_BINARY_KINDS = frozenset({"document_states", "document_verdicts", "text"})
_DIGEST = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]*")
_UNTESTED, _UNDERTESTED, _NO_SHARE = 1, 2, 4
_STATES_FORMAT, _SHARES_PLAIN = 1, 0
_SHARE_TABLES = {1: np.dtype("<u1"), 2: np.dtype("<u2")}  # mode byte -> index type of a table of distinct shares


class DamagedPart(ValueError):
    """A part or a run row that is not what the store writes; the message is a short reason, never file data."""


class TooLarge(DamagedPart):
    """A part, a list or a whole run past one of the limits (on write: the run is too large to record)."""


# ---------------------------------------------------------------- digests, limits, inflation, JSON


def digest_of(kind: str, payload: bytes) -> str:
    """The content address of a part: sha256 of its kind, a NUL and its payload, in hex."""
    return hashlib.sha256(kind.encode() + b"\0" + payload).hexdigest()


def is_digest(value: Any) -> bool:
    """Whether ``value`` is a part digest (64 lowercase hex digits)."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def part_limit(kind: str) -> int:
    """Most bytes a part of ``kind`` may inflate to."""
    return MAX_PART_BYTES if kind in _BINARY_KINDS else MAX_JSON_PART_BYTES


def stored_limit(limit: int) -> int:
    """Most compressed bytes a part inflating to at most ``limit`` can take (zlib adds at most ~0.03 % + 11 bytes
    to incompressible data): a larger stored part is refused without reading it."""
    return limit + limit // 1000 + 64


def inflate(data: Any, limit: int) -> bytes:
    """``data`` (a complete zlib stream) inflated; DamagedPart past ``limit`` bytes, or when it is not one stream.

    Inflation stops at ``limit + 1`` bytes whatever the stream says, so memory stays within the limit.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DamagedPart("a part is not binary data")
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(bytes(data), limit + 1)
    except zlib.error:
        raise DamagedPart("a part is not compressed data") from None
    if len(payload) > limit:
        raise TooLarge(f"a part inflates past {_size(limit)}")
    if not inflater.eof or inflater.unused_data:
        raise DamagedPart("a part is cut short or followed by other data")
    return payload


def _size(n_bytes: int) -> str:
    return f"{n_bytes // 1024**2} MiB" if n_bytes >= 1024**2 else f"{n_bytes:,} bytes"


def _no_constant(name: str):
    raise DamagedPart("its data holds NaN or Infinity")


def parse_json(text: bytes | str) -> Any:
    """JSON text as Python values; DamagedPart when it is not JSON, holds NaN or Infinity, a number too long to
    read, or is nested deeper than the interpreter follows (the C parser raises RecursionError: caught here)."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise DamagedPart("its data is nested too deep") from None
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError, an integer of 4,300+ digits
        if isinstance(error, DamagedPart):
            raise
        raise DamagedPart("its data is not valid JSON") from None


class Reading:
    """The inflated bytes one read has taken (a part used twice counts twice); TooLarge once they pass
    ``budget`` (default ``MAX_READ_BYTES``)."""

    def __init__(self, budget: int | None = None):
        self.budget, self.used = MAX_READ_BYTES if budget is None else budget, 0

    def charge(self, n_bytes: int) -> None:
        self.used += n_bytes
        if self.used > self.budget:
            raise TooLarge(f"its parts inflate past {_size(self.budget)} in all")


# ---------------------------------------------------------------- shapes of values


def _integer(value: Any, low: int = 0, high: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DamagedPart("a count is not a whole number in range")
    return value


def _share(value: Any, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise DamagedPart("a share is not a number from 0 to 1")  # NaN fails the comparison too
    return float(value)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise DamagedPart("a name or a text is not text")
    return value


def _list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise DamagedPart(f"{what} is not a list")
    max_items = MAX_LIST_ITEMS  # read at each use, as every limit here: a test may lower it
    if len(value) > max_items:
        raise TooLarge(f"{what} is longer than {max_items:,} entries")
    return value


def check_figures(value: Any, allow_flags: bool) -> dict[str, Any]:
    """A headline (numbers or None) or traffic section (also flags) as a dict; DamagedPart on any other shape.

    Numbers are finite, whole numbers within ±``MAX_COUNT``: every output formats and subtracts them.
    """
    if not isinstance(value, dict):
        raise DamagedPart("its figures are not an object")
    if len(value) > MAX_FIGURES:
        raise DamagedPart(f"it holds more than {MAX_FIGURES} figures")
    for name, figure in value.items():
        if len(name) > 100:
            raise DamagedPart("a figure's name is longer than 100 characters")
        if figure is None or (allow_flags and isinstance(figure, bool)):
            continue
        if isinstance(figure, bool) or not isinstance(figure, (int, float)):
            raise DamagedPart("a figure is not a number")
        if isinstance(figure, int) and abs(figure) > MAX_COUNT or isinstance(figure, float) and not (
                math.isfinite(figure) and abs(figure) <= MAX_COUNT):
            raise DamagedPart("a figure is out of range")
    return value


def figures_of(text: Any, allow_flags: bool) -> dict[str, Any]:
    """:func:`check_figures` of a run's headline or traffic column (JSON text at most ``MAX_FIGURES_CHARS``)."""
    if not isinstance(text, str):
        raise DamagedPart("its figures are not text")
    if len(text) > MAX_FIGURES_CHARS:
        raise DamagedPart(f"its figures are longer than {MAX_FIGURES_CHARS:,} characters")
    return check_figures(parse_json(text), allow_flags)


def _digests(value: Any) -> list[str]:
    digests = _list(value, "an index of the run")
    if not all(is_digest(digest) for digest in digests):
        raise DamagedPart("an index of the run lists something other than parts")
    return digests


def _corpus_row(row: Any) -> list:
    if not isinstance(row, list) or len(row) != 4:
        raise DamagedPart("a document entry is not [name, hash, chunks, text]")
    name, content_hash, n_chunks, text = row
    _text(name)
    _text(content_hash)
    _integer(n_chunks)
    if text is not None and not is_digest(text):
        raise DamagedPart("a document's text is not a part")
    return row


def _question_row(row: Any) -> list:
    if not isinstance(row, list) or len(row) != 2 or not all(isinstance(field, str) for field in row):
        raise DamagedPart("a question entry is not [hash, text]")
    return row


def _decision_row(row: Any) -> list:
    """``[decision, question, original, origin, cluster or null, document]``: one decision about a suggestion."""
    if not isinstance(row, list) or len(row) != 6:
        raise DamagedPart("a decision entry is not [decision, question, original, origin, topic, document]")
    decision, question, original, origin, cluster, document = row
    if not isinstance(decision, str) or decision not in DECISIONS:  # a list here is no crash: checked as text first
        raise DamagedPart("a decision is not accepted, open or rejected")
    for text in (question, original, origin, document):
        _text(text)
    if cluster is not None:
        _integer(cluster)
    return row


def _passages_row(row: Any) -> str | None:
    """One document's passage hashes, concatenated (``PASSAGE_HASH_CHARS`` hex digits each), or null: not known."""
    if row is not None and not (isinstance(row, str) and len(row) % PASSAGE_HASH_CHARS == 0
                                and _HEX.fullmatch(row)):
        raise DamagedPart("a document's passages are not passage hashes")
    return row


def _question_source_row(row: Any) -> list:
    """``[row or null, how the sources were known, [document, …] or null]``: one question's sources."""
    if not isinstance(row, list) or len(row) != 3:
        raise DamagedPart("a question's source entry is not [row, how, documents]")
    index, found_by, sources = row
    if index is not None:
        _integer(index)
    if not isinstance(found_by, str) or found_by not in SOURCE_ORIGINS:
        raise DamagedPart("a question's sources were known in an unknown way")
    if sources is not None:
        for source in _list(sources, "a question's sources"):
            _text(source)
    return row


ROW_CHECKS: dict[str, Callable[[Any], Any]] = {"corpus": _corpus_row, "question_set": _question_row,
                                               "decisions": _decision_row, "passages": _passages_row,
                                               "question_sources": _question_source_row}
"""The check of one item of each sliced list, by the list's kind."""
_LIST_ITEMS = {"corpus": "documents", "question_set": "questions", "decisions": "decisions",
               "passages": "documents", "question_sources": "questions"}


def offtopic_rows(value: Any, n_questions: int) -> dict[int, str]:
    """The ``question_states`` part: ``[[question index, reason], …]`` as a dict; indices within the run."""
    found: dict[int, str] = {}
    for row in _list(value, "the off-topic questions"):
        if not isinstance(row, list) or len(row) != 2:
            raise DamagedPart("an off-topic entry is not [question, reason]")
        found[_integer(row[0], 0, n_questions - 1)] = _text(row[1])
    return found


def topic_rows(value: Any, n_documents: int) -> list[tuple]:
    """The ``topics`` part: ``[label, chunks, questions, share, gap, [[document index or hash, chunks], …]]`` each."""
    topics = []
    for row in _list(value, "the topics"):
        if not isinstance(row, list) or len(row) != 6:
            raise DamagedPart("a topic entry is not [label, chunks, questions, share, gap, members]")
        label, n_chunks, n_questions, share, is_gap, members = row
        if not isinstance(is_gap, bool):
            raise DamagedPart("a topic's gap flag is not true or false")
        checked_members = []
        for member in _list(members, "a topic's members"):
            if not isinstance(member, list) or len(member) != 2:
                raise DamagedPart("a topic member is not [document, chunks]")
            ref, count = member
            if not isinstance(ref, str):
                _integer(ref, 0, n_documents - 1)
            checked_members.append((ref, _integer(count)))
        topics.append((_text(label), _integer(n_chunks), _integer(n_questions), _share(share), is_gap,
                       checked_members))
    return topics


def _manifest(value: Any) -> tuple[int, list[str]]:
    if not isinstance(value, dict) or set(value) != {"depth", "parts"}:
        raise DamagedPart("a list of the run has no {depth, parts} manifest")
    return _integer(value["depth"], 1, MAX_SLICE_DEPTH), _digests(value["parts"])


# ---------------------------------------------------------------- sliced lists


Fetch = Callable[[Sequence[str], str], list[bytes]]
"""``fetch(digests, kind)``: the payloads of ``digests`` (parts of ``kind``), in order, duplicates included,
each inflated, checked against its digest and charged to the read."""


def read_sliced(fetch: Fetch, manifest_digest: str, kind: str) -> list:
    """The items of the sliced list whose manifest is ``manifest_digest`` (kind ``kind``), each checked.

    Level by level: the manifest's digests name index parts (``<kind>_index``) down to the slices
    (``<kind>_slice``). Bounded whatever the parts say: at most ``MAX_SLICE_DEPTH`` levels and ``MAX_LIST_ITEMS``
    entries a level, and a part met again at a deeper level (a list that holds itself) is refused at once.
    """
    (payload,) = fetch([manifest_digest], kind)
    depth, level = _manifest(parse_json(payload))
    seen = {manifest_digest}
    check_row = ROW_CHECKS[kind]
    for step in range(depth):
        is_slices = step == depth - 1
        distinct = set(level)
        if not distinct.isdisjoint(seen):
            raise DamagedPart("a list of the run holds itself")
        seen |= distinct
        entries: list = []
        for payload in fetch(level, f"{kind}_slice" if is_slices else f"{kind}_index"):
            items = _list(parse_json(payload), "a slice of the run")
            entries.extend(map(check_row, items) if is_slices else _digests(items))
            if len(entries) > MAX_LIST_ITEMS:
                raise TooLarge(f"a list of the run is longer than {MAX_LIST_ITEMS:,} entries")
        level = entries
    return level


# ---------------------------------------------------------------- binary parts


def document_states_payload(shares: np.ndarray, flags: np.ndarray) -> bytes:
    """Header (format, n), one flag byte per document, then the tested shares: when they take few distinct values
    (they are tested chunks / chunks, so usually) a table of those and a one- or two-byte index per document,
    else float64 each."""
    head = struct.pack("<BI", _STATES_FORMAT, len(flags)) + flags.astype(np.uint8).tobytes()
    distinct, codes = np.unique(shares, return_inverse=True)
    for mode, code_type in _SHARE_TABLES.items():
        if len(distinct) <= np.iinfo(code_type).max + 1 and 8 * len(distinct) < 6 * len(flags) + 2048:
            table = struct.pack("<BI", mode, len(distinct)) + distinct.tobytes()
            return head + table + codes.astype(code_type).tobytes()
    return head + struct.pack("<BI", _SHARES_PLAIN, 0) + shares.tobytes()


def document_states(payload: bytes, n_documents: int) -> tuple[list[float], list[int]]:
    """The tested shares (0.0 where None) and flag bytes of :func:`document_states_payload`, for a run of
    ``n_documents``; DamagedPart unless every length, flag, code and share is one the writer can produce."""
    offset = 5 + n_documents
    if len(payload) < offset + 5:
        raise DamagedPart("its document states are cut short")
    version, n_stated = struct.unpack_from("<BI", payload)
    if version != _STATES_FORMAT or n_stated != n_documents:
        raise DamagedPart("its document states do not match its documents")
    flags = np.frombuffer(payload, dtype=np.uint8, count=n_documents, offset=5)
    mode, n_distinct = struct.unpack_from("<BI", payload, offset)
    offset += 5
    if np.any(flags > (_UNTESTED | _UNDERTESTED | _NO_SHARE)):
        raise DamagedPart("its document states hold unknown flags")
    if mode in _SHARE_TABLES:
        code_type = _SHARE_TABLES[mode]
        if n_distinct > np.iinfo(code_type).max + 1 or len(payload) != offset + 8 * n_distinct + \
                code_type.itemsize * n_documents:
            raise DamagedPart("its document states have the wrong length")
        distinct = np.frombuffer(payload, dtype="<f8", count=n_distinct, offset=offset)
        codes = np.frombuffer(payload, dtype=code_type, count=n_documents, offset=offset + 8 * n_distinct)
        if n_documents and (n_distinct == 0 or int(codes.max()) >= n_distinct):
            raise DamagedPart("its document states refer to shares they do not hold")
        shares = distinct[codes]
    elif mode == _SHARES_PLAIN and n_distinct == 0 and len(payload) == offset + 8 * n_documents:
        shares = np.frombuffer(payload, dtype="<f8", count=n_documents, offset=offset)
    else:
        raise DamagedPart("its document states are in an unknown layout")
    if not np.all((shares >= 0.0) & (shares <= 1.0)):  # NaN fails too
        raise DamagedPart("a document's tested share is not a number from 0 to 1")
    return shares.tolist(), flags.tolist()


def verdicts_payload(untested: np.ndarray) -> bytes:
    return struct.pack("<I", len(untested)) + np.packbits(untested.astype(bool)).tobytes()


def verdicts(payload: bytes, n_documents: int) -> np.ndarray:
    """The untested flags of :func:`verdicts_payload` for a run of ``n_documents``; DamagedPart otherwise."""
    if len(payload) < 4 or struct.unpack_from("<I", payload)[0] != n_documents \
            or len(payload) != 4 + (n_documents + 7) // 8:
        raise DamagedPart("its document verdicts do not match its documents")
    bits = np.frombuffer(payload, dtype=np.uint8, offset=4)
    return np.unpackbits(bits, count=n_documents).astype(bool)


# ---------------------------------------------------------------- writing


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (a report's figures may be numpy's)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be stored in a history run")


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)


def finite_figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    """``figures`` as plain Python, a NaN or infinite number as None (what "not defined" is everywhere else)."""
    plain = json.loads(json_text(dict(figures)))
    return {name: None if isinstance(value, float) and not math.isfinite(value) else value
            for name, value in plain.items()}


class PartWriter:
    """Collects the parts of one run, keyed by digest (a part used twice is stored once), within the limits the
    reader holds it to (:class:`TooLarge` past them). ``payloads`` keeps each part uncompressed, so the store can
    read the run back before writing it."""

    def __init__(self):
        self.parts: dict[str, tuple[str, bytes]] = {}
        self.payloads: dict[str, bytes] = {}

    def add(self, kind: str, payload: bytes) -> str:
        if len(payload) > part_limit(kind):
            raise TooLarge(f"its {kind.replace('_', ' ')} part would take more than {_size(part_limit(kind))}")
        digest = digest_of(kind, payload)
        if digest not in self.parts:
            self.parts[digest] = (kind, zlib.compress(payload, COMPRESSION_LEVEL))
            self.payloads[digest] = payload
        return digest

    def add_json(self, kind: str, value: Any) -> str:
        return self.add(kind, json_text(value).encode("utf-8"))

    def add_sliced(self, kind: str, items: Sequence[Any], keys: Sequence[str]) -> str:
        """A list stored as content-defined slices (kind ``<kind>_slice``) under a manifest ``{depth, parts}``.

        A manifest of more than ``SLICE_TARGET`` slices is itself sliced (kind ``<kind>_index``), level after level,
        so an edited document rewrites its slice and one short index part per level, not an 800-digest list.
        """
        if len(items) > MAX_LIST_ITEMS:
            raise TooLarge(f"it has more than {MAX_LIST_ITEMS:,} {_LIST_ITEMS.get(kind, 'entries')}")
        parts, depth = self._slices(kind + "_slice", items, keys), 1
        while len(parts) > SLICE_TARGET:
            parts, depth = self._slices(kind + "_index", parts, parts), depth + 1
        return self.add_json(kind, {"depth": depth, "parts": parts})

    def _slices(self, kind: str, items: Sequence[Any], keys: Sequence[str]) -> list[str]:
        digests, start = [], 0
        for index, key in enumerate(keys):
            boundary = hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest()
            if int.from_bytes(boundary, "little") % SLICE_TARGET == 0 or index + 1 - start >= SLICE_MAX:
                digests.append(self.add_json(kind, list(items[start:index + 1])))
                start = index + 1
        if start < len(items):
            digests.append(self.add_json(kind, list(items[start:])))
        return digests
