"""Gap analysis: ranked gaps, least-covered passages, editable suggestions, apply, exports."""

import functools
from pathlib import PurePosixPath

import streamlit as st

from coverage_core import costs
from coverage_core.errors import CoverageError
from coverage_core.outputs import plots
from coverage_core.verdicts import Verdicts
from ui import columns, engine, exports, flow, formats, phoenix_push, state, widgets
from ui.views import compare as compare_view, decisions as decisions_view, gaps as view

flow.start_page("Gap analysis")
analysis = flow.require_analysis()
settings = state.settings()
widgets.show_headline(analysis)
if int(analysis.is_outlier.sum()):
    st.page_link(
        flow.RESULTS_PAGE, label="Review the off-topic questions (Results → Off-topic questions)",
        icon=":material/monitoring:",
    )

# ------------------------------------------------------------------ gaps (+ optional LLM)
use_llm = False
if settings.llm_enabled:
    with st.container(border=True):
        n_gaps = Verdicts.from_analysis(analysis, top=0).n_gaps  # topics and untested documents
        tokens_in, tokens_out = costs.estimate_llm_tokens(n_gaps, n_gaps * 5 * 1200)
        try:
            estimate = costs.estimate_llm_cost(tokens_in, tokens_out, settings.llm_model, flow.price_table())
            st.write(widgets.plain(f"Ask {settings.llm_model} for suggestions for {formats.count(n_gaps, 'gap')}: {estimate.label}."))
        except CoverageError as error:
            flow.show_error(error)
        use_llm = st.button(f"Write suggestions with {widgets.plain(settings.llm_model)}", key=state.W_LLM_GAPS, disabled=not n_gaps)

try:
    gapped = flow.gaps_for(analysis, use_llm=use_llm)
except CoverageError as error:
    flow.show_error(error)
    gapped = flow.gaps_for(analysis, use_llm=False)

gap_config = analysis.config.gaps
rule_text = view.gap_rule(gap_config)
for message in dict.fromkeys(gapped.warnings[len(analysis.warnings):]):
    st.warning(widgets.plain(message))  # a warning may quote a topic or a model's reply
n_left = view.gaps_left_to_write(gapped)
if n_left:
    n_next = min(n_left, gap_config.n_written_gaps or n_left)  # None: the writer writes for every gap
    if st.button(
        f"Write questions for the next {formats.count(n_next, 'gap')}", key=state.W_WRITE_MORE_GAPS,
        help="The built-in model takes a few seconds per gap; the questions already written are kept.",
    ):
        flow.gaps_for(analysis, write_more=True)
        st.rerun()

if not gapped.gaps:
    widgets.verdict_passed(
        analysis,
        f"No topic has {rule_text}, and every document is tested. Change the gap rule or its threshold on Configure (or Results → Tune) "
        "to look for weaker spots."
    )
else:
    n_documents = sum(bool(gap.document) for gap in gapped.gaps)
    n_topics = len(gapped.gaps) - n_documents
    found = [formats.count(n_topics, "topic") + f" with {rule_text}"] if n_topics else []
    if n_documents:
        found.append(f"{formats.count(n_documents, 'untested document')} whose topic is not a gap")
    st.write(
        f"{formats.count(len(gapped.gaps), 'gap')}: {' and '.join(found)}, {engine.GAP_ORDER}. A gap that "
        f"holds an untested document has a suggestion from it. Suggestions are {view.suggestions_origin(gapped)}."
    )
    # A Results link names one gap (query parameter): show it open and scroll to it, once.
    requested, scroll_to = st.query_params.get(state.GAP_PARAM), None
    if requested is not None:
        scroll_to = view.focused_gap(gapped, requested)
        if scroll_to is not None:
            state.put(state.GAP_FOCUS, scroll_to)
        del st.query_params[state.GAP_PARAM]
    focus = state.get(state.GAP_FOCUS)
    for card in view.gap_cards(gapped):
        with st.expander(f"{card.rank}. {widgets.plain(card.title)}: {widgets.plain(card.summary)}",
                         expanded=card.key == focus, key=state.gap_card_key(card.key)):
            widgets.gap_card(card)
    if scroll_to is not None:
        widgets.scroll_to(state.gap_card_key(scroll_to))
    gap_rows = view.gap_table(gapped)
    widgets.table(gap_rows, percents=("tested share",), columns=columns.gap_columns(),
                  column_order=columns.GAP_TABLE_SHOWN)
    with st.expander("Least-covered passages of each gap (farthest from every question first)"):
        widgets.table(view.least_covered_passages(gapped), columns=columns.passage_columns(),
                      column_order=columns.PASSAGES_SHOWN)

# ------------------------------------------------------------------ suggestions editor
st.header("Improve the test set")
st.write(
    "Tick **accept** on the questions to add, edit their text, or add your own rows. "
    "**Apply** scores the test set with them on the same clusters. Your edits are kept while you use other pages."
)
flow.suggestions_table(gapped)
replaceable = view.replacement_passages(state.get(state.HISTORY_STALE), analysis)
if replaceable and st.button(
    f"Write replacement questions for the {formats.count(len(replaceable), 'changed passage')}",
    key=state.W_WRITE_REPLACEMENTS,
    help="Some questions were written for a document that has changed since an earlier run (History page). "
    "This writes a question for each of its new or rewritten passages, added below as replacing a stale question.",
):
    n_new = flow.add_replacement_suggestions(analysis, replaceable)
    st.success(f"{formats.count(n_new, 'replacement question')} added to the table below.")
edited = widgets.persistent_editor(
    state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR,
    lambda: view.suggestions_frame(gapped),
    normalize=view.normalize_suggestions,
    num_rows="dynamic",
    hide_index=True,
    disabled=["cluster", "origin", "document", "passage", "original"],
    column_config={
        "accept": st.column_config.CheckboxColumn("accept", default=False, width="small"),
        "question": st.column_config.TextColumn("question", width="large", required=True),
        "cluster": st.column_config.NumberColumn("cluster", width="small"),
        "origin": st.column_config.SelectboxColumn(
            "origin", options=list(view.ORIGIN_OPTIONS), format_func=formats.origin_words, width="medium"
        ),
        "document": st.column_config.TextColumn("source document"),
        "passage": st.column_config.TextColumn("source passage", width="large"),
        "original": None,  # the suggestion as written: what tells an edited one
    },
)
accepted = view.accepted_texts(edited)
accepted_rows = view.accepted_rows(edited, accepted)
st.caption(f"{formats.count(len(accepted), 'accepted question')}.")
widgets.csv_download(
    "Suggestions (CSV)", functools.partial(exports.suggestions_csv, edited), "suggestions.csv",
    key=state.W_DOWNLOAD_SUGGESTIONS,
    help="The table as it stands: each question, accepted or not, who wrote it (edited ones say so), its "
    "source document and its whole source passage.",
)
applied = st.button("Apply", key=state.W_APPLY, type="primary")
if applied:
    if not accepted:
        st.warning("Tick **accept** on at least one suggestion (or add a row of your own) first.")
    else:
        try:
            with st.spinner(f"Embedding {formats.count(len(accepted), 'new question')} and rescoring on the same clusters…"):
                flow.improve(analysis, accepted, accepted_rows)
        except CoverageError as error:
            flow.show_error(error)
# Under the Apply button, not between it and the table: a tick that makes it appear moves nothing the user
# clicks next (above the table, or between it and Apply, it shifted the rows under the pointer).
n_drafts = view.unfinished_drafts(edited)
if n_drafts:
    st.warning(
        f"{formats.count(n_drafts, 'accepted row')} still {formats.plural(n_drafts, 'begins', 'begin')} “Write a question answered by”: rewrite each as the question "
        "a user would ask; until then they are left out of Apply and the export."
    )
if applied and decisions_view.origins_moved(state.get(state.SUGGESTIONS_BASE), edited):
    # An edit made a suggestion "edited (from …)": show the table with its new origin (the edits are in it). On
    # Apply only, after it, so the click is not lost; rebasing on each edit would also drop the grid's selected
    # cell, and a keyboard user's place, after every question typed. Exports read the edits either way.
    widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, edited)
    st.rerun()

improvement, current = flow.improvement_for(analysis)
if improvement is not None:
    st.subheader("Before → after")
    if not current:
        st.info("Computed with earlier settings or suggestions; click Apply again to update.")
    n_added = len(improvement.texts)
    # The headline figure: an absolute share, so its change is in percentage points (as the HTML report says it).
    before, after = improvement.before.metrics["tested_share"], improvement.after.metrics["tested_share"]
    widgets.tested_share_card(
        before, after, f"Share of the knowledge base's passages that some question reaches: before "
        f"{formats.percent(before)}, after {formats.percent(after)} with {formats.count(n_added, 'added question')}.",
    )
    names = ("before", "after")
    widgets.table(compare_view.tested_share_deltas(improvement.before, improvement.after, names),
                  columns=columns.share_delta_columns(names))
    with st.expander(engine.EXPERTS):  # the relative scores, before and after
        st.caption(engine.EXPERTS_NOTE)
        cards = [column for _ in range(2) for column in st.columns(2)]  # two by two: labels whole at 1280 px
        for column, name in zip(cards, widgets.RELATIVE_SCORES):
            before, after = improvement.before.metrics[name], improvement.after.metrics[name]
            widgets.score_card(
                column, name, before, after,
                help=f"Before {formats.score(before)}, after {formats.score(after)} with "
                f"{formats.count(n_added, 'added question')}. Relative score.",
            )
        st.plotly_chart(plots.before_after_clusters(improvement.before.clusters, improvement.after.clusters))
        st.dataframe(
            compare_view.cluster_deltas(improvement.before, improvement.after),
            hide_index=True, placeholder=columns.DASH,
            column_config={
                "before": st.column_config.NumberColumn(format=formats.SCORE_FORMAT),
                "after": st.column_config.NumberColumn(format=formats.SCORE_FORMAT),
                "change": st.column_config.NumberColumn(format=formats.SCORE_CHANGE_FORMAT),
            },
        )

# ------------------------------------------------------------------ exports
st.header("Export")
question_file = state.question_file()
stem = PurePosixPath(question_file.name).stem if question_file is not None else "questions"
suffix = (PurePosixPath(question_file.name).suffix if question_file is not None else "") or ".csv"
inputs_record = exports.inputs_record(state.documents(), question_file)
left, middle, right, last = st.columns([1.3, 0.8, 1, 1])  # the improved set's label, with its count, is longest
with left:
    widgets.csv_download(
        f"Improved test set (CSV, +{formats.count(len(accepted), 'row')})",
        functools.partial(exports.improved_csv, analysis.questions, accepted, accepted_rows,
                          settings.relevant_column or None),
        f"{stem}-improved{suffix}",
        key=state.W_DOWNLOAD_CSV,
        help="Your file with its columns, rows and delimiter untouched, accepted questions appended and marked "
        "in the 'suggested' column. A suggested question names the document it came from (in your file's source "
        f"column, or a new '{view.SOURCE_COLUMN}' column) and its passage ('{view.PASSAGE_COLUMN}'), so the "
        "retrieval check can use it. Text cells are quoted, and any line a spreadsheet would run as a formula "
        "is prefixed with '.",
    )
report = exports.report_json(gapped, inputs_record, flow.checks_for(analysis), flow.current_improvement(analysis))
widgets.file_download(middle, "Report (JSON)", report, "coverage-report.json", "application/json",
                      key=state.W_DOWNLOAD_JSON)
widgets.file_download(
    right, "Report with charts (HTML)", flow.html_report_builder(gapped, inputs_record), "coverage-report.html",
    "text/html", key=state.W_DOWNLOAD_HTML, help="One self-contained file (charts included, works offline).",
)
widgets.file_download(
    last, "The whole analysis (zip)", flow.saved_analysis_builder(gapped, report), "coverage-analysis.zip",
    "application/zip", key=state.W_DOWNLOAD_SAVED,
    help="Passages, vectors, topics, the report and your accepted, edited and rejected suggestions. Open it "
    "again on the Upload page (A saved analysis): nothing is embedded again.",
)
phoenix_push.push_panel(accepted_rows)  # the accepted questions to a Phoenix dataset, beside the downloads
