"""Persistent embedding cache and the cache-aware ``embed_texts`` driver.

Embedding a knowledge base costs minutes (local model) or money (APIs), and
users re-run the same documents many times while tuning questions. The cache
remembers every vector by (provider, model, dimensions, sha256(text)) in one
SQLite file, together with the text's token count, so a fully cached run
needs neither the model nor its tokenizer. A local model run in bf16, and an
API model answered by another server than its provider's own (a base URL),
count as other models (:func:`stored_model_name`), so one server's vectors
are never taken for another's.

What the cache holds is checked as it is read: a vector of the wrong length
or holding no finite numbers is dropped, computed again and reported; and a
cache that cannot be written (locked by another program) never loses
embeddings already paid for: the run uses them and says they were not saved.

SQLite in WAL mode gives atomic writes that several processes and threads
can share (e.g. two dashboard sessions). A new connection is opened per
operation: Streamlit reruns a script in different threads, and a SQLite
connection must not cross threads. Only hashes are stored, never texts or
API keys.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from coverage_core import wording
from coverage_core.embeddings.base import Embedder, batches, plan_batches
from coverage_core.errors import InputError, ProviderError
from coverage_core.validation import unit_rows

CACHE_FILE_NAME = "embeddings.sqlite3"
_FIRST_USE = threading.Lock()
# SQLite's default limit on "?" parameters is 32766 in recent versions but
# 999 in old builds; stay well under both.
_LOOKUP_CHUNK = 500
_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    provider   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,  -- 0 means the model's native size
    text_hash  BLOB    NOT NULL,  -- sha256 of the UTF-8 text
    tokens     INTEGER NOT NULL,
    vector     BLOB    NOT NULL,  -- little-endian float32
    PRIMARY KEY (provider, model, dimensions, text_hash)
) WITHOUT ROWID
"""


def default_cache_dir() -> Path:
    """Where the cache lives unless told otherwise.

    ``$COVERAGE_CORE_CACHE_DIR``, else ``$XDG_CACHE_HOME/coverage_core``,
    else ``~/.cache/coverage_core``.
    """
    explicit = os.environ.get("COVERAGE_CORE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coverage_core"


def text_hash(text: str) -> bytes:
    """sha256 digest of the text's UTF-8 bytes: the cache key's text part."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class CacheKey:
    """The model part of a cache key."""

    provider: str
    model: str
    dimensions: int  # 0 = native size

    @classmethod
    def of(cls, embedder: Embedder) -> "CacheKey":
        return cls(embedder.provider, stored_model_name(embedder), int(embedder.dimensions or 0))


def stored_model_name(embedder: Embedder) -> str:
    """The model column for ``embedder``: its model, plus ``@bf16`` (say) when it does not run in fp32,
    plus ``[endpoint=http://host/v1]`` (say) when another server than the provider's own answers.

    The bracket is the embedder's ``cache_tag``. fp32 (and API embedders, which have no ``precision_used``)
    and the provider's own endpoint keep the bare name, so caches written before precisions and endpoints
    were told apart stay valid. Why: bf16 vectors differ, and a server at a base URL may answer anything
    under a model's name, so neither is taken for the other (docs/providers.md, *The embedding cache*).
    """
    precision = getattr(embedder, "precision_used", None) or "fp32"
    name = embedder.model if precision == "fp32" else f"{embedder.model}@{precision}"
    tag = getattr(embedder, "cache_tag", "") or ""
    return f"{name} [{tag}]" if tag else name


class EmbeddingCache:
    """On-disk vectors and token counts keyed by model and text hash.

    Args:
        directory: Folder for the cache file; None means
            :func:`default_cache_dir` at construction time. Created on first use.

    A cache file SQLite cannot use (not a database, damaged pages) makes
    every operation raise :class:`InputError` advising to delete the file or
    use another folder. An empty (0-byte) file is started afresh, and
    ``warnings`` says so: callers show these sentences to the user
    (:mod:`coverage_core.embedding_steps` moves them into the warnings of the analysis that embedded
    next, so the CLI prints them, the report and the dashboard list them).
    """

    lock_timeout = 60.0
    """Seconds an operation waits for another program's write to end before it gives up (tests shorten it)."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / CACHE_FILE_NAME
        self._ready = False
        self.warnings: list[str] = []
        self.unwritable = False  # a write failed: see try_put_many

    def __repr__(self) -> str:
        return f"EmbeddingCache(directory={str(self.directory)!r})"

    def _unusable(self, exc: Exception) -> InputError:
        """The one sentence for a cache file SQLite cannot use."""
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return InputError(
                f"The embedding cache {self.path} stayed locked by another program ({exc}); "
                "let it finish or set COVERAGE_CORE_CACHE_DIR to another folder."
            )
        return InputError(
            f"Cannot use the embedding cache {self.path} ({exc}); delete the file "
            "or set COVERAGE_CORE_CACHE_DIR to another folder."
        )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite failures (a damaged file can fail any statement) into that sentence."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._unusable(exc) from exc

    def _note_empty_file(self) -> None:
        """Warn once when the cache file is there but empty: SQLite starts it afresh."""
        try:
            empty = self.path.stat().st_size == 0
        except OSError:
            return  # no file yet (created now) or unreadable (connecting says why)
        if empty:
            self.warnings.append(
                f"The embedding cache {self.path} was an empty file, so it was started afresh and earlier "
                "embeddings will be computed again; if this happens again, check the free space on that disk."
            )

    def _connect(self) -> sqlite3.Connection:
        """A fresh connection (one per operation, so any thread may call us)."""
        if not self._ready:
            # Threads starting on a new file at once would race to create it: one could see it
            # still empty (a false "was an empty file" warning) or be refused the switch to WAL.
            with _FIRST_USE:
                return self._open()
        return self._open()

    def _open(self) -> sqlite3.Connection:
        if not self._ready:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(
                    f"Cannot create the embedding cache folder {self.directory} ({exc.strerror}); "
                    "set COVERAGE_CORE_CACHE_DIR to a writable folder."
                ) from exc
            self._note_empty_file()
        # timeout: wait for another writer instead of failing with "database is locked".
        with self._guard():
            connection = sqlite3.connect(self.path, timeout=self.lock_timeout, check_same_thread=False)
            try:
                if not self._ready:
                    with connection:
                        # WAL lets readers proceed while another process writes; the mode
                        # is stored in the file, so doing this once per instance is enough.
                        connection.execute("PRAGMA journal_mode=WAL")
                        connection.execute(_SCHEMA)
                connection.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                connection.close()
                raise
        self._ready = True
        return connection

    def _select(self, columns: str, key: CacheKey, hashes: Sequence[bytes]) -> Iterator[tuple]:
        """Rows of ``columns`` for the stored ``hashes`` of one model, looked up in slices."""
        with closing(self._connect()) as connection, self._guard():
            for part in batches(list(hashes), _LOOKUP_CHUNK):
                marks = ",".join("?" * len(part))
                yield from connection.execute(
                    f"SELECT {columns} FROM embeddings "
                    f"WHERE provider=? AND model=? AND dimensions=? AND text_hash IN ({marks})",
                    (key.provider, key.model, key.dimensions, *part),
                )

    def get_many(self, key: CacheKey, hashes: Sequence[bytes]) -> dict[bytes, tuple[np.ndarray, int]]:
        """Cached ``(vector, token_count)`` for each hash found; missing ones are absent.

        A stored vector holding NaN, an infinity or no number at all is
        damage SQLite cannot see: it is left out (so it is computed again and
        overwritten), and :meth:`note_damaged` says so.
        """
        rows = list(self._select("text_hash, tokens, vector", key, hashes))
        for _, tokens, blob in rows:
            if not isinstance(blob, bytes) or len(blob) % 4 or not isinstance(tokens, int):
                # SQLite read the page but the row is not what we wrote: damage it could not see.
                raise self._unusable(sqlite3.DatabaseError("a stored vector is damaged"))
        # One array for every row, checked at once: a check per row costs more than the lookup.
        flat = np.frombuffer(b"".join(blob for _, _, blob in rows), dtype="<f4").copy()
        sizes = np.array([len(blob) // 4 for _, _, blob in rows], dtype=np.int64)
        ends = np.cumsum(sizes)
        bad_at = np.cumsum(~np.isfinite(flat)) if len(flat) else np.zeros(0, dtype=np.int64)
        found, damaged = {}, 0
        for (digest, tokens, _), size, end in zip(rows, sizes.tolist(), ends.tolist()):
            start = end - size
            if size == 0 or bad_at[end - 1] != (bad_at[start - 1] if start else 0):
                damaged += 1
                continue
            found[bytes(digest)] = (flat[start:end], tokens)
        self.note_damaged(damaged)
        return found

    def note_damaged(self, count: int) -> None:
        """Say (in ``warnings``) that ``count`` stored vectors were damaged and are computed again."""
        if count:
            self.warnings.append(
                f"{wording.count(count, 'vector')} in the embedding cache {self.path} "
                f"{wording.plural(count, 'was', 'were')} damaged (wrong length or not numbers), so "
                f"{wording.plural(count, 'it was', 'they were')} computed again."
            )

    def try_put_many(self, key: CacheKey, items: list[tuple[bytes, np.ndarray, int]]) -> bool:
        """:meth:`put_many`, but a cache that cannot be written (locked by another program for longer
        than the timeout, a full disk) loses nothing: the caller keeps the vectors it just paid for,
        ``warnings`` says once that they were not saved, and this instance writes no more (each write
        would wait out the timeout again). Returns whether the items were stored."""
        if self.unwritable:
            return False
        try:
            self.put_many(key, items)
        except InputError as error:
            self.unwritable = True
            reason = str(error.__cause__ or "it cannot be opened")
            self.warnings.append(
                f"The embedding cache {self.path} could not be written ({reason}), so this run used its new "
                "embeddings without saving them and the next run computes them again; if this lasts, set "
                "COVERAGE_CORE_CACHE_DIR to another folder."
            )
            return False
        return True

    def has_many(self, key: CacheKey, hashes: Sequence[bytes]) -> set[bytes]:
        """The hashes among ``hashes`` that have a stored vector (vectors are not read)."""
        return {bytes(digest) for (digest,) in self._select("text_hash", key, hashes)}

    def put_many(self, key: CacheKey, items: Iterable[tuple[bytes, np.ndarray, int]]) -> None:
        """Store ``(hash, vector, token_count)`` items in one atomic transaction."""
        rows = [
            (key.provider, key.model, key.dimensions, digest, int(tokens), np.asarray(vector, dtype="<f4").tobytes())
            for digest, vector, tokens in items
        ]
        if not rows:
            return
        with closing(self._connect()) as connection, self._guard(), connection:
            connection.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)", rows)

    def count(self, key: CacheKey | None = None) -> int:
        """Number of stored vectors, for one model or in total."""
        with closing(self._connect()) as connection, self._guard():
            if key is None:
                return connection.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            return connection.execute(
                "SELECT COUNT(*) FROM embeddings WHERE provider=? AND model=? AND dimensions=?",
                (key.provider, key.model, key.dimensions),
            ).fetchone()[0]

    def clear(self, key: CacheKey | None = None) -> None:
        """Forget the vectors of one model, or everything."""
        with closing(self._connect()) as connection, self._guard(), connection:
            if key is None:
                connection.execute("DELETE FROM embeddings")
            else:
                connection.execute(
                    "DELETE FROM embeddings WHERE provider=? AND model=? AND dimensions=?",
                    (key.provider, key.model, key.dimensions),
                )


@dataclass
class EmbeddingRun:
    """Result of :func:`embed_texts`.

    Attributes:
        vectors: (n, d) float32, unit rows, in input order.
        token_counts: (n,) token count of each text (approximate for APIs).
        n_cached: input texts whose vector came from the cache.
        n_embedded: input texts whose vector was computed in this run
            (``n_cached + n_embedded == n``; repeats of a text are sent once).
        n_over_limit: input texts longer than the model's ``max_tokens``; the
            model only saw their beginning.
        new_tokens: tokens sent to the embedder in this run (what a paid
            provider bills; 0 when everything was cached).
    """

    vectors: np.ndarray
    token_counts: np.ndarray
    n_cached: int
    n_embedded: int
    n_over_limit: int
    new_tokens: int = 0


def uncached_texts(texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache | None) -> list[str]:
    """The distinct texts :func:`embed_texts` would send to ``embedder`` (in first-seen order)."""
    unique = list(dict.fromkeys(texts))
    if cache is None:
        return unique
    digests = [text_hash(text) for text in unique]
    known = cache.has_many(CacheKey.of(embedder), digests)
    return [text for text, digest in zip(unique, digests) if digest not in known]


def _completed_batches(
    embed: Callable[[list[str]], np.ndarray], requests: list[list[str]], concurrency: int
) -> Iterator[tuple[int, np.ndarray]]:
    """``(position, vectors)`` of each of ``requests`` as it completes, with up to ``concurrency`` in flight.

    Runs in the calling thread (which therefore does the cache writes: a
    SQLite connection must not cross threads); only ``embed`` runs in worker
    threads. Completion order may differ from ``requests`` order. After a
    failure no further request starts: the ones already in flight are waited
    for and yielded, since they are paid for, and then the first failure is
    raised. On Ctrl-C the ones already finished are yielded before it goes on.
    """
    if concurrency <= 1 or len(requests) <= 1:
        for position, texts in enumerate(requests):
            yield position, embed(texts)
        return
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(requests)), thread_name_prefix="embed")
    upcoming = iter(enumerate(requests))
    in_flight: dict[Future, int] = {}
    failure: BaseException | None = None

    def start_next() -> bool:
        position, texts = next(upcoming, (None, None))
        if position is None:
            return False
        in_flight[pool.submit(embed, texts)] = position
        return True

    try:
        while len(in_flight) < concurrency and start_next():
            pass
        while in_flight:
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=in_flight.__getitem__):
                position = in_flight.pop(future)
                error = future.exception()
                if error is not None:
                    failure = failure or error
                    continue
                yield position, future.result()
            while failure is None and len(in_flight) < concurrency and start_next():
                pass
        if failure is not None:
            raise failure
    except KeyboardInterrupt:
        for future, position in sorted(in_flight.items(), key=lambda item: item[1]):
            if future.done() and not future.cancelled() and future.exception() is None:
                yield position, future.result()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbeddingRun:
    """Vectors for ``texts``, taking what it can from ``cache``.

    Each distinct text is embedded at most once. Missing texts go to the
    embedder in batches (``embedder.batch_size`` texts, and at most
    ``embedder.max_batch_tokens`` tokens when the embedder sets it), up to
    ``embedder.max_concurrency`` batches at once (API embedders; the local
    model has none and runs one batch at a time). Each batch is written to
    the cache as soon as it returns, in this thread: if a batch fails with a
    :class:`ProviderError`, no new batch starts, the ones in flight are
    kept, and a re-run embeds only what is left. If everything is cached the
    embedder is never called, so its model is never loaded.
    ``progress(done, total)`` is called after the cache lookup and after
    every batch in the order they complete, counting input texts, so
    ``done`` only grows. The vectors come back row for row with ``texts``
    whatever the completion order.
    """
    texts = list(texts)
    total = len(texts)
    key = CacheKey.of(embedder)

    digests = [text_hash(text) for text in texts]
    unique: dict[bytes, int] = {}  # hash -> first input position
    for position, digest in enumerate(digests):
        unique.setdefault(digest, position)
    repeats = Counter(digests)

    known = cache.get_many(key, list(unique)) if cache is not None else {}
    if cache is not None:  # said now, so a run that fails later still tells it
        cache.note_damaged(drop_wrong_sizes(known, declared_size(embedder)))
    n_cached = sum(repeats[digest] for digest in known)
    if progress is not None:
        progress(n_cached, total)
    missing = [digest for digest in unique if digest not in known]
    new_tokens = 0
    if missing:
        new_tokens = _embed_missing(missing, texts, unique, embedder, cache, key, known, repeats,
                                    lambda done: progress(n_cached + done, total) if progress else None)
        # The vectors just made show the model's size: cached ones of another size are damaged too.
        stale = drop_wrong_sizes(known, len(known[missing[0]][0]))
        if stale:
            cache.note_damaged(stale)  # only cached vectors can be stale, so there is a cache
            n_cached = sum(repeats[digest] for digest in known) - sum(repeats[digest] for digest in missing)
            again = [digest for digest in unique if digest not in known]
            new_tokens += _embed_missing(again, texts, unique, embedder, cache, key, known, repeats, lambda _: None)
            if progress is not None:
                progress(total, total)
    return assemble_run(digests, known, embedder, key, n_cached, new_tokens)


def declared_size(embedder: Embedder) -> int | None:
    """The length ``embedder``'s vectors must have, when known without asking it: the ``dimensions`` it
    was given, else the registry's native size of an API model at its provider's own endpoint.

    None for the local models (a folder may hold any model) and for other
    servers (they answer with a size of their own).
    """
    if embedder.dimensions:
        return int(embedder.dimensions)
    from coverage_core.embeddings.registry import model_spec, sends_requests

    if getattr(embedder, "cache_tag", "") or not sends_requests(embedder.provider):
        return None
    entry = model_spec(embedder.provider, embedder.model)
    return entry.dimensions if entry is not None else None


def drop_wrong_sizes(known: dict[bytes, tuple[np.ndarray, int]], size: int | None) -> int:
    """Remove from ``known`` the vectors whose length is not ``size`` (None: the most common length);
    returns how many went. A cached vector of another length than its model's is damaged (or was
    written by something else under this key): used, it would fail the analysis or skew it."""
    if not known:
        return 0
    if size is None:
        size = Counter(len(vector) for vector, _ in known.values()).most_common(1)[0][0]
    wrong = [digest for digest, (vector, _) in known.items() if len(vector) != size]
    for digest in wrong:
        del known[digest]
    return len(wrong)


def _embed_missing(
    missing: list[bytes], texts: list[str], first_position: dict[bytes, int], embedder: Embedder,
    cache: "EmbeddingCache | None", key: CacheKey, known: dict, repeats: Counter, progress: Callable[[int], None],
) -> int:
    """Embed the texts of ``missing`` in planned batches, keeping each finished batch; returns the tokens paid.

    ``progress(done)`` counts the input texts finished so far (repeats
    included). A batch whose vectors do not match the request (another
    count, or another length than the batches before it) is the provider's
    error (``bad_response``): the batches before it stay kept.
    """
    missing_texts = [texts[first_position[digest]] for digest in missing]
    missing_tokens = [int(t) for t in embedder.count_tokens(missing_texts)]
    size = int(getattr(embedder, "batch_size", None) or 64)
    plan = plan_batches(missing_tokens, size, getattr(embedder, "max_batch_tokens", None))
    concurrency = int(getattr(embedder, "max_concurrency", None) or 1)
    requests = [[missing_texts[i] for i in batch] for batch in plan]
    done = new_tokens = 0
    width = None
    for position, vectors in _completed_batches(embedder.embed, requests, concurrency):
        batch = plan[position]
        vectors = unit_rows(np.asarray(vectors, dtype=np.float32))
        width = width or vectors.shape[1]
        if len(vectors) != len(batch) or vectors.shape[1] != width:
            raise ProviderError(
                f"{embedder.provider} returned {len(vectors)} vectors of {vectors.shape[1]} numbers for "
                f"{len(batch)} texts (vectors of {width} numbers expected); check the model and base URL, "
                "or try again later.",
                "bad_response",
            )
        items = [(missing[i], vector, missing_tokens[i]) for i, vector in zip(batch, vectors)]
        texts_done, tokens_paid = keep_batch(cache, key, items, known, repeats)
        done += texts_done
        new_tokens += tokens_paid
        progress(done)
    return new_tokens


def keep_batch(
    cache: "EmbeddingCache | None", key: "CacheKey", items: list, known: dict, repeats: dict[bytes, int]
) -> tuple[int, int]:
    """Store a finished batch's ``(digest, vector, tokens)`` items in ``cache`` at once (so a run stopped later
    keeps them) and in ``known``; returns the texts it finished (each digest counted ``repeats`` times) and its
    new tokens. A cache that cannot be written costs nothing paid for: ``known`` holds the items anyway
    (:meth:`EmbeddingCache.try_put_many`)."""
    if cache is not None:
        cache.try_put_many(key, items)
    texts_done = tokens_paid = 0
    for digest, vector, tokens in items:
        known[digest] = (vector, tokens)
        texts_done += repeats[digest]
        tokens_paid += tokens
    return texts_done, tokens_paid


def assemble_run(
    digests: Sequence[bytes],
    known: dict[bytes, tuple[np.ndarray, int]],
    embedder: Embedder,
    key: CacheKey,
    n_cached: int,
    new_tokens: int,
) -> EmbeddingRun:
    """The :class:`EmbeddingRun` for ``digests`` (input order) from the ``(vector, tokens)`` in ``known``:
    what :func:`embed_texts` and the Ray backend return once every text has its vector."""
    total = len(digests)
    if total == 0:
        vectors = np.zeros((0, 0), dtype=np.float32)
    else:
        sizes = {len(known[digest][0]) for digest in set(digests)}
        if len(sizes) != 1:
            raise RuntimeError(f"cached vectors for {key.provider}/{key.model} have mixed sizes {sorted(sizes)}")
        vectors = np.stack([known[digest][0] for digest in digests]).astype(np.float32, copy=False)
    token_counts = np.array([known[digest][1] for digest in digests], dtype=np.int64)
    return EmbeddingRun(
        vectors=vectors,
        token_counts=token_counts,
        n_cached=n_cached,
        n_embedded=total - n_cached,
        n_over_limit=int((token_counts > int(embedder.max_tokens)).sum()),
        new_tokens=new_tokens,
    )
