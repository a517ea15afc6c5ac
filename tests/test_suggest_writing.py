"""The keep rule of written questions (coverage_core.suggest.writing), through the real openai client on a loopback server.

The replies are scripted here, so each point of the rule is exercised on
purpose; tests/test_local_model.py runs the same path with the bundled model.
"""

from __future__ import annotations

import numpy as np
import pytest

from coverage_core.suggest.gaps import NOTE_TURNED_OFF, GapConfig, analyze_gaps
from coverage_core.suggest.passages import spread_passages
from coverage_core.suggest.writing import (
    DROP_REASONS,
    PassageRanks,
    WritingConfig,
    example_questions,
    repeat_level,
    tidy_question,
    write_questions,
)
from coverage_core.validation import SettingError
from tests.fakes import chat_reply, error_reply
from tests.test_gaps import (
    CENTROIDS,
    CHAT,
    COVERAGE,
    DOCUMENTS,
    JAKARTA,
    LABELS,
    MIN_DISTANCES,
    TEXTS,
    VECTORS,
    VIOLIN,
    _embed_by_words,
    below,
    llm_for,
)


@pytest.mark.parametrize(
    ("reply", "question", "reason"),
    [
        ("What is a violin bow strung with?", "What is a violin bow strung with?", ""),
        ('Question: "What is a violin bow strung with?"\nAnswer: horsehair', "What is a violin bow strung with?", ""),
        ("1. What is a violin bow strung with? And why rosin?", "What is a violin bow strung with?", ""),
        ("Here is a question: What is a violin bow strung with?", "What is a violin bow strung with?", ""),
        ("What is the answer to this question?", "What is the answer to this question?", "about_the_text"),
        ("What does the passage say about violins?", "What does the passage say about violins?", "about_the_text"),
        ("What inspired you to write about violins?", "What inspired you to write about violins?", "about_the_text"),
        ("Write: What is a violin bow strung with?", "What is a violin bow strung with?", ""),
        ("Violins are strung with horsehair.", "Violins are strung with horsehair.", "not_a_question"),
        ("Why?", "Why?", "length"),
        ("What " + "very " * 40 + "long question is this?", None, "length"),
        ("小提琴的琴弓是用什么做的？", "小提琴的琴弓是用什么做的？", ""),
    ],
)
def test_tidy_question_reads_one_question_and_names_what_is_wrong(reply, question, reason):
    text, key = tidy_question(reply)
    if question is not None:
        assert text == question
    assert key == reason
    if key:
        assert key in DROP_REASONS


def test_writing_config_rejects_nonsense():
    with pytest.raises(SettingError):
        WritingConfig(attempts=0)
    with pytest.raises(SettingError):
        WritingConfig(duplicate_similarity=1.5)


def _write(server, replies, **options):
    server.script(CHAT, [chat_reply(r) for r in replies])
    defaults = dict(n=3, existing_vectors=None, languages=["en"] * 3)
    defaults.update(options)
    return write_questions(
        llm_for(server), 0, [2, 1, 0], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9, **defaults
    )


def test_each_passage_gets_one_kept_question_and_failures_are_retried_with_their_reason(fake_api):
    written = _write(fake_api, [
        "What does the passage say?",                 # passage 2, try 1: about the text
        "How deep is the Jakarta harbour?",           # passage 2, try 2: the passage says none of this
        "What helps the bow grip the strings?",       # passage 2, try 3: does not reach the violin passage
        "What is a violin bow strung with?",          # passage 2, try 4: kept
        "What is a violin bow strung with?",          # passage 1: a repeat of the kept one
        "Who crafted violins with spruce tops?",      # passage 1, try 2: kept
        "Bows.", "Bows.", "Bows.", "Bows.",           # passage 0: never a question
    ], config=WritingConfig(attempts=4))
    assert [(s.chunk, s.text, s.origin) for s in written.kept] == [
        (2, "What is a violin bow strung with?", "local"),
        (1, "Who crafted violins with spruce tops?", "local"),
    ]
    assert all(s.kept and s.document == "violin.pdf" and s.passage == VIOLIN[s.chunk] for s in written.kept)
    reasons = [s.reason for s in written.dropped]
    assert reasons[0] == DROP_REASONS["about_the_text"]
    assert reasons[1] == "the sentence it was written from does not say “deep”, “jakarta” or “harbour”"
    assert reasons[2].startswith("it does not reach its passage (similarity 0.00, below the support level 0.90")
    assert reasons[3] == DROP_REASONS["repeat"]
    assert reasons[4:] == [DROP_REASONS["not_a_question"]] * 4
    assert not any(s.kept for s in written.dropped)
    assert written.unwritten == (0,)
    assert written.failure == "" and not written.fatal
    # A retry differs from the first try: a new seed and a higher temperature.
    bodies = [r.body for r in fake_api.requests_to(CHAT)]
    assert [b["seed"] for b in bodies[:4]] == [0, 1, 2, 3]
    assert bodies[0]["temperature"] == WritingConfig().temperature
    assert bodies[1]["temperature"] == WritingConfig().retry_temperature
    assert "response_format" not in bodies[0]  # plain text, not JSON mode


def test_a_question_that_retrieves_other_passages_first_is_dropped(fake_api):
    # Every violin chunk is about as similar to a violin question; with top_k=1 only chunk 0 can be retrieved first.
    written = _write(fake_api, ["What is a violin bow strung with?"] * 3, config=WritingConfig(top_k=1), n=1)
    assert written.kept == ()
    assert written.dropped[0].reason == DROP_REASONS["not_retrieved"].format(k=1, rank=3)


def test_a_near_duplicate_of_an_existing_question_is_dropped(fake_api):
    existing = _embed_by_words(["Who built violins in Cremona?"])
    written = _write(fake_api, ["What is a violin bow strung with?"] * 3, existing_vectors=existing, n=1)
    assert written.kept == ()
    assert [s.reason for s in written.dropped[:3]] == [DROP_REASONS["duplicate"]] * 3


def test_a_question_in_another_language_than_its_passage_is_dropped(fake_api):
    written = _write(fake_api, ["Who crafted famous violins in Cremona?"] * 3, languages=["fr"] * 3, n=1)
    assert written.kept == ()
    assert written.dropped[0].reason == DROP_REASONS["language"].format(language="French")
    prompt = fake_api.requests_to(CHAT)[0].body["messages"][1]["content"]
    assert "Write the question in French" in prompt


def test_a_passage_in_a_language_the_model_does_not_write_is_not_asked_about(fake_api):
    fake_api.script(CHAT, [chat_reply("Who crafted violins whose varnish is still studied?")])
    client = llm_for(fake_api)
    client.writes_languages = frozenset({"en"})
    written = write_questions(client, 0, [2, 1, 0], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9,
                              languages=["fr", "en", "zh"])
    assert len(fake_api.requests_to(CHAT)) == 1  # only the English passage
    assert [s.chunk for s in written.kept] == [1]
    assert written.unwritten == (2, 0) and written.unwritable == ("fr", "zh")
    assert written.dropped == ()


def test_gaps_whose_passages_the_model_cannot_write_get_drafts_and_say_why(fake_api):
    fake_api.handle(CHAT, lambda body: chat_reply("Who crafted famous violins?"))
    client = llm_for(fake_api)
    client.writes_languages = frozenset({"fr", "de"})  # the fixture's passages are English
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [],
        GapConfig(n_passages=3, n_suggestions=3, spread_reach=None, n_written_gaps=1),
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=client,
    )
    assert fake_api.requests_to(CHAT) == []
    assert all(s.origin == "draft" for gap in gaps for s in gap.suggestions)
    assert all(gap.written for gap in gaps)  # the writer had nothing to add: no gap waits for it
    assert warnings == [
        "The built-in question writer writes only French and German, so 6 passages in English got drafts to edit; "
        "an LLM you connect writes questions in their language."
    ]


def test_the_bundled_model_is_asked_only_for_passages_in_english():
    from coverage_core.suggest.llm import ChatClient
    from coverage_core.suggest.local_model import LocalChatClient

    assert LocalChatClient.writes_languages == frozenset({"en"})
    assert ChatClient.writes_languages is None  # a hosted model writes any language


def test_the_worked_example_is_the_users_question_closest_to_its_passage_per_language():
    questions = [
        "Bread?",                                              # too short: no example
        "Why is the city of Jakarta sinking?",                 # English, reaches a Jakarta passage
        "Who made famous violins in Cremona?",                 # English, reaches a violin passage as well
        "Pourquoi Jakarta s'enfonce-t-elle dans la mer ?",     # French
        "Violins and bread and Jakarta: which came first?",    # English, but spread over three topics
    ]
    examples = example_questions(questions, TEXTS, PassageRanks(VECTORS), _embed_by_words, candidates=["en", "fr"])
    assert set(examples) == {"en", "fr"}
    passage, question = examples["en"]
    assert question in questions[1:3] and passage in VIOLIN + JAKARTA
    assert _embed_by_words([question])[0] @ _embed_by_words([passage])[0] > 0  # its own passage, on its topic
    assert examples["fr"] == (JAKARTA[0], questions[3])
    # Vectors given are used as they are, in the questions' order.
    given = example_questions(questions, TEXTS, PassageRanks(VECTORS), None, candidates=["en", "fr"],
                              question_vectors=_embed_by_words(questions))
    assert given == examples
    # Languages the analysis read are taken as they are (here: every question called French).
    called_french = example_questions(questions, TEXTS, PassageRanks(VECTORS), _embed_by_words,
                                      question_languages=["fr"] * len(questions))
    assert set(called_french) == {"fr"} and called_french["fr"][1] in questions[1:3]
    assert example_questions(["Bread?", "Violins."], TEXTS, PassageRanks(VECTORS), _embed_by_words) == {}


def test_the_model_sees_the_worked_example_of_the_passages_language_before_its_prompt(fake_api):
    example = ("Stradivari crafted violins in Cremona.", "Qui a fabriqué des violons à Crémone ?")
    fake_api.handle(CHAT, lambda body: chat_reply("Who crafted famous violins?"))
    write_questions(llm_for(fake_api), 0, [2, 1], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9,
                    languages=["fr", "en"], n=2, examples={"fr": example})
    first, *rest = [r.body["messages"] for r in fake_api.requests_to(CHAT)]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user"]
    assert example[0] in first[1]["content"] and "Write the question in French" in first[1]["content"]
    assert first[2]["content"] == example[1]
    assert VIOLIN[2][:40] in first[3]["content"]
    english = [m for m in rest if VIOLIN[1][:40] in m[-1]["content"]]
    assert english and all([m["role"] for m in messages] == ["system", "user"] for messages in english)


def test_gaps_show_the_model_one_of_the_users_own_questions(fake_api):
    fake_api.handle(CHAT, lambda body: chat_reply("Who crafted famous violins?"))
    existing = ["Where was the old town of Jakarta?"]
    analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, existing,
        GapConfig(n_passages=3, n_suggestions=3, spread_reach=None),
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(fake_api),
    )
    bodies = [r.body["messages"] for r in fake_api.requests_to(CHAT)]
    assert bodies and all(m[2] == {"role": "assistant", "content": existing[0]} for m in bodies)
    fake_api.script(CHAT, [])
    analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, existing,
        GapConfig(n_passages=3, n_suggestions=3, spread_reach=None, worked_examples=False),
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(fake_api),
    )
    assert all(len(r.body["messages"]) == 2 for r in fake_api.requests_to(CHAT)[len(bodies):])


def test_a_timeout_stops_writing_and_keeps_what_was_kept(fake_api):
    fake_api.script(CHAT, [chat_reply("What is a violin bow strung with?"), error_reply(401, "bad key")])
    written = write_questions(
        llm_for(fake_api), 0, [2, 1, 0], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9, languages=["en"] * 3,
    )
    assert [s.chunk for s in written.kept] == [2]
    assert written.unwritten == (1, 0)
    assert written.fatal and "rejected the API key" in written.failure


def _gaps(server, replies, **config):
    # The fixture clusters hold 4 passages each: the 3 least covered of them, as in tests/test_gaps.py.
    config = {"n_passages": 3, "n_suggestions": 3, "spread_reach": None, **config}
    server.script(CHAT, [chat_reply(r) for r in replies])
    return analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(**config),
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(server),
    )


def test_gaps_offer_kept_written_questions_then_drafts_and_list_the_dropped(fake_api):
    gaps, warnings = _gaps(fake_api, [
        "What is a violin bow strung with?",
        "Who crafted violins with spruce tops?",
        *["Which orchestra?"] * WritingConfig().attempts,  # passage 0: too short, at every try
        "Why is Jakarta sinking?", "What does Jakarta suffer?", "What was Jakarta once called?",
    ])
    violin, jakarta = gaps
    assert [s.origin for s in violin.suggestions] == ["local", "local", "draft"]
    assert violin.suggestions[2].chunk == 0  # the draft comes from the passage without a kept question
    assert len(violin.dropped) == WritingConfig().attempts and violin.note == ""
    assert [s.origin for s in jakarta.suggestions] == ["local"] * 3
    assert warnings == []


@pytest.mark.parametrize(("near_duplicate_level", "kept"), [(0.95, False), (0.987, True)])
def test_the_repeat_check_reads_similarity_on_the_models_scale(fake_api, near_duplicate_level, kept):
    # A test question at cosine 0.95 to the written one: a repeat on all-MiniLM-L6-v2's scale (from 0.9),
    # not on e5's, where unrelated questions sit near 0.75 and repeats from 0.974.
    assert repeat_level(0.95) == pytest.approx(0.9) and repeat_level(0.987) == pytest.approx(0.974)
    existing = np.array([[0.95, np.sqrt(1 - 0.95**2), 0.0]])
    fake_api.script(CHAT, [chat_reply("What is a violin bow strung with?")] * WritingConfig().attempts)
    gaps, _ = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, ["Which violins are old?"],
        GapConfig(n_passages=1, n_suggestions=1, spread_reach=None, n_written_gaps=1), embed=_embed_by_words,
        support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(fake_api), question_vectors=existing,
        near_duplicate_level=near_duplicate_level,
    )
    violin = gaps[0]
    assert (violin.suggestions[0].origin == "local") is kept
    assert (DROP_REASONS["duplicate"] in [s.reason for s in violin.dropped]) is not kept


def test_a_fatal_writer_error_falls_back_to_drafts_for_every_gap_once(fake_api):
    fake_api.script(CHAT, [error_reply(401, "bad key")])
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(fake_api),
    )
    assert all(s.origin == "draft" for gap in gaps for s in gap.suggestions)
    assert len(fake_api.requests_to(CHAT)) == 1  # the second gap does not ask again
    assert len(warnings) == 1 and "drafts are shown instead" in warnings[0]


def test_only_the_most_urgent_gaps_are_written_for(fake_api):
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    gaps, warnings = _gaps(fake_api, [], n_written_gaps=1)
    assert any(s.origin == "local" for s in gaps[0].suggestions)
    assert all(s.origin == "draft" for s in gaps[1].suggestions)
    assert [gap.written for gap in gaps] == [True, False]
    assert warnings == ["Questions were written for the most urgent gap; the other 1 gap has drafts to edit."]


def test_asked_again_the_writer_keeps_the_written_gaps_and_writes_for_the_next(fake_api):
    fake_api.script(CHAT, [chat_reply("What is a violin bow strung with?"), chat_reply("Who crafted famous violins?")])
    first, _ = _gaps(fake_api, [], n_written_gaps=1, n_suggestions=2)
    n_asked = len(fake_api.requests_to(CHAT))
    fake_api.script(CHAT, [chat_reply("Why is Jakarta sinking?"), chat_reply("What does Jakarta suffer?")])
    config = GapConfig(n_passages=3, n_suggestions=2, spread_reach=None, n_written_gaps=1)
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], config,
        embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE), writer=llm_for(fake_api),
        written=first,
    )
    assert gaps[0] is first[0]  # kept as it was: the violin passages are not asked for again
    asked = [r.body["messages"][-1]["content"] for r in fake_api.requests_to(CHAT)[n_asked:]]
    assert asked and all("Jakarta" in prompt for prompt in asked)
    assert [s.origin for s in gaps[1].suggestions] == ["local", "local"] and gaps[1].written
    assert warnings == []


def test_zero_suggestions_asks_nothing_and_says_so(fake_api):
    gaps, _ = _gaps(fake_api, [], n_suggestions=0)
    assert all(gap.suggestions == () and gap.note == NOTE_TURNED_OFF for gap in gaps)
    assert fake_api.requests_to(CHAT) == []


def test_a_gap_without_any_suggestion_says_why():
    gaps, _ = analyze_gaps(
        ["| a | b |", "| 1 | 2 |"], ["t.md"] * 2, np.eye(2), [0, 0], [[1.0, 0.0]], [0.9, 0.8], [0.1], [], GapConfig(),
        is_gap=[True],
    )
    assert gaps[0].suggestions == ()
    assert gaps[0].note.startswith("No question could be suggested")


def test_spread_passages_cover_the_gap_instead_of_one_corner():
    # Two corners of a gap: six untested passages around axis 0, three around axis 1, one tested passage.
    rng = np.random.default_rng(0)
    corner_a = np.array([1.0, 0.0, 0.0]) + 0.05 * rng.standard_normal((6, 3))
    corner_b = np.array([0.0, 1.0, 0.0]) + 0.05 * rng.standard_normal((3, 3))
    tested = np.array([[0.0, 0.0, 1.0]])
    vectors = np.vstack([corner_a, corner_b, tested])
    # Least covered first would be corner A's passages 0, 1, 2 ...
    distances = np.array([0.9, 0.89, 0.88, 0.87, 0.86, 0.85, 0.8, 0.79, 0.78, 0.1])
    chosen = spread_passages(np.arange(10), vectors, distances, support_threshold=0.5, n=2, reach=6)
    # ... but one question reaches all six of corner A, so the second goes to corner B.
    assert chosen[0] in range(6) and chosen[1] in (6, 7, 8)
    assert 9 not in spread_passages(np.arange(10), vectors, distances, 0.5, n=10, reach=3)  # tested: never asked
    assert spread_passages(np.arange(10), vectors, distances, 0.5, n=2, reach=6, askable=lambda c: c >= 6) == [6]
    assert spread_passages([9], vectors, distances, 0.5, n=2, reach=3) == []
