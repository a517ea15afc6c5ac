"""Query logs: a file of production queries, or a connector's rows, read into a :class:`TrafficLog`.

:func:`read_traffic` reads a CSV/TSV or JSON Lines log, or a Langfuse or
LangSmith trace export (:mod:`~coverage_core.checks.trace_exports`);
:func:`traffic_log` turns any table of queries (a connector's rows too) into
the log :mod:`coverage_core.checks.traffic` measures: personal data masked
(:mod:`coverage_core.checks.personal_data`) before anything stores or shows a
query, repeats merged with their counts summed exactly, weekly counts when
the log has times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.bounded_json import clean_text
from coverage_core.checks import traffic_documents
from coverage_core.checks.personal_data import mask_personal_data
from coverage_core.checks.trace_exports import (
    PARQUET_MAGIC,
    detect_trace_format,
    export_records,
    parquet_records,
    queries_frame,
)
from coverage_core.errors import InputError
from coverage_core.inputs.files import DEFAULT_MAX_FILE_BYTES, read_user_file
from coverage_core.inputs.questions import read_table
from coverage_core.validation import find_column, listed_columns

QUERY_COLUMN_NAMES = ("query", "queries", "question", "user_query", "search_query", "prompt", "message", "input",
                      "text", "utterance")
"""Column names taken for the query text, in order of preference (case and spacing ignored)."""

COUNT_COLUMN_NAMES = ("count", "counts", "n", "frequency", "freq", "hits", "volume", "occurrences", "times")
TIME_COLUMN_NAMES = ("timestamp", "time", "date", "datetime", "created_at", "created", "ts", "asked_at")

MAX_LOG_BYTES = DEFAULT_MAX_FILE_BYTES
"""Largest query log read (the limit of every input file)."""

MAX_LOG_ROWS = 2_000_000
"""Lines a query log may have at most: merged repeats keep a count column far shorter, and each line costs
memory long before it is embedded."""

MAX_COUNT = 10**12
"""The most times one row may say its query was asked (a trillion, far beyond any real log). With at most
:data:`MAX_LOG_ROWS` rows the total stays below 2**63, so sums are exact int64 with no wraparound."""

MAX_QUERY_CHARS = 4000
"""Characters of a query kept; a longer one is cut there (it is a document pasted in, not a question)."""

LOG_DATES = ("1990-01-01", "2100-01-01")
"""Timestamps outside this range (year 1, year 9999, an epoch counted wrong) are not read as dates."""

@dataclass(frozen=True)
class TrafficLog:
    """A query log with repeats merged: ``queries[i]`` (masked) was asked ``counts[i]`` times.

    ``weekly`` (None without timestamps) has one row per (query, week):
    ``query`` (index into ``queries``), ``week`` (Monday, as a date) and
    ``count``. ``n_rows`` is the log's usable rows; ``warnings`` are plain
    sentences about what was skipped. ``retrieved`` (None when the log records no retrieval) is what
    production retrieval returned for each query (:mod:`~coverage_core.checks.traffic_documents`).
    """

    name: str
    queries: list[str]
    counts: np.ndarray
    n_rows: int
    weekly: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    retrieved: traffic_documents.RetrievedDocuments | None = None

    @property
    def n_queries(self) -> int:
        """Queries asked in all, counting repeats."""
        return int(self.counts.sum())

    @property
    def n_distinct(self) -> int:
        return len(self.queries)


def _read_jsonl(text: str, name: str) -> tuple[pd.DataFrame, int, int]:
    """(records, lines that are no JSON object, values that are objects or lists rather than text).

    Numbers stay as written (``parse_int``/``parse_float`` keep the text), so a count of ``1e400`` or a
    4,300-digit integer is judged by the count rules instead of failing the line; a line nested too deep
    for the parser (RecursionError) is one bad line.
    """
    records, n_bad, n_nested = [], 0, 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line, parse_int=str, parse_float=str, parse_constant=str)
        except (ValueError, RecursionError):
            n_bad += 1
            continue
        if isinstance(record, dict):
            row = {}
            for key, value in record.items():
                if isinstance(value, (dict, list)):  # its text would be a structure, not a query
                    n_nested += 1
                    value = None
                # A lone surrogate ("\ud800" is valid JSON) would fail later, when the text is hashed.
                row[clean_text(str(key))] = clean_text(value) if isinstance(value, str) else value
            records.append(row)
        elif isinstance(record, str):
            records.append({"query": clean_text(record)})
        else:
            n_bad += 1
    if not records:
        raise InputError(f"The query log {name} has no JSON object per line; write one object such as "
                         '{"query": "…", "count": 3} per line, or use a CSV file.')
    return pd.DataFrame.from_records(records), n_bad, n_nested


def _is_jsonl(name: str, data: bytes) -> bool:
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return True
    return suffix not in (".csv", ".tsv", ".txt") and data.lstrip()[:1] == b"{"


def read_traffic(
    source: str | Path | bytes,
    name: str | None = None,
    *,
    query_column: str | None = None,
    count_column: str | None = None,
    time_column: str | None = None,
) -> TrafficLog:
    """Read a query log (CSV/TSV, or JSON Lines) into a :class:`TrafficLog`; a Langfuse or LangSmith trace
    export (JSON Lines, JSON, CSV or Parquet) gives its root records' user questions and times
    (:mod:`~coverage_core.checks.trace_exports`). The columns are read by :func:`traffic_log`'s rules.

    Raises InputError when ``source`` is no regular file of at most :data:`MAX_LOG_BYTES` and
    :data:`MAX_LOG_ROWS` lines (a device, FIFO or folder), cannot be read, or holds no usable query.
    """
    name, data = _log_bytes(source, name)
    warnings: list[str] = []
    frame = _log_frame(name, data, warnings)
    return traffic_log(frame, name, warnings, query_column=query_column, count_column=count_column,
                       time_column=time_column)


def traffic_log(frame: pd.DataFrame, name: str, warnings: list[str], *, query_column: str | None = None,
                count_column: str | None = None, time_column: str | None = None,
                documents_column: str | None = None) -> TrafficLog:
    """The :class:`TrafficLog` of a log's table (a file's, or a connector's rows).

    The query column is ``query_column`` or detected (:data:`QUERY_COLUMN_NAMES`; a table of one column is
    its queries); a count column (:data:`COUNT_COLUMN_NAMES`) and a timestamp column
    (:data:`TIME_COLUMN_NAMES`) are optional. Queries are masked
    (:func:`~coverage_core.checks.personal_data.mask_personal_data`: nothing after this sees them raw), then
    repeats merged (case and spacing ignored; the first spelling is kept) with their counts summed exactly.
    ``documents_column`` holds each row's retrieved documents (a list of names), gathered into
    :attr:`TrafficLog.retrieved`. ``warnings`` holds what reading said so far and is added to.

    Skipped with a counted warning, the rest still read: blank queries, counts that are words, inf, nan or
    below 1, counts above :data:`MAX_COUNT`, JSON lines that are no object or nest too deep to parse, and
    objects or lists where text belongs (read as empty). Queries longer than :data:`MAX_QUERY_CHARS` are cut;
    timestamps outside :data:`LOG_DATES` or unreadable count in the totals but not the weekly figures; mixed
    time zones are read as UTC. Raises InputError when no row is usable.
    """
    columns = [str(c) for c in frame.columns if c != documents_column]
    query = _column(columns, query_column, QUERY_COLUMN_NAMES, name, "query")
    if query is None:
        if len(columns) == 1:
            query = columns[0]
        else:
            raise InputError(f"No query column found in {name} (columns: {listed_columns(columns)}); "
                             "name the column holding the queries 'query'.")
    count = _column(columns, count_column, COUNT_COLUMN_NAMES, name, "count")
    when = _column(columns, time_column, TIME_COLUMN_NAMES, name, "timestamp")
    texts, counts, keep = _usable_rows(frame, query, count, name, warnings)

    long = texts[keep].str.len() > MAX_QUERY_CHARS
    if long.any():
        warnings.append(f"{int(long.sum())} query(ies) longer than {MAX_QUERY_CHARS:,} characters were cut to "
                        f"their first {MAX_QUERY_CHARS:,}.")
    masked = texts[keep].str.slice(0, MAX_QUERY_CHARS).map(mask_personal_data)
    keys = masked.str.casefold().str.split().str.join(" ")
    codes, uniques = pd.factorize(keys, sort=False)
    first = pd.Series(masked.to_numpy()).groupby(codes).first()
    # Exact int64 sums: every count is ≤ MAX_COUNT and rows ≤ MAX_LOG_ROWS, so no total can wrap around.
    merged = pd.Series(counts[keep].to_numpy(dtype=np.int64)).groupby(codes).sum().to_numpy(dtype=np.int64)
    weekly = None if when is None else _weekly_counts(frame, keep, when, codes, counts, warnings)
    retrieved = None if documents_column is None else traffic_documents.retrieved_documents(
        frame.loc[keep, documents_column], codes, counts[keep])
    return TrafficLog(
        name=name,
        queries=first.tolist(),
        counts=merged,
        n_rows=int(keep.sum()),
        weekly=weekly,
        warnings=warnings,
        retrieved=retrieved,
    )


def _log_bytes(source: str | Path | bytes, name: str | None) -> tuple[str, bytes]:
    """(name, content) of a query log; InputError if it cannot be read or is empty."""
    if isinstance(source, (bytes, bytearray)):
        name, data = name or "queries", bytes(source)
        if len(data) > MAX_LOG_BYTES:
            raise InputError(f"The query log {name} is {len(data) / 1024**2:,.0f} MB, over the "
                             f"{MAX_LOG_BYTES / 1024**2:,.0f} MB limit; merge repeated queries into a count "
                             "column or keep a sample.")
    else:
        path = Path(source)
        name = name or path.name
        # Regular files only, size checked first: /dev/zero or a FIFO would never end or never answer.
        data = read_user_file(path, "query log", MAX_LOG_BYTES)
    if not data.strip():
        raise InputError(f"The query log {name} is empty; add one query per row.")
    lines = data.count(b"\n") + 1
    if lines > MAX_LOG_ROWS:
        raise InputError(f"The query log {name} has {lines:,} lines, over the {MAX_LOG_ROWS:,} limit; merge "
                         "repeated queries into a count column or keep a sample.")
    return name, data


def _log_frame(name: str, data: bytes, warnings: list[str]) -> pd.DataFrame:
    """The log as a table of text cells, from JSON Lines or a CSV/TSV table, or the queries of a tracing
    tool's export (:mod:`~coverage_core.checks.trace_exports`: Langfuse or LangSmith, Parquet included)."""
    if data[:4] == PARQUET_MAGIC:
        records = parquet_records(data, name, MAX_LOG_ROWS)
        format_name = detect_trace_format(records[0] if records else None)
        if format_name is None:
            raise InputError(f"The Parquet file {name} is not a LangSmith or Langfuse export (its columns lack "
                             "inputs and run_type, or input and trace_id); give a CSV or JSON Lines query log.")
        return queries_frame(records, format_name, name, warnings)
    if not _is_jsonl(name, data):
        frame = read_table(data, name)
        format_name = detect_trace_format(dict.fromkeys(map(str, frame.columns)))
        if format_name is not None:
            return queries_frame(frame.to_dict("records"), format_name, name, warnings)
        return frame
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    records = export_records(text)
    if records is not None:
        return queries_frame(records, detect_trace_format(records[0]), name, warnings)
    frame, n_bad, n_nested = _read_jsonl(text, name)
    if n_bad:
        what = wording.plural(n_bad, "is not a JSON object and was", "are not JSON objects and were")
        warnings.append(f"{wording.count(n_bad, 'line')} of {name} {what} skipped.")
    if n_nested:
        what = wording.plural(n_nested, "is a JSON object or list, not text, and was",
                              "are JSON objects or lists, not text, and were")
        warnings.append(f"{wording.count(n_nested, 'value')} in {name} {what} read as empty.")
    frame = frame.astype(object).where(frame.notna(), "")
    return frame.map(lambda v: v if isinstance(v, str) else str(v))


def _usable_rows(
    frame: pd.DataFrame, query: str, count: str | None, name: str, warnings: list[str]
) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(stripped query texts, count of each row, rows kept): blank queries and bad counts are skipped."""
    texts = frame[query].astype(str).str.strip()
    counts = pd.Series(1, index=frame.index, dtype="int64")
    keep = texts != ""
    n_blank = int((~keep).sum())
    if n_blank:
        warnings.append(f"{wording.count(n_blank, 'row')} with an empty query {wording.plural(n_blank, 'was', 'were')} skipped.")
    if count is not None:
        cells = frame[count].astype(str).str.replace(",", "").str.strip()
        parsed = cells.mask(cells == "", "1").map(_count_value).astype(np.float64)  # no count: asked once
        bad = keep & (parsed.isna() | (parsed < 1))
        if bad.any():
            warnings.append(f"{_rows_have(int(bad.sum()))} a '{count}' that is not a whole number of at least 1 "
                            f"and {wording.plural(int(bad.sum()), 'was', 'were')} skipped.")
        huge = keep & ~bad & (parsed > MAX_COUNT)
        if huge.any():
            warnings.append(f"{_rows_have(int(huge.sum()))} a '{count}' above {MAX_COUNT:,}, more than any real log "
                            f"holds, and {wording.plural(int(huge.sum()), 'was', 'were')} skipped.")
        keep &= ~bad & ~huge
        counts = parsed.where(keep, 0).round().astype("int64")
    if not keep.any():
        raise InputError(f"The query log {name} has no usable query; fill in the '{query}' column.")
    return texts, counts, keep


def _rows_have(n: int) -> str:
    """"1 row has" / "3 rows have": how the log's warnings about rows begin."""
    return f"{wording.count(n, 'row')} {wording.plural(n, 'has', 'have')}"


def _count_value(cell: str) -> float:
    """The number a count cell holds: NaN for words, "inf" and "nan", +inf for digits beyond float64 (then
    refused as above :data:`MAX_COUNT`). float64 is exact for every count kept (≤ MAX_COUNT < 2**53) and
    never wraps around, unlike int64."""
    try:
        value = float(cell)
    except (ValueError, OverflowError):
        return float("nan")
    if np.isfinite(value) or (value > 0 and any(c.isdigit() for c in cell)):
        return value
    return float("nan")


def _weekly_counts(
    frame: pd.DataFrame, keep: pd.Series, when: str, codes: np.ndarray, counts: pd.Series, warnings: list[str]
) -> pd.DataFrame | None:
    """Counts per merged query and week (weeks start on Monday); None when no row has a date."""
    cells = frame.loc[keep, when].astype(str)
    try:  # mixed time zones are read as UTC
        stamps = pd.to_datetime(cells, errors="coerce", utc=True, format="mixed")
    except (ValueError, OverflowError, TypeError):
        stamps = pd.Series(pd.NaT, index=cells.index, dtype="datetime64[ns, UTC]")
    if stamps.isna().any():
        warnings.append(f"{_rows_have(int(stamps.isna().sum()))} a '{when}' that is not a date; they count in the "
                        "totals but not in the weekly figures.")
    outside = stamps.notna() & ((stamps < pd.Timestamp(LOG_DATES[0], tz="UTC"))
                                | (stamps >= pd.Timestamp(LOG_DATES[1], tz="UTC")))
    if outside.any():
        warnings.append(f"{_rows_have(int(outside.sum()))} a '{when}' before {LOG_DATES[0][:4]} or from "
                        f"{LOG_DATES[1][:4]} on; they count in the totals but not in the weekly figures.")
        stamps = stamps.mask(outside)
    dated = stamps.notna().to_numpy()
    if not dated.any():
        return None
    week = (stamps[dated].dt.tz_localize(None).dt.to_period("W-SUN").dt.start_time.dt.date)
    return (
        pd.DataFrame({"query": codes[dated], "week": week.to_numpy(), "count": counts[keep].to_numpy()[dated]})
        .groupby(["query", "week"], as_index=False)["count"].sum()
    )


def _column(columns: list[str], wanted: str | None, names: Sequence[str], source: str, what: str) -> str | None:
    if wanted:
        if wanted not in columns:
            raise InputError(f"The query log {source} has no column '{wanted}' (columns: {listed_columns(columns)}); "
                             f"choose its {what} column from those.")
        return wanted
    return find_column(columns, names)
