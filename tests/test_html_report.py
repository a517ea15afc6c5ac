"""The standalone HTML report: offline (plotly.js inline once), charts, every section, escaped text."""

from __future__ import annotations

import re
from html import escape

import numpy as np

from coverage_core.measure import measure
from coverage_core.outputs.html_report import build_html_report
from coverage_core.projection import project_2d
from coverage_core.results import EmbeddedTexts
from tests.helpers import (
    EVIL,
    LONG_PASSAGE,
    accepted_questions,
    improved_analysis,
    optional_check_results,
)


def test_report_is_one_offline_document_with_charts(analysis):
    report = build_html_report(analysis, inputs={"documents": ["alpha.txt"], "questions": "q.csv"})
    assert report.startswith("<!DOCTYPE html>") and report.rstrip().endswith("</html>")
    # plotly.js is inline exactly once, and nothing is loaded from a network.
    assert report.count("plotly.js v") == 1 or report.count("* plotly.js") == 1
    assert len(report) > 3_000_000
    assert not re.search(r"<script[^>]+src=", report)
    assert not re.search(r"<link[^>]+href=[\"']https?:", report)
    # (plotly.js itself names a CDN only as the default map-topology URL of geo charts, unused here.)
    charts = report.count("Plotly.newPlot(")
    assert charts == 4  # clusters, documents, ranked and polar fitness


def test_report_has_every_section_and_the_numbers(analysis):
    report = build_html_report(analysis)
    for heading in ("Coverage", "Clusters", "Gaps", "Documents", "Off-topic questions",
                    "Near-duplicate questions", "Knowledge-base fitness"):
        assert f"<h2>{heading}</h2>" in report
    assert f"{analysis.metrics['basic']:.3f}" in report and f"{analysis.metrics['balanced']:.3f}" in report
    assert "equals basic by construction" in report
    assert "relative, not absolute" in report
    if analysis.gaps and analysis.gaps[0].suggestions:
        assert analysis.gaps[0].suggestions[0].text.split("(")[0].strip()[:20] in report.replace("&#x27;", "'").replace("&quot;", '"')


def test_user_text_is_escaped(analysis):
    report = build_html_report(analysis, inputs={"questions": EVIL})
    assert EVIL not in report
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in report
    assert "<b>gamma</b>" not in report and "&lt;b&gt;gamma&lt;/b&gt;.md" in report
    # Inside chart JSON, Plotly escapes < and / so no text can close the script tag.
    assert "</script><script>alert" not in report


def test_map_and_before_after_sections(analysis):
    from coverage_core.editing import add_questions

    projection = project_2d(analysis.corpus.vectors, analysis.question_vectors, analysis.clustering.labels, method="pca")
    improved_questions = add_questions(analysis.questions, ["Where do comets orbit?"])
    vectors = np.vstack([analysis.question_vectors, analysis.corpus.vectors[50:51]])
    improved = measure(
        analysis.config, analysis.corpus, improved_questions,
        EmbeddedTexts(vectors, 0, len(vectors), 0), analysis.clustering,
    )
    report = build_html_report(analysis, projection=projection, improved=improved, fitness_threshold=0.3)
    assert "<h2>Map of chunks and questions</h2>" in report and "Map shows all 60 chunks." in report
    assert "<h2>Improved test set</h2>" in report and "1 question added" in report
    change = improved.metrics["basic"] - analysis.metrics["basic"]
    assert f"{change:+.3f}" in report
    assert report.count("Plotly.newPlot(") == 6
    assert "Below 0.30 the knowledge base may not answer" in report


# ---------------------------------------------------------------- after Apply, optional checks

OPTIONAL_HEADINGS = ("Improved test set", "Retrieval", "Answerability", "Sub-question coverage")


def test_optional_sections_are_absent_without_their_data(analysis):
    report = build_html_report(analysis)
    for heading in OPTIONAL_HEADINGS:
        assert f"<h2>{heading}</h2>" not in report
    assert "<h3>Accepted questions</h3>" not in report and "improved set:" not in report


def test_after_apply_lists_the_accepted_questions_escaped(analysis):
    improved = improved_analysis(analysis)
    report = build_html_report(analysis, improved=improved, accepted=accepted_questions())
    assert "<h2>Improved test set</h2>" in report and "<h3>Accepted questions</h3>" in report
    section = report[report.index("<h2>Improved test set</h2>"):]
    assert EVIL not in report and "<b>gamma</b>" not in report
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in section
    assert "Where do comets orbit?" in section and "My own question?" in section
    assert "written by the LLM" in section and "offline draft, worded by the user" in section
    assert "written by the user" in section
    assert "&lt;b&gt;gamma&lt;/b&gt;.md" in section
    # The source passage is shortened to the report's limit.
    from coverage_core.outputs.report import ACCEPTED_PASSAGE_CHARS
    from coverage_core.validation import shorten

    shown = shorten(LONG_PASSAGE, ACCEPTED_PASSAGE_CHARS)
    assert html_escape(shown) in section and html_escape(" ".join(LONG_PASSAGE.split())) not in section


def html_escape(text):
    import html

    return html.escape(text, quote=True)


def _metric_rows(report):
    """{metric label: (before, after, change)} from the before/after table."""
    section = report[report.index("<h2>Improved test set</h2>"):]
    table = section[: section.index("</table>")]
    rows = re.findall(r"<tr><td>([^<]*)</td><td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td>"
                      r"<td class=\"num\">([^<]*)</td></tr>", table)
    return {label: (before, after, change) for label, before, after, change in rows}


def test_before_after_table_holds_both_analyses_metrics(analysis):
    from coverage_core.outputs import plots
    from coverage_core.outputs.report import METRIC_NAMES
    from ui import formats

    improved = improved_analysis(analysis)
    for report in (
        build_html_report(analysis, improved=improved, accepted=accepted_questions()),
        build_html_report(improved, before=analysis, accepted=accepted_questions()),
    ):
        rows = _metric_rows(report)
        assert len(rows) == len(METRIC_NAMES)
        for name in METRIC_NAMES:
            before, after, change = rows[plots.METRIC_LABELS[name]]
            if name == "tested_share":  # a whole percent and percentage points, as the dashboard's card says it
                assert before == f"{analysis.metrics[name]:.0%}" and after == f"{improved.metrics[name]:.0%}"
                assert change == formats.share_change(analysis.metrics[name], improved.metrics[name])[1]
                assert change.endswith(" pts")
                continue
            assert before == f"{analysis.metrics[name]:.3f}" and after == f"{improved.metrics[name]:.3f}"
            assert change == f"{improved.metrics[name] - analysis.metrics[name]:+.3f}"
        assert "1 question added" in report
    seen_from_after = build_html_report(improved, before=analysis)
    assert "before Apply:" in seen_from_after and "improved set:" not in seen_from_after
    # Without the accepted list, the added question is still named.
    assert "Where do comets orbit?" in seen_from_after[seen_from_after.index("<h3>Accepted questions</h3>"):]


def test_after_apply_from_metrics_only(analysis):
    improved = improved_analysis(analysis)
    report = build_html_report(improved, before=dict(analysis.metrics), accepted=accepted_questions()[:1])
    assert "<h2>Improved test set</h2>" in report and "1 question added" in report
    assert report.count("Plotly.newPlot(") == 4  # no per-cluster chart without the analysis before


def test_retrieval_answerability_and_subquestion_sections(analysis):
    checks = optional_check_results(analysis)
    retrieval, answerability = checks["retrieval"], checks["answerability"]
    report = build_html_report(analysis, **checks)
    for heading in ("Retrieval", "Answerability", "Sub-question coverage"):
        assert f"<h2>{heading}</h2>" in report
    assert EVIL not in report and "<i>source" not in report and "<i>answerable" not in report
    assert "<b>bad</b>" not in report and "<fake-model>" not in report
    assert "&lt;i&gt;source&lt;/i&gt;" in report and "&lt;i&gt;answerable&lt;/i&gt;" in report
    assert "missing.pdf" in report  # unknown source listed
    retrieval_part = report[report.index("<h2>Retrieval</h2>"):report.index("<h2>Answerability</h2>")]
    assert f"{retrieval.mrr:.3f}" in retrieval_part and f"{retrieval.precision_at_k:.3f}" in retrieval_part
    n_failed = int((retrieval.per_question["hit_at_k"] == 0).sum())
    assert f"none of their sources ({n_failed})" in retrieval_part
    answer_part = report[report.index("<h2>Answerability</h2>"):report.index("<h2>Sub-question coverage</h2>")]
    assert f"{answerability.auroc:.3f}" in answer_part and f"{answerability.threshold:.3f}" in answer_part
    sub_part = report[report.index("<h2>Sub-question coverage</h2>"):]
    assert "&lt;fake-model&gt;" in sub_part and "1 of 2 questions" in sub_part
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in sub_part
    assert "&lt;b&gt;bad&lt;/b&gt; reply" in sub_part and "What is a comet?" in sub_part
    assert report.count("Plotly.newPlot(") == 4  # the new sections are tables, no charts


def test_the_report_leads_with_the_tested_share_sentence_and_what_tau_means(analysis):
    from coverage_core.verdicts import headline

    html = build_html_report(analysis)
    sentence = headline(analysis)
    assert "of the knowledge base is tested" in sentence
    start = html.index("<body>")
    assert html.index(escape(sentence)) < html.index("<h2>", start)  # before every section
    level = analysis.calibration.support_threshold
    # A calibrated level decides what is tested; a fallback one only which questions are off-topic.
    assert (f"at least {level:.2f}" if analysis.calibration.reliable else f"The support level {level:.2f}") in html


def test_an_unreliable_level_is_said_first_and_documents_list_the_verdicts(analysis):
    from coverage_core.verdicts import Verdicts

    assert not analysis.calibration.reliable  # the synthetic analysis is not calibrated
    html = build_html_report(analysis)
    body = html[html.index("<body>"):]
    warning = body.index('<div class="warn"><b>The support level is not calibrated.</b>')
    assert warning < body.index('<p class="headline">') < body.index("<h2>")
    assert "rests on the model&#x27;s default level 0.50, not on one measured" in body[warning:body.index("<h2>")]
    # Tested reads the ranking alone, in the headline and in the line on what tested means.
    header = body[:body.index("<h2>")]
    assert header.count("whatever the similarity") == 2 and "cosine similarity at least" not in header
    assert "still decides which questions are off-topic" in header
    documents = body[body.index("<h2>Documents</h2>"):body.index("<h2>Off-topic questions</h2>")]
    verdicts = Verdicts.from_analysis(analysis)
    assert verdicts.untested  # gamma has no question
    name = escape(verdicts.untested[0].document)
    assert f'<li><span class="flag">untested</span> {name}: no on-topic question targets its 20 passages</li>' in documents
    rows = documents[documents.index("<tbody>"):]
    assert rows.index(name) < rows.index("alpha.txt")  # untested rows first
    assert "<th>questions</th>" in documents and "<th>verdict</th>" in documents


def test_off_topic_questions_show_their_reason_and_score(analysis):
    html = build_html_report(analysis)
    section = html[html.index("<h2>Off-topic questions</h2>"):html.index("<h2>Near-duplicate questions</h2>")]
    assert "<th>reason</th><th>detail</th><th>off-topic score</th>" in section
    flagged = analysis.question_table[analysis.question_table["is_outlier"]]
    score = flagged["offtopic_score"]
    assert len(flagged) and (score > 0).all()
    assert all(f'<td class="num">{value:.3f}</td>' in section for value in score.astype(float))
    assert section.index(f"{score.max():.3f}") < section.index(f"{score.min():.3f}") or score.nunique() == 1
    assert EVIL not in section and escape(EVIL) in section


def test_charts_and_topic_table_draw_the_verdicts_cut_most_urgent_first(analysis):
    from coverage_core.outputs import plots
    from coverage_core.stages.topics import cluster_name

    report = build_html_report(analysis)
    clusters = report[report.index("<h2>Clusters</h2>"):report.index("<h2>Gaps</h2>")]
    documents = report[report.index("<h2>Documents</h2>"):report.index("<h2>Off-topic questions</h2>")]
    # The same figures as the Results page (same builders, same inputs): the cut line at the config's cut.
    cut = analysis.config.gaps.tested_share_threshold
    assert [float(x) for x in re.findall(r'"x0":([-0-9.e]+)', clusters)] == [cut]
    assert f"gap below {cut:.0%}" in clusters
    document_cut = plots.document_cut()
    assert [float(x) for x in re.findall(r'"x0":([-0-9.e]+)', documents)] == [document_cut]
    assert f"below {document_cut:.0%}" in documents
    # The topic table: tested share second, rows in the charts' order (gaps first).
    head = clusters[clusters.index("<thead>"):clusters.index("</thead>")]
    assert re.findall(r"<th>([^<]*)</th>", head)[:3] == ["cluster", "tested share", ""]
    ordered = plots.topics_by_urgency(analysis.clusters, analysis.config.gaps)
    expected = [html_escape(cluster_name(c, label)) for c, label in zip(ordered["cluster"], ordered["label"])]
    assert re.findall(r"<tr><td>([^<]*)</td>", clusters) == expected
    shares = re.findall(r'<tr><td>[^<]*</td><td class="num">([^<]*)</td>', clusters)
    assert shares == [f"{s:.0%}" for s in ordered["tested_share"]]
    n_gaps = int(analysis.clusters["is_gap"].sum())
    assert n_gaps > 0 and ordered["is_gap"].tolist() == [True] * n_gaps + [False] * (len(ordered) - n_gaps)


# ---------------------------------------------------------------- gaps with their suggestions
def _gaps_with_suggestions(analysis):
    import dataclasses

    from coverage_core.suggest.gaps import Gap
    from coverage_core.suggest.questions import Suggestion

    def asked(text, origin, kept=True, reason="", document="alpha.txt"):
        return Suggestion(cluster=0, text=text, origin=origin, document=document, passage=f"about {text}", chunk=0,
                          kept=kept, reason=reason)

    gaps = [
        Gap(0, 0.2, 20, 1 / 3, 0.9, ("comet",), (0,),
            (asked("Where do comets orbit?", "local"), asked(f"Who wrote {EVIL}?", "llm", document=EVIL)),
            dropped=(asked("Is ice cold?", "draft", kept=False, reason=f"it does not reach its passage {EVIL}"),)),
        Gap(1, 0.3, 20, 1 / 3, 0.8, ("river",), (1,), (), note=f"No question reached its passage {EVIL}."),
    ]
    return dataclasses.replace(analysis, gaps=gaps)


def _section(report, heading):
    start = report.index(f"<h3>{heading}</h3>")
    return report[start:report.index("<h3>", start + 4)]


def test_gaps_show_each_question_with_its_origin_source_and_verdict_escaped(analysis):
    from coverage_core.outputs.gap_report import SUGGESTION_ORIGIN_WORDS

    report = build_html_report(_gaps_with_suggestions(analysis))
    assert EVIL not in report
    table = _section(report, "Suggested questions")
    rows = table.split("<tr>")[2:]  # after the header row
    assert [("Where do comets orbit?" in r, "Who wrote" in r, "Is ice cold?" in r) for r in rows] == [
        (True, False, False), (False, True, False), (False, False, True)]  # kept first, then dropped
    assert escape(SUGGESTION_ORIGIN_WORDS["local"]) in rows[0] and escape(SUGGESTION_ORIGIN_WORDS["llm"]) in rows[1]
    assert escape(SUGGESTION_ORIGIN_WORDS["draft"]) in rows[2]
    assert ">kept<" in rows[0] and "alpha.txt" in rows[0]
    assert escape(f"dropped: it does not reach its passage {EVIL}") in rows[2]
    assert escape(EVIL) in rows[1]  # the source document, as text
    gap_table = report[report.index("<h2>Gaps</h2>"):report.index("<h3>Suggested questions</h3>")]
    assert "2 kept, 1 dropped" in gap_table
    assert escape(f"No question reached its passage {EVIL}.") in gap_table


def test_no_suggestions_asked_for_is_said_plainly(analysis):
    import dataclasses

    from coverage_core.suggest.gaps import GapConfig

    plain = _gaps_with_suggestions(analysis)
    silent = dataclasses.replace(plain, gaps=[dataclasses.replace(g, suggestions=(), dropped=(), note="")
                                            for g in plain.gaps],
                                 config=dataclasses.replace(plain.config, gaps=GapConfig(n_suggestions=0)))
    table = _section(build_html_report(silent), "Suggested questions")
    assert "No questions were asked for (0 suggestions per gap)." in table and "<table" not in table
