"""Where the history is and how it is named: its environment variables, default file, labels, and the
redacted form every message shows. No database code, so the command line reads these without loading
SQLAlchemy (:mod:`coverage_core.history.store` opens the store)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from coverage_core.errors import InputError

__all__ = [
    "CHOSEN_FILE_SUFFIXES",
    "CONNINFO_REFUSAL",
    "DEFAULT_HISTORY_FILE",
    "HISTORY_ENV",
    "LABEL_MAX_CHARS",
    "RECORD_ENV",
    "check_chosen_history",
    "checked_label",
    "default_history_target",
    "history_file",
    "is_conninfo",
    "is_url",
    "redact_history_url",
]

HISTORY_ENV = "COVERAGE_HISTORY"
RECORD_ENV = "COVERAGE_RECORD"
DEFAULT_HISTORY_FILE = ".coverage-history.sqlite"
LABEL_MAX_CHARS = 200
"""Longest run label: a branch, a commit or a release name, never a text."""

CHOSEN_FILE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
"""What a history file chosen in the dashboard may be called."""

_SQLITE_URL = re.compile(r"^sqlite(?:\+\w+)?:///(.+)$")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_SECRET_QUERY = re.compile(r"([?&;](?:password|passwd|pwd|sslpassword|secret|token|api_key|key)=)[^&;#]*",
                           re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# libpq's connection keywords (PostgreSQL 17): "host=db user=u password=p dbname=x" is a connection string.
_CONNINFO_KEYWORDS = frozenset("""
    host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout client_encoding
    options application_name fallback_application_name keepalives keepalives_idle keepalives_interval
    keepalives_count tcp_user_timeout replication gssencmode sslmode requiressl sslnegotiation sslcompression
    sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer ssl_min_protocol_version
    ssl_max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs load_balance_hosts
""".split())
_CONNINFO_START = re.compile(r"^\s*([A-Za-z_]+)\s*=")
# A password value as libpq reads it: quoted ('…', with \' and \\ escapes; unclosed: to the end) or up to a blank.
_CONNINFO_PASSWORD = re.compile(r"((?:^|(?<=\s))(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*(?:'|$)|(?:[^\s\\]|\\.)*)",
                                re.IGNORECASE | re.DOTALL)

CONNINFO_REFUSAL = ("The history location is a PostgreSQL keyword string (host=… dbname=…); give it as a URL instead, "
                    "such as postgresql://user:PASSWORD@host:5432/dbname.")
"""What a keyword string is answered with: it names neither a file nor a URL, and repeating it would show its
password."""


def default_history_target(env: Mapping[str, str] = os.environ) -> str:
    """``COVERAGE_HISTORY`` when set, else ``.coverage-history.sqlite`` in the working directory."""
    return (env.get(HISTORY_ENV) or "").strip() or DEFAULT_HISTORY_FILE


def is_url(target: str | os.PathLike) -> bool:
    """Whether ``target`` is a URL (``scheme://…``) rather than a file path."""
    return bool(_URL_SCHEME.match(os.fspath(target)))


def is_conninfo(target: str | os.PathLike) -> bool:
    """Whether ``target`` is a libpq keyword/value connection string (``host=db dbname=x password=…``): not a URL,
    and it starts with a libpq keyword and ``=``, or holds a ``password=`` word."""
    text = os.fspath(target)
    if is_url(text):
        return False
    start = _CONNINFO_START.match(text)
    return bool(start and start[1].lower() in _CONNINFO_KEYWORDS) or bool(_CONNINFO_PASSWORD.search(text))


def redact_history_url(target: str | os.PathLike) -> str:
    """``target`` with its password (and any password-like query value) replaced by ``***``; a path unchanged.

    Masked by position, never by searching the password elsewhere (a one-letter password would mask every such
    letter). In a URL everything up to the last ``@`` is taken as credentials, so a password holding ``/`` or ``@``
    cannot leak half-parsed; the user name before the first ``:`` is kept (it says which account, and is no
    secret). In a libpq keyword string (:func:`is_conninfo`) each ``password=`` value is masked.
    """
    text = os.fspath(target)
    scheme = _URL_SCHEME.match(text)
    if not scheme:
        return _CONNINFO_PASSWORD.sub(r"\1***", text)
    head, rest = text[: scheme.end()], text[scheme.end():]
    if "@" in rest:
        credentials, _, host = rest.rpartition("@")
        user, has_password, _ = credentials.partition(":")
        if "/" in user or "?" in user:  # not a user name: a path or query holding "@"; hide all of it
            rest = "***@" + host
        else:
            rest = user + (":***" if has_password else "") + "@" + host
    return head + _SECRET_QUERY.sub(r"\1***", rest)


def checked_label(label: str, named_by: str = "A run label") -> str:
    """``label`` without surrounding blanks; InputError when empty, longer than ``LABEL_MAX_CHARS`` or not one line."""
    label = label.strip()
    if not label:
        raise InputError(f"{named_by} is empty; name a branch, a commit or a release to record the run under.")
    if _CONTROL.search(label) or len(label) > LABEL_MAX_CHARS:
        raise InputError(f"{named_by} must be one line of at most {LABEL_MAX_CHARS} characters, such as a branch, "
                         "a commit or a release name.")
    return label


def history_file(target: str) -> str | None:
    """The file a target names (a plain path, or a ``sqlite:///`` URL); None for a server (a URL or a libpq keyword
    string) or memory."""
    found = _SQLITE_URL.match(target)
    if found:
        path = found[1].split("?", 1)[0]
        return None if path in ("", ":memory:") else path
    return None if is_url(target) or is_conninfo(target) else target


def check_chosen_history(target: str, folders: Sequence[str | os.PathLike]) -> None:
    """InputError unless ``target``, a history a dashboard user typed, is a server URL or a file named
    ``*.sqlite``, ``*.sqlite3`` or ``*.db`` inside one of ``folders`` (links resolved).

    The dashboard runs as the server's user for everyone who can open it: a typed path must not make it
    create or read files anywhere else on the server.
    """
    path = history_file(target)
    if path is None:
        if target.lower().startswith("sqlite"):
            raise InputError("An in-memory history keeps nothing; give a file name such as "
                             f"{DEFAULT_HISTORY_FILE}.")
        return
    resolved = Path(path).expanduser().resolve()
    roots = [Path(folder).expanduser().resolve() for folder in folders]
    if resolved.suffix.lower() not in CHOSEN_FILE_SUFFIXES or not any(resolved.is_relative_to(r) for r in roots):
        where = " or ".join(str(r) for r in roots)
        raise InputError(f"A history file chosen here must end in {', '.join(CHOSEN_FILE_SUFFIXES)} and be inside "
                         f"{where}; choose such a file, or ask the operator to set {HISTORY_ENV}.")
