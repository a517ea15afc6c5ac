"""Offline token counts and cost estimates from the editable price table."""

import pandas as pd
import pytest

from coverage_core import costs
from coverage_core.errors import InputError


def test_tokens_are_approximated_at_four_characters_each():
    assert costs.approximate_tokens([]) == 0
    assert costs.approximate_tokens(["", "abc", "abcd", "abcde"]) == 1 + 1 + 1 + 2
    assert costs.approximate_tokens(["x" * 4000]) == 1000
    assert "approximate" in costs.APPROXIMATION_NOTE


def test_tokens_count_utf8_bytes_so_other_scripts_are_not_undercounted():
    from coverage_core.embeddings import make_embedder

    assert costs.approximate_tokens(["日本語の文章です"]) == 6  # 8 characters, 24 bytes
    assert costs.approximate_tokens(["Привет мир"]) == 5  # 10 characters, 19 bytes
    assert costs.approximate_tokens(["plain English text"]) == 5  # 18 characters
    texts = ["日本語の文章です", "Привет мир", "plain English text", "x" * 4001]
    # The estimate and the requests the API embedders plan count the same tokens.
    embedder = make_embedder("openai", api_key="sk-test-costs")
    assert sum(embedder.count_tokens(texts)) == costs.approximate_tokens(texts)


def test_an_estimate_counts_only_distinct_texts_the_cache_does_not_hold(cache_dir):
    import numpy as np

    from coverage_core.embeddings import CacheKey, EmbeddingCache, make_embedder, text_hash
    from coverage_core.embeddings.cache import uncached_texts

    texts = [f"passage {i} " + "word " * (i % 50) for i in range(3_000)]
    embedder = make_embedder("voyage", api_key="sk-test-costs")
    cache = EmbeddingCache(cache_dir)
    cache.put_many(CacheKey.of(embedder), [(text_hash(t), np.ones(4, np.float32), 1) for t in texts[::2]])
    unsent = uncached_texts(texts + texts[:500], embedder, cache)  # repeats are sent once
    assert unsent == texts[1::2]
    estimate = costs.estimate_embedding_cost(costs.approximate_tokens(unsent), "voyage", "voyage-3.5", costs.default_price_table())
    assert estimate.input_tokens == sum(costs.approximate_tokens([t]) for t in texts[1::2])


def test_default_table_prices_the_providers_models():
    table = costs.default_price_table()
    assert list(table.columns) == list(costs.PRICE_COLUMNS)
    models = set(table["model"])
    assert {"text-embedding-3-small", "text-embedding-3-large", "voyage-3", "gpt-4o-mini"} <= models
    assert (table[["usd_per_1m_input", "usd_per_1m_output"]] >= 0).all().all()


def test_default_table_takes_embedding_prices_from_the_provider_registry():
    from coverage_core.embeddings.registry import embedding_prices, is_paid

    table = costs.default_price_table()
    embedding = table[table["kind"] == "embedding"]
    assert sorted(map(tuple, embedding[["provider", "model", "usd_per_1m_input"]].values.tolist())) == sorted(
        (provider, model, usd) for provider, model, usd, _ in embedding_prices()
    )
    # The rows to check come first: paid providers' prices, then the LLMs', then the free model's zero row.
    paid = embedding["provider"].map(is_paid)
    assert list(table["kind"]).index("llm") > max(embedding.index[paid])
    assert min(embedding.index[~paid]) > max(table.index[table["kind"] == "llm"])
    assert ["local", "all-MiniLM-L6-v2", "embedding", 0.0, 0.0] in table.values.tolist()
    assert "auto" not in set(embedding["provider"])  # it stands for a bundled model, priced in that row


def test_embedding_cost_from_the_table():
    table = costs.default_price_table()
    estimate = costs.estimate_embedding_cost(2_000_000, "openai", "text-embedding-3-small", table)
    assert estimate.usd == pytest.approx(0.04)
    assert estimate.input_tokens == 2_000_000 and estimate.output_tokens == 0
    assert "~2,000,000 tokens" in estimate.label and "$0.0400" in estimate.label and "approximate" in estimate.label


def test_edited_prices_are_used_and_unknown_models_say_so():
    table = costs.default_price_table()
    table.loc[table["model"] == "voyage-3", "usd_per_1m_input"] = 1.0
    assert costs.estimate_embedding_cost(500_000, "voyage", "voyage-3", table).usd == pytest.approx(0.5)
    unknown = costs.estimate_embedding_cost(10, "openai", "my-model", table)
    assert unknown.usd is None and "no price for my-model" in unknown.label


def test_llm_cost_counts_input_and_output():
    tokens_in, tokens_out = costs.estimate_llm_tokens(4, 4 * 5 * 1200)
    assert tokens_in == (4 * 5 * 1200 + 4 * 2500) // 4 and tokens_out == 4 * 1200 // 4
    estimate = costs.estimate_llm_cost(1_000_000, 1_000_000, "gpt-4o-mini", costs.default_price_table())
    assert estimate.usd == pytest.approx(0.15 + 0.60)
    assert costs.estimate_llm_tokens(0, 0) == (0, 0)


def test_price_table_is_checked():
    table = costs.default_price_table()
    table.loc[0, "usd_per_1m_input"] = -1
    with pytest.raises(InputError, match="must be a number, 0 or more"):
        costs.clean_price_table(table)
    edited = pd.concat(
        [costs.default_price_table(), pd.DataFrame([{"provider": None, "model": None}])], ignore_index=True
    )
    assert len(costs.clean_price_table(edited)) == len(costs.default_price_table())  # half-typed row dropped
    blank = costs.default_price_table()
    blank.loc[0, "usd_per_1m_output"] = None
    assert costs.clean_price_table(blank).loc[0, "usd_per_1m_output"] == 0.0
    with pytest.raises(InputError, match="needs the columns"):
        costs.clean_price_table(table.drop(columns=["kind"]))


# ---------------------------------------------------------------- support-level calibration


def _example_chunks(names=None, size=1000, overlap=200):
    from coverage_core.embedding_steps import chunk_corpus
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig
    from tests.helpers import PROJECT

    folder = PROJECT / "examples" / "wiki-qa" / "docs"
    paths = [folder / name for name in names] if names else [folder]
    return chunk_corpus(read_documents(paths).documents, ChunkingConfig(size, overlap))


def test_calibration_cost_counts_exactly_the_texts_calibration_would_send():
    from coverage_core.stages.calibration import calibration_texts

    chunks = _example_chunks(["Drum.txt", "Flute.txt", "Koala.txt"])
    table = costs.default_price_table()
    found = costs.estimate_calibration_cost(chunks, "openai", "text-embedding-3-small", table, random_state=2)
    texts = list(dict.fromkeys(calibration_texts(chunks, 2)))
    assert 0 < found.n_texts == len(texts) <= costs.MAX_CALIBRATION_TEXTS
    assert found.estimate.input_tokens == costs.approximate_tokens(texts)
    assert found.estimate.usd == pytest.approx(found.estimate.input_tokens * 0.02 / 1_000_000)
    assert found.label.startswith(f"Support-level calibration: about {found.n_texts:,} texts, ~")
    assert "approximate" in found.label
    # Texts the embedding cache holds are not sent.
    half = set(texts[: len(texts) // 2])
    partly = costs.estimate_calibration_cost(
        chunks, "openai", "text-embedding-3-small", table, random_state=2,
        uncached=lambda candidates: [t for t in dict.fromkeys(candidates) if t not in half],
    )
    assert partly.n_texts == len(texts) - len(half)
    # Texts the caller's own estimate already counts (the run's passages) are embedded once, counted once.
    shared = costs.estimate_calibration_cost(
        chunks, "openai", "text-embedding-3-small", table, random_state=2, counted=texts[:10] + ["unrelated"],
    )
    assert shared.n_texts == len(texts) - 10
    assert shared.estimate.input_tokens == costs.approximate_tokens(texts[10:])
    # A single passage has no other topic to tell apart from, so calibration embeds nothing.
    alone = costs.estimate_calibration_cost(_example_chunks(["Drum.txt"])[:1], "openai", "text-embedding-3-small", table)
    assert alone.n_texts == 0 and alone.estimate.input_tokens == 0


def test_the_number_of_calibration_texts_lives_in_the_core_once():
    import inspect

    from coverage_core.stages import calibration

    assert costs.MAX_CALIBRATION_TEXTS is calibration.MAX_CALIBRATION_TEXTS == 2 * calibration.MAX_PROBES
    assert f"{calibration.MAX_CALIBRATION_TEXTS:,}" in costs.CALIBRATION_NOTE
    assert "800" not in inspect.getsource(costs)  # imported, never restated
    # A corpus with many candidate sentences is capped at that number.
    many = calibration.calibration_texts(_example_chunks(size=300, overlap=0))
    assert len(many) == calibration.MAX_CALIBRATION_TEXTS
