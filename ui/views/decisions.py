"""The suggestions table and the user's decisions about it (no Streamlit): what a saved analysis keeps, and the
table again when it is reopened.

The table is the Gap analysis page's editor (:data:`ui.views.gaps.SUGGESTION_COLUMNS`, normalised by
:func:`ui.views.gaps.normalize_suggestions`); the decisions are :class:`~coverage_core.decisions.SuggestionDecision`
objects. The rules:

* :func:`decisions_of`: every row of the table, in table order (ticked: accepted; else open; its question as
  it stands and the suggestion it was written as), then every suggestion of the gaps that the table no longer
  holds, as it stands or as it was written: the user deleted its row, so it is **rejected**;
* :func:`restore`: the table those decisions describe: every row but the rejected ones, in their order, then the
  suggestions of the gaps the decisions do not mention (none when the gaps are the ones saved), less the
  rejected ones. ``decisions_of(restore(fresh, decisions), gaps) == decisions`` for the gaps they were made from.

Texts are matched whitespace-normalised (:func:`coverage_core.decisions.same_text`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from coverage_core.decisions import ACCEPTED, OPEN, REJECTED, SuggestionDecision, base_origin
from ui.views.gaps import SUGGESTION_COLUMNS, merge_suggestions, normalize_suggestions, whole_passage


def _key(text: object) -> str:
    return " ".join(str(text or "").split())


def _cluster(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def decisions_of(table: pd.DataFrame | None, gaps: Sequence = (), chunk_texts: Sequence[str] = ()
                 ) -> list[SuggestionDecision]:
    """The decisions of a suggestions table made from ``gaps`` (``suggest.gaps.Gap``; a rejected suggestion's
    passage is taken whole from ``chunk_texts``): module docstring."""
    rows = normalize_suggestions(table) if table is not None else normalize_suggestions(pd.DataFrame())
    decisions = [
        SuggestionDecision(
            question=row["question"], origin=base_origin(row["origin"]),
            decision=ACCEPTED if row["accept"] else OPEN, original=row["original"],
            cluster=_cluster(row["cluster"]), document=row["document"], passage=row["passage"],
        )
        for row in rows.to_dict("records")
    ]
    held = {_key(text) for text in (*rows["question"], *rows["original"])} - {""}
    for gap in gaps:
        for suggestion in gap.suggestions:
            key = _key(suggestion.text)
            if key and key not in held:
                held.add(key)
                decisions.append(SuggestionDecision(
                    question=suggestion.text, origin=suggestion.origin, decision=REJECTED, original=suggestion.text,
                    cluster=int(gap.cluster), document=suggestion.document,
                    passage=whole_passage(suggestion, chunk_texts),
                ))
    return decisions


def restore(fresh: pd.DataFrame, decisions: Sequence[SuggestionDecision]) -> pd.DataFrame:
    """The suggestions table ``decisions`` describe, given the ``fresh`` table of the gaps now
    (:func:`ui.views.gaps.suggestions_frame`): module docstring."""
    kept = [d for d in decisions if d.decision != REJECTED]
    rejected = {_key(d.original or d.question) for d in decisions if d.decision == REJECTED}
    held = {_key(text) for d in kept for text in (d.question, d.original)} | rejected
    rows = [
        {"accept": d.decision == ACCEPTED, "question": d.question, "cluster": d.cluster, "origin": d.origin,
         "document": d.document, "passage": d.passage, "original": d.original}
        for d in kept
    ]
    fresh = normalize_suggestions(fresh)
    extra = fresh[~fresh["question"].map(_key).isin(held - {""})]
    if not rows:
        return normalize_suggestions(extra)
    table = pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS))
    return normalize_suggestions(pd.concat([table, extra], ignore_index=True) if len(extra) else table)


def next_table(previous: pd.DataFrame | None, fresh: pd.DataFrame,
               saved: Sequence[SuggestionDecision] | None = None) -> pd.DataFrame:
    """The suggestions table for the gaps of ``fresh`` (:func:`ui.views.gaps.suggestions_frame`): the table the
    ``saved`` decisions of a saved analysis describe (:func:`restore`), else ``previous`` merged with them
    (:func:`ui.views.gaps.merge_suggestions`)."""
    return restore(fresh, saved) if saved is not None else merge_suggestions(previous, fresh)


def origins_moved(base: pd.DataFrame | None, edited: pd.DataFrame) -> bool:
    """Whether the editor's ``edited`` output gives a suggestion an origin its ``base`` does not show (an edit
    made it "edited", or undid one): the editor must then show ``edited`` as its new base."""
    if base is None:
        return False

    def shown(frame: pd.DataFrame) -> set:
        frame = normalize_suggestions(frame)
        suggested = frame[frame["original"].map(lambda text: bool(text.strip()))]
        return set(zip(suggested["original"], suggested["origin"]))

    return not shown(edited) <= shown(base)
