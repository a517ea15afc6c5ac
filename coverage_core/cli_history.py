"""The history flow of ``analyze``: compare with an earlier run, record this one, gate on what changed.

The history is touched only when asked for: a flag (``--record``,
``--history``, ``--since``, ``--fail-on-drop``, ``--fail-on-new-untested``,
``--fail-on-stale``, ``--keep-document-text``) or an environment variable (``COVERAGE_HISTORY``,
``COVERAGE_RECORD``); a plain ``analyze`` reads and creates nothing. A run
that only compares never creates a history file that is not there.

:func:`open_session` runs right after the flags are checked, before any file
is read or text embedded: a damaged history, an unreachable server or a
``--since`` naming no run costs nothing. The report's ``since`` section is
then filled before any output is written (:meth:`HistorySession.compare`),
the run recorded after they are (:meth:`HistorySession.record`), and the
gates (:meth:`HistorySession.gate_failures`) read the report's ``since``
section, so the exit code and the JUnit file agree. Every target shown is
redacted (``postgresql://user:***@host/db``), in errors too.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.history import location
from coverage_core.outputs import since_report
from coverage_core.validation import check_scalar

__all__ = ["HistoryRequest", "HistorySession", "history_output", "history_request", "open_session"]



@dataclass(frozen=True)
class HistoryRequest:
    """What the flags and environment ask of the history; ``*_named_by`` is how the user set it (for messages)."""

    target: str
    target_named_by: str
    label: str | None
    label_named_by: str
    since: str | None
    fail_on_drop: float | None
    fail_on_new_untested: bool
    keep_text: bool
    fail_on_stale: bool = False

    @property
    def gates(self) -> list[str]:
        """The history gates asked for, as their flags."""
        return [flag for flag, on in (("--fail-on-drop", self.fail_on_drop is not None),
                                      ("--fail-on-new-untested", self.fail_on_new_untested),
                                      ("--fail-on-stale", self.fail_on_stale)) if on]


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def history_request(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> HistoryRequest | None:
    """What ``args`` and ``env`` ask of the history, every value checked; None when nothing asks for it.

    Runs with the other flag checks, before anything is read: a refusal names the flag or variable.
    """
    env = os.environ if env is None else env
    env_target, env_label = _env_value(env, location.HISTORY_ENV), _env_value(env, location.RECORD_ENV)
    flags = (args.record, args.history, args.since, args.fail_on_drop, args.fail_on_new_untested or None,
             args.keep_document_text or None, getattr(args, "fail_on_stale", False) or None)
    if all(value is None for value in flags) and env_target is None and env_label is None:
        return None
    if args.history is not None:
        target, target_named_by = args.history.strip(), "--history"
        if not target:
            raise InputError("--history is empty; name a SQLite file or a database URL, or leave it out.")
    else:
        target = location.default_history_target(env)
        target_named_by = location.HISTORY_ENV if env_target is not None else "the default history"
    if location.is_conninfo(target):  # named, never repeated: it holds the password
        raise InputError(f"{target_named_by} is a PostgreSQL keyword string (host=… dbname=…); give it as a URL "
                         "instead, such as postgresql://user:PASSWORD@host:5432/dbname.")
    label, label_named_by = (args.record, "--record") if args.record is not None else (env_label, location.RECORD_ENV)
    if label is not None:
        label = location.checked_label(label, label_named_by)
    since = None
    if args.since is not None:
        since = args.since.strip()
        if not since:
            raise InputError("--since is empty; name a run number or a label, or leave it out.")
        # A run number or a label: a label is never longer than LABEL_MAX_CHARS (the store resolves digits).
        location.checked_label(since, "--since (a run number or a label)")
    if args.fail_on_drop is not None:
        check_scalar(args.fail_on_drop, "--fail-on-drop", float, min_val=0)
    request = HistoryRequest(target, target_named_by, label, label_named_by, since, args.fail_on_drop,
                             bool(args.fail_on_new_untested), bool(args.keep_document_text),
                             bool(getattr(args, "fail_on_stale", False)))
    if request.gates and label is None and since is None:
        raise InputError(f"{' and '.join(request.gates)} {wording.plural(len(request.gates), 'compares', 'compare')} with the "
                         "last run recorded under the same label; add --record LABEL (e.g. --record main) or "
                         "--since RUN_OR_LABEL.")
    if request.keep_text and label is None:
        raise InputError("--keep-document-text keeps the documents' text in the history when a run is recorded; "
                         f"add --record LABEL (or set {location.RECORD_ENV}) or leave it out.")
    return request


def history_output(request: HistoryRequest | None) -> list[tuple[str, str]]:
    """The history file as an output ``(name, path)`` for the overlap checks; [] for none or a server."""
    path = location.history_file(request.target) if request is not None else None
    return [(request.target_named_by, path)] if path else []


def _shown(target: str) -> str:
    return location.redact_history_url(target)


def _scrubbed(text: str, target: str) -> str:
    """``text`` with the target replaced by its redacted form (a message built here names only that form)."""
    return text.replace(target, _shown(target)) if target else text


@contextmanager
def _history_errors(target: str):
    """Errors of the store as one sentence naming the redacted target (exit 2); never the password.

    A driver's own words are given only for a target without secrets: they may quote a password however the
    driver parsed it, and masking it by search would mask every letter of a one-letter password.
    """
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except InputError as error:
        raise InputError(_scrubbed(str(error), target)) from None
    except (SQLAlchemyError, OSError) as error:
        shown = _shown(target)
        detail = " ".join(str(getattr(error, "orig", None) or error).split()).split(" (Background on")[0]
        because = f" ({detail.rstrip('.')})" if shown == target and detail else ""
        raise InputError(f"The history {shown} could not be used{because}; check the path or database URL and "
                         "that it is reachable.") from None


class HistorySession:
    """One ``analyze`` run's use of the history: the earlier run compared with, and this run's record."""

    def __init__(self, request: HistoryRequest, store=None, previous=None, previous_snapshot=None):
        self.request = request
        self.store = store
        self.previous = previous
        self.previous_snapshot = previous_snapshot
        self.snapshot = None
        self.since: dict | None = None
        self.recorded = None

    @property
    def shown_target(self) -> str:
        return _shown(self.request.target)

    def compare(self, analysis, report: dict, source_column: str | None = None) -> None:
        """This run's snapshot (each question's source from ``source_column`` when given, else a column detected by
        name, else what it retrieved), and ``report["since"]`` when there is an earlier run (set before any
        output)."""
        if self.request.label is None and self.previous is None:
            return
        from coverage_core.history import changes_since, snapshot_of_analysis

        self.snapshot = snapshot_of_analysis(analysis, report, label=self.request.label,
                                             keep_text=self.request.keep_text, source_column=source_column)
        if self.previous_snapshot is not None:
            changes = changes_since(self.previous_snapshot, self.snapshot, previous_run=self.previous.run)
            self.since = report["since"] = changes.to_dict()

    def record(self):
        """Record this run under the label (None when not asked to); atomic, so a killed run leaves no trace."""
        if self.request.label is None or self.snapshot is None:
            return None
        if self.store is None:  # only compared so far, with no file yet: recording creates it
            self.store = _open_store(self.request.target)
        with _history_errors(self.request.target):
            self.recorded = self.store.record(self.snapshot)
        return self.recorded

    def summary_lines(self) -> list[str]:
        """The "Since run N" block, or the sentence saying there was no earlier run; then where it was recorded."""
        if self.since is not None:
            lines = since_report.summary_lines(self.since)
        else:
            lines = [since_report.first_run_sentence(self.shown_target, self.request.label)]
        return lines

    def recorded_line(self) -> str | None:
        if self.recorded is None:
            return None
        label = f" ({self.recorded.label})" if self.recorded.label else ""
        return f"Recorded as run {self.recorded.run}{label} in {self.shown_target}."

    def gate_failures(self) -> list[str]:
        """One sentence per history gate that fails, read from the report's ``since`` section."""
        if self.since is None:
            return []  # the first run: nothing to fall from
        failures = []
        earlier = since_report.run_words(self.since)
        allowed = self.request.fail_on_drop
        if allowed is not None:
            drop = since_report.tested_share_drop(self.since)
            if drop is None:
                raise InputError(f"The tested share is not defined in this run or {earlier}, so --fail-on-drop "
                                 "cannot check its drop.")
            if since_report.drop_exceeds(self.since, allowed):
                failures.append(f"The tested share fell by {drop:.1f} points since {earlier}, more than the "
                                f"allowed {allowed:g} (--fail-on-drop).")
        untested = since_report.new_untested(self.since) if self.request.fail_on_new_untested else []
        if untested:
            names = ", ".join(str(d["name"]) for d in untested[:since_report.MAX_LISTED])
            more = f" and {len(untested) - since_report.MAX_LISTED} more" if len(untested) > since_report.MAX_LISTED else ""
            n = len(untested)
            failures.append(f"{n} {wording.plural(n, 'document')} added or changed since {earlier} "
                            f"{wording.plural(n, 'has', 'have')} no question testing {wording.plural(n, 'it', 'them')}: "
                            f"{names}{more} (--fail-on-new-untested).")
        stale = since_report.stale_questions(self.since) if self.request.fail_on_stale else None
        if stale:  # None (not known: the earlier run kept no sources) is no failure; the summary says so
            n = since_report.stale_count(stale)
            failures.append(f"{n} {wording.plural(n, 'question')} went stale since {earlier}: "
                            f"{wording.plural(n, 'its', 'their')} source document was removed or changed "
                            "(--fail-on-stale).")
        return failures

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _open_store(target: str):
    with _history_errors(target):
        from coverage_core.history.store import open_history  # SQLAlchemy loads only when a history is used

        return open_history(target)


def open_session(request: HistoryRequest | None) -> HistorySession | None:
    """The history opened, and the earlier run to compare with found and read; None without a request.

    The earlier run: ``--since`` (a run number or a label's last run), else the last run under the label
    recorded, else (nothing recorded) the last run. A file that is not there is not created by a run
    that only compares: it holds no earlier run.
    """
    if request is None:
        return None
    path = location.history_file(request.target)
    if path is not None and not os.path.exists(path):
        if request.since is not None:
            raise InputError(f"--since {request.since}: the history {Path(path)} does not exist yet; record a run "
                             "first with --record LABEL, or name another --history.")
        return HistorySession(request)
    store = _open_store(request.target)
    try:
        with _history_errors(request.target):
            if request.since is not None:
                previous = store.resolve(request.since)
            else:
                previous = store.latest(request.label)
            snapshot = store.load(previous.run) if previous is not None else None
    except BaseException:
        store.close()
        raise
    return HistorySession(request, store, previous, snapshot)
