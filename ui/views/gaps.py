"""The Gap analysis page's tables: ranked gaps, least-covered passages, the suggestions editor, Apply."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coverage_core import editing
from coverage_core.checks.retrieval_labels import find_relevant_column
from coverage_core.decisions import base_origin, edited_origin, same_text
from coverage_core.errors import CoverageError
from coverage_core.history.stale import ReplacementTarget, changed_passages
from coverage_core.outputs.gap_report import gap_tested_share
from coverage_core.results import Analysis
from coverage_core.suggest.document_gaps import document_gap_name, gap_key
from coverage_core.suggest.gaps import GapConfig
from coverage_core.suggest.questions import is_unfinished_draft
from coverage_core.suggest.replacements import REPLACES_STALE
from coverage_core.types import QuestionSet
from ui import formats

SUGGESTION_COLUMNS = ("accept", "question", "cluster", "origin", "document", "passage", "original")
"""The suggestions table's columns; ``original`` (hidden in the editor) is the suggestion's text as it was written,
"" for a row the user added: a row whose question differs from it is edited (:mod:`coverage_core.decisions`)."""
USER_ORIGIN = "you"
TRAFFIC_ORIGIN = "traffic"
ORIGIN_OPTIONS = (*formats.ORIGIN_WORDS, *(edited_origin(o) for o in formats.ORIGIN_WORDS if o != USER_ORIGIN))
"""Every origin the editor's origin column may show: the suggestions' own, and each edited from one."""
MARKER_COLUMN = "suggested"
SOURCE_COLUMN = "source_document"
"""The column the improved CSV names an added question's source document in when the file has no source column
of its own; one of the names the retrieval check recognises (``RELEVANT_COLUMN_NAMES``)."""
PASSAGE_COLUMN = "source_passage"
"""The column the improved CSV gives an added question's source passage in (the whole passage, on one line)."""


def topic_of(analysis: Analysis, cluster: int) -> str:
    """The cluster's topic label ("koala · marsupial · eucalyptus"), or "" before labels existed."""
    if "label" not in analysis.clusters:
        return ""
    labels = dict(zip(analysis.clusters["cluster"], analysis.clusters["label"]))
    return str(labels.get(cluster, "") or "")


def gap_title(analysis: Analysis, gap) -> str:
    """A gap's name: its topic label ("cluster 6" without one), or a document gap's
    (:func:`~coverage_core.suggest.document_gaps.document_gap_name`: the document and its topic)."""
    if gap.document:
        return document_gap_name(gap.document, topic_of(analysis, gap.cluster))
    return topic_of(analysis, gap.cluster) or f"cluster {gap.cluster}"


def _tested_share(analysis: Analysis, gap) -> float:
    """The tested share of the gap's topic, or of a document gap's document (NaN when not known)."""
    share = gap_tested_share(analysis, gap)
    return float("nan") if share is None else float(share)


def gap_rule(gaps: GapConfig) -> str:
    """What makes a topic a gap, in words: "less than 50% of their passages tested"."""
    if gaps.rule == "coverage":
        return f"coverage score below the gap threshold ({formats.score(gaps.gap_threshold)})"
    return f"less than {gaps.tested_share_threshold:.0%} of their passages tested"


def suggestions_origin(analysis: Analysis) -> str:
    """Who wrote the gaps' suggestions, for the sentence above the gap table."""
    origins = {s.origin for gap in analysis.gaps for s in gap.suggestions if s.text}
    written = [formats.origin_words(origin) for origin in ("llm", "local") if origin in origins]
    if not written:
        return "offline drafts from the least-covered passages — edit them before use"
    sentence = " or ".join(written)
    if "draft" in origins:
        sentence += ", and drafts to edit where no written question passed the check"
    return sentence


def gaps_left_to_write(analysis: Analysis) -> int:
    """How many gaps hold drafts only while the bundled model could write for them (it wrote for others)."""
    config = analysis.config.gaps
    written = [gap.written for gap in analysis.gaps]
    if not (config.local_model and config.n_suggestions and any(written)):
        return 0
    return written.count(False)


def why_no_suggestion(gap) -> str:
    """Why ``gap`` has no suggestion, in one plain sentence: the core's note, else what the suggestions say."""
    if gap.note:
        return gap.note
    notes = [s.note for s in gap.suggestions if s.note]
    if notes:
        return notes[0]
    if gap.dropped:
        reasons = list(dict.fromkeys(s.reason for s in gap.dropped if s.reason))
        return (f"Every question written for this topic was dropped ({'; '.join(reasons)})." if reasons
                else "Every question written for this topic was dropped.")
    return "No question could be written for this topic."


@dataclass(frozen=True)
class GapCard:
    """One gap as the Gap analysis page lists it: what it is, its suggestions, the questions dropped, or why none.

    ``suggestions`` are (question, who wrote it in words, source document); ``dropped`` are (question, why);
    ``note`` is "" when there are suggestions, else why there are none (:func:`why_no_suggestion`).
    ``title`` and ``summary`` hold user text (a topic label, a document's name): escape them before showing them as Markdown.
    ``key`` names the gap in a Results link and its expander
    (:func:`~coverage_core.suggest.document_gaps.gap_key`); ``untested`` the untested documents it holds.
    """

    rank: int
    cluster: int
    title: str
    summary: str
    themes: tuple[str, ...]
    suggestions: tuple[tuple[str, str, str], ...]
    dropped: tuple[tuple[str, str], ...]
    note: str
    key: str = ""
    untested: tuple[str, ...] = ()


def gap_cards(analysis: Analysis) -> list[GapCard]:
    """Every gap of ``analysis``, most urgent first, as a :class:`GapCard`."""
    cards = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        written = tuple((s.text, formats.origin_words(s.origin), s.document) for s in gap.suggestions if s.text)
        share = _tested_share(analysis, gap)
        tested = f"{share:.0%} of {formats.count(gap.size, 'passage')} tested" if np.isfinite(share) else (
            formats.count(gap.size, "passage"))
        offered = formats.count(len(written), "suggestion") if written else "no suggestion"
        carried = [d for d in gap.untested if d != gap.document]
        holds = f" · holds the untested {', '.join(carried)}" if carried else ""
        cards.append(GapCard(
            rank=rank, cluster=int(gap.cluster), title=gap_title(analysis, gap),
            summary=f"{tested} · {offered}{holds}", themes=tuple(gap.themes), suggestions=written,
            dropped=tuple((s.text, s.reason or "it did not pass the check") for s in gap.dropped),
            note="" if written else why_no_suggestion(gap), key=gap_key(gap.cluster, gap.document),
            untested=tuple(gap.untested),
        ))
    return cards


def focused_gap(analysis: Analysis, value: object) -> str | None:
    """The key of the gap ``value`` (a Results link's query parameter: :func:`~coverage_core.suggest.document_gaps.gap_key`)
    names, if it is one of ``analysis``'s gaps."""
    wanted = str(value).strip()
    return wanted if any(gap_key(gap.cluster, gap.document) == wanted for gap in analysis.gaps) else None


def gap_outlook(analysis: Analysis, key: object) -> str | None:
    """What the Gap analysis page offers for the gap of ``key`` (its cluster for a topic gap,
    :func:`~coverage_core.suggest.document_gaps.gap_key`) of ``analysis`` (its gaps found): how many
    suggestions, or why there are none; None when it is not one of the gaps."""
    for card in gap_cards(analysis):
        if card.key == str(key):
            if card.suggestions:
                return f"{formats.count(len(card.suggestions), 'suggested question')} ready."
            return card.note
    return None


def gap_table(analysis: Analysis) -> pd.DataFrame:
    """The method's gap table: one row per gap, most urgent first."""
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        rows.append(
            {
                "rank": rank,
                "cluster": gap.cluster,
                "topic": gap_title(analysis, gap) if gap.document else topic_of(analysis, gap.cluster),
                "tested share": _tested_share(analysis, gap),
                "coverage": gap.coverage,
                "size": gap.size,
                "corpus share": gap.share,
                "themes": ", ".join(gap.themes),
                "suggested questions": "\n".join(s.text for s in gap.suggestions if s.text) or why_no_suggestion(gap),
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
def whole_passage(suggestion, chunk_texts: Sequence[str] = ()) -> str:
    """A suggestion's source passage whole: its chunk's text when ``chunk_texts`` hold it (a ``Suggestion`` keeps
    its passage shortened), else the passage it keeps."""
    chunk = getattr(suggestion, "chunk", None)
    if chunk is not None and 0 <= int(chunk) < len(chunk_texts):
        return str(chunk_texts[int(chunk)])
    return suggestion.passage


def suggestions_frame(analysis: Analysis) -> pd.DataFrame:
    """The gaps' suggestions as rows of the suggestions editor, each with its whole source passage."""
    chunk_texts = [chunk.text for chunk in analysis.corpus.chunks]
    rows = [
        {
            "accept": False,
            "question": s.text,
            "cluster": int(gap.cluster),
            "origin": s.origin,
            "document": s.document,
            "passage": whole_passage(s, chunk_texts),
            "original": s.text,
        }
        for gap in analysis.gaps
        for s in gap.suggestions
    ]
    return normalize_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA else str(value)


def normalize_suggestions(frame: pd.DataFrame) -> pd.DataFrame:
    """Column types the editor needs; rows the user added get origin "you"; a suggestion whose question differs
    from its ``original`` gets the edited origin ("edited:local"), and its own back when the text is restored."""
    frame = frame.reindex(columns=list(SUGGESTION_COLUMNS)).copy()
    frame["accept"] = frame["accept"].map(lambda v: bool(v) if v is not None and not pd.isna(v) else False).astype(bool)
    frame["question"] = frame["question"].map(_text)
    frame["cluster"] = pd.to_numeric(frame["cluster"], errors="coerce").astype("Int64")
    for column in ("origin", "document", "passage", "original"):
        frame[column] = frame[column].map(_text)
    frame.loc[frame["origin"] == "", "origin"] = USER_ORIGIN
    suggested = frame["original"].map(lambda text: bool(text.strip())).astype(bool)
    edited = suggested & ~pd.Series([same_text(q, o) for q, o in zip(frame["question"], frame["original"])],
                                    index=frame.index, dtype=bool)
    frame.loc[edited, "origin"] = frame.loc[edited, "origin"].map(edited_origin)
    frame.loc[suggested & ~edited, "origin"] = frame.loc[suggested & ~edited, "origin"].map(base_origin)
    return frame.reset_index(drop=True)


def is_edited(frame: pd.DataFrame) -> pd.Series:
    """Which rows of a normalised suggestions table hold a suggestion the user rewrote."""
    return frame["origin"].map(lambda origin: origin != base_origin(origin)).astype(bool)


def merge_suggestions(previous: pd.DataFrame | None, fresh: pd.DataFrame) -> pd.DataFrame:
    """New suggestions, keeping every row the user accepted, edited or wrote before.

    Used when the gaps change (a threshold moved): rows the user accepted,
    rewrote or added are kept first; the other suggestions are replaced by
    the new ones, less those the kept rows already hold (as they stand or
    as they were written).
    """
    if previous is None or previous.empty:
        return normalize_suggestions(fresh)
    previous = normalize_suggestions(previous)
    fresh = normalize_suggestions(fresh)
    # Rows the user brought in (typed, or real queries added from the traffic page) outlive the gaps.
    keep = previous[previous["accept"] | is_edited(previous)
                    | previous["origin"].isin([USER_ORIGIN, TRAFFIC_ORIGIN, REPLACES_STALE])]
    held = (set(keep["question"]) | set(keep["original"])) - {""}
    extra = fresh[~fresh["question"].isin(held)]
    return normalize_suggestions(pd.concat([keep, extra], ignore_index=True))


def traffic_suggestions_frame(result, chunk_texts: Sequence[str] = ()) -> pd.DataFrame:
    """The traffic comparison's suggestions (real untested queries) as rows of the suggestions editor.

    Each row is in the topic (cluster) of the passage that answers it, that passage whole when ``chunk_texts``
    (the analysis's chunks) hold it; a query no passage answers has no topic and its passage cell says so
    (the core's note, "no answer in the documents"): a gap in the documents, not in the test set."""
    rows = [
        {"accept": False, "question": s.text, "cluster": s.cluster if s.cluster >= 0 and not s.note else None,
         "origin": s.origin, "document": s.document,
         "passage": (whole_passage(s, chunk_texts) if s.passage else "") or s.note, "original": s.text}
        for s in result.suggestions
    ]
    return normalize_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def replacement_passages(target: ReplacementTarget | None, analysis: Analysis) -> list[int]:
    """The chunks of ``analysis`` a replacement question can be written for: the passages of the History page's
    stale questions' changed documents that are new since the earlier run ([] without a comparison)."""
    if target is None:
        return []
    corpus = analysis.corpus
    return changed_passages(target, [chunk.text for chunk in corpus.chunks], corpus.chunk_documents)


def replacement_frame(suggestions, chunk_texts: Sequence[str] = ()) -> pd.DataFrame:
    """Replacement questions for stale ones (origin ``stale``) as rows of the suggestions editor, each in its
    passage's topic with that passage whole."""
    rows = [{"accept": False, "question": s.text, "cluster": s.cluster, "origin": s.origin, "document": s.document,
             "passage": whole_passage(s, chunk_texts), "original": s.text} for s in suggestions]
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
    document and passage) for the reports' list of accepted questions; an
    edited suggestion's origin is the edited one ("edited:local").
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
    analysis: Analysis, texts: Sequence[str], embedder, cache, overrides, rows: Sequence[dict] = (),
    relevant_column: str | None = None,
) -> Improvement:
    """Add ``texts`` to the questions and rescore (same clusters; only new texts are embedded).

    The improved question set names each added question's source (:func:`with_sources`).
    """
    improved, after = editing.accept_questions(
        analysis, list(texts), embedder, cache, marker_column=MARKER_COLUMN,
        force_include=sorted(overrides.include), force_exclude=sorted(overrides.exclude),
    )
    improved = with_sources(improved, len(analysis.questions.frame), rows,
                            source_column(analysis.questions, relevant_column))
    return Improvement(tuple(texts), improved, analysis, after, tuple(rows))


def source_column(questions: QuestionSet, relevant_column: str | None = None) -> str | None:
    """The user's own column for relevant sources (the one chosen, else one named like it, as the retrieval check
    finds it), or None when the file has none."""
    columns = [str(column) for column in questions.frame.columns]
    try:
        found = find_relevant_column(columns, relevant_column or None)
    except CoverageError:  # a chosen column this file does not have
        found = find_relevant_column(columns)
    return None if found == questions.question_column else found


def with_sources(
    improved: QuestionSet, start: int, rows: Iterable[Mapping], column: str | None = None
) -> QuestionSet:
    """``improved`` with each added row (from file row ``start`` on) naming the source of its question.

    ``rows`` are the accepted suggestion-table rows (:func:`accepted_rows`); a row's ``document`` goes into
    ``column`` (the user's source column, :func:`source_column`) or, when there is none, into a new
    :data:`SOURCE_COLUMN`, and its ``passage`` into :data:`PASSAGE_COLUMN`. Rows without a source (typed by the
    user) stay blank; when no added row has a source the set is returned as it is, with no new column.
    """
    by_text = {" ".join(str(row.get("question", "")).split()): row for row in rows}
    frame = improved.frame
    sourced = [
        (index, by_text[text]) for index, text in zip(frame.index[start:], frame[improved.question_column].iloc[start:])
        if str(by_text.get(text, {}).get("document") or "").strip()
    ]
    if not sourced:
        return improved
    frame = frame.copy()
    column = column or SOURCE_COLUMN
    for name in (column, PASSAGE_COLUMN):
        if name not in frame.columns:
            frame[name] = ""
    for index, row in sourced:
        frame.loc[index, column] = str(row["document"])
        frame.loc[index, PASSAGE_COLUMN] = " ".join(str(row.get("passage") or "").split())
    return dataclasses.replace(improved, frame=frame)


def improved_questions(
    questions: QuestionSet, texts: Sequence[str], rows: Iterable[Mapping] = (), relevant_column: str | None = None
) -> QuestionSet:
    """``questions`` with ``texts`` appended and marked; with ``rows`` (:func:`accepted_rows`), each added
    question's source document and passage too (:func:`with_sources`)."""
    improved = editing.add_questions(questions, list(texts), marker_column=MARKER_COLUMN)
    return with_sources(improved, len(questions.frame), rows, source_column(questions, relevant_column))
