"""Which languages the documents and questions are written in: detection, word units, stop words, the
profile an analysis keeps, and the report's language fields."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from coverage_core import editing, languages, session
from coverage_core.config import AnalysisConfig
from coverage_core.languages import (
    SLICE_CHARS,
    UNDETERMINED,
    LanguageProfile,
    count_shares,
    detect_language,
    detect_languages,
    document_language,
    language_name,
    language_shares,
    main_languages,
    profile_languages,
    stop_words,
    word_units,
)
from coverage_core.outputs.report import SCHEMA_VERSION, build_report, summary_table, upgrade_report
from coverage_core.types import Document, Question, QuestionSet
from tests.fakes import FakeEmbedder

FRENCH = "La Loire est le plus long fleuve de France ; elle prend sa source au mont Gerbier-de-Jonc. "
GERMAN = "Der Rhein fließt durch Deutschland und mündet in den Niederlanden in die Nordsee. "
ENGLISH = "The violin is a wooden string instrument played with a bow made of horsehair. "
CHINESE = "南韓的首都是首爾，人口約一千萬，是全國的政治與經濟中心。"


@pytest.mark.parametrize("text, code", [(FRENCH, "fr"), (GERMAN, "de"), (ENGLISH, "en"), (CHINESE, "zh")])
def test_sentences_are_read_in_their_language(text, code):
    assert detect_language(text) == code


def test_a_short_english_question_is_read_as_english_among_the_corpus_languages():
    question = "Was Volta an Egyptian?"
    assert detect_language(question) != "en"  # alone, among 97 languages, it is too short to tell
    assert detect_language(question, ["fr", "en"]) == "en"
    assert detect_languages([question, "Qui a écrit ce livre ?"], ["fr", "en"]) == ["en", "fr"]


def test_a_question_keeps_its_language_when_no_candidate_is_plausible():
    # Restricted to English, detect_language reads this Chinese question as English (1e-10 against 0.78).
    assert languages.question_language("德國的第一大邦為？", ["fr", "en"]) == "zh"
    assert languages.question_language("Qui a peint la Joconde ?", ["en"]) == "fr"
    assert languages.question_language("Was Volta an Egyptian?", ["fr", "en"]) == "en"
    assert languages.question_language("Q3?", ["en"]) == UNDETERMINED


@pytest.mark.parametrize("text", ["Q3?", "12345 678", "", None])
def test_texts_without_letters_are_undetermined(text):
    assert detect_language(text, ["fr", "en"]) == UNDETERMINED


def test_chinese_is_read_as_overlapping_character_pairs():
    assert word_units("南韓的首都") == " 南韓 韓的 的首 首都 "
    assert word_units("Seoul 首都") == "Seoul  首都 "
    assert word_units("plain English") == "plain English"


def test_stop_words_of_french_and_chinese():
    french = stop_words(["fr"])
    assert {"le", "de", "et"} <= french and "fleuve" not in french
    chinese = stop_words(["zh"])
    assert "我们" in chinese
    # Chinese stop words are given as the character pairs word_units makes.
    assert max(len(word) for word in chinese) == 2
    assert "le" not in chinese


def test_language_shares_count_characters_and_leave_out_undetermined_texts():
    texts = ["a" * 300, "b" * 100, "c" * 100, "d" * 1000]
    shares = language_shares(texts, ["fr", "en", "fr", UNDETERMINED])
    assert [(s.code, s.name, s.n_texts) for s in shares] == [("fr", "French", 2), ("en", "English", 1)]
    assert shares[0].share == pytest.approx(0.8, abs=1e-12)
    assert shares[1].share == pytest.approx(0.2, abs=1e-12)
    assert main_languages(shares, min_share=0.25) == ["fr"]
    assert language_shares(["x"], [UNDETERMINED]) == []


def test_question_shares_count_questions_not_characters():
    shares = count_shares(["fr", "fr", "fr", "en", UNDETERMINED])
    assert [(s.code, s.n_texts) for s in shares] == [("fr", 3), ("en", 1)]
    assert shares[0].share == pytest.approx(0.75, abs=1e-12)


@pytest.fixture
def characters_read(monkeypatch) -> list[int]:
    """The length of every text language detection reads from now on, in order."""
    read: list[int] = []
    real = languages.detect_language

    def recorded(text, candidates=None):
        read.append(len(text))
        return real(text, candidates)

    monkeypatch.setattr(languages, "detect_language", recorded)
    return read


def test_a_document_is_read_on_a_few_evenly_spaced_slices(characters_read):
    assert document_language(FRENCH * 400) == "fr"  # about 36,000 characters
    assert characters_read == [SLICE_CHARS] * 3
    # Two of three slices English: the English part has most of the characters read.
    assert document_language(FRENCH * 5 + ENGLISH * 40) == "en"
    # A French manual with a short English appendix is French.
    assert document_language(FRENCH * 40 + ENGLISH * 4) == "fr"
    assert document_language("2023 — 45 678 — 9") == UNDETERMINED


def _generated_documents() -> list[Document]:
    return [
        Document("loire.txt", FRENCH * 30),
        Document("seine.txt", "La Seine traverse Paris avant de se jeter dans la Manche au Havre. " * 20),
        Document("violin.txt", ENGLISH * 2),
        Document("figures.txt", "2019 2020 2021 — 45 678 — 9 %"),
    ]


def test_profile_languages_of_generated_documents_and_questions():
    documents = _generated_documents()
    questions = ["Où la Loire prend-elle sa source ?", "Quelle ville la Seine traverse-t-elle ?",
                 "Was Volta an Egyptian?", "Q3?"]
    profile = profile_languages(documents, questions)
    assert profile.document_names == ("loire.txt", "seine.txt", "violin.txt", "figures.txt")
    assert profile.document_languages == ("fr", "fr", "en", UNDETERMINED)
    french_chars = len(documents[0].text) + len(documents[1].text)
    english_chars = len(documents[2].text)
    assert [s.code for s in profile.document_shares] == ["fr", "en"]
    assert profile.document_shares[0].share == pytest.approx(french_chars / (french_chars + english_chars), abs=1e-12)
    assert profile.document_shares[0].n_texts == 2
    assert profile.main_languages == ("fr",)  # English is under 5% of the characters
    assert profile.question_languages == ("fr", "fr", "en", UNDETERMINED)
    assert [(s.code, s.n_texts) for s in profile.question_shares] == [("fr", 2), ("en", 1)]
    assert profile.language_of("violin.txt") == "en" and profile.language_of("missing.txt") == UNDETERMINED
    assert profile.in_words() == "documents French 96%, English 4%; questions French 67%, English 33%"

    again = profile.with_questions(["Qui a écrit ce livre ?"])
    assert again.question_languages == ("fr",) and again.document_languages == profile.document_languages


def test_profile_of_questions_alone_reads_them_among_their_own_languages():
    profile = profile_languages([], QuestionSet(pd.DataFrame({"q": ["x"]}), "q", [
        Question(0, "Quelle est la capitale de la France ?"), Question(1, "Où coule la Loire ?"),
        Question(2, "Qui a peint la Joconde ?")]))
    assert profile.document_languages == () and profile.document_shares == ()
    assert profile.question_languages == ("fr", "fr", "fr")
    assert LanguageProfile().in_words() == "documents none detected; questions none detected"


def test_a_thousand_documents_are_profiled_on_a_bounded_sample(characters_read):
    """Cost does not grow with a document's length: at most three slices of SLICE_CHARS are read."""
    documents = [Document(f"d{i}.txt", (FRENCH if i % 2 else GERMAN) * 200) for i in range(1000)]
    profile = profile_languages(documents, [])
    assert sum(characters_read) <= 3 * SLICE_CHARS * 1000
    assert {s.code: s.n_texts for s in profile.document_shares} == {"fr": 500, "de": 500}


# ---------------------------------------------------------------- the analysis and its report

FRENCH_DOCUMENTS = {
    "loire.txt": [
        "La Loire est le plus long fleuve de France.", "Elle prend sa source au mont Gerbier-de-Jonc, en Ardèche.",
        "Le fleuve traverse Orléans, Blois, Tours et Angers avant de rejoindre l'océan Atlantique.",
        "Les châteaux de la Loire attirent chaque année des millions de visiteurs.",
    ],
    "vin.txt": [
        "Le vin de Bordeaux est produit dans le sud-ouest de la France.",
        "Les vignerons récoltent le raisin à la fin de l'été, pendant les vendanges.",
        "Le vin vieillit ensuite dans des barriques de chêne pendant plusieurs mois.",
        "Les grands crus classés sont vendus dans le monde entier.",
    ],
    "fromage.txt": [
        "Le camembert est un fromage à pâte molle fabriqué en Normandie.",
        "Il est fait avec du lait de vache cru et affiné pendant plusieurs semaines.",
        "Le roquefort est un fromage de brebis affiné dans des caves naturelles.",
        "La France produit plus de mille fromages différents.",
    ],
}
FRENCH_QUESTIONS = [
    "Où la Loire prend-elle sa source ?", "Quelles villes la Loire traverse-t-elle ?",
    "Quand les vignerons récoltent-ils le raisin ?", "Dans quoi le vin de Bordeaux vieillit-il ?",
    "Avec quel lait fait-on le camembert ?",
]


@pytest.fixture(scope="module")
def french_analysis():
    documents = [Document(name, " ".join(sentences * 6)) for name, sentences in FRENCH_DOCUMENTS.items()]
    frame = pd.DataFrame({"question": FRENCH_QUESTIONS})
    questions = QuestionSet(frame, "question", [Question(i, text) for i, text in enumerate(FRENCH_QUESTIONS)])
    config = AnalysisConfig(support_threshold=0.3, n_clusters=3)
    embedder = FakeEmbedder(vectors="words", width=96, max_tokens=400)
    return session.analyze(config, documents, questions, embedder=embedder), embedder


def test_the_analysis_keeps_the_languages_and_the_report_carries_them(french_analysis):
    analysis, _ = french_analysis
    assert isinstance(analysis.languages, LanguageProfile)
    report = build_report(analysis)
    assert report["schema_version"] == SCHEMA_VERSION == 6
    assert [d["language"] for d in report["documents"]] == ["fr"] * 3
    assert [q["language"] for q in report["questions"]] == ["fr"] * len(FRENCH_QUESTIONS)
    assert report["languages"] == {
        "documents": [{"code": "fr", "name": "French", "share": 1.0, "n_documents": 3}],
        "questions": [{"code": "fr", "name": "French", "share": 1.0, "n_questions": len(FRENCH_QUESTIONS)}],
    }
    assert "Languages: documents French 100%; questions French 100%." in summary_table(analysis).splitlines()


def test_accepted_questions_are_read_without_reading_the_documents_again(french_analysis, monkeypatch):
    analysis, embedder = french_analysis
    read = []
    monkeypatch.setattr(languages, "document_language", lambda *a, **k: read.append(a) or "fr")
    _, after = editing.accept_questions(analysis, ["Who makes Roquefort cheese?"], embedder, None)
    assert read == []
    assert after.languages.question_languages == ("fr",) * len(FRENCH_QUESTIONS) + ("en",)
    assert [q["language"] for q in build_report(after)["questions"]][-1] == "en"
    assert build_report(after)["languages"]["questions"][1] == {
        "code": "en", "name": "English", "share": pytest.approx(1 / 6, abs=1e-6), "n_questions": 1}


def test_a_new_k_reuses_the_language_profile(french_analysis, monkeypatch):
    analysis, embedder = french_analysis
    calls = []
    real = session.profile_languages
    monkeypatch.setattr(session, "profile_languages", lambda *a: calls.append(1) or real(*a))
    analysis_session = session.AnalysisSession()
    inputs = analysis_session.embed(*session.run_keys(analysis.config), analysis.questions, embedder, None,
                                    documents=analysis.corpus.documents)
    first = analysis_session.analysis_for(inputs, analysis.config)
    second = analysis_session.analysis_for(inputs, dataclasses.replace(analysis.config, n_clusters=2))
    assert calls == [1]
    assert first.languages is second.languages
    assert first.languages.document_languages == ("fr", "fr", "fr")


def test_an_analysis_built_without_a_profile_is_read_when_reported(french_analysis):
    analysis, _ = french_analysis
    report = build_report(dataclasses.replace(analysis, languages=None))
    assert [d["language"] for d in report["documents"]] == ["fr"] * 3
    assert report["languages"]["documents"][0]["code"] == "fr"


def test_an_older_report_gets_undetermined_languages():
    old = {"schema_version": 4, "metrics": {}, "documents": [{"name": "a.txt"}],
           "questions": [{"row": 0, "text": "x", "is_outlier": False}], "clusters": []}
    upgraded = upgrade_report(old)
    assert upgraded["languages"] == {"documents": [], "questions": []}
    assert upgraded["documents"][0]["language"] == UNDETERMINED
    assert upgraded["questions"][0]["language"] == UNDETERMINED
    assert upgraded["schema_version"] == 4 and "language" not in old["documents"][0]
    current = upgrade_report({"schema_version": 5, "documents": [{"name": "a", "language": "fr"}]})
    assert current["documents"][0]["language"] == "fr"


def test_language_names_are_plain_words():
    assert language_name("fr") == "French" and language_name("zh") == "Chinese"
    assert language_name("xx") == "xx"
    assert np.isclose(sum(s.share for s in language_shares(["ab", "c"], ["fr", "en"])), 1.0, atol=1e-12)
