"""The report's ``since`` section in words: the terminal summary, the HTML report and the JUnit cases.

``since`` is :meth:`coverage_core.history.changes.Changes.to_dict`: what
changed since an earlier run of the history (documents, questions, topics,
settings and verdict counts, and the tested-share change with its reason).
Settings and verdict counts that changed are listed with their numbers
("strictness 0.5 → 1.0"), each entry's ``text`` as the history wrote it; a
report written before they were kept lists none. Questions gone stale
(``questions_stale``: their source document was removed or changed since the
earlier run) are listed with their reason; when the earlier run did not
record the questions' sources (null, or a report without the key) the
summary says it is not known. Everything here reads that plain dict, never a
history object, so a report saved earlier (or written by anyone: its entries
are read defensively) renders the same way in every output, and the CLI's
gates read the very values the JUnit file shows.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from coverage_core.wording import points_words

__all__ = [
    "FIGURE_LISTS",
    "MAX_LISTED",
    "SinceCase",
    "drop_exceeds",
    "figure_changes",
    "first_run_sentence",
    "html_section",
    "junit_cases",
    "new_untested",
    "run_words",
    "stale_count",
    "stale_questions",
    "stale_words",
    "summary_lines",
    "tested_share_drop",
]

MAX_LISTED = 20
"""Documents, questions and topics named per list in the terminal summary and the HTML report (the JSON report
has them all): a knowledge base that grew by 10,000 files must not flood a CI log."""
# A drop equal to the allowed points passes, however the floats round.
_POINTS_TOLERANCE = 1e-9


# ---------------------------------------------------------------- reading the section


def _items(since: Mapping, key: str) -> list:
    value = since.get(key)
    return value if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def _documents(since: Mapping, key: str) -> list[Mapping]:
    return [item for item in _items(since, key) if isinstance(item, Mapping) and "name" in item]


def _texts(since: Mapping, key: str) -> list[str]:
    return [" ".join(str(item).split()) for item in _items(since, key)]


def _topics(since: Mapping, key: str) -> list[Mapping]:
    return [item for item in _items(since, key) if isinstance(item, Mapping)]


FIGURE_LISTS = (("settings_changed", "Settings changed"), ("verdicts_changed", "Verdict counts changed"))
"""The lists of changed figures (:class:`~coverage_core.history.changes.FigureChange`), with their titles."""


def figure_changes(since: Mapping, key: str) -> list[str]:
    """The ``text`` of each entry of the ``settings_changed`` or ``verdicts_changed`` list ("strictness 0.5 →
    1.0"), on one line each; entries without text are left out."""
    return [" ".join(str(item["text"]).split()) for item in _items(since, key)
            if isinstance(item, Mapping) and str(item.get("text") or "").strip()]


def _changed_figures(since: Mapping) -> list[tuple[str, list[str]]]:
    """``(title, changes)`` of each of :data:`FIGURE_LISTS` that holds a change, in that order."""
    return [(title, changed) for key, title in FIGURE_LISTS if (changed := figure_changes(since, key))]


# The document and topic lists the terminal summary and the HTML report show, with their titles, in order.
_DOCUMENT_LISTS = (("documents_added", "Documents added"), ("documents_changed", "Documents changed"))
_TOPIC_LISTS = (("topics_lost", "Topics that lost their tests"), ("topics_gained", "Topics that gained tests"))


def new_untested(since: Mapping) -> list[Mapping]:
    """The documents added or changed since the earlier run that no question tests now (``is_untested``)."""
    return [d for key, _ in _DOCUMENT_LISTS for d in _documents(since, key) if d.get("is_untested")]


def stale_questions(since: Mapping) -> list[Mapping] | None:
    """The questions gone stale since the earlier run (entries with a ``question`` and a ``source``); None when
    not known (the earlier run did not record the questions' sources, or the report predates them)."""
    value = since.get("questions_stale")
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, Mapping) and "question" in item and "source" in item]


def stale_count(stale: Sequence[Mapping]) -> int:
    """How many distinct questions ``stale`` (:func:`stale_questions`) names: a question citing two stale
    documents has an entry for each."""
    return len({(" ".join(str(q["question"]).split()), q.get("row")) for q in stale})


def tested_share_drop(since: Mapping) -> float | None:
    """How many points the tested share fell since the earlier run (negative when it rose); None when undefined."""
    change = _number(since.get("tested_share_change"))
    return None if change is None else -change


def drop_exceeds(since: Mapping, allowed_points: float | None) -> bool:
    """Whether the tested share fell by more than ``allowed_points`` (False without a limit or a defined change)."""
    drop = tested_share_drop(since)
    return allowed_points is not None and drop is not None and drop > allowed_points + _POINTS_TOLERANCE


# ---------------------------------------------------------------- words


def _when(value: Any) -> str:
    """An ISO 8601 time as "2026-11-27 23:14 UTC" (the text as it is when it is not one)."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if moment.utcoffset() is not None:
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M")


def run_words(since: Mapping) -> str:
    """The earlier run as "run 3 (main, 2026-11-27 23:14 UTC)"."""
    run, label = since.get("run"), since.get("label")
    details = [str(label)] if label not in (None, "") else []
    if since.get("recorded_at"):
        details.append(_when(since["recorded_at"]))
    name = f"run {run}" if run is not None else "the earlier run"
    return f"{name} ({', '.join(details)})" if details else name


def _share(value: Any) -> str:
    number = _number(value)
    return "n/a" if number is None else f"{number:.0%}"


def _points(value: Any) -> str:
    number = _number(value)
    return "n/a" if number is None else points_words(number)


def _document_words(document: Mapping) -> str:
    if document.get("is_untested"):
        return "untested"
    return f"tested ({_share(document.get('tested_share'))} of its passages)"


def _topic_words(topic: Mapping) -> str:
    return (f"{' '.join(str(topic.get('label', '')).split())}: tested share {_share(topic.get('tested_share_before'))}"
            f" → {_share(topic.get('tested_share_after'))}")


def _reason(since: Mapping) -> str:
    reason = " ".join(str(since.get("reason") or "").split())
    if reason:
        return reason if reason.endswith(".") else reason + "."
    return f"The tested share changed by {_points(since.get('tested_share_change'))}."


def stale_words(question: Mapping) -> str:
    """Why a question went stale, in words: "Drum.txt changed (3 passages changed)", "Flute.txt removed"."""
    source = " ".join(str(question.get("source", "")).split())
    if question.get("reason") == "removed":
        return f"{source} removed"
    changed = question.get("passages_changed")
    if isinstance(changed, int) and not isinstance(changed, bool):
        return f"{source} changed ({changed:,} {'passage' if changed == 1 else 'passages'} changed)"
    return f"{source} changed (which passages not known)"


def _stale_line(question: Mapping) -> str:
    row = question.get("row")
    at = f" (row {row + 1})" if isinstance(row, int) and not isinstance(row, bool) else ""
    return f"{' '.join(str(question['question']).split())}{at}: {stale_words(question)}"


def _stale_lines(since: Mapping) -> list[str]:
    """The summary's stale questions: "N questions went stale:" and one line each; a sentence when not known."""
    stale = stale_questions(since)
    if stale is None:
        return [f"  Stale questions: not known ({run_words(since)} did not record each question's source document)"]
    if not stale:
        return []
    n = stale_count(stale)
    return [f"  {n} {'question' if n == 1 else 'questions'} went stale: their source document was removed or "
            "changed", *_listed([_stale_line(question) for question in stale])]


def first_run_sentence(shown_history: str, label: str | None = None) -> str:
    """What the summary says when the history holds no run to compare with."""
    under = f" labelled {label}" if label else ""
    return f"No earlier run{under} in {shown_history} to compare with; this is the first."


def _listed(names: Sequence[str]) -> list[str]:
    shown = [f"    {name}" for name in names[:MAX_LISTED]]
    if len(names) > MAX_LISTED:
        shown.append(f"    … and {len(names) - MAX_LISTED} more (the JSON report lists them all)")
    return shown


def summary_lines(since: Mapping) -> list[str]:
    """The terminal block: "Since run N (label, date)", the reason, then what was added, removed and changed."""
    lines = [f"Since {run_words(since)}: {_reason(since)}"]
    lines += [f"  {title}: {'; '.join(changed)}" for title, changed in _changed_figures(since)]
    for key, title in _DOCUMENT_LISTS:
        documents = _documents(since, key)
        if documents:
            lines.append(f"  {title} ({len(documents)})")
            lines += _listed([f"{d['name']}: {_document_words(d)}" for d in documents])
    removed = _texts(since, "documents_removed")
    if removed:
        lines.append(f"  Documents removed ({len(removed)})")
        lines += _listed(removed)
    added, dropped = _texts(since, "questions_added"), _texts(since, "questions_removed")
    lines.append(f"  Questions: {len(added)} added, {len(dropped)} removed")
    lines += _stale_lines(since)
    for key, title in _TOPIC_LISTS:
        topics = _topics(since, key)
        if topics:
            lines.append(f"  {title} ({len(topics)})")
            lines += _listed([_topic_words(topic) for topic in topics])
    return lines


# ---------------------------------------------------------------- HTML


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


_FLAGGED = ' class="flag"'  # html_report's style for a verdict that needs work


def _html_list(items: Sequence[str]) -> str:
    """An escaped <ul> of at most MAX_LISTED items (``items`` are plain text)."""
    if not items:
        return '<p class="muted">none</p>'
    rows = "".join(f"<li>{_e(item)}</li>" for item in items[:MAX_LISTED])
    more = (f'<li class="muted">… and {len(items) - MAX_LISTED} more (the JSON report lists them all)</li>'
            if len(items) > MAX_LISTED else "")
    return f"<ul>{rows}{more}</ul>"


def html_section(since: Mapping | None) -> str:
    """The "What changed since run N" section of the HTML report ("" without a ``since`` section); all text escaped."""
    if not isinstance(since, Mapping):
        return ""
    parts = [f"<h2>What changed since {_e(run_words(since))}</h2>", f'<p class="headline">{_e(_reason(since))}</p>']
    parts += [f"<h3>{title} ({len(changed)})</h3>{_html_list(changed)}" for title, changed in _changed_figures(since)]
    for key, title in _DOCUMENT_LISTS:
        documents = _documents(since, key)
        rows = "".join(
            f"<tr><td>{_e(d['name'])}</td><td{_FLAGGED if d.get('is_untested') else ''}>"
            f"{_e(_document_words(d))}</td></tr>" for d in documents[:MAX_LISTED])
        more = (f'<tr><td colspan="2" class="muted">… and {len(documents) - MAX_LISTED} more</td></tr>'
                if len(documents) > MAX_LISTED else "")
        body = rows + more or '<tr><td colspan="2" class="muted">none</td></tr>'
        parts.append(f"<h3>{title} ({len(documents)})</h3><table><thead><tr><th>document</th><th>now</th></tr>"
                     f"</thead><tbody>{body}</tbody></table>")
    removed = _texts(since, "documents_removed")
    parts.append(f"<h3>Documents removed ({len(removed)})</h3>{_html_list(removed)}")
    for key, title in (("questions_added", "Questions added"), ("questions_removed", "Questions removed")):
        texts = _texts(since, key)
        parts.append(f"<h3>{title} ({len(texts)})</h3>{_html_list(texts)}")
    stale = stale_questions(since)
    if stale is not None:
        parts.append(f"<h3>Questions that went stale ({len(stale)})</h3>"
                     f"{_html_list([_stale_line(question) for question in stale])}")
    for key, title in _TOPIC_LISTS:
        topics = _topics(since, key)
        parts.append(f"<h3>{title} ({len(topics)})</h3>{_html_list([_topic_words(t) for t in topics])}")
    return "<section id=\"since\">" + "\n".join(parts) + "</section>"


# ---------------------------------------------------------------- JUnit


@dataclass(frozen=True)
class SinceCase:
    """One JUnit test case of the history suite: ``failure`` is its message when it fails ("" when it passes)."""

    name: str
    failure: str
    text: str


def junit_cases(since: Mapping, fail_on_drop: float | None = None, fail_on_stale: bool = False) -> list[SinceCase]:
    """The tested-share change since the earlier run (failing only when it fell by more than ``fail_on_drop``
    points), then one failing case per document added or changed since then that no question tests, then one
    case per question gone stale (failing only with ``fail_on_stale``)."""
    earlier = run_words(since)
    drop = tested_share_drop(since)
    limit = "no limit set (--fail-on-drop)" if fail_on_drop is None else f"allowed drop {fail_on_drop:g} points"
    text = f"{_reason(since)}\nchange {_points(since.get('tested_share_change'))} since {earlier}; {limit}"
    failure = ""
    if drop_exceeds(since, fail_on_drop):
        failure = (f"The tested share fell by {drop:.1f} points since {earlier}, more than the allowed "
                   f"{fail_on_drop:g}.")
    cases = [SinceCase(f"tested share since run {since.get('run')}", failure, text)]
    run = since.get("run")
    added = {str(d["name"]) for d in _documents(since, "documents_added")}
    for document in new_untested(since):
        name = str(document["name"])
        how = "added" if name in added else "changed"
        message = f"{name} was {how} since run {run} and no question tests it."
        cases.append(SinceCase(name, message, f"{message}\nCompared with {earlier}."))
    stale = stale_questions(since)
    if stale is None and fail_on_stale:  # the gate cannot check: said in a passing case, as the summary says it
        cases.append(SinceCase(f"stale questions since run {run}", "", f"Not known: {earlier} did not record each "
                               "question's source document, so no question can be found stale against it."))
    for question in stale or ():
        message = f"Stale since run {run}: {_stale_line(question)}."
        text = f"{message}\nCompared with {earlier}; " + (
            "--fail-on-stale fails it." if fail_on_stale else "passes without --fail-on-stale.")
        name = f"stale question: {' '.join(str(question['question']).split())} ({question['source']})"
        cases.append(SinceCase(name, message if fail_on_stale else "", text))
    return cases
