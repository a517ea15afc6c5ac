"""The Compare page: a second question set scored on the same chunks and clusters, and the differences."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from coverage_core import pipeline
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


def compare(analysis: Analysis, other: QuestionSet, embedder, cache, names: tuple[str, str]) -> Comparison:
    """Score a second question set on the same chunks and clusters as ``analysis``."""
    other_analysis = pipeline.rescore(analysis, other, embedder, cache)
    return Comparison(names[0], names[1], analysis, other_analysis)


def metric_deltas(before: dict[str, float], after: dict[str, float], names=("before", "after")) -> pd.DataFrame:
    """The metrics under both sets, by their plain names (not the report's field names)."""
    keys = [k for k in before if k in after]
    return pd.DataFrame(
        {
            "metric": [formats.metric_label(k) for k in keys],
            names[0]: [float(before[k]) for k in keys],
            names[1]: [float(after[k]) for k in keys],
            "change": [formats.shown_difference(before[k], after[k]) for k in keys],
        }
    )


def cluster_deltas(before: Analysis, after: Analysis, names=("before", "after")) -> pd.DataFrame:
    """Per cluster: coverage under both question sets, the change, and questions near it; biggest gain first."""
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
            f"questions near it ({names[0]})": merged["n_questions_a"],
            f"questions near it ({names[1]})": merged["n_questions_b"],
        }
    )
    return frame.sort_values(["change", "cluster"], ascending=[False, True]).reset_index(drop=True)
