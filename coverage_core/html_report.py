"""A standalone HTML report of an analysis, with its charts.

One file, no network: plotly.js is embedded inline once (about 4.5 MB) and
every chart reuses it, so the report opens offline and can be mailed or
archived. All user text (file names, questions, passages, themes) is
HTML-escaped; chart data is serialised by Plotly as JSON with ``<``, ``>``
and ``/`` escaped, so no text can close a script tag.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core import plots
from coverage_core.topics import cluster_name
from coverage_core.report import METRIC_NAMES

if TYPE_CHECKING:
    from coverage_core.pipeline import Analysis
    from coverage_core.projection import Projection

__all__ = ["build_html_report", "METRIC_NOTES"]

# Near-duplicate groups shown, largest first, and member rows listed per group:
# a page someone reads, not a data dump (the JSON report has every group).
MAX_DUPLICATE_GROUPS = 200
MAX_ROWS_PER_GROUP = 50

METRIC_NOTES = {
    "tested_share": "Share of passages some question reaches (similarity ≥ the calibrated support threshold).",
    "basic": "1 − mean distance from each chunk to its nearest test question.",
    "weighted": "Size-weighted per-cluster coverage, as the method defines it; equals basic by construction.",
    "balanced": "Mean of per-cluster coverages: every topic weighs the same.",
    "multi_threshold": "A question covers every cluster whose centre is within the multi-cluster threshold.",
    "multi_n": "Each question covers its N nearest clusters.",
}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1f2328; line-height: 1.45; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
.muted { color: #666; font-size: .92rem; }
table { border-collapse: collapse; width: 100%; margin: .6rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.cards { display: flex; flex-wrap: wrap; gap: .8rem; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: .5rem; padding: .6rem .9rem; min-width: 10rem; flex: 1; }
.card .value { font-size: 1.7rem; font-weight: 600; } .card .delta { color: #1a7f37; }
.card .delta.neg { color: #cf222e; }
.warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: .4rem; padding: .4rem .7rem; margin: .3rem 0; }
.flag { color: #cf222e; font-weight: 600; }
"""


def _e(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return html.escape(str(value), quote=True)


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return _e(value)
    if np.isnan(number):
        return "—"
    return f"{number:.{digits}f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for position, cell in enumerate(row):
            if position in numeric:
                cells.append(f'<td class="num">{cell}</td>')
            else:
                cells.append(f"<td>{cell}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="muted">none</td></tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class _Figures:
    """Turns figures into HTML; the first one carries plotly.js inline."""

    def __init__(self) -> None:
        self.first = True
        self.count = 0

    def __call__(self, fig: go.Figure) -> str:
        include = self.first  # plotly.js inline, once: the report works offline
        self.first = False
        self.count += 1
        return fig.to_html(
            include_plotlyjs=include,
            full_html=False,
            div_id=f"figure-{self.count}",
            config={"displaylogo": False, "responsive": True},
        )


def _shorten(text: Any, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def build_html_report(
    analysis: "Analysis",
    *,
    title: str = "RAG test-set coverage report",
    inputs: Mapping[str, Any] | None = None,
    projection: "Projection | None" = None,
    improved: "Analysis | None" = None,
    fitness_threshold: float = 0.4,
    generated: _dt.datetime | None = None,
) -> str:
    """The report as one HTML document (a str).

    Parameters
    ----------
    analysis : the analysis (with ``gaps`` found, for the gap section)
    inputs : file names for the header, e.g. ``{"documents": [...], "questions": "q.csv"}``
    projection : the 2-D map, if it was computed (drawn only if given)
    improved : the same corpus and clusters scored with an improved question
        set (``pipeline.rescore``); adds a before → after section
    fitness_threshold : best-similarity below which a question is marked
        "the knowledge base may not answer this"
    """
    figure = _Figures()
    generated = generated or _dt.datetime.now().replace(microsecond=0)
    parts: list[str] = []
    corpus = analysis.corpus
    n_outliers = int(np.asarray(analysis.is_outlier).sum())

    parts.append(f"<h1>{_e(title)}</h1>")
    parts.append(
        f'<p class="muted">Generated {_e(generated.isoformat(sep=" "))}. '
        f"{len(corpus.documents)} documents, {len(corpus.chunks):,} chunks in {analysis.clustering.n_clusters} "
        f"clusters; {len(analysis.questions.questions):,} questions, {n_outliers} screened out as off-topic.</p>"
    )
    if inputs:
        items = []
        for key, value in inputs.items():
            shown = ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
            items.append(f"<li><b>{_e(key)}</b>: {_e(shown)}</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    config = analysis.config
    embedding = config.embedding
    parts.append(
        '<p class="muted">Settings: embedding '
        f"{_e(embedding.provider)} {_e(embedding.model or '(default model)')}, chunks of "
        f"{config.chunking.chunk_size} characters ({config.chunking.chunk_overlap} overlap), "
        f"K = {analysis.clustering.n_clusters}{' (automatic)' if config.n_clusters is None else ''}, "
        f"multi-cluster threshold {config.multi_threshold}, N = {config.multi_n}, "
        f"gap threshold {config.gaps.gap_threshold}.</p>"
    )

    # ---------------------------------------------------------------- metrics
    parts.append("<h2>Coverage</h2>")
    parts.append(
        "<p>Scores are <b>relative, not absolute</b>: they depend on the model and the chunking. Compare "
        "test sets (or versions of one) on the same corpus and settings.</p>"
    )
    cards = []
    for name in METRIC_NAMES:
        value = analysis.metrics[name]
        delta = ""
        if improved is not None:
            change = improved.metrics[name] - value
            delta = f'<div class="delta{" neg" if change < 0 else ""}">improved set: {improved.metrics[name]:.3f} ({change:+.3f})</div>'
        cards.append(
            f'<div class="card"><div>{_e(plots.METRIC_LABELS.get(name, name))}</div><div class="value">{value:.3f}</div>'
            f'{delta}<div class="muted">{_e(METRIC_NOTES.get(name, ""))}</div></div>'
        )
    parts.append('<div class="cards">' + "".join(cards) + "</div>")
    if analysis.warnings:
        parts.append("<h3>Warnings</h3>")
        parts.extend(f'<div class="warn">{_e(w)}</div>' for w in dict.fromkeys(analysis.warnings))

    # ---------------------------------------------------------------- clusters
    parts.append("<h2>Clusters</h2>")
    parts.append(figure(plots.cluster_coverage_bar(analysis.clusters, config.gaps.gap_threshold)))
    labels = dict(zip(analysis.clusters["cluster"], analysis.clusters["label"])) if "label" in analysis.clusters else {}
    rows = []
    for row in analysis.clusters.sort_values("coverage").itertuples(index=False):
        example = row.representative_chunks[0] if len(row.representative_chunks) else ""
        rows.append(
            [
                _e(cluster_name(row.cluster, getattr(row, "label", ""))), _e(int(row.size)), f"{row.share:.1%}", _num(row.coverage),
                _num(row.multi_threshold_coverage), _num(row.multi_n_coverage), _e(int(row.n_questions)),
                '<span class="flag">gap</span>' if row.is_gap else "", _e(_shorten(example, 200)),
            ]
        )
    parts.append(
        _table(
            ["cluster", "chunks", "share", "coverage", "multi-threshold", "multi-N", "questions", "", "most central passage"],
            rows, numeric=(1, 2, 3, 4, 5, 6),
        )
    )

    # ---------------------------------------------------------------- gaps
    parts.append("<h2>Gaps</h2>")
    if not analysis.gaps:
        parts.append(f"<p>No cluster has coverage below the gap threshold ({config.gaps.gap_threshold}).</p>")
    else:
        parts.append(
            "<p>Clusters below the gap threshold, most urgent first (priority = 0.7 × (1 − coverage) + "
            "0.3 × share). Suggested questions marked <i>draft</i> were templated offline and need editing.</p>"
        )
        rows = []
        for rank, gap in enumerate(analysis.gaps, start=1):
            suggestions = "<br>".join(
                f"{_e(s.text)} <span class='muted'>({_e(s.origin)}{', ' + _e(s.document) if s.document else ''})</span>"
                for s in gap.suggestions
            )
            rows.append(
                [_e(rank), _e(cluster_name(gap.cluster, labels.get(gap.cluster, ""))), _num(gap.coverage), _e(gap.size), f"{gap.share:.1%}",
                 _e(", ".join(gap.themes)), suggestions]
            )
        parts.append(
            _table(["rank", "cluster", "coverage", "size", "corpus share", "themes", "suggested questions"], rows,
                   numeric=(0, 2, 3, 4))
        )
        rows = []
        for gap in analysis.gaps:
            for index in gap.passages:
                chunk = corpus.chunks[index]
                rows.append(
                    [_e(cluster_name(gap.cluster, labels.get(gap.cluster, ""))), _e(chunk.document), _e(chunk.page or ""),
                     _num(analysis.min_distances[index]), _e(_shorten(chunk.text, 500))]
                )
        parts.append("<h3>Least-covered passages</h3>")
        parts.append(_table(["cluster", "document", "page", "distance to nearest question", "passage"], rows, numeric=(3,)))

    # ---------------------------------------------------------------- documents
    parts.append("<h2>Documents</h2>")
    parts.append(figure(plots.document_coverage_bar(analysis.documents)))
    rows = [
        [_e(row.document), _e(int(row.n_chunks)), _num(row.coverage),
         '<span class="flag">untested or possibly misaligned</span>' if row.is_low else ""]
        for row in analysis.documents.sort_values("coverage").itertuples(index=False)
    ]
    parts.append(_table(["document", "chunks", "coverage", ""], rows, numeric=(1, 2)))

    # ---------------------------------------------------------------- questions
    table = analysis.question_table
    parts.append("<h2>Off-topic questions</h2>")
    outliers = table[table["is_outlier"].astype(bool)].sort_values("outlier_score", ascending=False)
    parts.append(
        _table(
            ["row", "question", "outlier score", "nearest document"],
            ([_e(int(r.row)), _e(r.text), _num(r.outlier_score), _e(r.nearest_document)] for r in outliers.itertuples(index=False)),
            numeric=(0, 2),
        )
    )
    parts.append("<h2>Near-duplicate questions</h2>")
    groups = analysis.duplicate_table()
    threshold = analysis.config.redundancy_threshold
    parts.append(
        f"<p>{int(groups['n_questions'].sum())} questions form {len(groups)} group(s): every question of a group "
        f"has similarity ≥ {threshold:.2f} to the group's first question, its representative, so the others add "
        "next to no coverage.</p>"
        if len(groups)
        else f"<p>No near-duplicate questions (similarity ≥ {threshold:.2f}).</p>"
    )
    if len(groups) > MAX_DUPLICATE_GROUPS:
        parts.append(
            f'<p class="muted">The {MAX_DUPLICATE_GROUPS} largest groups of {len(groups)}; '
            "the JSON report lists them all.</p>"
        )

    def _other_rows(rows: list[int]) -> str:
        more = f" … and {len(rows) - MAX_ROWS_PER_GROUP} more" if len(rows) > MAX_ROWS_PER_GROUP else ""
        return _e(", ".join(map(str, rows[:MAX_ROWS_PER_GROUP])) + more)

    parts.append(
        _table(
            ["representative row", "representative question", "questions", "other rows", "lowest similarity"],
            (
                [_e(g.row), _e(g.question), _e(g.n_questions), _other_rows(g.other_rows), _num(g.min_similarity)]
                for g in groups.head(MAX_DUPLICATE_GROUPS).itertuples(index=False)
            ),
            numeric=(0, 2, 4),
        )
    )

    # ---------------------------------------------------------------- fitness
    parts.append("<h2>Knowledge-base fitness</h2>")
    parts.append(
        "<p>Each question's best similarity to any chunk: how well the knowledge base supports it. "
        f"Below {fitness_threshold:.2f} the knowledge base may not answer the question.</p>"
    )
    fitness = pd.DataFrame(
        {
            "row": table["row"], "text": table["text"], "max_similarity": table["max_similarity"],
            "nearest_document": table["nearest_document"], "cluster": table["cluster"],
        }
    )
    parts.append(figure(plots.similarity_ranked(fitness, fitness_threshold)))
    parts.append(figure(plots.similarity_polar(fitness, fitness_threshold)))
    weak = table[table["max_similarity"] < fitness_threshold].sort_values("max_similarity")
    parts.append(
        _table(
            ["row", "question", "best similarity", "nearest document", "nearest passage"],
            (
                [_e(int(r.row)), _e(r.text), _num(r.max_similarity), _e(r.nearest_document), _e(_shorten(r.nearest_passage, 200))]
                for r in weak.itertuples(index=False)
            ),
            numeric=(0, 2),
        )
    )

    # ---------------------------------------------------------------- map
    if projection is not None:
        parts.append("<h2>Map of chunks and questions</h2>")
        chunks, question_points = plots.map_frames(analysis, projection)
        parts.append(figure(plots.coverage_map(chunks, question_points, analysis.metrics)))
        parts.append(f'<p class="muted">{_e(projection.caption)}</p>')

    # ---------------------------------------------------------------- before / after
    if improved is not None:
        added = len(improved.questions.questions) - len(analysis.questions.questions)
        parts.append("<h2>Improved test set</h2>")
        parts.append(f"<p>{added} question(s) added, scored on the same clusters.</p>")
        parts.append(
            _table(
                ["metric", "before", "after", "change"],
                (
                    [_e(plots.METRIC_LABELS[n]), _num(analysis.metrics[n]), _num(improved.metrics[n]),
                     f"{improved.metrics[n] - analysis.metrics[n]:+.3f}"]
                    for n in METRIC_NAMES
                ),
                numeric=(1, 2, 3),
            )
        )
        parts.append(figure(plots.before_after_clusters(analysis.clusters, improved.clusters)))

    body = "\n".join(parts)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )
