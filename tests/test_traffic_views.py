"""The Production traffic page's tables and sentences, and the traffic rows of the Gap page's editor (no Streamlit)."""

import numpy as np
import pandas as pd

from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.traffic import TrafficConfig, analyze_traffic
from coverage_core.checks.traffic_answers import NO_ANSWER
from ui.views import traffic as view
from ui.views.gaps import traffic_suggestions_frame


def _unit(index: int, wobble: float = 0.0, dim: int = 8) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    vector[(index + 1) % dim] = wobble
    return vector / np.linalg.norm(vector)


def _result(support_counts=(12, 8)):
    texts = ["lobster claws", "lobster legs", "How do I reset my password?", "How do I cancel my subscription?"]
    frame = pd.DataFrame({"query": texts, "count": [30, 20, *support_counts]})
    log = read_traffic(frame.to_csv(index=False).encode(), "log.csv")
    queries = np.stack([_unit(0, 0.05), _unit(0, 0.1), _unit(4), _unit(5)])
    chunks = np.stack([_unit(0), _unit(2)])
    return analyze_traffic(log, queries, np.stack([_unit(6)]), ["t"], chunks, support_threshold=0.6,
                           question_support_threshold=0.6, chunk_texts=["lobster text", "watt text"],
                           chunk_documents=["Lobster.txt", "James_Watt.txt"], chunk_labels=[3, 8],
                           config=TrafficConfig(n_topics=1))


def test_unanswered_queries_are_listed_and_counted_in_plain_words():
    result = _result()
    sentence = view.unanswered_sentence(result)
    assert sentence.startswith(f"20 queries (29% of the traffic, 2 distinct queries) have {NO_ANSWER}")
    table = view.unanswered_table(result)
    assert table["query"].tolist() == ["How do I reset my password?", "How do I cancel my subscription?"]
    assert table["times asked"].tolist() == [12, 8]
    topics = view.traffic_topic_table(result)
    assert topics["queries"].tolist() == [50] and "password" not in " ".join(topics["most asked"])


def test_one_unanswered_query_is_singular():
    assert view.unanswered_sentence(_result((1, 1))).startswith("2 queries (4% of the traffic, 2 distinct queries)")
    texts = ["lobster claws", "How do I reset my password?"]
    log = read_traffic(pd.DataFrame({"query": texts}).to_csv(index=False).encode(), "log.csv")
    single = analyze_traffic(log, np.stack([_unit(0), _unit(4)]), np.stack([_unit(6)]), ["t"], np.stack([_unit(0)]),
                             support_threshold=0.6, question_support_threshold=0.6, config=TrafficConfig(n_topics=1))
    sentence = view.unanswered_sentence(single)
    assert sentence.startswith(f"1 query (50% of the traffic, 1 distinct query) has {NO_ANSWER}")
    assert "1 query has" in single.headline()


def test_traffic_suggestions_go_to_their_passages_topic_or_are_marked():
    result = _result()
    frame = traffic_suggestions_frame(result)
    rows = frame.set_index("question")
    assert rows.loc["lobster claws", "cluster"] == 3 and rows.loc["lobster claws", "document"] == "Lobster.txt"
    for query in ("How do I reset my password?", "How do I cancel my subscription?"):
        assert pd.isna(rows.loc[query, "cluster"])  # not the James Watt topic, nor any other
        assert rows.loc[query, "passage"] == NO_ANSWER and rows.loc[query, "document"] == ""
    assert set(frame["origin"]) == {"traffic"}
    assert f"2 of them have {NO_ANSWER}" in view.suggestions_sentence(result)


def test_without_unanswered_queries_nothing_is_said():
    texts = ["lobster claws"]
    log = read_traffic(pd.DataFrame({"query": texts}).to_csv(index=False).encode(), "log.csv")
    result = analyze_traffic(log, np.stack([_unit(0)]), np.stack([_unit(6)]), ["t"], np.stack([_unit(0)]),
                             support_threshold=0.6, question_support_threshold=0.6)
    assert view.unanswered_sentence(result) == "" and view.unanswered_table(result).empty
    assert NO_ANSWER not in view.suggestions_sentence(result)
