"""The bundled writer's replies on disk, so a re-run of the same analysis writes nothing again.

The bundled model answers one request with one seed the same way every
time, so its reply to a request is kept under the request: the model
(:attr:`~coverage_core.suggest.local_model.LocalChatClient.identity`: its
weights file and runtime, not a server address), the system and user
prompts (the user prompt holds the passage text), the worked example, the
seed, the temperature and the reply length. The keep rule
(:mod:`coverage_core.suggest.writing`) runs again on every reply read
back, so a change of the rule or of the support level needs no new
writing. Written questions live beside the embeddings, in the folder of the
:class:`~coverage_core.embeddings.cache.EmbeddingCache` (same conventions:
``$COVERAGE_CORE_CACHE_DIR``, one SQLite file in WAL mode, a new connection
per operation); only hashes of the requests are stored, with the replies,
never an API key (the bundled server's key is made anew per process and is
no part of a request).

A cache that cannot be read or written costs time, never a run: the reply
is asked of the model, and :attr:`ReplyCache.warnings` says once why it was
not kept.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from coverage_core.embeddings.cache import default_cache_dir

__all__ = ["REPLY_CACHE_FILE_NAME", "ReplyCache", "request_key"]

REPLY_CACHE_FILE_NAME = "written_questions.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    request BLOB PRIMARY KEY,  -- sha256 of the request (request_key)
    reply   TEXT NOT NULL
) WITHOUT ROWID
"""


def request_key(identity: str, system: str, user: str, *, max_tokens: int, temperature: float | None,
                seed: int | None, examples: Sequence[tuple[str, str]] = ()) -> bytes:
    """sha256 of everything that decides the bundled model's reply to one request."""
    request = [identity, system, user, int(max_tokens), temperature, seed, [list(pair) for pair in examples]]
    return hashlib.sha256(json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")).digest()


class ReplyCache:
    """Replies by :func:`request_key`, in ``directory`` (None: :func:`default_cache_dir`).

    ``get`` returns None for a request not seen (or when the file cannot be
    read); ``put`` keeps a reply, or gives up quietly but for one sentence in
    ``warnings`` (a locked or damaged file, a full disk).
    """

    lock_timeout = 10.0
    """Seconds to wait for another program's write: a reply costs about a second to write again."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.path = self.directory / REPLY_CACHE_FILE_NAME
        self.warnings: list[str] = []
        self._broken = False
        self._ready = False

    def __repr__(self) -> str:
        return f"ReplyCache(directory={str(self.directory)!r})"

    def _connect(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=self.lock_timeout, check_same_thread=False)
        if not self._ready:  # the mode is stored in the file: once per instance is enough
            try:
                with connection:
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.execute(_SCHEMA)
            except BaseException:
                connection.close()
                raise
            self._ready = True
        return connection

    def _give_up(self, error: Exception) -> None:
        if not self._broken:
            self._broken = True
            self.warnings.append(
                f"The written-question cache {self.path} could not be used ({error}), so questions were written "
                "again and not kept for the next run; delete the file or set COVERAGE_CORE_CACHE_DIR to another folder."
            )

    def get(self, key: bytes) -> str | None:
        if self._broken:
            return None
        try:
            with closing(self._connect()) as connection:
                row = connection.execute("SELECT reply FROM replies WHERE request=?", (key,)).fetchone()
        except (sqlite3.Error, OSError) as error:
            self._give_up(error)
            return None
        return row[0] if row and isinstance(row[0], str) else None

    def put(self, key: bytes, reply: str) -> None:
        if self._broken:
            return
        try:
            with closing(self._connect()) as connection, connection:
                connection.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, str(reply)))
        except (sqlite3.Error, OSError) as error:
            self._give_up(error)

    def count(self) -> int:
        """Replies stored (0 when the file cannot be read)."""
        try:
            with closing(self._connect()) as connection:
                return int(connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
        except (sqlite3.Error, OSError):
            return 0
