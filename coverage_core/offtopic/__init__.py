"""Off-topic screening rules: one module per rule, run in order by :class:`RuleSet`.

Each rule (:class:`~coverage_core.offtopic.rule.Rule`) has a name, the corpora
it applies to (read from the corpus's :class:`~coverage_core.stages.lexical.Reading`),
its constants beside it, a mask and a one-sentence reason. The screener
(:class:`~coverage_core.offtopic.screener.QuestionScreener`) gathers the
:class:`~coverage_core.offtopic.evidence.Evidence` once; the rules decide.
What each rule was measured to gain or cost, per development set, is in
``docs/offtopic-rules.md``.
"""

from coverage_core.offtopic.evidence import Evidence
from coverage_core.offtopic.rule import STRICTNESS_RANGE, Rule, check_strictness, margin_cut, strictness_to_z
from coverage_core.offtopic.screen import OFFTOPIC_REASONS, OPTIONAL_RULES, RULE_NAMES, RULES, RuleSet, check_rule_names

__all__ = [
    "Evidence", "OFFTOPIC_REASONS", "OPTIONAL_RULES", "RULES", "RULE_NAMES", "Rule", "RuleSet", "STRICTNESS_RANGE",
    "check_rule_names", "check_strictness", "margin_cut", "strictness_to_z",
]
