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
``question_states`` (the off-topic ones), ``topics`` (documents referred to by their index in the run), and
``decisions`` (slices of the user's decisions about suggested questions; its column ``decisions_digest`` is NULL
for a run recorded without them, or before revision 0003 added it: "not known"), ``passages`` (slices of each
document's passage hashes) and ``question_sources`` (slices of each question's row and source documents), whose
columns ``passages_digest`` and ``question_sources_digest`` are NULL for a run recorded before revision 0004
added them ("not known"). A run is encoded, and read back before it is written, by
:mod:`coverage_core.history.encoding`.

Concurrency: SQLite runs in WAL mode with a busy timeout; a write takes the write lock when it begins
(``BEGIN IMMEDIATE``) and is retried with backoff while the file is locked. Every record is one transaction, so
a process killed while recording leaves no trace of the run. PostgreSQL uses ordinary transactions; parts are
inserted in digest order with ``ON CONFLICT DO NOTHING``, so concurrent writers sharing parts neither fail nor
deadlock. The URL is never logged or stored; messages show :func:`redact_history_url` of it.

Hostile or damaged files: a history is read as untrusted input. The parts are encoded, bounded and checked by
:mod:`coverage_core.history.parts` (bounded inflation, digests verified, JSON depth and shapes, bounded walks of
sliced lists, a read budget per run) and read back into snapshots by :mod:`coverage_core.history.reading`
(the same checks run on every run before it is recorded, so a recorded run always reads back). Row text is cut
in the query itself. A damaged run is one sentence naming it; the other runs still load. A part stored damaged
under its digest is written anew by the next run that needs it. Only regular files (or a new path in a writable
folder) are opened as SQLite: a device, pipe or socket is refused, as is a libpq keyword string.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
import struct
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError, SQLAlchemyError

from coverage_core.decisions import SuggestionDecision
from coverage_core.errors import InputError
from coverage_core.history.encoding import checked_encoding
from coverage_core.history.location import (
    CONNINFO_REFUSAL,
    DEFAULT_HISTORY_FILE,
    LABEL_MAX_CHARS,
    checked_label,
    default_history_target,
    is_conninfo,
    is_url,
    redact_history_url,
)
from coverage_core.history.parts import (
    COMPRESSION_LEVEL,
    MAX_FIGURES_CHARS,
    MAX_PART_BYTES,
    MAX_READ_BYTES,
    SLICE_MAX,
    SLICE_TARGET,
    DamagedPart,
    Reading,
    TooLarge,
    digest_of,
    inflate,
    is_digest,
    part_limit,
    read_sliced,
    stored_limit,
    verdicts,
)
from coverage_core.history.reading import (
    DECISIONS_COLUMN,
    DIGEST_COLUMNS,
    MAX_TIME_CHARS,
    SOURCE_COLUMNS,
    TEXT_COLUMNS,
    RunInfo,
    decode_decisions,
    decode_run,
    fetcher,
    run_info,
    run_time,
    shown_text,
)
from coverage_core.history.snapshot import RunSnapshot

__all__ = ["COMPRESSION_LEVEL", "SLICE_MAX", "SLICE_TARGET", "HistoryStore", "RunInfo", "open_history"]

SQLITE_BUSY_TIMEOUT_MS = 30_000
WRITE_RETRY_SECONDS = 120.0
"""How long a write keeps retrying a locked SQLite file before giving up (CI jobs may queue behind each other)."""
CONNECT_TIMEOUT_SECONDS = 10
PAUSE_IN_RECORD_ENV = "COVERAGE_HISTORY_TEST_PAUSE_IN_RECORD"
"""Test hook: a file path; ``record`` creates it inside its transaction and then waits, so a test can kill it."""
CACHE_BYTES = 64 * 1024**2
"""Most inflated bytes of parts kept between reads (parts are immutable: a timeline re-reads shared ones)."""
MAX_TIMELINE_READ_BYTES = 4 * MAX_READ_BYTES
"""Most inflated bytes one document timeline may read in all: it reads every run of a label, so its time stays
bounded however many runs a file holds."""

_MIGRATIONS = Path(__file__).with_name("migrations")
_SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")
_PG_MIGRATION_LOCK = 0x436F7648  # any constant; the advisory lock that serialises schema upgrades
_MISSING = object()
_RAW = sa.types.NullType()  # a column read as the driver gives it: every value is checked by reading.run_info
_DIGEST_CHARS = 64


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
    sa.Column("decisions_digest", sa.String(64)),
    sa.Column("passages_digest", sa.String(64)),
    sa.Column("question_sources_digest", sa.String(64)),
)


# ---------------------------------------------------------------- reading parts


def _bounded_data(limit: int):
    """The ``data`` column, NULL where a part's stored bytes could not inflate within ``limit``: such a part is
    refused without the database handing it over."""
    too_long = sa.func.length(_parts.c.data) > sa.literal_column(str(stored_limit(limit)))
    return sa.type_coerce(sa.case((too_long, sa.null()), else_=_parts.c.data), _RAW).label("data")


def _same_part(stored: Any, part: tuple[str, bytes]) -> bool:
    """Whether ``stored`` (bytes of the database) inflates to the payload of ``part`` (another zlib may compress the
    same payload to other bytes)."""
    kind, data = part
    try:
        return stored is not None and inflate(stored, part_limit(kind)) == zlib.decompress(data)
    except DamagedPart:
        return False


class _StoredParts:
    """The parts in the database, as a :class:`~coverage_core.history.reading.PartSource`: few queries for many
    parts, each part inflated within its limit and checked against its digest, kept in the store's cache."""

    def __init__(self, store: HistoryStore, connection: Connection):
        self.store, self.connection = store, connection

    def payloads(self, digests: Sequence[str], kind: str, reading: Reading, counts: Counter) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        wanted = []
        for digest in digests:
            cached = self.store._cache.get(digest)
            if cached is not None and cached[0] == kind:
                reading.charge(len(cached[1]) * counts[digest])
                found[digest] = cached[1]
            else:
                wanted.append(digest)
        limit = part_limit(kind)
        for start in range(0, len(wanted), 500):
            rows = self.connection.execute(sa.select(_parts.c.digest, _bounded_data(limit))
                                           .where(_parts.c.digest.in_(wanted[start:start + 500])))
            for digest, data in rows:
                if digest not in counts:
                    continue
                if data is None:
                    raise TooLarge(f"a part takes more than {limit // 1024**2} MiB")
                payload = inflate(data, limit)
                # The digest binds the kind too: a part of another list, or edited by hand, is not this part.
                if digest_of(kind, payload) != digest:
                    raise DamagedPart("a part does not match its digest")
                reading.charge(len(payload) * counts[digest])
                found[digest] = payload
                self.store._remember(digest, kind, payload)
        return found


def _run_number(text: str) -> int | None:
    """``text`` as a run number: ASCII digits only (``str.isdigit`` accepts "²"), and within SQLite's integers."""
    if text.isascii() and text.isdigit() and len(text) <= 18:
        return int(text)
    return None


# ---------------------------------------------------------------- the store


class HistoryStore:
    """Recorded runs in a SQLite file (a path) or any SQLAlchemy database (a URL); see the module docstring.

    Nothing read is trusted: every value is checked and every read bounded (:mod:`coverage_core.history.parts`),
    whoever wrote the file. A damaged run is one sentence naming it (InputError); listing and the timeline leave
    it out and name it in :attr:`damaged_runs`, so the other runs still load.
    """

    def __init__(self, target: str | os.PathLike):
        self._shown = redact_history_url(target)
        self._cache: dict[str, tuple[str, bytes]] = {}
        self._cache_bytes = 0
        self.damaged_runs: dict[int, str] = {}
        """Runs :meth:`runs` or :meth:`document_timeline` left out as damaged, with the reason (for messages)."""
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
        row, parts = checked_encoding(snapshot)
        with self._database_errors():
            run_id = self._retrying(lambda: self._insert_run(row, parts))
        # The headline as it was stored (JSON numbers), the rest as the snapshot has it.
        return RunInfo(**{**snapshot.headline_fields(), "headline": json.loads(row["headline"])}, run=run_id)

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
        present: dict[str, Any] = {}
        stored = _bounded_data(MAX_PART_BYTES)
        for start in range(0, len(digests), 500):
            batch = digests[start:start + 500]
            present.update(connection.execute(sa.select(_parts.c.digest, stored).where(_parts.c.digest.in_(batch))).all())
        for digest in digests:  # a stored part that differs from this run's (a damaged file) is written again
            if digest in present and present[digest] != parts[digest][1] and not _same_part(present[digest], parts[digest]):
                connection.execute(_parts.update().where(_parts.c.digest == digest).values(data=parts[digest][1]))
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

    # ------------------------------------------------------------ reading (every value checked, every read bounded)

    def _column(self, name: str):
        """Column ``name`` of ``runs`` as the driver gives it, text cut in the query (SQLite keeps any length in
        any column, and listing 1,000 runs must not read 1,000 hand-edited megabytes)."""
        column = _runs.c[name]
        if name in TEXT_COLUMNS:
            limit = TEXT_COLUMNS[name] + 1  # one more: a longer text is shown cut, with an ellipsis
        elif name in ("headline", "traffic"):
            limit = MAX_FIGURES_CHARS + 1
        elif name.endswith("_digest"):
            limit = _DIGEST_CHARS + 1
        elif name == "recorded_at" and self._is_sqlite:  # text in SQLite; a timestamp elsewhere
            limit = MAX_TIME_CHARS + 1
        else:
            return sa.type_coerce(column, _RAW).label(name)
        cut = sa.func.substr(column, sa.literal_column("1"), sa.literal_column(str(limit)))
        return sa.type_coerce(cut, _RAW).label(name)

    def _columns(self, *names: str) -> list:
        headline = ("id", "label", "recorded_at", "tool_version", "provider", "model", "support_threshold",
                    "threshold_reliable", "headline")
        return [self._column(name) for name in headline + names]

    def _damaged_run(self, run: Any, error: DamagedPart) -> InputError:
        return InputError(f"Run {run} in the history {self._shown} is damaged and cannot be read ({error}); "
                          "compare with another run (the other runs are not affected).")

    def _info(self, row) -> RunInfo:
        try:
            return run_info(row._mapping)
        except DamagedPart as error:
            raise self._damaged_run(row._mapping["id"], error) from None

    def runs(self, label: str | None = None) -> list[RunInfo]:
        """The recorded runs (of ``label`` when given), oldest first; a run whose row is damaged is left out and
        named in :attr:`damaged_runs`."""
        query = sa.select(*self._columns()).order_by(_runs.c.id)
        if label is not None:
            query = query.where(_runs.c.label == label)
        found = []
        with self._database_errors(), self._transaction() as connection:
            for row in connection.execute(query):
                try:
                    found.append(run_info(row._mapping))
                except DamagedPart as error:
                    self.damaged_runs[row._mapping["id"]] = str(error)
        return found

    def damaged_sentence(self) -> str | None:
        """One sentence naming the runs :meth:`runs` and :meth:`document_timeline` left out as damaged; None when
        none was."""
        runs = sorted(self.damaged_runs)
        if not runs:
            return None
        listed = ", ".join(str(run) for run in runs[:10]) + (f" and {len(runs) - 10} more" if len(runs) > 10 else "")
        these = "Run" if len(runs) == 1 else "Runs"
        return (f"{these} {listed} in the history {self._shown} {'is' if len(runs) == 1 else 'are'} damaged and "
                "cannot be read, so left out; the other runs are shown.")

    def latest(self, label: str | None = None, *, before: int | None = None) -> RunInfo | None:
        """The newest run (of ``label``, and older than run ``before`` when given); None when there is none.
        InputError naming it when that run is damaged (an earlier run would be compared with unnoticed)."""
        query = sa.select(*self._columns()).order_by(_runs.c.id.desc()).limit(1)
        if label is not None:
            query = query.where(_runs.c.label == label)
        if before is not None:
            query = query.where(_runs.c.id < before)
        with self._database_errors(), self._transaction() as connection:
            row = connection.execute(query).first()
        return None if row is None else self._info(row)

    def resolve(self, reference: str) -> RunInfo:
        """Run ``"12"`` by its number (ASCII digits only), else the latest run labelled ``reference``; InputError
        when neither exists."""
        text = str(reference).strip()
        number = _run_number(text)
        if number is not None:
            with self._database_errors(), self._transaction() as connection:
                row = connection.execute(sa.select(*self._columns()).where(_runs.c.id == number)).first()
            if row is not None:
                return self._info(row)
        found = self.latest(text)
        if found is None:
            raise InputError(f"No run numbered or labelled {shown_text(text, 60)!r} is in the history "
                             f"{self._shown}; give a run number or a label that was recorded.")
        return found

    def load(self, run: int) -> RunSnapshot:
        """The snapshot recorded as run ``run``, exactly as it was recorded; InputError naming the run when its row
        or parts are damaged (within ``MAX_READ_BYTES`` of inflated parts, however the file was made)."""
        return self._read(run, ("traffic", *DIGEST_COLUMNS, DECISIONS_COLUMN, *SOURCE_COLUMNS), decode_run)

    def decisions(self, run: int) -> tuple[SuggestionDecision, ...] | None:
        """The decisions about suggested questions recorded with run ``run``, reading only that part; None when the
        run was recorded without them ("not known"). InputError as :meth:`load`."""
        return self._read(run, (DECISIONS_COLUMN,), decode_decisions)

    def _read(self, run: int, columns: Sequence[str], decode):
        """``decode(row, parts)`` of run ``run``'s row (its headline columns and ``columns``)."""
        number = run if isinstance(run, int) and not isinstance(run, bool) and 0 < run < 2**63 else None
        with self._database_errors(), self._transaction() as connection:
            row = None if number is None else connection.execute(
                sa.select(*self._columns(*columns)).where(_runs.c.id == number)).first()
            if row is None:
                raise InputError(f"There is no run {run} in the history {self._shown}; "
                                 "give the number of a recorded run.")
            try:
                return decode(row._mapping, _StoredParts(self, connection))
            except DamagedPart as error:
                raise self._damaged_run(number, error) from None

    def document_timeline(self, label: str | None = None) -> list[tuple[str, int, datetime, bool | None]]:
        """``(document, run, recorded_at, is_untested)`` at each run where a document's verdict changed.

        A document appears (its verdict then), becomes tested or untested, or disappears (``None``). Runs of the
        same corpus compare their verdict bitmaps, so 1,000 runs read 1,000 small bitmaps and one document list.
        A damaged run is left out (named in :attr:`damaged_runs`): its changes show at the next run. InputError
        when the runs would read more than ``MAX_TIMELINE_READ_BYTES`` in all.
        """
        query = sa.select(self._column("id"), self._column("recorded_at"), self._column("corpus_digest"),
                          self._column("document_verdicts_digest"))
        if label is not None:
            query = query.where(_runs.c.label == label)
        events: list[tuple[str, int, datetime, bool | None]] = []
        total = Reading(MAX_TIMELINE_READ_BYTES)
        with self._database_errors(), self._transaction() as connection:
            source = _StoredParts(self, connection)
            previous_corpus, previous_verdicts = None, None
            previous_names: list[str] = []
            previous_untested = np.zeros(0, dtype=bool)
            for run_id, recorded_at, corpus, verdicts_digest in connection.execute(query.order_by(_runs.c.id)):
                reading = Reading()
                try:
                    at = run_time(recorded_at)
                    if not is_digest(corpus) or not is_digest(verdicts_digest):
                        raise DamagedPart("it names a part that cannot exist")
                    fetch = fetcher(source, reading)
                    names = previous_names if corpus == previous_corpus else [
                        row[0] for row in read_sliced(fetch, corpus, "corpus")]
                    untested = verdicts(fetch([verdicts_digest], "document_verdicts")[0], len(names))
                except DamagedPart as error:
                    self.damaged_runs[run_id] = str(error)
                    continue
                finally:
                    try:
                        total.charge(reading.used)
                    except TooLarge:
                        raise InputError(f"The document timeline of the history {self._shown} would read more than "
                                         f"{MAX_TIMELINE_READ_BYTES // 1024**2:,} MiB; choose a label with fewer "
                                         "runs.") from None
                if corpus == previous_corpus:
                    if verdicts_digest != previous_verdicts:
                        for index in np.flatnonzero(untested != previous_untested).tolist():
                            events.append((names[index], run_id, at, bool(untested[index])))
                else:
                    before = dict(zip(previous_names, previous_untested.tolist()))
                    now = dict(zip(names, untested.tolist()))
                    events.extend((name, run_id, at, state) for name, state in now.items()
                                  if before.get(name, _MISSING) != state)
                    events.extend((name, run_id, at, None) for name in before if name not in now)
                previous_corpus, previous_verdicts = corpus, verdicts_digest
                previous_names, previous_untested = names, untested
        return events

    # ------------------------------------------------------------ parts (immutable, so cached)

    def _remember(self, digest: str, kind: str, payload: bytes) -> None:
        if kind == "text":  # read once per load; kept, they would push out the parts a timeline shares
            return
        if self._cache_bytes + len(payload) > CACHE_BYTES:
            self._cache.clear()
            self._cache_bytes = 0
        if len(payload) <= CACHE_BYTES:
            self._cache[digest] = (kind, payload)
            self._cache_bytes += len(payload)

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
    def _database_errors(self) -> Iterator[None]:
        """Database failures as one InputError sentence naming the (redacted) store, never the driver's text.
        (A damaged run is named where it is read: its DamagedPart reaches here only from a schema upgrade.)"""
        try:
            yield
        except InputError:
            raise
        except OperationalError as error:
            if self._is_sqlite and _is_locked(error):
                raise _locked(self._shown) from None
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

        def read_revision() -> str | None:
            # Connecting switches the file to WAL, which another process opening it at once may hold locked.
            with self._engine.connect() as connection:
                revision = current(connection)
                connection.rollback()
                return revision

        if self._retrying(read_revision) == head:
            return

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
    if is_conninfo(text):
        raise InputError(CONNINFO_REFUSAL)
    if not is_url(text):
        return URL.create("sqlite", database=str(Path(text).expanduser()))
    try:
        url = _url_with_credentials(text)
    except (ArgumentError, ValueError):
        raise InputError(f"The history location {shown} is not a valid database URL; "
                         "give a file path or a URL such as postgresql://user@host/database.") from None
    if url.drivername == "postgresql":  # psycopg 3 is the driver we ship; SQLAlchemy's default is psycopg2
        url = url.set(drivername="postgresql+psycopg")
    return url


def _url_with_credentials(text: str) -> URL:
    """``text`` as a URL, its user and password taken as :func:`redact_history_url` takes them: everything before
    the last ``@`` (a password may hold ``@`` or ``/`` unencoded). SQLAlchemy alone would end the password at the
    first ``@`` and connect somewhere else than the message names."""
    scheme = text[:text.index("://") + 3]
    credentials, at, host = text[len(scheme):].rpartition("@")
    user, has_password, password = credentials.partition(":")
    if not at or scheme.lower().startswith("sqlite") or "/" in user or "?" in user:
        return make_url(text)  # no credentials (or a path or query holding "@"): nothing to take apart
    return make_url(scheme + host).set(username=unquote(user) or None,
                                       password=unquote(password) if has_password else None)


def _check_sqlite_file(path: Path, shown: str) -> None:
    """Refuse, without writing to it, a path that is a folder, a device, a pipe or a socket, unwritable, not SQLite,
    damaged or another database; a new path must be in a writable folder."""
    if path.is_dir():
        raise InputError(f"The history {shown} is a folder; give the path of a file, e.g. {DEFAULT_HISTORY_FILE}.")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"The folder of the history {shown} does not exist; create it or give another path.")
    # SQLite would open a device (/dev/null reads as an empty database) and create its journal beside it, in /dev.
    for checked in (path, *(Path(f"{path}{suffix}") for suffix in _SQLITE_SIDE_FILES)):
        try:
            mode = os.stat(checked).st_mode
        except FileNotFoundError:
            continue
        except OSError:
            raise InputError(f"The history {shown} cannot be opened; give the path of a file in a folder you "
                             "can write.") from None
        if not stat.S_ISREG(mode):
            raise InputError(f"The history {shown} is not a regular file (a device, pipe or socket, or one beside "
                             f"it); give the path of a file, e.g. {DEFAULT_HISTORY_FILE}.")
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
        read_only = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                                    timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)
        try:
            tables = {row[0] for row in read_only.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "alembic_version" not in tables:
                raise InputError(f"{shown} is an SQLite database but not a coverage history; "
                                 "give the path of a history or of a new file.")
            if "runs" in tables:
                read_only.execute("SELECT COUNT(*) FROM runs").fetchone()
        finally:
            read_only.close()
    except sqlite3.OperationalError as error:
        raise (_locked(shown) if _is_locked(error) else _damaged(shown)) from None
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


def _is_locked(error: OperationalError | sqlite3.OperationalError) -> bool:
    text = str(getattr(error, "orig", error)).lower()
    return "locked" in text or "busy" in text


def _locked(shown: str) -> InputError:
    return InputError(f"The history {shown} stayed locked by another process; "
                      "try again when the other run has finished.")


def _damaged(shown: str) -> InputError:
    return InputError(f"The history {shown} is damaged or is not a coverage history; "
                      "move it aside (it was not changed) and record again into a new one.")




