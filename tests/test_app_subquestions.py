"""The Sub-questions page through Streamlit's AppTest, against the local fake OpenAI-compatible server.

The same small analysis as tests/test_app.py (three articles, the Drum/Flute/Zebra questions) is embedded
once per module with the real bundled model into a temporary cache. The fake server answers each question
with scripted sub-questions, chosen by the question text in the prompt, and records every request, so the
tests can check what the page shows against the core and that rescoring never asks the LLM again.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from coverage_core.checks.subquestions import (
    UNAVAILABLE_REASON,
    SubQuestionConfig,
    analyze_subquestions,
    estimate_decomposition_cost,
    rescore_subquestions,
)
from coverage_core.costs import default_price_table
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
from coverage_core.session import inputs_key
from coverage_core.suggest.llm import ChatClient, LLMConfig
from tests.app_support import example_run, run_page, texts
from tests.fakes import FakeAPIServer, chat_reply, error_reply
from ui import state
from ui.messages import user_message

PAGE = "pages/8_subquestions.py"
CHAT = "/v1/chat/completions"

DRUM, FLUTE, SNARES = 0, 27, 7  # positions in the subset's questions
UNRELATED = "How many penguins live in Antarctica?"
SUB_QUESTIONS = {
    "Is the drum a member of the percussion group?": [
        ("Which instrument family does the drum belong to?", "core"),
        (UNRELATED, "core"),
        ("What is a percussion instrument?", "background"),
        ("What other percussion instruments exist?", "follow-up"),
    ],
    "Where was the oldest flute ever discovered found?": [
        ("In which country was the oldest flute found?", "core"),
        ("What is a flute?", "background"),
        ("How old is the oldest flute?", "follow-up"),
    ],
}


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    """Session-state values of a finished run, computed once for the module."""
    values, analysis, _, embedder, cache = example_run(state.Settings(n_clusters=4), module_cache_dir)
    return values, analysis, embedder, cache


@pytest.fixture
def server(monkeypatch):
    """The fake server answering each question with its scripted sub-questions (chosen from the prompt)."""
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeAPIServer() as fake:
        fake.handle(CHAT, lambda body: chat_reply(_reply_for(body)))
        yield fake


def _reply_for(body: dict) -> str:
    prompt = body["messages"][1]["content"]
    for question, subs in SUB_QUESTIONS.items():
        if f"Question: {question}\n" in prompt:
            return json.dumps({"sub_questions": [{"text": text, "type": kind} for text, kind in subs]})
    return "Sorry, I cannot help with that {"  # not JSON, not even after the reminder


def _with_llm(values: dict, server: FakeAPIServer) -> dict:
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(
        llm_enabled=True, llm_model="fake-chat", llm_base_url=f"{server.url}/v1"
    )
    return values


def app(values: dict) -> AppTest:
    return run_page(PAGE, values)


def table(at: AppTest, column: str):
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with a {column!r} column"
    return found[0]


def expected(reference, server, positions, config=None):
    """What the core computes for these questions (asks the fake server again)."""
    questions = [reference.questions.questions[i] for i in positions]
    client = ChatClient(LLMConfig(model="fake-chat", base_url=f"{server.url}/v1"))
    embedder = make_embedder("local")
    return analyze_subquestions(
        questions, reference.question_vectors[positions], reference.corpus.vectors,
        lambda texts: embed_texts(texts, embedder, EmbeddingCache()).vectors, client,
        config or SubQuestionConfig(top_k=5),
    )


def by_row(frame, column: str) -> dict[int, float]:
    return {int(row): math.nan if pd.isna(value) else float(value) for row, value in zip(frame["row"], frame[column])}


def percent(share: float) -> float:
    """A share as the page shows it: a whole percent (``ui.columns.percents``)."""
    return math.nan if math.isnan(share) else float(round(100 * share))


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, abs_tol=1e-9)


# ---------------------------------------------------------------- tests


@pytest.mark.slow
def test_without_an_llm_the_page_says_why_and_links_to_configure(seeded):
    values, _, _, _ = seeded
    at = app(values)
    assert user_message(UNAVAILABLE_REASON) in texts(at.info)  # the core reason, in the dashboard's words
    assert any("Configure" in str(link.proto.label) for link in at.get("page_link"))
    assert not at.error
    assert state.W_SUB_RUN not in [b.key for b in at.button]


@pytest.mark.slow
def test_llm_on_without_a_key_is_a_plain_error(seeded, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    values, _, _, _ = seeded
    values = dict(values)
    values[state.SETTINGS] = values[state.SETTINGS].replace(llm_enabled=True, llm_base_url="")
    at = app(values)
    assert "No OpenAI API key" in " ".join(texts(at.error))


@pytest.mark.slow
def test_select_estimate_run_and_rescore_without_asking_again(seeded, server):
    values, reference, _, _ = seeded
    at = app(_with_llm(values, server))
    questions = reference.questions.questions

    # Quick pick: the ten questions with the lowest best similarity.
    at.button[[b.label for b in at.button].index("The 10 least-supported questions")].click().run()
    lowest = list(reference.question_table["max_similarity"].to_numpy().argsort(kind="stable")[:10])
    assert at.multiselect(key=state.W_SUB_SELECTION).value == lowest

    at.multiselect(key=state.W_SUB_SELECTION).set_value([DRUM, FLUTE]).run()
    assert not at.exception
    cost = estimate_decomposition_cost(
        [questions[DRUM], questions[FLUTE]], "fake-chat", default_price_table(), "openai", SubQuestionConfig()
    )
    assert cost.label in texts(at.caption)  # the cost is shown before anything is sent
    assert server.requests_to(CHAT) == []

    at.button(key=state.W_SUB_RUN).click().run()
    assert not at.exception and not at.error
    assert len(server.requests_to(CHAT)) == 2

    shown = table(at, "weighted score")
    assert list(shown["row"]) == [questions[DRUM].row, questions[FLUTE].row]
    assert list(shown["status"]) == ["ok", "ok"]
    truth = expected(reference, server, [DRUM, FLUTE])
    for q in truth.questions:
        assert same(by_row(shown, "core supported")[q.row], percent(q.core_supported_share))
        assert same(by_row(shown, "weighted score")[q.row], percent(q.weighted_score))
    drum = truth.questions[0]
    assert drum.core_supported_share == 0.5 and drum.unsupported_core == (UNRELATED,)

    gaps = table(at, "unsupported core sub-question")
    assert list(gaps["unsupported core sub-question"]) == [UNRELATED]
    assert list(gaps["row"]) == [questions[DRUM].row]
    assert "Unsupported core sub-questions (1)" in texts(at.header)
    flat = table(at, "sub-question")
    assert len(flat) == 7 and set(flat["type"]) == {"core", "background", "follow-up"}

    # A new core weight rescores at once; the LLM is not asked again.
    requests = len(server.requests_to(CHAT))
    before = by_row(shown, "weighted score")[questions[DRUM].row]
    at.number_input(key=state.W_SUB_CORE_WEIGHT).set_value(2.0).run()
    assert not at.exception
    assert len(server.requests_to(CHAT)) == requests
    after = by_row(table(at, "weighted score"), "weighted score")[questions[DRUM].row]
    rescored = rescore_subquestions(truth, SubQuestionConfig(core_weight=2.0, top_k=5))
    assert after != before and same(after, percent(rescored.questions[0].weighted_score))
    stored = at.session_state[state.SUBQUESTIONS]
    assert stored.key.source == inputs_key(values[state.CORPUS].key, values[state.QUESTION_VECTORS].key)
    assert stored.value.config.core_weight == 2.0  # the report gets the user's weights

    # The same selection is not sent again.
    assert at.button(key=state.W_SUB_RUN).disabled


@pytest.mark.slow
def test_malformed_reply_fails_that_question_and_scores_the_others(seeded, server):
    values, reference, _, _ = seeded
    questions = reference.questions.questions
    at = app(_with_llm(values, server))
    at.multiselect(key=state.W_SUB_SELECTION).set_value([DRUM, SNARES, FLUTE]).run()
    at.button(key=state.W_SUB_RUN).click().run()
    assert not at.exception and not at.error
    shown = table(at, "weighted score")
    status = dict(zip(shown["row"], shown["status"]))
    assert status == {questions[DRUM].row: "ok", questions[SNARES].row: "failed", questions[FLUTE].row: "ok"}
    failed = table(at, "reason")
    assert list(failed["row"]) == [questions[SNARES].row]
    assert "did not return valid JSON" in failed["reason"][0]
    assert not math.isnan(by_row(shown, "weighted score")[questions[FLUTE].row])
    assert "could not be broken down" in " ".join(texts(at.warning))
    assert len(server.requests_to(CHAT)) == 4  # one each, plus one reminder for the malformed reply
    # Only the failed question is sent again.
    assert not at.button(key=state.W_SUB_RUN).disabled


@pytest.mark.slow
def test_rejected_key_is_a_plain_error_and_nothing_else_is_sent(seeded, server):
    values, reference, _, _ = seeded
    questions = reference.questions.questions
    server.script(CHAT, [error_reply(401, "Incorrect API key provided: sk-secret-123")])
    at = app(_with_llm(values, server))
    at.multiselect(key=state.W_SUB_SELECTION).set_value([DRUM, FLUTE]).run()
    at.button(key=state.W_SUB_RUN).click().run()
    assert not at.exception
    errors = " ".join(texts(at.error))
    assert "rejected the API key" in errors and "sk-secret-123" not in errors
    assert len(server.requests_to(CHAT)) == 1
    shown = table(at, "weighted score")
    assert dict(zip(shown["row"], shown["status"])) == {
        questions[DRUM].row: "failed", questions[FLUTE].row: "not sent",
    }
    reasons = list(table(at, "reason")["reason"])
    assert "rejected the API key" in reasons[0] and reasons[1].startswith("Not sent because the LLM stopped answering")
