"""Issue 47's question writer: every gap written with progress, no draft on a fragment, the word-for-word keep
check, and written questions kept on disk so a re-run writes nothing again.

The model is a scripted OpenAI-compatible server here (tests/fakes.py);
tests/test_local_model.py runs the bundled model itself.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from coverage_core.suggest import local_model
from coverage_core.suggest.fragments import english_has_verb, fragment_reason
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.grounding import gives_its_answer, key_terms, missing_terms
from coverage_core.suggest.llm import LLMConfig
from coverage_core.suggest.local_model import LocalChatClient
from coverage_core.suggest.progress import WritingClock, progress_sentence
from coverage_core.suggest.question_form import form_reason
from coverage_core.suggest.questions import draft_questions
from coverage_core.suggest.reply_cache import REPLY_CACHE_FILE_NAME, ReplyCache
from coverage_core.suggest.writing import DROP_REASONS, write_questions
from tests.fakes import chat_reply
from tests.test_gaps import CHAT, DOCUMENTS, TEXTS, VECTORS, VIOLIN, _embed_by_words, llm_for

# ---------------------------------------------------------------- fragments


@pytest.mark.parametrize(
    ("sentence", "code", "reason"),
    [
        ("Are there any tips I should know about?", "en", "question"),
        ("Tips for new drivers.", "en", "short"),
        ("Proof of identity and date of birth for every applicant.", "en", "no_verb"),
        ("DeVos lawsuit on Class Counsel s website at harvardlaw.github.io/ppsl_dropdown/index.", "en", "no_verb"),
        ("Retrospective analysis of 92 node-negative tumours with mastectomy.", "en", "no_verb"),
        ("The VADIP pilot program ran from 2013 to 2017.", "en", ""),
        ("An ant collects honeydew from an aphid on the leaf.", "en", ""),
        ("Workers specialise in tasks according to their sizes.", "en", ""),
        ("This includes both medical and dental services.", "en", ""),  # a verb: it needs context instead
        ("Apply for monthly payments if you meet the requirements.", "en", ""),
        # French and Chinese are not checked for a verb: their drafts stay as they were.
        ("Un alto est un instrument de musique un peu plus grand que le violon.", "fr", ""),
        ("Les luthiers de Crémone et leurs violons célèbres au dix-septième siècle.", "fr", ""),
        ("Qu'est-ce qu'un alto dans un orchestre symphonique ?", "fr", "question"),
        ("小提琴是一种弦乐器，用弓拉奏。", "zh", ""),
        ("为什么小提琴的琴弓用马尾做成？", "zh", "question"),
        ("小提琴。", "zh", "short"),
    ],
)
def test_fragment_reason_names_what_a_draft_cannot_be_built_on(sentence, code, reason):
    assert fragment_reason(sentence, code, spaceless=code == "zh") == reason


@pytest.mark.parametrize(("sentence", "has_verb"), [
    ("Coulomb was born in Angoulême in 1736.", True),
    ("Pascal also used the method of exhaustion.", True),
    ("The Taiwan Railway Administration also runs passenger services.", True),
    ("Medical and dental services for veterans and their families.", False),
    ("Map of Antwerp, its buildings and the march.", False),
])
def test_the_english_verb_check_reads_word_forms(sentence, has_verb):
    assert bool(english_has_verb(sentence)) is has_verb


def test_drafts_are_never_built_on_a_question_or_a_fragment():
    passage = (
        "Are there any tips I should know about? Medical and dental services for veterans and their families. "
        "VA health care covers care at home and in hospitals for every enrolled Veteran. This includes both "
        "medical and dental services for the whole family."
    )
    texts = [s.text for s in draft_questions(0, [0], [passage], ["va.txt"], [], 5, set())]
    assert texts == [
        "Write a question answered by: “VA health care covers care at home and in hospitals for every enrolled "
        "Veteran.”",
        # A sentence that needs the one before it is quoted with it.
        "Write a question answered by: “VA health care covers care at home and in hospitals for every enrolled "
        "Veteran. This includes both medical and dental services for the whole family.”",
    ]


# ---------------------------------------------------------------- the word-for-word keep check


def test_key_terms_leave_out_stop_words_and_the_words_questions_ask_with():
    assert key_terms("In what year did Coulomb's father die?") == ["coulomb", "father", "die"]
    assert key_terms("How many people lived in Berlin in 1,000 AD?") == ["people", "lived", "berlin", "ad", "1000"]


def test_a_key_term_must_be_in_the_passage_as_written():
    passage = "Argonauta fossils of the Valanginian Age were found; Avogadro died in 1856 in Turin, France's neighbour."
    assert missing_terms("Which fossils were found in the Valangina Formation?", passage) == ["valangina", "formation"]
    assert missing_terms("Where did Avogadro die in 1856?", passage) == []  # "died" is "die" folded
    assert missing_terms("Where did Avogadro die in 1857?", passage) == ["1857"]
    assert missing_terms("What is the FDA's regulation on mercury in lobster?",
                         "The FDA measured mercury in lobster at 0.31 ppm.") == ["regulation"]
    assert missing_terms("Which FAMILIES of fossils were found?", "The family of each fossil was found.") == []
    assert missing_terms("什么是小提琴？", "小提琴是一种弦乐器。", "zh") == []  # no words to compare: not checked


def test_a_question_that_gives_away_the_name_it_asks_for_is_caught():
    assert gives_its_answer("What is the name of the family that is named Argonautidae?")
    assert gives_its_answer("What is the ship called the Mayflower called?")
    assert gives_its_answer("What was the name of the crater on Mars named after Becquerel?")
    assert gives_its_answer("What was Becquerel's son Jean's name?")
    assert not gives_its_answer("What is the name of the family of the paper nautilus?")
    assert not gives_its_answer("Which river is named after the city of Antwerp?")


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("Is the port of Montreal the largest inland port in the world?", ""),
        ("Is the Medici Chapel dedicated to the Medici family?", ""),
        ("What is the SI unit for radioactivity?", ""),
        ("How many problems did early Kuala Lumpur have?", "no_answer"),
        ("When was Kuala Lumpur plagued by floods?", "no_answer"),
        ("Where was the Selangor Civil War?", ""),  # "Kuala Lumpur" answers where
        ("The headquarter is located in Montreal?", "statement"),
        ("Which of the two East African bureau of CNBC Africa and the Nairobi bureau?", "garbled"),
        ("Is Mary averts her eyes and folds her hands in a gesture of submission?", "garbled"),
        ("Is Newton's heliocentric view developed in his heliocentric view of the solar system?", "repeated"),
        ("What is the purpose of the 2008 Grey Cup?", "vague"),
        ("What was the Selangor Civil War?", "mentioned_only"),
        ("Is the tree purchased by the school?", "unnamed"),
        ("What did he invent in his later years?", "unnamed"),
        ("Should I apply for the Kuala Lumpur work-study program?", "advice"),
        ("Which repayment plan is best for me in Kuala Lumpur?", "advice"),
        ("What criteria for community care under the Kuala Lumpur act?", "garbled"),
        # Rules from the labelled questions of issue 47 (benchmarks/question_quality/labels_after.csv).
        ("Which Selangor Civil War is located in?", "garbled"),  # a preposition without its object
        ("Is Kuala Lumpur a game set in?", "garbled"),
        ("Which city was the Selangor Civil War fought in?", ""),  # its subject stands between
        ("What happens to the dependent s transfer eligibility in Kuala Lumpur?", "garbled"),  # a word broken off
        ("Can no leak was observed in Kuala Lumpur?", "garbled"),  # a sentence pasted after "Can"
        ("Does Kuala Lumpur associated with floods?", "garbled"),
        ("Can the Selangor Civil War be explained by the floods in Kuala Lumpur?", ""),
        ("Did the proposed plan of Kuala Lumpur stop the floods?", ""),  # "proposed" after "the" is no verb
        ("Did the city that was plagued by fires become Kuala Lumpur?", ""),  # "was" in a clause of its own
        ("Is it plagued by floods in Kuala Lumpur?", "unnamed"),  # a pronoun subject
        ("How did it fight the fires in Kuala Lumpur?", "unnamed"),
        ("Was it Kuala Lumpur that was plagued by fires?", ""),  # a cleft names its answer
        ("What if Kuala Lumpur is plagued by floods?", "vague"),
    ],
)
def test_the_wording_check_names_what_a_tester_would_reword(question, reason):
    source = ("Early Kuala Lumpur had many problems, including the Selangor Civil War; it was also plagued by "
              "diseases and constant fires and floods.")
    assert form_reason(question, source) == reason


def test_the_writer_drops_ungrounded_and_self_answering_questions_with_their_reason(fake_api):
    fake_api.script(CHAT, [chat_reply(r) for r in [
        "Who crafted famous violins in the Cremona workshop?",     # passage 1 says neither "famous" nor "Cremona"
        "What is the name of the violin maker named Stradivari?",  # it gives its answer
        "Whose violins have varnish that violin makers still study?",
    ]])
    written = write_questions(llm_for(fake_api), 0, [1], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9,
                              languages=["en"], n=1)
    assert [s.text for s in written.kept] == ["Whose violins have varnish that violin makers still study?"]
    assert [s.reason for s in written.dropped] == [
        "the sentence it was written from does not say “famous”, “cremona” or “workshop”",
        DROP_REASONS["gives_answer"],
    ]


# ---------------------------------------------------------------- every gap, with progress

TOPICS = [f"topic{k}" for k in range(11)]


def _topic_inputs():
    """11 gaps of 2 passages each, one topic word per gap; an embedder with one axis per topic word."""
    texts = [f"The {word} festival {part} held in the old harbour town every summer since 1900."
             for word in TOPICS for part in ("was", "is")]
    labels = np.repeat(np.arange(len(TOPICS)), 2)

    def embed(batch):
        return np.array([[float(word in text) for word in TOPICS] for text in batch]) + 1e-3

    vectors = embed(texts)
    vectors[1::2] += 0.05  # the second passage of a gap leans off its axis
    return texts, labels, vectors, embed


def _question_for(body) -> dict:
    """The scripted model: a question on the topic word of the passage it is shown."""
    word = re.search(r"topic\d+", body["messages"][-1]["content"]).group()
    return chat_reply(f"When is the {word} festival held in the harbour town?")


def _write_for_every_topic(fake_api, **config) -> tuple[list, list[str], list[tuple]]:
    """Every one of the 11 topics a gap, written for by the scripted model with ``GapConfig(**config)``:
    (gaps, warnings, the progress reports as (done, total, seconds left))."""
    texts, labels, vectors, embed = _topic_inputs()
    fake_api.handle(CHAT, _question_for)
    reports = []
    gaps, warnings = analyze_gaps(
        texts, ["t.txt"] * len(texts), vectors, labels, np.eye(len(TOPICS)), np.full(len(texts), 0.9),
        np.full(len(TOPICS), 0.1), [], GapConfig(n_passages=1, n_suggestions=1, spread_reach=None, **config),
        embed=embed, support_threshold=0.9, is_gap=[True] * len(TOPICS), writer=llm_for(fake_api),
        progress=lambda done, total, left: reports.append((done, total, left)),
    )
    return gaps, warnings, reports


def test_every_gap_is_written_for_by_default_and_progress_counts_down(fake_api):
    gaps, warnings, reports = _write_for_every_topic(fake_api)
    assert GapConfig().n_written_gaps is None  # every gap, not the first 8
    assert len(gaps) == 11 and all(gap.written for gap in gaps) and warnings == []
    assert all(s.origin == "local" for gap in gaps for s in gap.suggestions)
    assert [(done, total) for done, total, _ in reports] == [(k, 11) for k in range(12)]
    assert reports[0][2] is None and all(left >= 0 for _, _, left in reports[1:]) and reports[-1][2] == 0


def test_a_limit_on_written_gaps_still_reports_progress_on_the_gaps_written(fake_api):
    gaps, warnings, reports = _write_for_every_topic(fake_api, n_written_gaps=3)
    assert sum(gap.written for gap in gaps) == 3
    assert [(done, total) for done, total, _ in reports] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert warnings == ["Questions were written for the 3 most urgent gaps; the other 8 gaps have drafts to edit."]


def test_the_clock_estimates_the_time_left_from_the_pace_so_far():
    now = [100.0]
    reports = []
    clock = WritingClock(4, lambda *report: reports.append(report), clock=lambda: now[0])
    now[0] = 110.0
    clock.step()
    now[0] = 120.0
    clock.step()
    clock.finish()
    assert reports == [(0, 4, None), (1, 4, 30.0), (2, 4, 20.0), (4, 4, 0.0)]
    assert progress_sentence(0, 20, None) == "Writing questions: 0 of 20 gaps done."
    assert progress_sentence(3, 20, 41.6) == "Writing questions: 3 of 20 gaps done, about 42 s left."
    assert progress_sentence(3, 20, 150) == "Writing questions: 3 of 20 gaps done, about 2 min left."
    assert progress_sentence(20, 20, 0.0) == "Writing questions: 20 gaps done."


def test_the_cli_prints_a_progress_line_per_gap_at_most_every_few_seconds(capsys, monkeypatch):
    from coverage_core import cli

    now = [0.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: now[0])
    lines = cli._WritingLines(True, every=3.0)
    for done, at in ((0, 0.0), (1, 1.0), (2, 3.5), (3, 4.0), (4, 4.5)):
        now[0] = at
        lines(done, 4, 2.0 if done else None)
    err = capsys.readouterr().err.splitlines()
    assert err == ["Writing questions: 0 of 4 gaps done.", "Writing questions: 2 of 4 gaps done, about 2 s left.",
                   "Writing questions: 4 gaps done."]
    cli._WritingLines(False)(1, 4, 2.0)  # --quiet
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- written questions cached on disk


def _bundled_client(server, replies):
    config = LLMConfig(model=local_model.LOCAL_MODEL, base_url=server.url + "/v1", api_key="sk-secret-local",
                       max_retries=0)
    return LocalChatClient(config, identity="test weights 1", replies=replies)


def test_a_cached_rerun_writes_nothing_again(fake_api, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())  # this test's own process memo
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    first = write_questions(_bundled_client(fake_api, ReplyCache(tmp_path)), 0, [2, 1], TEXTS, DOCUMENTS, VECTORS,
                            _embed_by_words, 0.9, languages=["en", "en"], n=2)
    asked = len(fake_api.requests_to(CHAT))
    assert asked > 1 and [s.chunk for s in first.kept] == [2]
    local_model._replies.clear()  # a new process: only the disk remembers
    second = write_questions(_bundled_client(fake_api, ReplyCache(tmp_path)), 0, [2, 1], TEXTS, DOCUMENTS, VECTORS,
                             _embed_by_words, 0.9, languages=["en", "en"], n=2)
    assert len(fake_api.requests_to(CHAT)) == asked  # nothing written again
    assert second == first
    stored = (tmp_path / REPLY_CACHE_FILE_NAME).read_bytes()
    assert b"sk-secret-local" not in stored and VIOLIN[2].encode() not in stored  # hashes and replies only
    assert ReplyCache(tmp_path).count() == asked


def test_another_model_or_seed_is_not_served_from_the_cache(fake_api, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    fake_api.handle(CHAT, lambda body: chat_reply(f"Reply {body['seed']} of {body['model']}?"))
    cache = ReplyCache(tmp_path)
    client = _bundled_client(fake_api, cache)
    assert client.complete_text("s", "u", seed=0) == f"Reply 0 of {local_model.LOCAL_MODEL}?"
    local_model._replies.clear()
    assert client.complete_text("s", "u", seed=1) == f"Reply 1 of {local_model.LOCAL_MODEL}?"
    other = LocalChatClient(client.config, identity="test weights 2", replies=cache)
    local_model._replies.clear()
    other.complete_text("s", "u", seed=0)
    assert len(fake_api.requests_to(CHAT)) == 3


def test_a_cache_that_cannot_be_written_costs_time_not_the_run(fake_api, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = ReplyCache(blocked)
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    assert _bundled_client(fake_api, cache).complete_text("s", "u") == "What is a violin bow strung with?"
    assert len(cache.warnings) == 1 and "could not be used" in cache.warnings[0]


class _CountedServer(local_model.LocalModelServer):
    """The bundled model's server, played by the scripted API: counts how often a client starts it."""

    def __init__(self, api):
        super().__init__()
        self.api, self.starts = api, 0

    def config(self, temperature: float = 0.2, timeout: float = 60) -> LLMConfig:
        self.starts += 1
        return LLMConfig(model=local_model.LOCAL_MODEL, base_url=self.api.url + "/v1", api_key="sk-secret-local",
                         temperature=temperature, timeout=timeout, max_retries=0)


def test_a_cached_rerun_never_starts_the_bundled_model(fake_api, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    server = _CountedServer(fake_api)

    def write():
        client = server.client(ReplyCache(tmp_path))
        assert "not started" in repr(client) and client.config.model == local_model.LOCAL_MODEL
        assert client.config.api_key is None  # no key before the server makes one
        return write_questions(client, 0, [2, 1], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.9,
                               languages=["en", "en"], n=2)

    first = write()
    asked = len(fake_api.requests_to(CHAT))
    assert asked > 1 and server.starts == 1  # started at the first request, once
    local_model._replies.clear()  # a new process: only the disk remembers
    assert write() == first
    assert server.starts == 1 and len(fake_api.requests_to(CHAT)) == asked


def test_the_pipelines_rerun_reads_every_question_from_the_cache_folder(fake_api, tmp_path, monkeypatch, analysis):
    import dataclasses

    from coverage_core.embeddings import EmbeddingCache
    from coverage_core.gap_finding import find_gaps
    from tests.fakes import FakeEmbedder

    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    monkeypatch.setattr(local_model, "local_model_available", lambda: True)
    server = _CountedServer(fake_api)
    monkeypatch.setattr(local_model, "_shared_server", server)
    fake_api.handle(CHAT, lambda body: chat_reply(f"Which river delta water flow does passage {body['seed']} name?"))

    def run():
        fresh = dataclasses.replace(analysis, warnings=list(analysis.warnings), gaps=[])
        embedder = FakeEmbedder(provider="local", model="tiny", vectors="words", width=16, max_tokens=500)
        return find_gaps(fresh, embedder=embedder, cache=EmbeddingCache(tmp_path), support_threshold=0.1)

    first = run()
    asked = len(fake_api.requests_to(CHAT))
    assert asked and server.starts == 1 and ReplyCache(tmp_path).count() == asked
    local_model._replies.clear()
    again = run()
    assert server.starts == 1 and len(fake_api.requests_to(CHAT)) == asked  # nothing written again
    assert again.gaps == first.gaps and any(s.origin == "local" for g in first.gaps for s in g.suggestions + g.dropped)


def test_a_damaged_cache_file_is_written_around_with_one_warning(fake_api, tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    expected = write_questions(_bundled_client(fake_api, None), 0, [2, 1], TEXTS, DOCUMENTS, VECTORS,
                               _embed_by_words, 0.9, languages=["en", "en"], n=2)
    local_model._replies.clear()
    (tmp_path / REPLY_CACHE_FILE_NAME).write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    cache = ReplyCache(tmp_path)
    written = write_questions(_bundled_client(fake_api, cache), 0, [2, 1], TEXTS, DOCUMENTS, VECTORS,
                              _embed_by_words, 0.9, languages=["en", "en"], n=2)
    assert written == expected
    assert len(cache.warnings) == 1 and "could not be used" in cache.warnings[0]


def test_a_stored_reply_longer_than_the_model_writes_is_asked_again(fake_api, tmp_path, monkeypatch):
    from coverage_core.suggest.llm import CHARS_PER_REPLY_TOKEN
    from coverage_core.suggest.reply_cache import request_key

    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())
    fake_api.handle(CHAT, lambda body: chat_reply("What is a violin bow strung with?"))
    cache = ReplyCache(tmp_path)
    key = request_key("test weights 1", "s", "u", max_tokens=8, temperature=None, seed=None)
    cache.put(key, "x" * (8 * CHARS_PER_REPLY_TOKEN + 1))
    assert _bundled_client(fake_api, cache).complete_text("s", "u", max_tokens=8) == "What is a violin bow strung with?"
    assert len(fake_api.requests_to(CHAT)) == 1
