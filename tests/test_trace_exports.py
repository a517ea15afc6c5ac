"""Langfuse and LangSmith trace exports read as production traffic: only the users' questions, with their times."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.trace_exports import detect_trace_format, user_text
from coverage_core.errors import InputError
from tests.helpers import PROJECT

FIXTURES = PROJECT / "tests" / "fixtures" / "trace_exports"


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def test_a_langfuse_trace_export_gives_each_traces_user_question_and_its_week():
    log = read_traffic(FIXTURES / "langfuse-traces.jsonl")
    # t-1 and t-4 ask the same question (case aside): merged; t-2 is a chat, its last user message counts;
    # t-3 (a health check) has no input.
    assert log.queries == ["How long do koalas sleep each day?", "And how long does a lobster live?"]
    assert log.counts.tolist() == [2, 1]
    assert any("Langfuse trace export: 3 queries; left out 1 root record without a question" in w
               for w in log.warnings), log.warnings
    assert log.weekly is not None and log.weekly["count"].sum() == 3


def test_only_root_observations_and_root_runs_are_queries():
    observations = read_traffic(FIXTURES / "langfuse-observations.jsonl")
    assert observations.queries == ["Where do octopuses live?"]  # from JSON text in a CSV-style cell
    assert any("2 records inside a trace" in w for w in observations.warnings)
    runs = read_traffic(FIXTURES / "langsmith-runs.jsonl")
    assert runs.queries == ["What is the tempo of a drum roll?", "Which koala food is poisonous to other animals?"]
    assert any("LangSmith run export" in w and "1 record inside a trace" in w for w in runs.warnings)


def test_a_langsmith_parquet_bulk_export_reads_as_its_json_lines_do():
    records = _records("langsmith-runs.jsonl")
    # Objects written as JSON text; parent_run_id is the root marker when is_root is absent.
    rows = [{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items() if k != "is_root"}
            for r in records]
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    log = read_traffic(buffer.getvalue(), "runs.parquet")
    assert log.queries == read_traffic(FIXTURES / "langsmith-runs.jsonl").queries


def test_a_langfuse_csv_export_and_a_json_array_export_read_as_the_json_lines():
    records = _records("langfuse-traces.jsonl")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]))
    writer.writeheader()
    for record in records:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v)
                         for k, v in record.items()})
    expected = read_traffic(FIXTURES / "langfuse-traces.jsonl").queries
    assert read_traffic(out.getvalue().encode("utf-8"), "traces.csv").queries == expected
    assert read_traffic(json.dumps(records).encode("utf-8"), "traces.json").queries == expected


def test_a_plain_log_is_not_taken_for_a_trace_export():
    assert detect_trace_format({"query": "q", "count": 3, "timestamp": "2026-01-01"}) is None
    log = read_traffic(b'{"query": "what is a drum?", "input": "x", "id": 1}\n', "q.jsonl")
    assert log.queries == ["what is a drum?"]


@pytest.mark.parametrize("value, text", [
    ({"input": {"question": " nested "}}, "nested"),
    ([{"role": "assistant", "content": "hi"}], None),
    ({"messages": [{"role": "user", "content": "first"}, {"role": "user", "content": "last"}]}, "last"),
    ("{not json", "{not json"),
    (42, None),
])
def test_user_text_finds_the_users_words(value, text):
    assert user_text(value) == text


def test_an_export_without_any_question_and_a_damaged_parquet_are_one_sentence():
    empty = b'{"id": "r", "run_type": "chain", "start_time": "2026-01-01", "inputs": {}, "parent_run_id": null}\n'
    with pytest.raises(InputError, match=r"^runs.jsonl looks like a LangSmith run export but none of its root "):
        read_traffic(empty, "runs.jsonl")
    with pytest.raises(InputError, match=r"^The Parquet file bad.parquet cannot be read"):
        read_traffic(b"PAR1" + b"\0" * 64, "bad.parquet")
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{"query": "a question"}]), buffer)
    with pytest.raises(InputError, match=r"^The Parquet file other.parquet is not a LangSmith or Langfuse export"):
        read_traffic(buffer.getvalue(), "other.parquet")
