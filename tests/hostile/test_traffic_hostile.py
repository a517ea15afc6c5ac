"""Hostile query logs (issue 22): personal data and secrets never leave the reader raw, and counts, timestamps,
nesting, devices and size cannot crash, hang or overflow the traffic check."""

import json
import os
import random
import string
import time
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from stdnum import luhn

from coverage_core.checks import query_log
from coverage_core.checks.personal_data import mask_personal_data
from coverage_core.checks.query_log import LOG_DATES, MAX_COUNT, MAX_QUERY_CHARS, read_traffic
from coverage_core.checks.traffic import TrafficConfig, analyze_traffic
from coverage_core.checks.traffic_answers import has_mask, strip_masks
from coverage_core.errors import InputError
from coverage_core.outputs.junit import SUPPORTED_SCHEMA_VERSION, junit_xml

_RNG = random.Random(22)


def _random(alphabet: str, n: int) -> str:
    """Secret-shaped tokens are made here, so no real-looking credential is committed in this file."""
    return "".join(_RNG.choice(alphabet) for _ in range(n))


_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits


def _card(prefix: str, length: int) -> str:
    body = prefix + _random(string.digits, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


def _group(digits: str, sep: str, size: int = 4) -> str:
    return sep.join(digits[i:i + size] for i in range(0, len(digits), size))


_VISA = _card("4", 16)
_AMEX = _card("37", 15)
_JWT = "eyJ" + _random(_ALNUM, 30) + ".eyJ" + _random(_ALNUM, 40) + "." + _random(_ALNUM + "-_", 43)
_PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + _random(_ALNUM + "+/", 64) + "\n-----END RSA PRIVATE KEY-----"

# (query, the raw fragment that must not survive, the placeholder that replaces it)
PERSONAL = [
    ("mail jane.doe@example.com please", "jane.doe", "[email]"),
    ("write to root@localhost about it", "root@", "[email]"),
    ("jane＠example.com asked", "jane", "[email]"),
    ("jane\u200b@example.com asked", "jane", "[email]"),
    ("ja\u200bne@exam\u200bple.com asked", "ne@", "[email]"),
    ("ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ asked", "jane", "[email]"),
    ("jane\u00ad.doe@example.com", "doe", "[email]"),
    ("jane at example dot com", "jane", "[email]"),
    ("jane [at] example [dot] com", "jane", "[email]"),
    ("jane(at)example(dot)org", "jane", "[email]"),
    ("jane AT example DOT co DOT uk", "jane", "[email]"),
    ("jane {at} example", "jane", "[email]"),
    ('"jane doe"@example.com asked', "jane doe", "[email]"),
    ("jane @ example.com", "jane", "[email]"),
    ("JANE.DOE+tag@Example.CO.UK", "JANE", "[email]"),
    (f"card {_group(_VISA, '/')} declined", _group(_VISA, "/"), "[card]"),
    (f"card {_group(_VISA, ' ')} declined", _group(_VISA, " "), "[card]"),
    (f"card {_group(_VISA, '-')} declined", _group(_VISA, "-"), "[card]"),
    (f"card {_group(_VISA, '.')} declined", _group(_VISA, "."), "[card]"),
    (f"card {_VISA} declined", _VISA, "[card]"),
    (f"amex {_AMEX[:4]} {_AMEX[4:10]} {_AMEX[10:]}", f"{_AMEX[:4]} {_AMEX[4:10]}", "[card]"),
    ("card " + _group(_VISA, " ").translate(str.maketrans("0123456789", "０１２３４５６７８９")), _group(_VISA, " "),
     "[card]"),
    ("card " + "\u200b".join(_group(_VISA, " ").split(" ")), _VISA, "[card]"),
    ("call +44 20 7946 0958 tonight", "7946 0958", "[phone]"),
    ("call (212) 555-0123 tonight", "555-0123", "[phone]"),
    ("call 555-123-4567 tonight", "123-4567", "[phone]"),
    ("ring 030 12345678 tonight", "12345678", "[phone]"),
    ("call +1.212.555.0123 tonight", "555.0123", "[phone]"),
    ("iban DE89 3704 0044 0532 0130 00 please", "3704 0044", "[iban]"),
    ("iban GB82WEST12345698765432 please", "WEST", "[iban]"),
    ("ssn 123-45-6789 lost", "45-6789", "[id]"),
    ("uuid 123e4567-e89b-12d3-a456-426614174000", "426614174000", "[id]"),
    ("from 192.168.1.20 today", "192.168", "[ip]"),
    ("ipv6 2001:0db8:85a3:0000:0000:8a2e:0370:7334", "85a3", "[ip]"),
    ("account 12345678 closed", "12345678", "[number]"),
    (f"key sk-proj-{_random(_ALNUM, 48)} leaked", "sk-proj-", "[secret]"),
    (f"key sk-ant-api03-{_random(_ALNUM, 24)}-{_random(_ALNUM, 4)}", "sk-ant", "[secret]"),
    (f"aws AKIA{_random(_UPPER_DIGITS, 16)} please", "AKIA", "[secret]"),
    (f"gh ghp_{_random(_ALNUM, 36)} ok", "ghp_", "[secret]"),
    (f"slack xoxb-{_random(string.digits, 12)}-{_random(string.digits, 13)}-{_random(_ALNUM, 24)}", "xoxb",
     "[secret]"),
    (f"jwt {_JWT} expired?", "eyJ", "[secret]"),
    (f"hash {_random('0123456789abcdef', 64)} ok", None, "[secret]"),
    (f"token {_random(_ALNUM + '+/', 40)}== here", None, "[secret]"),
    (f"stripe sk_live_{_random(_ALNUM, 24)}", "sk_live", "[secret]"),
    ("my password is hunter2!", "hunter2", "[secret]"),
    ("api_key=Zx81Qa in the config", "Zx81Qa", "[secret]"),
    ("Authorization: Bearer abc.def.ghi123", "ghi123", "[secret]"),
    ("https://admin:s3cr3t@db.example.com/x", "s3cr3t", "[secret]"),
    (f"my key {_PEM} fails", "RSA PRIVATE", "[secret]"),
    ("I live at 221B Baker Street London", "Baker", "[address]"),
    ("ship to 1600 Pennsylvania Ave NW", "Pennsylvania", "[address]"),
    ("adresse 12 rue de la Paix", "Paix", "[address]"),
    ("Hauptstraße 5 in Berlin", "Hauptstraße", "[address]"),
    ("ask Mr. John Smith", "Smith", "[name]"),
    ("my name is Alice Cooper and", "Alice", "[name]"),
]

BENIGN = [
    "version 1.2.3",
    "at the meeting dot",
    "Look at this dot product",
    "in 1914-1918 and 1939-1945",
    "price $1,299.99",
    "the year 2024",
    "npm install react@18.2.0",
    "icon@2x.png missing",
    "state-of-the-art-transformer-models",
    "internationalization2024",
    "What is 3 + 4?",
    "date 2024-01-15",
    "ISBN 978-3-16-148410-0",
    "Python 3.12 release",
    "the API at api.example.com is down",
    "who lived on Baker Street",
    "10 ways to cook",
    "A@B in numpy",
    "the token is expired",
    "my password is too short",
    "from 12/05/2024 to 15/06/2024",
    "COVID-19 vaccine",
    "Dr. approved",
]


@pytest.mark.parametrize(("text", "raw", "placeholder"), PERSONAL)
def test_personal_data_and_secrets_are_masked(text, raw, placeholder):
    masked = mask_personal_data(text)
    assert placeholder in masked
    tokens = [t for t in text.replace("\n", " ").split() if len(t) >= 20]  # random secrets: their own body
    for fragment in ([raw] if raw else []) + tokens:
        assert fragment not in masked
    assert mask_personal_data(masked) == masked  # masking twice changes nothing
    assert has_mask(masked) and placeholder not in strip_masks(masked)


def test_there_are_enough_variants():
    assert len(PERSONAL) >= 40 and len(BENIGN) >= 10


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_are_left_alone(text):
    assert mask_personal_data(text) == text


def _log(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def test_secrets_never_reach_the_report_junit_or_headline(tmp_path):
    queries = [text for text, _, _ in PERSONAL]
    frame = pd.DataFrame({"query": queries, "count": np.arange(1, len(queries) + 1)})
    log = read_traffic(_log(tmp_path, "log.csv", frame.to_csv(index=False)))
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(log.n_distinct, 8)).astype(np.float32)
    result = analyze_traffic(log, vectors, vectors[:2], ["test one", "test two"], vectors[::3],
                             support_threshold=0.5, question_support_threshold=0.5,
                             config=TrafficConfig(n_topics=3))
    report = {"schema_version": SUPPORTED_SCHEMA_VERSION, "metrics": {}, "documents": [], "questions": [],
              "clusters": [], "traffic": result.to_dict()}
    written = json.dumps(report, ensure_ascii=False)
    xml = junit_xml(report)
    ET.fromstring(xml.split("\n", 1)[1])
    shown = "\n".join([written, xml, result.headline(), *(s.text for s in result.suggestions),
                       *result.queries["text"]])
    for text, raw, _ in PERSONAL:
        fragments = ([raw] if raw else []) + [t for t in text.split() if len(t) >= 20]
        for fragment in fragments:
            assert fragment not in shown, text
    assert "[secret]" in shown and "[email]" in shown


def test_devices_fifos_and_folders_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    for path in ("/dev/zero", fifo, tmp_path):
        with pytest.raises(InputError) as error:
            read_traffic(path)
        assert "query log" in str(error.value) and "\n" not in str(error.value)
    assert time.monotonic() - started < 5


def test_an_oversized_log_is_refused_in_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(query_log, "MAX_LOG_BYTES", 1000)
    content = "query\n" + "what is a koala?\n" * 100
    for source in (_log(tmp_path, "big.csv", content), content.encode()):
        with pytest.raises(InputError, match="limit"):
            read_traffic(source, "big.csv")
    assert read_traffic(("query\n" + "what is a koala?\n" * 10).encode(), "small.csv").n_queries == 10


def test_a_log_with_too_many_lines_is_refused(monkeypatch):
    monkeypatch.setattr(query_log, "MAX_LOG_ROWS", 50)
    with pytest.raises(InputError, match="over the 50 limit"):
        read_traffic(("query\n" + "q\n" * 60).encode(), "long.csv")
    assert read_traffic(("query\n" + "q\n" * 40).encode(), "ok.csv").n_queries == 40


def test_hostile_counts_are_skipped_and_totals_are_exact(tmp_path):
    rows = [("a", "9e18"), ("a", "9e18"), ("b", "1e300"), ("c", "inf"), ("d", "-inf"), ("e", "-5"), ("f", "0"),
            ("g", "many"), ("h", "NaN"), ("i", str(MAX_COUNT + 1)), ("j", "1" * 5000),
            ("k", str(MAX_COUNT)), ("k", str(MAX_COUNT)), ("k", "3"), ("l", "1,500"), ("m", "")]
    content = "query,count\n" + "\n".join(f"{q},\"{c}\"" for q, c in rows) + "\n"
    log = read_traffic(_log(tmp_path, "counts.csv", content))
    assert dict(zip(log.queries, log.counts.tolist())) == {"k": 2 * MAX_COUNT + 3, "l": 1500, "m": 1}
    assert log.n_queries == 2 * MAX_COUNT + 3 + 1500 + 1 > 0
    assert log.counts.dtype == np.int64
    assert any(w.startswith("6 rows have") and "at least 1" in w for w in log.warnings)
    assert any(w.startswith("5 rows have") and f"above {MAX_COUNT:,}" in w for w in log.warnings)


def test_json_numbers_beyond_float_and_int_limits_are_bad_counts(tmp_path):
    lines = ['{"query": "a", "count": 9000000000000000000}', '{"query": "b", "count": 1e400}',
             '{"query": "c", "count": Infinity}', '{"query": "d", "count": NaN}',
             '{"query": "e", "count": ' + "9" * 5000 + "}", '{"query": "f", "count": 7}']
    log = read_traffic(_log(tmp_path, "log.jsonl", "\n".join(lines)))
    assert (log.queries, log.counts.tolist()) == (["f"], [7])
    assert len(log.warnings) == 2


def test_json_nested_100000_deep_is_one_bad_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    lines = ['{"query": "what do koalas eat?", "count": 2}', deep, '{"query": ' + deep + "}",
             '{"query": {"nested": [1, 2]}}', '{"query": "where do koalas live?"}']
    log = read_traffic(_log(tmp_path, "log.jsonl", "\n".join(lines)))
    assert log.queries == ["what do koalas eat?", "where do koalas live?"] and log.n_queries == 3
    assert any("2 lines of" in w and "are not JSON objects and were skipped" in w for w in log.warnings)
    assert any("1 value in" in w and "is a JSON object or list, not text, and was read as empty" in w for w in log.warnings)


def test_timestamps_far_in_the_past_or_future_leave_the_weekly_figures(tmp_path):
    rows = [("a", "0001-01-01T00:00:00Z"), ("b", "9999-12-31T23:59:59Z"), ("c", "2024-05-01T23:00:00-08:00"),
            ("d", "2024-05-06T01:00:00+05:00"), ("e", "not a date"), ("f", "1970-01-01")]
    content = "query,timestamp\n" + "\n".join(f"{q},{t}" for q, t in rows) + "\n"
    log = read_traffic(_log(tmp_path, "log.csv", content))
    assert log.n_queries == len(rows)  # every row counts in the totals
    weeks = {log.queries[q]: str(w) for q, w in zip(log.weekly["query"], log.weekly["week"])}
    # Mixed zones are read as UTC: 23:00 at -08:00 is Thursday 2 May, 01:00 at +05:00 is Sunday 5 May.
    assert weeks == {"c": "2024-04-29", "d": "2024-04-29"}
    assert any(w.startswith("3 rows have") and LOG_DATES[0][:4] in w for w in log.warnings)
    assert any(w.startswith("1 row has") and "not a date" in w for w in log.warnings)


def test_a_pasted_document_is_cut_to_the_query_limit(tmp_path):
    long = ("koala " * (MAX_QUERY_CHARS // 3)).strip()
    log = read_traffic(_log(tmp_path, "log.csv", f"query\n{long}\nshort question\n"))
    assert [len(q) for q in log.queries] == [MAX_QUERY_CHARS, len("short question")]
    assert any("cut to" in w for w in log.warnings)


def test_hostile_long_queries_are_masked_in_linear_time(tmp_path):
    """Each of these took about a second per query before (a match retried from every character)."""
    units = ["-", "a-1", "1///1", "a.", "x@", "A1", "1 ", "sk-", "Mr A ", "1 A Street ", "jane at "]
    queries = [(unit * (MAX_QUERY_CHARS // len(unit) + 1))[:MAX_QUERY_CHARS] for unit in units] * 2
    content = json.dumps(queries[0]) + "\n" + "\n".join(json.dumps({"query": q + str(i)}) for i, q in enumerate(queries))
    started = time.monotonic()
    log = read_traffic(_log(tmp_path, "log.jsonl", content))
    assert time.monotonic() - started < 8
    assert log.n_distinct >= len(units)


def test_short_numbers_beside_other_digits_are_not_phone_numbers():
    # Some regions accept 5-digit short numbers; a model or order number is not a phone number.
    text = "how do I reset my koala feeder model 16401 after term25?"
    assert mask_personal_data(text) == text
    assert mask_personal_data("ring 020 7946 0958 about model 16401") == "ring [phone] about model 16401"
