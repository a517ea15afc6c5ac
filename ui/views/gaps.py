"""The Gap analysis page's tables: ranked gaps, least-covered passages, the suggestions editor, Apply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core import pipeline
from coverage_core.results import Analysis
from coverage_core.suggest.gaps import GapConfig
from coverage_core.suggest.questions import is_unfinished_draft
from coverage_core.types import QuestionSet
from ui import formats

SUGGESTION_COLUMNS = ("accept", "question", "cluster", "origin", "document", "passage")
USER_ORIGIN = "you"
TRAFFIC_ORIGIN = "traffic"
MARKER_COLUMN = "suggested"


def topic_of(analysis: Analysis, cluster: int) -> str:
    """The cluster's topic label ("koala · marsupial · eucalyptus"), or "" before labels existed."""
    if "label" not in analysis.clusters:
        return ""
    labels = dict(zip(analysis.clusters["cluster"], analysis.clusters["label"]))
    return str(labels.get(cluster, "") or "")


def _tested_share(analysis: Analysis, cluster: int) -> float:
    if "tested_share" not in analysis.clusters:
        return float("nan")
    return float(dict(zip(analysis.clusters["cluster"], analysis.clusters["tested_share"])).get(cluster, float("nan")))


def gap_rule(gaps: GapConfig) -> str:
    """What makes a topic a gap, in words: "less than 50% of their passages tested"."""
    if gaps.rule == "coverage":
        return f"coverage score below the gap threshold ({formats.score(gaps.gap_threshold)})"
    return f"less than {gaps.tested_share_threshold:.0%} of their passages tested"


def suggestions_origin(analysis: Analysis) -> str:
    """Who wrote the gaps' suggestions, for the sentence above the gap table."""
    if any(s.origin == "llm" for gap in analysis.gaps for s in gap.suggestions):
        return "written by the LLM"
    return "offline drafts from the least-covered passages — edit them before use"


def gap_table(analysis: Analysis) -> pd.DataFrame:
    """The method's gap table: one row per gap, most urgent first."""
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        rows.append(
            {
                "rank": rank,
                "cluster": gap.cluster,
                "topic": topic_of(analysis, gap.cluster),
                "tested share": _tested_share(analysis, gap.cluster),
                "coverage": gap.coverage,
                "size": gap.size,
                "corpus share": gap.share,
                "themes": ", ".join(gap.themes),
                "suggested questions": "\n".join(s.text or s.note for s in gap.suggestions),
            }
        )
    columns = ["rank", "cluster", "topic", "tested share", "coverage", "size", "corpus share", "themes", "suggested questions"]
    return pd.DataFrame(rows, columns=columns)


def least_covered_passages(analysis: Analysis) -> pd.DataFrame:
    chunks = analysis.corpus.chunks
    rows = []
    for gap in analysis.gaps:
        for index in gap.passages:
            chunk = chunks[index]
            rows.append(
                {
                    "cluster": gap.cluster,
                    "document": chunk.document,
                    "page": chunk.page,
                    "distance to nearest question": float(analysis.min_distances[index]),
                    "passage": " ".join(chunk.text.split()),
                }
            )
    columns = ["cluster", "document", "page", "distance to nearest question", "passage"]
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------- suggestions
def suggestions_frame(analysis: Analysis) -> pd.DataFrame:
    rows = [
        {
            "accept": False,
            "question": s.text,
            "cluster": int(gap.cluster),
            "origin": s.origin,
            "document": s.document,
            "passage": s.passage,
        }
        for gap in analysis.gaps
        for s in gap.suggestions
    ]
    return normalize_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def normalize_suggestions(frame: pd.DataFrame) -> pd.DataFrame:
    """Column types the editor needs; rows the user added get origin "you"."""
    frame = frame.reindex(columns=list(SUGGESTION_COLUMNS)).copy()
    frame["accept"] = frame["accept"].map(lambda v: bool(v) if v is not None and not pd.isna(v) else False).astype(bool)
    frame["question"] = frame["question"].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame["cluster"] = pd.to_numeric(frame["cluster"], errors="coerce").astype("Int64")
    for column in ("origin", "document", "passage"):
        frame[column] = frame[column].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame.loc[frame["origin"] == "", "origin"] = USER_ORIGIN
    return frame.reset_index(drop=True)


def merge_suggestions(previous: pd.DataFrame | None, fresh: pd.DataFrame) -> pd.DataFrame:
    """New suggestions, keeping every row the user accepted or wrote before.

    Used when the gaps change (a threshold moved): rows the user accepted or
    added are kept first; the other suggestions are replaced by the new ones.
    """
    if previous is None or previous.empty:
        return normalize_suggestions(fresh)
    previous = normalize_suggestions(previous)
    fresh = normalize_suggestions(fresh)
    # Rows the user brought in (typed, or real queries added from the traffic page) outlive the gaps.
    keep = previous[previous["accept"] | previous["origin"].isin([USER_ORIGIN, TRAFFIC_ORIGIN])]
    extra = fresh[~fresh["question"].isin(set(keep["question"]))]
    return normalize_suggestions(pd.concat([keep, extra], ignore_index=True))


def traffic_suggestions_frame(result) -> pd.DataFrame:
    """The traffic comparison's suggestions (real untested queries) as rows of the suggestions editor."""
    rows = [
        {"accept": False, "question": s.text, "cluster": s.cluster if s.cluster >= 0 else None,
         "origin": s.origin, "document": s.document, "passage": s.passage}
        for s in result.suggestions
    ]
    return normalize_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def append_suggestions(previous: pd.DataFrame | None, extra: pd.DataFrame) -> pd.DataFrame:
    """``previous`` with the rows of ``extra`` whose question it does not hold yet, appended."""
    if previous is None or previous.empty:
        return normalize_suggestions(extra)
    previous = normalize_suggestions(previous)
    extra = normalize_suggestions(extra)
    new = extra[~extra["question"].isin(set(previous["question"]))]
    return normalize_suggestions(pd.concat([previous, new], ignore_index=True))


def accepted_texts(frame: pd.DataFrame | None) -> list[str]:
    """The accepted, non-blank question texts, in table order, without repeats.

    Offline drafts the user has not yet worded as questions are left out: a
    test set must not gain "Write a question answered by: …" rows.
    """
    return [text for text in _accepted(frame) if not is_unfinished_draft(text)]


def unfinished_drafts(frame: pd.DataFrame | None) -> int:
    """How many accepted rows are still offline drafts (left out of Apply and the export)."""
    return sum(is_unfinished_draft(text) for text in _accepted(frame))


def _accepted(frame: pd.DataFrame | None) -> list[str]:
    if frame is None or frame.empty:
        return []
    frame = normalize_suggestions(frame)
    texts: list[str] = []
    for text in frame.loc[frame["accept"], "question"]:
        text = " ".join(str(text).split())
        if text and text not in texts:
            texts.append(text)
    return texts


def accepted_rows(frame: pd.DataFrame | None, texts: Sequence[str]) -> tuple[dict, ...]:
    """The suggestion-table rows behind the accepted ``texts`` (:func:`accepted_texts`), one per text, in table order.

    Each is a plain dict (question on one line, origin, cluster, source
    document and passage) for the reports' list of accepted questions.
    """
    if frame is None or frame.empty:
        return ()
    wanted, rows = set(texts), {}
    for row in normalize_suggestions(frame).to_dict("records"):
        text = " ".join(str(row["question"]).split())
        if row["accept"] and text in wanted and text not in rows:
            rows[text] = {**row, "question": text}
    return tuple(rows.values())


# ---------------------------------------------------------------- Apply
@dataclass(frozen=True)
class Improvement:
    """The test set with accepted suggestions, scored on the same clusters.

    ``accepted_rows`` are the suggestion-table rows of the accepted texts
    (:func:`accepted_rows`): what the reports list with each question's
    origin and source passage.
    """

    texts: tuple[str, ...]
    questions: QuestionSet
    before: Analysis
    after: Analysis
    accepted_rows: tuple[dict, ...] = ()


def improve(
    analysis: Analysis, texts: Sequence[str], embedder, cache, overrides, rows: Sequence[dict] = ()
) -> Improvement:
    """Add ``texts`` to the questions and rescore (same clusters; only new texts are embedded)."""
    improved, after = pipeline.accept_questions(
        analysis, list(texts), embedder, cache, marker_column=MARKER_COLUMN,
        force_include=sorted(overrides.include), force_exclude=sorted(overrides.exclude),
    )
    return Improvement(tuple(texts), improved, analysis, after, tuple(rows))


def improved_questions(questions: QuestionSet, texts: Sequence[str]) -> QuestionSet:
    return pipeline.add_questions(questions, list(texts), marker_column=MARKER_COLUMN)
