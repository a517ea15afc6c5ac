"""The history store: every recorded run, in one SQLite file or any SQLAlchemy database (PostgreSQL for a team).

Layout (schema versioned by the Alembic revisions in ``migrations/``, upgraded when a store is opened):

* ``runs``: one row per run with its headline columns (label, time, tool version, model, τ, headline figures),
  so listing runs never reads anything else; plus the digests of the run's parts.
* ``parts``: content-addressed (sha256 of kind + payload), zlib-compressed pieces shared between runs. A run of an
  unchanged corpus and test set adds one ``runs`` row and, at most, its per-document states: the document list,
  the question set and the topics are already there. Lists are cut into slices at content-defined boundaries
  (a slice ends after an item whose key hashes to 0 modulo ``SLICE_TARGET``), so one document added or changed
  rewrites one slice of about ``SLICE_TARGET`` documents, not the whole list; long lists of slices are indexed
  the same way, level by level.

Parts of a run: ``corpus`` (the slice digests of the document fingerprint: name, content hash, chunks, text digest),
``document_states`` (per document: one flag byte, then the tested shares), ``document_verdicts``
(the untested flags as a bitmap: what the document timeline reads), ``question_set`` (slices of hash and text),
``question_states`` (the off-topic ones), ``topics`` (documents referred to by their index in the run).

Concurrency: SQLite runs in WAL mode with a busy timeout; a write takes the write lock when it begins
(``BEGIN IMMEDIATE``) and is retried with backoff while the file is locked. Every record is one transaction, so
a process killed while recording leaves no trace of the run. PostgreSQL uses ordinary transactions; parts are
inserted in digest order with ``ON CONFLICT DO NOTHING``, so concurrent writers sharing parts neither fail nor
deadlock. The URL is never logged or stored; messages show :func:`redact_history_url` of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import struct
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError, SQLAlchemyError

from coverage_core.errors import InputError
from coverage_core.history.location import (
    DEFAULT_HISTORY_FILE,
    LABEL_MAX_CHARS,
    checked_label,
    default_history_target,
    is_url,
    redact_history_url,
)
from coverage_core.history.snapshot import DocumentState, QuestionState, RunSnapshot, TopicState, as_utc

SLICE_TARGET = 32
"""Average items per list slice: an edited document rewrites its slice (~3 KB: the slice holding a given
document is on average twice the average slice) and one index part of ~32 digests per level above it."""
SLICE_MAX = 16 * SLICE_TARGET
COMPRESSION_LEVEL = 6
SQLITE_BUSY_TIMEOUT_MS = 30_000
WRITE_RETRY_SECONDS = 120.0
"""How long a write keeps retrying a locked SQLite file before giving up (CI jobs may queue behind each other)."""
CONNECT_TIMEOUT_SECONDS = 10
PAUSE_IN_RECORD_ENV = "COVERAGE_HISTORY_TEST_PAUSE_IN_RECORD"
"""Test hook: a file path; ``record`` creates it inside its transaction and then waits, so a test can kill it."""

_MIGRATIONS = Path(__file__).with_name("migrations")
_SQLITE_HEADER = b"SQLite format 3\x00"
_PG_MIGRATION_LOCK = 0x436F7648  # any constant; the advisory lock that serialises schema upgrades

_UNTESTED, _UNDERTESTED, _NO_SHARE = 1, 2, 4
_STATES_FORMAT, _SHARES_PLAIN = 1, 0
_SHARE_TABLES = {1: np.dtype("<u1"), 2: np.dtype("<u2")}  # mode byte -> index type of a table of distinct shares
_MISSING = object()


@dataclass(frozen=True)
class RunInfo:
    """A recorded run's headline, read without loading the run."""

    run: int
    label: str | None
    recorded_at: datetime
    tool_version: str
    provider: str
    model: str
    support_threshold: float | None
    threshold_reliable: bool | None
    headline: Mapping[str, float | int | None]


# ---------------------------------------------------------------- schema at head (the migrations create it)

_metadata = sa.MetaData()
_parts = sa.Table(
    "parts", _metadata,
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("data", sa.LargeBinary(), nullable=False),
)
_runs = sa.Table(
    "runs", _metadata,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("label", sa.String(LABEL_MAX_CHARS)),
    sa.Column("recorded_at", sa.DateTime(), nullable=False),
    sa.Column("tool_version", sa.String(100), nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("model", sa.String(500), nullable=False),
    sa.Column("support_threshold", sa.Float()),
    sa.Column("threshold_reliable", sa.Boolean()),
    sa.Column("headline", sa.Text(), nullable=False),
    sa.Column("traffic", sa.Text()),
    sa.Column("corpus_digest", sa.String(64), nullable=False),
    sa.Column("document_states_digest", sa.String(64), nullable=False),
    sa.Column("question_set_digest", sa.String(64), nullable=False),
    sa.Column("question_states_digest", sa.String(64), nullable=False),
    sa.Column("topics_digest", sa.String(64), nullable=False),
    sa.Column("document_verdicts_digest", sa.String(64)),
)
_HEADLINE_COLUMNS = (_runs.c.id, _runs.c.label, _runs.c.recorded_at, _runs.c.tool_version, _runs.c.provider,
                     _runs.c.model, _runs.c.support_threshold, _runs.c.threshold_reliable, _runs.c.headline)


# ---------------------------------------------------------------- parts: encoding


def _digest(kind: str, payload: bytes) -> str:
    return hashlib.sha256(kind.encode() + b"\0" + payload).hexdigest()


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (a report's figures may be numpy's)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be stored in a history run")


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)


def _json_bytes(value: Any) -> bytes:
    return _json_text(value).encode("utf-8")


class _PartWriter:
    """Collects the parts of one run, keyed by digest (a part used twice is stored once)."""

    def __init__(self):
        self.parts: dict[str, tuple[str, bytes]] = {}

    def add(self, kind: str, payload: bytes) -> str:
        digest = _digest(kind, payload)
        if digest not in self.parts:
            self.parts[digest] = (kind, zlib.compress(payload, COMPRESSION_LEVEL))
        return digest

    def add_json(self, kind: str, value: Any) -> str:
        return self.add(kind, _json_bytes(value))

    def add_sliced(self, kind: str, items: Sequence[Any], keys: Sequence[str]) -> str:
        """A list stored as content-defined slices (kind ``<kind>_slice``) under a manifest ``{depth, parts}``.

        A manifest of more than ``SLICE_TARGET`` slices is itself sliced (kind ``<kind>_index``), level after level,
        so an edited document rewrites its slice and one short index part per level, not an 800-digest list.
        """
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


def _document_states_payload(documents: Sequence[DocumentState]) -> bytes:
    """Header (format, n), one flag byte per document, then the tested shares: when they take few distinct values
    (they are tested chunks / chunks, so usually) a table of those and a one- or two-byte index per document,
    else float64 each."""
    shares = np.array([d.tested_share if d.tested_share is not None else 0.0 for d in documents], dtype="<f8")
    flags = np.array([(_UNTESTED if d.is_untested else 0) | (_UNDERTESTED if d.is_undertested else 0)
                      | (_NO_SHARE if d.tested_share is None else 0) for d in documents], dtype=np.uint8)
    head = struct.pack("<BI", _STATES_FORMAT, len(documents)) + flags.tobytes()
    distinct, codes = np.unique(shares, return_inverse=True)
    for mode, code_type in _SHARE_TABLES.items():
        if len(distinct) <= np.iinfo(code_type).max + 1 and 8 * len(distinct) < 6 * len(documents) + 2048:
            table = struct.pack("<BI", mode, len(distinct)) + distinct.tobytes()
            return head + table + codes.astype(code_type).tobytes()
    return head + struct.pack("<BI", _SHARES_PLAIN, 0) + shares.tobytes()


def _document_states(payload: bytes) -> tuple[list[float], list[int]]:
    """The tested shares (0.0 where None) and flag bytes of :func:`_document_states_payload`."""
    _format, n_documents = struct.unpack_from("<BI", payload)
    flags = np.frombuffer(payload, dtype=np.uint8, count=n_documents, offset=5)
    offset = 5 + n_documents
    mode, n_distinct = struct.unpack_from("<BI", payload, offset)
    offset += 5
    if mode in _SHARE_TABLES:
        distinct = np.frombuffer(payload, dtype="<f8", count=n_distinct, offset=offset)
        codes = np.frombuffer(payload, dtype=_SHARE_TABLES[mode], count=n_documents, offset=offset + 8 * n_distinct)
        shares = distinct[codes]
    else:
        shares = np.frombuffer(payload, dtype="<f8", count=n_documents, offset=offset)
    return shares.tolist(), flags.tolist()


def _verdicts_payload(untested: np.ndarray) -> bytes:
    return struct.pack("<I", len(untested)) + np.packbits(untested.astype(bool)).tobytes()


def _encode(snapshot: RunSnapshot) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
    """The ``runs`` row values and the parts of ``snapshot`` (computed outside any transaction: no lock held)."""
    writer = _PartWriter()
    documents = snapshot.documents
    index_of_hash: dict[str, int] = {}
    rows = []
    for index, document in enumerate(documents):
        index_of_hash.setdefault(document.content_hash, index)
        text_digest = None if document.text is None else writer.add("text", document.text.encode("utf-8"))
        rows.append([document.name, document.content_hash, document.n_chunks, text_digest])
    states = _document_states_payload(documents)
    untested = np.array([d.is_untested for d in documents], dtype=bool)
    topics = [[t.label, t.n_chunks, t.n_questions, t.tested_share, t.is_gap,
               [[index_of_hash.get(h, h), n] for h, n in t.documents]] for t in snapshot.topics]
    offtopic = [[i, q.offtopic_reason] for i, q in enumerate(snapshot.questions) if q.is_offtopic]
    row = {
        "label": snapshot.label,
        "recorded_at": snapshot.recorded_at.astimezone(timezone.utc).replace(tzinfo=None),
        "tool_version": snapshot.tool_version,
        "provider": snapshot.provider,
        "model": snapshot.model,
        "support_threshold": snapshot.support_threshold,
        "threshold_reliable": snapshot.threshold_reliable,
        "headline": _json_text(dict(snapshot.headline)),
        "traffic": None if snapshot.traffic is None else _json_text(dict(snapshot.traffic)),
        "corpus_digest": writer.add_sliced("corpus", rows, [d.name for d in documents]),
        "document_states_digest": writer.add("document_states", states),
        "document_verdicts_digest": writer.add("document_verdicts", _verdicts_payload(untested)),
        "question_set_digest": writer.add_sliced("question_set", [[q.text_hash, q.text] for q in snapshot.questions],
                                                 [q.text_hash for q in snapshot.questions]),
        "question_states_digest": writer.add_json("question_states", offtopic),
        "topics_digest": writer.add_json("topics", topics),
    }
    return row, writer.parts


# ---------------------------------------------------------------- the store


class HistoryStore:
    """Recorded runs in a SQLite file (a path) or any SQLAlchemy database (a URL); see the module docstring."""

    def __init__(self, target: str | os.PathLike):
        self._shown = redact_history_url(target)
        self._part_cache: dict[str, Any] = {}
        url = _target_url(target, self._shown)
        self._is_sqlite = url.get_backend_name() == "sqlite"
        if self._is_sqlite and url.database not in (None, "", ":memory:") and not url.database.startswith("file:"):
            _check_sqlite_file(Path(url.database), self._shown)
        self._engine = _create_engine(url, self._shown)
        try:
            with self._database_errors():
                self._upgrade()
        except BaseException:
            self._engine.dispose()
            raise

    @property
    def shown_target(self) -> str:
        """Where the history is, with any password replaced by ``***``: for messages."""
        return self._shown

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ------------------------------------------------------------ writing

    def record(self, snapshot: RunSnapshot) -> RunInfo:
        """Store ``snapshot`` as a new run, all or nothing; safe while other processes record into the same store."""
        if snapshot.label is not None and checked_label(snapshot.label) != snapshot.label:
            raise InputError("A run label must not start or end with blanks; give it without them.")
        row, parts = _encode(snapshot)
        with self._database_errors():
            run_id = self._retrying(lambda: self._insert_run(row, parts))
        return RunInfo(run=run_id, label=snapshot.label, recorded_at=snapshot.recorded_at,
                       tool_version=snapshot.tool_version, provider=snapshot.provider, model=snapshot.model,
                       support_threshold=snapshot.support_threshold, threshold_reliable=snapshot.threshold_reliable,
                       headline=json.loads(row["headline"]))

    def _insert_run(self, row: dict, parts: dict[str, tuple[str, bytes]]) -> int:
        with self._transaction(write=True) as connection:
            self._insert_parts(connection, parts)
            run_id = connection.execute(_runs.insert().values(**row).returning(_runs.c.id)).scalar_one()
            pause_marker = os.environ.get(PAUSE_IN_RECORD_ENV)
            if pause_marker:
                Path(pause_marker).write_text(str(run_id))
                time.sleep(3600)
        return int(run_id)

    def _insert_parts(self, connection: Connection, parts: dict[str, tuple[str, bytes]]) -> None:
        digests = sorted(parts)  # one order for every writer: concurrent PostgreSQL inserts cannot deadlock
        present: set[str] = set()
        for start in range(0, len(digests), 500):
            batch = digests[start:start + 500]
            present.update(connection.execute(sa.select(_parts.c.digest).where(_parts.c.digest.in_(batch))).scalars())
        missing = [{"digest": d, "kind": parts[d][0], "data": parts[d][1]} for d in digests if d not in present]
        if not missing:
            return
        dialect = connection.dialect.name
        if dialect in ("sqlite", "postgresql"):
            module = __import__(f"sqlalchemy.dialects.{dialect}", fromlist=["insert"])
            statement = module.insert(_parts).on_conflict_do_nothing(index_elements=["digest"])
        else:
            statement = _parts.insert()
        for start in range(0, len(missing), 200):
            connection.execute(statement, missing[start:start + 200])

    # ------------------------------------------------------------ reading

    def runs(self, label: str | None = None) -> list[RunInfo]:
        """The recorded runs (of ``label`` when given), oldest first."""
        query = sa.select(*_HEADLINE_COLUMNS).order_by(_runs.c.id)
        if label is not None:
            query = query.where(_runs.c.label == label)
        with self._database_errors(), self._transaction() as connection:
            return [_run_info(row) for row in connection.execute(query)]

    def latest(self, label: str | None = None, *, before: int | None = None) -> RunInfo | None:
        """The newest run (of ``label``, and older than run ``before`` when given); None when there is none."""
        query = sa.select(*_HEADLINE_COLUMNS).order_by(_runs.c.id.desc()).limit(1)
        if label is not None:
            query = query.where(_runs.c.label == label)
        if before is not None:
            query = query.where(_runs.c.id < before)
        with self._database_errors(), self._transaction() as connection:
            row = connection.execute(query).first()
        return None if row is None else _run_info(row)

    def resolve(self, reference: str) -> RunInfo:
        """Run ``"12"`` by its number, else the latest run labelled ``reference``; InputError when neither exists."""
        text = str(reference).strip()
        if text.isdigit():
            with self._database_errors(), self._transaction() as connection:
                row = connection.execute(sa.select(*_HEADLINE_COLUMNS).where(_runs.c.id == int(text))).first()
            if row is not None:
                return _run_info(row)
        found = self.latest(text)
        if found is None:
            raise InputError(f"No run numbered or labelled {text!r} is in the history {self._shown}; "
                             "give a run number or a label that was recorded.")
        return found

    def load(self, run: int) -> RunSnapshot:
        """The snapshot recorded as run ``run``, exactly as it was recorded; InputError when its parts are damaged."""
        with self._database_errors(run=run), self._transaction() as connection:
            row = connection.execute(sa.select(_runs).where(_runs.c.id == int(run))).mappings().first()
            if row is None:
                raise InputError(f"There is no run {run} in the history {self._shown}; "
                                 "give the number of a recorded run.")
            documents = self._documents(connection, row)
            question_rows = self._sliced(connection, row["question_set_digest"])
            offtopic = dict(self._json_part(connection, row["question_states_digest"]))
            topic_rows = self._json_part(connection, row["topics_digest"])
        questions = tuple(QuestionState(text_hash=text_hash, text=text, is_offtopic=index in offtopic,
                                        offtopic_reason=offtopic.get(index, ""))
                          for index, (text_hash, text) in enumerate(question_rows))
        topics = tuple(TopicState(label=label, n_chunks=n_chunks, n_questions=n_questions, tested_share=share,
                                  is_gap=is_gap,
                                  documents=tuple((documents[ref].content_hash if isinstance(ref, int) else ref, n)
                                                  for ref, n in members))
                       for label, n_chunks, n_questions, share, is_gap, members in topic_rows)
        return RunSnapshot(
            recorded_at=as_utc(row["recorded_at"]), label=row["label"], tool_version=row["tool_version"],
            provider=row["provider"], model=row["model"], support_threshold=row["support_threshold"],
            threshold_reliable=row["threshold_reliable"], headline=json.loads(row["headline"]),
            documents=documents, questions=questions, topics=topics,
            traffic=None if row["traffic"] is None else json.loads(row["traffic"]),
        )

    def _documents(self, connection: Connection, row: Mapping) -> tuple[DocumentState, ...]:
        fingerprint = self._sliced(connection, row["corpus_digest"])
        shares, flags = _document_states(self._raw_part(connection, row["document_states_digest"]))
        texts = self._texts(connection, [text for *_, text in fingerprint if text is not None])
        return tuple(
            DocumentState(name=name, content_hash=content_hash, n_chunks=n_chunks,
                          tested_share=None if flag & _NO_SHARE else share, is_untested=bool(flag & _UNTESTED),
                          is_undertested=bool(flag & _UNDERTESTED),
                          text=None if text_digest is None else texts[text_digest])
            for (name, content_hash, n_chunks, text_digest), share, flag in zip(fingerprint, shares, flags))

    def _texts(self, connection: Connection, digests: list[str]) -> dict[str, str]:
        texts: dict[str, str] = {}
        wanted = sorted(set(digests))
        for start in range(0, len(wanted), 500):
            rows = connection.execute(sa.select(_parts.c.digest, _parts.c.data)
                                      .where(_parts.c.digest.in_(wanted[start:start + 500])))
            texts.update((digest, zlib.decompress(data).decode("utf-8")) for digest, data in rows)
        return texts

    def document_timeline(self, label: str | None = None) -> list[tuple[str, int, datetime, bool | None]]:
        """``(document, run, recorded_at, is_untested)`` at each run where a document's verdict changed.

        A document appears (its verdict then), becomes tested or untested, or disappears (``None``). Runs of the
        same corpus compare their verdict bitmaps, so 1,000 runs read 1,000 small bitmaps and one document list.
        """
        query = sa.select(_runs.c.id, _runs.c.recorded_at, _runs.c.corpus_digest, _runs.c.document_verdicts_digest)
        if label is not None:
            query = query.where(_runs.c.label == label)
        events: list[tuple[str, int, datetime, bool | None]] = []
        with self._database_errors(), self._transaction() as connection:
            previous_corpus, previous_verdicts = None, None
            previous_names: list[str] = []
            previous_untested = np.zeros(0, dtype=bool)
            for run_id, recorded_at, corpus, verdicts in connection.execute(query.order_by(_runs.c.id)).all():
                at = as_utc(recorded_at)
                names = self._names(connection, corpus)
                untested = self._verdicts(connection, verdicts)
                if corpus == previous_corpus:
                    if verdicts != previous_verdicts:
                        for index in np.flatnonzero(untested != previous_untested).tolist():
                            events.append((names[index], run_id, at, bool(untested[index])))
                else:
                    before = dict(zip(previous_names, previous_untested.tolist()))
                    now = dict(zip(names, untested.tolist()))
                    events.extend((name, run_id, at, state) for name, state in now.items()
                                  if before.get(name, _MISSING) != state)
                    events.extend((name, run_id, at, None) for name in before if name not in now)
                previous_corpus, previous_verdicts = corpus, verdicts
                previous_names, previous_untested = names, untested
        return events

    def _names(self, connection: Connection, corpus_digest: str) -> list[str]:
        key = "names:" + corpus_digest
        if key not in self._part_cache:
            self._part_cache[key] = [row[0] for row in self._sliced(connection, corpus_digest)]
        return self._part_cache[key]

    def _verdicts(self, connection: Connection, digest: str) -> np.ndarray:
        payload = self._raw_part(connection, digest)
        (n_documents,) = struct.unpack_from("<I", payload)
        bits = np.frombuffer(payload, dtype=np.uint8, offset=4)
        return np.unpackbits(bits, count=n_documents).astype(bool)

    # ------------------------------------------------------------ parts: decoding (immutable, so cached)

    def _raw_parts(self, connection: Connection, digests: Sequence[str]) -> list[bytes]:
        """The payloads of ``digests``, in order; those not cached are read in a few queries, not one each."""
        found = {digest: self._part_cache[digest] for digest in digests if digest in self._part_cache}
        wanted = sorted(set(digests) - found.keys())
        for start in range(0, len(wanted), 500):
            rows = connection.execute(sa.select(_parts.c.digest, _parts.c.data)
                                      .where(_parts.c.digest.in_(wanted[start:start + 500])))
            found.update((digest, zlib.decompress(data)) for digest, data in rows)
        if wanted:
            if len(self._part_cache) > 8192:  # bounded: a long timeline must not hold every part
                self._part_cache.clear()
            self._part_cache.update((digest, found[digest]) for digest in wanted if digest in found)
        try:
            return [found[digest] for digest in digests]
        except KeyError:
            raise InputError(f"The history {self._shown} is missing part of a run; "
                             "restore the file or database from a backup.") from None

    def _raw_part(self, connection: Connection, digest: str) -> bytes:
        return self._raw_parts(connection, [digest])[0]

    def _json_part(self, connection: Connection, digest: str) -> Any:
        return json.loads(self._raw_part(connection, digest))

    def _sliced(self, connection: Connection, manifest_digest: str) -> list:
        manifest = self._json_part(connection, manifest_digest)
        parts = manifest["parts"]
        for _level in range(int(manifest["depth"])):
            parts = [item for payload in self._raw_parts(connection, parts) for item in json.loads(payload)]
        return parts

    # ------------------------------------------------------------ transactions, retries, errors

    @contextmanager
    def _transaction(self, write: bool = False) -> Iterator[Connection]:
        with self._engine.connect() as connection:
            if self._is_sqlite:
                connection = connection.execution_options(history_write=write)
            with connection.begin():
                yield connection

    def _retrying(self, work):
        """``work()``, retried with growing random waits while SQLite reports the file locked or busy."""
        deadline, wait = time.monotonic() + WRITE_RETRY_SECONDS, 0.05
        while True:
            try:
                return work()
            except OperationalError as error:
                if not (self._is_sqlite and _is_locked(error)) or time.monotonic() > deadline:
                    raise
            time.sleep(wait * (0.5 + random.random()))
            wait = min(wait * 2, 2.0)

    @contextmanager
    def _database_errors(self, run: int | None = None) -> Iterator[None]:
        """Database failures as one InputError sentence naming the (redacted) store, never the driver's text;
        with ``run``, a part of that run that cannot be decoded is that run's damage, not the whole history's."""
        try:
            yield
        except InputError:
            raise
        except (zlib.error, ValueError, struct.error, TypeError, KeyError, IndexError) if run is not None else ():
            raise InputError(f"Run {run} in the history {self._shown} is damaged and cannot be read; compare with "
                             "another run (the other runs are not affected).") from None
        except OperationalError as error:
            if self._is_sqlite and _is_locked(error):
                raise InputError(f"The history {self._shown} stayed locked by another process; "
                                 "try again when the other run has finished.") from None
            if self._is_sqlite:
                raise _damaged(self._shown) from None
            raise InputError(f"Cannot reach the history database {self._shown}; check that the server is "
                             "running and that the URL, user and password are right.") from None
        except DBAPIError:
            if self._is_sqlite:
                raise _damaged(self._shown) from None
            raise InputError(f"The history database {self._shown} refused a query; check that its user may create "
                             "and write tables there and that no other program changed them.") from None
        except (sqlite3.DatabaseError, zlib.error, ValueError, struct.error):
            raise _damaged(self._shown) from None

    def _upgrade(self) -> None:
        """Bring the schema to the newest revision, under a lock, unless it is there already."""
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        config.set_main_option("path_separator", "os")
        scripts = ScriptDirectory.from_config(config)
        head = scripts.get_current_head()
        known = {script.revision for script in scripts.walk_revisions()}

        def current(connection: Connection) -> str | None:
            revision = MigrationContext.configure(connection).get_current_revision()
            if revision is not None and revision not in known:
                raise InputError(f"The history {self._shown} was written by a newer version of coverage_core; "
                                 "upgrade coverage_core to use it.")
            return revision

        with self._engine.connect() as connection:
            if current(connection) == head:
                connection.rollback()
                return
            connection.rollback()

        def migrate() -> None:
            with self._transaction(write=True) as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
                if current(connection) != head:
                    tables = set(sa.inspect(connection).get_table_names())
                    if current(connection) is None and tables & {"runs", "parts"}:
                        raise InputError(f"{self._shown} holds tables named like a history's but no schema "
                                         "version; give the path of a coverage history or a new file.")
                    config.attributes["connection"] = connection
                    command.upgrade(config, "head")

        self._retrying(migrate)


def open_history(target: str | os.PathLike | None = None) -> HistoryStore:
    """The history store at ``target`` (default: :func:`default_history_target`)."""
    return HistoryStore(default_history_target() if target is None else target)


# ---------------------------------------------------------------- opening: targets, files, engines


def _target_url(target: str | os.PathLike, shown: str) -> URL:
    text = os.fspath(target).strip() if isinstance(target, str) else os.fspath(target)
    if not text:
        raise InputError("The history location is empty; give a file path or a database URL.")
    if not is_url(text):
        return URL.create("sqlite", database=str(Path(text).expanduser()))
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):
        raise InputError(f"The history location {shown} is not a valid database URL; "
                         "give a file path or a URL such as postgresql://user@host/database.") from None
    if url.drivername == "postgresql":  # psycopg 3 is the driver we ship; SQLAlchemy's default is psycopg2
        url = url.set(drivername="postgresql+psycopg")
    return url


def _check_sqlite_file(path: Path, shown: str) -> None:
    """Refuse, without writing to it, a path that is a folder, unwritable, not SQLite, damaged or another database."""
    if path.is_dir():
        raise InputError(f"The history {shown} is a folder; give the path of a file, e.g. {DEFAULT_HISTORY_FILE}.")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"The folder of the history {shown} does not exist; create it or give another path.")
    if not path.exists():
        if not os.access(folder, os.W_OK):
            raise InputError(f"Cannot create the history {shown}: its folder is not writable; give another path.")
        return
    if not os.access(path, os.R_OK | os.W_OK):
        raise InputError(f"The history {shown} cannot be read and written; fix its permissions or give another path.")
    size = path.stat().st_size
    if size == 0:
        return  # an empty file is a new SQLite database
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_HEADER):
        raise _damaged(shown)
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    page_count, = struct.unpack(">I", header[28:32])
    counts_valid = header[24:28] == header[92:96]
    if page_size < 512 or (counts_valid and page_count and size < page_count * page_size):
        raise _damaged(shown)
    try:
        read_only = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            tables = {row[0] for row in read_only.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "alembic_version" not in tables:
                raise InputError(f"{shown} is an SQLite database but not a coverage history; "
                                 "give the path of a history or of a new file.")
            if "runs" in tables:
                read_only.execute("SELECT COUNT(*) FROM runs").fetchone()
        finally:
            read_only.close()
    except sqlite3.DatabaseError:
        raise _damaged(shown) from None


def _create_engine(url: URL, shown: str) -> Engine:
    try:
        if url.get_backend_name() == "sqlite":
            engine = sa.create_engine(url)
            _configure_sqlite(engine)
            return engine
        connect_args = {"connect_timeout": CONNECT_TIMEOUT_SECONDS} if url.get_backend_name() == "postgresql" else {}
        return sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except (NoSuchModuleError, ImportError):
        raise InputError(f"The history location {shown} names a database driver that is not installed; "
                         "use a file path or a postgresql:// URL.") from None
    except (ArgumentError, SQLAlchemyError, ValueError, TypeError):
        raise InputError(f"The history location {shown} is not a usable database URL; "
                         "give a file path or a URL such as postgresql://user@host/database.") from None


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection, _record):
        # The driver's own transaction handling is switched off so that ``begin`` below decides how a
        # transaction starts: IMMEDIATE for writes takes the write lock up front (no deadlocked upgrade).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")  # safe in WAL mode: a crash keeps every committed run
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection):
        write = connection.get_execution_options().get("history_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _is_locked(error: OperationalError) -> bool:
    text = str(getattr(error, "orig", error)).lower()
    return "locked" in text or "busy" in text


def _damaged(shown: str) -> InputError:
    return InputError(f"The history {shown} is damaged or is not a coverage history; "
                      "move it aside (it was not changed) and record again into a new one.")


def _run_info(row) -> RunInfo:
    return RunInfo(run=int(row.id), label=row.label, recorded_at=as_utc(row.recorded_at),
                   tool_version=row.tool_version, provider=row.provider, model=row.model,
                   support_threshold=row.support_threshold, threshold_reliable=row.threshold_reliable,
                   headline=json.loads(row.headline))


