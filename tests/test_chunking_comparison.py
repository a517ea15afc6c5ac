import numpy as np
import pandas as pd
import pytest

from coverage_core import costs
from coverage_core.checks import retrieval_labels
from coverage_core.chunking_comparison import (
    DEFAULT_GRID,
    RESULT_COLUMNS,
    compare_chunkings,
    grid_frame,
    grid_from_frame,
    plan_chunkings,
)
from coverage_core.embedding_steps import chunk_corpus, embed_questions
from coverage_core.embeddings import EmbeddingCache
from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.stages.chunking import ChunkingConfig
from tests.fakes import FakeEmbedder
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"
DOCS = ["Alessandro_Volta.txt", "Octopus.txt", "Trumpet.txt"]
# A provider with a price; its vectors as long as the dimensions asked for, as the API returns (a cached vector
# of another length counts as damaged and is embedded again).
PAID = {"provider": "openai", "model": "text-embedding-3-small", "dimensions": 256}


def word_embedder(**options):
    """A bag-of-words fake: similarity follows shared words, so retrieval means something."""
    settings = dict(model="bag-of-words", vectors="words", width=256, max_tokens=10_000, batch_size=32)
    return FakeEmbedder(**(settings | options))


@pytest.fixture(scope="module")
def inputs():
    documents = read_documents([EXAMPLE / "docs" / name for name in DOCS]).documents
    frame = pd.read_csv(EXAMPLE / "questions.csv")
    frame = frame[frame["source"].isin(DOCS)].head(40)
    questions = read_questions(frame.to_csv(index=False).encode(), name="q.csv")
    return documents, questions


def embedded_inputs(inputs, cache_dir, **embedder_options):
    """The documents, the questions, an empty cache, a word_embedder and the questions embedded with it."""
    documents, questions = inputs
    cache = EmbeddingCache(cache_dir)
    embedder = word_embedder(**embedder_options)
    return documents, questions, cache, embedder, embed_questions(questions, embedder, cache)


@pytest.mark.slow
def test_each_configuration_gets_a_row_and_cached_texts_cost_nothing(inputs, cache_dir):
    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir)
    relevant = retrieval_labels.relevant_from_questions(questions, "source")
    grid = [ChunkingConfig(500, 0), ChunkingConfig(1000, 200)]
    seen = []
    table, warnings = compare_chunkings(
        documents, questions, question_embedding, grid, embedder, cache,
        relevant=relevant, k=3, progress=lambda done, total, config, step: seen.append((done, total, step)),
    )
    assert warnings == []
    assert list(table.columns) == list(RESULT_COLUMNS)
    assert table[["chunk_size", "chunk_overlap"]].values.tolist() == [[500, 0], [1000, 200]]
    assert table.loc[0, "n_chunks"] > table.loc[1, "n_chunks"]  # smaller chunks, more of them
    # Only texts not embedded before are sent: a chunk both configurations
    # produce (a short paragraph) is embedded by the first one only.
    first_texts = {c.text for c in chunk_corpus(documents, grid[0])}
    second_texts = [c.text for c in chunk_corpus(documents, grid[1])]
    assert table.loc[0, "newly_embedded"] == table.loc[0, "n_chunks"]
    assert table.loc[1, "newly_embedded"] == sum(t not in first_texts for t in second_texts) < table.loc[1, "n_chunks"]
    assert seen == [(0, 2, "embedding"), (1, 2, "done"), (1, 2, "embedding"), (2, 2, "done")]
    # Word overlap retrieves each question's own article far above chance (1/3).
    assert (table["hit_at_k"] > 0.7).all() and (table["mrr"] > 0.6).all()
    assert table["basic"].between(0, 1).all() and table["balanced"].between(0, 1).all()
    assert table["cost_usd"].isna().all()  # a paid-looking provider without a price table

    # Again with one new configuration: the repeated one costs nothing.
    sent_before = len(embedder.sent)
    again, _ = compare_chunkings(
        documents, questions, question_embedding, grid + [ChunkingConfig(2000, 200)], embedder, cache,
        relevant=relevant, k=3,
    )
    assert again["newly_embedded"].tolist()[:2] == [0, 0]
    # What was sent: the new configuration's chunks and its support-level calibration texts.
    sent = again.loc[2, "newly_embedded"] + again.loc[2, "calibration_embedded"]
    assert again.loc[2, "newly_embedded"] > 0 and sent == len(embedder.sent) - sent_before
    same = ["n_chunks", "n_clusters", "basic", "balanced", "precision_at_k", "recall_at_k", "mrr"]
    pd.testing.assert_frame_equal(again.loc[:1, same], table[same], check_dtype=False)  # cached = same vectors


def test_plan_counts_what_would_be_sent_before_anything_is(inputs, cache_dir):
    documents, questions = inputs
    cache = EmbeddingCache(cache_dir)
    embedder = word_embedder()
    grid = [ChunkingConfig(1000, 0), ChunkingConfig(1000, 200)]
    plans = plan_chunkings(documents, grid, embedder, cache)
    assert embedder.calls == 0
    assert plans[0].n_to_embed == plans[0].n_chunks
    shared = {c.text for c in chunk_corpus(documents, grid[0])}
    assert plans[1].n_to_embed == len({c.text for c in chunk_corpus(documents, grid[1])} - shared)
    assert all(p.approx_tokens > 0 for p in plans)
    question_embedding = embed_questions(questions, embedder, cache)
    table, _ = compare_chunkings(documents, questions, question_embedding, grid[:1], embedder, cache)
    after = plan_chunkings(documents, grid, embedder, cache)
    assert after[0].n_to_embed == 0 and after[1].n_to_embed == plans[1].n_to_embed
    assert table["precision_at_k"].isna().all()  # no relevant sources given: no retrieval figures


def test_paid_provider_rows_carry_the_cost_of_new_tokens_only(inputs, cache_dir):
    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir, **PAID)
    prices = costs.default_price_table()
    grid = [ChunkingConfig(1000, 200)]
    first, _ = compare_chunkings(documents, questions, question_embedding, grid, embedder, cache, price_table=prices)
    expected = costs.estimate_embedding_cost(int(first.loc[0, "new_tokens"]), "openai", "text-embedding-3-small", prices)
    assert first.loc[0, "new_tokens"] > 0 and first.loc[0, "cost_usd"] == pytest.approx(expected.usd)
    second, _ = compare_chunkings(documents, questions, question_embedding, grid, embedder, cache, price_table=prices)
    assert second.loc[0, "new_tokens"] == 0 and second.loc[0, "cost_usd"] == 0.0


def test_a_provider_error_keeps_finished_rows_and_their_embeddings(inputs, cache_dir):
    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir)
    failing = word_embedder(fail_from_batch=1)
    grid = [ChunkingConfig(1000, 200), ChunkingConfig(500, 0)]
    first, _ = compare_chunkings(documents, questions, question_embedding, grid[:1], embedder, cache)
    table, warnings = compare_chunkings(documents, questions, question_embedding, grid, failing, cache)
    assert len(table) == 1 and table.loc[0, "chunk_size"] == 1000  # the cached one still ran
    assert len(warnings) == 1 and "stopped at chunk size 500" in warnings[0] and "rate-limited" in warnings[0]


def test_the_screening_decision_is_held_fixed_across_configurations(inputs, cache_dir):
    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir)
    n = len(questions.questions)
    everyone_out = np.ones(n, dtype=bool)
    table, _ = compare_chunkings(
        documents, questions, question_embedding, DEFAULT_GRID[:2], embedder, cache, is_outlier=everyone_out
    )
    assert (table["basic"] == 0).all()  # no inlier question: no coverage, in every configuration
    with pytest.raises(InputError, match="one flag per question"):
        compare_chunkings(documents, questions, question_embedding, DEFAULT_GRID, embedder, cache, is_outlier=[True])


def test_grid_table_round_trip_and_validation():
    assert grid_from_frame(grid_frame()) == list(DEFAULT_GRID)
    edited = pd.DataFrame({"chunk_size": [800, None, 800, 300.0], "chunk_overlap": [100, None, 100, None]})
    assert grid_from_frame(edited) == [ChunkingConfig(800, 100), ChunkingConfig(300, 0)]
    with pytest.raises(InputError, match="Row 1 .*smaller than chunk_size"):
        grid_from_frame(pd.DataFrame({"chunk_size": [100], "chunk_overlap": [100]}))
    with pytest.raises(InputError, match="Row 2 .*whole numbers"):
        grid_from_frame(pd.DataFrame({"chunk_size": [100, "big"], "chunk_overlap": [0, 0]}))
    with pytest.raises(InputError, match="empty"):
        grid_from_frame(pd.DataFrame({"chunk_size": [None], "chunk_overlap": [None]}))
    with pytest.raises(InputError, match="chunk_overlap is missing"):
        grid_from_frame(pd.DataFrame({"chunk_size": [100]}))


def test_grid_from_text_and_the_report_rows():
    from coverage_core.chunking_comparison import comparison_section, parse_grid

    assert parse_grid("500/0, 1000/200,800") == [ChunkingConfig(500, 0), ChunkingConfig(1000, 200), ChunkingConfig(800, 0)]
    for bad, message in (("big", "not a chunk configuration"), ("100/100", "smaller than chunk_size"), (" , ", "empty")):
        with pytest.raises(InputError, match=message):
            parse_grid(bad)
    table = pd.DataFrame({"chunk_size": [500], "n_chunks": [np.int64(3)], "basic": [np.float32(0.1234567)],
                          "mrr": [np.nan], "error": [None]})
    import json

    rows = comparison_section(table)
    assert rows == [{"chunk_size": 500, "n_chunks": 3, "basic": 0.123457, "mrr": None, "error": None}]
    json.dumps(rows, allow_nan=False)


# ---------------------------------------------------------------- support level per configuration


@pytest.mark.slow
def test_each_configuration_is_judged_at_its_own_calibrated_support_level(inputs, cache_dir):
    from coverage_core.config import AnalysisConfig
    from coverage_core.embedding_steps import embed_corpus
    from coverage_core.measure import measure
    from coverage_core.session import analyze, cluster_chunks, support_fallback
    from coverage_core.stages import calibration

    documents, questions = inputs
    cache = EmbeddingCache(cache_dir)
    embedder = word_embedder()
    config = AnalysisConfig(chunking=ChunkingConfig(1000, 200), random_state=3)
    analysis = analyze(config, documents, questions, embedder=embedder, cache=cache)
    grid = [ChunkingConfig(300, 0), ChunkingConfig(1000, 200), ChunkingConfig(2500, 0)]
    table, warnings = compare_chunkings(
        documents, questions, analysis.question_embedding, grid, embedder, cache,
        config=config, is_outlier=analysis.is_outlier,
    )
    assert warnings == []
    assert {"tested_share", "support_threshold", "support_method", "calibration_embedded"} <= set(table.columns)
    # Each row calibrated on its own chunks; where that fails (this word embedder separates the small
    # fixture's documents poorly at some sizes) the row says so and rests on the fallback level.
    assert table["support_method"].str.match(r"pseudo-queries$|default: ").all()
    assert (table["support_method"] == "pseudo-queries").any()
    # The analysed chunking's row is the analysis itself: same τ, same tested share.
    analysed = table.set_index(["chunk_size", "chunk_overlap"]).loc[(1000, 200)]
    assert analysed["support_threshold"] == pytest.approx(analysis.calibration.support_threshold)
    assert analysed["tested_share"] == pytest.approx(analysis.metrics["tested_share"])
    assert analysed["calibration_embedded"] == 0  # the analysis calibrated it already: nothing embedded twice
    # Every row: τ calibrated on that chunking's own chunks, with the same embedder, cache and seed.
    for row, chunking in zip(table.itertuples(index=False), grid):
        sent_before = len(embedder.sent)
        corpus = embed_corpus(documents, chunking, embedder, cache)
        probed = []

        def embed(texts, probed=probed):
            probed.extend(texts)
            return embedder.embed(list(texts))

        own = calibration.calibrate(corpus.chunks, corpus.vectors, embed, 3, fallback=support_fallback(config))
        assert probed == calibration.calibration_texts(corpus.chunks, 3)  # what the cost estimates count
        assert len(embedder.sent) - sent_before == len(probed)  # the chunks came from the cache
        assert row.support_threshold == pytest.approx(own.support_threshold)
        expected = measure(
            config, corpus, questions, analysis.question_embedding, cluster_chunks(corpus, None, 3),
            force_include=np.asarray(questions.rows)[~analysis.is_outlier].tolist(),
            force_exclude=np.asarray(questions.rows)[analysis.is_outlier].tolist(),
            calibration=own,
        )
        assert row.tested_share == pytest.approx(expected.metrics["tested_share"])
    # Different chunkings, different levels: one τ for all would judge some by a level that does not fit them.
    assert table["support_threshold"].nunique() > 1
    assert table.loc[0, "calibration_embedded"] > 0 and table.loc[2, "calibration_embedded"] > 0


def test_a_support_level_the_user_set_is_used_for_every_configuration(inputs, cache_dir):
    from coverage_core.config import AnalysisConfig

    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir)
    sent_before = len(embedder.sent)
    grid = [ChunkingConfig(500, 0), ChunkingConfig(1000, 200)]
    table, _ = compare_chunkings(
        documents, questions, question_embedding, grid, embedder, cache,
        config=AnalysisConfig(support_threshold=0.05),
    )
    assert table["support_threshold"].tolist() == [0.05, 0.05]
    assert table["support_method"].tolist() == ["override", "override"]
    assert table["calibration_embedded"].tolist() == [0, 0]
    assert len(embedder.sent) - sent_before == table["newly_embedded"].sum()  # chunks only: nothing calibrated
    strict, _ = compare_chunkings(
        documents, questions, question_embedding, grid, embedder, cache, config=AnalysisConfig(support_threshold=1.0)
    )
    assert (table["tested_share"] > strict["tested_share"]).all()  # the level set is the level used
    plans = plan_chunkings(documents, grid, embedder, cache, config=AnalysisConfig(support_threshold=0.05))
    assert [p.n_calibration for p in plans] == [0, 0]


@pytest.mark.slow
def test_plan_counts_the_calibration_texts_the_comparison_then_sends(inputs, cache_dir):
    from coverage_core.stages.calibration import MAX_CALIBRATION_TEXTS, calibration_texts

    documents, questions, cache, embedder, question_embedding = embedded_inputs(inputs, cache_dir, **PAID)
    grid = [ChunkingConfig(1000, 0), ChunkingConfig(700, 100)]
    plans = plan_chunkings(documents, grid, embedder, cache)
    assert embedder.sent == questions.texts  # the questions only: planning sends nothing
    first = set(calibration_texts(chunk_corpus(documents, grid[0])))
    assert 0 < plans[0].n_calibration == len(first) <= MAX_CALIBRATION_TEXTS
    assert plans[0].calibration_tokens > 0 and plans[0].total_tokens == plans[0].approx_tokens + plans[0].calibration_tokens
    prices = costs.default_price_table()
    table, _ = compare_chunkings(documents, questions, question_embedding, grid, embedder, cache, price_table=prices)
    assert table["calibration_embedded"].tolist() == [p.n_calibration for p in plans]
    assert table["newly_embedded"].tolist() == [p.n_to_embed for p in plans]
    # The row's tokens and cost cover the calibration texts too.
    assert table["new_tokens"].sum() == sum(embedder.count_tokens(embedder.sent[len(questions.texts):]))
    assert table.loc[0, "cost_usd"] == pytest.approx(
        costs.estimate_embedding_cost(int(table.loc[0, "new_tokens"]), "openai", "text-embedding-3-small", prices).usd
    )
    after = plan_chunkings(documents, grid, embedder, cache)
    assert [(p.n_to_embed, p.n_calibration) for p in after] == [(0, 0), (0, 0)]


def test_support_sources_read_as_plain_words():
    from coverage_core.chunking_comparison import support_source

    assert support_source("pseudo-queries") == "calibrated"
    assert support_source("override") == "set by you"
    assert support_source("default: one document, so no passage of another document") == (
        "default (could not be calibrated)"
    )
    assert support_source(None) == "" and support_source(float("nan")) == ""
