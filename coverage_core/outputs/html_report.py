"""A standalone HTML report of an analysis, with its charts.

One file, no network: plotly.js is embedded inline once (about 4.5 MB) and
every chart reuses it, so the report opens offline and can be mailed or
archived. All user text (file names, questions, passages, themes) is
HTML-escaped; chart data is serialised by Plotly as JSON with ``<``, ``>``
and ``/`` escaped, so no text can close a script tag.

:func:`build_html_report` is a sequence of sections, one function each:
header, coverage cards, warnings, clusters, gaps (with every question
written for them, kept or dropped and why), documents, off-topic
questions, near-duplicates, fitness, and, when their data is given, the map,
retrieval, answerability, sub-question coverage, what changed since an
earlier run of the history, and the test set before and after Apply (metrics side by side and the accepted questions with their
origin and source passage), as in the JSON report.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from coverage_core import wording
from coverage_core.checks.answerability import DEFAULT_FITNESS_THRESHOLD, MEASURE_NAMES
from coverage_core.outputs import plots
from coverage_core.outputs.gap_report import (
    SUGGESTION_ORIGIN_WORDS,
    gap_note,
    gap_tested_share,
    ordered_suggestions,
    origin_words,
)
from coverage_core.outputs.plots.style import percent_points
from coverage_core.outputs.report import (
    METRIC_NAMES,
    RELATIVE_METRIC_NAMES,
    UNDERTESTED,
    UNTESTED,
    ApplyPair,
    accepted_question_entries,
    apply_pair,
    calibration_warning,
    document_findings,
    offtopic_reason_words,
)
from coverage_core.outputs.since_report import html_section as since_section
from coverage_core.stages.topics import cluster_name
from coverage_core.suggest.document_gaps import gap_name
from coverage_core.validation import shorten
from coverage_core.verdicts import Verdicts, ranking_only_sentence

if TYPE_CHECKING:
    from coverage_core.checks.answerability import AnswerabilityResult
    from coverage_core.checks.answerability_labels import QuestionLabels
    from coverage_core.checks.retrieval import RetrievalResult
    from coverage_core.checks.subquestions import SubQuestionResult
    from coverage_core.projection import Projection
    from coverage_core.results import Analysis
    from coverage_core.suggest.questions import Suggestion

__all__ = ["build_html_report", "METRIC_NOTES"]

# Near-duplicate groups shown, largest first, and member rows listed per group:
# a page someone reads, not a data dump (the JSON report has every group).
MAX_DUPLICATE_GROUPS = 200
MAX_ROWS_PER_GROUP = 50
# Failed retrieval questions and sub-question rows listed (the JSON report has them all).
MAX_LISTED = 500

METRIC_NOTES = {
    "tested_share": "Share of passages an on-topic question retrieves among its top k (at similarity ≥ the support "
                    "level when it is calibrated).",
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
.headline { font-size: 1.25rem; font-weight: 600; margin: .6rem 0; }
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


def build_html_report(
    analysis: "Analysis",
    *,
    title: str = "RAG test-set coverage report",
    inputs: Mapping[str, Any] | None = None,
    projection: "Projection | None" = None,
    improved: "Analysis | None" = None,
    fitness_threshold: float = DEFAULT_FITNESS_THRESHOLD,
    generated: _dt.datetime | None = None,
    before: "Analysis | Mapping[str, float] | None" = None,
    accepted: "Sequence[Suggestion | Mapping[str, Any]] | None" = None,
    retrieval: "RetrievalResult | None" = None,
    answerability: "AnswerabilityResult | None" = None,
    labels: "QuestionLabels | None" = None,
    subquestions: "SubQuestionResult | None" = None,
    since: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML document (a str).

    Parameters
    ----------
    analysis : the analysis (with ``gaps`` found, for the gap section)
    inputs : file names for the header, e.g. ``{"documents": [...], "questions": "q.csv"}``
    projection : the 2-D map, if it was computed (drawn only if given)
    improved : the same corpus and clusters scored with an improved question
        set (``editing.rescore`` / ``editing.accept_questions``), when
        ``analysis`` is the one before; adds a before → after section
    before : the analysis (or its metrics) before Apply, when ``analysis`` is
        the one after; give ``improved`` or ``before``, not both
    accepted : the accepted questions (``questions.Suggestion`` objects or mappings,
        as for :func:`coverage_core.outputs.report.build_report`), listed with their
        origin and source passage in the before → after section
    fitness_threshold : best-similarity below which a question is marked
        "the knowledge base may not answer this"
    retrieval, answerability (with its ``labels``), subquestions : the optional
        checks, as for :func:`coverage_core.outputs.report.build_report`; each adds its
        section when given
    since : the JSON report's ``since`` section (what changed since an earlier run of the
        history); adds "What changed since run N" after the warnings
    """
    figure = _Figures()
    pair = apply_pair(analysis, improved, before)
    if pair is None and accepted:
        raise ValueError("Accepted questions need the analysis before (before) or after (improved) Apply.")
    parts = [
        _header(analysis, title, inputs, generated or _dt.datetime.now().replace(microsecond=0)),
        _coverage_section(analysis, pair),
        _warnings_section(analysis),
        since_section(since),
        _clusters_section(analysis, figure),
        _gaps_section(analysis),
        _documents_section(analysis, figure),
        _off_topic_section(analysis),
        _duplicates_section(analysis),
        _fitness_section(analysis, figure, fitness_threshold),
        _map_section(analysis, figure, projection),
        _retrieval_section(retrieval),
        _answerability_section(answerability, labels),
        _subquestions_section(subquestions),
        _after_apply_section(pair, accepted, figure),
    ]
    return _page(title, "\n".join(part for part in parts if part))


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _cluster_labels(analysis: "Analysis") -> dict:
    clusters = analysis.clusters
    return dict(zip(clusters["cluster"], clusters["label"])) if "label" in clusters else {}


# ---------------------------------------------------------------- header and metrics
def _header(analysis: "Analysis", title: str, inputs: Mapping[str, Any] | None, generated: _dt.datetime) -> str:
    corpus = analysis.corpus
    verdicts = Verdicts.from_analysis(analysis)
    warning = calibration_warning(analysis)
    parts = [
        f"<h1>{_e(title)}</h1>",
        f'<div class="warn"><b>The support level is not calibrated.</b> {_e(warning)}</div>' if warning else "",
        f'<p class="headline">{_e(verdicts.headline)}</p>',
        f'<p class="muted">{_tested_meaning(analysis)}{_question_level(analysis)}</p>',
        f'<p class="muted">Generated {_e(generated.isoformat(sep=" "))}. '
        f"{len(corpus.documents)} documents, {len(corpus.chunks):,} chunks in {analysis.clustering.n_clusters} "
        f"clusters; {len(analysis.questions.questions):,} questions, {verdicts.n_off_topic} screened out as "
        "off-topic.</p>",
    ]
    if inputs:
        items = []
        for key, value in inputs.items():
            shown = ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
            items.append(f"<li><b>{_e(key)}</b>: {_e(shown)}</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    parts.append(_settings(analysis))
    return "\n".join(part for part in parts if part)


def _tested_meaning(analysis: "Analysis") -> str:
    """What *tested* means here, escaped: at τ, or by the ranking alone when τ is not calibrated."""
    support_threshold = analysis.calibration.support_threshold
    if not analysis.calibration.reliable:
        return (f"{_e(ranking_only_sentence(analysis.config.tested_k))} The support level {support_threshold:.2f}, "
                f"{_e(_support_origin(analysis))}, still decides which questions are off-topic.")
    return (f"A passage is tested when an on-topic question retrieves it among its top {analysis.config.tested_k} "
            f"passages with cosine similarity at least {support_threshold:.2f}, the support level "
            f"{_e(_support_origin(analysis))}.")


def _question_level(analysis: "Analysis") -> str:
    if analysis.calibration.method != "pseudo-queries":  # only calibration finds a question level of its own
        return ""
    level = analysis.calibration.question_support_threshold
    return (f" A question counts as on-topic from similarity {level:.2f}, the question support level: "
            "it tells a passage's own sentences from other topics', where the support level tells them from "
            "other documents'.")


def _support_origin(analysis: "Analysis") -> str:
    method = analysis.calibration.method
    if method == "pseudo-queries":
        return "calibrated on these documents for this embedding model"
    if method == "override":
        return "set by the user"
    if not analysis.calibration.reliable:
        return "the embedding model's default: it could not be calibrated on these documents"
    return "by default (" + method.removeprefix("default: ") + ")"


def _settings(analysis: "Analysis") -> str:
    config = analysis.config
    embedding = config.embedding
    return (
        '<p class="muted">Settings: embedding '
        f"{_e(embedding.provider)} {_e(embedding.model or '(default model)')}, chunks of "
        f"{config.chunking.chunk_size} characters ({config.chunking.chunk_overlap} overlap), "
        f"K = {analysis.clustering.n_clusters}{' (automatic)' if config.n_clusters is None else ''} topics. "
        f"Gap rule: {_e(gap_rule_words(config.gaps))}. For the relative scores: the nearby-topic score counts a "
        f"question for a topic within distance {config.multi_threshold:g} of its centre, the nearest-topics score "
        f"for its {config.multi_n} closest topics.</p>"
    )


def gap_rule_words(gaps) -> str:
    """The gap rule in force, in the words the dashboard's Gap analysis page uses: "a topic is a gap when less
    than 50% of its passages are tested" (or its coverage score is below the threshold, under rule "coverage")."""
    if gaps.rule == "coverage":
        return f"a topic is a gap when its coverage score (relative) is below {gaps.gap_threshold:.2f}"
    return f"a topic is a gap when less than {gaps.tested_share_threshold:.0%} of its passages are tested"


def _coverage_section(analysis: "Analysis", pair: ApplyPair | None) -> str:
    """The tested share (a whole percent, its change in percentage points, as the dashboard shows it, and its
    ceiling when too few questions can test every passage), then the relative scores, set apart for method experts."""
    verdicts = Verdicts.from_analysis(analysis, top=0)

    def card(name: str) -> str:
        value = _metric(name, analysis.metrics[name])
        ceiling = (f'<div title="{_e(verdicts.ceiling_detail)}">{_e(verdicts.ceiling)}</div>'
                   if name == "tested_share" and verdicts.ceiling else "")
        return (f'<div class="card"><div>{_e(plots.METRIC_LABELS.get(name, name))}</div><div class="value">{value}</div>'
                f'{_card_delta(analysis, pair, name)}{ceiling}<div class="muted">{_e(METRIC_NOTES.get(name, ""))}</div></div>')

    return (
        "<h2>Coverage</h2>\n"
        '<div class="cards">' + card("tested_share") + "</div>\n"
        "<h3>Scores for method experts</h3>\n"
        "<p>These scores are <b>relative, not absolute</b>: they depend on the model and the chunking. Compare "
        "test sets (or versions of one) on the same corpus and settings.</p>\n"
        '<div class="cards">' + "".join(card(name) for name in RELATIVE_METRIC_NAMES) + "</div>"
    )


def _metric(name: str, value: float) -> str:
    """A metric as the dashboard shows it: the tested share in whole percent, a relative score to three decimals."""
    return f"{float(value):.0%}" if name == "tested_share" else f"{float(value):.3f}"


def _metric_change(name: str, before: float, after: float) -> str:
    """A metric's change: percentage points for the tested share (``percent_points``, the dashboard's), else
    the difference of the scores as shown."""
    if name == "tested_share":
        return percent_points(before, after)[1]
    difference = round(round(float(after), 3) - round(float(before), 3), 3) + 0.0
    return f"{difference:+.3f}" if difference else "no change"


def _card_delta(analysis: "Analysis", pair: ApplyPair | None, name: str) -> str:
    """The other side of Apply on a metric card: the improved set's value, or the value before Apply."""
    if pair is None:
        return ""
    before, after = float(pair.before_metrics[name]), float(pair.after_metrics[name])
    change = _metric_change(name, before, after)
    if pair.before is analysis:
        shown = f"improved set: {_metric(name, after)} ({change})"
    else:
        shown = f"before Apply: {_metric(name, before)} (change {change})"
    return f'<div class="delta{" neg" if change.startswith("-") else ""}">{shown}</div>'


def _warnings_section(analysis: "Analysis") -> str:
    if not analysis.warnings:
        return ""
    return "<h3>Warnings</h3>\n" + "\n".join(f'<div class="warn">{_e(w)}</div>' for w in dict.fromkeys(analysis.warnings))


# ---------------------------------------------------------------- clusters and gaps
def _clusters_section(analysis: "Analysis", figure: _Figures) -> str:
    """The per-topic chart and table, both most urgent first (``plots.topics_by_urgency``), tested share early."""
    rows = []
    for row in plots.topics_by_urgency(analysis.clusters, analysis.config.gaps).itertuples(index=False):
        example = row.representative_chunks[0] if len(row.representative_chunks) else ""
        rows.append(
            [
                _e(cluster_name(row.cluster, getattr(row, "label", ""))), _share(row.tested_share),
                '<span class="flag">gap</span>' if row.is_gap else "", _e(int(row.n_tested)), _e(int(row.size)),
                _share(row.share), _num(row.coverage), _num(row.multi_threshold_coverage),
                _num(row.multi_n_coverage), _e(int(row.n_questions)), _e(shorten(example, 200)),
            ]
        )
    return "\n".join(
        [
            "<h2>Clusters</h2>",
            figure(plots.topic_verdict_bar(analysis.clusters, analysis.config.gaps)),
            _table(
                ["cluster", "tested share", "", "passages tested", "passages", "share of corpus", "coverage (relative)",
                 plots.METRIC_LABELS["multi_threshold"], plots.METRIC_LABELS["multi_n"],
                 "on-topic questions closest to it", "most central passage"],
                rows, numeric=(1, 3, 4, 5, 6, 7, 8, 9),
            ),
        ]
    )


def _share(value: Any) -> str:
    return "—" if value is None or not np.isfinite(float(value)) else f"{float(value):.0%}"


def _gaps_section(analysis: "Analysis") -> str:
    weight = analysis.config.gaps.size_weight
    if not analysis.gaps:
        return (
            "<h2>Gaps</h2>\n"
            "<p>No gap: no topic meets the gap rule and no document is untested.</p>"
        )
    return "\n".join(
        [
            "<h2>Gaps</h2>",
            f"<p>Topics that meet the gap rule ({_e(gap_rule_words(analysis.config.gaps))}), and untested documents "
            "whose topic is not one, ranked by how far their passages lie from the nearest question, weighing in "
            f"their size (for method experts: priority = {1 - weight:g} × (1 − coverage) + {weight:g} × share, an "
            "untested document counting as coverage 0). A gap that holds an untested document has a question from "
            "it. Questions marked as offline drafts were templated from the passages and need rewording.</p>",
            _gap_table(analysis),
            "<h3>Suggested questions</h3>",
            "<p>Kept questions first; a dropped one failed the check a question must pass to be kept, "
            "and says why.</p>",
            _suggestions_table(analysis),
            "<h3>Least-covered passages</h3>",
            _least_covered_table(analysis),
        ]
    )


def _gap_table(analysis: "Analysis") -> str:
    """One row per gap: its figures, themes, and how many questions were kept and dropped, or why there are none."""
    labels = _cluster_labels(analysis)
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        written = ordered_suggestions(gap)
        n_kept = sum(s.kept for s in written)
        counted = f"{n_kept} kept, {len(written) - n_kept} dropped" if written else ""
        rows.append(
            [_e(rank), _e(gap_name(gap.cluster, gap.document, labels.get(gap.cluster, ""))),
             _share(gap_tested_share(analysis, gap)), _e(gap.size), _share(gap.share),
             _e(", ".join(gap.themes)), _e(counted or gap_note(gap) or "none written")]
        )
    return _table(
        ["rank", "gap", "tested share", "passages", "share of corpus", "themes", "suggested questions"], rows,
        numeric=(0, 2, 3, 4),
    )


def _suggestions_table(analysis: "Analysis") -> str:
    """Every question written for a gap, kept first: where it came from, its source, and why a dropped one was."""
    labels = _cluster_labels(analysis)
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        for suggestion in ordered_suggestions(gap):
            verdict = "kept" if suggestion.kept else f"dropped: {suggestion.reason or 'no reason given'}"
            rows.append(
                [_e(f"{rank}. {gap_name(gap.cluster, gap.document, labels.get(gap.cluster, ''))}"), _e(suggestion.text),
                 _e(origin_words(suggestion.origin)), _e(suggestion.document), _e(suggestion.passage),
                 f'<span class="flag">{_e(verdict)}</span>' if not suggestion.kept else _e(verdict)]
            )
    if not rows:
        if analysis.config.gaps.n_suggestions == 0:
            return "<p>No questions were asked for (0 suggestions per gap).</p>"
        return "<p>No question could be written for these gaps; the table above says why.</p>"
    return _table(["gap", "question", "origin", "source document", "source passage", "kept or dropped"], rows)


def _least_covered_table(analysis: "Analysis") -> str:
    labels = _cluster_labels(analysis)
    rows = []
    for gap in analysis.gaps:
        for index in gap.passages:
            chunk = analysis.corpus.chunks[index]
            rows.append(
                [_e(gap_name(gap.cluster, gap.document, labels.get(gap.cluster, ""))), _e(chunk.document), _e(chunk.page or ""),
                 _num(analysis.min_distances[index]), _e(shorten(chunk.text, 500))]
            )
    return _table(["gap", "document", "page", "distance to nearest question", "passage"], rows, numeric=(3,))


# ---------------------------------------------------------------- documents and questions
def _documents_section(analysis: "Analysis", figure: _Figures) -> str:
    """The untested documents, then the under-tested ones, with their numbers; then every document."""
    findings = document_findings(analysis)
    verdict = {f.document: f.verdict for f in findings}
    named = [
        f'<li><span class="flag">{_e(f.verdict)}</span> {_e(f.document)}: {_e(f.words)}</li>' for f in findings
    ]
    order = {UNTESTED: 0, UNDERTESTED: 1}
    documents = analysis.documents.assign(
        _order=[order.get(verdict.get(name), 2) for name in analysis.documents["document"]]
    ).sort_values(["_order", "tested_share", "document"])
    rows = [
        [_e(row.document), _e(int(row.n_chunks)), _e(int(row.n_questions)),
         _e(int(row.n_tested)), _share(row.tested_share), _num(row.coverage),
         f'<span class="flag">{_e(verdict[row.document])}</span>' if row.document in verdict
         else ("covered far less than the others" if row.is_low else "")]
        for row in documents.itertuples(index=False)
    ]
    return "\n".join(
        [
            "<h2>Documents</h2>",
            "<p>Untested: no on-topic question targets the document. Under-tested: questions target it, but "
            "too small a share of its passages is tested.</p>",
            "<ul>" + "".join(named) + "</ul>" if named else "<p>Every document is tested.</p>",
            figure(plots.document_verdict_bar(analysis.documents)),
            _table(["document", "passages", "questions", "passages tested", "tested share", "coverage (relative)",
                    "verdict"],
                   rows, numeric=(1, 2, 3, 4, 5)),
        ]
    )


def _off_topic_section(analysis: "Analysis") -> str:
    """The flagged questions, highest off-topic score first, each with its reason in words and the numbers."""
    table = analysis.question_table
    outliers = table[table["is_outlier"].astype(bool)].sort_values("offtopic_score", ascending=False)
    return "<h2>Off-topic questions</h2>\n" + _table(
        ["row", "question", "reason", "detail", "off-topic score", "nearest document"],
        (
            [_e(int(r.row)), _e(r.text), _e(offtopic_reason_words(r.offtopic_reason)), _e(r.offtopic_detail),
             _num(r.offtopic_score), _e(r.nearest_document)]
            for r in outliers.itertuples(index=False)
        ),
        numeric=(0, 4),
    )


def _duplicates_section(analysis: "Analysis") -> str:
    groups = analysis.duplicate_table()
    threshold = analysis.duplicate_groups.threshold
    parts = [
        "<h2>Near-duplicate questions</h2>",
        f"<p>{wording.count(int(groups['n_questions'].sum()), 'question')} form {wording.count(len(groups), 'group')}: every question of a group "
        f"has similarity ≥ {threshold:.3g} to the group's first question, its representative, so the others add "
        "next to no coverage.</p>"
        if len(groups)
        else f"<p>No near-duplicate questions (similarity ≥ {threshold:.2f}).</p>",
    ]
    if len(groups) > MAX_DUPLICATE_GROUPS:
        parts.append(
            f'<p class="muted">The {MAX_DUPLICATE_GROUPS} largest groups of {len(groups)}; '
            "the JSON report lists them all.</p>"
        )
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
    return "\n".join(parts)


def _other_rows(rows: list[int]) -> str:
    more = f" … and {len(rows) - MAX_ROWS_PER_GROUP} more" if len(rows) > MAX_ROWS_PER_GROUP else ""
    return _e(", ".join(map(str, rows[:MAX_ROWS_PER_GROUP])) + more)


def _fitness_section(analysis: "Analysis", figure: _Figures, threshold: float) -> str:
    table = analysis.question_table
    fitness = pd.DataFrame(
        {
            "row": table["row"], "text": table["text"], "max_similarity": table["max_similarity"],
            "nearest_document": table["nearest_document"], "cluster": table["cluster"],
        }
    )
    weak = table[table["max_similarity"] < threshold].sort_values("max_similarity")
    return "\n".join(
        [
            "<h2>Knowledge-base fitness</h2>",
            "<p>Each question's best similarity to any chunk: how well the knowledge base supports it. "
            f"Below {threshold:.2f} the knowledge base may not answer the question.</p>",
            figure(plots.similarity_ranked(fitness, threshold, labels=analysis.clusters)),
            figure(plots.similarity_polar(fitness, threshold, labels=analysis.clusters)),
            _table(
                ["row", "question", "best similarity", "nearest document", "nearest passage"],
                (
                    [_e(int(r.row)), _e(r.text), _num(r.max_similarity), _e(r.nearest_document),
                     _e(shorten(r.nearest_passage, 200))]
                    for r in weak.itertuples(index=False)
                ),
                numeric=(0, 2),
            ),
        ]
    )


def _map_section(analysis: "Analysis", figure: _Figures, projection: "Projection | None") -> str:
    if projection is None:
        return ""
    chunks, question_points = plots.map_frames(analysis, projection)
    return "\n".join(
        [
            "<h2>Map of chunks and questions</h2>",
            figure(plots.coverage_map(chunks, question_points, analysis.metrics)),
            f'<p class="muted">{_e(projection.caption)}</p>',
        ]
    )


# ---------------------------------------------------------------- optional checks
def _retrieval_section(retrieval: "RetrievalResult | None") -> str:
    """Retrieval at k (from a source column): the four means, unknown sources, the failed questions."""
    if retrieval is None:
        return ""
    column = retrieval.relevant_column
    parts = [
        "<h2>Retrieval</h2>",
        f"<p>Each question retrieves its {int(retrieval.k)} most similar chunks. "
        f"{wording.count(int(retrieval.n_labelled), 'question')} {wording.plural(int(retrieval.n_labelled), 'names its', 'name their')} sources{' in column ' + _quoted(column) if column else ''}; "
        f"{int(retrieval.n_unlabelled):,} {wording.plural(int(retrieval.n_unlabelled), 'does not and is', 'do not and are')} left out.</p>",
        _table(
            ["metric", "value"],
            ([_e(label), _num(getattr(retrieval, name))] for name, label in _RETRIEVAL_METRICS),
            numeric=(1,),
        ),
    ]
    if retrieval.unknown_sources:
        parts.append(
            "<p>Sources named in the labels but not in the corpus (they count against recall): "
            f"{_e(', '.join(str(s) for s in retrieval.unknown_sources))}.</p>"
        )
    per_question = retrieval.per_question
    failed = per_question[per_question["hit_at_k"] == 0] if len(per_question) else per_question
    parts.append(f"<h3>Questions that retrieved none of their sources ({len(failed)})</h3>")
    if len(failed) > MAX_LISTED:
        parts.append(f'<p class="muted">The first {MAX_LISTED} of {len(failed)}; the JSON report lists them all.</p>')
    parts.append(
        _table(
            ["row", "question", "expected sources", "retrieved (in rank order)"],
            (
                [_e(int(r.row)), _e(getattr(r, "question", None) or ""), _e(" | ".join(map(str, r.relevant))),
                 _e(", ".join(map(str, r.retrieved)))]
                for r in failed.head(MAX_LISTED).itertuples(index=False)
            ),
            numeric=(0,),
        )
    )
    return "\n".join(parts)


_RETRIEVAL_METRICS = (
    ("precision_at_k", "precision@k"), ("recall_at_k", "recall@k"), ("hit_at_k", "hit@k"), ("mrr", "MRR"),
)


def _quoted(text: Any) -> str:
    return f"“{_e(text)}”"


def _answerability_section(answerability: "AnswerabilityResult | None", labels: "QuestionLabels | None") -> str:
    """How well the best similarity predicts the answerability labels."""
    if answerability is None:
        return ""
    column = getattr(labels, "column", None)
    p_value = answerability.p_value
    shown_p = "—" if p_value is None or not np.isfinite(p_value) else f"{p_value:.2g}"
    parts = [
        "<h2>Answerability</h2>",
        f"<p>How well each question's best similarity to any chunk predicts its label"
        f"{' in column ' + _quoted(column) if column else ''}: {int(answerability.n_labelled)} labelled questions, "
        f"{int(answerability.n_answerable)} answerable and {int(answerability.n_unanswerable)} not.</p>",
        _table(
            ["measure", "value"],
            [
                [MEASURE_NAMES["point_biserial_r"], _num(answerability.point_biserial_r)],
                ["p-value", _e(shown_p)],
                [MEASURE_NAMES["auroc"], _num(answerability.auroc)],
                [MEASURE_NAMES["threshold"], _num(answerability.threshold)],
                ["sensitivity at that threshold", _num(answerability.sensitivity)],
                ["specificity at that threshold", _num(answerability.specificity)],
            ],
            numeric=(1,),
        ),
    ]
    if answerability.note:
        parts.append(f'<div class="warn">{_e(answerability.note)}</div>')
    return "\n".join(parts)


def _subquestions_section(result: "SubQuestionResult | None") -> str:
    """Sub-question coverage: the settings, the share supported per type, and each question's sub-questions."""
    if result is None:
        return ""
    config = result.config
    weights = ", ".join(f"{kind} {weight:g}" for kind, weight in config.weights.items())
    parts = [
        "<h2>Sub-question coverage</h2>",
        f"<p>{result.count('ok')} of {wording.count(len(result.questions), 'question')} broken into sub-questions"
        f"{' by ' + _e(result.model) if result.model else ''} ({result.count('failed')} failed, "
        f"{result.count('skipped')} not sent). A sub-question is supported when a chunk is at least "
        f"{config.support_threshold:g} similar to it; supported by retrieval when one of the {config.top_k} chunks "
        f"retrieved for the original question is. Scores use {_e(config.headline_support.replace('_', ' '))} "
        f"support; weights {_e(weights)} (our assumption).</p>",
        f"<p>Mean share of core sub-questions supported: <b>{_num(result.mean_core_supported_share())}</b>; "
        f"mean weighted score: <b>{_num(result.mean_weighted_score())}</b>.</p>",
        _table(
            ["type", "sub-questions", "supported", "supported by retrieval"],
            ([_e(t.type), _e(t.n), _num(t.share), _num(t.share_by_retrieved)] for t in result.by_type),
            numeric=(1, 2, 3),
        ),
        _table(
            ["row", "question", "core supported", "weighted score", "unsupported core sub-questions", "sub-questions"],
            (_subquestion_row(q) for q in result.questions[:MAX_LISTED]),
            numeric=(0, 2, 3),
        ),
    ]
    if len(result.questions) > MAX_LISTED:
        parts.append(f'<p class="muted">The first {MAX_LISTED} of {len(result.questions)} questions; '
                     "the JSON report lists them all.</p>")
    parts.extend(f'<div class="warn">{_e(w)}</div>' for w in dict.fromkeys(result.warnings))
    return "\n".join(parts)


def _subquestion_row(question) -> list[str]:
    if question.status != "ok":
        status = "failed" if question.status == "failed" else "not sent"
        detail = f'<span class="flag">{status}</span> {_e(question.reason)}'
        return [_e(question.row), _e(question.question), "", "", "", detail]
    subs = "<br>".join(
        f"{_e(s.type)}: {_e(s.text)} <span class='muted'>({_num(s.best_similarity)}; "
        f"{'supported' if s.supported else 'not supported'}"
        f"{', retrieved' if s.supported_by_retrieved else ''})</span>"
        for s in question.sub_questions
    )
    unsupported = "<br>".join(_e(text) for text in question.unsupported_core)
    return [_e(question.row), _e(question.question), _num(question.core_supported_share),
            _num(question.weighted_score), unsupported, subs]


# ---------------------------------------------------------------- before / after Apply
ORIGIN_LABELS = {
    "local": SUGGESTION_ORIGIN_WORDS["local"],
    "llm": "written by the LLM",
    "draft": "offline draft, worded by the user",
    "you": "written by the user",
}


def _after_apply_section(
    pair: ApplyPair | None, accepted: "Sequence[Suggestion | Mapping[str, Any]] | None", figure: _Figures
) -> str:
    """The test set before and after Apply: metrics side by side, per-cluster chart, the accepted questions."""
    if pair is None:
        return ""
    entries = accepted_question_entries(accepted, pair.added_texts)
    if pair.before is not None and pair.after is not None:
        added = len(pair.after.questions.questions) - len(pair.before.questions.questions)
    else:
        added = len(entries)
    parts = [
        "<h2>Improved test set</h2>",
        f"<p>{wording.count(added, 'question')} added, scored on the same clusters.</p>",
        _table(
            ["metric", "before", "after", "change"],
            (
                [_e(plots.METRIC_LABELS[n]), _metric(n, pair.before_metrics[n]), _metric(n, pair.after_metrics[n]),
                 _e(_metric_change(n, pair.before_metrics[n], pair.after_metrics[n]))]
                for n in METRIC_NAMES
            ),
            numeric=(1, 2, 3),
        ),
    ]
    if pair.before is not None and pair.after is not None:
        parts.append(figure(plots.before_after_clusters(pair.before.clusters, pair.after.clusters)))
    parts.append("<h3>Accepted questions</h3>")
    parts.append(
        _table(
            ["question", "origin", "gap cluster", "source document", "source passage"],
            (
                [_e(q["text"]), _e(ORIGIN_LABELS.get(q["origin"]) or origin_words(q["origin"])), _e(q["cluster"]) or "—",
                 _e(q["document"]), _e(q["passage"])]
                for q in entries
            ),
            numeric=(2,),
        )
    )
    return "\n".join(parts)
