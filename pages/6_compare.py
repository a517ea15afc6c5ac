"""Compare: a second question set scored on the same chunks and clusters, side by side."""

import functools

import streamlit as st

from coverage_core.errors import CoverageError
from coverage_core.inputs.questions import read_questions
from coverage_core.outputs import plots
from ui import engine, exports, flow, formats, loading, state, widgets
from ui.views import compare as view, gaps as gaps_view

SOURCES = {
    "upload": "Upload a second question file",
    "accepted": "The current test set plus the accepted suggestions (Gap analysis)",
}

flow.start_page(
    "Compare test sets",
    "Coverage scores are relative, so they mean most side by side: both sets are scored on the same chunks "
    "and the same clusters, and the per-cluster differences show what one set tests that the other does not."
)
analysis = flow.require_analysis()
first_name = state.question_file().name if state.question_file() is not None else "current set"

source = st.radio("Second set", list(SOURCES), format_func=SOURCES.get, key=state.W_COMPARE_SOURCE, horizontal=True)
other = None
other_name = None
if source == "upload":
    upload = st.file_uploader(
        "Second question file (CSV or JSON)", type=["csv", "tsv", "txt", "json", "jsonl"], key=state.W_COMPARE_UPLOADER,
        help="A table with a question column, or a test set exported by RAGAS, DeepEval or Giskard as it is.",
    )
    if upload is None:
        st.info("Upload a second question file to compare it with the current one.")
    else:
        column = st.session_state.get(state.W_COMPARE_COLUMN) or None
        try:
            other = read_questions(upload.getvalue(), question_column=column, name=upload.name)
            other_name = upload.name
        except CoverageError as error:
            flow.show_error(error)
            try:
                columns = loading.table_columns(state.QuestionFile(upload.name, upload.getvalue()))
            except CoverageError:
                columns = []
            if columns:
                st.selectbox("Column with the questions", columns, index=None, key=state.W_COMPARE_COLUMN)
        if other is not None:
            note, other_warnings = view.split_format_note([w.message for w in other.warnings])
            st.caption(widgets.plain(
                note or f"{formats.count(len(other.questions), 'question')} in column “{other.question_column}” of {upload.name}."
            ))
            flow.show_warnings([f"{upload.name}: {message}" for message in other_warnings])
else:
    texts = gaps_view.accepted_texts(state.get(state.SUGGESTIONS_EDITED))
    if not texts:
        st.info("No accepted suggestions yet: tick **accept** on the Gap analysis page first.")
    else:
        other = gaps_view.improved_questions(analysis.questions, texts)
        other_name = f"{first_name} + {len(texts)} accepted"
        st.caption(
            f"{formats.count(len(texts), 'accepted suggestion')} added to the "
            f"{formats.count(len(analysis.questions.questions), 'question')}."
        )

if other is not None:
    if st.button("Compare", key=state.W_COMPARE_RUN, type="primary"):
        try:
            with st.spinner(f"Embedding the new questions of {widgets.plain(other_name)} (cached ones are reused)…"):
                flow.compare(analysis, other, (first_name, other_name))
        except CoverageError as error:
            flow.show_error(error)

comparison, current = flow.comparison_for()
if comparison is None:
    st.stop()
if not current:
    st.info("This comparison was made with earlier settings; click Compare again to update it.")

# The set names are file names: user text, escaped wherever Markdown shows them.
shown_a, shown_b = widgets.plain(comparison.name_a), widgets.plain(comparison.name_b)
st.subheader(f"{shown_a} vs {shown_b}", anchor=False)
n_a, n_b = len(comparison.a.questions.questions), len(comparison.b.questions.questions)
st.caption(
    f"{n_a:,} vs {n_b:,} {formats.plural(max(n_a, n_b), 'question')}; "
    f"{int(comparison.a.is_outlier.sum())} vs {int(comparison.b.is_outlier.sum())} screened out as off-topic."
)
# Tested share first (an absolute share, its change in percentage points); the relative scores are for method
# experts, in their expander below.
a, b = comparison.a.metrics["tested_share"], comparison.b.metrics["tested_share"]
widgets.tested_share_card(
    a, b, f"Share of the knowledge base's passages some question reaches: {shown_a} {formats.percent(a)}, "
    f"{shown_b} {formats.percent(b)}.",
)
cards = view.scorecards(comparison)
st.subheader("Which set is the better test of this knowledge base?")
(st.success if cards.winner is not None else st.info)(widgets.plain(cards.verdict))
st.dataframe(view.scorecard_table(cards), hide_index=True, placeholder=widgets.DASH)
st.caption(
    "Tested share: passages some question reaches. Balance: how evenly the questions spread over the documents "
    "(100% even, 0% all on one). Near-duplicates: questions that repeat another. Off-topic: questions not about "
    "the documents. Answerable: questions with a passage close enough to answer them."
)
names = (comparison.name_a, comparison.name_b)
with st.expander(engine.EXPERTS):  # the relative scores of both sets, and per topic
    st.caption(engine.EXPERTS_NOTE)
    for row in view.card_rows(list(widgets.RELATIVE_SCORES)):
        for column, name in zip(st.columns(len(row)), row):
            a, b = comparison.a.metrics[name], comparison.b.metrics[name]
            widgets.score_card(
                column, name, a, b,
                help=f"{shown_b}: {formats.score(b)}; {shown_a}: {formats.score(a)}. "
                "Relative scores: only the difference matters.",
            )
    st.dataframe(
        view.metric_deltas(comparison.a.metrics, comparison.b.metrics, names, only=widgets.RELATIVE_SCORES),
        hide_index=True, placeholder=widgets.DASH,
        column_config=widgets.score_columns(names),
    )
    st.plotly_chart(plots.metric_comparison_bar(dict(zip(names, (comparison.a.metrics, comparison.b.metrics)))))
    st.plotly_chart(plots.before_after_clusters(comparison.a.clusters, comparison.b.clusters, names))
    deltas = view.cluster_deltas(comparison.a, comparison.b, names)
    st.dataframe(
        deltas,
        hide_index=True, placeholder=widgets.DASH,
        column_config={**widgets.score_columns(names), "topic": st.column_config.TextColumn("topic", width="medium")},
    )
widgets.csv_download(
    "Download the per-cluster comparison (CSV)", functools.partial(exports.table_csv, deltas, as_is=names),
    "compare-clusters.csv",
)
