"""The rules run in order: which questions are off-topic, which rule explains each, and their scores.

A question is off-topic when any rule that applies to the corpus flags it;
the first rule in :data:`RULES` order that flags it explains it (its name is
what the question records, its sentence what a user reads). The order puts
the most specific reason first: a named subject the documents lack, then
short support, then a common word no passage has.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from coverage_core.errors import InputError
from coverage_core.offtopic.absent_subject import AbsentSubject
from coverage_core.offtopic.absent_word import AbsentWord
from coverage_core.offtopic.like_questions import LikeQuestions
from coverage_core.offtopic.missing_words import MissingWords
from coverage_core.offtopic.name_in_passing import NameInPassing
from coverage_core.offtopic.names_no_document import NamesNoDocument
from coverage_core.offtopic.no_support import NoSupport
from coverage_core.offtopic.rule import Rule, check_strictness

__all__ = ["OFFTOPIC_REASONS", "OPTIONAL_RULES", "RULES", "RULE_NAMES", "RuleSet"]

RULES: tuple[Rule, ...] = (
    AbsentSubject(), NameInPassing(), NoSupport(), MissingWords(), LikeQuestions(), AbsentWord(),
)
"""The rules the product runs, in the order that decides which one explains a flag."""

OPTIONAL_RULES: tuple[Rule, ...] = (NamesNoDocument(),)
"""Rules kept and measured but not run by default: on the development sets they cost more genuine questions than
they find off-topic ones (``docs/offtopic-rules.md``). ``RuleSet.for_reading(reading, RULES + OPTIONAL_RULES)``
runs them."""

RULE_NAMES = tuple(rule.name for rule in RULES + OPTIONAL_RULES)

OFFTOPIC_REASONS = ("", "no_support", "missing_words", "absent_subject", "excluded")
"""Reason families a report shows (``""``: on-topic; ``"excluded"``: the user's choice, added by
``measure``); each rule's ``code`` is one of them."""


def check_rule_names(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set, or InputError naming the unknown ones and the known."""
    names = frozenset(names)
    unknown = sorted(names - set(RULE_NAMES))
    if unknown:
        raise InputError(f"Unknown off-topic rule {', '.join(unknown)}; the rules are {', '.join(RULE_NAMES)}.")
    return names


class RuleSet:
    """The rules that apply to one corpus, run over one fit's evidence.

    ``without``: names of rules left out (the ablation of ``benchmarks/eval_offtopic.py``).
    """

    def __init__(self, rules: Sequence[Rule] = RULES):
        self.rules = tuple(rules)

    @classmethod
    def for_reading(cls, reading, rules: Sequence[Rule] = RULES) -> RuleSet:
        """The rules that apply to a corpus read as ``reading`` (None: no texts)."""
        return cls([rule for rule in rules if rule.applies(reading)])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(rule.name for rule in self.rules)

    def _kept(self, without: Iterable[str]) -> tuple[Rule, ...]:
        left_out = check_rule_names(without)
        return tuple(rule for rule in self.rules if rule.name not in left_out)

    def masks(self, evidence, strictness: float, without: Iterable[str] = ()) -> dict[str, np.ndarray]:
        """Each kept rule's mask, in order (strictness-free masks worked out once per evidence)."""
        check_strictness(strictness)
        out = {}
        for rule in self._kept(without):
            if rule.needs_strictness:
                out[rule.name] = np.asarray(rule.mask(evidence, strictness), dtype=bool)
            else:
                out[rule.name] = evidence.remembered(f"mask:{rule.name}", lambda r=rule: np.asarray(
                    r.mask(evidence, strictness), dtype=bool))
        return out

    def decide(self, evidence, strictness: float, without: Iterable[str] = ()) -> np.ndarray:
        """Whether each question is off-topic: any kept rule flags it."""
        flagged = np.zeros(evidence.n_questions, dtype=bool)
        for mask in self.masks(evidence, strictness, without).values():
            flagged |= mask
        return flagged

    def first_rules(self, evidence, strictness: float, without: Iterable[str] = ()) -> np.ndarray:
        """The name of the first rule that flags each question ("" when none)."""
        names = np.full(evidence.n_questions, "", dtype=object)
        for name, mask in reversed(list(self.masks(evidence, strictness, without).items())):
            names[mask] = name
        return names

    def scores(self, evidence, strictness: float, base: np.ndarray) -> np.ndarray:
        """The off-topic score a user reads: ``base`` (the shortfall below the support cut, < 0 when supported),
        and for a flagged question the largest score among the rules that flag it (> 0)."""
        score = np.asarray(base, dtype=np.float64).copy()
        by_name = {rule.name: rule for rule in self.rules}
        for name, mask in self.masks(evidence, strictness).items():
            if mask.any():
                score[mask] = np.fmax(score[mask], by_name[name].score(evidence, strictness)[mask])
        return score

    def explain(self, evidence, strictness: float) -> tuple[np.ndarray, list[str], np.ndarray]:
        """Each question's reason code (:data:`OFFTOPIC_REASONS`), sentence and rule name ("" when on-topic)."""
        by_name = {rule.name: rule for rule in self.rules}
        first = self.first_rules(evidence, strictness)
        codes = np.full(evidence.n_questions, "", dtype=object)
        details = [""] * evidence.n_questions
        for q in np.flatnonzero(first != ""):
            rule = by_name[first[q]]
            codes[q] = rule.reason_code(evidence, q)
            details[q] = rule.reason(evidence, q, strictness)
        return codes, details, first
