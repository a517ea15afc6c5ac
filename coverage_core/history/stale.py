"""Stale questions: test questions whose source document was removed or changed since the run they were recorded in.

A question is matched across runs by its text hash, as :mod:`coverage_core.history.changes` matches it. For each
question of the current run that the earlier run holds, each of its source documents *at the earlier run*
(:attr:`~coverage_core.history.snapshot.QuestionState.sources`: the test set's source column, else the
document it retrieved) is looked up in the current run by name:

* not there: the question is stale, reason ``"removed"``;
* there with another content hash (an unknown hash, ``""``, is no change): stale, reason ``"changed"``, with
  ``passages_changed`` = ``max(a, b)``, where ``a`` counts the document's current passages whose hash is not
  among its earlier ones and ``b`` the earlier ones not among the current ones (multisets): an edited passage
  counts once, as does one added or one removed. None when either run did not keep the passage hashes.

One :class:`StaleQuestion` per question and stale source, in the current run's question order.
:func:`stale_questions` is None ("not known") when the earlier run recorded no question's sources (recorded
before they were kept). :func:`replacement_target` and :func:`changed_passages` find, in the current
analysis, the passages of the changed documents that are new since the earlier run: the ones a replacement
question can be written for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from coverage_core.history.snapshot import RunSnapshot, passage_hash

__all__ = ["CHANGED", "REMOVED", "ReplacementTarget", "StaleQuestion", "changed_passages", "passages_changed",
           "replacement_target", "stale_questions"]

REMOVED, CHANGED = "removed", "changed"
"""Why a question went stale: its source document is gone, or its content changed."""


@dataclass(frozen=True)
class StaleQuestion:
    """A question whose source document went away or changed (module docstring); ``row`` is its 0-based data
    row (None when not known), ``source_from`` how its source was known (``"column"`` or ``"retrieved"``)."""

    question: str
    row: int | None
    source: str
    source_from: str
    reason: str
    passages_changed: int | None = None

    def to_dict(self) -> dict:
        """One entry of the report's ``since.questions_stale``."""
        return {"question": self.question, "row": self.row, "source": self.source, "source_from": self.source_from,
                "reason": self.reason, "passages_changed": self.passages_changed}


def passages_changed(before: Sequence[str], after: Sequence[str]) -> int:
    """How many passages differ between two versions of a document, from their passage hashes (module docstring)."""
    earlier, now = Counter(before), Counter(after)
    return max(sum((now - earlier).values()), sum((earlier - now).values()))


def stale_questions(previous: RunSnapshot, current: RunSnapshot) -> tuple[StaleQuestion, ...] | None:
    """The questions of ``current`` gone stale since ``previous`` (module docstring); None when ``previous``
    recorded no question's sources."""
    if previous.questions and all(question.sources is None for question in previous.questions):
        return None
    earlier = {question.text_hash: question for question in previous.questions}
    before = {document.name: document for document in previous.documents}
    now = {document.name: document for document in current.documents}
    found = []
    for question in current.questions:
        recorded = earlier.get(question.text_hash)
        if recorded is None or not recorded.sources:
            continue
        for source in recorded.sources:
            if source not in before:  # never a document of the earlier run: nothing to go stale from
                continue
            entry = dict(question=question.text, row=question.row if question.row is not None else recorded.row,
                         source=source, source_from=recorded.source_from)
            if source not in now:
                found.append(StaleQuestion(**entry, reason=REMOVED))
                continue
            old, new = before[source], now[source]
            if old.content_hash and new.content_hash and old.content_hash != new.content_hash:
                counted = None if old.passages is None or new.passages is None else passages_changed(
                    old.passages, new.passages)
                found.append(StaleQuestion(**entry, reason=CHANGED, passages_changed=counted))
    return tuple(found)


@dataclass(frozen=True)
class ReplacementTarget:
    """The changed documents some stale question cites, each with its passage hashes at the earlier run ``run``:
    what :func:`changed_passages` compares the current analysis's passages with."""

    run: int | None
    documents: tuple[tuple[str, frozenset[str]], ...]
    n_questions: int


def replacement_target(previous: RunSnapshot, stale: Sequence[StaleQuestion] | None,
                       run: int | None = None) -> ReplacementTarget:
    """The :class:`ReplacementTarget` of ``stale`` (found since ``previous``, run ``run``): its changed documents
    whose passages ``previous`` kept, and how many of the stale questions cite them."""
    kept = {document.name: document.passages for document in previous.documents if document.passages is not None}
    changed = [question for question in stale or () if question.reason == CHANGED and question.source in kept]
    names = dict.fromkeys(question.source for question in changed)
    return ReplacementTarget(run, tuple((name, frozenset(kept[name])) for name in names), len(changed))


def changed_passages(target: ReplacementTarget, chunk_texts: Sequence[str], chunk_documents: Sequence[str]
                     ) -> list[int]:
    """The indices of the chunks (texts and document names, aligned) of ``target``'s documents whose passage hash
    the earlier run did not hold: the passages new or rewritten since then, in chunk order."""
    earlier = dict(target.documents)
    return [index for index, (text, document) in enumerate(zip(chunk_texts, chunk_documents))
            if document in earlier and passage_hash(text) not in earlier[document]]
