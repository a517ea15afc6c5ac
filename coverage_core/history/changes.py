"""What changed between two runs (:class:`~coverage_core.history.snapshot.RunSnapshot`): documents, questions,
topics, settings, verdict counts, and the tested share, with the reason in one sentence.

The rules, applied by :func:`changes_since`:

* **Documents** are matched by name. A name only in the current run is
  *added*, only in the earlier one *removed*; the same name with another
  content hash is *changed* (an unknown hash, ``""``, never counts as a
  change). A renamed document with the same content is reported as removed
  plus added: the name is what a team sees in its repository.
* **Questions** are matched by the hash of their whitespace-normalised text.
* **Stale questions** (:func:`coverage_core.history.stale.stale_questions`): questions of both runs whose
  source document at the earlier run was removed or changed since; None when the earlier run did not record
  the questions' sources. Not in the reason: the report, the summary and the dashboard list them.
* **Topics** are renumbered and renamed from run to run, so a topic is
  matched by its members: for topics *a* and *b* with members
  ``(content hash, chunks)``,
  ``overlap(a, b) = Σ_h min(chunks_a(h), chunks_b(h)) / min(Σ chunks_a, Σ chunks_b)``
  over the shared hashes, and *a*'s match is the topic of the other run with
  the highest overlap, if it is at least :data:`TOPIC_MATCH_OVERLAP` (a topic
  that split or merged still matches its larger part); failing that, a topic
  with the same label. A topic *has tests* when its tested share is above 0
  and it is not a gap. *Lost*: a topic of the earlier run that had tests and
  whose match has none, or that has no match. *Gained*: a topic of the
  current run that has tests and whose match had none, or that has no match
  (a new topic with tests).
* **Tested share change** = ``(current − earlier) × 100``, in percentage
  points; None when either run does not know its tested share.
* **New untested**: added or changed documents that are untested now.
* **Settings** (:data:`SETTINGS`), compared as they are shown, so a wobble below the shown precision is no
  change: the model (provider and name), the chunk size and overlap, the screening strictness (two
  decimals), the number of topics K (``headline.n_topics``), the support level τ (two decimals) and the
  retrieval k. A setting either run does not know (recorded before it was kept) is not compared.
* **Verdict counts** (:data:`VERDICT_COUNTS`): off-topic questions, gaps, untested and under-tested
  documents, from each run's headline; compared only when both runs know them.
* **Decisions added** (:func:`decisions_added`): the decisions about suggested questions the current run holds
  and the earlier one does not (the same decision about the same question, written as the same suggestion,
  texts whitespace-normalised); every one of them when the earlier run holds none known, none when the current
  run does not know its decisions. Shown by the dashboard; neither in the reason nor in the report's ``since``
  section (:meth:`Changes.to_dict`): the command line never records decisions, so a run it compares holds none.
* **Reason**: one sentence, its parts joined by "; " in this order: documents, questions, topics, settings,
  verdict counts, each with its numbers ("Strictness 0.5 → 1.0; topics (K) 6 → 8; off-topic questions
  14 → 19"), then the tested-share change in points (": +0.0 points"); "No change in documents, questions,
  settings or verdicts" when there is no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from coverage_core.decisions import SuggestionDecision
from coverage_core.history.snapshot import DocumentState, RunSnapshot, TopicState
from coverage_core.history.stale import StaleQuestion, stale_questions
from coverage_core.wording import count, points_words

__all__ = ["SETTINGS", "TOPIC_MATCH_OVERLAP", "VERDICT_COUNTS", "Changes", "DocumentChange", "FigureChange",
           "TopicChange", "changes_since", "decisions_added", "setting_changes", "verdict_changes"]

TOPIC_MATCH_OVERLAP = 0.5
"""Least weighted overlap of members (module docstring) for two topics of different runs to be the same topic."""

"""The sign of a fall in the reason sentence: a real minus, as typeset, not a hyphen."""
ARROW = "\N{RIGHTWARDS ARROW}"

SETTINGS = (
    ("model", "model"),
    ("chunk_size", "chunk size"),
    ("chunk_overlap", "chunk overlap"),
    ("strictness", "strictness"),
    ("n_topics", "topics (K)"),
    ("support_threshold", "level τ"),
    ("retrieval_k", "retrieval k"),
)
"""The settings "what changed" names, in its order: (name, words). ``model`` and ``support_threshold`` are
the snapshot's own fields, the others figures of its headline
(:data:`~coverage_core.history.snapshot.SETTING_FIGURES`; K is ``n_topics``)."""
VERDICT_COUNTS = (
    ("n_offtopic_questions", "off-topic questions"),
    ("n_gaps", "gaps"),
    ("n_untested_documents", "untested documents"),
    ("n_undertested_documents", "under-tested documents"),
)
"""The verdict counts "what changed" names, in its order: (headline figure, words)."""


@dataclass(frozen=True)
class DocumentChange:
    """An added or changed document, with its verdict in the current run."""

    name: str
    is_untested: bool
    tested_share: float | None

    def to_dict(self) -> dict:
        return {"name": self.name, "is_untested": self.is_untested, "tested_share": self.tested_share}


@dataclass(frozen=True)
class TopicChange:
    """A topic that lost or gained tests; a share is None where the topic does not exist."""

    label: str
    tested_share_before: float | None
    tested_share_after: float | None

    def to_dict(self) -> dict:
        return {"label": self.label, "tested_share_before": self.tested_share_before,
                "tested_share_after": self.tested_share_after}


@dataclass(frozen=True)
class FigureChange:
    """A setting or verdict count that differs between the runs: ``before`` and ``after`` as shown
    ("0.5", "1,000", "all-MiniLM-L6-v2"), and ``text``, the part of the reason sentence that names it."""

    name: str
    before: str
    after: str
    text: str

    def to_dict(self) -> dict:
        return {"name": self.name, "before": self.before, "after": self.after, "text": self.text}


@dataclass(frozen=True)
class Changes:
    """What changed since an earlier run; ``run``, ``label`` and ``recorded_at`` are the earlier run's."""

    run: int | None
    label: str | None
    recorded_at: datetime
    tested_share_change: float | None
    documents_added: tuple[DocumentChange, ...]
    documents_removed: tuple[str, ...]
    documents_changed: tuple[DocumentChange, ...]
    questions_added: tuple[str, ...]
    questions_removed: tuple[str, ...]
    topics_lost: tuple[TopicChange, ...]
    topics_gained: tuple[TopicChange, ...]
    reason: str
    settings_changed: tuple[FigureChange, ...] = ()
    verdicts_changed: tuple[FigureChange, ...] = ()
    decisions_added: tuple[SuggestionDecision, ...] = ()
    questions_stale: tuple[StaleQuestion, ...] | None = None

    @property
    def new_untested(self) -> tuple[DocumentChange, ...]:
        """Added or changed documents that are untested now."""
        return tuple(d for d in self.documents_added + self.documents_changed if d.is_untested)

    def to_dict(self) -> dict:
        """The JSON report's ``since`` section."""
        return {
            "run": self.run,
            "label": self.label,
            "recorded_at": self.recorded_at.isoformat(),
            "tested_share_change": self.tested_share_change,
            "documents_added": [d.to_dict() for d in self.documents_added],
            "documents_removed": list(self.documents_removed),
            "documents_changed": [d.to_dict() for d in self.documents_changed],
            "questions_added": list(self.questions_added),
            "questions_removed": list(self.questions_removed),
            "topics_lost": [t.to_dict() for t in self.topics_lost],
            "topics_gained": [t.to_dict() for t in self.topics_gained],
            "settings_changed": [c.to_dict() for c in self.settings_changed],
            "verdicts_changed": [c.to_dict() for c in self.verdicts_changed],
            "questions_stale": None if self.questions_stale is None else [q.to_dict() for q in self.questions_stale],
            "reason": self.reason,
        }


def changes_since(previous: RunSnapshot, current: RunSnapshot, *, previous_run: int | None = None) -> Changes:
    """What changed from ``previous`` (run ``previous_run`` of a history, if recorded) to ``current``; the rules
    are in the module docstring."""
    before = {d.name: d for d in previous.documents}
    now = {d.name: d for d in current.documents}
    added = tuple(_document_change(d) for name, d in now.items() if name not in before)
    removed = tuple(name for name in before if name not in now)
    changed = tuple(
        _document_change(d) for name, d in now.items()
        if name in before and _content_differs(before[name].content_hash, d.content_hash)
    )
    asked_before = {q.text_hash for q in previous.questions}
    asked_now = {q.text_hash for q in current.questions}
    questions_added = tuple(q.text for q in current.questions if q.text_hash not in asked_before)
    questions_removed = tuple(q.text for q in previous.questions if q.text_hash not in asked_now)
    lost, gained = _topic_changes(previous.topics, current.topics)
    change = _points_change(previous.headline.get("tested_share"), current.headline.get("tested_share"))
    settings, verdicts = setting_changes(previous, current), verdict_changes(previous, current)
    parts = _document_parts(added, removed, changed)
    parts += _question_and_topic_parts(questions_added, questions_removed, lost, gained)
    parts += [c.text for c in (*settings, *verdicts)]
    return Changes(
        run=previous_run, label=previous.label, recorded_at=previous.recorded_at, tested_share_change=change,
        documents_added=added, documents_removed=removed, documents_changed=changed,
        questions_added=questions_added, questions_removed=questions_removed,
        topics_lost=lost, topics_gained=gained, reason=_reason(parts, change),
        settings_changed=settings, verdicts_changed=verdicts, decisions_added=decisions_added(previous, current),
        questions_stale=stale_questions(previous, current),
    )


def decisions_added(previous: RunSnapshot, current: RunSnapshot) -> tuple[SuggestionDecision, ...]:
    """The decisions of ``current`` that ``previous`` does not hold, in ``current``'s order (module docstring)."""
    if not current.decisions:
        return ()
    held = {_decision_key(d) for d in previous.decisions or ()}
    return tuple(d for d in current.decisions if _decision_key(d) not in held)


def _decision_key(decision: SuggestionDecision) -> tuple[str, str, str]:
    return decision.decision, " ".join(decision.question.split()), " ".join(decision.original.split())


def _document_change(document: DocumentState) -> DocumentChange:
    return DocumentChange(document.name, document.is_untested, document.tested_share)


def _content_differs(before: str, now: str) -> bool:
    return bool(before) and bool(now) and before != now


def _points_change(before, now) -> float | None:
    if before is None or now is None:
        return None
    return round((float(now) - float(before)) * 100.0, 6)


# ---------------------------------------------------------------- topics


def _topic_changes(previous: Sequence[TopicState], current: Sequence[TopicState]
                   ) -> tuple[tuple[TopicChange, ...], tuple[TopicChange, ...]]:
    """The topics that lost and gained tests (module docstring)."""
    forward = _matches(previous, current)
    backward = _matches(current, previous)
    lost = []
    for topic, match in zip(previous, forward):
        if not topic.has_tests:
            continue
        if match is None:
            lost.append(TopicChange(topic.label, topic.tested_share, None))
        elif not current[match].has_tests:
            lost.append(TopicChange(current[match].label, topic.tested_share, current[match].tested_share))
    gained = []
    for topic, match in zip(current, backward):
        if not topic.has_tests:
            continue
        if match is None:
            gained.append(TopicChange(topic.label, None, topic.tested_share))
        elif not previous[match].has_tests:
            gained.append(TopicChange(topic.label, previous[match].tested_share, topic.tested_share))
    return tuple(lost), tuple(gained)


def _matches(sources: Sequence[TopicState], targets: Sequence[TopicState]) -> list[int | None]:
    """For each source topic, the index of its matching target topic (module docstring), or None."""
    members_of: dict[str, list[tuple[int, int]]] = {}
    for index, topic in enumerate(targets):
        for digest, chunks in topic.documents:
            members_of.setdefault(digest, []).append((index, chunks))
    totals = [sum(chunks for _, chunks in topic.documents) for topic in targets]
    by_label: dict[str, int] = {}
    for index, topic in enumerate(targets):
        by_label.setdefault(topic.label, index)
    matches: list[int | None] = []
    for topic in sources:
        overlap: dict[int, int] = {}
        for digest, chunks in topic.documents:
            for index, target_chunks in members_of.get(digest, ()):
                overlap[index] = overlap.get(index, 0) + min(chunks, target_chunks)
        total = sum(chunks for _, chunks in topic.documents)
        best, best_key = None, None
        for index, shared in overlap.items():
            score = shared / max(min(total, totals[index]), 1)
            if score < TOPIC_MATCH_OVERLAP:
                continue
            key = (score, targets[index].label == topic.label, shared, -index)
            if best_key is None or key > best_key:
                best, best_key = index, key
        if best is None and topic.label:
            best = by_label.get(topic.label)
        matches.append(best)
    return matches


# ---------------------------------------------------------------- the reason sentence


def _document_parts(added, removed, changed) -> list[str]:
    parts = []
    if added:
        untested = sum(d.is_untested for d in added)
        if len(added) == 1:
            verdict = "untested" if untested else "tested"
        else:
            verdict = {0: "all tested", len(added): "none tested"}.get(untested, f"{untested} untested")
        parts.append(f"+{count(len(added), 'document')}, {verdict}")
    if removed:
        parts.append(f"{count(len(removed), 'document')} removed")
    if changed:
        untested = sum(d.is_untested for d in changed)
        part = f"{count(len(changed), 'document')} changed"
        if untested:
            part += ", untested now" if len(changed) == 1 else f", {untested} untested now"
        parts.append(part)
    return parts


def _question_and_topic_parts(questions_added, questions_removed, lost, gained) -> list[str]:
    """The reason's words for the questions added and removed and the topics that lost or gained their tests,
    in that order, each only when there are some."""
    parts = (
        (questions_added, f"+{count(len(questions_added), 'question')}"),
        (questions_removed, f"{count(len(questions_removed), 'question')} removed"),
        (lost, f"{count(len(lost), 'topic')} lost {'its' if len(lost) == 1 else 'their'} tests"),
        (gained, f"{count(len(gained), 'topic')} gained tests"),
    )
    return [words for items, words in parts if items]


# ---------------------------------------------------------------- settings and verdict counts


def _decimals(value: float, places: int) -> str:
    """``value`` to ``places`` decimals, trailing zeros dropped but one kept ("0.5", "1.0", "0.75")."""
    text = f"{value:.{places}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _shown_setting(run: RunSnapshot, name: str) -> str | None:
    """Setting ``name`` of ``run`` as "what changed" shows it; None when the run does not know it."""
    if name == "model":
        return run.model or None
    if name == "support_threshold":
        return None if run.support_threshold is None else f"{run.support_threshold:.2f}"
    value = run.headline.get(name)
    if value is None or isinstance(value, bool):
        return None
    return _decimals(float(value), 2) if name == "strictness" else f"{int(value):,}"


def setting_changes(previous: RunSnapshot, current: RunSnapshot) -> tuple[FigureChange, ...]:
    """The :data:`SETTINGS` that differ, as shown, between two runs that both know them."""
    found = []
    for name, words in SETTINGS:
        before, after = _shown_setting(previous, name), _shown_setting(current, name)
        if name == "model" and before == after and previous.provider != current.provider:
            before, after = f"{previous.provider} {before}", f"{current.provider} {after}"
        if before is not None and after is not None and before != after:
            found.append(FigureChange(name, before, after, f"{words} {before} {ARROW} {after}"))
    return tuple(found)


def verdict_changes(previous: RunSnapshot, current: RunSnapshot) -> tuple[FigureChange, ...]:
    """The :data:`VERDICT_COUNTS` that differ between two runs that both know them."""
    found = []
    for name, words in VERDICT_COUNTS:
        before, after = previous.headline.get(name), current.headline.get(name)
        if before is None or after is None or isinstance(before, bool) or isinstance(after, bool):
            continue
        if int(before) != int(after):
            shown = f"{int(before):,}", f"{int(after):,}"
            found.append(FigureChange(name, *shown, f"{words} {shown[0]} {ARROW} {shown[1]}"))
    return tuple(found)


def _reason(parts: list[str], change: float | None) -> str:
    """One sentence: the changes, then the tested-share change in points ("+3 documents, none tested: −4.1 points";
    "Strictness 0.5 → 1.0; topics (K) 6 → 8; off-topic questions 14 → 19: +0.0 points")."""
    listed = "; ".join(parts) if parts else "No change in documents, questions, settings or verdicts"
    if listed[0].isascii():  # a part opening with "τ" would stay lower case: a capital tau is another symbol
        listed = listed[0].upper() + listed[1:]
    if change is None:
        return f"{listed}: change in tested share not known"
    return f"{listed}: {points_words(change)}"
