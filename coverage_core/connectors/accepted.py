"""The accepted questions a connector sends to another tool, read from where the dashboard leaves them.

The dashboard's Gap analysis page holds them in its suggestions table (``ui.views.gaps.accepted_rows``); its
downloads keep them too: the JSON report's ``after_apply.accepted_questions`` (once Apply has run; each source
passage shortened, :data:`coverage_core.outputs.report.ACCEPTED_PASSAGE_CHARS`) and a saved analysis's
decisions (:mod:`coverage_core.decisions`: the whole passage). Each becomes an :class:`AcceptedQuestion`.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coverage_core.errors import InputError

__all__ = ["AcceptedQuestion", "accepted_from_records", "read_accepted"]


@dataclass(frozen=True)
class AcceptedQuestion:
    """One accepted question: its text (on one line), who wrote it (``origin``: ``"local"``, ``"llm"``,
    ``"traffic"``, ``"you"``, ``"edited:local"``…; ``""`` when unknown), and the document and passage it was
    written from (``""`` for a question without one)."""

    text: str
    origin: str = ""
    document: str = ""
    passage: str = ""


def _text(value: Any) -> str:
    """A field as text on one line; ``""`` for None or a missing value."""
    return "" if value is None or value != value else " ".join(str(value).split())  # NaN != NaN


def accepted_from_records(records: Iterable[Mapping[str, Any]]) -> list[AcceptedQuestion]:
    """:class:`AcceptedQuestion` objects from records holding the text under ``text`` or ``question`` (a report's
    entries, a suggestions-table row), with ``origin``, ``document`` and ``passage`` when they have them.

    Blank texts are dropped and a text repeated (whitespace aside) is kept once, first record first. The passage
    keeps its words, on one line.
    """
    accepted: dict[str, AcceptedQuestion] = {}
    for record in records:
        text = _text(record.get("text")) or _text(record.get("question"))
        if text and text not in accepted:
            accepted[text] = AcceptedQuestion(text, _text(record.get("origin")), _text(record.get("document")),
                                              _text(record.get("passage")))
    return list(accepted.values())


def read_accepted(source: str | Path) -> list[AcceptedQuestion]:
    """The accepted questions of a JSON report (``after_apply.accepted_questions``) or of a saved analysis (its
    folder or zip: the decisions marked accepted, each with its shown origin, ``"edited:local"`` for an edited
    one).

    Raises
    ------
    InputError
        In one sentence, when ``source`` is no report or saved analysis, or holds no accepted question.
    OSError
        When a file cannot be read.
    """
    path = Path(source)
    name = path.name or str(source)
    if path.is_dir() or (path.is_file() and zipfile.is_zipfile(path)):
        from coverage_core.decisions import ACCEPTED
        from coverage_core.saved.analysis import load_analysis

        saved = load_analysis(path)
        if saved.decisions is not None:
            records = [{"question": d.question, "origin": d.shown_origin, "document": d.document,
                        "passage": d.passage} for d in saved.decisions if d.decision == ACCEPTED]
        else:  # saved before decisions were kept: the report's list
            records = (saved.report.get("after_apply") or {}).get("accepted_questions") or []
    else:
        from coverage_core.inputs.files import DEFAULT_MAX_FILE_BYTES, check_regular_file
        from coverage_core.outputs.junit import load_report

        check_regular_file(path, "report", DEFAULT_MAX_FILE_BYTES)  # a device or FIFO would never end
        records = (load_report(path).get("after_apply") or {}).get("accepted_questions") or []
    accepted = accepted_from_records(record for record in records if isinstance(record, Mapping))
    if not accepted:
        raise InputError(f"{name} holds no accepted question; on the dashboard's Gap analysis page, tick accept on "
                         "the questions to add and click Apply, then download the report (or the whole analysis).")
    return accepted
