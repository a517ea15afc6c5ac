"""The automatic model choice from the detected languages, and the model-fit verdict."""

from __future__ import annotations

import pytest

from coverage_core.config import EmbeddingConfig
from coverage_core.embeddings import PROVIDERS
from coverage_core.embeddings.choice import (
    AUTO,
    E5_MAX_CHARACTERS,
    ENGLISH_MODEL,
    MULTILINGUAL_MODELS,
    choose_model,
    resolve,
)
from coverage_core.embeddings.registry import covers_language
from coverage_core.languages import LanguageShare
from coverage_core.verdicts import MIN_UNREAD_SHARE, POOR_SEPARATION, model_fit_problem


def shares(**parts: float) -> list[LanguageShare]:
    from coverage_core.languages import language_name

    return [LanguageShare(code, language_name(code), share, 1) for code, share in parts.items()]


def test_english_corpus_keeps_the_english_model():
    choice = choose_model(shares(en=1.0), shares(en=1.0))
    assert (choice.provider, choice.model) == ENGLISH_MODEL
    assert "English" in choice.reason


def test_a_trace_of_another_language_does_not_steer_the_choice():
    assert (choose_model(shares(en=0.97, fr=0.03)).provider, ) == (ENGLISH_MODEL[0], )


def test_french_documents_take_the_first_multilingual_model_and_say_why():
    choice = choose_model(shares(fr=0.9, en=0.1), shares(fr=1.0))
    assert (choice.provider, choice.model) == MULTILINGUAL_MODELS[0]
    assert "French (90%)" in choice.reason and "English only" in choice.reason
    assert choice.languages == ("fr", "en")


def test_english_questions_on_german_documents_are_cross_lingual():
    choice = choose_model(shares(de=1.0), shares(en=1.0))
    assert choice.provider != ENGLISH_MODEL[0]
    assert "the questions in English" in choice.reason


def test_large_corpora_take_the_faster_multilingual_model_unless_it_cannot_read_them():
    fast = ("use", "universal-sentence-encoder-multilingual-3")
    assert MULTILINGUAL_MODELS == (("e5", "multilingual-e5-small"), fast)
    large = choose_model(shares(fr=1.0), n_characters=E5_MAX_CHARACTERS + 1)
    assert (large.provider, large.model) == fast and f"would take long on {E5_MAX_CHARACTERS + 1:,} characters" in large.reason
    assert choose_model(shares(fr=1.0), n_characters=E5_MAX_CHARACTERS).provider == "e5"
    # Swahili is not among the Universal Sentence Encoder's languages: however large, e5 reads it.
    assert covers_language(*fast, "sw") is False
    assert choose_model(shares(sw=1.0), n_characters=10 * E5_MAX_CHARACTERS).provider == "e5"


def test_resolve_leaves_a_named_provider_alone_and_makes_auto_concrete():
    named = EmbeddingConfig("local")
    assert resolve(named, shares(fr=1.0)) == (named, None)
    embedding, choice = resolve(EmbeddingConfig(AUTO), shares(fr=1.0))
    assert embedding.provider == choice.provider == MULTILINGUAL_MODELS[0][0]
    assert embedding.provider in PROVIDERS and embedding.model == choice.model


def test_auto_is_registered_free_and_local():
    spec = PROVIDERS[AUTO]
    assert not spec.paid and not spec.remote and spec.key_variable is None


def test_fit_problem_names_the_unread_language_and_the_remedy():
    sentence = model_fit_problem("all-MiniLM-L6-v2", [("German", 0.97, "documents")], separation=0.7)
    assert sentence.startswith("all-MiniLM-L6-v2 is not trained for German (97% of the documents)")
    assert "multilingual model" in sentence


def test_fit_problem_ignores_a_small_share_and_a_good_separation():
    assert model_fit_problem("m", [("German", MIN_UNREAD_SHARE / 2, "documents")], separation=0.7) == ""
    assert model_fit_problem("m", [], separation=None) == ""


@pytest.mark.parametrize("separation", [POOR_SEPARATION - 0.01, 0.0])
def test_fit_problem_on_a_poor_separation(separation):
    sentence = model_fit_problem("m", [], separation=separation)
    assert "barely tells" in sentence and f"{separation:.2f}" in sentence
    assert model_fit_problem("m", [], separation=POOR_SEPARATION) == ""


def test_fit_problem_sums_many_small_unread_languages():
    """Fifty languages of 2% each, none the model reads: no one of them reaches the share, together they do."""
    unread = [(f"Language {i}", 0.02, "documents") for i in range(50)]
    sentence = model_fit_problem("all-MiniLM-L6-v2", unread, separation=0.7)
    assert sentence.startswith("all-MiniLM-L6-v2 is not trained for 50 languages that hold 100% of the documents")
    assert "multilingual model" in sentence and "Language 3" not in sentence  # a count, not fifty names
    few = [(f"Language {i}", MIN_UNREAD_SHARE / 4, "questions") for i in range(3)]  # 3.75% together: noise
    assert model_fit_problem("m", few, separation=0.7) == ""
