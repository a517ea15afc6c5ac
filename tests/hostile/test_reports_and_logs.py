"""A report nested beyond reason, and a query log with a lone surrogate: a sentence, or handled."""

from __future__ import annotations

import pytest

from coverage_core.errors import InputError


def test_a_report_nested_100000_deep_is_refused_in_one_sentence(tmp_path):
    from coverage_core.outputs.junit import load_report

    deep = tmp_path / "deep.json"
    deep.write_text('{"schema_version": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_report(deep)
    assert str(raised.value) == "deep.json is not a coverage report (it nests lists or objects more than 64 levels deep)."
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": ', encoding="utf-8")
    with pytest.raises(InputError, match=r"^broken.json is not a coverage report \(not valid JSON: Expecting value"):
        load_report(broken)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"é": 1}'.encode("latin-1"))
    with pytest.raises(InputError, match=r"^latin.json is not a coverage report \(it is not UTF-8 text\)\.$"):
        load_report(latin)


def test_a_query_log_line_with_a_lone_surrogate_is_read_with_a_replacement_character():
    from coverage_core.checks.query_log import _read_jsonl

    text = '{"query": "What is a \\ud800 drum?", "count": 2}\n{"query": "Is the cello a \\ud83c\\udfbb?"}\n'
    records, n_bad, n_nested = _read_jsonl(text, "log.jsonl")
    assert (n_bad, n_nested) == (0, 0)
    assert records["query"].tolist() == ["What is a \ufffd drum?", "Is the cello a \U0001f3bb?"]
    assert all(query.encode("utf-8") for query in records["query"])
