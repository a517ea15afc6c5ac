"""What one run records: a :class:`RunSnapshot` of a report, small enough to keep thousands of them.

A snapshot holds the headline figures and verdicts of a report, and
*fingerprints* of its inputs instead of the inputs themselves:

* each document's **content hash**, ``sha256(text.encode("utf-8"))`` in hex;
  for a corpus read from a vector store without document texts, the hash of
  its chunk texts joined with ``"\\n\\n"``; ``""`` when neither is known (a
  snapshot of a bare report), which :func:`coverage_core.history.changes.changes_since`
  reads as "not known", never as a change. The text itself is kept only when
  the user opts in (``keep_text=True``);
* each question's **text hash**, ``sha256(" ".join(text.split()).encode("utf-8"))``
  (whitespace-normalised, so re-wrapping a question does not make it new),
  with the question itself: the test set is the user's own, and "which
  questions were removed" needs their words. Exact repeats are listed once;
* each question's **source documents** at that run and how they were known (``source_from``): the documents
  its row names in the test set's source column (``"column"``, :mod:`coverage_core.history.sources`), else
  the document of its nearest passage (``"retrieved"``; none for an off-topic question); with its 0-based
  data ``row``. ``sources`` None is "not known" (a run recorded before they were kept);
* each document's **passage hashes** (:func:`passage_hash` of each chunk, in order): what tells how many of
  a changed document's passages changed. None when not known: a snapshot of a bare report, a run recorded
  before they were kept, or a corpus of more than :data:`PASSAGES_KEPT` passages (bounded parts);
* each topic's largest member documents as ``(content hash, chunks)`` pairs
  (at most :data:`TOPIC_DOCUMENTS_KEPT`), because topic ids and labels are
  renumbered and renamed from run to run: topics are matched across runs by
  the documents they are made of.

The ``headline`` holds, besides the metrics and verdict counts, the **settings** that move the verdicts
without any input changing (:data:`SETTING_FIGURES`: the screening strictness in effect, the chunk size and
overlap, the retrieval k; the model and τ have columns of their own, K is ``n_topics``), and, when the run
was recorded from the dashboard with its suggestions table, the counts of the **decisions** about the
suggested questions (:func:`coverage_core.decisions.decision_counts`: ``n_accepted_suggestions``,
``n_edited_suggestions``, ``n_rejected_suggestions``). All are plain figures, so the history stores them
without a schema migration; a run recorded before they were kept lacks them ("not known").

The **decisions** themselves are kept too (``decisions``), like the questions of the test set: they are the
user's own work. Each is a :class:`~coverage_core.decisions.SuggestionDecision` the user acted on
(:attr:`~coverage_core.decisions.SuggestionDecision.is_decided`: accepted, edited or rejected; a row left
untouched is no decision and is left out), in table order: the decision, the question as it stands, the
suggestion's text as it was written, who wrote it first, its topic (cluster id) and its document. Its
**passage is left out** (``""``): it is the knowledge base's text, which a history keeps only when the user
opts in; the saved analysis (``decisions.json``) keeps it whole. ``decisions`` is None when the run was
recorded without them (from the command line, before the suggestions were made, or before this was kept:
"not known", never an empty list), ``()`` when the user had decided nothing. The headline's counts are
:func:`~coverage_core.decisions.decision_counts` of them.

:meth:`RunSnapshot.to_dict` and :meth:`RunSnapshot.from_dict` give an exact,
JSON-safe round trip (datetimes as ISO 8601 in UTC); ``from_dict`` checks
every field's type and raises :class:`~coverage_core.errors.InputError` on a
damaged record.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from coverage_core.decisions import DECISIONS, SuggestionDecision, decision_counts
from coverage_core.errors import InputError
from coverage_core.types import Document

__all__ = [
    "FROM_COLUMN",
    "FROM_RETRIEVAL",
    "PASSAGES_KEPT",
    "PASSAGE_HASH_CHARS",
    "SETTING_FIGURES",
    "SNAPSHOT_FORMAT",
    "SOURCE_ORIGINS",
    "TOPIC_DOCUMENTS_KEPT",
    "DocumentState",
    "QuestionState",
    "RunHeadline",
    "RunSnapshot",
    "TopicState",
    "as_utc",
    "content_hash",
    "passage_hash",
    "question_hash",
    "snapshot_of",
    "snapshot_of_analysis",
    "topic_documents_of",
]

TOPIC_DOCUMENTS_KEPT = 20
"""Member documents kept per topic: enough to recognise a topic in the next run, bounded for 1M-chunk corpora."""

SNAPSHOT_FORMAT = 1
"""Version of :meth:`RunSnapshot.to_dict`'s layout; a record of a newer one is refused rather than misread."""

PASSAGES_KEPT = 1_000_000
"""Most passages whose hashes a run keeps; a larger corpus keeps none ("not known"), so every stored slice of
them stays within the part limit."""
PASSAGE_HASH_CHARS = 12
"""Hex digits kept of a passage's sha256: they are compared within one document only."""
FROM_COLUMN, FROM_RETRIEVAL = "column", "retrieved"
SOURCE_ORIGINS = ("", FROM_COLUMN, FROM_RETRIEVAL)
"""How a question's source documents were known: not at all, the test set's source column, or retrieval."""

CHUNK_SEPARATOR = "\n\n"
"""How a vector store's chunk texts are joined to stand for a document without text (as the store reader joins them)."""

_HEADLINE_METRICS = ("tested_share", "basic", "weighted", "balanced", "multi_threshold", "multi_n")
SETTING_FIGURES = ("strictness", "chunk_size", "chunk_overlap", "retrieval_k")
"""The settings a snapshot's headline records (from the report's ``config``), by headline name: the screening
strictness in effect (the screener's default when the config leaves it automatic), the chunk size and overlap
in characters, and the retrieval k."""
# Traffic figures kept: the section's scalars; its lists hold real users' queries, which a history must not keep.
_TRAFFIC_LISTS_COUNTED = {"topics": "n_topics", "unneeded_tests": "n_unneeded_tests"}


def content_hash(text: str) -> str:
    """sha256 hex of a document's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def question_hash(text: str) -> str:
    """sha256 hex of a question's whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def passage_hash(text: str) -> str:
    """The first :data:`PASSAGE_HASH_CHARS` hex digits of the sha256 of a passage's whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:PASSAGE_HASH_CHARS]


@dataclass(frozen=True)
class DocumentState:
    """One document in one run: its fingerprint and verdicts (text only when the user opted in)."""

    name: str
    content_hash: str
    n_chunks: int
    tested_share: float | None
    is_untested: bool
    is_undertested: bool
    text: str | None = None
    passages: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.passages is not None:
            object.__setattr__(self, "passages", tuple(self.passages))


@dataclass(frozen=True)
class QuestionState:
    """One distinct test question in one run; ``sources`` None: not known (module docstring)."""

    text_hash: str
    text: str
    is_offtopic: bool
    offtopic_reason: str = ""
    row: int | None = None
    sources: tuple[str, ...] | None = None
    source_from: str = ""

    def __post_init__(self):
        if self.sources is not None:
            object.__setattr__(self, "sources", tuple(self.sources))


@dataclass(frozen=True)
class TopicState:
    """One topic in one run; ``documents`` are its largest ``(content hash, chunks)`` members, largest first."""

    label: str
    n_chunks: int
    n_questions: int
    tested_share: float | None
    is_gap: bool
    documents: tuple[tuple[str, int], ...] = ()

    @property
    def has_tests(self) -> bool:
        """Some of its passages are tested and it is not a gap."""
        return not self.is_gap and (self.tested_share or 0.0) > 0.0


@dataclass(frozen=True)
class RunHeadline:
    """What a run says of itself besides its inputs and verdicts: when it was recorded and under which label,
    by which tool version, with which provider and model, at which support level, and its headline figures.

    :class:`RunSnapshot` and :class:`~coverage_core.history.reading.RunInfo` both begin with it, so a run's
    headline is declared once and carried from one to the other by :meth:`headline_fields`.
    """

    recorded_at: datetime
    label: str | None
    tool_version: str
    provider: str
    model: str
    support_threshold: float | None
    threshold_reliable: bool | None
    headline: Mapping[str, float | int | None]

    def headline_fields(self) -> dict[str, Any]:
        """The :class:`RunHeadline` fields by name (values as they are, not copied)."""
        return {item.name: getattr(self, item.name) for item in fields(RunHeadline)}


@dataclass(frozen=True)
class RunSnapshot(RunHeadline):
    """What one run of the analysis recorded (see the module docstring for the fingerprints)."""

    documents: tuple[DocumentState, ...]
    questions: tuple[QuestionState, ...]
    topics: tuple[TopicState, ...]
    traffic: Mapping[str, Any] | None = field(default=None)
    decisions: tuple[SuggestionDecision, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "recorded_at", as_utc(self.recorded_at))
        for name in ("documents", "questions", "topics"):  # a list given by a caller would break equality and hashing
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.decisions is not None:  # passages are not kept (module docstring): none, so the round trip is exact
            object.__setattr__(self, "decisions", tuple(replace(d, passage="") if d.passage else d
                                                        for d in self.decisions))

    def to_dict(self) -> dict:
        """JSON-ready; :meth:`from_dict` gives back an equal snapshot."""
        return {
            "format": SNAPSHOT_FORMAT,
            "recorded_at": self.recorded_at.isoformat(),
            "label": self.label,
            "tool_version": self.tool_version,
            "provider": self.provider,
            "model": self.model,
            "support_threshold": self.support_threshold,
            "threshold_reliable": self.threshold_reliable,
            "headline": dict(self.headline),
            "documents": [_document_dict(d) for d in self.documents],
            "questions": [_question_dict(q) for q in self.questions],
            "topics": [
                {"label": t.label, "n_chunks": t.n_chunks, "n_questions": t.n_questions,
                 "tested_share": t.tested_share, "is_gap": t.is_gap,
                 "documents": [[h, n] for h, n in t.documents]}
                for t in self.topics
            ],
            "traffic": None if self.traffic is None else dict(self.traffic),
            "decisions": None if self.decisions is None else [
                {"decision": d.decision, "question": d.question, "original": d.original, "origin": d.origin,
                 "cluster": d.cluster, "document": d.document}
                for d in self.decisions
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> RunSnapshot:
        """The snapshot :meth:`to_dict` wrote; InputError when a field is missing or of the wrong type."""
        record = _Record(data)
        version = record.integer("format", optional=True)
        if version is not None and version > SNAPSHOT_FORMAT:
            raise InputError("This history run was recorded by a newer version of coverage_core; "
                             "upgrade coverage_core to read it.")
        return cls(
            recorded_at=record.timestamp("recorded_at"),
            label=record.text("label", optional=True),
            tool_version=record.text("tool_version"),
            provider=record.text("provider"),
            model=record.text("model"),
            support_threshold=record.number("support_threshold", optional=True),
            threshold_reliable=record.flag("threshold_reliable", optional=True),
            headline=record.figures("headline"),
            documents=tuple(
                DocumentState(
                    name=item.text("name"), content_hash=item.text("content_hash"),
                    n_chunks=item.integer("n_chunks"), tested_share=item.number("tested_share", optional=True),
                    is_untested=item.flag("is_untested"), is_undertested=item.flag("is_undertested"),
                    text=item.text("text", optional=True), passages=item.texts("passages"),
                )
                for item in record.items("documents")
            ),
            questions=tuple(
                QuestionState(
                    text_hash=item.text("text_hash"), text=item.text("text"), is_offtopic=item.flag("is_offtopic"),
                    offtopic_reason=item.text("offtopic_reason"), row=item.integer("row", optional=True),
                    sources=item.texts("sources"),
                    source_from=item.choice("source_from", SOURCE_ORIGINS) if "source_from" in item.data else "",
                )
                for item in record.items("questions")
            ),
            topics=tuple(
                TopicState(
                    label=item.text("label"), n_chunks=item.integer("n_chunks"),
                    n_questions=item.integer("n_questions"), tested_share=item.number("tested_share", optional=True),
                    is_gap=item.flag("is_gap"), documents=item.pairs("documents"),
                )
                for item in record.items("topics")
            ),
            traffic=record.figures("traffic", optional=True),
            decisions=_decisions_of(record),
        )


def _decisions_of(record: _Record) -> tuple[SuggestionDecision, ...] | None:
    """The ``decisions`` of a record; None when it holds none (recorded without them, or before they were kept)."""
    items = record.items("decisions", optional=True)
    if items is None:
        return None
    return tuple(
        SuggestionDecision(
            question=item.text("question"), origin=item.text("origin"), decision=item.choice("decision", DECISIONS),
            original=item.text("original"), cluster=item.integer("cluster", optional=True),
            document=item.text("document"),
        )
        for item in items
    )


def _document_dict(document: DocumentState) -> dict:
    entry = {"name": document.name, "content_hash": document.content_hash, "n_chunks": document.n_chunks,
             "tested_share": document.tested_share, "is_untested": document.is_untested,
             "is_undertested": document.is_undertested}
    if document.text is not None:  # absent rather than null: a record without text carries no trace of it
        entry["text"] = document.text
    if document.passages is not None:
        entry["passages"] = list(document.passages)
    return entry


def _question_dict(question: QuestionState) -> dict:
    entry = {"text_hash": question.text_hash, "text": question.text, "is_offtopic": question.is_offtopic,
             "offtopic_reason": question.offtopic_reason}
    if question.row is not None:  # absent when not known, as a document's text
        entry["row"] = question.row
    if question.sources is not None:
        entry["sources"], entry["source_from"] = list(question.sources), question.source_from
    return entry


def as_utc(moment: Any) -> datetime:
    """``moment`` in UTC; a naive datetime is taken to be UTC already."""
    if not isinstance(moment, datetime):
        raise InputError(f"A run's time must be a date and time, not {type(moment).__name__}; give a datetime.")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _damaged(subject: str, problem: str):
    raise InputError(f"This history record is damaged ({subject} {problem}); "
                     "record the run again or restore the history from a backup.")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Record:
    """Typed reads from one mapping of a stored run; every failure is one InputError sentence."""

    def __init__(self, data: Any, path: str = ""):
        if not isinstance(data, Mapping):
            _damaged(f"its field {path} is" if path else "it is", f"a {type(data).__name__}, not an object")
        self.data, self.path = data, path

    def _field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, optional: bool) -> Any:
        if key not in self.data:
            if optional:
                return None
            _damaged(f"its field {self._field(key)} is", "missing")
        return self.data[key]

    def _wrong(self, key: str, expected: str):
        _damaged(f"its field {self._field(key)} is", f"not {expected}")

    def _typed(self, key: str, optional: bool, fits: Callable[[Any], bool], expected: str) -> Any:
        """The value at ``key`` when ``fits`` it; None when ``optional`` and it is missing or null; otherwise the
        damaged-record sentence, saying it is not ``expected``."""
        value = self._get(key, optional)
        if value is None and optional:
            return None
        if not fits(value):
            self._wrong(key, expected)
        return value

    def text(self, key: str, optional: bool = False) -> str | None:
        return self._typed(key, optional, lambda value: isinstance(value, str), "text")

    def integer(self, key: str, optional: bool = False) -> int | None:
        return self._typed(key, optional, _is_count, "a whole number of zero or more")

    def number(self, key: str, optional: bool = False) -> float | None:
        value = self._typed(key, optional, _is_finite_number, "a number")
        return None if value is None else float(value)

    def flag(self, key: str, optional: bool = False) -> bool | None:
        return self._typed(key, optional, lambda value: isinstance(value, bool), "true or false")

    def timestamp(self, key: str) -> datetime:
        value = self.text(key)
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            self._wrong(key, "an ISO 8601 date and time")
        return as_utc(moment)

    def figures(self, key: str, optional: bool = False) -> dict | None:
        """A flat mapping of names to numbers, flags, None (or short texts)."""
        value = self._typed(key, optional, lambda value: isinstance(value, Mapping), "an object")
        if value is None:
            return None
        for name, figure in value.items():
            if not isinstance(name, str) or not (figure is None or isinstance(figure, (bool, int, str)) or (
                    isinstance(figure, float) and math.isfinite(figure))):
                self._wrong(key, "a list of named figures")
        return dict(value)

    def choice(self, key: str, allowed: Sequence[str]) -> str:
        value = self.text(key)
        if value not in allowed:
            self._wrong(key, f"one of {', '.join(allowed)}")
        return value

    def texts(self, key: str) -> tuple[str, ...] | None:
        """A list of texts, or None when it is missing or null (not known)."""
        value = self._typed(key, True, lambda value: isinstance(value, list) and all(
            isinstance(item, str) for item in value), "a list of texts")
        return None if value is None else tuple(value)

    def items(self, key: str, optional: bool = False) -> list[_Record] | None:
        value = self._typed(key, optional, lambda value: isinstance(value, list), "a list")
        if value is None:
            return None
        return [_Record(item, f"{self._field(key)}[{index}]") for index, item in enumerate(value)]

    def pairs(self, key: str) -> tuple[tuple[str, int], ...]:
        value = self._get(key, False)
        if not isinstance(value, list) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)
            and isinstance(pair[1], int) and not isinstance(pair[1], bool)
            for pair in value
        ):
            self._wrong(key, "a list of [content hash, chunks] pairs")
        return tuple((str(h), int(n)) for h, n in value)


# ---------------------------------------------------------------- from a report


def snapshot_of(
    report: Mapping,
    documents: Sequence[Document] | None = None,
    *,
    label: str | None = None,
    recorded_at: datetime | None = None,
    keep_text: bool = False,
    chunk_texts_by_document: Mapping[str, Sequence[str]] | None = None,
    topic_documents: Mapping[int, Sequence[tuple[str, int]]] | None = None,
    decisions: Sequence | None = None,
    passages: Mapping[str, Sequence[str]] | None = None,
    column_sources: Mapping[int, Sequence[str]] | None = None,
) -> RunSnapshot:
    """The snapshot of a JSON report (:func:`coverage_core.outputs.report.build_report`, schema 6; older ones
    are upgraded first).

    Report entries read: ``config.embedding.{provider,model}``, ``calibration.{support_threshold,reliable}``,
    ``metrics``, ``summary``, ``clusters[]``, ``documents[]``, ``questions[]`` and ``traffic`` when present.
    ``documents`` (matched by name) give the content hashes; a document without text is hashed from
    ``chunk_texts_by_document`` (its chunk texts in order). ``topic_documents`` maps a cluster id to its
    ``(document name, chunks in this topic)`` (:func:`topic_documents_of`); without it topics have no members
    and are matched across runs by label only. ``recorded_at`` defaults to now (UTC). ``decisions`` (the user's
    :class:`~coverage_core.decisions.SuggestionDecision` objects, in table order) are kept as the module docstring
    says (the ones acted on, without their passages) and add their counts to the headline; None: not known, no
    count. ``passages`` maps a document name to its passage (chunk) texts in order, hashed with
    :func:`passage_hash` (None, or more than :data:`PASSAGES_KEPT` in all: not known). ``column_sources`` maps a
    question's row to the documents the test set's source column names for it
    (:func:`coverage_core.history.sources.column_sources`); any other question's source is its
    ``questions[].nearest_document``.
    """
    report = _current_report(report)
    decisions = None if decisions is None else list(decisions)  # read twice: counted, then kept
    config = _section(report, "config")
    embedding = config.get("embedding") if isinstance(config.get("embedding"), Mapping) else {}
    calibration = _section(report, "calibration")
    hashes = _document_hashes(report, documents, chunk_texts_by_document)
    texts = {d.name: d.text for d in documents or ()} if keep_text else {}
    hashed = _passage_hashes(passages)
    document_states = tuple(
        DocumentState(
            name=str(entry["name"]), content_hash=hashes[str(entry["name"])], n_chunks=int(entry.get("n_chunks") or 0),
            tested_share=_share(entry.get("tested_share")), is_untested=bool(entry.get("is_untested")),
            is_undertested=bool(entry.get("is_undertested")), text=texts.get(str(entry["name"])),
            passages=None if hashed is None else hashed.get(str(entry["name"]), ()),
        )
        for entry in _entries(report, "documents")
    )
    question_states = _question_states(_entries(report, "questions"), column_sources or {})
    topics = _topic_states(_entries(report, "clusters"), topic_documents, hashes)
    provider = str(embedding.get("provider") or "")
    return RunSnapshot(
        recorded_at=datetime.now(timezone.utc) if recorded_at is None else recorded_at,
        label=label,
        tool_version=_tool_version(),
        provider=provider,
        model=_model_name(provider, embedding.get("model")),
        support_threshold=_share(calibration.get("support_threshold")),
        threshold_reliable=None if calibration.get("reliable") is None else bool(calibration.get("reliable")),
        headline={**_headline(report, document_states, question_states, topics), **_settings(config),
                  **decision_counts(decisions)},
        documents=document_states,
        questions=question_states,
        topics=topics,
        traffic=_traffic_figures(report.get("traffic")),
        decisions=_kept_decisions(decisions),
    )


def _kept_decisions(decisions: Sequence[SuggestionDecision] | None) -> tuple[SuggestionDecision, ...] | None:
    """The decisions a snapshot keeps (module docstring): those acted on, in order, without their passages, their
    fields as plain Python values (a cluster id may come as a numpy integer)."""
    if decisions is None:
        return None
    return tuple(
        SuggestionDecision(question=str(d.question), origin=str(d.origin), decision=str(d.decision),
                           original=str(d.original), cluster=None if d.cluster is None else int(d.cluster),
                           document=str(d.document))
        for d in decisions if d.is_decided
    )


def _current_report(report: Any) -> Mapping:
    from coverage_core.outputs.report import SCHEMA_VERSION, upgrade_report

    if not isinstance(report, Mapping):
        raise InputError(f"The report is a {type(report).__name__}, not a JSON object; give a report this program wrote.")
    version = report.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        return upgrade_report(report)
    return report


def _section(report: Mapping, name: str) -> Mapping:
    section = report.get(name)
    if not isinstance(section, Mapping):
        raise InputError(f"The report has no {name} section; give a report this program wrote.")
    return section


def _entries(report: Mapping, name: str) -> list[Mapping]:
    entries = report.get(name)
    if not isinstance(entries, list) or not all(isinstance(entry, Mapping) for entry in entries):
        raise InputError(f"The report's {name} are not a list of entries; give a report this program wrote.")
    if name == "documents" and not all("name" in entry for entry in entries):
        raise InputError("The report's documents have no names; give a report this program wrote.")
    return entries


def _share(value: Any) -> float | None:
    """A JSON figure as a float; None for a missing or non-finite one."""
    if value is None or isinstance(value, bool):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _tool_version() -> str:
    import coverage_core

    return coverage_core.__version__


def _model_name(provider: str, model: Any) -> str:
    """The model's name; the provider's default model when the config names none."""
    if model:
        return str(model)
    from coverage_core.embeddings.registry import configured_model_name

    return configured_model_name(provider, None) if provider else ""


def _document_hashes(report: Mapping, documents: Sequence[Document] | None,
                     chunk_texts: Mapping[str, Sequence[str]] | None) -> dict[str, str]:
    """Each report document's content hash by name (module docstring: text, else chunk texts, else "")."""
    texts = {d.name: d.text for d in documents or ()}
    hashes = {}
    for entry in _entries(report, "documents"):
        name = str(entry["name"])
        text = texts.get(name)
        if not text and chunk_texts and name in chunk_texts:
            text = CHUNK_SEPARATOR.join(chunk_texts[name])
        hashes[name] = content_hash(text) if text else ""
    return hashes


def _passage_hashes(passages: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]] | None:
    """Each document's passage hashes; None when not known or past :data:`PASSAGES_KEPT` in all."""
    if passages is None or sum(len(texts) for texts in passages.values()) > PASSAGES_KEPT:
        return None
    return {str(name): tuple(passage_hash(str(text)) for text in texts) for name, texts in passages.items()}


def _question_states(entries: list[Mapping], column_sources: Mapping[int, Sequence[str]]) -> tuple[QuestionState, ...]:
    seen: dict[str, QuestionState] = {}
    for entry in entries:
        text = str(entry.get("text") or "")
        digest = question_hash(text)
        if digest not in seen:  # an exact repeat says nothing new about the test set
            is_offtopic = bool(entry.get("is_outlier"))
            row = _count(entry.get("row"))
            sources, source_from = _sources(entry, row, is_offtopic, column_sources)
            seen[digest] = QuestionState(digest, text, is_offtopic, str(entry.get("offtopic_reason") or ""),
                                         row=row, sources=sources, source_from=source_from)
    return tuple(seen.values())


def _sources(entry: Mapping, row: int | None, is_offtopic: bool,
             column_sources: Mapping[int, Sequence[str]]) -> tuple[tuple[str, ...] | None, str]:
    """A question's source documents and how they were known (module docstring); (None, "") when not known."""
    named = column_sources.get(row) if row is not None else None
    if named:
        return tuple(str(name) for name in named), FROM_COLUMN
    if is_offtopic:  # an off-topic question tests no document
        return (), ""
    if "nearest_document" not in entry:
        return None, ""
    nearest = entry["nearest_document"]
    return ((str(nearest),), FROM_RETRIEVAL) if nearest not in (None, "") else ((), "")


def _topic_states(entries: list[Mapping], topic_documents: Mapping[int, Sequence[tuple[str, int]]] | None,
                  hashes: Mapping[str, str]) -> tuple[TopicState, ...]:
    members = topic_documents or {}
    return tuple(
        TopicState(
            label=str(entry.get("label") or ""), n_chunks=int(entry.get("size") or 0),
            n_questions=int(entry.get("n_questions") or 0), tested_share=_share(entry.get("tested_share")),
            is_gap=bool(entry.get("is_gap")),
            documents=_largest_members(members.get(int(entry.get("id", index)), ()), hashes),
        )
        for index, entry in enumerate(entries)
    )


def _largest_members(members: Sequence[tuple[str, int]], hashes: Mapping[str, str]) -> tuple[tuple[str, int], ...]:
    """``(content hash, chunks)`` of a topic's members, summed over equal contents, largest first, at most
    :data:`TOPIC_DOCUMENTS_KEPT`; members of unknown content are left out (nothing to match them by)."""
    chunks: dict[str, int] = {}
    for name, count in members:
        digest = hashes.get(name, "")
        if digest and count > 0:
            chunks[digest] = chunks.get(digest, 0) + int(count)
    largest = sorted(chunks.items(), key=lambda pair: (-pair[1], pair[0]))
    return tuple(largest[:TOPIC_DOCUMENTS_KEPT])


def _headline(report: Mapping, documents: tuple[DocumentState, ...], questions: tuple[QuestionState, ...],
              topics: tuple[TopicState, ...]) -> dict:
    metrics = report.get("metrics") if isinstance(report.get("metrics"), Mapping) else {}
    summary = report.get("summary") if isinstance(report.get("summary"), Mapping) else {}
    entries = report["documents"]
    headline: dict[str, float | int | None] = {name: _share(metrics.get(name)) for name in _HEADLINE_METRICS}
    headline.update(
        n_documents=int(summary.get("n_documents", len(documents))),
        n_chunks=int(summary.get("n_chunks", sum(d.n_chunks for d in documents))),
        n_tested_chunks=sum(int(entry.get("n_tested") or 0) for entry in entries),
        n_questions=int(summary.get("n_questions", len(questions))),
        n_distinct_questions=len(questions),
        n_untested_documents=sum(d.is_untested for d in documents),
        n_undertested_documents=sum(d.is_undertested for d in documents),
        n_offtopic_questions=sum(bool(q.get("is_outlier")) for q in report["questions"]),
        n_topics=len(topics),
        n_gaps=sum(t.is_gap for t in topics),
    )
    return headline


def _settings(config: Mapping) -> dict[str, float | int | None]:
    """The :data:`SETTING_FIGURES` of a report's ``config`` (None for one it does not hold)."""
    chunking = config.get("chunking") if isinstance(config.get("chunking"), Mapping) else {}
    strictness = config.get("strictness")
    if strictness is None and "strictness" in config:  # automatic: the screener's own default
        from coverage_core.offtopic.screener import QuestionScreener

        strictness = QuestionScreener().strictness
    return {
        "strictness": _share(strictness),
        "chunk_size": _count(chunking.get("chunk_size")),
        "chunk_overlap": _count(chunking.get("chunk_overlap")),
        "retrieval_k": _count(config.get("retrieval_k")),
    }


def _count(value: Any) -> int | None:
    """A whole-number setting of a report; None when missing or not a whole number."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _traffic_figures(section: Any) -> dict | None:
    if not isinstance(section, Mapping):
        return None
    figures: dict[str, Any] = {
        name: value for name, value in section.items()
        if value is None or isinstance(value, (bool, int, float))
    }
    for name, count in _TRAFFIC_LISTS_COUNTED.items():
        if isinstance(section.get(name), list):
            figures[count] = len(section[name])
    return figures


# ---------------------------------------------------------------- from an analysis


def topic_documents_of(analysis) -> dict[int, list[tuple[str, int]]]:
    """Each topic's ``(document name, chunks of the topic in it)``, largest first.

    The topics are ``analysis.clustering.labels`` (one per chunk, aligned with ``analysis.corpus.chunks``):
    the clustering the report's ``clusters[].id`` number, whatever the off-topic screener used
    (``analysis.screening_topics``).
    """
    labels = np.asarray(analysis.clustering.labels, dtype=np.int64)
    names, document_of_chunk = np.unique(np.asarray(analysis.corpus.chunk_documents, dtype=object).astype(str),
                                         return_inverse=True)
    if labels.size == 0:
        return {}
    pairs, counts = np.unique(labels * len(names) + document_of_chunk.reshape(-1), return_counts=True)
    topics: dict[int, list[tuple[str, int]]] = {}
    for pair, count in zip(pairs.tolist(), counts.tolist()):
        topic, document = divmod(pair, len(names))
        topics.setdefault(int(topic), []).append((str(names[document]), int(count)))
    for members in topics.values():
        members.sort(key=lambda member: (-member[1], member[0]))
    return topics


def snapshot_of_analysis(analysis, report: Mapping, *, label: str | None = None, keep_text: bool = False,
                         recorded_at: datetime | None = None, decisions: Sequence | None = None,
                         source_column: str | None = None) -> RunSnapshot:
    """:func:`snapshot_of` for an analysis and its report: documents, chunk texts, passages, topic members and
    the questions' column sources (``source_column``, else one detected by name) from the analysis;
    ``decisions`` as there."""
    from coverage_core.history.sources import column_sources

    documents = analysis.corpus.documents
    chunk_texts: dict[str, list[str]] = {d.name: [] for d in documents}
    for chunk in analysis.corpus.chunks:
        chunk_texts.setdefault(chunk.document, []).append(chunk.text)
    without_text = {d.name: chunk_texts[d.name] for d in documents if not d.text}
    sources = column_sources(analysis.questions, [d.name for d in documents], source_column)
    return snapshot_of(report, documents, label=label, recorded_at=recorded_at, keep_text=keep_text,
                       chunk_texts_by_document=without_text, topic_documents=topic_documents_of(analysis),
                       decisions=decisions, passages=chunk_texts, column_sources=sources)
