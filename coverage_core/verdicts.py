"""Every decision a user acts on, and the headline sentence that sums them up.

A *verdict* is a yes/no a user acts on: test this document, write questions
for this topic, review this question, serve this traffic, fail this CI run.
Each is one pure function here (arrays or frames in, booleans out, its
formula in its docstring once). The stages call it to fill their tables
(``pipeline`` the clusters' ``is_gap``, ``checks.traffic`` the topics'
``is_unmet``) and :class:`Verdicts` gathers what an analysis decided, in the
order a user reads it. The Results page (:meth:`Verdicts.from_analysis`), the
CLI summary, the JSON/HTML reports (:func:`headline`) and JUnit read them
from here, so they cannot disagree. Each cut lives here only.

The verdicts:

* **untested document** (:func:`is_untested`): too few of its passages
  reached by a question at the support level τ;
* **gap topic** (:func:`is_gap`): a cluster mostly untested (or, rule
  ``"coverage"`` and schema-1 reports, with a low coverage score);
* **off-topic question** (:func:`is_off_topic`): the knowledge base does not
  support it; left out of every score;
* **unmet demand** (:func:`is_unmet_demand`): frequent production traffic the
  documents mostly cannot answer;
* **untested traffic topic** (:func:`is_untested_topic`): production traffic
  mostly matched by no test question (its queries become suggestions);
  frequent, it fails JUnit (:func:`is_untested_traffic`);
* **metric gate** (:func:`gate_failed`): the gated metric below the required
  level (``analyze --fail-below``, JUnit).

How to add a verdict
--------------------
1. One function here, ``is_<decision>(arrays..., cut=DEFAULT) -> bool array``,
   its formula and the evidence for its cut in the docstring; the stage that
   builds the table calls it to fill an ``is_<decision>`` column.
2. One field of :class:`Verdicts`, filled in :meth:`Verdicts.from_analysis`
   from that column. When users must read it first, its clause goes into
   :attr:`Verdicts.headline`, which the Results and Gap pages, the CLI
   summary and the HTML report print as it is.
3. Its boundary in ``tests/test_verdicts.py``.

Only a verdict that must reach CI or a saved report goes further: one key in
the JSON entry (``outputs.report``) and one failing case (``outputs.junit``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from coverage_core.suggest.gaps import GapConfig, rank_gaps
from coverage_core.validation import is_number

__all__ = [
    "MIN_TOPIC_SHARE",
    "SECONDARY_SCORES",
    "TOP_GAPS",
    "UNMET_ANSWERABLE_SHARE",
    "UNTESTED_SHARE",
    "UNTESTED_TOPIC_SHARE",
    "Verdicts",
    "gate_failed",
    "headline",
    "is_gap",
    "is_off_topic",
    "is_unmet_demand",
    "is_untested",
    "is_untested_topic",
    "is_untested_traffic",
]

UNTESTED_SHARE = 0.3
"""A document is *untested* (:func:`is_untested`) when less than this share of its
passages is reached by some question (similarity >= the support threshold τ).
An absolute cut: it reads only the document's own passages, so it fires
however many other documents are untested too. Chosen on the wiki-qa
articles (``benchmarks/eval_untested.py``: tuned on half of the 55 articles
with all questions of 10%, 50% or 80% of them removed; on the held-out
half recall 1.0 at every level, precision 0.51 / 0.92 / 0.97). Long
documents with only a handful of questions (a 94-passage article with 7
questions is 15% tested) are flagged too: most of their text is untested."""

MIN_TOPIC_SHARE = 0.01
"""A traffic topic counts as *frequent* (for unmet demand) from this share of all traffic."""

UNMET_ANSWERABLE_SHARE = 0.5
"""A frequent topic is unmet demand when less than this share of its traffic is answerable."""

UNTESTED_TOPIC_SHARE = 0.5
"""A traffic topic is untested when less than this share of its traffic is tested (its real queries
become suggestions; a frequent one fails JUnit)."""

TOP_GAPS = 3
"""Gaps the Results page names first (the rest are on the Gap analysis page)."""

SECONDARY_SCORES = {
    "basic": "How close the passages are, on average, to their nearest question (1 − the mean distance).",
    "balanced": "The same per topic, every topic weighted equally, so a small untested topic pulls it down.",
    "weighted": "The per-topic scores weighted by topic size; it always equals basic and is listed because the "
    "method defines it.",
    "multi_threshold": "Each topic scored only by the questions close to its centre; a topic no question is "
    "close to scores 0.",
    "multi_n": "Each topic scored only by the questions that have it among their nearest topics.",
}
"""The relative scores shown after the verdicts, one plain sentence each, in reading order."""


# ---------------------------------------------------------------- the decisions
def is_untested(tested_share, cut: float = UNTESTED_SHARE) -> np.ndarray:
    """Which documents are untested.

    ``is_untested_d = n_tested_d / n_chunks_d < cut``, where a passage is
    tested when some on-topic question reaches it (similarity >= τ,
    :func:`coverage_core.metrics.tested_chunks`). Absolute: it reads the
    document alone. The cut's evidence is at :data:`UNTESTED_SHARE`.

    tested_share : array-like of shape (n_documents,); returns bool of the same shape.
    """
    return np.asarray(tested_share, dtype=np.float64) < cut


def is_gap(coverage, tested_share, gaps: GapConfig) -> np.ndarray:
    """Which clusters (topics) are gaps, under ``gaps.rule``.

    * ``"tested_share"`` (default): ``tested_share_k < gaps.tested_share_threshold``
      (fewer than half of the topic's passages reached by a question);
    * ``"coverage"`` (schema-1 reports): ``coverage_k < gaps.gap_threshold``,
      with ``coverage_k`` the cluster's mean ``1 - mindist``.

    An empty cluster (NaN) is never a gap. ``tested_share`` is not read under
    the coverage rule (it may be None there).

    coverage, tested_share : array-like of shape (n_clusters,); returns bool of that shape.
    """
    if gaps.rule == "coverage":
        return np.asarray(coverage, dtype=np.float64) < gaps.gap_threshold
    return np.asarray(tested_share, dtype=np.float64) < gaps.tested_share_threshold


def is_off_topic(support_margin, cut: float) -> np.ndarray:
    """Which questions are off-topic: ``support_margin_q < cut``.

    ``support_margin_q`` is how far, in units of the corpus's own spread, the
    question's best support from the documents falls short of the level that
    tells a passage's topic from others (``stages.screening``); ``cut`` is
    ``screening.margin_cut(strictness)``. The user's overrides come after it
    (``screening.apply_overrides``).

    support_margin : array-like of shape (n_questions,); returns bool of that shape.
    """
    return np.asarray(support_margin, dtype=np.float64) < cut


def is_unmet_demand(share, answerable_share, min_share: float = MIN_TOPIC_SHARE,
                    cut: float = UNMET_ANSWERABLE_SHARE) -> np.ndarray:
    """Which traffic topics are unmet demand: ``share_t >= min_share and answerable_share_t < cut``.

    Frequent (at least ``min_share`` of all traffic) and mostly unanswerable
    by the documents: a gap in the knowledge base, not only in the tests.

    share, answerable_share : array-like of shape (n_topics,); returns bool of that shape.
    """
    share = np.asarray(share, dtype=np.float64)
    return (share >= min_share) & (np.asarray(answerable_share, dtype=np.float64) < cut)


def is_untested_topic(tested_share, cut: float = UNTESTED_TOPIC_SHARE) -> np.ndarray:
    """Which traffic topics are untested: ``tested_share_t < cut``.

    Mostly not matched by any test question, however often asked: the
    traffic headline names the most asked of them and their real queries
    become suggested test questions (``checks.traffic``).

    tested_share : array-like of shape (n_topics,); returns bool of that shape.
    """
    return np.asarray(tested_share, dtype=np.float64) < cut


def is_untested_traffic(share, tested_share, min_share: float = MIN_TOPIC_SHARE,
                        cut: float = UNTESTED_TOPIC_SHARE) -> np.ndarray:
    """Which traffic topics fail CI: ``share_t >= min_share and tested_share_t < cut``.

    Frequent (at least ``min_share`` of all traffic) and untested
    (:func:`is_untested_topic`).

    share, tested_share : array-like of shape (n_topics,); returns bool of that shape.
    """
    share = np.asarray(share, dtype=np.float64)
    return (share >= min_share) & is_untested_topic(tested_share, cut)


def gate_failed(value: Any, threshold: float | None) -> bool:
    """Whether a metric ``value`` fails the gate ``threshold``: ``value < threshold``.

    No threshold never fails. An undefined value (null, NaN, anything not a
    number) fails a set threshold: a CI gate must not pass on a number it
    could not compute.
    """
    if threshold is None:
        return False
    if not is_number(value):
        return True
    return math.isnan(value) or value < threshold


# ---------------------------------------------------------------- what an analysis decided
class UntestedDocument(NamedTuple):
    document: str
    tested_share: float
    n_chunks: int


class GapTopic(NamedTuple):
    cluster: int
    topic: str
    tested_share: float
    size: int


@dataclass(frozen=True)
class Verdicts:
    """What an analysis decided, in the order a user reads it.

    ``untested`` least tested first (ties by name); ``gaps`` most urgent
    first (``suggest.gaps.rank_gaps``), at most ``top`` of them, named by
    topic; ``n_gaps`` counts them all.
    """

    n_passages: int
    n_tested: int
    untested: tuple[UntestedDocument, ...]
    gaps: tuple[GapTopic, ...]
    n_gaps: int
    n_off_topic: int

    @classmethod
    def from_analysis(cls, analysis, top: int | None = TOP_GAPS) -> Verdicts:
        """What ``analysis`` (a :class:`coverage_core.results.Analysis`) decided."""
        gaps = _ranked_gaps(analysis)
        return cls(
            n_passages=len(analysis.corpus.chunks),
            n_tested=int(analysis.clusters["n_tested"].sum()),
            untested=_untested_documents(analysis.documents),
            gaps=tuple(gaps[:top]),
            n_gaps=len(gaps),
            n_off_topic=int(np.asarray(analysis.is_outlier).sum()),
        )

    @property
    def tested_share(self) -> float:
        return self.n_tested / self.n_passages if self.n_passages else 0.0

    @property
    def headline(self) -> str:
        """The one-sentence answer: how much of the knowledge base is tested, what is untested, what is off-topic."""
        n_untested, n_off = len(self.untested), self.n_off_topic
        documents = "document" if n_untested == 1 else "documents"
        questions = "question" if n_off == 1 else "questions"
        return (
            f"{self.tested_share:.0%} of the knowledge base is tested ({self.n_tested} of {self.n_passages} "
            f"passages); {n_untested} {documents} untested; {n_off} {questions} off-topic."
        )


def headline(analysis) -> str:
    """:attr:`Verdicts.headline` of ``analysis`` (a :class:`coverage_core.results.Analysis`)."""
    return Verdicts.from_analysis(analysis, top=0).headline


def _untested_documents(documents: pd.DataFrame) -> tuple[UntestedDocument, ...]:
    untested = documents[documents["is_untested"]].sort_values(["tested_share", "document"])
    return tuple(
        UntestedDocument(str(row.document), float(row.tested_share), int(row.n_chunks))
        for row in untested.itertuples(index=False)
    )


def _ranked_gaps(analysis) -> list[GapTopic]:
    clusters = analysis.clusters
    ranked = rank_gaps(clusters["coverage"].to_numpy(), clusters["size"].to_numpy(), analysis.config.gaps,
                       is_gap=clusters["is_gap"].to_numpy(dtype=bool))
    by_id = clusters.set_index("cluster")
    labels = by_id["label"] if "label" in by_id else pd.Series("", index=by_id.index)
    return [
        GapTopic(k, str(labels.get(k, "") or "") or f"cluster {k}", float(by_id.loc[k, "tested_share"]),
                 int(by_id.loc[k, "size"]))
        for k, _ in ranked
    ]
