"""Production traffic: does the test set test what users actually ask?

A query log (the questions a RAG application received) is the third input,
beside the knowledge base and the test set. This module reads it, masks
personal data and secrets (:mod:`coverage_core.checks.personal_data`, before
anything stores or shows a query), merges repeated queries and measures,
weighted by how often
each query was asked:

* **tested**: some (on-topic) test question matches the query: cosine
  similarity ≥ τ + (1 − τ) / 4 (:func:`query_match_threshold`). Two
  questions share their form ("What is …?", "Was … born in …?"), so their
  similarity runs higher than a question's to a passage; at τ itself a test
  about the piano "covered" queries about the violin and the tested share
  came out up to 0.15 above the truth on wiki-qa (``benchmarks/eval_traffic.py``).
  A query is matched to questions, not to the passages they test
  (:func:`coverage_core.metrics.retrieved_tested_chunks`): "its top passage
  at ≥ τ is a tested passage" erred by up to 0.087 (mean −0.048) on that
  benchmark's seeds 10-19, this rule by up to 0.036, as a passage tested by
  one question does not test every query it answers;
* **answerable**: the off-topic screener does not flag it, the rule the
  test questions are judged by (at the questions' support level
  ``Calibration.question_support_threshold``, with the word and subject
  checks; :mod:`coverage_core.checks.traffic_answers`). Queries without an
  answer are **no answer in the documents**: one group of their own
  (:class:`UnansweredDemand`, volume, share, most asked), whatever they are
  about, never spread over the answerable topics (a gap in the documents,
  not in the tests; unmet demand when frequent, :func:`is_unmet_demand`);
* **topics** of the answerable traffic (K-means weighted by count), ranked by
  ``volume × (1 − tested share)``: most asked, least tested first; named
  as Results names the knowledge-base topic that answers at least half of
  a topic's traffic (two names joined by " + " when none does; two topics of
  one name are told apart by their own words:
  :func:`~coverage_core.checks.traffic_topics.knowledge_base_topics`), or,
  without the knowledge base's topics, from the queries without their
  anonymisation placeholders (:func:`~coverage_core.checks.traffic_answers.strip_masks`);
* **tests nobody needs**: test questions no query comes near (a drift signal);
* **suggestions**: untested real queries, as candidate test questions with
  origin ``"traffic"``, in the knowledge-base topic of the passage that
  answers them; the most asked unanswered queries too, with no topic and the
  note :data:`NO_ANSWER`;
* **by week**, when the log has timestamps.

Nothing here embeds: the caller passes the vectors (``pipeline.run_traffic_check``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from coverage_core import wording
from coverage_core.bounded_json import clean_text
from coverage_core.checks.personal_data import mask_personal_data
from coverage_core.checks.trace_exports import (
    PARQUET_MAGIC,
    detect_trace_format,
    export_records,
    parquet_records,
    queries_frame,
)
from coverage_core.checks.traffic_answers import NO_ANSWER, query_answers, strip_masks
from coverage_core.checks.traffic_topics import distinct_names, knowledge_base_names, knowledge_base_topics
from coverage_core.errors import InputError
from coverage_core.inputs.files import DEFAULT_MAX_FILE_BYTES, read_user_file
from coverage_core.inputs.questions import read_table
from coverage_core.languages import LanguageProfile, LanguageShare
from coverage_core.stages.clustering import default_n_clusters
from coverage_core.stages.topics import topic_labels
from coverage_core.suggest.questions import Suggestion
from coverage_core.validation import find_column, listed_columns, shorten, unit_rows
from coverage_core.verdicts import cross_language_problem, is_unmet_demand, is_untested_topic

QUERY_COLUMN_NAMES = ("query", "queries", "question", "user_query", "search_query", "prompt", "message", "input",
                      "text", "utterance")
"""Column names taken for the query text, in order of preference (case and spacing ignored)."""

COUNT_COLUMN_NAMES = ("count", "counts", "n", "frequency", "freq", "hits", "volume", "occurrences", "times")
TIME_COLUMN_NAMES = ("timestamp", "time", "date", "datetime", "created_at", "created", "ts", "asked_at")

QUERY_MATCH_FRACTION = 0.25
"""How far from τ towards identical (1.0) a test question must be to match a query. Tuned on seeds 0-9 of
``benchmarks/eval_traffic.py`` (worst error of the tested share 0.017; 0 gives 0.146), reported on seeds 10-19."""

N_EXAMPLES = 3
"""Representative queries shown per topic (the most asked)."""

MAX_TOPICS = 30
"""Traffic topics at most: the default K rule (``clustering.default_n_clusters``) capped here, since query
topics are read as a ranked list."""

SUGGESTIONS_PER_TOPIC = 3

UNANSWERED_TOPIC = -1
"""The ``topic`` of a query no passage answers: it joins no topic of the traffic."""

TOPIC_STARTS = 4
"""K-means starts for the traffic topics; the best (lowest weighted inertia) wins."""

TOPIC_SAMPLE = 6000
"""Queries the topic K-means is fitted on at most (drawn with probability ∝ count); the rest are assigned
to the nearest centre."""

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

_BLOCK_ROWS = 2048
"""Queries scored at a time: a (2,048 × 20,000) float32 block is 160 MB."""

def query_match_threshold(support_threshold: float) -> float:
    """The similarity at which a test question matches a traffic query: ``τ + QUERY_MATCH_FRACTION · (1 − τ)``."""
    return float(support_threshold + QUERY_MATCH_FRACTION * (1.0 - support_threshold))


@dataclass(frozen=True)
class TrafficLog:
    """A query log with repeats merged: ``queries[i]`` (masked) was asked ``counts[i]`` times.

    ``weekly`` (None without timestamps) has one row per (query, week):
    ``query`` (index into ``queries``), ``week`` (Monday, as a date) and
    ``count``. ``n_rows`` is the log's usable rows; ``warnings`` are plain
    sentences about what was skipped.
    """

    name: str
    queries: list[str]
    counts: np.ndarray
    n_rows: int
    weekly: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)

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
    (:mod:`~coverage_core.checks.trace_exports`).

    The query column is ``query_column`` or detected (:data:`QUERY_COLUMN_NAMES`);
    a count column (:data:`COUNT_COLUMN_NAMES`) and a timestamp column
    (:data:`TIME_COLUMN_NAMES`) are optional. Queries are masked
    (:func:`~coverage_core.checks.personal_data.mask_personal_data`: nothing
    after this sees them raw), then repeats merged (case and spacing ignored;
    the first spelling is kept) with their counts summed exactly.

    Hostile logs: a path must be a regular file of at most
    :data:`MAX_LOG_BYTES` and :data:`MAX_LOG_ROWS` lines (a device, FIFO,
    folder or larger log is one InputError). Skipped with a counted warning,
    the rest still read: blank queries, counts that are words, inf, nan or
    below 1, counts above :data:`MAX_COUNT`, JSON lines that are no object or
    nest too deep to parse, and objects or lists where text belongs (read as
    empty). Queries longer than :data:`MAX_QUERY_CHARS` are cut; timestamps
    outside :data:`LOG_DATES` or unreadable count in the totals but not the
    weekly figures; mixed time zones are read as UTC.
    """
    name, data = _log_bytes(source, name)
    warnings: list[str] = []
    frame = _log_frame(name, data, warnings)
    columns = [str(c) for c in frame.columns]
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
    return TrafficLog(
        name=name,
        queries=first.tolist(),
        counts=merged,
        n_rows=int(keep.sum()),
        weekly=weekly,
        warnings=warnings,
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


@dataclass(frozen=True)
class TrafficConfig:
    """Settings of :func:`analyze_traffic`; each default is documented at its constant."""

    n_topics: int | None = None
    random_state: int = 0
    strictness: float | None = None
    """The off-topic screener's strictness deciding which queries the documents answer (None: its default;
    an analysis without a strictness uses the same)."""
    n_examples: int = N_EXAMPLES
    suggestions_per_topic: int = SUGGESTIONS_PER_TOPIC


@dataclass(frozen=True)
class UnansweredDemand:
    """The queries no passage answers, as one group: ``volume`` (counting repeats), ``n_distinct``,
    ``share`` of all traffic, ``examples`` (the most asked, shortened) and ``is_unmet`` (frequent enough to
    be unmet demand, :func:`coverage_core.verdicts.is_unmet_demand`)."""

    volume: int
    n_distinct: int
    share: float
    examples: tuple[str, ...]
    is_unmet: bool
    label: str = NO_ANSWER

    def to_dict(self) -> dict:
        return {"label": self.label, "volume": self.volume, "n_distinct": self.n_distinct,
                "share": round(self.share, 6), "is_unmet": self.is_unmet, "examples": list(self.examples)}


@dataclass
class TrafficResult:
    """What :func:`analyze_traffic` found.

    ``queries`` has one row per distinct query: ``text`` (masked), ``count``,
    ``topic`` (:data:`UNANSWERED_TOPIC` when no passage answers it),
    ``best_test_similarity``, ``nearest_test`` (index into the test
    questions), ``is_tested``, ``best_passage_similarity``, ``best_passage``
    (chunk index) and ``is_answerable``. ``topics`` has one row per topic of
    the answerable traffic, most asked least tested first: ``topic``,
    ``label``, ``volume``, ``share``, ``tested_share``, ``answerable_share``
    (1 by construction, kept for older readers), ``priority``
    (``volume × (1 − tested_share)``), ``is_unmet`` (False: unmet demand is
    :attr:`unanswered`) and ``examples``. ``unanswered`` gathers the queries
    no passage answers. ``languages`` are the queries' languages by share of volume (when the
    documents' were given), ``language_problem`` the sentence saying the queries are in another language
    than the documents (:func:`~coverage_core.verdicts.cross_language_problem`; "" otherwise).
    ``unneeded_tests`` lists test questions whose best similarity to any
    query is below τ; ``weekly`` the tested share per week (None without
    timestamps).
    """

    log: TrafficLog
    support_threshold: float
    question_support_threshold: float
    queries: pd.DataFrame
    topics: pd.DataFrame
    unneeded_tests: pd.DataFrame
    weekly: pd.DataFrame | None
    suggestions: list[Suggestion]
    unanswered: UnansweredDemand | None = None
    languages: tuple[LanguageShare, ...] = ()
    language_problem: str = ""

    @property
    def tested_share_weighted(self) -> float:
        return _weighted(self.queries["is_tested"], self.queries["count"])

    @property
    def answerable_share_weighted(self) -> float:
        return _weighted(self.queries["is_answerable"], self.queries["count"])

    @property
    def unanswered_share_weighted(self) -> float:
        """The share of traffic, counting repeats, that no passage answers."""
        return 0.0 if self.unanswered is None else self.unanswered.share

    def headline(self) -> str:
        """One sentence: how much real traffic is tested and answerable, what has no answer in the documents,
        and the topic to test first."""
        sentence = (
            f"Production traffic: {self.tested_share_weighted:.0%} of {self.log.n_queries:,} queries "
            f"({self.log.n_distinct:,} distinct) are tested, {self.answerable_share_weighted:.0%} answerable"
        )
        if self.unanswered is not None and self.unanswered.volume:
            volume = self.unanswered.volume
            sentence += (f"; {wording.count(volume, 'query', 'queries')} {wording.plural(volume, 'has', 'have')} {NO_ANSWER} "
                         f"({self.unanswered.share:.0%})")
        untested = self.topics[is_untested_topic(self.topics["tested_share"])]
        if len(untested):
            top = untested.iloc[0]
            sentence += f"; most asked, least tested: {top['label']} ({wording.count(int(top['volume']), 'query', 'queries')})"
        return sentence + "." + (f" {self.language_problem}" if self.language_problem else "")

    @property
    def unmet_demand(self) -> pd.DataFrame:
        """The queries no passage answers as one row (``label``, ``volume``, ``share``, ``answerable_share``
        0, ``examples``) when they are frequent enough to be unmet demand; no row otherwise."""
        group = self.unanswered
        columns = ["label", "volume", "share", "answerable_share", "examples"]
        if group is None or not group.is_unmet:
            return pd.DataFrame(columns=columns)
        return pd.DataFrame([[group.label, group.volume, group.share, 0.0, list(group.examples)]], columns=columns)

    def to_dict(self) -> dict:
        """The report's ``traffic`` section."""
        topics = [
            {
                "label": row.label,
                "volume": int(row.volume),
                "tested_share": round(float(row.tested_share), 6),
                "answerable_share": round(float(row.answerable_share), 6),
                "priority": round(float(row.priority), 3),
                "is_unmet": bool(row.is_unmet),
                "examples": list(row.examples),
            }
            for row in self.topics.itertuples()
        ]
        section = {
            "n_queries": self.log.n_queries,
            "n_distinct": self.log.n_distinct,
            "tested_share_weighted": round(self.tested_share_weighted, 6),
            "answerable_share_weighted": round(self.answerable_share_weighted, 6),
            "unanswered_share_weighted": round(self.unanswered_share_weighted, 6),
            "support_threshold": round(self.support_threshold, 6),
            "match_threshold": round(query_match_threshold(self.support_threshold), 6),
            "question_support_threshold": round(self.question_support_threshold, 6),
            "topics": topics,
            "unanswered": self.unanswered.to_dict() if self.unanswered is not None else None,
            "languages": [{"code": share.code, "name": share.name, "share": round(share.share, 6),
                           "n_distinct": share.n_texts} for share in self.languages],
            "language_problem": self.language_problem,
            "unneeded_tests": [
                {"question": row.question, "best_similarity": round(float(row.best_similarity), 6)}
                for row in self.unneeded_tests.itertuples()
            ],
        }
        if self.weekly is not None:
            section["weekly"] = [
                {"week": str(row.week), "volume": int(row.volume), "tested_share": round(float(row.tested_share), 6)}
                for row in self.weekly.itertuples()
            ]
        return section


def _weighted(flags: pd.Series, counts: pd.Series) -> float:
    total = float(counts.sum())
    return float((flags.to_numpy(dtype=float) * counts.to_numpy(dtype=float)).sum() / total) if total else 0.0


def best_matches(rows: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best cosine similarity to any column vector, and which column, in blocks of rows.

    Both inputs are unit rows; the (rows × columns) matrix is never held whole.
    Empty ``columns`` give similarity −1 and index −1.
    """
    n = rows.shape[0]
    best = np.full(n, -1.0, dtype=np.float32)
    which = np.full(n, -1, dtype=np.int64)
    if columns.shape[0] == 0 or n == 0:
        return best, which
    for start in range(0, n, _BLOCK_ROWS):
        block = rows[start:start + _BLOCK_ROWS] @ columns.T
        which[start:start + len(block)] = block.argmax(axis=1)
        best[start:start + len(block)] = block[np.arange(len(block)), which[start:start + len(block)]]
    return best, which


def analyze_traffic(
    log: TrafficLog,
    query_vectors,
    test_vectors,
    test_texts: Sequence[str],
    chunk_vectors,
    *,
    support_threshold: float,
    question_support_threshold: float,
    chunk_texts: Sequence[str] = (),
    chunk_documents: Sequence[str] = (),
    chunk_labels=None,
    topic_names: Sequence[str] | None = None,
    languages: LanguageProfile | None = None,
    config: TrafficConfig = TrafficConfig(),
) -> TrafficResult:
    """Compare real traffic with the test set and the knowledge base (see the module docstring).

    ``query_vectors`` row ``i`` embeds ``log.queries[i]``; ``test_vectors``
    are the on-topic test questions (``test_texts``); ``chunk_vectors`` the
    passages. A query is tested when its best similarity to a test question
    is ≥ :func:`query_match_threshold` of ``support_threshold`` (τ), answerable when the off-topic
    screener does not flag it at ``question_support_threshold``
    (:func:`~coverage_core.checks.traffic_answers.query_answers`; with ``chunk_texts`` its word and subject
    checks too, read on the queries without their masks). With ``chunk_texts``,
    ``chunk_documents`` and ``chunk_labels`` the suggestions name the passage
    that answers them and the knowledge-base topic they belong to. With ``chunk_labels``, the traffic topics
    take the names of the knowledge-base topics that answer them (:func:`knowledge_base_topics`):
    ``topic_names`` are those names by cluster, as Results shows them (None: read from ``chunk_texts`` the
    way the analysis names its topics). With ``languages`` (the analysis's
    profile) the queries' languages are read and compared with the documents'.
    """
    queries = unit_rows(np.asarray(query_vectors, dtype=np.float32))
    if queries.shape[0] != log.n_distinct:
        raise InputError(f"There are {log.n_distinct} distinct queries but {queries.shape[0]} query vectors.")
    tests = unit_rows(np.asarray(test_vectors, dtype=np.float32).reshape(-1, queries.shape[1]))
    chunks = unit_rows(np.asarray(chunk_vectors, dtype=np.float32).reshape(-1, queries.shape[1]))
    counts = np.asarray(log.counts, dtype=np.int64)

    best_test, nearest_test = best_matches(queries, tests)
    words = [strip_masks(text) for text in log.queries]
    answers = query_answers(words, queries, chunks, question_support_threshold=question_support_threshold,
                            chunk_texts=chunk_texts, chunk_documents=chunk_documents,
                            strictness=config.strictness, random_state=config.random_state)
    answerable = answers.is_answerable
    topic = np.full(log.n_distinct, UNANSWERED_TOPIC, dtype=np.int64)
    topic[answerable], n_topics = _topics(queries[answerable], counts[answerable], config)
    names = None
    if chunk_labels is not None and n_topics:
        kb_names = list(topic_names) if topic_names is not None else knowledge_base_names(chunk_texts, chunk_labels)
        names = knowledge_base_topics(topic[answerable], counts[answerable], answers.best_passage[answerable],
                                      chunk_labels, kb_names)
    table = pd.DataFrame({
        "text": log.queries,
        "count": counts,
        "topic": topic,
        "best_test_similarity": best_test,
        "nearest_test": nearest_test,
        "is_tested": best_test >= query_match_threshold(support_threshold),
        "best_passage_similarity": answers.best_similarity,
        "best_passage": answers.best_passage,
        "is_answerable": answerable,
    })
    topics = _topic_table(table, words, n_topics, config, names)
    unanswered = _unanswered(table, config.n_examples)
    unneeded = _unneeded_tests(tests, test_texts, queries, support_threshold)
    weekly = _weekly(log, table)
    suggestions = _suggestions(table, topics, config, chunk_texts, chunk_documents, chunk_labels)
    query_languages = languages.query_shares(words, counts) if languages is not None else ()
    problem = cross_language_problem(
        [(share.code, share.name, share.share) for share in languages.document_shares],
        [(share.code, share.name, share.share) for share in query_languages], traffic=True,
    ) if languages is not None else ""
    return TrafficResult(log, float(support_threshold), float(question_support_threshold), table, topics,
                         unneeded, weekly, suggestions, unanswered, query_languages, problem)


def _topics(queries: np.ndarray, counts: np.ndarray, config: TrafficConfig) -> tuple[np.ndarray, int]:
    """Traffic topics: K-means on up to :data:`TOPIC_SAMPLE` queries drawn with probability ∝ count
    (so topics follow volume, and 100,000 queries cost what 6,000 do), then every query to its nearest centre."""
    n = queries.shape[0]
    if n == 0:  # no answerable query: no topic
        return np.zeros(0, dtype=np.int64), 0
    k = config.n_topics if config.n_topics is not None else min(default_n_clusters(n), MAX_TOPICS)
    k = max(1, min(k, n))
    if k == 1:
        return np.zeros(n, dtype=np.int64), 1
    rng = np.random.default_rng(config.random_state)
    weights = counts.astype(np.float64)
    sample = np.arange(n) if n <= TOPIC_SAMPLE else np.sort(
        rng.choice(n, TOPIC_SAMPLE, replace=False, p=weights / weights.sum()))
    k = min(k, len(np.unique(queries[sample].round(5), axis=0)))
    if k <= 1:
        return np.zeros(n, dtype=np.int64), 1
    # K-means++ makes many small BLAS calls; threaded BLAS spins on them (see clustering.py).
    with threadpool_limits(limits=1, user_api="blas"):
        # A few starts: one heavy query can trap a single start in a poor split (and the sample is small).
        model = KMeans(n_clusters=k, n_init=TOPIC_STARTS, max_iter=100, random_state=config.random_state)
        model.fit(queries[sample], sample_weight=weights[sample] if n <= TOPIC_SAMPLE else None)
    labels = np.empty(n, dtype=np.int64)
    centres = model.cluster_centers_.astype(np.float32)
    for start in range(0, n, _BLOCK_ROWS * 8):
        labels[start:start + _BLOCK_ROWS * 8] = (queries[start:start + _BLOCK_ROWS * 8] @ centres.T).argmax(axis=1)
    used, labels = np.unique(labels, return_inverse=True)
    return labels.astype(np.int64), len(used)


def _topic_table(table: pd.DataFrame, words: list[str], n_topics: int, config: TrafficConfig,
                 names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per topic of the answerable queries (see :class:`TrafficResult`), named ``names`` where given
    (:func:`knowledge_base_topics`), else from ``words`` (the queries without their masks); shares are of all
    traffic."""
    total = float(table["count"].sum())
    answered = table["topic"].to_numpy() != UNANSWERED_TOPIC
    words = [w for w, keep in zip(words, answered) if keep]
    table = table[answered]
    weighted = table.assign(tested=table["is_tested"] * table["count"], answerable=table["is_answerable"] * table["count"])
    grouped = weighted.groupby("topic").agg(volume=("count", "sum"), tested=("tested", "sum"),
                                            answerable=("answerable", "sum"))
    grouped = grouped.reindex(range(n_topics), fill_value=0)
    from_words = topic_labels(words, table["topic"].to_numpy(), n_topics) if n_topics else []
    names = distinct_names(names, from_words) if names is not None else from_words
    examples = [
        [shorten(t, 160, at_word=True) for t in
         table[table["topic"] == k].sort_values("count", ascending=False, kind="stable")["text"].head(config.n_examples)]
        for k in range(n_topics)
    ]
    volume = grouped["volume"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tested_share = np.where(volume > 0, grouped["tested"].to_numpy(dtype=float) / volume, 0.0)
        answerable_share = np.where(volume > 0, grouped["answerable"].to_numpy(dtype=float) / volume, 0.0)
    frame = pd.DataFrame({
        "topic": np.arange(n_topics),
        "label": [name or f"queries {k}" for k, name in enumerate(names)],
        "volume": volume.astype(np.int64),
        "share": volume / total if total else 0.0,
        "tested_share": tested_share,
        "answerable_share": answerable_share,
        "priority": volume * (1.0 - tested_share),
        "examples": pd.Series(examples, dtype=object),
    })
    frame["is_unmet"] = is_unmet_demand(frame["share"], frame["answerable_share"])
    return frame.sort_values(["priority", "volume"], ascending=False, kind="stable").reset_index(drop=True)


def _unanswered(table: pd.DataFrame, n_examples: int) -> UnansweredDemand:
    """The queries no passage answers, as one group (its verdict: :func:`is_unmet_demand` with nothing
    answerable)."""
    rows = table[~table["is_answerable"]]
    total = float(table["count"].sum())
    volume = int(rows["count"].sum())
    share = volume / total if total else 0.0
    examples = rows.sort_values("count", ascending=False, kind="stable")["text"].head(n_examples)
    return UnansweredDemand(
        volume=volume, n_distinct=len(rows), share=share,
        examples=tuple(shorten(t, 160, at_word=True) for t in examples),
        is_unmet=bool(volume) and bool(is_unmet_demand([share], [0.0])[0]),
    )


def _unneeded_tests(
    tests: np.ndarray, texts: Sequence[str], queries: np.ndarray, support_threshold: float
) -> pd.DataFrame:
    best, _ = best_matches(tests, queries)
    far = np.flatnonzero(best < support_threshold)
    order = far[np.argsort(best[far], kind="stable")]
    return pd.DataFrame({"question": [texts[i] for i in order], "best_similarity": best[order]})


def _weekly(log: TrafficLog, table: pd.DataFrame) -> pd.DataFrame | None:
    if log.weekly is None or log.weekly.empty:
        return None
    rows = log.weekly.assign(tested=table["is_tested"].to_numpy()[log.weekly["query"].to_numpy()])
    rows["tested_count"] = rows["tested"] * rows["count"]
    weeks = rows.groupby("week", as_index=False).agg(volume=("count", "sum"), tested=("tested_count", "sum"))
    weeks["tested_share"] = weeks["tested"] / weeks["volume"]
    return weeks[["week", "volume", "tested_share"]]


def _suggestions(table, topics, config, chunk_texts, chunk_documents, chunk_labels) -> list[Suggestion]:
    """The most asked untested queries of the least tested topics, then the most asked unanswered ones, as
    candidate test questions: an answered one in the knowledge-base topic (cluster) of the passage that
    answers it, an unanswered one in none, with the note :data:`NO_ANSWER`."""
    untested = topics[is_untested_topic(topics["tested_share"])]["topic"].tolist()
    groups = [table[(table["topic"] == topic) & ~table["is_tested"]] for topic in untested]
    groups.append(table[~table["is_answerable"] & ~table["is_tested"]])
    labels = None if chunk_labels is None else np.asarray(chunk_labels)
    suggestions: list[Suggestion] = []
    for rows in groups:
        for query in rows.sort_values("count", ascending=False, kind="stable").head(config.suggestions_per_topic).itertuples():
            suggestions.append(_suggestion(query, chunk_texts, chunk_documents, labels))
    return suggestions


def _suggestion(query, chunk_texts, chunk_documents, labels) -> Suggestion:
    passage = int(query.best_passage)
    if not query.is_answerable or passage < 0:
        return Suggestion(cluster=-1, text=query.text, origin="traffic", document="", passage="", note=NO_ANSWER)
    known = passage < len(chunk_texts)
    return Suggestion(
        cluster=int(labels[passage]) if labels is not None and passage < len(labels) else -1,
        text=query.text,
        origin="traffic",
        document=str(chunk_documents[passage]) if passage < len(chunk_documents) else "",
        passage=shorten(chunk_texts[passage], 200, at_word=True) if known else "",
        chunk=passage,
    )
