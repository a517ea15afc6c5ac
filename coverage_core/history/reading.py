"""A recorded run read back from its row and its parts, every value checked, in bounded memory and time.

The same functions read a run from the store and, before it is written, from the parts just encoded: a run
that would not read back is refused when it is recorded, not discovered damaged later.

* :func:`run_info` checks a run's row (the headline the listing shows): types, ranges, lengths; a label longer
  than ``LABEL_MAX_CHARS`` (only a hand-edited file holds one) is cut for display;
* :func:`decode_run` reads the parts through a :class:`PartSource` (the store's database, or the writer's
  parts), each fetch charged to one :class:`~coverage_core.history.parts.Reading`;
  :func:`decode_decisions` reads only the run's decisions about suggested questions (None: a run recorded
  without them, or before they were kept, whose ``decisions_digest`` is NULL).

Every problem is a :class:`~coverage_core.history.parts.DamagedPart` with a short fixed reason; the store
names the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from coverage_core.decisions import SuggestionDecision
from coverage_core.history.location import LABEL_MAX_CHARS
from coverage_core.history.parts import (
    DamagedPart,
    Reading,
    document_states,
    figures_of,
    is_digest,
    offtopic_rows,
    parse_json,
    read_sliced,
    topic_rows,
)
from coverage_core.history.snapshot import (
    PASSAGE_HASH_CHARS,
    DocumentState,
    QuestionState,
    RunHeadline,
    RunSnapshot,
    TopicState,
    as_utc,
)

__all__ = [
    "DECISIONS_COLUMN",
    "DIGEST_COLUMNS",
    "MAX_TIME_CHARS",
    "SOURCE_COLUMNS",
    "TEXT_COLUMNS",
    "PartSource",
    "RunInfo",
    "decode_decisions",
    "decode_run",
    "fetcher",
    "run_info",
    "run_time",
    "shown_text",
]

TEXT_COLUMNS = {"label": LABEL_MAX_CHARS, "tool_version": 100, "provider": 100, "model": 500}
"""The run row's text columns and the most characters of each that are read (a longer one is cut for display:
SQLite does not hold a column to its declared length, so a hand-edited file may hold megabytes there)."""
MAX_TIME_CHARS = 64
"""Most characters of a run's time read from SQLite (where it is text)."""
DIGEST_COLUMNS = ("corpus_digest", "document_states_digest", "question_set_digest", "question_states_digest",
                  "topics_digest")
"""The digests a run's load needs (``document_verdicts_digest`` is the timeline's, and may be NULL)."""
DECISIONS_COLUMN = "decisions_digest"
"""The digest of a run's decisions about suggested questions (a sliced list); NULL when the run has none known."""
SOURCE_COLUMNS = ("passages_digest", "question_sources_digest")
"""The digests of a run's passage hashes and its questions' sources (sliced lists); NULL when not known (a run
recorded before revision 0004 kept them, or a snapshot that held none)."""

_UNTESTED, _UNDERTESTED, _NO_SHARE = 1, 2, 4
_ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"


@dataclass(frozen=True)
class RunInfo(RunHeadline):
    """A recorded run's headline, read without loading the run, and its number in the history (``run``)."""

    run: int


class PartSource(Protocol):
    def payloads(self, digests: Sequence[str], kind: str, reading: Reading, counts: Counter) -> dict[str, bytes]:
        """The payloads of the distinct ``digests`` (parts of ``kind``), inflated within the part limit and checked
        against their digests; each charged ``counts[digest]`` times to ``reading`` as soon as it is inflated.
        A digest not found is left out."""


def shown_text(value: Any, limit: int) -> str:
    """``value`` (text) cut to ``limit`` characters, the last one an ellipsis when it was longer."""
    if not isinstance(value, str):
        raise DamagedPart("a name of the run is not text")
    return value if len(value) <= limit else value[:limit - 1] + _ELLIPSIS


def run_time(value: Any) -> datetime:
    """A run's time as the database gave it (text in SQLite), in UTC; DamagedPart when it is not one."""
    if isinstance(value, str) and len(value) <= MAX_TIME_CHARS:
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            pass
    if not isinstance(value, datetime):
        raise DamagedPart("its time is not a date and time")
    return as_utc(value)


def _threshold(value: Any) -> float | None:
    if value is None:
        return None
    # τ is a cosine similarity; NaN fails the comparison
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
        raise DamagedPart("its threshold is not a number from -1 to 1")
    return float(value)


def _reliable(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):  # SQLite keeps a boolean as 0 or 1
        return bool(value)
    raise DamagedPart("its threshold's reliability is not true or false")


def run_info(values: Mapping[str, Any]) -> RunInfo:
    """The headline of the run row ``values`` (columns by name, as the database gave them); DamagedPart when a
    value is of the wrong type or out of range. Text columns are cut to ``TEXT_COLUMNS`` for display."""
    run = values["id"]
    if isinstance(run, bool) or not isinstance(run, int):
        raise DamagedPart("its number is not a whole number")
    return RunInfo(
        run=run,
        label=None if values["label"] is None else shown_text(values["label"], LABEL_MAX_CHARS),
        recorded_at=run_time(values["recorded_at"]),
        tool_version=shown_text(values["tool_version"], TEXT_COLUMNS["tool_version"]),
        provider=shown_text(values["provider"], TEXT_COLUMNS["provider"]),
        model=shown_text(values["model"], TEXT_COLUMNS["model"]),
        support_threshold=_threshold(values["support_threshold"]),
        threshold_reliable=_reliable(values["threshold_reliable"]),
        headline=figures_of(values["headline"], allow_flags=False),
    )


def fetcher(source: PartSource, reading: Reading):
    """The :data:`~coverage_core.history.parts.Fetch` of ``source``: payloads in the order asked, duplicates
    included (each charged), DamagedPart for a part that is not there."""

    def fetch(digests: Sequence[str], kind: str) -> list[bytes]:
        counts = Counter(digests)
        found = source.payloads(sorted(counts), kind, reading, counts)
        if len(found) != len(counts):
            raise DamagedPart("a part of it is missing")
        return [found[digest] for digest in digests]

    return fetch


def _one(fetch, digest: Any, kind: str) -> bytes:
    if not is_digest(digest):
        raise DamagedPart("it names a part that cannot exist")
    return fetch([digest], kind)[0]


def decode_run(values: Mapping[str, Any], source: PartSource, reading: Reading | None = None) -> RunSnapshot:
    """The snapshot recorded in the run row ``values`` and its parts (from ``source``), every part and value
    checked; DamagedPart on the first problem, TooLarge past a limit (``reading``'s budget included)."""
    info = run_info(values)
    for column in DIGEST_COLUMNS:
        if not is_digest(values[column]):
            raise DamagedPart("it names a part that cannot exist")
    fetch = fetcher(source, reading or Reading())
    fingerprint = read_sliced(fetch, values["corpus_digest"], "corpus")
    shares, flags = document_states(_one(fetch, values["document_states_digest"], "document_states"),
                                    len(fingerprint))
    text_digests = sorted({row[3] for row in fingerprint if row[3] is not None})
    texts = {}
    for digest, payload in zip(text_digests, fetch(text_digests, "text")):
        try:
            texts[digest] = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise DamagedPart("a document's text is not UTF-8") from None
    passages = _aligned(fetch, values.get("passages_digest"), "passages", len(fingerprint))
    documents = tuple(
        DocumentState(name=name, content_hash=content_hash, n_chunks=n_chunks,
                      tested_share=None if flag & _NO_SHARE else share, is_untested=bool(flag & _UNTESTED),
                      is_undertested=bool(flag & _UNDERTESTED), text=None if text is None else texts[text],
                      passages=None if hashes is None else _split(hashes))
        for (name, content_hash, n_chunks, text), share, flag, hashes in zip(fingerprint, shares, flags, passages))
    question_rows = read_sliced(fetch, values["question_set_digest"], "question_set")
    offtopic = offtopic_rows(parse_json(_one(fetch, values["question_states_digest"], "question_states")),
                             len(question_rows))
    sources = _aligned(fetch, values.get("question_sources_digest"), "question_sources", len(question_rows))
    questions = tuple(QuestionState(text_hash=text_hash, text=text, is_offtopic=index in offtopic,
                                    offtopic_reason=offtopic.get(index, ""),
                                    **({} if known is None else dict(row=known[0], source_from=known[1],
                                                                     sources=known[2])))
                      for index, ((text_hash, text), known) in enumerate(zip(question_rows, sources)))
    topic_values = topic_rows(parse_json(_one(fetch, values["topics_digest"], "topics")), len(documents))
    topics = tuple(TopicState(label=label, n_chunks=n_chunks, n_questions=n_questions, tested_share=share,
                              is_gap=is_gap,
                              documents=tuple((documents[ref].content_hash if isinstance(ref, int) else ref, n)
                                              for ref, n in members))
                   for label, n_chunks, n_questions, share, is_gap, members in topic_values)
    traffic = values["traffic"]
    return RunSnapshot(
        **info.headline_fields(), documents=documents, questions=questions, topics=topics,
        traffic=None if traffic is None else figures_of(traffic, allow_flags=True),
        decisions=_decisions(fetch, values.get(DECISIONS_COLUMN)),
    )


def _aligned(fetch, digest: Any, kind: str, n_items: int) -> list:
    """The items of the sliced list ``digest`` (one per document or question, ``n_items``); a None each when the
    run does not know them (NULL)."""
    if digest is None:
        return [None] * n_items
    if not is_digest(digest):
        raise DamagedPart("it names a part that cannot exist")
    items = read_sliced(fetch, digest, kind)
    if len(items) != n_items:
        raise DamagedPart("its passages or question sources do not match its documents or questions")
    return items


def _split(hashes: str) -> tuple[str, ...]:
    return tuple(hashes[start:start + PASSAGE_HASH_CHARS] for start in range(0, len(hashes), PASSAGE_HASH_CHARS))


def decode_decisions(values: Mapping[str, Any], source: PartSource,
                     reading: Reading | None = None) -> tuple[SuggestionDecision, ...] | None:
    """The decisions about suggested questions recorded in the run row ``values`` (its headline checked too), from
    that part only; None when the run has none known. DamagedPart as :func:`decode_run`."""
    run_info(values)
    return _decisions(fetcher(source, reading or Reading()), values.get(DECISIONS_COLUMN))


def _decisions(fetch, digest: Any) -> tuple[SuggestionDecision, ...] | None:
    if digest is None:  # recorded without them, or before they were kept: not known
        return None
    if not is_digest(digest):
        raise DamagedPart("it names a part that cannot exist")
    return tuple(SuggestionDecision(question=question, origin=origin, decision=decision, original=original,
                                    cluster=cluster, document=document)
                 for decision, question, original, origin, cluster, document in read_sliced(fetch, digest, "decisions"))

