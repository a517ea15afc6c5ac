"""Coverage over time: every run remembered, and what changed since an earlier one.

* :mod:`coverage_core.history.snapshot` — what a run records (:class:`RunSnapshot`), from a report;
* :mod:`coverage_core.history.changes` — what changed between two runs, settings and verdict counts included
  (:func:`changes_since`); :mod:`coverage_core.history.stale` — the questions whose source document was
  removed or changed since (:func:`stale_questions`); :mod:`coverage_core.history.sources` — the documents a
  test set's source column names;
* :mod:`coverage_core.history.location` — where the history is, its labels, its redacted name;
* :mod:`coverage_core.history.store` — the history store (SQLite file or a SQLAlchemy database URL);
* :mod:`coverage_core.history.parts` — a run's parts as bytes, with the limits that keep reading a hostile file
  bounded; :mod:`coverage_core.history.encoding` — a run encoded into them, and read back before it is written;
  :mod:`coverage_core.history.reading` — a run read back from them, every value checked.

The store's names are imported on first use, so reading snapshots and comparing them never loads SQLAlchemy.
"""

from coverage_core.history.changes import Changes, DocumentChange, FigureChange, TopicChange, changes_since
from coverage_core.history.location import (
    DEFAULT_HISTORY_FILE,
    HISTORY_ENV,
    RECORD_ENV,
    default_history_target,
    redact_history_url,
)
from coverage_core.history.snapshot import (
    TOPIC_DOCUMENTS_KEPT,
    DocumentState,
    QuestionState,
    RunSnapshot,
    TopicState,
    snapshot_of,
    snapshot_of_analysis,
    topic_documents_of,
)
from coverage_core.history.stale import StaleQuestion, stale_questions

_STORE_NAMES = frozenset({"HistoryStore", "RunInfo", "open_history"})


def __getattr__(name: str):
    if name in _STORE_NAMES:
        import importlib

        return getattr(importlib.import_module("coverage_core.history.store"), name)
    raise AttributeError(f"module 'coverage_core.history' has no attribute {name!r}")


__all__ = [
    "DEFAULT_HISTORY_FILE",
    "HISTORY_ENV",
    "RECORD_ENV",
    "TOPIC_DOCUMENTS_KEPT",
    "Changes",
    "DocumentChange",
    "DocumentState",
    "FigureChange",
    "HistoryStore",
    "QuestionState",
    "RunInfo",
    "RunSnapshot",
    "StaleQuestion",
    "TopicChange",
    "TopicState",
    "changes_since",
    "default_history_target",
    "open_history",
    "redact_history_url",
    "snapshot_of",
    "snapshot_of_analysis",
    "stale_questions",
    "topic_documents_of",
]
