"""Sub-question coverage: decomposition through the real openai client against the
local fake server, robust parsing, scoring on hand-made vectors, the report section."""

import json
import math

import numpy as np
import pytest

from coverage_core.checks.subquestions import (
    UNAVAILABLE_REASON,
    Decomposition,
    SubQuestion,
    SubQuestionConfig,
    analyze_subquestions,
    build_prompt,
    decompose_questions,
    estimate_decomposition_cost,
    normalize_type,
    parse_decomposition,
    rescore_subquestions,
    score_subquestions,
    subquestion_section,
    unavailable_reason,
)
from coverage_core.checks.subquestions.prompt import SYSTEM_PROMPT
from coverage_core.costs import approximate_tokens, default_price_table
from coverage_core.errors import InputError
from coverage_core.suggest.llm import ChatClient
from coverage_core.types import Question
from tests.fakes import FakeEmbedder, Reply, chat_reply, error_reply
from tests.helpers import chat_client

KEY = "sk-test-SUBQ-9191"
CHAT = "/v1/chat/completions"


def client_for(server, **overrides) -> ChatClient:
    return chat_client(server, KEY, **overrides)


# --------------------------------------------------------------------------
# hand-made vectors (d = 5): chunks are the first four unit axes
# --------------------------------------------------------------------------

E = np.eye(5, dtype=np.float32)
CHUNKS = E[:4]
# Q1 ranks the chunks 0, 1, 2, 3: with k = 2 it retrieves chunks 0 and 1.
# Q2 is chunk 3; the rest tie at 0, so k = 2 retrieves chunks 3 and 0.
Q_VECTORS = np.array([[0.6, 0.5, 0.3, 0.1, 0.0], E[3], E[0]], dtype=np.float32)
SUB_VECTORS = {
    "A: in chunk 0?": E[0],  # best 1 (chunk 0, retrieved)            -> both
    "B: in chunk 2?": E[2],  # best 1 (chunk 2, not retrieved for Q1) -> knowledge base only
    "C: half chunk 0?": (E[0] + E[3]) / np.sqrt(2),  # 0.707 to chunk 0 (retrieved) -> both
    "D: nowhere?": E[4],  # similarity 0 everywhere               -> neither
    "E: weakly chunk 0?": np.array([0.436, 0, 0, 0, 0.9], dtype=np.float32),  # 0.436 -> neither at 0.5
    "F: in chunk 3?": E[3],  # Q2: retrieved                        -> both
    "G: in chunk 1?": E[1],  # Q2: chunk 1 not retrieved            -> knowledge base only
}
Q1_SUBS = [("A: in chunk 0?", "core"), ("B: in chunk 2?", "core"), ("C: half chunk 0?", "background"),
           ("D: nowhere?", "follow-up"), ("E: weakly chunk 0?", "core")]
Q2_SUBS = [("F: in chunk 3?", "core"), ("G: in chunk 1?", "background")]
QUESTIONS = [Question(10, "What is question one about?"), Question(11, "And question two?"),
             Question(12, "Question three?")]
CONFIG = SubQuestionConfig(top_k=2)


class Embed:
    """The cached embedder stand-in: a lookup table that records its calls."""

    def __init__(self, table=SUB_VECTORS):
        self.table = table
        self.calls = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return np.stack([self.table[t] for t in texts])


def reply_for(subs) -> str:
    return json.dumps({"sub_questions": [{"text": t, "type": k} for t, k in subs]})


def decomposed(*subs_per_question, failed=()):
    out = []
    for i, question in enumerate(QUESTIONS[: len(subs_per_question)]):
        if i in failed:
            out.append(Decomposition(question.row, question.text, status="failed", reason="boom"))
        else:
            subs = tuple(SubQuestion(t, k) for t, k in subs_per_question[i])
            out.append(Decomposition(question.row, question.text, subs))
    return out


def scored(config=CONFIG):
    decompositions = decomposed(Q1_SUBS, Q2_SUBS, [], failed=(2,))
    return score_subquestions(decompositions, Q_VECTORS, CHUNKS, Embed(), config)


# --------------------------------------------------------------------------
# through the real client: replies
# --------------------------------------------------------------------------


def test_good_reply_end_to_end_scores_as_computed_by_hand(fake_api):
    fake_api.script(CHAT, [chat_reply(reply_for(Q1_SUBS)), chat_reply(reply_for(Q2_SUBS))])
    embed = Embed()
    result = analyze_subquestions(QUESTIONS[:2], Q_VECTORS[:2], CHUNKS, embed, client_for(fake_api), CONFIG)

    requests = fake_api.requests_to(CHAT)
    assert len(requests) == 2
    system, user = (m["content"] for m in requests[0].body["messages"])
    assert "JSON" in system
    assert "Question: What is question one about?" in user
    assert "at most 8 sub-questions" in user
    assert all(f'"{kind}"' in user for kind in ("core", "background", "follow-up"))
    assert embed.calls == [[t for t, _ in Q1_SUBS + Q2_SUBS]]  # one batch for everything

    q1, q2 = result.questions
    assert (q1.row, q1.status, q2.row, q2.status) == (10, "ok", 11, "ok")
    assert [(s.text, s.type) for s in q1.sub_questions] == Q1_SUBS
    assert [s.supported for s in q1.sub_questions] == [True, True, True, False, False]
    assert [s.supported_by_retrieved for s in q1.sub_questions] == [True, False, True, False, False]
    assert q1.sub_questions[2].best_similarity == pytest.approx(1 / np.sqrt(2), abs=1e-6)
    # knowledge base (headline): core 2 of 3; (1 + 1 + 0.5) / (1 + 1 + 1 + 0.5 + 0.25)
    assert q1.core_supported_share == pytest.approx(2 / 3)
    assert q1.weighted_score == pytest.approx(2.5 / 3.75)
    assert q1.unsupported_core == ("E: weakly chunk 0?",)
    # retrieved: core 1 of 3; (1 + 0.5) / 3.75
    assert q1.retrieved.core_supported_share == pytest.approx(1 / 3)
    assert q1.retrieved.weighted_score == pytest.approx(0.4)
    assert q1.retrieved.unsupported_core == ("B: in chunk 2?", "E: weakly chunk 0?")
    assert q2.weighted_score == pytest.approx(1.0)
    assert q2.retrieved.weighted_score == pytest.approx(1 / 1.5)
    assert result.model == "fake-chat" and result.warnings == ()


def test_fenced_json_with_trailing_commas(fake_api):
    reply = (
        "Here are the sub-questions:\n```json\n"
        '{"sub_questions": [{"text": "A: in chunk 0?", "type": "core",}, '
        '{"text": "D: nowhere?", "type": "follow-up",},],}\n```\nAnything else?'
    )
    fake_api.script(CHAT, [chat_reply(reply)])
    decompositions, warnings = decompose_questions(QUESTIONS[:1], client_for(fake_api), CONFIG)
    assert warnings == []
    assert decompositions[0].status == "ok"
    assert [(s.text, s.type) for s in decompositions[0].sub_questions] == [
        ("A: in chunk 0?", "core"), ("D: nowhere?", "follow-up")]
    assert len(fake_api.requests_to(CHAT)) == 1  # parsed leniently, no second request


def test_synonym_types_extra_keys_duplicates_and_empty_strings(fake_api):
    items = [
        {"text": "Who is one?", "type": "Core", "why": "extra key"},
        {"question": "What is two?", "category": "essential"},
        {"text": "Where is three?", "type": "followup"},
        {"text": "When is four?", "type": "follow_up"},
        {"text": "Why is five?", "type": "Background Question"},
        {"text": "How is six?", "type": "context"},
        {"text": "Which is seven?"},  # no type
        {"text": "Whose is eight?", "type": "somewhat important"},  # unknown type
        {"text": "  who IS one ", "type": "follow-up"},  # repeat of the first
        {"text": "   ", "type": "core"},
        {"text": "", "type": "core"},
        {"text": None, "type": "core"},
        {"text": "What is question one about", "type": "core"},  # the question itself
    ]
    fake_api.script(CHAT, [chat_reply(json.dumps({"Sub-Questions": items}))])
    config = SubQuestionConfig(max_sub_questions=30)
    (decomposition,), _ = decompose_questions(QUESTIONS[:1], client_for(fake_api), config)
    got = [(s.text, s.type, s.type_assumed) for s in decomposition.sub_questions]
    assert got == [
        ("Who is one?", "core", False),
        ("What is two?", "core", False),
        ("Where is three?", "follow-up", False),
        ("When is four?", "follow-up", False),
        ("Why is five?", "background", False),
        ("How is six?", "background", False),
        ("Which is seven?", "background", True),
        ("Whose is eight?", "background", True),
    ]


def test_malformed_reply_fails_that_question_only(fake_api):
    fake_api.script(
        CHAT,
        [
            chat_reply(reply_for(Q1_SUBS)),
            chat_reply("Sure, the sub-questions are: what, why"),  # not JSON ...
            chat_reply("{sub_questions: [oops"),  # ... nor after the reminder
            chat_reply('{"answer": 42}'),  # JSON, but no sub-questions
            chat_reply(reply_for(Q2_SUBS)),
        ],
    )
    questions = QUESTIONS + [Question(13, "Question four?")]
    vectors = np.vstack([Q_VECTORS, E[3]])
    result = analyze_subquestions(questions, vectors, CHUNKS, Embed(), client_for(fake_api), CONFIG)
    assert [q.status for q in result.questions] == ["ok", "failed", "failed", "ok"]
    assert "valid JSON" in result.questions[1].reason
    assert "no list of sub-questions" in result.questions[2].reason
    assert "stronger model" in result.questions[2].reason
    assert result.questions[0].weighted_score == pytest.approx(2.5 / 3.75)
    assert result.questions[3].weighted_score == pytest.approx(1.0)  # Q2's sub-questions, Q2's vector
    assert math.isnan(result.questions[1].weighted_score) and result.questions[1].sub_questions == ()
    assert len(fake_api.requests_to(CHAT)) == 5  # nobody stopped asking
    assert len(result.warnings) == 1 and "2 questions could not be broken" in result.warnings[0]


# --------------------------------------------------------------------------
# through the real client: provider errors
# --------------------------------------------------------------------------


def test_401_stops_with_clear_auth_message_and_no_key(fake_api):
    fake_api.script(CHAT, [error_reply(401, f"Incorrect API key provided: {KEY}")])
    result = analyze_subquestions(QUESTIONS, Q_VECTORS, CHUNKS, Embed(), client_for(fake_api), CONFIG)
    assert [q.status for q in result.questions] == ["failed", "skipped", "skipped"]
    assert "rejected the API key" in result.questions[0].reason
    assert "rejected the API key" in result.questions[1].reason and "Not sent" in result.questions[1].reason
    assert len(fake_api.requests_to(CHAT)) == 1  # the others were never sent
    (warning,) = result.warnings
    assert "stopped after 0 of 3" in warning and "API key" in warning
    section = json.dumps(subquestion_section(result), allow_nan=False)
    assert KEY not in section and "SUBQ" not in section


def test_429_then_success_is_retried(fake_api):
    fake_api.script(
        CHAT, [error_reply(429, "slow down", **{"retry-after-ms": "10"}), chat_reply(reply_for(Q2_SUBS))]
    )
    decompositions, warnings = decompose_questions(QUESTIONS[:1], client_for(fake_api, max_retries=2), CONFIG)
    assert decompositions[0].status == "ok" and warnings == []
    assert [s.text for s in decompositions[0].sub_questions] == ["F: in chunk 3?", "G: in chunk 1?"]
    assert len(fake_api.requests_to(CHAT)) == 2


def test_rate_limit_after_retries_stops_and_keeps_finished(fake_api):
    fake_api.script(CHAT, [chat_reply(reply_for(Q1_SUBS)), error_reply(429, "slow down")])
    decompositions, warnings = decompose_questions(QUESTIONS, client_for(fake_api), CONFIG)
    assert [d.status for d in decompositions] == ["ok", "failed", "skipped"]
    assert "rate-limiting" in decompositions[1].reason
    assert len(decompositions[0].sub_questions) == 5
    assert "stopped after 1 of 3" in warnings[0]


def test_timeout_keeps_finished_results(fake_api):
    fake_api.script(CHAT, [chat_reply(reply_for(Q1_SUBS)), Reply(200, {}, delay=1.5)])
    seen = []
    result = analyze_subquestions(
        QUESTIONS, Q_VECTORS, CHUNKS, Embed(), client_for(fake_api, timeout=0.3), CONFIG,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert [q.status for q in result.questions] == ["ok", "failed", "skipped"]
    assert "did not answer within 0.3 seconds" in result.questions[1].reason
    assert result.questions[0].weighted_score == pytest.approx(2.5 / 3.75)  # finished work kept and scored
    assert len(fake_api.requests_to(CHAT)) == 2
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert result.count("ok") == 1 and result.count("skipped") == 1


def test_server_error_skips_only_that_question(fake_api):
    fake_api.script(CHAT, [error_reply(500, "internal"), chat_reply(reply_for(Q2_SUBS))])
    decompositions, warnings = decompose_questions(QUESTIONS[:2], client_for(fake_api), CONFIG)
    assert [d.status for d in decompositions] == ["failed", "ok"]
    assert "HTTP 500" in decompositions[0].reason
    assert len(warnings) == 1 and "1 question could not" in warnings[0]


def test_no_llm_configured_says_what_to_configure():
    embed = Embed()
    with pytest.raises(InputError) as caught:
        analyze_subquestions(QUESTIONS, Q_VECTORS, CHUNKS, embed, None, CONFIG)
    assert str(caught.value) == UNAVAILABLE_REASON
    assert "needs an LLM" in UNAVAILABLE_REASON
    assert "base URL" in UNAVAILABLE_REASON and "--" not in UNAVAILABLE_REASON  # neutral: no CLI flags
    assert embed.calls == []
    assert unavailable_reason(None) == UNAVAILABLE_REASON


def test_unavailable_reason_is_none_with_a_client(fake_api):
    assert unavailable_reason(client_for(fake_api)) is None


def test_bad_input_is_rejected_before_anything_is_sent(fake_api):
    llm = client_for(fake_api)
    with pytest.raises(InputError, match="Select at least one question"):
        analyze_subquestions([], np.zeros((0, 5)), CHUNKS, Embed(), llm)
    with pytest.raises(InputError, match="one question embedding per selected question"):
        analyze_subquestions(QUESTIONS, Q_VECTORS[:2], CHUNKS, Embed(), llm)
    with pytest.raises(InputError, match="4 dimensions but the chunk vectors have 5"):
        analyze_subquestions(QUESTIONS, Q_VECTORS[:, :4], CHUNKS, Embed(), llm)
    with pytest.raises(InputError, match="no chunk embeddings"):
        analyze_subquestions(QUESTIONS, Q_VECTORS, np.zeros((0, 5)), Embed(), llm)
    assert fake_api.requests_to(CHAT) == []


# --------------------------------------------------------------------------
# parsing without a server
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [("core", "core"), ("CORE", "core"), ("Essential", "core"), ("core sub-question", "core"),
     ("Background", "background"), ("context", "background"), ("optional", "background"),
     ("follow-up", "follow-up"), ("Follow Up", "follow-up"), ("follow_up", "follow-up"),
     ("followup", "follow-up"), ("Follow-up question", "follow-up"), ("related", "follow-up"),
     ("maybe", None), ("", None), (3, None), (None, None)],
)
def test_normalize_type(raw, expected):
    assert normalize_type(raw) == expected


def test_bare_list_of_strings_gets_the_default_type():
    subs = parse_decomposition('["Who?", "What?", "who"]', "Q", 8)
    assert [(s.text, s.type, s.type_assumed) for s in subs] == [
        ("Who?", "background", True), ("What?", "background", True)]


def test_grouped_by_type_pairs_and_nested_shapes():
    grouped = {"Core": ["Who?"], "follow_up": [{"text": "Then?"}], "notes": "ignored"}
    assert [(s.text, s.type) for s in parse_decomposition(grouped, "Q")] == [("Who?", "core"), ("Then?", "follow-up")]
    pairs = [["Who?", "core"], ["background", "What?"], {"core": "Why?"}]
    assert [(s.text, s.type) for s in parse_decomposition(pairs, "Q")] == [
        ("Who?", "core"), ("What?", "background"), ("Why?", "core")]
    nested = {"result": {"subQuestions": [{"sub_question": "Where?", "kind": "Context"}]}}
    assert [(s.text, s.type) for s in parse_decomposition(nested, "Q")] == [("Where?", "background")]


def test_over_the_cap_core_ones_are_kept_in_model_order():
    items = [{"text": f"F{i}?", "type": "follow-up"} for i in range(3)] + [
        {"text": "C1?", "type": "core"}, {"text": "B1?", "type": "background"}, {"text": "C2?", "type": "core"}]
    subs = parse_decomposition({"sub_questions": items}, "Q", max_sub_questions=3)
    assert [s.text for s in subs] == ["C1?", "B1?", "C2?"]


@pytest.mark.parametrize("reply", [{"sub_questions": []}, {"answer": 42}, [], ["", "  "], "not json", 42])
def test_nothing_usable_raises_value_error(reply):
    with pytest.raises(ValueError):
        parse_decomposition(reply, "Q")


# --------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------


def test_overall_by_type_and_means_by_hand():
    result = scored()
    core, background, follow_up = result.by_type
    # core: A, B, E (Q1), F (Q2); knowledge base A, B, F; retrieved A, F
    assert (core.n, core.n_supported, core.n_supported_by_retrieved) == (4, 3, 2)
    assert (core.share, core.share_by_retrieved) == (0.75, 0.5)
    assert (background.n, background.share, background.share_by_retrieved) == (2, 1.0, 0.5)
    assert (follow_up.n, follow_up.share) == (1, 0.0)
    # the failed question is left out of the means
    assert result.mean_core_supported_share() == pytest.approx((2 / 3 + 1) / 2)
    assert result.mean_weighted_score() == pytest.approx((2 / 3 + 1) / 2)
    assert result.mean_core_supported_share("retrieved") == pytest.approx((1 / 3 + 1) / 2)
    assert result.mean_weighted_score("retrieved") == pytest.approx((0.4 + 1 / 1.5) / 2)


def test_weights_change_the_weighted_score():
    result = scored(SubQuestionConfig(top_k=2, core_weight=1, background_weight=0, follow_up_weight=1))
    q1, q2, _ = result.questions
    assert q1.weighted_score == pytest.approx(2 / 4)  # (A + B) / (A, B, E, D)
    assert q1.retrieved.weighted_score == pytest.approx(1 / 4)
    assert q2.weighted_score == pytest.approx(1.0)
    assert q1.core_supported_share == pytest.approx(2 / 3)  # weights do not touch the core share

    only_follow_up = scored(SubQuestionConfig(top_k=2, core_weight=0, background_weight=0, follow_up_weight=2))
    assert only_follow_up.questions[0].weighted_score == 0.0  # D is unsupported
    assert math.isnan(only_follow_up.questions[1].weighted_score)  # Q2 has no follow-up


def test_threshold_and_k_change_support():
    lower = scored(SubQuestionConfig(top_k=2, support_threshold=0.4))
    assert lower.questions[0].sub_questions[4].supported  # E at 0.436
    assert lower.questions[0].core_supported_share == 1.0
    assert lower.questions[0].retrieved.unsupported_core == ("B: in chunk 2?",)

    wider = scored(SubQuestionConfig(top_k=3))  # Q1 now retrieves chunk 2 too
    assert wider.questions[0].sub_questions[1].supported_by_retrieved
    assert wider.questions[0].retrieved.core_supported_share == pytest.approx(2 / 3)


def test_retrieved_support_implies_knowledge_base_support():
    rng = np.random.default_rng(7)
    chunks = rng.standard_normal((40, 8))
    texts = [f"s{i}" for i in range(30)]
    table = dict(zip(texts, rng.standard_normal((30, 8))))
    decompositions = [
        Decomposition(j, f"q{j}", tuple(SubQuestion(t, "core") for t in texts[j * 10 : j * 10 + 10]))
        for j in range(3)
    ]
    questions = rng.standard_normal((3, 8))
    config = SubQuestionConfig(support_threshold=0.3)
    result = score_subquestions(decompositions, questions, chunks, Embed(table), config)
    subs = [s for q in result.questions for s in q.sub_questions]
    assert all(s.retrieved_similarity <= s.best_similarity + 1e-6 for s in subs)
    assert all(s.supported for s in subs if s.supported_by_retrieved)
    assert any(s.supported and not s.supported_by_retrieved for s in subs)  # the test can tell them apart

    everything = score_subquestions(decompositions, questions, chunks, Embed(table), SubQuestionConfig(top_k=40))
    for sub in (s for q in everything.questions for s in q.sub_questions):
        assert sub.retrieved_similarity == pytest.approx(sub.best_similarity, abs=1e-6)


def test_rescore_matches_a_fresh_score_and_needs_the_same_k():
    first = scored()
    config = SubQuestionConfig(top_k=2, core_weight=2, follow_up_weight=1, support_threshold=0.4,
                               headline_support="retrieved")
    again, fresh = rescore_subquestions(first, config), scored(config)
    assert subquestion_section(again) == subquestion_section(fresh)
    assert again.questions[0].weighted_score != first.questions[0].weighted_score
    with pytest.raises(InputError, match="top_k changed from 2 to 3"):
        rescore_subquestions(first, SubQuestionConfig(top_k=3))


def test_no_sub_questions_means_no_embedding_call():
    embed = Embed()
    result = score_subquestions(decomposed([], failed=(0,)), Q_VECTORS[:1], CHUNKS, embed, CONFIG)
    assert embed.calls == [] and result.questions[0].status == "failed"
    assert all(t.n == 0 and math.isnan(t.share) for t in result.by_type)


def test_mismatched_arrays_are_input_errors():
    decompositions = decomposed(Q1_SUBS)
    with pytest.raises(InputError, match="one question embedding per"):
        score_subquestions(decompositions, Q_VECTORS, CHUNKS, Embed(), CONFIG)
    narrow = {t: v[:3] for t, v in SUB_VECTORS.items()}
    with pytest.raises(InputError, match="3 dimensions but the chunk vectors have 5"):
        score_subquestions(decompositions, Q_VECTORS[:1], CHUNKS, Embed(narrow), CONFIG)
    with pytest.raises(InputError, match="returned 1 vectors for 5 sub-questions"):
        score_subquestions(decompositions, Q_VECTORS[:1], CHUNKS, lambda texts: E[:1], CONFIG)


# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, field",
    [
        (dict(core_weight=-1), "core_weight"),
        (dict(background_weight=float("nan")), "background_weight"),
        (dict(follow_up_weight=float("inf")), "follow_up_weight"),
        (dict(core_weight="1"), "core_weight"),
        (dict(core_weight=True), "core_weight"),
        (dict(core_weight=0, background_weight=0, follow_up_weight=0), "At least one"),
        (dict(support_threshold=1.5), "support_threshold"),
        (dict(support_threshold="0.5"), "support_threshold"),
        (dict(top_k=0), "top_k"),
        (dict(top_k=2.5), "top_k"),
        (dict(top_k=True), "top_k"),
        (dict(max_sub_questions=0), "max_sub_questions"),
        (dict(max_sub_questions=31), "max_sub_questions"),
        (dict(headline_support="both"), "headline_support"),
    ],
)
def test_invalid_config_is_rejected(settings, field):
    with pytest.raises(InputError, match=field):
        SubQuestionConfig(**settings)


def test_default_config_and_weights():
    config = SubQuestionConfig()
    assert config.weights == {"core": 1.0, "background": 0.5, "follow-up": 0.25}
    assert (config.support_threshold, config.top_k, config.headline_support) == (0.5, 5, "knowledge_base")
    assert SubQuestionConfig(core_weight=0, background_weight=0, follow_up_weight=0.1).weights["follow-up"] == 0.1


# --------------------------------------------------------------------------
# cost estimate
# --------------------------------------------------------------------------


def test_cost_estimate_counts_the_prompts_and_an_assumed_output():
    questions = [q.text for q in QUESTIONS]
    cost = estimate_decomposition_cost(QUESTIONS, "gpt-4o-mini")
    expected_in = sum(approximate_tokens([SYSTEM_PROMPT, build_prompt(q, 8)]) for q in questions)
    assert cost.input_tokens == expected_in
    assert cost.output_tokens == 3 * (10 + 8 * 30)
    assert cost.usd == pytest.approx((expected_in * 0.15 + cost.output_tokens * 0.60) / 1e6)
    assert "Estimate for 3 questions" in cost.label and "approximate" in cost.label and "assumed" in cost.label

    fewer = estimate_decomposition_cost(QUESTIONS, "gpt-4o-mini", config=SubQuestionConfig(max_sub_questions=4))
    assert fewer.output_tokens < cost.output_tokens
    longer = estimate_decomposition_cost([q + " with many more words in it" for q in questions], "gpt-4o-mini")
    assert longer.input_tokens > cost.input_tokens

    table = default_price_table()
    table.loc[table["model"] == "gpt-4o-mini", "usd_per_1m_output"] = 0.0
    edited = estimate_decomposition_cost(QUESTIONS, "gpt-4o-mini", table)
    assert edited.usd == pytest.approx(expected_in * 0.15 / 1e6)

    unknown = estimate_decomposition_cost(QUESTIONS, "llama3", provider="local")
    assert unknown.usd is None and "no price for llama3" in unknown.label
    assert estimate_decomposition_cost([], "gpt-4o-mini").input_tokens == 0


# --------------------------------------------------------------------------
# report section
# --------------------------------------------------------------------------


def test_section_is_plain_json_with_headline_and_both_notions():
    result = scored()
    section = subquestion_section(result)
    text = json.dumps(section, allow_nan=False)  # NaN would raise here
    assert json.loads(text) == section

    assert section["weights"] == {"core": 1.0, "background": 0.5, "follow-up": 0.25}
    assert (section["support_threshold"], section["top_k"], section["headline_support"]) == (0.5, 2, "knowledge_base")
    overall = section["overall"]
    assert (overall["n_questions"], overall["n_scored"], overall["n_failed"], overall["n_skipped"]) == (3, 2, 1, 0)
    assert overall["by_type"]["core"] == {"n": 4, "n_supported": 3, "share": 0.75}
    assert overall["by_support"]["retrieved"]["by_type"]["core"]["share"] == 0.5
    assert overall["mean_weighted_score"] == round((2 / 3 + 1) / 2, 6)
    assert overall["by_support"]["knowledge_base"]["n_questions_with_unsupported_core"] == 1
    assert overall["by_support"]["retrieved"]["n_questions_with_unsupported_core"] == 1

    q1, q2, q3 = section["questions"]
    assert (q1["row"], q1["question"]) == (10, "What is question one about?")
    assert q1["sub_questions"][1] == {
        "text": "B: in chunk 2?", "type": "core", "type_assumed": False, "best_similarity": 1.0,
        "supported": True, "retrieved_similarity": 0.0, "supported_by_retrieved": False}
    assert q1["core_supported_share"] == round(2 / 3, 6) and q1["weighted_score"] == round(2 / 3, 6)
    assert q1["unsupported_core"] == ["E: weakly chunk 0?"]
    assert q1["by_support"]["retrieved"]["unsupported_core"] == ["B: in chunk 2?", "E: weakly chunk 0?"]
    assert q3["status"] == "failed" and q3["reason"] == "boom"
    assert q3["core_supported_share"] is None and q3["weighted_score"] is None and q3["sub_questions"] == []


def test_section_headline_follows_the_config():
    section = subquestion_section(scored(SubQuestionConfig(top_k=2, headline_support="retrieved")))
    assert section["headline_support"] == "retrieved"
    assert section["questions"][0]["weighted_score"] == 0.4
    assert section["questions"][0]["unsupported_core"] == ["B: in chunk 2?", "E: weakly chunk 0?"]
    assert section["overall"]["by_type"]["core"]["share"] == 0.5


# ---------------------------------------------------------------- the package and checks.runner.run_subquestion_check


def test_package_modules_and_reexports():
    import coverage_core.checks.subquestions as package
    from coverage_core.checks.subquestions import config, decompose, parsing, prompt, report, results, scoring

    assert package.SubQuestionConfig is config.SubQuestionConfig
    assert package.parse_decomposition is parsing.parse_decomposition
    assert package.build_prompt is prompt.build_prompt
    assert package.score_subquestions is scoring.score_subquestions
    assert package.subquestion_section is report.subquestion_section
    assert package.analyze_subquestions is decompose.analyze_subquestions
    assert package.SubQuestionResult is results.SubQuestionResult
    for name in package.__all__:
        assert hasattr(package, name), name
    from coverage_core.suggest.llm import FATAL_KINDS  # one policy for every LLM check

    assert FATAL_KINDS == frozenset({"auth", "connection", "timeout", "rate_limit"})


def test_long_texts_are_cut_at_a_word():
    from coverage_core.checks.subquestions.config import PROMPT_QUESTION_CHARS, SUB_QUESTION_CHARS

    long_question = "word " * 1000
    line = build_prompt(long_question, 8).splitlines()[0]
    assert line.endswith("word…") and len(line) <= len("Question: ") + PROMPT_QUESTION_CHARS
    reply = {"sub_questions": [{"text": "Why " + "longword " * 100 + "?", "type": "core"}]}
    (sub,) = parse_decomposition(reply, "q")
    assert len(sub.text) <= SUB_QUESTION_CHARS and sub.text.endswith("longword…")


class _Chat:
    """A chat client stand-in: two typed sub-questions per question, prompts recorded."""

    def __init__(self):
        self.config = type("Config", (), {"model": "stand-in"})()
        self.prompts: list[str] = []

    def complete_json(self, system, user):
        self.prompts.append(user)
        return {"sub_questions": [{"text": "What is a comet made of?", "type": "core"},
                                  {"text": "Where is the river delta?", "type": "follow-up"}]}


def _embedder():
    """Deterministic 16-dimensional vectors, like the synthetic analysis's."""
    return FakeEmbedder(model="fixed-16", width=16, max_tokens=10_000, batch_size=32)


def test_run_subquestion_check_sends_the_chosen_questions(analysis):
    from coverage_core.checks.runner import run_subquestion_check

    chat = _Chat()
    result = run_subquestion_check(analysis, [6, 0], chat, _embedder(), config=SubQuestionConfig(top_k=2))
    assert [q.row for q in result.questions] == [6, 0]
    assert [q.question for q in result.questions] == [analysis.questions.texts[6], analysis.questions.texts[0]]
    assert len(chat.prompts) == 2 and analysis.questions.texts[0] in chat.prompts[1]
    assert result.model == "stand-in" and result.config.top_k == 2
    assert all(q.status == "ok" and len(q.sub_questions) == 2 for q in result.questions)
    # The same as assembling analyze_subquestions by hand.
    embedder = _embedder()
    by_hand = analyze_subquestions(
        [analysis.questions.questions[i] for i in (6, 0)], analysis.question_vectors[[6, 0]],
        analysis.corpus.vectors, embedder.embed, _Chat(), SubQuestionConfig(top_k=2),
    )
    assert subquestion_section(result) == subquestion_section(by_hand)


def test_run_subquestion_check_first_n_and_bad_positions(analysis):
    from coverage_core.checks.runner import run_subquestion_check

    done = []
    result = run_subquestion_check(analysis, 3, _Chat(), _embedder(), progress=lambda d, t: done.append((d, t)))
    assert [q.row for q in result.questions] == [0, 1, 2] and done[-1] == (3, 3)
    everything = run_subquestion_check(analysis, 100, _Chat(), _embedder())
    assert len(everything.questions) == len(analysis.questions.questions)
    for positions in ([7], [-1], [True], [0.5]):
        with pytest.raises(InputError, match="not one of the 7 questions"):
            run_subquestion_check(analysis, positions, _Chat(), _embedder())
    with pytest.raises(InputError, match="Select at least one question"):
        run_subquestion_check(analysis, [], _Chat(), _embedder())
    with pytest.raises(InputError) as error:
        run_subquestion_check(analysis, 2, None, _embedder())
    assert str(error.value) == UNAVAILABLE_REASON
