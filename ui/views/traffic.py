"""The Production traffic page's tables."""

from __future__ import annotations

import pandas as pd


def traffic_topic_table(result) -> pd.DataFrame:
    """The traffic topics as the page shows them, most asked least tested first."""
    topics = result.topics
    return pd.DataFrame({
        "topic": topics["label"],
        "queries": topics["volume"],
        "share of traffic": topics["share"],
        "tested": topics["tested_share"],
        "answerable": topics["answerable_share"],
        "most asked": topics["examples"].map(lambda examples: " | ".join(examples)),
    })


def unneeded_tests_table(result) -> pd.DataFrame:
    """The test questions no real query comes near, with the closest query's similarity."""
    return result.unneeded_tests.rename(columns={"best_similarity": "closest query"})
