"""Anonymisation placeholders in a query log: never a topic word, never word evidence."""

import numpy as np
import pandas as pd
import pytest

from coverage_core.checks.query_log import read_traffic
from coverage_core.checks.traffic import TrafficConfig, analyze_traffic
from coverage_core.checks.traffic_answers import has_mask, query_answers, strip_masks


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("Do lobsters have arms? <EMAIL>", "Do lobsters have arms?"),
        ("my name is [REDACTED] and lobsters", "my name is , and lobsters"),
        ("Hi {name}, do lobsters molt", "Hi , do lobsters molt"),
        ("{{user}} asks about lobsters", "asks about lobsters"),
        ("card XXXX declined", "card , declined"),
        ("J***n asked about lobsters", "asked about lobsters"),
        ("<PERSON_1>'s lobster", "lobster"),
        ("write to [email] about lobsters", "write to , about lobsters"),
        ("call [phone] or [number]", "call , or"),
        ("REDACTED wants the lobster ##### recipe", "wants the lobster , recipe"),
    ],
)
def test_placeholders_and_their_fragments_are_stripped(text, stripped):
    assert has_mask(text)
    assert strip_masks(text) == stripped


@pytest.mark.parametrize("text", ["Do lobsters have arms?", "Is the fee $250 or 1,500 euros?", "What is XML?",
                                  "Who was Louis XIV?", "Ask a question (any)", "Max Planck"])
def test_ordinary_text_is_left_alone(text):
    assert not has_mask(text)
    assert strip_masks(text) == text


def _unit(index: int, wobble: float = 0.0, dim: int = 8) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    vector[(index + 1) % dim] = wobble
    return vector / np.linalg.norm(vector)


def test_masks_never_name_a_topic():
    placeholders = ["<EMAIL>", "[REDACTED]", "{name}", "XXXX", "J***n", "[email]"]
    texts = [f"{mask} lobster claws molting question {i}" for i, mask in enumerate(placeholders)]
    texts += [f"{mask} violin bow strings question {i}" for i, mask in enumerate(placeholders)]
    log = read_traffic(pd.DataFrame({"query": texts}).to_csv(index=False).encode(), "log.csv")
    queries = np.stack([_unit(0, 0.01 * i) for i in range(6)] + [_unit(3, 0.01 * i) for i in range(6)])
    chunks = np.stack([_unit(0), _unit(3)])
    result = analyze_traffic(log, queries, chunks[:1], ["t"], chunks, support_threshold=0.6,
                             question_support_threshold=0.6, config=TrafficConfig(n_topics=2))
    words = " ".join(result.topics["label"]).lower().replace("·", " ").split()
    assert {"lobster", "violin"} <= {w.rstrip("s") for w in words}
    assert not {"email", "redacted", "name", "xxxx", "n", "j"} & set(words)
    # What users read keeps the masked text as it was logged.
    assert any("<EMAIL>" in example for example in result.topics["examples"].sum())


def test_a_placeholder_is_no_word_evidence():
    """The word check reads the query without its masks: "REDACTED" read as a name no passage mentions, or
    "EMAIL" as a word in none, would flag a query the lobster passage answers."""
    chunk_texts = ["The lobster has ten walking legs and two large claws used to crush shells."]
    texts = ["How many claws does the lobster have? [REDACTED]", "Lobster claws <EMAIL> how many"]
    vectors = np.stack([_unit(0, 0.8), _unit(0, 0.8)])  # similarity 0.78 to the passage, above the level 0.6
    kwargs = {"question_support_threshold": 0.6, "chunk_texts": chunk_texts, "chunk_documents": ["lobster.txt"]}
    raw = query_answers(texts, vectors, np.stack([_unit(0)]), **kwargs)
    assert raw.is_answerable.tolist() == [False, False]  # what the masks did before they were stripped
    answers = query_answers([strip_masks(t) for t in texts], vectors, np.stack([_unit(0)]), **kwargs)
    assert answers.is_answerable.tolist() == [True, True]
    assert answers.best_passage.tolist() == [0, 0]
    assert answers.best_similarity == pytest.approx([float(_unit(0, 0.8)[0])] * 2, abs=1e-6)


def test_queries_are_screened_in_blocks_with_the_same_decision(monkeypatch):
    from coverage_core.checks import traffic_answers

    rng = np.random.default_rng(0)
    chunks = rng.normal(size=(30, 64)).astype(np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    queries = np.vstack([chunks[:20] + 0.05 * rng.normal(size=(20, 64)), rng.normal(size=(10, 64))]).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    whole = query_answers([""] * 30, queries, chunks, question_support_threshold=0.6)
    monkeypatch.setattr(traffic_answers, "SCREEN_BLOCK", 7)
    blocks = query_answers([""] * 30, queries, chunks, question_support_threshold=0.6)
    assert blocks.is_answerable.tolist() == whole.is_answerable.tolist()
    assert blocks.best_passage.tolist() == whole.best_passage.tolist()
    assert whole.is_answerable[:20].all() and not whole.is_answerable[20:].any()


def test_junit_fails_a_case_for_unmet_demand_with_no_answer_in_the_documents():
    import xml.etree.ElementTree as ET

    from coverage_core.outputs.junit import junit_xml
    from tests.helpers import make_report

    def traffic_cases(unanswered, **more):
        section = {"n_queries": 100, "topics": [], "unanswered": unanswered, **more}
        root = ET.fromstring(junit_xml(make_report(traffic=section)))
        return root.findall("./testsuite[@name='coverage.traffic']/testcase")

    unmet = {"label": "no answer", "volume": 20, "examples": ["How do I reset my password?"], "is_unmet": True}
    (case,) = traffic_cases(unmet)
    assert case.get("name") == "traffic: no answer in the documents"
    assert "20 queries (20% of traffic) have no answer" in case.find("failure").get("message")
    (quiet,) = traffic_cases({**unmet, "is_unmet": False})
    assert quiet.find("failure") is None and "reset my password" in quiet.find("system-out").text
    assert traffic_cases({**unmet, "volume": 0}) == [] and traffic_cases(None) == []
    # Queries in another language than the documents: the passing case says so first; a failure stands as it is.
    problem = "The queries are in English and the documents in French: … may be wrong; check them before acting."
    (noted,) = traffic_cases({**unmet, "is_unmet": False}, language_problem=problem)
    assert noted.find("system-out").text.startswith(problem)
    (failed,) = traffic_cases(unmet, language_problem=problem)
    assert failed.find("failure") is not None
