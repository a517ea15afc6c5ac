"""Knowledge-base fitness: how well the documents support each question (the reverse direction)."""

import streamlit as st

from coverage_core import plots
from ui import engine, flow, state

st.title("Knowledge-base fitness")
st.write(
    "The reverse direction: for every question, its best similarity to any chunk — how well the knowledge "
    "base supports it. Questions far from every passage may be unanswerable from these documents."
)
analysis = flow.require_analysis()

state.seed_widget(state.W_FITNESS_THRESHOLD, float(state.get(state.FITNESS_THRESHOLD, flow.DEFAULT_FITNESS_THRESHOLD)))
threshold = st.slider(
    "Similarity below which the knowledge base may not answer a question",
    min_value=0.0, max_value=1.0, step=0.01, key=state.W_FITNESS_THRESHOLD,
    on_change=lambda: state.put(state.FITNESS_THRESHOLD, st.session_state[state.W_FITNESS_THRESHOLD]),
    help="Similarities are relative to the embedding model; look at where the ranked curve drops.",
)
table = engine.fitness_table(analysis, threshold)
weak = table[table["verdict"] != ""]
left, middle, right = st.columns(3)
left.metric("Questions", f"{len(table):,}", border=True)
middle.metric(
    "May not be answerable", f"{len(weak):,}", border=True,
    help="Best similarity to any chunk below the threshold. Relative to the model, not a proof.",
)
right.metric("Median best similarity", f"{table['best similarity'].median():.3f}", border=True)

left, right = st.columns(2)
with left:
    st.plotly_chart(plots.similarity_ranked(analysis.question_table, threshold))
with right:
    st.plotly_chart(plots.similarity_polar(analysis.question_table, threshold))

st.subheader("Every question and its nearest passage")
only_weak = st.toggle("Only questions the knowledge base may not answer", key=state.W_FITNESS_ONLY_WEAK)
st.dataframe(
    weak if only_weak else table,
    hide_index=True,
    column_config={
        "best similarity": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.3f"),
        "question": st.column_config.TextColumn(width="large"),
        "nearest passage": st.column_config.TextColumn(width="large"),
    },
)
