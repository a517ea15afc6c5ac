"""Production traffic: does the test set test what users actually ask?"""

import streamlit as st

from coverage_core import verdicts
from coverage_core.checks.query_log import read_traffic
from coverage_core.errors import CoverageError
from coverage_core.outputs import plots
from ui import columns, flow, formats, state, widgets
from ui.views import traffic as view

flow.start_page(
    "Production traffic",
    "Upload the questions your RAG application received (a query log). The page shows how much of that real "
    "traffic your test set tests, what the documents can answer, and which popular topics no test asks about."
)
analysis = flow.require_analysis()

upload = st.file_uploader(
    "Query log (CSV or JSON Lines: one query per row, optionally a count and a date; or a Langfuse or "
    "LangSmith trace export)",
    type=["csv", "tsv", "txt", "jsonl", "ndjson", "json", "parquet"], key=state.W_TRAFFIC_UPLOAD,
    help="E-mail addresses, phone numbers and long digit runs are masked before anything is shown, "
    "embedded or exported. Repeated queries are merged with their counts added up.",
)
if upload is not None and state.get(state.TRAFFIC_LOG_FILE) != upload.file_id:  # read once per upload
    try:
        state.put(state.TRAFFIC_LOG, read_traffic(upload.getvalue(), upload.name))
    except CoverageError as error:
        flow.show_error(error)
        st.stop()
    state.put(state.TRAFFIC_LOG_FILE, upload.file_id)
log = state.get(state.TRAFFIC_LOG)
if log is None:
    st.info("Upload a query log to compare it with your test set and documents.")
    st.stop()
for warning in log.warnings:
    st.warning(widgets.plain(warning))  # may quote the file or a column

try:
    result = flow.traffic_for(analysis, log)
except CoverageError as error:
    flow.show_error(error)
    st.stop()

st.subheader(widgets.plain(result.headline()), anchor=False)  # names a topic of query words
left, middle, right = st.columns(3)
left.metric("Traffic tested", f"{result.tested_share_weighted:.0%}", border=True,
            help="Share of the queries, counting repeats, that a test question matches closely.")
middle.metric("Traffic answerable", f"{result.answerable_share_weighted:.0%}", border=True,
              help="Share of the queries, counting repeats, that some passage of the documents answers (judged "
              "as test questions are for the off-topic count).")
right.metric("Queries", f"{log.n_queries:,}", border=True, help=f"{log.n_distinct:,} distinct after merging repeats.")

st.header("Most asked, least tested")
st.plotly_chart(plots.traffic_topics(result.topics))
st.caption("Topics of the queries the documents answer; those without an answer are counted below, on their own.")
widgets.table(
    view.traffic_topic_table(result), large=("most asked",), percents=("share of traffic", "tested"),
    columns=columns.traffic_topic_columns(),
)

st.header("Demand the documents do not meet")
sentence = view.unanswered_sentence(result)
if not sentence:
    widgets.verdict_passed(analysis, "Every query of the traffic has an answer in the documents.",
                           doubt=verdicts.traffic_doubt(analysis, result))
else:
    (st.warning if result.unanswered.is_unmet else st.info)(sentence)  # numbers and fixed words only
    widgets.table(view.unanswered_table(result), large=("query",))

if result.weekly is not None:
    st.header("Over time")
    st.plotly_chart(plots.traffic_weekly(result.weekly))

st.header("Suggestions from real phrasing")
st.write(view.suggestions_sentence(result))
if result.suggestions and st.button("Add them to the suggestions", key=state.W_TRAFFIC_ADD, type="primary"):
    added = flow.add_traffic_suggestions(result)
    st.success(f"{formats.count(added, 'question')} added to the suggestions table.")
    st.page_link("pages/4_gaps.py", label="Open the Gap analysis", icon=":material/troubleshoot:")

with st.expander(f"Tests nobody needs ({len(result.unneeded_tests)})"):
    st.caption("Test questions no real query comes near: a sign of drift, not a verdict.")
    widgets.table(view.unneeded_tests_table(result), large=("question",), scores=("closest query",))
