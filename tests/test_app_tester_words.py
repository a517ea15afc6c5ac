"""What a tester walking the dashboard at 1280 px reads (issue 47: words, figures and noise), through AppTest.

Words: no method jargon outside the one expander for method experts; the statistics of the labels only in
the label analysis. Figures: the questions of a topic counted once, 0% bars drawn, headers whole, one
rounding, the order the figures show, the HTML report in the page's units and rule, traffic topics named as
Results names them, a dash for a missing value. Noise: the saved analysis's notice said once and only when
keys were forgotten; the calibration said once, the headline short.

The real-data tests share a small slice embedded once with the bundled model (``seeded``); the others run
the synthetic analysis of conftest.py, shown by patching ``flow.require_analysis``.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from coverage_core.outputs import plots
from coverage_core.verdicts import Verdicts
from tests.app_support import example_run, run_page, show_results_tab, shown, texts
from ui import columns, engine, formats, state
from ui.views import results as results_view

RESULTS = "pages/3_results.py"
GAPS = "pages/4_gaps.py"
FITNESS = "pages/5_fitness.py"
CONFIGURE = "pages/2_configure.py"
TRAFFIC = "pages/9_traffic.py"

JARGON = ("multi-threshold", "multi-N", "cosine distance", "always equals basic", "because the method defines it",
          "priority =", "(= basic)", "--")
STATISTICS = ("AUROC", "Youden", "point-biserial", "Point-biserial", "Spearman")


@pytest.fixture(scope="module")
def seeded(module_cache_dir):
    """The Drum/Flute/Koala slice with the Drum/Flute/Zebra questions, embedded once; K = 4."""
    values, analysis, _, embedder, cache = example_run(state.Settings(n_clusters=4), module_cache_dir)
    return values, analysis, embedder, cache


def _showing(analysis, monkeypatch, page: str, values: dict | None = None, gapped=None):
    """``page`` showing ``analysis`` (its gaps as found: nothing is written)."""
    from ui import flow

    monkeypatch.setattr(flow, "require_analysis", lambda: analysis)
    monkeypatch.setattr(flow, "gaps_for", lambda *args, **kwargs: gapped if gapped is not None else analysis)
    return run_page(page, values)


def _words(at) -> str:
    """Every text a page shows outside the experts' expander: markdown, captions, alerts, headings, widget
    labels and help, table headers."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader", "header", "title"):
        parts += [shown(e.value) for e in at.get(kind) if not _in_experts(at, e)]
    for kind in ("slider", "radio", "toggle", "selectbox", "button", "checkbox"):
        for widget in at.get(kind):
            if not _in_experts(at, widget):
                parts += [shown(str(widget.label)), str(getattr(widget, "help", "") or "")]
    parts += [shown(e.label) for e in at.expander]
    for frame in at.dataframe:
        if _in_experts(at, frame):
            continue
        config = json.loads(frame.proto.columns or "{}")
        parts += [str(c.get("label") or "") + " " + str(c.get("help") or "") for c in config.values()]
    return " ".join(parts)


def _frame(at, column: str):
    """The table that has ``column``."""
    return next(frame for frame in at.dataframe if column in frame.value.columns)


def _experts(at) -> list:
    return [e for e in at.expander if shown(e.label).startswith(engine.EXPERTS)]


def _in_experts(at, element) -> bool:
    """Whether ``element`` is drawn inside an expander for method experts."""
    for expander in _experts(at):
        if _contains(expander, element):
            return True
    return False


def _contains(block, element) -> bool:
    for child in getattr(block, "children", {}).values():
        if child is element or _contains(child, element):
            return True
    return False


# ---------------------------------------------------------------- words


@pytest.mark.slow
def test_results_keep_the_relative_scores_in_one_expander_for_experts(seeded):
    values, reference, _, _ = seeded
    at = run_page(RESULTS, values)
    experts = _experts(at)
    assert len(experts) == 1  # one expander, titled for method experts
    inside = " ".join(shown(m.value) for m in experts[0].markdown)
    for name in ("basic", "balanced", "multi_threshold", "multi_n"):
        assert f"**{formats.metric_label(name)} {formats.score(reference.metrics[name])}**" in inside
    assert "Weighted" not in inside  # always equals basic: not listed
    # Its settings live with the scores, in words a tester uses.
    assert {s.key for s in at.slider if _in_experts(at, s)} >= {state.W_MULTI_THRESHOLD, state.W_MULTI_N}
    words = _words(at)
    for term in JARGON:
        assert term not in words, term
    for name in ("basic", "balanced", "multi_threshold", "multi_n"):  # no relative score outside the expander
        assert formats.score(reference.metrics[name]) not in words
    # The topic and document tables show shares and counts, never the relative coverage score.
    assert "coverage" not in _frame(at, "example passage").proto.column_order
    show_results_tab(at, "Documents")
    assert "coverage" not in _frame(at, "verdict").value.columns


@pytest.mark.slow
def test_fitness_names_the_statistics_only_in_the_label_analysis(seeded):
    values, _, _, _ = seeded
    at = run_page(FITNESS, values)
    analysis_box = [e for e in at.expander if shown(e.label).startswith("Label analysis")]
    assert len(analysis_box) == 1
    listed = shown(analysis_box[0].markdown[0].value).splitlines()
    for name in ("Point-biserial r", "p-value", "AUROC", "Youden's J", "Best dividing line"):
        line = next(item for item in listed if item.startswith(f"- **{name} "))
        assert "**: " in line and len(line.split("**: ", 1)[1]) > 20  # a one-line meaning
    outside = []
    for kind in ("markdown", "caption", "info", "warning", "subheader", "header"):
        outside += [shown(e.value) for e in at.get(kind) if not _contains(analysis_box[0], e)]
    outside += [shown(m.label) for m in at.metric] + [shown(b.label) for b in at.button]
    for term in STATISTICS:
        assert term not in " ".join(outside), term
    assert not at.metric or all(m.label in ("Questions", "May not be answerable", "Median best similarity")
                                for m in at.metric)
    # The dimension sweep's table and chart speak plainly too.
    from ui.views.fitness import SWEEP_COLUMNS

    for term in STATISTICS:
        assert not any(term in header for header in SWEEP_COLUMNS.values()), term


def test_the_gap_page_names_its_ranking_plainly(analysis, monkeypatch):
    at = _showing(analysis, monkeypatch, GAPS)
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(texts(at.markdown))
    assert engine.GAP_ORDER in said and "priority" not in said and "most urgent first" not in said
    gap_table = at.dataframe[0]
    shown_columns = list(gap_table.proto.column_order)
    assert "coverage" not in shown_columns and "corpus share" not in shown_columns
    assert "tested share" in shown_columns
    for term in JARGON:
        assert term not in _words(at), term


# ---------------------------------------------------------------- figures


@pytest.mark.slow
def test_each_topic_counts_the_questions_closest_to_it(seeded):
    values, reference, _, _ = seeded
    counts = reference.clusters.sort_values("cluster")["n_questions"].to_numpy()
    on_topic = ~np.asarray(reference.is_outlier, dtype=bool)
    assert counts.sum() == on_topic.sum()  # each on-topic question counted in one topic
    assert len(set(counts.tolist())) > 1  # not the same count for every topic
    closest = reference.question_table.loc[on_topic, "cluster"].astype(int)
    assert counts.tolist() == np.bincount(closest, minlength=len(counts)).tolist()
    at = run_page(RESULTS, values)
    config = json.loads(_frame(at, "example passage").proto.columns)
    assert "closest" in config["n_questions"]["help"]
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert all("closest to it" in str(row[2]) for row in chart["data"][0]["customdata"])


def test_a_bar_at_zero_is_drawn_and_labelled_zero():
    clusters = pd.DataFrame({
        "cluster": [0, 1, 2], "size": [10, 10, 10], "share": [1 / 3] * 3, "coverage": [0.2, 0.5, 0.9],
        "n_tested": [0, 4, 9], "tested_share": [0.0, 0.4, 0.9], "is_gap": [True, True, False],
        "n_questions": [0, 3, 5], "label": ["koala", "octopus", "drum"],
    })
    bar = plots.topic_verdict_bar(clusters).data[0]
    assert bar.text[0] == "0%" and bar.x[0] >= 0.01  # a visible sliver, labelled with the true value
    assert bar.marker.color[0] == bar.marker.color[1] == plots.PROBLEM_COLOUR  # orange like any gap
    assert bar.hovertext[0] == "0%" and "%{hovertext}" in bar.hovertemplate
    documents = pd.DataFrame({
        "document": ["a.txt", "b.txt"], "n_chunks": [5, 5], "n_tested": [0, 5], "tested_share": [0.0, 1.0],
        "is_untested": [True, False],
    })
    bar = plots.document_verdict_bar(documents).data[0]
    assert bar.text[0] == "0%" and bar.x[0] >= 0.01


@pytest.mark.slow
def test_topic_and_document_tables_have_whole_headers_whole_percents_and_the_shown_order(seeded):
    values, reference, _, _ = seeded
    at = run_page(RESULTS, values)
    table = _frame(at, "example passage")
    config = json.loads(table.proto.columns)
    for name in table.proto.column_order:  # every shown header reads whole at its width
        assert columns.fits(config[name]), (name, config[name])
    # One rounding: the table's whole percent is the chart's label, topic by topic.
    assert config["tested_share"]["type_config"]["format"] == columns.PERCENT_FORMAT
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    frame = table.value
    assert [f"{v}%" for v in frame["tested_share"]] == chart["text"]
    assert frame["tested_share"].tolist() == [round(100 * v) for v in results_view.cluster_table(reference)["tested_share"]]
    # The order is the one the figures show: gaps first, then each group by its shown share.
    for _, group in frame.groupby("is_gap", sort=False):
        assert group["tested_share"].is_monotonic_increasing
    assert frame["is_gap"].tolist() == sorted(frame["is_gap"].tolist(), reverse=True)
    assert any("Gaps first" in str(line) for line in json.dumps(at.get("plotly_chart")[0].proto.spec).split("\\n"))

    show_results_tab(at, "Documents")
    documents = _frame(at, "verdict")
    config = json.loads(documents.proto.columns)
    for name in documents.value.columns:
        assert columns.fits(config[name]), (name, config[name])
    assert documents.value["tested_share"].dtype.kind in "iu" or str(documents.value["tested_share"].dtype) == "Int64"


@pytest.mark.slow
def test_the_html_report_says_the_tested_share_and_the_gap_rule_as_the_page_does(seeded):
    from coverage_core.outputs.html_report import build_html_report
    from ui.views import gaps as gaps_view

    values, reference, embedder, cache = seeded
    improvement = gaps_view.improve(reference, ["Where do koalas live, and what do they eat?"], embedder, cache,
                                    state.Overrides())
    before, after = improvement.before.metrics["tested_share"], improvement.after.metrics["tested_share"]
    page_value, page_change = formats.share_change(before, after)  # the Gap page's card
    assert page_change.endswith(" pts")
    report = build_html_report(reference, improved=improvement.after)
    assert f"improved set: {page_value} ({page_change})" in report
    assert re.search(r"<td>Tested share</td><td class=\"num\">[0-9]+%</td><td class=\"num\">[0-9]+%</td>"
                     rf"<td class=\"num\">{re.escape(page_change)}</td>", report)
    cut = reference.config.gaps.tested_share_threshold
    rule = f"a topic is a gap when less than {cut:.0%} of its passages are tested"
    assert rule in report and "gap threshold" not in report
    assert re.search(r"[+-]0\.\d{3}\)", report.split("<h3>Scores for method experts</h3>")[0]) is None


@pytest.mark.slow
def test_traffic_topics_are_named_as_results_names_them(seeded):
    from coverage_core.checks.query_log import read_traffic

    values, reference, _, _ = seeded
    drum = [q.text for q in reference.questions.questions if "drum" in q.text.lower()][:3]
    koala = ["What do koalas eat?", "Where do koalas live in the wild?", "How long do koalas sleep each day?"]
    flute = ["What is a flute made of?", "How do you play the flute?"]
    log = read_traffic(pd.DataFrame({"query": drum + koala + flute + ["How do I reset my password?"],
                                     "count": [5, 5, 5, 40, 20, 10, 8, 4, 12]}).to_csv(index=False).encode(), "log.csv")
    at = run_page(TRAFFIC, {**values, state.TRAFFIC_LOG: log})
    assert not at.exception, [e.value for e in at.exception]
    table = [d for d in at.dataframe if "most asked" in d.value.columns][0]
    results_names = set(reference.clusters["label"])
    for name in table.value["topic"]:
        named = re.sub(r" \([^()]*\)$", "", name)  # a subject the traffic splits in two: "name (its own words)"
        assert all(part in results_names for part in named.split(" + ")), (name, results_names)
    assert len(set(table.value["topic"])) == len(table.value)  # a subject listed once
    config = json.loads(table.proto.columns)
    assert config["tested"]["type_config"]["format"] == columns.PERCENT_FORMAT  # not 44.44%
    assert table.value["tested"].dropna().map(float).map(float.is_integer).all()


def test_a_missing_value_reads_as_a_dash(analysis, monkeypatch):
    """A passage of a text file has no page, a real query no passage answers has no topic: "—", never "None"."""
    from ui.views import gaps as gaps_view

    traffic_row = pd.DataFrame([{"accept": False, "question": "How do I reset my password?", "cluster": None,
                                 "origin": gaps_view.TRAFFIC_ORIGIN, "document": "", "passage": "no answer"}])
    values = {state.SUGGESTIONS_EDITED: gaps_view.normalize_suggestions(traffic_row)}
    at = _showing(analysis, monkeypatch, GAPS, values)
    assert not at.exception, [e.value for e in at.exception]
    passages = gaps_view.least_covered_passages(analysis)
    assert passages["page"].isna().all()  # text files: no page
    frames = list(at.dataframe)
    assert frames and all(frame.proto.placeholder == columns.DASH for frame in frames)  # the tables and the editor
    assert any(frame.proto.editing_mode for frame in frames)  # the suggestions editor among them
    editor = next(frame for frame in frames if frame.proto.editing_mode)
    assert editor.value["cluster"].isna().any()  # the traffic query without a topic: drawn as the placeholder


# ---------------------------------------------------------------- noise


def test_the_headline_is_short_and_the_calibration_said_once(analysis, monkeypatch):
    assert not analysis.calibration.reliable  # the synthetic analysis is not calibrated
    at = _showing(analysis, monkeypatch, RESULTS)
    verdicts = Verdicts.from_analysis(analysis)
    assert at.subheader[0].value == verdicts.figures  # one sentence of figures
    said = " ".join(texts(at.markdown) + texts(at.caption) + texts(at.info) + texts(at.warning)
                    + [shown(s.value) for s in at.subheader])
    assert said.count("not calibrated") + said.count("could not be calibrated") == 1
    assert sum("The support level is not calibrated" in w for w in texts(at.warning)) == 1
    # What tested means follows, once, in a caption under the headline.
    assert sum("similarity is not used: a passage counts as tested" in c for c in texts(at.caption)) == 1


def test_the_results_page_says_under_the_headline_how_much_the_questions_can_test_at_most(analysis, monkeypatch):
    """5 on-topic questions at top 5 reach at most 25 of the synthetic analysis's 60 passages: the page says so
    under the tested share, in words, the reason in its help; a test set that can reach every passage hears nothing."""
    at = _showing(analysis, monkeypatch, RESULTS)
    verdicts = Verdicts.from_analysis(analysis)
    order = [at.main.children[i] for i in sorted(at.main.children)]
    headline = next(i for i, element in enumerate(order) if element.type == "subheader")
    ceiling = order[headline + 1]
    assert ceiling.type == "caption"
    assert shown(ceiling.value) == "5 on-topic questions at top 5 can test at most 42% of the knowledge base."
    assert ceiling.proto.help == ("Each question tests at most the 5 passages it retrieves first, so 5 on-topic "
                                  "questions can test at most 25 of the 60 passages; more questions raise this limit.")
    assert ceiling.value == verdicts.ceiling and f"{analysis.metrics['testable_share_max']:.0%}" == "42%"
    assert "testable" not in _words(at) and "share_max" not in _words(at)  # plain words, no field names
    assert sum("can test at most" in text for text in texts(at.caption)) == 1  # said once

    from coverage_core.measure import measure

    wide = measure(dataclasses.replace(analysis.config, retrieval_k=12), analysis.corpus, analysis.questions,
                   analysis.question_embedding, analysis.clustering)  # 5 × 12 of 60 passages
    at = _showing(wide, monkeypatch, RESULTS)
    assert not any("can test at most" in text for text in texts(at.caption))


def _open_saved(at, folder: str):
    at.switch_page("pages/1_upload.py").run()
    at.radio(key=state.W_KNOWLEDGE_BASE).set_value("saved").run()
    at.selectbox(key=state.W_SAVED_FOLDER).set_value(folder).run()
    at.button(key=state.W_OPEN_SAVED).click().run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def other_provider(analysis, tmp_path, monkeypatch):
    """A saved analysis in the server's allowed folder that names OpenAI's model (the session's is automatic)."""
    from coverage_core.saved.analysis import MANIFEST, SAVED_ANALYSES_VARIABLE, save_analysis

    folder = save_analysis(analysis, tmp_path / "saved" / "colleague")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest["config"]["embedding"].update(provider="openai", model="text-embedding-3-small", base_url=None,
                                           dimensions=None)
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv(SAVED_ANALYSES_VARIABLE, str(tmp_path / "saved"))
    return "colleague"


@pytest.mark.parametrize("typed", [False, True])
def test_a_saved_analysis_says_keys_were_forgotten_only_when_some_were_typed(other_provider, typed):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import APP, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if typed:
        at.session_state[state.EMBED_API_KEY] = "sk-typed-in-this-session"
    at.run()
    _open_saved(at, other_provider)
    notice = at.session_state[state.PROVIDER_NOTICE]
    assert ("forgotten" in notice) is typed

    at.switch_page(CONFIGURE).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [w for w in texts(at.warning) + texts(at.error) + texts(at.info) if "brought its own embedding" in w]
    assert len(said) == 1  # once on Configure
    assert "Configure page" not in said[0]  # not sent to the page it is on
    assert ("forgotten" in said[0]) is typed

    at.switch_page(RESULTS).run()  # elsewhere it says where to confirm them
    elsewhere = [w for w in texts(at.warning) if "brought its own embedding" in w]
    assert len(elsewhere) == 1 and "on the Configure page" in elsewhere[0]
