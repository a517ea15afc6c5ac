"""The gaps of an analysis with their suggested questions, for the JSON report, the HTML report and the terminal.

:func:`gaps_section` is the report's ``gaps`` list (schema 6, see
:mod:`coverage_core.outputs.report`): every gap, most urgent first, with its
least-covered passages and every suggestion written for it, kept and
dropped, each saying where it came from and, when dropped, why.
:func:`gaps_from_clusters` gives an older report the same list from its
clusters; :func:`largest_gaps_lines` are the terminal summary's lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coverage_core.decisions import base_origin, is_edited_origin
from coverage_core.suggest.document_gaps import document_gap_name, gap_name
from coverage_core.suggest.questions import SUGGESTION_PASSAGE_CHARS, Suggestion
from coverage_core.validation import shorten

if TYPE_CHECKING:
    from coverage_core.results import Analysis
    from coverage_core.suggest.gaps import Gap

__all__ = [
    "EDITED_FROM_WORDS",
    "SUGGESTION_ORIGIN_WORDS",
    "first_kept",
    "gap_entry",
    "gap_label",
    "gap_note",
    "gap_tested_share",
    "gaps_from_clusters",
    "gaps_section",
    "largest_gaps_lines",
    "ordered_suggestions",
    "origin_words",
]

SUGGESTION_ORIGIN_WORDS = {
    "local": "written by the built-in model",
    "llm": "written by your LLM",
    "draft": "draft to edit",
    "you": "added by you",
    "traffic": "real query from traffic",
    "stale": "replaces a stale question",
}
"""Each suggestion ``origin`` in plain words, for every output that shows it, the dashboard's too
(:func:`origin_words`); ``you``, ``traffic`` and ``stale`` (written to replace a question whose document
changed, :mod:`coverage_core.suggest.replacements`) are the dashboard's own rows."""

# Gaps the terminal summary lists; the reports list them all.
N_SUMMARY_GAPS = 5


EDITED_FROM_WORDS = {
    "local": "built-in model",
    "llm": "your LLM",
    "draft": "draft",
    "traffic": "traffic query",
    "stale": "a replacement for a stale question",
}
"""What an edited question was edited from, for :func:`origin_words` ("edited (from built-in model)")."""


def origin_words(origin: Any) -> str:
    """A suggestion's ``origin`` in plain words (:data:`SUGGESTION_ORIGIN_WORDS`); an unknown one as it is.

    An edited question (``"edited:local"``, :func:`coverage_core.decisions.edited_origin`) is "edited (from
    built-in model)": :data:`EDITED_FROM_WORDS` of what it was edited from, else that origin's own words
    without "written by".
    """
    if is_edited_origin(origin):
        first = base_origin(origin)
        source = EDITED_FROM_WORDS.get(first) or origin_words(first).removeprefix("written by ").removeprefix("the ")
        return f"edited (from {source or 'a suggestion'})"
    return SUGGESTION_ORIGIN_WORDS.get(str(origin), str(origin or ""))


def ordered_suggestions(gap: Gap) -> list[Suggestion]:
    """Every question written for ``gap``, kept first, then dropped, each in the order it was written.

    A suggestion without text (a passage whose language has no draft
    wording) is no question, so it is left out; its note reaches
    :func:`gap_note`.
    """
    written = [s for s in (*gap.suggestions, *gap.dropped) if s.text.strip()]
    return [s for s in written if s.kept] + [s for s in written if not s.kept]


def first_kept(gap: Gap) -> Suggestion | None:
    """The first kept suggestion of ``gap`` (the one the terminal names), or None."""
    return next((s for s in ordered_suggestions(gap) if s.kept), None)


def gap_note(gap: Gap) -> str:
    """Why ``gap`` has no suggestion: its own ``note``, else its passages' notes; "" when it has a kept one."""
    if gap.note or first_kept(gap) is not None:
        return gap.note
    notes = dict.fromkeys(s.note.strip() for s in (*gap.suggestions, *gap.dropped) if s.note.strip())
    return " ".join(notes)


def _number(value: Any) -> float | None:
    """A JSON-safe float rounded as in the rest of the report; None for NaN or a missing value."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else round(value, 6)


def _suggestion_entry(suggestion: Suggestion) -> dict:
    return {
        "question": " ".join(suggestion.text.split()),
        "origin": suggestion.origin,
        "document": suggestion.document,
        "passage": suggestion.passage,
        "chunk": None if suggestion.chunk is None else int(suggestion.chunk),
        "kept": bool(suggestion.kept),
        "reason": "" if suggestion.kept else suggestion.reason,
    }


def gap_entry(gap: Gap, rank: int, label: str, tested_share: Any, chunks: Sequence) -> dict:
    """One entry of the report's ``gaps`` list; ``chunks`` are the corpus's chunks, indexed by chunk number."""
    return {
        "rank": rank,
        "cluster": int(gap.cluster),
        "document": gap.document or None,
        "untested_documents": list(gap.untested),
        "label": label,
        "tested_share": _number(tested_share),
        "coverage": _number(gap.coverage),
        "size": int(gap.size),
        "themes": list(gap.themes),
        "least_covered_passages": [
            {"chunk": int(index), "document": chunks[index].document,
             "text": shorten(chunks[index].text, SUGGESTION_PASSAGE_CHARS, at_word=True)}
            for index in gap.passages
        ],
        "note": gap_note(gap),
        "suggestions": [_suggestion_entry(s) for s in ordered_suggestions(gap)],
    }


def _cluster_column(analysis: Analysis, column: str, cluster: int, default: Any) -> Any:
    """The value of ``column`` for ``cluster`` in the analysis's cluster table, or ``default``."""
    table = analysis.clusters
    if column not in table or "cluster" not in table:
        return default
    rows = table.loc[table["cluster"] == cluster, column]
    return rows.iloc[0] if len(rows) else default


def gap_label(analysis: Analysis, gap: Gap) -> str:
    """A gap's label: its topic's (``clusters[].label``), or a document gap's :func:`document_gap_name`."""
    label = str(_cluster_column(analysis, "label", gap.cluster, "") or "")
    return document_gap_name(gap.document, label) if gap.document else label


def gap_tested_share(analysis: Analysis, gap: Gap) -> Any:
    """The tested share of a gap's topic, or of a document gap's document (None when the table lacks it)."""
    if not gap.document:
        return _cluster_column(analysis, "tested_share", gap.cluster, None)
    table = analysis.documents
    rows = table.loc[table["document"] == gap.document, "tested_share"] if "tested_share" in table else ()
    return rows.iloc[0] if len(rows) else None


def gaps_section(analysis: Analysis) -> list[dict]:
    """The report's ``gaps``: :func:`gap_entry` for every gap, most urgent first (rank 1 first)."""
    chunks = analysis.corpus.chunks
    return [gap_entry(gap, rank, gap_label(analysis, gap), gap_tested_share(analysis, gap), chunks)
            for rank, gap in enumerate(analysis.gaps, start=1)]


def gaps_from_clusters(clusters: Any) -> list[dict]:
    """The ``gaps`` list of a report older than schema 6, from its clusters' ``gap_rank`` and suggested questions.

    Those reports kept neither the least-covered passages nor dropped
    questions: ``least_covered_passages`` is empty, every suggestion is
    kept, and its ``chunk`` is null.
    """
    if not isinstance(clusters, list):
        return []
    ranked = [c for c in clusters if isinstance(c, Mapping) and isinstance(c.get("gap_rank"), int)]
    return [
        {
            "rank": cluster["gap_rank"], "cluster": cluster.get("id"), "label": str(cluster.get("label") or ""),
            "tested_share": cluster.get("tested_share"), "coverage": cluster.get("coverage"),
            "size": cluster.get("size"), "themes": list(cluster.get("themes") or []),
            "least_covered_passages": [], "note": "",
            "suggestions": [
                {"question": str(s.get("text") or ""), "origin": s.get("origin"), "document": s.get("document") or "",
                 "passage": s.get("passage") or "", "chunk": None, "kept": True, "reason": ""}
                for s in cluster.get("suggested_questions") or [] if isinstance(s, Mapping)
            ],
        }
        for cluster in sorted(ranked, key=lambda c: c["gap_rank"])
    ]


def largest_gaps_lines(analysis: Analysis, n: int = N_SUMMARY_GAPS) -> list[str]:
    """The terminal summary's "Largest gaps": each of the first ``n`` gaps with its themes and first kept question
    (and one for each untested document a topic gap carries).

    A gap without a kept question says why instead (its note), or that none
    was asked for.
    """
    if not analysis.gaps:
        return []
    lines = ["", "Largest gaps"]
    for rank, gap in enumerate(analysis.gaps[:n], start=1):
        label = _cluster_column(analysis, "label", gap.cluster, "")
        name = gap_name(gap.cluster, gap.document, label)
        lines.append(f"  {rank}. {name} (coverage {gap.coverage:.3f}): {', '.join(gap.themes)}")
        kept = first_kept(gap)
        if kept is not None:
            source = f"; from {kept.document}" if kept.document else ""
            lines.append(f"     suggested ({origin_words(kept.origin)}{source}): {' '.join(kept.text.split())}")
            for document in gap.untested:  # each untested document the gap carries, with its own suggestion
                own = next((s for s in ordered_suggestions(gap) if s.kept and s.document == document), None)
                if document != gap.document and own is not None and own is not kept:
                    lines.append(f"     for the untested {document} ({origin_words(own.origin)}): "
                                 f"{' '.join(own.text.split())}")
        elif analysis.config.gaps.n_suggestions == 0:
            lines.append("     no suggestions asked for")
        else:
            lines.append(f"     no suggestion: {gap_note(gap) or 'none was written'}")
    return lines
