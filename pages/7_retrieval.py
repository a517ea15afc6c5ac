"""Retrieval and chunking: retrieval metrics against the labelled sources, and a chunking comparison."""

import pandas as pd
import streamlit as st

from coverage_core import chunking_comparison
from coverage_core.embeddings.registry import is_paid
from coverage_core.errors import CoverageError
from coverage_core.outputs import plots
from ui import check_steps, columns, exports, flow, formats, state, widgets
from ui.views import retrieval as view

K_RANGE = (1, 50)
HELP = {
    "precision": "Relevant chunks in the top k ÷ k, averaged over the labelled questions.",
    "recall": "Relevant sources retrieved in the top k ÷ relevant sources named, averaged over the labelled questions.",
    "hit": "Share of labelled questions with at least one relevant source in the top k.",
    "mrr": "How high the first relevant chunk ranks (mean reciprocal rank): the mean of 1 / its rank, 0 when "
    "none is in the top k.",
}
NO_COLUMN = (
    "The question file has no column naming each question's relevant source, so retrieval cannot be checked. "
    "Add one — for example `source`, `relevant_sources`, `document` or `file` — holding the file name each "
    "question was written from (optionally with a page, such as `report.pdf#page=3`; several separated by "
    "`|` or `;`), and upload the file again; or pick the column in the box above if it has another name."
)


flow.start_page(
    "Retrieval and chunking",
    "Two checks that need no LLM: whether each test question retrieves the source it was written from, and "
    "how coverage and retrieval change when the documents are chunked differently."
)
analysis = flow.require_analysis()
inputs = state.stored_inputs()
questions = analysis.questions
settings = state.settings()

# ------------------------------------------------------------------ retrieval check
st.header("Retrieval check")
st.write(
    "Each question retrieves the k chunks most similar to it (cosine similarity of the embeddings the coverage "
    "analysis uses), and the files of the retrieved chunks are compared with the relevant sources (one or more) the "
    "question file names for it."
)
choice = view.relevant_column_choice(questions, settings.relevant_column)
left, right = st.columns([2, 1])
state.seed_widget(state.W_RELEVANT_COLUMN, settings.relevant_column or view.DETECTED)
left.selectbox(
    "Column naming each question's relevant sources", choice.options, format_func=choice.label,
    key=state.W_RELEVANT_COLUMN,
    on_change=lambda: state.update_settings(relevant_column=st.session_state[state.W_RELEVANT_COLUMN] or ""),
    help="A file name per question, optionally with a page (report.pdf#page=3); several separated by | or ;. "
    "Detected by names such as source, relevant_sources, document or file.",
)
state.seed_widget(state.W_RETRIEVAL_K, min(max(int(settings.retrieval_k), K_RANGE[0]), K_RANGE[1]))
right.slider(
    "k (chunks retrieved per question)", min_value=K_RANGE[0], max_value=K_RANGE[1], step=1, key=state.W_RETRIEVAL_K,
    on_change=lambda: state.update_settings(retrieval_k=int(st.session_state[state.W_RETRIEVAL_K])),
    help="The number of chunks your RAG system passes to the LLM is a good choice.",
)
settings = state.settings()
column = settings.relevant_column or choice.detected

checks = flow.checks_for(analysis)
result = checks.retrieval
if checks.retrieval_error:
    st.error(widgets.plain(checks.retrieval_error))  # quotes the column the user named

usable = None  # the retrieval result the chunking comparison can reuse the labels of
if result is None:
    if not column:
        st.info(NO_COLUMN)
    elif column == questions.question_column:
        st.error(f"'{widgets.plain(column)}' is the question column itself; choose the column that names each question's source file.")
elif view.all_labels_unknown(result):
    examples = ", ".join(f"'{label}'" for label in result.unknown_sources[:3])
    st.error(widgets.plain(
        f"No value in '{result.relevant_column}' (such as {examples}) names a document of the knowledge base; "
        "choose the column that holds each question's source file name."
    ))
else:
    usable = result
    k = result.k
    cards = st.columns([1, 1, 1, 1.5])  # names legible at 1280 px: the first-hit card's is the longest
    cards[0].metric(f"Precision@{k}", formats.score(result.precision_at_k), help=HELP["precision"], border=True)
    cards[1].metric(f"Recall@{k}", formats.score(result.recall_at_k), help=HELP["recall"], border=True)
    cards[2].metric(f"Hit@{k}", formats.score(result.hit_at_k), help=HELP["hit"], border=True)
    cards[3].metric(formats.MRR_LABEL, formats.score(result.mrr), help=HELP["mrr"], border=True)
    st.caption(
        f"{formats.count(result.n_labelled, 'labelled question')} from column “{widgets.plain(result.relevant_column)}”"
        f"{f' ({result.n_unlabelled:,} without a source, left out)' if result.n_unlabelled else ''}, each "
        f"retrieving {k:,} of {formats.count(len(analysis.corpus.chunks), 'chunk')}. Every labelled question counts, off-topic or not."
    )
    flow.show_warnings(result.notes)
    if result.unknown_sources:
        with st.expander(f"Sources not in the knowledge base ({len(result.unknown_sources)})"):
            st.dataframe(pd.DataFrame({"named in the question file": list(result.unknown_sources)}), hide_index=True)
            st.caption("The knowledge base has: " + widgets.plain(", ".join(d.name for d in analysis.corpus.documents)))

    if result.n_labelled:
        st.subheader("Failures")
        failures = view.retrieval_failure_table(result)
        if failures.empty:
            st.success(f"Every labelled question retrieved one of its relevant sources in its top {k}.")
        else:
            st.caption(
                f"{failures['row'].nunique():,} of {formats.count(result.n_labelled, 'labelled question')} retrieved none "
                "of their "
                f"relevant sources in the top {k}. What they retrieved instead, best first: a wrong label, a source "
                "missing from the knowledge base, or a passage the chunking split shows up here."
            )
            widgets.table(failures, medium=("question",), large=("passage",), scores=("similarity",))
            widgets.csv_download(
                "Download the failures (CSV)", failures, f"retrieval-failures-k{k}.csv",
                help=f"Each question that retrieved none of its sources in the top {k}, with what it retrieved instead.",
            )
        st.subheader("Every labelled question")
        labelled = view.retrieval_question_table(result)
        widgets.table(
            labelled, medium=("question",), large=("retrieved (rank order)",), scores=("reciprocal rank",),
            columns={
                name: st.column_config.NumberColumn(f"{name}@{k}", format=formats.SCORE_FORMAT)
                for name in ("precision", "recall")
            },
        )
        widgets.csv_download(
            "Download every labelled question (CSV)", labelled, f"retrieval-questions-k{k}.csv",
            help=f"Precision, recall and hit in the top {k} chunks, reciprocal rank and what each question retrieved.",
        )

# ------------------------------------------------------------------ chunking comparison
st.header("Chunking comparison")
k = int(settings.retrieval_k)
own_level = analysis.config.support_threshold is not None
st.write(
    "The same questions against the documents chunked several ways: the share of passages tested, coverage "
    f"(K chosen automatically for each chunk count) and, when the questions name their sources, the retrieval "
    f"figures at k = {k}. The off-topic screening of the current analysis is held fixed, so the differences come "
    "from the chunking alone. "
    + (f"Every chunking is judged at the support level you set on Configure ({formats.similarity(analysis.config.support_threshold)}). "
       if own_level else
       "Each chunking gets its own support level, calibrated on its own passages as the analysis does, since "
       "smaller or larger passages need a different level. ")
    + "Texts already embedded are taken from the cache."
)
grid_table = widgets.persistent_editor(
    state.CHUNKING_GRID, state.CHUNKING_GRID_EDITED, state.W_GRID_EDITOR,
    lambda: chunking_comparison.grid_frame(chunking_comparison.DEFAULT_GRID),
    num_rows="dynamic", hide_index=True, width=480,
    column_config={
        "chunk_size": st.column_config.NumberColumn("chunk size (characters)", min_value=1, step=1, format="%d"),
        "chunk_overlap": st.column_config.NumberColumn("overlap (characters)", min_value=0, step=1, format="%d"),
    },
)
if inputs.from_vector_store:
    st.info("These passages came from your vector store with their vectors, so they cannot be chunked again; "
            "upload the documents themselves to compare chunkings.")
    st.stop()
current = inputs.chunking
st.caption(
    f"The current analysis uses chunk size {current.chunk_size:,} with overlap {current.chunk_overlap:,}. "
    "Add, edit or delete rows; " + ("a relevant-source column adds the retrieval figures." if usable is None else
                                    f"retrieval is checked against “{widgets.plain(usable.relevant_column)}”.")
)
try:
    grid = chunking_comparison.grid_from_frame(grid_table)
except CoverageError as error:
    flow.show_error(error)
    st.stop()

relevant_column = usable.relevant_column if usable is not None else None
paid = is_paid(inputs.embedding.provider)
embedder = None
prices = flow.price_table() if paid else None
consent = True
if paid:
    try:
        embedder = flow.embedder_for(inputs)
        cost = view.chunking_cost(inputs, analysis.config, grid, embedder, flow.embedding_cache(), prices)
    except CoverageError as error:
        flow.show_error(error)
        st.stop()
    st.dataframe(cost.plans, hide_index=True)
    calibration_help = (
        f" Calibrating each chunking's support level adds "
        f"{formats.count(cost.n_calibration, 'short text')} from the documents."
        if cost.n_calibration else ""
    )
    st.metric(
        f"Embedding with {widgets.plain(embedder.model)}", cost.estimate.label.split(" (")[0],  # tokens and dollars only
        help=f"{formats.count(cost.n_send, 'chunk text')} {formats.plural(cost.n_send, 'is', 'are')} not in the embedding "
        f"cache and would be sent.{calibration_help} "
        "Prices come from the table on Configure.",
    )
    st.caption(widgets.plain(cost.estimate.label))  # names the model; a price has "$"
    consent = st.checkbox("I accept the estimated embedding cost", key=state.W_CHUNKING_COST_OK)

if st.button("Compare chunkings", key=state.W_COMPARE_CHUNKINGS, type="primary", disabled=not consent):
    check_steps.compare_chunkings(analysis, grid, k, relevant_column, embedder, prices)

comparison, up_to_date = check_steps.chunking_comparison_for(analysis, grid, k, relevant_column)
if comparison is None:
    st.stop()
if not up_to_date:
    st.info(
        "This table was made with other settings (grid, k, relevant-source column, screening or inputs); "
        "click **Compare chunkings** to update it."
    )
flow.show_warnings(comparison.messages)
shown_k = comparison.k
chunking_table = comparison.shown()
chunking_columns = {
    "chunk_size": st.column_config.NumberColumn("chunk size", format="%d"),
    "chunk_overlap": st.column_config.NumberColumn("overlap", format="%d"),
    "n_chunks": st.column_config.NumberColumn("chunks", format="%d"),
    "n_clusters": st.column_config.NumberColumn("topics (K)", format="%d"),
    "tested_share": columns.percent_column(
        "passages tested", help="Share of this chunking's passages that some question reaches at its support level.",
    ),
    "support_threshold": st.column_config.NumberColumn(
        "support level", format="%.2f",
        help="The similarity a question needs to reach a passage in this chunking.",
    ),
    "support_method": st.column_config.TextColumn("support level from"),
    "basic": st.column_config.NumberColumn("basic coverage", format="%.3f"),
    "balanced": st.column_config.NumberColumn("balanced coverage", format="%.3f"),
    "precision_at_k": st.column_config.NumberColumn(f"precision@{shown_k}", format="%.3f"),
    "recall_at_k": st.column_config.NumberColumn(f"recall@{shown_k}", format="%.3f"),
    "hit_at_k": st.column_config.NumberColumn(f"hit@{shown_k}", format="%.3f"),
    "mrr": st.column_config.NumberColumn(formats.MRR_LABEL, format="%.3f"),
    "newly_embedded": st.column_config.NumberColumn("newly embedded", format="%d"),
    "calibration_embedded": st.column_config.NumberColumn("newly embedded for the support level", format="%d"),
    "new_tokens": st.column_config.NumberColumn("new tokens", format="%d"),
    "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f"),
    "error": st.column_config.TextColumn(width="large"),
}
st.dataframe(columns.percents(chunking_table, ["tested_share"]), hide_index=True, column_config=chunking_columns,
             placeholder=columns.DASH)
widgets.csv_download("Download the comparison (CSV)", chunking_table, "chunking-comparison.csv",
                     headers=exports.column_labels(chunking_columns))
st.caption(
    "The share of passages tested is absolute; coverage scores are relative: compare them across rows, not with "
    "a fixed bar. Newly embedded counts the chunk texts that were not in the cache."
)
if comparison.table["basic"].notna().any():
    st.plotly_chart(plots.chunking_comparison_chart(comparison.table, shown_k))
