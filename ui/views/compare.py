"""The Compare page: a second question set scored on the same chunks and clusters, and the differences."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pandas as pd

from coverage_core import editing
from coverage_core.checks import scorecard as scorecard_check
from coverage_core.inputs import testset_formats
from coverage_core.results import Analysis
from coverage_core.types import QuestionSet
from ui import formats
from ui.views.gaps import topic_of


@dataclass(frozen=True)
class Comparison:
    name_a: str
    name_b: str
    a: Analysis
    b: Analysis

    @functools.cached_property
    def scorecards(self) -> scorecard_check.ScorecardComparison:
        """Both sets' test-set scorecards and which is better on what; computed once, as the comparison is kept
        across the page's reruns."""
        return scorecard_check.compare_scorecards(
            scorecard_check.scorecard(self.a), scorecard_check.scorecard(self.b), (self.name_a, self.name_b),
        )


def compare(analysis: Analysis, other: QuestionSet, embedder, cache, names: tuple[str, str]) -> Comparison:
    """Score a second question set on the same chunks and clusters as ``analysis``."""
    other_analysis = editing.rescore(analysis, other, embedder, cache)
    return Comparison(names[0], names[1], analysis, other_analysis)


def metric_deltas(before: dict[str, float], after: dict[str, float], names=("before", "after"),
                  only=None) -> pd.DataFrame:
    """The metrics under both sets (those named in ``only``, if given), by their plain names (not the report's
    field names)."""
    keys = [k for k in before if k in after and (only is None or k in only)]
    return pd.DataFrame(
        {
            "metric": [formats.metric_label(k) for k in keys],
            names[0]: [float(before[k]) for k in keys],
            names[1]: [float(after[k]) for k in keys],
            "change": [formats.shown_difference(before[k], after[k]) for k in keys],
        }
    )


def cluster_deltas(before: Analysis, after: Analysis, names=("before", "after")) -> pd.DataFrame:
    """Per cluster: coverage under both question sets, the change, and the on-topic questions closest to it; biggest gain first."""
    a = before.clusters[["cluster", "size", "coverage", "n_questions"]]
    b = after.clusters[["cluster", "coverage", "n_questions"]]
    merged = a.merge(b, on="cluster", suffixes=("_a", "_b"))
    frame = pd.DataFrame(
        {
            "cluster": merged["cluster"],
            "topic": [topic_of(before, c) for c in merged["cluster"]],
            "size": merged["size"],
            names[0]: merged["coverage_a"],
            names[1]: merged["coverage_b"],
            "change": [formats.shown_difference(a_, b_) for a_, b_ in zip(merged["coverage_a"], merged["coverage_b"])],
            f"questions closest ({names[0]})": merged["n_questions_a"],
            f"questions closest ({names[1]})": merged["n_questions_b"],
        }
    )
    return frame.sort_values(["change", "cluster"], ascending=[False, True]).reset_index(drop=True)


def tested_share_deltas(before: Analysis, after: Analysis, names=("before", "after")) -> pd.DataFrame:
    """Per topic: the share of its passages tested under both question sets, in whole percent (0-100, as every
    page rounds a share), and the change between the two as shown, in points; biggest gain first."""
    a = before.clusters[["cluster", "size", "tested_share"]]
    b = after.clusters[["cluster", "tested_share"]]
    merged = a.merge(b, on="cluster", suffixes=("_a", "_b"))
    shown_a = [round(100 * float(v)) for v in merged["tested_share_a"]]
    shown_b = [round(100 * float(v)) for v in merged["tested_share_b"]]
    frame = pd.DataFrame(
        {
            "topic": [topic_of(before, c) or f"cluster {c}" for c in merged["cluster"]],
            "passages": merged["size"],
            names[0]: shown_a,
            names[1]: shown_b,
            "change": [b_ - a_ for a_, b_ in zip(shown_a, shown_b)],
            "cluster": merged["cluster"],
        }
    )
    frame = frame.sort_values(["change", "cluster"], ascending=[False, True]).reset_index(drop=True)
    frame["change"] = [f"{d:+d} pts" if d else formats.NO_CHANGE for d in frame["change"]]
    return frame


# Score cards at 1280 px: the main area of the wide layout beside the sidebar, a label's width per character
# (14 px sans-serif) and a card's padding and border. A row holds at most MAX_CARDS_PER_ROW cards.
MAIN_WIDTH_AT_1280 = 880
LABEL_CHAR_PX = 8.5
CARD_PADDING_PX = 48
MAX_CARDS_PER_ROW = 3


def label_fits(label: str, cards_in_row: int, main_width: int = MAIN_WIDTH_AT_1280) -> bool:
    """Whether a card's label shows whole (not cut to "Tested sh…") in a row of ``cards_in_row`` cards."""
    return len(label) * LABEL_CHAR_PX + CARD_PADDING_PX <= main_width / cards_in_row


def card_rows(names: list[str], main_width: int = MAIN_WIDTH_AT_1280) -> list[list[str]]:
    """The score cards in rows, in order, each row as full as its labels allow at ``main_width`` pixels."""
    rows: list[list[str]] = []
    for name in names:
        label = formats.metric_label(name)
        if rows and len(rows[-1]) < MAX_CARDS_PER_ROW and all(
            label_fits(formats.metric_label(n), len(rows[-1]) + 1, main_width) for n in [*rows[-1], name]
        ) and label_fits(label, len(rows[-1]) + 1, main_width):
            rows[-1].append(name)
        else:
            rows.append([name])
    return rows


def scorecards(comparison: Comparison) -> scorecard_check.ScorecardComparison:
    """Both sets' test-set scorecards and which is better on what (:attr:`Comparison.scorecards`)."""
    return comparison.scorecards


def scorecard_table(result: scorecard_check.ScorecardComparison) -> pd.DataFrame:
    """One row per figure: both sets' values as percentages, which set is better, and each set's reading."""
    names = result.names
    table = result.table.copy()
    for name in names:
        table[name] = [formats.percent(value) for value in table[name]]
    for name, card in zip(names, result.cards):
        table[f"reading ({name})"] = card.table()["reading"].to_numpy()
    return table


def split_format_note(messages: list[str]) -> tuple[str | None, list[str]]:
    """(the "Read as a RAGAS test set: …" sentence or None, the other warnings)."""
    notes = [m for m in messages if testset_formats.is_format_note(m)]
    return (notes[0] if notes else None), [m for m in messages if not testset_formats.is_format_note(m)]
