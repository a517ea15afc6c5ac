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


def test_default_table_prices_the_providers_models():
    table = costs.default_price_table()
    assert list(table.columns) == list(costs.PRICE_COLUMNS)
    models = set(table["model"])
    assert {"text-embedding-3-small", "text-embedding-3-large", "voyage-3", "gpt-4o-mini"} <= models
    assert (table[["usd_per_1m_input", "usd_per_1m_output"]] >= 0).all().all()


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
