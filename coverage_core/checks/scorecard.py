"""The test-set scorecard: is this question set a good test of this knowledge base?

Generated test sets (RAGAS, DeepEval, Giskard …) are often skewed towards a
few files or repeat themselves ("24 samples where only 6 are unique"). The
scorecard reads an :class:`~coverage_core.results.Analysis` and puts five
figures side by side, each with a plain one-line reading:

* **tested share**: the share of the knowledge base's passages the on-topic
  questions test (``analysis.metrics["tested_share"]``);
* **balance across documents**: how evenly the on-topic questions spread
  over the knowledge base's documents, each question counted for the
  document of its most similar passage. With ``p_d`` the share of questions
  on document ``d`` of the ``N`` documents (documents without a question
  count, with ``p_d = 0``)::

      balance = -sum_d p_d log p_d / log N      (normalised entropy, 0..1)

  1 is perfectly even, 0 all questions on one document; with one document
  it is 1. The Gini coefficient of the per-document counts (0 even, 1 all
  on one) and the documents holding most questions are given too;
* **near-duplicate share**: questions that repeat an earlier one (exactly,
  or above the analysis's near-duplicate threshold,
  :mod:`coverage_core.duplicates`) over all questions;
* **off-topic share**: questions the analysis's screener set aside as not
  about the documents (``analysis.is_outlier``);
* **answerable share**: questions whose most similar passage reaches the
  fitness level (:func:`coverage_core.checks.answerability.fitness_threshold`).

``score`` is the plain mean of the five "higher is better" figures (tested,
balance, 1 - near-duplicate, 1 - off-topic, answerable): one number to rank
sets made for the same knowledge base. :func:`compare_scorecards` says which
of two sets is better on what.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core.checks.answerability import fitness_threshold
from coverage_core.wording import count

__all__ = ["MEASURES", "Scorecard", "ScorecardComparison", "TIE", "compare_scorecards", "scorecard"]

# Differences smaller than this (2 percentage points) are a tie.
TIE = 0.02
# Balance at or above EVEN reads "evenly", below SKEWED "skewed".
EVEN = 0.85
SKEWED = 0.6
# Documents named as holding most questions.
TOP_DOCUMENTS = 3

# (field, plain label, higher is better) in the order shown.
MEASURES = (
    ("tested_share", "Tested share", True),
    ("balance", "Balance across documents", True),
    ("duplicate_share", "Near-duplicates", False),
    ("off_topic_share", "Off-topic", False),
    ("answerable_share", "Answerable", True),
)


@dataclass(frozen=True)
class Scorecard:
    """The scorecard of one question set (see the module docstring for each figure).

    Shares are fractions in [0, 1]; ``top_documents`` lists ``(document,
    questions)`` of the documents holding most on-topic questions, most
    first; ``top_share`` is their share of the on-topic questions.
    ``readings`` holds one plain sentence per figure of :data:`MEASURES`.
    """

    n_questions: int
    n_on_topic: int
    n_documents: int
    n_documents_asked: int
    tested_share: float
    balance: float
    gini: float
    top_documents: tuple[tuple[str, int], ...]
    top_share: float
    n_duplicates: int
    duplicate_share: float
    n_off_topic: int
    off_topic_share: float
    n_answerable: int
    answerable_share: float
    answerable_level: float
    score: float
    readings: dict[str, str]

    def table(self) -> pd.DataFrame:
        """One row per figure: ``measure`` (plain label), ``value`` (a share) and ``reading``."""
        return pd.DataFrame(
            {
                "measure": [label for _, label, _ in MEASURES],
                "value": [float(getattr(self, name)) for name, _, _ in MEASURES],
                "reading": [self.readings[name] for name, _, _ in MEASURES],
            }
        )

    def as_dict(self) -> dict:
        """JSON-ready figures (no readings)."""
        return {
            "n_questions": self.n_questions, "n_on_topic": self.n_on_topic, "n_documents": self.n_documents,
            "n_documents_asked": self.n_documents_asked, "tested_share": self.tested_share,
            "balance": self.balance, "gini": self.gini,
            "top_documents": [[name, n] for name, n in self.top_documents], "top_share": self.top_share,
            "n_duplicates": self.n_duplicates, "duplicate_share": self.duplicate_share,
            "n_off_topic": self.n_off_topic, "off_topic_share": self.off_topic_share,
            "n_answerable": self.n_answerable, "answerable_share": self.answerable_share,
            "answerable_level": self.answerable_level, "score": self.score,
        }




def _verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def normalised_entropy(counts) -> float:
    """``-sum p log p / log N`` over the ``N`` counts (zeros included); 1.0 when ``N <= 1``, 0.0 when all are 0."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size <= 1:
        return 1.0
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(max(0.0, min(1.0, -(p * np.log(p)).sum() / math.log(counts.size))))


def gini(counts) -> float:
    """Gini coefficient of non-negative counts: 0 all equal, ``1 - 1/N`` all in one; 0.0 when all are 0."""
    x = np.sort(np.asarray(counts, dtype=np.float64))
    n, total = x.size, x.sum()
    if n == 0 or total <= 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float((2.0 * (ranks * x).sum() / (n * total)) - (n + 1.0) / n)


def scorecard(analysis) -> Scorecard:
    """The scorecard of ``analysis``'s question set against its knowledge base (an :class:`Analysis`)."""
    m = len(analysis.questions.questions)
    table = analysis.question_table
    is_outlier = np.asarray(analysis.is_outlier, dtype=bool)
    documents = list(dict.fromkeys([d.name for d in analysis.corpus.documents] + analysis.corpus.chunk_documents))
    asked = Counter(np.asarray(table["nearest_document"], dtype=object)[~is_outlier].tolist())
    counts = np.array([asked.get(name, 0) for name in documents], dtype=np.int64)
    n_on_topic = int(counts.sum())
    top = tuple((name, int(n)) for name, n in sorted(asked.items(), key=lambda item: (-item[1], item[0]))[:TOP_DOCUMENTS])
    top_share = sum(n for _, n in top) / n_on_topic if n_on_topic else 0.0
    n_duplicates = int((np.asarray(analysis.duplicate_groups.duplicate_of) >= 0).sum())
    level = float(fitness_threshold(analysis))
    n_answerable = int((table["max_similarity"].to_numpy(dtype=float) >= level).sum())
    n_off = int(is_outlier.sum())
    figures = {
        "tested_share": float(analysis.metrics.get("tested_share", float("nan"))),
        "balance": normalised_entropy(counts),
        "duplicate_share": n_duplicates / m if m else 0.0,
        "off_topic_share": n_off / m if m else 0.0,
        "answerable_share": n_answerable / m if m else 0.0,
    }
    goods = [figures[name] if higher else 1.0 - figures[name] for name, _, higher in MEASURES]
    score = float(np.nanmean(goods)) if not all(math.isnan(g) for g in goods) else float("nan")
    card = dict(
        n_questions=m, n_on_topic=n_on_topic, n_documents=len(documents),
        n_documents_asked=int((counts > 0).sum()), gini=gini(counts), top_documents=top, top_share=float(top_share),
        n_duplicates=n_duplicates, n_off_topic=n_off, n_answerable=n_answerable, answerable_level=level,
        score=score, **figures,
    )
    return Scorecard(**card, readings=_readings(card))


def _readings(card: dict) -> dict[str, str]:
    m, n_docs = card["n_questions"], card["n_documents"]
    readings = {
        "tested_share": (
            f"The questions reach {card['tested_share']:.0%} of the knowledge base's passages."
            if not math.isnan(card["tested_share"]) else "The tested share was not measured."
        ),
        "duplicate_share": (
            "No question repeats another." if not card["n_duplicates"] else
            f"{card['n_duplicates']:,} of {count(m, 'question')} {_verb(card['n_duplicates'], 'repeats', 'repeat')} "
            "another almost word for word: "
            f"only {m - card['n_duplicates']:,} are distinct."
        ),
        "off_topic_share": (
            "Every question is about the documents." if not card["n_off_topic"] else
            f"{card['n_off_topic']:,} of {count(m, 'question')} ({card['off_topic_share']:.0%}) "
            f"{_verb(card['n_off_topic'], 'is', 'are')} not about "
            "the documents."
        ),
        "answerable_share": (
            f"{card['n_answerable']:,} of {count(m, 'question')} ({card['answerable_share']:.0%}) "
            f"{_verb(card['n_answerable'], 'has', 'have')} a passage "
            "close enough to answer them."
        ),
    }
    readings["balance"] = _balance_reading(card, n_docs)
    return readings


def _balance_reading(card: dict, n_docs: int) -> str:
    if not card["n_on_topic"]:
        return "No question is about the documents, so there is nothing to balance."
    if n_docs <= 1:
        return "The knowledge base has one document, so every question is on it."
    asked = f"{card['n_documents_asked']:,} of {count(n_docs, 'document')} have questions"
    names = ", ".join(name for name, _ in card["top_documents"])
    top = f"{len(card['top_documents'])} hold {card['top_share']:.0%} of them ({names})"
    if card["balance"] >= EVEN:
        return f"The questions are spread evenly: {asked}."
    if card["balance"] >= SKEWED:
        return f"The questions are somewhat uneven: {asked}, and {top}."
    return f"The questions are skewed towards a few documents: {asked}, and {top}."


@dataclass(frozen=True)
class ScorecardComparison:
    """Two scorecards side by side.

    ``table`` has one row per figure of :data:`MEASURES`: ``measure``, the
    two values under the sets' names, and ``better`` (the better set's name,
    or "same" within :data:`TIE`). ``winner`` is the index (0 or 1) of the
    better set, None for a tie; ``verdict`` says which is better on what in
    plain words.
    """

    names: tuple[str, str]
    cards: tuple[Scorecard, Scorecard]
    table: pd.DataFrame
    winner: int | None
    verdict: str


_BETTER_PHRASES = {
    "tested_share": "tests more of the knowledge base",
    "balance": "spreads its questions more evenly over the documents",
    "duplicate_share": "repeats itself less",
    "off_topic_share": "has fewer off-topic questions",
    "answerable_share": "has more questions the documents can answer",
}


def _joined(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def compare_scorecards(a: Scorecard, b: Scorecard, names: tuple[str, str] = ("first set", "second set")) -> ScorecardComparison:
    """Which of two question sets, analysed against the same knowledge base, is better, and on what.

    Each figure goes to the set that is better on it by at least :data:`TIE`.
    The set better on more figures wins; with as many wins each, the higher
    ``score`` by at least :data:`TIE`; otherwise it is a tie.
    """
    rows, wins = [], {0: [], 1: []}
    for name, label, higher in MEASURES:
        va, vb = float(getattr(a, name)), float(getattr(b, name))
        diff = (vb - va) if higher else (va - vb)  # > 0: b is better
        better = "same"
        if not (math.isnan(va) or math.isnan(vb)) and abs(diff) >= TIE:
            side = 1 if diff > 0 else 0
            wins[side].append(name)
            better = names[side]
        rows.append({"measure": label, names[0]: va, names[1]: vb, "better": better})
    table = pd.DataFrame(rows, columns=["measure", names[0], names[1], "better"])
    if len(wins[0]) != len(wins[1]):
        winner = 0 if len(wins[0]) > len(wins[1]) else 1
    elif not (math.isnan(a.score) or math.isnan(b.score)) and abs(a.score - b.score) >= TIE:
        winner = 0 if a.score > b.score else 1
    else:
        winner = None
    return ScorecardComparison(names, (a, b), table, winner, _verdict(names, wins, winner))


def _verdict(names: tuple[str, str], wins: dict[int, list[str]], winner: int | None) -> str:
    if not wins[0] and not wins[1]:
        return f"{names[0]} and {names[1]} are about as good a test of this knowledge base."
    if winner is None:
        first = f"{names[0]} {_joined([_BETTER_PHRASES[n] for n in wins[0]])}"
        second = f"{names[1]} {_joined([_BETTER_PHRASES[n] for n in wins[1]])}"
        return f"Neither set is better overall: {first}; {second}."
    loser = 1 - winner
    sentence = f"{names[winner]} is the better test of this knowledge base"
    if wins[winner]:
        sentence += f": it {_joined([_BETTER_PHRASES[n] for n in wins[winner]])}"
    sentence += "."
    if wins[loser]:
        sentence += f" {names[loser]} {_joined([_BETTER_PHRASES[n] for n in wins[loser]])}."
    return sentence
