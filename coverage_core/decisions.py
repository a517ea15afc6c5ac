"""What the user decided about the suggested questions: accepted, edited, rejected.

The suggestions of a gap analysis (:class:`~coverage_core.suggest.questions.Suggestion`) are a starting point:
the user ticks the ones to add to the test set, rewrites some, deletes others. Those decisions are the user's
work, so they are kept with a saved analysis (``decisions.json``,
:mod:`coverage_core.saved.analysis`) and in the run history, with their counts
(:mod:`coverage_core.history.snapshot`; without their passages).

One :class:`SuggestionDecision` per row of the suggestions table, in table order, then one per suggestion the
user deleted:

* ``decision`` is :data:`ACCEPTED` (ticked: it goes into the improved test set), :data:`OPEN` (still in the
  table, not ticked) or :data:`REJECTED` (a suggestion whose row the user deleted);
* ``question`` is the text as it stands now, ``original`` the suggestion's text as it was written (``""`` for
  a row the user typed or brought from the traffic page: it has no suggestion behind it);
* a suggestion is **edited** when its text, whitespace-normalised, differs from its ``original``;
* ``origin`` is who wrote it first (the suggestion's own origin: ``"local"``, ``"llm"``, ``"draft"``,
  ``"traffic"``, ``"you"`` or any later one), never the edited form. An edited question's origin as the
  outputs show it is :func:`edited_origin` of it, ``"edited:local"``, worded "edited (from built-in model)"
  (:func:`coverage_core.outputs.gap_report.origin_words`).

Pure data: no Streamlit, no pandas. The dashboard turns its table into these (``ui.views.decisions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACCEPTED",
    "DECISIONS",
    "EDITED_PREFIX",
    "OPEN",
    "REJECTED",
    "SuggestionDecision",
    "base_origin",
    "decision_counts",
    "decision_from",
    "decision_records",
    "edited_origin",
    "is_edited_origin",
    "same_text",
]

ACCEPTED, OPEN, REJECTED = "accepted", "open", "rejected"
DECISIONS = (ACCEPTED, OPEN, REJECTED)
"""Every value of :attr:`SuggestionDecision.decision`."""
EDITED_PREFIX = "edited:"
"""The origin of an edited question is this prefix and the origin of the suggestion it was edited from."""


def same_text(first: Any, second: Any) -> bool:
    """Whether two question texts are the same once runs of whitespace are one space (re-wrapping is no edit)."""
    return " ".join(str(first or "").split()) == " ".join(str(second or "").split())


def is_edited_origin(origin: Any) -> bool:
    """Whether ``origin`` is an edited one (``"edited:local"``)."""
    return str(origin or "").startswith(EDITED_PREFIX)


def base_origin(origin: Any) -> str:
    """Who wrote a question first: ``origin`` without its :data:`EDITED_PREFIX` (``"edited:local"`` → ``"local"``)."""
    text = str(origin or "")
    while text.startswith(EDITED_PREFIX):
        text = text[len(EDITED_PREFIX):]
    return text


def edited_origin(origin: Any) -> str:
    """The origin of a question edited from one of ``origin`` (``"local"`` → ``"edited:local"``; never twice)."""
    return EDITED_PREFIX + base_origin(origin)


@dataclass(frozen=True)
class SuggestionDecision:
    """What the user did with one suggested question (module docstring); ``cluster`` is the gap's topic (None
    for a row without one), ``document`` and ``passage`` its source, the passage whole."""

    question: str
    origin: str
    decision: str = OPEN
    original: str = ""
    cluster: int | None = None
    document: str = ""
    passage: str = ""

    def __post_init__(self):
        if self.decision not in DECISIONS:
            raise ValueError(f"a decision is one of {', '.join(DECISIONS)}, not {self.decision!r}")
        object.__setattr__(self, "origin", base_origin(self.origin))

    @property
    def edited(self) -> bool:
        """The user rewrote a suggestion (a row without an original is the user's own, never "edited")."""
        return bool(self.original.strip()) and not same_text(self.question, self.original)

    @property
    def shown_origin(self) -> str:
        """The origin the outputs give it: :func:`edited_origin` when edited, else its own."""
        return edited_origin(self.origin) if self.edited else self.origin

    @property
    def is_decided(self) -> bool:
        """Accepted, rejected or edited: a row the user did something to."""
        return self.decision != OPEN or self.edited

    def to_dict(self) -> dict:
        """The JSON record (``decisions.json``); :func:`coverage_core.saved.schema.check_decisions`
        reads it back."""
        return {"question": self.question, "original": self.original, "origin": self.origin,
                "decision": self.decision, "cluster": self.cluster, "document": self.document,
                "passage": self.passage}


def decision_records(decisions: Iterable[SuggestionDecision]) -> list[dict]:
    """``decisions`` as the JSON list a saved analysis keeps."""
    return [decision.to_dict() for decision in decisions]


def decision_counts(decisions: Iterable[SuggestionDecision] | None) -> dict[str, int]:
    """``{"n_accepted_suggestions", "n_edited_suggestions", "n_rejected_suggestions"}``: how many questions the user
    accepted, edited (accepted or not; a rejected one is not counted as edited) and rejected; ``{}`` for None
    (not known)."""
    if decisions is None:
        return {}
    listed = list(decisions)
    return {
        "n_accepted_suggestions": sum(d.decision == ACCEPTED for d in listed),
        "n_edited_suggestions": sum(d.edited and d.decision != REJECTED for d in listed),
        "n_rejected_suggestions": sum(d.decision == REJECTED for d in listed),
    }


def decision_from(record: Mapping[str, Any]) -> SuggestionDecision:
    """A :class:`SuggestionDecision` from a record whose fields were checked already (``saved_schema``)."""
    return SuggestionDecision(
        question=str(record.get("question", "")), origin=str(record.get("origin", "")),
        decision=str(record.get("decision", OPEN)), original=str(record.get("original", "")),
        cluster=record.get("cluster"), document=str(record.get("document", "")),
        passage=str(record.get("passage", "")),
    )
