"""The History page's tables and sentences (no Streamlit): the runs, the two runs compared, what changed.

The page reads widgets and the store; everything it shows is made here from the core's values
(``RunInfo``, :class:`~coverage_core.history.changes.Changes` with its stale questions, a run's decisions about
the suggested questions).
Sentences hold numbers and fixed words only; user text (labels, document names, questions, topics) goes into
tables, which never render Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from coverage_core.decisions import ACCEPTED, REJECTED, SuggestionDecision, decision_counts
from coverage_core.history.snapshot import FROM_COLUMN
from coverage_core.history.stale import REMOVED
from coverage_core.outputs.plots.history import run_names
from coverage_core.wording import points_words
from ui import formats

DECISIONS_ADDED = "Decisions on suggested questions added"
"""The heading of the decisions the later run holds and the earlier one does not."""

ALL_LABELS = ""
"""The label filter's value that shows every run."""

EMPTY_HISTORY = (
    "No run is recorded in this history yet: save one with **Save to history** on the Results page, turn on "
    "automatic recording above, or have your CI job record each of its runs into this history (the documentation's "
    "CI page, docs/ci.md, shows how)."
)


def labels_of(runs: pd.DataFrame) -> list[str]:
    """The label filter's options: every runs, then each label used, most recently used first."""
    used = runs.loc[runs["label"] != "", ["label", "run"]].groupby("label")["run"].max()
    return [ALL_LABELS] + list(used.sort_values(ascending=False).index)


def label_option(label: str) -> str:
    """A label filter option as the list shows it (the widget shows options as plain text)."""
    return "every run" if label == ALL_LABELS else f"runs labelled {label}"


def with_label(runs: pd.DataFrame, label: str) -> pd.DataFrame:
    """The runs under ``label`` (every run for :data:`ALL_LABELS`), index reset."""
    return (runs if label == ALL_LABELS else runs[runs["label"] == label]).reset_index(drop=True)


def run_choices(runs: pd.DataFrame) -> dict[int, str]:
    """{run: its name} for the two "compare" select boxes, oldest first."""
    return dict(zip((int(run) for run in runs["run"]), run_names(runs)))


def default_pair(runs: pd.DataFrame) -> tuple[int, int] | None:
    """The two runs compared by default: the last two (None with fewer than two runs)."""
    if len(runs) < 2:
        return None
    return int(runs["run"].iloc[-2]), int(runs["run"].iloc[-1])


def picked_runs(points: Iterable[dict], runs: pd.DataFrame) -> list[int]:
    """The runs of the points selected on the tested-share chart, in the order given.

    Each point carries its run number first in ``customdata`` (:func:`~coverage_core.outputs.plots.history.
    tested_share_over_time`); a point without it is read from its index in ``runs``.
    """
    picked: list[int] = []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)) and custom:
            run = int(custom[0])
        elif "point_index" in point and 0 <= int(point["point_index"]) < len(runs):
            run = int(runs["run"].iloc[int(point["point_index"])])
        else:
            continue
        if run not in picked:
            picked.append(run)
    return picked


def remember_picks(previous: Sequence[int], selected: Sequence[int]) -> list[int]:
    """The last two runs picked on the chart: a selection of two or more points is the pick; one point joins
    the ``previous`` picks (so two clicks, one after the other, pick two runs); none keeps them."""
    if len(selected) >= 2:
        return list(selected[-2:])
    return ([run for run in previous if run not in selected] + list(selected))[-2:]


def ordered_pair(first: int, second: int) -> tuple[int, int]:
    """The earlier run first (runs are numbered in the order they were recorded)."""
    return (first, second) if first <= second else (second, first)


def share_sentence(runs: pd.DataFrame) -> str:
    """The latest tested share and its change since the run before, in one sentence (numbers only)."""
    last = runs.iloc[-1]
    sentence = f"{formats.percent(last['tested_share'])} of the knowledge base tested at run {int(last['run'])}"
    before = runs["tested_share"].iloc[-2] if len(runs) >= 2 else None
    if before is not None and pd.notna(before) and pd.notna(last["tested_share"]):
        change = points_words(100 * (float(last["tested_share"]) - float(before)))
        sentence += f" ({change} since run {int(runs['run'].iloc[-2])})"
    return sentence + f"; {formats.count(len(runs), 'run')} recorded."


def _share(value) -> str:
    return formats.percent(value)


def documents_table(changes, which: str) -> pd.DataFrame:
    """Documents ``"added"`` or ``"changed"`` with their verdict now: tested or untested, and the share tested."""
    rows = changes.documents_added if which == "added" else changes.documents_changed
    return pd.DataFrame({
        "document": [row.name for row in rows],
        "now": ["untested" if row.is_untested else "tested" for row in rows],
        "share tested": [row.tested_share for row in rows],
    })


def names_table(names: Sequence[str], column: str) -> pd.DataFrame:
    return pd.DataFrame({column: list(names)})


def topics_table(topics) -> pd.DataFrame:
    """Topics that lost or gained their tests, with the share tested before and after."""
    return pd.DataFrame({
        "topic": [topic.label for topic in topics],
        "share tested before": [topic.tested_share_before for topic in topics],
        "share tested after": [topic.tested_share_after for topic in topics],
    })


def change_counts(changes) -> list[tuple[str, int]]:
    """(heading, count) of each part of what changed, in the page's order (documents, questions, topics)."""
    return [
        ("Documents added", len(changes.documents_added)),
        ("Documents changed", len(changes.documents_changed)),
        ("Documents removed", len(changes.documents_removed)),
        ("Questions added", len(changes.questions_added)),
        ("Questions removed", len(changes.questions_removed)),
        ("Topics that lost their tests", len(changes.topics_lost)),
        ("Topics that gained tests", len(changes.topics_gained)),
        (DECISIONS_ADDED, len(changes.decisions_added)),
    ]


def new_untested_sentence(changes) -> str:
    """How many documents added or changed have no test now ("" when none); numbers and fixed words only."""
    n = len(changes.new_untested)
    if not n:
        return ""
    return (
        f"{formats.count(n, 'document')} added or changed since run {changes.run} "
        f"{formats.plural(n, 'has', 'have')} no test: no on-topic question targets "
        f"{formats.plural(n, 'it', 'them')}."
    )


def new_untested_documents(changes) -> list[tuple[str, str]]:
    """(document name, "added" or "changed") of each document added or changed that is untested now."""
    added = {document.name for document in changes.documents_added}
    return [(document.name, "added" if document.name in added else "changed") for document in changes.new_untested]


# ---------------------------------------------------------------- questions gone stale


STALE_HEADING = "Questions whose document changed or was removed"
"""The heading of the stale questions (:attr:`~coverage_core.history.changes.Changes.questions_stale`)."""


def stale_count(changes) -> int:
    """How many distinct questions went stale (one citing two changed documents is listed twice); 0 when not known."""
    return len({(question.question, question.row) for question in changes.questions_stale or ()})


def stale_sentence(changes) -> str:
    """What the stale questions are, or that they cannot be told (numbers and fixed words only); "" when there
    are none."""
    stale = changes.questions_stale
    if stale is None:
        return (f"Run {changes.run} was recorded before the history kept the document each question was written "
                "for, so it cannot tell which questions went out of date since then.")
    if not stale:
        return ""
    n = stale_count(changes)
    return (f"{formats.count(n, 'question')} {formats.plural(n, 'was', 'were')} written for a document that was "
            f"changed or removed after run {changes.run}: check that {formats.plural(n, 'it', 'each')} still asks "
            "about what the documents say now, or replace it.")


def _what_happened(question) -> str:
    if question.reason == REMOVED:
        return "the document was removed"
    if question.passages_changed is None:
        return "the document changed"
    return f"the document changed: {formats.count(question.passages_changed, 'passage')} rewritten, added or removed"


def stale_table(stale) -> pd.DataFrame:
    """One row per stale question and document: the question, its row in the file (counted from 1 below the
    header), the document, what happened to it and how the document was known."""
    return pd.DataFrame({
        "question": [question.question for question in stale],
        "row in your file": [None if question.row is None else question.row + 1 for question in stale],
        "document": [question.source for question in stale],
        "what happened": [_what_happened(question) for question in stale],
        "document known from": ["named in your file" if question.source_from == FROM_COLUMN
                                else "the passage it found" for question in stale],
    }, columns=["question", "row in your file", "document", "what happened", "document known from"])


# ---------------------------------------------------------------- the decisions about suggested questions


def decision_words(decision: SuggestionDecision) -> str:
    """What the user did with a suggested question, in plain words."""
    if decision.decision == REJECTED:
        return "rejected"
    if decision.decision == ACCEPTED:
        return "accepted, edited" if decision.edited else "accepted"
    return "edited, not accepted"


def decisions_table(decisions: Sequence[SuggestionDecision]) -> pd.DataFrame:
    """One row per decision: what was done, the question as it stands, the suggestion as it was written (when
    edited), who wrote it first and its source document."""
    return pd.DataFrame({
        "decision": [decision_words(d) for d in decisions],
        "question": [d.question for d in decisions],
        "suggested as": [d.original if d.edited else "" for d in decisions],
        "written by": [formats.origin_words(d.origin) for d in decisions],
        "document": [d.document for d in decisions],
    }, columns=["decision", "question", "suggested as", "written by", "document"])


def decisions_sentence(run: int, decisions: Sequence[SuggestionDecision] | None) -> str:
    """What run ``run`` holds of the decisions about its suggested questions (numbers and fixed words only)."""
    if decisions is None:
        return (f"Run {run} was recorded without decisions on suggested questions: from the command line, before "
                "any suggestion was accepted, edited or rejected on the Gap analysis page, or before the history "
                "kept them.")
    counts = decision_counts(decisions)
    if not any(counts.values()):
        return f"No suggested question was accepted, edited or rejected at run {run}."
    return (f"At run {run}: {formats.count(counts['n_accepted_suggestions'], 'suggested question')} accepted, "
            f"{counts['n_edited_suggestions']:,} edited, {counts['n_rejected_suggestions']:,} rejected.")
