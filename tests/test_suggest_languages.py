"""Suggestions and LLM prompts in the language of the passage (or question) they come from."""

import json

import numpy as np
import pytest

from coverage_core.checks.subquestions import SubQuestionConfig, build_prompt, decompose_questions
from coverage_core.checks.subquestions.prompt import question_language
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.llm import ChatClient, LLMConfig
from coverage_core.suggest.questions import (
    DRAFT_PREFIX,
    DRAFT_WORDINGS,
    draft_questions,
    is_unfinished_draft,
    language_instruction,
)
from tests.fakes import chat_reply

CHAT = "/v1/chat/completions"

ENGLISH = [
    "The koala is an arboreal herbivorous marsupial native to Australia. It is easily recognisable by its stout "
    "body and large head. Koalas live in eucalyptus woodlands and feed almost entirely on eucalyptus leaves, "
    "which are low in nutrients.",
    "A violin bow is strung with horsehair; rosin helps the bow grip the strings of the violin. Violin makers in "
    "Cremona built famous violins over several centuries.",
    "Short line.\nJakarta is the capital of Indonesia, on the northwest coast of Java, with heavy traffic and "
    "flooding. The city of Jakarta hosts many museums, and the old town of Jakarta was called Batavia.",
]
# What draft_questions gave for ENGLISH (themes "koala", "violin") before drafts were localised.
ENGLISH_DRAFTS_BEFORE = [
    "What is the koala?",
    "Write a question answered by: “Violin makers in Cremona built famous violins over several centuries.”",
    "What is Jakarta?",
    "Write a question answered by: “Koalas live in eucalyptus woodlands and feed almost entirely on eucalyptus "
    "leaves, which are low in nutrients.”",
    "Write a question answered by: “A violin bow is strung with horsehair; rosin helps the bow grip the strings "
    "of the violin.”",
    "Write a question answered by: “The city of Jakarta hosts many museums, and the old town of Jakarta was "
    "called Batavia.”",
]
FRENCH = [
    "Les luthiers de Crémone ont fabriqué au dix-septième siècle des violons célèbres que les musiciens du monde "
    "entier étudient encore aujourd'hui. Le vernis et le bois d'épicéa de ces instruments font toujours l'objet "
    "de recherches.",
    "Un alto est un instrument de musique un peu plus grand que le violon, accordé une quinte plus bas.",
]
GERMAN = [
    "Geigenbauer in Cremona bauten im 17. Jahrhundert berühmte Instrumente, die heute noch von Musikern in aller "
    "Welt gespielt werden. Der Lack und das Fichtenholz dieser Geigen werden bis heute untersucht.",
    "Die Violine ist ein Streichinstrument, das mit einem Bogen gespielt wird und vier Saiten hat.",
]
CHINESE = ["小提琴是一种弦乐器，用弓拉奏。克雷莫纳的制琴师制作了许多著名的小提琴，至今仍被世界各地的音乐家研究。"]
ARABIC = [
    "الكمان آلة موسيقية وترية يعزف عليها بالقوس. صنع صانعو الآلات في كريمونا آلات كمان شهيرة لا يزال "
    "الموسيقيون في جميع أنحاء العالم يدرسونها حتى اليوم."
]
ENGLISH_TEMPLATE_WORDS = ("What ", "Write a question", "answered by", "What does")


def drafts(texts, n=6, themes=()):
    documents = [f"doc{i}" for i in range(len(texts))]
    return draft_questions(0, list(range(len(texts))), texts, documents, list(themes), n, set())


def test_english_drafts_are_unchanged():
    got = drafts(ENGLISH, themes=["koala", "violin"])
    assert [s.text for s in got] == ENGLISH_DRAFTS_BEFORE
    assert {s.language for s in got} == {"en"} and all(s.note == "" for s in got)
    assert DRAFT_PREFIX == "Write a question answered by:"


def test_a_french_passage_gets_french_drafts():
    got = drafts(FRENCH)
    texts = [s.text for s in got]
    assert texts, "a French passage with quotable sentences gives drafts"
    assert {s.language for s in got} == {"fr"}
    for text in texts:
        assert not any(word in text for word in ENGLISH_TEMPLATE_WORDS), text
    # the definitional sentence is asked back in French, with the elision French needs
    assert "Qu'est-ce qu'un alto ?" in texts
    quoted = [t for t in texts if t.startswith(DRAFT_WORDINGS["fr"].prefix)]
    assert quoted and quoted[0].endswith(" »") and "Les luthiers de Crémone" in quoted[0]
    assert all(is_unfinished_draft(t) for t in quoted)  # still left out of Apply and the export
    assert not is_unfinished_draft("Qu'est-ce qu'un alto ?")


def test_a_german_passage_gets_german_drafts_and_an_ordinal_does_not_end_a_sentence():
    texts = [s.text for s in drafts(GERMAN)]
    assert "Was ist die Violine?" in texts
    quoted = [t for t in texts if t.startswith("Schreiben Sie eine Frage, die dieser Satz beantwortet: „")]
    # "im 17. Jahrhundert": the quoted sentence is whole, not cut after "17."
    assert any("Geigenbauer in Cremona bauten im 17. Jahrhundert" in t and t.endswith("“") for t in quoted)
    for text in texts:
        assert not any(word in text for word in ENGLISH_TEMPLATE_WORDS), text


def test_a_chinese_passage_gets_a_chinese_draft():
    got = drafts(CHINESE)
    texts = [s.text for s in got]
    assert {s.language for s in got} == {"zh"}
    assert "什么是小提琴？" in texts
    assert "请写一个以这句话为答案的问题：“克雷莫纳的制琴师制作了许多著名的小提琴，至今仍被世界各地的音乐家研究。”" in texts
    # Traditional characters get the wording written in them
    traditional = [s.text for s in drafts(["小提琴是一種弦樂器，用弓拉奏。這些樂器至今仍被世界各地的音樂家研究和演奏。"])]
    assert "什麼是小提琴？" in traditional
    assert any(t.startswith("請寫一個以這句話為答案的問題：「") for t in traditional)


def test_chinese_key_sentences_skip_stop_word_subjects():
    # "这个" (this) opens the definition: a stop word, so no "什么是这个…？" question
    texts = [s.text for s in drafts(["这个乐器是一种弦乐器，人们用弓在琴弦上拉奏出声音。"])]
    assert texts and not any(t.startswith("什么是") for t in texts)


def test_an_arabic_passage_gets_no_draft_but_a_note():
    got = drafts(ARABIC)
    assert len(got) == 1
    (note,) = got
    assert note.text == "" and note.language == "ar" and note.origin == "draft"
    assert note.note == "No draft for Arabic passages: write the question yourself or use a language model."
    assert note.document == "doc0" and note.passage.startswith("الكمان")
    # one note per language, beside the drafts of the passages that have wording
    mixed = drafts(ARABIC + ENGLISH + ARABIC, n=2)
    assert [s.note != "" for s in mixed] == [False, False, True]
    assert [s.language for s in mixed] == ["en", "en", "ar"]


def test_analyze_gaps_drafts_each_passage_in_its_language():
    texts = FRENCH + ENGLISH[:2]
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    gaps, warnings = analyze_gaps(
        texts, ["fr.txt", "fr.txt", "en.txt", "en.txt"], vectors, [0, 0, 1, 1], [[1.0, 0.0], [0.0, 1.0]],
        [0.9, 0.8, 0.9, 0.8], [0.1, 0.2], [], GapConfig(n_suggestions=2), is_gap=[True, True],
    )
    assert warnings == []
    by_cluster = {gap.cluster: gap for gap in gaps}
    assert {s.language for s in by_cluster[0].suggestions} == {"fr"}
    assert {s.language for s in by_cluster[1].suggestions} == {"en"}


def test_language_instruction_names_one_language_or_asks_for_each_passages():
    assert language_instruction(["fr", "fr"]) == "Write the questions in French, the language of the passages."
    assert language_instruction(["en"]) == "Write the questions in English, the language of the passages."
    assert language_instruction(["fr", "de", "und"]) == (
        "Write each question in the language of the passage it cites (French, German)."
    )
    assert language_instruction(["und"]) == "Write each question in the language of the passage it cites."


def _chat_client(server) -> ChatClient:
    return ChatClient(LLMConfig(model="fake-chat", base_url=server.url + "/v1", api_key="sk-x", max_retries=0))


def test_the_llm_prompt_for_a_french_passage_names_french(fake_api):
    reply = {"themes": ["lutherie"], "questions": [{"question": "Qui a fabriqué des violons à Crémone ?", "passage": 1}]}
    fake_api.handle(CHAT, lambda body: chat_reply(json.dumps(reply)))
    gaps, warnings = analyze_gaps(
        FRENCH, ["fr.txt", "fr.txt"], [[1.0, 0.0], [0.9, 0.1]], [0, 0], [[1.0, 0.0]], [0.9, 0.8], [0.1], [],
        GapConfig(n_suggestions=1), _chat_client(fake_api), is_gap=[True],
    )
    (request,) = fake_api.requests_to(CHAT)
    user = request.body["messages"][1]["content"]
    assert "Write the questions in French, the language of the passages." in user
    assert "Write 1 new test questions" in user  # the rest of the prompt as before
    (suggestion,) = gaps[0].suggestions
    assert suggestion.origin == "llm" and suggestion.text == "Qui a fabriqué des violons à Crémone ?"
    assert suggestion.language == "fr" and warnings == []


def test_the_sub_question_prompt_names_the_questions_language(fake_api):
    question = "Comment les luthiers de Crémone fabriquaient-ils les violons au dix-septième siècle ?"
    assert question_language(question) == "fr"
    reply = {"sub_questions": [{"text": "Qui étaient les luthiers de Crémone ?", "type": "core"}]}
    fake_api.handle(CHAT, lambda body: chat_reply(json.dumps(reply)))
    (decomposition,), _ = decompose_questions([question], _chat_client(fake_api), SubQuestionConfig())
    user = fake_api.requests_to(CHAT)[0].body["messages"][1]["content"]
    assert "- Write the sub-questions in French, the language of the question." in user
    assert decomposition.status == "ok" and decomposition.sub_questions[0].text == reply["sub_questions"][0]["text"]


@pytest.mark.parametrize("question", ["When did Volta die?", "Q3 revenue?"])
def test_a_short_unclear_question_is_not_given_a_wrong_language(question):
    # the detector reads these as Nigerian Pidgin and French: naming no language is safer
    assert question_language(question) == "und"
    prompt = build_prompt(question, 8)
    assert "- Write the sub-questions in the language of the question." in prompt
    assert "Pidgin" not in prompt and "French" not in prompt


def test_a_given_language_is_named_as_given():
    assert "- Write the sub-questions in German, the language of the question." in build_prompt("Wer?", 8, "de")
