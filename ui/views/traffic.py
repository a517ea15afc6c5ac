"""The Production traffic page's tables and sentences (no Streamlit)."""

from __future__ import annotations

import pandas as pd

from coverage_core.checks.traffic_answers import NO_ANSWER
from ui import formats

UNANSWERED_ROWS = 50
"""Queries without an answer listed on the page at most (the most asked)."""


def traffic_topic_table(result) -> pd.DataFrame:
    """The topics of the answerable traffic as the page shows them, most asked least tested first."""
    topics = result.topics
    return pd.DataFrame({
        "topic": topics["label"],
        "queries": topics["volume"],
        "share of traffic": topics["share"],
        "tested": topics["tested_share"],
        "most asked": topics["examples"].map(lambda examples: " | ".join(examples)),
    })


def unanswered_sentence(result) -> str:
    """How much of the traffic has no answer in the documents, in one plain sentence ("" when none)."""
    group = result.unanswered
    if group is None or not group.volume:
        return ""
    return (
        f"{formats.count(group.volume, 'query', 'queries')} ({group.share:.0%} of the traffic, "
        f"{formats.count(group.n_distinct, 'distinct query', 'distinct queries')}) "
        f"{formats.plural(group.volume, 'has', 'have')} {NO_ANSWER}: whatever topic "
        f"{formats.plural(group.volume, 'it is', 'they are')} about, no passage answers "
        f"{formats.plural(group.volume, 'it', 'them')}. That is a gap in the documents, not in the test set: "
        "add documents for this demand (or make sure the application says it does not know)."
    )


def unanswered_table(result, n: int = UNANSWERED_ROWS) -> pd.DataFrame:
    """The most asked queries no passage answers, with how often each was asked."""
    queries = result.queries
    rows = queries[~queries["is_answerable"]].sort_values("count", ascending=False, kind="stable").head(n)
    return pd.DataFrame({"query": rows["text"].to_numpy(), "times asked": rows["count"].to_numpy()})


def suggestions_sentence(result) -> str:
    """What the traffic suggests as test questions, and where the unanswered ones go."""
    n = len(result.suggestions)
    unanswered = sum(1 for s in result.suggestions if s.note == NO_ANSWER)
    sentence = (
        f"{formats.count(n, 'real query', 'real queries')} that no test asks "
        f"{formats.plural(n, 'is a candidate', 'are candidates')} for the test set. "
        f"{formats.plural(n, 'It joins', 'They join')} the suggestions table on the Gap analysis page, marked "
        "“traffic”, each in the topic of the passage that answers it, where you accept, edit, apply and export them."
    )
    if unanswered:
        sentence += (
            f" {formats.count(unanswered, 'of them has', 'of them have')} {NO_ANSWER} and "
            f"{formats.plural(unanswered, 'is', 'are')} marked so: as a test, such a query checks that the "
            "application says it does not know."
        )
    return sentence


def unneeded_tests_table(result) -> pd.DataFrame:
    """The test questions no real query comes near, with the closest query's similarity."""
    return result.unneeded_tests.rename(columns={"best_similarity": "closest query"})
