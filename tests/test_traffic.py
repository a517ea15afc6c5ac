"""Production traffic: reading a query log, masking personal data, and comparing it with tests and passages."""

import json

import numpy as np
import pandas as pd
import pytest

from coverage_core.checks.personal_data import mask_personal_data
from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.traffic import (
    QUERY_MATCH_FRACTION,
    UNANSWERED_TOPIC,
    TrafficConfig,
    analyze_traffic,
    best_matches,
    query_match_threshold,
)
from coverage_core.checks.traffic_answers import NO_ANSWER
from coverage_core.errors import InputError


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


# ------------------------------------------------------------------ personal data


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("mail jane.doe+rag@example.co.uk about it", "mail [email] about it"),
        ("call +1 (555) 123-4567 now", "call [phone] now"),
        ("my number is 030 1234 5678", "my number is [phone]"),
        ("card 4111111111111111 declined", "card [card] declined"),
        ("account 12345678", "account [number]"),
    ],
)
def test_personal_data_is_masked(text, masked):
    assert mask_personal_data(text) == masked


def test_years_ranges_and_amounts_stay_readable():
    for text in ("What happened in 1914-1918?", "Was it 1957 or 1958?", "Is the fee 250 or 1,500 euros?",
                 "Version 3.12.1 release notes"):
        assert mask_personal_data(text) == text


# ------------------------------------------------------------------ reading


def test_csv_log_merges_repeats_and_keeps_counts():
    frame = pd.DataFrame({
        "Query": ["How do I reset my password?", "how do i  reset my password?", "Where is my invoice?",
                  "  ", "Email me at bob@corp.com", "email me at alice@corp.com"],
        "Count": ["3", "2", "1,200", "4", "1", "1"],
    })
    log = read_traffic(_csv(frame), "log.csv")
    assert log.queries == ["How do I reset my password?", "Where is my invoice?", "Email me at [email]"]
    assert log.counts.tolist() == [5, 1200, 2]
    assert (log.n_queries, log.n_distinct, log.n_rows) == (1207, 3, 5)
    assert any("1 row with an empty query was skipped" in w for w in log.warnings)
    assert log.weekly is None


def test_jsonl_log_with_timestamps_and_bad_lines():
    lines = [
        {"query": "What is the refund policy?", "timestamp": "2026-11-02T10:00:00Z"},
        {"query": "What is the refund policy?", "timestamp": "2026-11-10T09:00:00Z", "count": 4},
        {"query": "Can I pay by card?", "timestamp": "not a date"},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n{broken\n"
    log = read_traffic(text.encode(), "log.jsonl")
    assert log.queries == ["What is the refund policy?", "Can I pay by card?"]
    assert log.counts.tolist() == [5, 1]
    assert any("1 line of" in w and "is not a JSON object" in w for w in log.warnings)
    assert any("not a date" in w for w in log.warnings)
    weeks = log.weekly.sort_values("week")
    assert weeks["count"].tolist() == [1, 4] and weeks["query"].tolist() == [0, 0]
    assert [str(w) for w in weeks["week"]] == ["2026-11-02", "2026-11-09"]  # Mondays


def test_bad_logs_get_one_plain_sentence():
    with pytest.raises(InputError, match="is empty"):
        read_traffic(b"  \n", "log.csv")
    with pytest.raises(InputError, match="No query column found in log.csv"):
        read_traffic(_csv(pd.DataFrame({"a": ["x"], "b": ["y"]})), "log.csv")
    with pytest.raises(InputError, match="has no column 'asked'"):
        read_traffic(_csv(pd.DataFrame({"query": ["x"]})), "log.csv", query_column="asked")
    with pytest.raises(InputError, match="no usable query"):
        read_traffic(_csv(pd.DataFrame({"query": ["x"], "count": ["zero"]})), "log.csv")
    with pytest.raises(InputError, match="no JSON object"):
        read_traffic(b"[1, 2]\n", "log.jsonl")
    log = read_traffic(_csv(pd.DataFrame({"query": ["a", "b"], "count": ["2", "-1"]})), "log.csv")
    assert log.queries == ["a"] and any("at least 1" in w for w in log.warnings)
    # One column without a known name is the query column.
    assert read_traffic(b"asked\nWhere is X?\nWhere is Y?\n", "log.csv").n_distinct == 2


# ------------------------------------------------------------------ analysis


def _direction(index: int, dim: int = 12) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    return vector


def _near(index: int, wobble: int, dim: int = 12) -> np.ndarray:
    vector = _direction(index, dim) + 0.05 * _direction((index + 1 + wobble) % dim, dim)
    return vector / np.linalg.norm(vector)


def _scenario():
    """Topics 0 (tested, answerable), 1 (untested, answerable), 2 (untested, not answerable)."""
    texts, counts, vectors = [], [], []
    for topic, volume, name in ((0, 10, "billing"), (1, 40, "shipping"), (2, 25, "warranty")):
        for i in range(4):
            texts.append(f"{name} question {i} call 555 123 4567 ext")
            counts.append(volume + i)
            vectors.append(_near(topic, i))
    frame = pd.DataFrame({"query": texts, "count": counts})
    log = read_traffic(_csv(frame), "log.csv")
    tests = np.stack([_near(0, 5), _near(7, 0)])  # one on billing, one about nothing users ask
    chunks = np.stack([_near(0, 3), _near(0, 4), _near(1, 3), _near(1, 4), _near(9, 0)])
    return log, np.stack(vectors), tests, chunks


def test_traffic_weighted_shares_topics_unmet_demand_and_suggestions():
    log, queries, tests, chunks = _scenario()
    result = analyze_traffic(
        log, queries, tests, ["How do I pay my bill?", "What colour is the moon?"], chunks,
        support_threshold=0.6, question_support_threshold=0.6,
        chunk_texts=["billing a", "billing b", "shipping a", "shipping b", "other"],
        chunk_documents=["billing.md", "billing.md", "shipping.md", "shipping.md", "other.md"],
        chunk_labels=[0, 0, 1, 1, 2], config=TrafficConfig(n_topics=2),
    )
    volume = {0: 46, 1: 166, 2: 106}
    total = sum(volume.values())
    assert result.tested_share_weighted == pytest.approx(volume[0] / total)
    assert result.answerable_share_weighted == pytest.approx((volume[0] + volume[1]) / total)
    # Warranty has no passage: it is no topic of its own, but the group of queries no passage answers.
    unanswered = result.unanswered
    assert (unanswered.volume, unanswered.n_distinct, unanswered.is_unmet) == (106, 4, True)
    assert unanswered.share == pytest.approx(106 / total, abs=1e-9)
    assert result.unanswered_share_weighted == pytest.approx(1 - result.answerable_share_weighted, abs=1e-9)
    assert [t.split()[0] for t in unanswered.examples] == ["warranty"] * 3
    assert result.queries.loc[~result.queries["is_answerable"], "topic"].eq(UNANSWERED_TOPIC).all()
    assert NO_ANSWER in result.headline() and "106 queries" in result.headline()
    assert result.unmet_demand["volume"].tolist() == [106]
    # Most asked, least tested first among the answerable topics: shipping (166 untested), billing (tested).
    topics = result.topics
    assert [t.split()[0] for t in topics["examples"].str[0]] == ["shipping", "billing"]
    assert topics["volume"].tolist() == [166, 46]
    assert topics["priority"].tolist() == pytest.approx([166, 0])
    assert not topics["is_unmet"].any() and topics["answerable_share"].tolist() == pytest.approx([1.0, 1.0])
    assert "shipping" in topics.loc[0, "label"]
    # The test nobody needs.
    assert result.unneeded_tests["question"].tolist() == ["What colour is the moon?"]
    # Suggestions: real untested queries, most asked first, with the passage that answers them.
    by_text = {s.text: s for s in result.suggestions}
    assert all(s.origin == "traffic" for s in result.suggestions)
    shipping = [s for s in result.suggestions if s.text.startswith("shipping")]
    assert shipping[0].text.startswith("shipping question 3") and shipping[0].document == "shipping.md"
    assert shipping[0].cluster == 1 and shipping[0].passage.startswith("shipping") and shipping[0].note == ""
    # Unanswered ones are in no knowledge-base topic, marked as having no answer in the documents.
    warranty = [s for s in result.suggestions if s.text.startswith("warranty")]
    assert warranty and all((s.cluster, s.document, s.passage, s.note) == (-1, "", "", NO_ANSWER) for s in warranty)
    assert not any(text.startswith("billing") for text in by_text)


def test_a_query_joins_the_topic_of_the_passage_that_answers_it():
    """Each suggestion's cluster is its best passage's knowledge-base topic, never a neighbouring query's."""
    log = read_traffic(b"query\nalpha one\nalpha two\nbeta one\n", "log.csv")
    queries = np.stack([_near(0, 0), _near(0, 1), _near(1, 0)])
    chunks = np.stack([_near(1, 3), _near(0, 3)])  # chunk 0 answers beta (cluster 7), chunk 1 alpha (cluster 4)
    result = analyze_traffic(log, queries, np.stack([_direction(9)]), ["t"], chunks, support_threshold=0.6,
                             question_support_threshold=0.6, chunk_texts=["beta text", "alpha text"],
                             chunk_documents=["b.md", "a.md"], chunk_labels=[7, 4], config=TrafficConfig(n_topics=1))
    clusters = {s.text: (s.cluster, s.document, s.chunk) for s in result.suggestions}
    assert clusters == {"alpha one": (4, "a.md", 1), "alpha two": (4, "a.md", 1), "beta one": (7, "b.md", 0)}
    assert result.unanswered.volume == 0 and not result.unanswered.is_unmet and result.unmet_demand.empty
    assert NO_ANSWER not in result.headline()


def test_nothing_answerable_gives_no_topic_and_one_group():
    log = read_traffic(b"query\nreset my password\ncancel my plan\n", "log.csv")
    result = analyze_traffic(log, np.stack([_direction(5), _direction(6)]), np.stack([_direction(0)]), ["t"],
                             np.stack([_direction(0)]), support_threshold=0.6, question_support_threshold=0.6)
    assert result.topics.empty and result.unanswered.volume == 2 and result.unanswered.share == pytest.approx(1.0)
    assert result.to_dict()["unanswered"]["volume"] == 2 and result.to_dict()["topics"] == []


def test_report_section_has_the_documented_fields_and_no_personal_data():
    log, queries, tests, chunks = _scenario()
    result = analyze_traffic(log, queries, tests, ["a", "b"], chunks, support_threshold=0.6, question_support_threshold=0.6,
                             config=TrafficConfig(n_topics=3))
    section = json.loads(json.dumps(result.to_dict()))
    assert {"n_queries", "n_distinct", "tested_share_weighted", "answerable_share_weighted", "topics"} <= set(section)
    assert section["n_queries"] == 318 and section["n_distinct"] == 12
    assert {"label", "volume", "tested_share", "answerable_share", "examples"} <= set(section["topics"][0])
    text = json.dumps(section)
    assert "555 123 4567" not in text and "[phone]" in text
    assert "weekly" not in section


def test_a_test_question_matches_a_query_above_tau():
    assert query_match_threshold(0.5) == pytest.approx(0.5 + QUERY_MATCH_FRACTION * 0.5)
    log = read_traffic(b"query\nclose one\nparaphrase\n", "log.csv")
    test = _direction(0)
    at_tau = np.cos(np.arccos(0.5) * 0.999)  # just above τ, below the match level
    queries = np.stack([_direction(0), at_tau * _direction(0) + np.sqrt(1 - at_tau**2) * _direction(1)])
    result = analyze_traffic(log, queries, test[None], ["t"], np.stack([_direction(0)]), support_threshold=0.5,
                             question_support_threshold=0.5, config=TrafficConfig(n_topics=1))
    assert result.queries["is_tested"].tolist() == [True, False]
    assert result.unneeded_tests.empty  # the test is within τ of the traffic


def test_weekly_tested_share():
    frame = pd.DataFrame({
        "query": ["billing question 0", "shipping question 0", "billing question 0", "shipping question 0"],
        "count": [3, 1, 1, 3],
        "date": ["2026-11-02", "2026-11-03", "2026-11-10", "2026-11-11"],
    })
    log = read_traffic(_csv(frame), "log.csv")
    queries = np.stack([_near(0, 0), _near(1, 0)])
    result = analyze_traffic(log, queries, _near(0, 1)[None], ["t"], queries, support_threshold=0.6,
                             question_support_threshold=0.6, config=TrafficConfig(n_topics=2))
    weekly = result.weekly
    assert weekly["volume"].tolist() == [4, 4]
    assert weekly["tested_share"].tolist() == pytest.approx([0.75, 0.25])
    assert [w["week"] for w in result.to_dict()["weekly"]] == ["2026-11-02", "2026-11-09"]


def test_best_matches_in_blocks_equals_the_full_matrix(monkeypatch):
    from coverage_core.checks import traffic

    rng = np.random.default_rng(0)
    rows, columns = rng.normal(size=(50, 8)), rng.normal(size=(30, 8))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    columns /= np.linalg.norm(columns, axis=1, keepdims=True)
    monkeypatch.setattr(traffic, "_BLOCK_ROWS", 7)
    best, which = best_matches(rows.astype(np.float32), columns.astype(np.float32))
    full = rows @ columns.T
    assert which.tolist() == full.argmax(axis=1).tolist()
    assert best == pytest.approx(full.max(axis=1), abs=1e-5)
    assert best_matches(rows.astype(np.float32), np.zeros((0, 8), np.float32))[1].tolist() == [-1] * 50


FRENCH_DOCUMENT = (
    "La facturation mensuelle est envoyée le premier jour de chaque mois. Les clients peuvent payer par carte "
    "bancaire ou par virement, et les factures restent disponibles dans leur espace personnel pendant cinq ans."
)


def test_queries_in_another_language_than_the_documents_say_their_verdicts_may_be_wrong():
    from coverage_core.languages import profile_languages
    from coverage_core.types import Document

    profile = profile_languages([Document("facturation.md", FRENCH_DOCUMENT)], ["Quand la facture est-elle envoyée ?"])
    english = ["When is the monthly invoice sent to customers?", "Can I pay my invoice by bank transfer?"]
    log = read_traffic(_csv(pd.DataFrame({"query": english + ["Quand la facture est-elle envoyée ?"],
                                          "count": [30, 10, 40]})), "log.csv")
    vectors = np.stack([_near(0, 0), _near(0, 1), _near(0, 2)])
    kwargs = dict(support_threshold=0.6, question_support_threshold=0.6)
    result = analyze_traffic(log, vectors, np.stack([_direction(9)]), ["t"], np.stack([_near(0, 3)]),
                             languages=profile, **kwargs)
    # Shares of the volume: 40 of 80 queries are English.
    assert [(share.code, share.n_texts) for share in result.languages] == [("en", 2), ("fr", 1)]
    assert [share.share for share in result.languages] == pytest.approx([0.5, 0.5])
    assert result.language_problem.startswith("50% of the queries are in English and the documents in French: ")
    assert "the queries with no answer in the documents may be wrong" in result.language_problem
    assert result.headline().endswith(result.language_problem)
    section = result.to_dict()
    assert section["language_problem"] == result.language_problem
    assert section["languages"][0] == {"code": "en", "name": "English", "share": 0.5, "n_distinct": 2}
    # French queries only: nothing to say; without the documents' languages, nothing is read.
    french = read_traffic(_csv(pd.DataFrame({"query": ["Quand la facture est-elle envoyée ?"]})), "log.csv")
    same = analyze_traffic(french, vectors[:1], np.stack([_direction(9)]), ["t"], np.stack([_near(0, 3)]),
                           languages=profile, **kwargs)
    assert same.language_problem == "" and [share.code for share in same.languages] == ["fr"]
    unread = analyze_traffic(log, vectors, np.stack([_direction(9)]), ["t"], np.stack([_near(0, 3)]), **kwargs)
    assert unread.languages == () and unread.language_problem == ""
