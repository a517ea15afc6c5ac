"""The dashboard's side of the history of runs: where it is kept, saving the current analysis, recording each
finished analysis automatically, and what the Gap page needs to replace the questions that went stale.

Where the history is: a database URL typed on the History page (kept in this session only, a secret: it may
hold a password and is shown only through :func:`coverage_core.history.redact_history_url`), else a file the
user chose there, else the server's ``COVERAGE_HISTORY``, else ``.coverage-history.sqlite`` in the server's
working directory (:func:`coverage_core.history.default_history_target`).

A history that cannot be opened (a damaged file, a server out of reach) is one plain sentence
(:class:`~coverage_core.errors.InputError` from the store), shown through :mod:`ui.messages`; nothing here
ever writes over a file the store refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from coverage_core.errors import CoverageError
from coverage_core.history import (
    HISTORY_ENV,
    RECORD_ENV,
    HistoryStore,
    RunInfo,
    default_history_target,
    open_history,
    redact_history_url,
    snapshot_of_analysis,
)
from coverage_core.history.location import check_chosen_history, history_file, is_conninfo
from coverage_core.history.snapshot import RunSnapshot
from coverage_core.history.stale import replacement_target
from coverage_core.outputs.report import build_report
from ui import engine, exports, state
from ui.messages import shown_message
from ui.views import history as view

URL_MARK = "://"
"""A history target holding this is a database URL (a secret), not a file path."""


def _is_database(location: str) -> bool:
    """Whether ``location`` names a database (a secret: it may hold a password), not a file: a URL, or a libpq
    keyword string (``host=… password=…``; the store refuses it in one sentence that does not repeat it)."""
    return URL_MARK in location or is_conninfo(location)


# ---------------------------------------------------------------- where the history is
def target() -> str:
    """Where this session's history is: the typed URL, else the chosen file, else the server's default."""
    return state.get(state.HISTORY_URL) or state.get(state.HISTORY_FILE) or default_history_target(os.environ)


def shown_target() -> str:
    """:func:`target` as it may be shown: a URL's password replaced (a path unchanged)."""
    return redact_history_url(target())


def uses_database_url() -> bool:
    """Whether the session's history is a database URL the user typed."""
    return bool(state.get(state.HISTORY_URL))


def choose(location: str) -> None:
    """Keep the history in ``location``: a file path, or a database URL (kept as a secret); "" goes back to the
    server's default. A URL typed where a path was asked is still taken as a URL, so never shown back."""
    location = location.strip()
    if _is_database(location):
        state.put(state.HISTORY_URL, location)
    else:
        state.drop(state.HISTORY_URL)
        state.put(state.HISTORY_FILE, location or None)


def forget_database_url() -> None:
    """Back to the file (the chosen one or the server's)."""
    state.drop(state.HISTORY_URL)


def keep_file_choice() -> None:
    """The History page's file field changed: use that file (a URL typed there is taken as a URL, and the field
    shows the file again: a URL may hold a password and is never shown back)."""
    choose(st.session_state.get(state.W_HISTORY_FILE, ""))
    if uses_database_url():
        st.session_state[state.W_HISTORY_FILE] = state.get(state.HISTORY_FILE) or ""


def keep_database_url() -> None:
    """The History page's database field changed: use that URL, kept in the session and cleared from the field."""
    typed = st.session_state.get(state.W_HISTORY_URL, "")
    if typed.strip():
        state.put(state.HISTORY_URL, typed.strip())
    st.session_state[state.W_HISTORY_URL] = ""


def exists() -> bool:
    """Whether the session's history is there to read: a database is; a file once created (looking at the
    History page never creates one). A file the user may not choose counts as there, so that opening it says
    why, and nothing tells whether it exists."""
    where = target()
    try:
        check_choice()
    except CoverageError:
        return True
    return _is_database(where) or Path(where).exists()


def chosen_folders() -> list[Path]:
    """Where a history file chosen on the page may be: the server's working directory, and the folder of the
    server's own history file."""
    folders = [Path.cwd()]
    server_file = history_file(default_history_target(os.environ))
    if server_file is not None:
        folders.append(Path(server_file).expanduser().resolve().parent)
    return folders


def check_choice() -> None:
    """InputError (one sentence) when the session's history is a file the user may not choose."""
    chosen = state.get(state.HISTORY_URL) or state.get(state.HISTORY_FILE)
    if chosen:
        check_chosen_history(chosen, chosen_folders())


def open_store() -> HistoryStore:
    """The session's history, opened (created when new). Raises InputError with one sentence when it cannot be,
    or when it is a file the user may not choose (:func:`check_choice`)."""
    check_choice()
    return open_history(target())


# ---------------------------------------------------------------- recording
def automatic() -> bool:
    """Whether each finished analysis is recorded: the user's choice, else on when the server names a history."""
    chosen = state.get(state.HISTORY_AUTO)
    return bool(os.environ.get(HISTORY_ENV)) if chosen is None else bool(chosen)


def keep_automatic_choice() -> None:
    """The History page's "Record every analysis automatically" toggle changed (kept beyond the page)."""
    state.put(state.HISTORY_AUTO, bool(st.session_state.get(state.W_HISTORY_AUTO)))


def pick_runs(runs) -> None:
    """Points picked on the History page's tested-share chart (``runs``: the runs it draws): the last two
    picked become the runs compared (the two select boxes follow)."""
    event = st.session_state.get(state.W_HISTORY_CHART)
    points = event.selection.points if event is not None else []
    picks = view.remember_picks(state.get(state.HISTORY_PICKS) or [], view.picked_runs(points, runs))
    state.put(state.HISTORY_PICKS, picks)
    if len(picks) == 2:
        earlier, later = view.ordered_pair(*picks)
        st.session_state[state.W_HISTORY_EARLIER] = earlier
        st.session_state[state.W_HISTORY_LATER] = later


def record(analysis, label: str | None = None) -> RunInfo:
    """Record ``analysis`` (the session's, with its file names and the user's decisions about its suggestions,
    :func:`ui.state.suggestion_decisions`: kept with their counts) in the history under ``label``; returns the run.

    Raises CoverageError (one sentence) when the history cannot be opened or written.
    """
    inputs = exports.inputs_record(state.documents(), state.question_file())
    report = build_report(analysis, inputs)
    try:  # the user's decisions about this analysis's suggestions, when known
        decisions = state.suggestion_decisions(engine.analysis_key(state.stored_inputs(), state.settings(),
                                                                   state.overrides()))
    except (CoverageError, AttributeError):  # no stored inputs, or settings the core rejects
        decisions = None
    snapshot = snapshot_of_analysis(analysis, report, label=(label or "").strip() or None, decisions=decisions,
                                    source_column=state.settings().relevant_column or None)
    with open_store() as store:
        return store.record(snapshot)


def keep_stale(earlier: RunSnapshot, changes) -> bool:
    """Keep what the Gap page needs to write replacements for the stale questions of ``changes`` (found since
    ``earlier``): the changed documents they cite, with their passages at ``earlier`` (``HISTORY_STALE``; dropped
    when there are none). Returns whether there are any."""
    target = replacement_target(earlier, changes.questions_stale, changes.run)
    if target.documents:
        state.put(state.HISTORY_STALE, target)
    else:
        state.drop(state.HISTORY_STALE)
    return bool(target.documents)


def saved_sentence(info: RunInfo, where: str) -> str:
    """What the dashboard says after recording (not escaped: ``where`` is a path, show it as text)."""
    return f"Saved as run {info.run} in {where}."


def record_finished(analysis) -> RunInfo | None:
    """The hook of a finished analysis (:func:`ui.flow.run_embedding`): when automatic recording is on, record
    ``analysis`` once (per analysis and history: running it again records nothing), under the server's
    ``COVERAGE_RECORD`` label if it sets one. A history error is shown as one sentence; the analysis stands."""
    if not automatic():
        return None
    where = shown_target()
    try:
        key = (where, engine.analysis_key(state.stored_inputs(), state.settings(), state.overrides()))
    except (CoverageError, AttributeError):  # no stored inputs: key the analysis by its identity
        key = (where, id(analysis))
    recorded = dict(state.get(state.HISTORY_RECORDED) or {})
    if key in recorded:
        return None
    try:
        info = record(analysis, os.environ.get(RECORD_ENV))
    except CoverageError as error:
        st.error(shown_message(f"The analysis was not recorded in the history. {error}"))
        return None
    recorded[key] = info.run
    state.put(state.HISTORY_RECORDED, recorded)
    st.write(shown_message(saved_sentence(info, where)))
    return info
