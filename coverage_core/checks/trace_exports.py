"""Query logs exported by tracing tools, read as traffic: which records are the users' questions, and their words.

Three documented export layouts are recognised by their fields (the first record decides):

* **Langfuse traces** (the blob-storage export's ``traces/`` files, JSON Lines, JSON or CSV): one record per
  trace, ``id``, ``timestamp``, ``input`` and ``project_id`` among its fields. Every trace is a query.
* **Langfuse observations** (``observations_v2/`` and the legacy ``observations/``): ``id``, ``trace_id``,
  ``start_time``, ``input``. Only root observations are queries: ``is_root_observation`` true, or no
  ``parent_observation_id``.
* **LangSmith runs** (the bulk export's Parquet files, or runs written as JSON Lines): ``id``, ``run_type``,
  ``start_time``, ``inputs``. Only root runs are queries: ``is_root`` true, or no ``parent_run_id``.

A record's input may be the question itself, an object holding it (``{"question": …}``, ``{"input": …}``)
or a chat (``{"messages": [{"role": "user", "content": …}, …]}``): the query is the last thing the user said
(:func:`user_text`). CSV exports write objects as JSON text, which is read back the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.inputs.memory import check_fits

__all__ = [
    "PARQUET_MAGIC", "TRACE_FORMATS", "TraceQueries", "detect_trace_format", "export_records", "parquet_records",
    "queries_frame", "trace_queries", "user_text",
]

TRACE_FORMATS = {
    "langfuse traces": ("Langfuse trace export", frozenset({"id", "timestamp", "input", "project_id"})),
    "langfuse observations": ("Langfuse observation export", frozenset({"id", "trace_id", "start_time", "input"})),
    "langsmith runs": ("LangSmith run export", frozenset({"id", "run_type", "start_time", "inputs"})),
}
"""Format name -> (its name in messages, the fields that tell it: all must be present)."""

TEXT_KEYS = ("question", "query", "input", "user_input", "user_query", "prompt", "text", "content", "message")
"""Keys of an input object that hold the user's words, in the order they are tried."""

USER_ROLES = frozenset({"user", "human"})
_MAX_DEPTH = 6  # an input nests a chat in an object in an object at most; deeper is not a query


@dataclass(frozen=True)
class TraceQueries:
    """The queries of a trace export: one ``{"query": …, "timestamp": …}`` row per root record with words,
    how many child records were left out (spans inside a trace), and how many roots held no text."""

    format_label: str
    rows: list[dict[str, str]]
    n_children: int
    n_without_text: int


def detect_trace_format(record: Any) -> str | None:
    """The :data:`TRACE_FORMATS` name whose fields ``record`` (a mapping) all has; None for any other log."""
    if not isinstance(record, Mapping):
        return None
    keys = set(map(str, record))
    for name, (_, fields) in TRACE_FORMATS.items():
        if fields <= keys:
            return name
    return None


def user_text(value: Any, depth: int = 0) -> str | None:
    """The user's words in an input value: a string as it is (or, when it is JSON text, what it holds); in
    a chat, the last user message; in an object, the first of :data:`TEXT_KEYS` that holds text. None when
    there are none."""
    if depth > _MAX_DEPTH or value is None:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and depth == 0:
            try:
                return user_text(json.loads(stripped), depth + 1)
            except (ValueError, RecursionError):
                return stripped or None
        return stripped or None
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            return _last_user_message(value["messages"], depth)
        for key in TEXT_KEYS:
            if key in value and (text := user_text(value[key], depth + 1)):
                return text
        return None
    if isinstance(value, list):
        return _last_user_message(value, depth)
    return None


def _last_user_message(messages: list, depth: int) -> str | None:
    """The content of the last message a user wrote (``role`` user or human, or LangChain's ``type`` human);
    parts of type text are joined."""
    for message in reversed(messages):
        if isinstance(message, Mapping) and str(message.get("role", message.get("type", ""))).lower() in USER_ROLES:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(part.get("text", "") for part in content
                                   if isinstance(part, Mapping) and isinstance(part.get("text"), str))
            return user_text(content, depth + 1)
    return None


def _is_root(record: Mapping, format_name: str) -> bool:
    if format_name == "langfuse traces":
        return True
    flag, parent = (("is_root_observation", "parent_observation_id") if format_name == "langfuse observations"
                    else ("is_root", "parent_run_id"))
    if isinstance(record.get(flag), bool):
        return record[flag]
    return record.get(parent) in (None, "")


def trace_queries(records: Iterable[Mapping], format_name: str) -> TraceQueries:
    """The root records' queries and times (see the module docstring); records that are no mapping are skipped
    as children are not: they count as roots without text."""
    label, _ = TRACE_FORMATS[format_name]
    text_key = "inputs" if format_name == "langsmith runs" else "input"
    time_key = "timestamp" if format_name == "langfuse traces" else "start_time"
    rows, n_children, n_without_text = [], 0, 0
    for record in records:
        if not isinstance(record, Mapping):
            n_without_text += 1
            continue
        if not _is_root(record, format_name):
            n_children += 1
            continue
        text = user_text(record.get(text_key))
        if not text:
            n_without_text += 1
            continue
        when = record.get(time_key)
        rows.append({"query": text, "timestamp": "" if when is None else str(when)})
    return TraceQueries(label, rows, n_children, n_without_text)


PARQUET_MAGIC = b"PAR1"


def parquet_records(data: bytes, name: str, max_rows: int) -> list[dict]:
    """The rows of a Parquet file as records, its declared size checked against the row limit and the memory
    budget before anything is read."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        rows = parquet.metadata.num_rows
        size = sum(parquet.metadata.row_group(i).total_byte_size for i in range(parquet.metadata.num_row_groups))
    except (pa.ArrowException, OSError, ValueError):
        raise InputError(f"The Parquet file {name} cannot be read (it is damaged or not Parquet); export it "
                         "again.") from None
    if rows > max_rows:
        raise InputError(f"The query log {name} has {rows:,} rows, over the {max_rows:,} limit; export a "
                         "shorter period.")
    check_fits(3 * size, f"The {rows:,} rows of {name}")
    try:
        return parquet.read().to_pylist()
    except (pa.ArrowException, OSError, ValueError):
        raise InputError(f"The Parquet file {name} cannot be read (it is damaged); export it again.") from None


def export_records(text: str) -> list | None:
    """The records of a JSON Lines or JSON-array export when its first record is a tracing tool's
    (:func:`detect_trace_format`); None for any other log. Lines that are
    no JSON are left for the count of roots without text."""
    stripped = text.lstrip()
    if stripped[:1] == "[":
        try:
            records = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        return records if isinstance(records, list) and records and detect_trace_format(records[0]) else None
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    try:
        first = json.loads(first_line)
    except (ValueError, RecursionError):
        return None
    if detect_trace_format(first) is None:
        return None
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except (ValueError, RecursionError):
                records.append(None)
    return records


def queries_frame(records: list, format_name: str, name: str, warnings: list[str]) -> pd.DataFrame:
    """The ``query`` and ``timestamp`` table of a trace export's root records, with what was left out said."""
    found = trace_queries(records, format_name)
    if not found.rows:
        raise InputError(f"{name} looks like a {found.format_label} but none of its root records holds a user's "
                         "question in its input; export the traces of the application's entry point.")
    left = []
    if found.n_children:
        left.append(f"{wording.count(found.n_children, 'record')} inside a trace (not a user's question)")
    if found.n_without_text:
        left.append(f"{wording.count(found.n_without_text, 'root record')} without a question in its input")
    warnings.append(f"Read {name} as a {found.format_label}: {wording.count(len(found.rows), 'query', 'queries')}"
                    + (f"; left out {' and '.join(left)}." if left else "."))
    return pd.DataFrame(found.rows, columns=["query", "timestamp"])
