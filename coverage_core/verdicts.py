"""Every decision a user acts on, and the headline sentence that sums them up.

A *verdict* is a yes/no a user acts on: test this document, write questions
for this topic, review this question, serve this traffic, fail this CI run.
Each is one pure function here (arrays or frames in, booleans out, its
formula in its docstring once). The stages call it to fill their tables
(``measure`` the clusters' ``is_gap``, ``checks.traffic`` the topics'
``is_unmet``) and :class:`Verdicts` gathers what an analysis decided, in the
order a user reads it. The Results page (:meth:`Verdicts.from_analysis`), the
CLI summary, the JSON/HTML reports (:func:`headline`) and JUnit read them
from here, so they cannot disagree. Each cut lives here only.

The verdicts:

* **untested document** (:func:`is_untested`): fewer than
  :data:`MIN_TARGETING_QUESTIONS` on-topic questions target it (have one of
  its passages among their best retrieved ones);
* **under-tested document** (:func:`is_undertested`): targeted, but less than
  :data:`UNDERTESTED_SHARE` of its passages tested, a passage being tested
  when a question retrieves it among its top k at similarity >= τ;
* **gap topic** (:func:`is_gap`): a cluster mostly untested (or, rule
  ``"coverage"`` and schema-1 reports, with a low coverage score);
* **document gap** (:func:`is_document_gap`): an untested document whose
  main topic is no gap, a gap of its own;
* **off-topic question** (the rules of :mod:`coverage_core.offtopic`, one
  module each): the knowledge base does not support it; left out of every score;
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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from coverage_core.ceiling import testable_share_max
from coverage_core.errors import InputError
from coverage_core.languages import UNDETERMINED
from coverage_core.stages.calibration import GENERIC_FALLBACK, NOT_CALIBRATED
from coverage_core.suggest.document_gaps import document_gap_name, gap_key, ranked_from_tables
from coverage_core.suggest.gaps import GapConfig, rank_gaps
from coverage_core.validation import is_number
from coverage_core.wording import count

__all__ = [
    "MIN_TARGETING_QUESTIONS",
    "MIN_UNREAD_SHARE",
    "POOR_SEPARATION",
    "MIN_TOPIC_SHARE",
    "SECONDARY_SCORES",
    "TOP_GAPS",
    "UNMET_ANSWERABLE_SHARE",
    "TARGET_MARGIN",
    "TARGET_MARGIN_SHARE",
    "UNDERTESTED_SHARE",
    "UNTESTED_TOPIC_SHARE",
    "Verdicts",
    "fallback_level_words",
    "ranking_only_sentence",
    "gate_failed",
    "headline",
    "is_document_gap",
    "is_gap",
    "is_undertested",
    "is_unmet_demand",
    "is_untested",
    "is_untested_topic",
    "model_fit_problem",
    "offtopic_caution",
    "target_margin",
    "is_untested_traffic",
    "message_caution",
    "reads_as_chat_message",
]

UNDERTESTED_SHARE = 0.3
"""A document some question targets is *under-tested* (:func:`is_undertested`) when less than
this share of its passages is tested (retrieved by a question among its top k at similarity >= τ).
The cut that was once the untested rule's (``benchmarks/eval_untested.py``), kept as the softer
finding: a long document with a handful of questions is tested, but thinly."""

TARGET_MARGIN = 0.02
"""How far below a question's best passage another of its tested passages may be and still make its
document *targeted* (:func:`coverage_core.metrics.question_targets`, read by :func:`is_untested`), so
that a near-duplicate copy of the passage in another document is targeted too. Evidence at
:data:`MIN_TARGETING_QUESTIONS`."""

TARGET_MARGIN_SHARE = 0.2
""":data:`TARGET_MARGIN` in the corpus's own similarity units (:func:`target_margin`): this share of
the calibration's gap between a probe's own passage and other documents' (with all-MiniLM-L6-v2 on
wiki-qa 0.094 and 0.114 on its halves, where a fifth is the 0.02 chosen, 0.05 on all 55 articles)."""

MIN_TARGETING_QUESTIONS = 2
"""A document is *untested* (:func:`is_untested`) when fewer on-topic questions than this target it: a
lone question about another document whose best passage lands here is as common as one about this one.
Chosen with :data:`TARGET_MARGIN` on wiki-qa (``benchmarks/eval_untested.py``; figures in
``docs/untested.md``)."""

MIN_TOPIC_SHARE = 0.01
"""A traffic topic counts as *frequent* (for unmet demand) from this share of all traffic."""

UNMET_ANSWERABLE_SHARE = 0.5
"""A frequent topic is unmet demand when less than this share of its traffic is answerable."""

UNTESTED_TOPIC_SHARE = 0.5
"""A traffic topic is untested when less than this share of its traffic is tested (its real queries
become suggestions; a frequent one fails JUnit)."""

MIN_UNREAD_SHARE = 0.05
"""A language the model is not trained for makes it a poor fit from this share of the documents' or
the questions' characters (:func:`model_fit_problem`)."""

POOR_SEPARATION = 0.2
"""A calibration separation below this says the model barely tells the documents' topics apart
(:func:`model_fit_problem`); a corpus about one subject separates modestly even with a model that reads
it well, so the cut sits near the edge of an untrusted calibration (``calibration.MIN_SEPARATION``, 0.15).
Measurements (``benchmarks/eval_separation.py``) in ``docs/untested.md``."""

OFFTOPIC_MEASURED_LANGUAGES = frozenset({"en"})
"""Question languages where the off-topic rule meets its targets (precision >= 0.9 at a realistic mix).
Elsewhere it flags more genuine questions (``benchmarks/eval_languages.py``, held-out halves, default
model: French 6.8% of genuine questions flagged, precision at 8% off-topic 0.54; Chinese 2.6%, 0.69):
the headline says so (:func:`offtopic_caution`) beside a non-zero count."""

CHAT_MESSAGE_SHARE = 0.25
"""From this share of test questions written as chat messages (:func:`reads_as_chat_message`) the headline
says the off-topic flags are less sure (:func:`message_caution`). On the development sets 55% of docs-qa's
questions (doc2dial's opening turns) read so, 0-6% on the others; docs-qa is where the rules flag most
genuine questions (``docs/offtopic-rules.md``)."""

CROSS_LANGUAGE_SHARE = MIN_UNREAD_SHARE
"""From this share of the questions in languages none of the documents is written in, the verdicts say
that they may be wrong (:func:`cross_language_problem`)."""

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
def target_margin(calibration, share: float = TARGET_MARGIN_SHARE, fallback: float = TARGET_MARGIN) -> float:
    """How far below a question's best passage another passage still makes its document targeted
    (:func:`coverage_core.metrics.question_targets`): ``share * (positive_median - negative_median)`` of a
    reliable calibration, else ``fallback``.

    Why: a model's similarities spread over its own range, so a fixed margin tuned on one model lets a
    document's questions target its neighbours under another (docs/verdicts.md, *The target margin*).

    calibration : :class:`~coverage_core.stages.calibration.Calibration`; share, fallback : float, by default
    :data:`TARGET_MARGIN_SHARE` and :data:`TARGET_MARGIN`; returns a float >= 0.
    """
    positive, negative = calibration.positive_median, calibration.negative_median
    if not calibration.reliable or positive is None or negative is None or positive <= negative:
        return float(fallback)
    return float(share * (positive - negative))


def is_untested(n_questions, min_questions: int = MIN_TARGETING_QUESTIONS) -> np.ndarray:
    """Which documents are untested: ``n_questions_d < min_questions``.

    ``n_questions_d`` counts the on-topic questions that *target* document ``d`` (hold one of its passages
    among their best tested ones, :func:`coverage_core.metrics.question_targets`, margin :func:`target_margin`).
    Why: a document questions are about is tested, however thinly (:func:`is_undertested`); one no question
    (or a single stray one) is about is untested, however many passages generic questions reach. Evidence at
    :data:`MIN_TARGETING_QUESTIONS`. When τ could not be calibrated, targeting reads no similarity level
    (:func:`coverage_core.measure.tested_level`; docs/untested.md).

    n_questions : array-like of shape (n_documents,); returns bool of the same shape.
    """
    return np.asarray(n_questions, dtype=np.int64) < min_questions


def is_undertested(n_questions, tested_share, cut: float = UNDERTESTED_SHARE,
                   min_questions: int = MIN_TARGETING_QUESTIONS) -> np.ndarray:
    """Which documents are under-tested: ``n_questions_d >= min_questions and n_tested_d / n_chunks_d < cut``.

    Targeted by questions (so not :func:`is_untested`) but with less than
    ``cut`` of its passages tested (retrieved by a question among its top k
    at similarity >= τ, :func:`coverage_core.metrics.retrieved_tested_chunks`):
    a softer finding, e.g. a 30-passage paper with 7 one-sentence questions.

    n_questions, tested_share : array-like of shape (n_documents,); returns bool of that shape.
    """
    targeted = np.asarray(n_questions, dtype=np.int64) >= min_questions
    return targeted & (np.asarray(tested_share, dtype=np.float64) < cut)


def with_document_verdicts(table: pd.DataFrame, n_questions: Mapping[str, int],
                           undertested_share: float = UNDERTESTED_SHARE) -> pd.DataFrame:
    """``table`` (:func:`coverage_core.metrics.document_coverage` with ``tested``) with ``n_questions``,
    ``is_untested`` and ``is_undertested`` added (:func:`is_untested`, :func:`is_undertested`).

    n_questions : document name -> the on-topic questions that target it; a document not in it has 0.
    """
    table = table.copy()
    table["n_questions"] = np.array([int(n_questions.get(name, 0)) for name in table["document"]], dtype=np.int64)
    table["is_untested"] = is_untested(table["n_questions"])
    table["is_undertested"] = is_undertested(table["n_questions"], table["tested_share"], undertested_share)
    return table


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


def is_document_gap(is_untested, topic_is_gap) -> np.ndarray:
    """Which documents are gaps of their own: ``is_untested_d and not is_gap_{topic_d}``.

    ``topic_d`` is the document's main topic, the cluster holding most of its passages
    (:func:`coverage_core.suggest.document_gaps.main_topics`). An untested document whose main topic
    is a gap is carried by that gap (its passage leads the gap's, so it gets a suggestion); any other
    would be in no gap while other documents test its topic (7 untested German documents and "No topic
    is a gap"), so it is a gap of its own, ranked by :mod:`coverage_core.suggest.document_gaps`.

    is_untested, topic_is_gap : array-like of shape (n_documents,); returns bool of that shape.
    """
    return np.asarray(is_untested, dtype=bool) & ~np.asarray(topic_is_gap, dtype=bool)


def model_fit_problem(model: str, unread: Sequence[tuple[str, float, str]], separation: float | None,
                      cut: float = POOR_SEPARATION, min_share: float = MIN_UNREAD_SHARE) -> str:
    """Why ``model`` does not fit these texts, in one sentence with the remedy; "" when it fits.

    Poor fit when a language the model is not trained for holds at least
    ``min_share`` of the documents' or questions' characters (``unread``:
    ``(language name, share, "documents" or "questions")``, from the
    registry's ``ModelSpec.languages``), or when such languages together do
    (many small ones, none reaching ``min_share`` alone), or when the
    calibration's ``separation < cut`` (the model barely tells one topic's
    passages from another's, whatever the language).
    """
    large = [(name, share, where) for name, share, where in unread if share >= min_share]
    totals: dict[str, tuple[int, float]] = {}
    for _, share, where in unread:
        count, total = totals.get(where, (0, 0.0))
        totals[where] = (count + 1, total + share)
    if not large and any(total >= min_share for _, total in totals.values()):
        what = " and ".join(f"{count} languages that hold {total:.0%} of the {where} together"
                            for where, (count, total) in totals.items() if total >= min_share)
        return (f"{model} is not trained for {what}, so these figures may be wrong; analyse again with a "
                "multilingual model (the automatic model choice picks one) or a paid provider that covers them.")
    unread = large
    if unread:
        parts: dict[str, list[str]] = {}
        for name, share, where in unread:
            parts.setdefault(name, []).append(f"{share:.0%} of the {where}")
        what = ", ".join(f"{name} ({' and '.join(places)})" for name, places in parts.items())
        names = " and ".join(parts)
        return (f"{model} is not trained for {what}, so these figures may be wrong; analyse again with a "
                f"multilingual model (the automatic model choice picks one) or a paid provider that covers {names}.")
    if separation is not None and is_number(separation) and separation < cut:
        return (f"{model} barely tells these documents' topics apart (separation {separation:.2f}, under "
                f"{cut:.2f}), so these figures may be wrong; analyse again with another model, such as a "
                "multilingual one or a paid provider.")
    return ""


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


class UndertestedDocument(NamedTuple):
    document: str
    tested_share: float
    n_chunks: int
    n_questions: int
    n_tested: int


class GapTopic(NamedTuple):
    """A ranked gap: a topic, or an untested ``document`` (``cluster`` its main topic, the figures its own)."""
    cluster: int
    topic: str
    tested_share: float
    size: int
    document: str = ""

    @property
    def key(self) -> str:
        """:func:`~coverage_core.suggest.document_gaps.gap_key`: what a link to this gap names."""
        return gap_key(self.cluster, self.document)


@dataclass(frozen=True)
class Verdicts:
    """What an analysis decided, in the order a user reads it.

    ``untested`` and ``undertested`` least tested first (ties by name);
    ``gaps`` most urgent first, topics and untested documents that are gaps of
    their own (``suggest.document_gaps``), at most ``top`` of them; ``n_gaps``
    counts them all.
    ``calibration_reliable`` / ``calibration_reason`` say whether τ
    (``support_threshold``) was calibrated on these documents, and why not;
    ``retrieval_k`` is the k of *tested* (``AnalysisConfig.tested_k``);
    ``n_on_topic`` counts the questions that test passages (None: not known, no ceiling is stated).
    """

    n_passages: int
    n_tested: int
    untested: tuple[UntestedDocument, ...]
    gaps: tuple[GapTopic, ...]
    n_gaps: int
    n_off_topic: int
    undertested: tuple[UndertestedDocument, ...] = ()
    calibration_reliable: bool = True
    calibration_reason: str = ""
    support_threshold: float | None = None
    retrieval_k: int | None = None
    model_fit: str = ""
    offtopic_caution: str = ""
    message_caution: str = ""
    calibration_method: str = ""
    cross_language: str = ""
    n_on_topic: int | None = None

    @classmethod
    def from_analysis(cls, analysis, top: int | None = TOP_GAPS) -> Verdicts:
        """What ``analysis`` (a :class:`coverage_core.results.Analysis`) decided."""
        gaps = _ranked_gaps(analysis)
        calibration = analysis.calibration
        is_outlier = np.asarray(analysis.is_outlier, dtype=bool)
        return cls(
            n_passages=len(analysis.corpus.chunks),
            n_tested=int(analysis.clusters["n_tested"].sum()),
            untested=_untested_documents(analysis.documents),
            gaps=tuple(gaps[:top]),
            n_gaps=len(gaps),
            n_off_topic=int(is_outlier.sum()),
            undertested=_undertested_documents(analysis.documents),
            calibration_reliable=bool(calibration.reliable),
            calibration_reason=str(calibration.reason or ""),
            support_threshold=calibration.support_threshold,
            retrieval_k=analysis.config.tested_k,
            model_fit=_model_fit(analysis),
            offtopic_caution=offtopic_caution(_question_languages(analysis)),
            message_caution=message_caution(_question_texts(analysis)),
            calibration_method=str(calibration.method or ""),
            cross_language=_cross_language(analysis),
            n_on_topic=int((~is_outlier).sum()),
        )

    @property
    def tested_share(self) -> float:
        return self.n_tested / self.n_passages if self.n_passages else 0.0

    @property
    def testable_share_max(self) -> float | None:
        """The tested share's ceiling (:func:`coverage_core.ceiling.testable_share_max` of the on-topic
        questions at k); None when either is not known."""
        if self.n_on_topic is None or self.retrieval_k is None:
            return None
        return testable_share_max(self.n_on_topic, self.retrieval_k, self.n_passages)

    @property
    def ceiling(self) -> str:
        """The tested share's ceiling in one short sentence, when it holds the share under 100%; else "".

        Rounded as the tested share is, so a share at its ceiling reads as equal to it; a ceiling that rounds
        to 100% says nothing a reader can act on, so it is not stated either.
        """
        share = self.testable_share_max
        if share is None or f"{share:.0%}" == "100%":
            return ""
        return f"{self._questions_counted} at top {self.retrieval_k} can test at most {share:.0%} of the knowledge base."

    @property
    def ceiling_detail(self) -> str:
        """Why the :attr:`ceiling` holds and what lifts it, in one plain sentence ("" when no ceiling is stated)."""
        if not self.ceiling:
            return ""
        return (f"Each question tests at most the {count(self.retrieval_k, 'passage')} it retrieves first, so "
                f"{self._questions_counted} can test at most {self.n_on_topic * self.retrieval_k:,} of the "
                f"{self.n_passages:,} passages; more questions raise this limit.")

    @property
    def _questions_counted(self) -> str:
        """The questions that test passages, counted: "on-topic" only when some others are off-topic."""
        return count(self.n_on_topic or 0, "on-topic question" if self.n_off_topic else "question")

    @property
    def headline(self) -> str:
        """The answer in two sentences: the figures (tested share, untested and under-tested documents,
        off-topic questions), then what *tested* means; an unreliable calibration comes first of all, and
        *tested* then reads the ranking alone (:func:`ranking_only_sentence`). When too few questions can
        test the whole knowledge base, the :attr:`ceiling` comes before what *tested* means (after the off-topic
        cautions, which belong to the off-topic count). The same sentences one by one: :attr:`figures`,
        :attr:`leading_cautions`, :attr:`offtopic_cautions`, :attr:`ceiling`, :attr:`tested_meaning`."""
        sentences = [*self.leading_cautions, self.figures, *self.offtopic_cautions, self.ceiling, self.tested_meaning]
        return " ".join(sentence for sentence in sentences if sentence)

    @property
    def figures(self) -> str:
        """The headline's figures, one short sentence: tested share, untested and under-tested documents,
        off-topic questions (what a page shows as its headline; the cautions go under it)."""
        n_untested, n_under, n_off = len(self.untested), len(self.undertested), self.n_off_topic
        documents = "document" if n_untested == 1 else "documents"
        questions = "question" if n_off == 1 else "questions"
        return (f"{self.tested_share:.0%} of the knowledge base is tested ({self.n_tested} of {self.n_passages} "
                f"passages); {n_untested} {documents} untested, {n_under} under-tested; {n_off} {questions} off-topic.")

    @property
    def leading_cautions(self) -> tuple[str, ...]:
        """What the headline says before its figures: an unreliable calibration, a model that does not fit the
        texts, questions in another language than the documents (each "" left out)."""
        calibration = "" if self.calibration_reliable else self._calibration_sentence()
        return tuple(caution for caution in (calibration, self.model_fit, self.cross_language) if caution)

    @property
    def offtopic_cautions(self) -> tuple[str, ...]:
        """Why the off-topic flags are less sure (languages, chat messages), when some questions are flagged."""
        if not self.n_off_topic:
            return ()
        return tuple(caution for caution in (self.offtopic_caution, self.message_caution) if caution)

    @property
    def tested_meaning(self) -> str:
        """What *tested* means here, one sentence ("" when the level or k is not known)."""
        if self.retrieval_k is None:
            return ""
        if not self.calibration_reliable:
            return ranking_only_sentence(self.retrieval_k)
        if self.support_threshold is None:
            return ""
        return (f"A passage counts as tested when a question retrieves it among its top {self.retrieval_k} "
                f"passages with similarity of at least {self.support_threshold:.2f}.")

    def _calibration_sentence(self) -> str:
        # Without any calibration the reason says no more than the sentence itself.
        reason = "" if self.calibration_method == NOT_CALIBRATED else " ".join(self.calibration_reason.split()).rstrip(".")
        # The reason carries its own numbers in brackets, so it follows a colon rather than nesting them.
        why = f": {reason[:1].lower()}{reason[1:]}" if reason else ""
        return (
            f"The support level could not be calibrated on these documents{why}. The figures below rest "
            f"on {fallback_level_words(self.support_threshold, self.calibration_method)} and may be wrong."
        )


def ranking_only_sentence(k: int, min_questions: int = MIN_TARGETING_QUESTIONS) -> str:
    """What *tested* means when the support level is not calibrated, in one plain sentence: the ranking alone
    decides (``measure.tested_level``), which the headline, the reports and the pages all say."""
    return (f"Without a calibrated level, similarity is not used: a passage counts as tested when a question "
            f"retrieves it among its top {k} passages, whatever the similarity, and a document when at least "
            f"{min_questions} questions retrieve one of its passages among their top {k}, as their closest "
            "match or nearly so.")


def fallback_level_words(level: float | None, method: str) -> str:
    """What an uncalibrated analysis's level is, in words: the model's measured default, or the generic one
    (``method`` is :data:`~coverage_core.stages.calibration.GENERIC_FALLBACK`'s) for a model none was measured for."""
    value = "" if level is None else f" {level:.2f}"
    if method == GENERIC_FALLBACK[1]:
        return f"a generic level{value} (none is measured for this model)"
    return f"the model's default level{value}"


def headline(analysis) -> str:
    """:attr:`Verdicts.headline` of ``analysis`` (a :class:`coverage_core.results.Analysis`)."""
    return Verdicts.from_analysis(analysis, top=0).headline


def _model_fit(analysis) -> str:
    """:func:`model_fit_problem` for ``analysis``: its model, the languages it does not read, its separation."""
    from coverage_core.embeddings.registry import configured_model_name, covers_language

    embedding = analysis.config.embedding
    unread = []
    for where in ("documents", "questions"):
        for share in _language_shares(analysis, where):
            if covers_language(embedding.provider, embedding.model, share.code) is False:
                unread.append((share.name, share.share, where))
    # An unreliable calibration already leads the headline with its own reason.
    separation = analysis.calibration.separation if analysis.calibration.reliable else None
    return model_fit_problem(configured_model_name(embedding.provider, embedding.model), unread, separation)


def offtopic_caution(question_languages: Sequence[tuple[str, str, float]],
                     measured: frozenset[str] = OFFTOPIC_MEASURED_LANGUAGES,
                     min_share: float = MIN_UNREAD_SHARE) -> str:
    """One sentence when off-topic flags are less sure: questions in a language outside ``measured``.

    ``question_languages``: ``(code, name, share of the questions' characters)``; a language counts
    from ``min_share``. "" when every such language is one the off-topic rule was measured on.
    """
    names = [name for code, name, share in question_languages if share >= min_share and code not in measured]
    if not names:
        return ""
    return (f"Off-topic flags are less sure for questions in {' and '.join(names)} than in English: "
            "check them before removing any.")


_QUESTION_END = re.compile(r"[?\uff1f\u061f\u037e]\W*$")
# A full stop after one letter is an initial ("U.S. Army"), no sentence end; CJK stops need no space after.
_SENTENCE_BREAK = re.compile(r"(?:(?:(?<=\w\w)\.+|[!?\u061f]+)\s+|[\u3002\uff01\uff1f]+)(?=\S)")


def reads_as_chat_message(text: str) -> bool:
    """Whether a test question is written as a chat message rather than one question: it holds more than
    one sentence ("Hi, I'm not in New York City. How do I get an extension?") or ends without a question
    mark ("I bought my new car from a private seller.")."""
    text = text.strip()
    if not text:
        return False
    return not _QUESTION_END.search(text) or bool(_SENTENCE_BREAK.search(text))


def message_caution(questions: Sequence[str], min_share: float = CHAT_MESSAGE_SHARE) -> str:
    """One sentence when at least ``min_share`` of the test ``questions`` read as chat messages
    (:func:`reads_as_chat_message`): their greetings and stories are words no passage holds, so the
    off-topic rules flag more of them. "" otherwise."""
    written = [text for text in questions if text and text.strip()]
    n_chat = sum(reads_as_chat_message(text) for text in written)
    if not written or n_chat < min_share * len(written):
        return ""
    return (f"{n_chat} of the {count(len(written), 'test question')} read as chat messages rather than single "
            "questions (several sentences, or no question mark), and off-topic flags are less sure for those: "
            "check them before removing any.")


def cross_language_problem(document_languages: Sequence[tuple[str, str, float]],
                           question_languages: Sequence[tuple[str, str, float]],
                           min_share: float = CROSS_LANGUAGE_SHARE, *, traffic: bool = False) -> str:
    """One sentence when at least ``min_share`` of the questions are in languages none of the documents is in.

    The support level is calibrated on the documents' own sentences against their passages, within their
    language, and a multilingual model matches a question with a passage in another language less closely
    than with one in its own. Measured with multilingual-e5-small on 8 fr-qa articles
    (``benchmarks/eval_cross_language.py``): their 200 French questions reach their best passage at a
    median similarity of 0.858, 15 English questions written for the same articles at 0.831, against the
    level 0.836; so 6 of the 8 documents were called untested although each had English questions about
    it (none with the French questions), and 1 of 5 unrelated English questions was flagged. No published
    set asks questions in two languages of one knowledge base here to measure a correction on, so the
    verdicts say that they may be wrong.

    ``document_languages``, ``question_languages``: ``(code, name, share)``; a documents' language counts
    from :data:`MIN_UNREAD_SHARE`; undetermined questions (too short to tell) count as neither. With
    ``traffic`` the texts are a query log's (shares of its volume), read by the same level.
    """
    written = {code for code, _, share in document_languages if share >= MIN_UNREAD_SHARE and code != UNDETERMINED}
    if not written:
        return ""
    foreign = [(name, share) for code, name, share in question_languages
               if code not in written and code != UNDETERMINED and share > 0]
    foreign_share = sum(share for _, share in foreign)
    if foreign_share < min_share:
        return ""
    names = " and ".join(name for name, _ in sorted(foreign, key=lambda item: -item[1]))
    documents = " and ".join(name for code, name, share in document_languages
                             if code in written)
    texts, text, verdicts = (("queries", "query", "the queries with no answer in the documents") if traffic else
                             ("questions", "question", "untested documents and off-topic questions"))
    who = f"The {texts} are" if foreign_share >= 0.995 else f"{foreign_share:.0%} of the {texts} are"
    return (f"{who} in {names} and the documents in {documents}: the support level is measured within the "
            f"documents' language, and a {text} matches a passage in another language less closely, so "
            f"{verdicts} may be wrong; check them before acting.")


def verdict_doubt(analysis) -> str:
    """Why the verdicts of ``analysis`` may be wrong, in one sentence ("" when they rest on a level calibrated
    on these documents, for questions in their language): what stands in place of a tick."""
    if not analysis.calibration.reliable:
        return ("It rests on the model's default support level, which could not be calibrated on these "
                "documents.")
    if _cross_language(analysis):
        return ("The questions are in another language than the documents, which the support level does "
                "not allow for.")
    return ""


def traffic_doubt(analysis, traffic) -> str:
    """Why the traffic's verdicts of ``analysis`` may be wrong (:func:`verdict_doubt`, read for the queries'
    languages instead of the test questions': ``traffic`` is a ``checks.traffic.TrafficResult``)."""
    if analysis.calibration.reliable and traffic.language_problem:
        return ("The queries are in another language than the documents, which the support level does not "
                "allow for.")
    return verdict_doubt(analysis)


def _cross_language(analysis) -> str:
    shares = {where: [(share.code, share.name, share.share) for share in _language_shares(analysis, where)]
              for where in ("documents", "questions")}
    return cross_language_problem(shares["documents"], shares["questions"])


def _language_shares(analysis, where: str) -> tuple:
    """The ``LanguageShare`` of each language of the analysis's ``"documents"`` or ``"questions"`` (none unread)."""
    languages = analysis.languages
    if languages is None:
        return ()
    return tuple(languages.document_shares if where == "documents" else languages.question_shares)


def _question_texts(analysis) -> list[str]:
    return list(analysis.questions.texts)


def _question_languages(analysis) -> list[tuple[str, str, float]]:
    return [(share.code, share.name, share.share) for share in _language_shares(analysis, "questions")]


def _untested_documents(documents: pd.DataFrame) -> tuple[UntestedDocument, ...]:
    untested = documents[documents["is_untested"]].sort_values(["tested_share", "document"])
    return tuple(
        UntestedDocument(str(row.document), float(row.tested_share), int(row.n_chunks))
        for row in untested.itertuples(index=False)
    )


def _undertested_documents(documents: pd.DataFrame) -> tuple[UndertestedDocument, ...]:
    if "is_undertested" not in documents:  # a table from before the rule (schema-2 reports)
        return ()
    thin = documents[documents["is_undertested"].astype(bool)].sort_values(["tested_share", "document"])
    return tuple(
        UndertestedDocument(str(row.document), float(row.tested_share), int(row.n_chunks), int(row.n_questions),
                            int(row.n_tested))
        for row in thin.itertuples(index=False)
    )


def _ranked_gaps(analysis) -> list[GapTopic]:
    clusters, documents = analysis.clusters, analysis.documents
    topics = rank_gaps(clusters["coverage"].to_numpy(), clusters["size"].to_numpy(), analysis.config.gaps,
                       is_gap=clusters["is_gap"].to_numpy(dtype=bool))
    by_id, by_name = clusters.set_index("cluster"), documents.set_index("document")
    labels = by_id["label"] if "label" in by_id else pd.Series("", index=by_id.index)
    return [
        GapTopic(k, document_gap_name(d, labels.get(k, "")), float(by_name.loc[d, "tested_share"]),
                 int(by_name.loc[d, "n_chunks"]), d) if d else
        GapTopic(k, str(labels.get(k, "") or "") or f"cluster {k}", float(by_id.loc[k, "tested_share"]),
                 int(by_id.loc[k, "size"]))
        for k, _, d, _ in ranked_from_tables(topics, documents, analysis.config.gaps.size_weight)
    ]


def apply_overrides(
    is_outlier: np.ndarray,
    rows: Sequence[int],
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> np.ndarray:
    """Apply the user's decisions on top of the automatic screening.

    Parameters
    ----------
    is_outlier : ndarray of shape (n_questions,), bool
        Automatic decision (True = off-topic, left out of the analysis).
    rows : sequence of int, length n_questions
        0-based row of each question in the user's file.
    force_include : sequence of int
        File rows to keep as on-topic whatever the screening says.
    force_exclude : sequence of int
        File rows to treat as off-topic whatever the screening says. A row in
        both lists is excluded (the more cautious choice).

    Returns
    -------
    is_outlier : ndarray of shape (n_questions,), bool
        A new array; rows not present in ``rows`` are ignored.
    """
    decision = np.array(is_outlier, dtype=bool, copy=True)
    rows = np.asarray(rows)
    if decision.shape != rows.shape:
        raise InputError(
            f"is_outlier and rows must have the same length, got {decision.shape[0]} "
            f"and {rows.shape[0]}."
        )
    if len(force_include):
        decision[np.isin(rows, np.asarray(list(force_include)))] = False
    if len(force_exclude):
        decision[np.isin(rows, np.asarray(list(force_exclude)))] = True
    return decision
