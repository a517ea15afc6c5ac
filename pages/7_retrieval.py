"""Retrieval and chunking: retrieval metrics against the labelled sources, and a chunking comparison."""

import numpy as np
import pandas as pd
import streamlit as st

from coverage_core import chunking_comparison, costs, plots, retrieval
from coverage_core.errors import CoverageError
from ui import flow, state, widgets

DETECTED = ""  # the selectbox option "use the detected column" (Settings.relevant_column "")
K_RANGE = (1, 50)
HELP = {
    "precision": "Relevant chunks in the top k ÷ k, averaged over the labelled questions.",
    "recall": "Relevant sources retrieved in the top k ÷ relevant sources named, averaged over the labelled questions.",
    "hit": "Share of labelled questions with at least one relevant source in the top k.",
    "mrr": "Mean of 1 / rank of the first relevant chunk (0 when none is in the top k).",
    "unlabelled": "Questions with an empty relevant-source cell: left out of the four retrieval figures.",
}
NO_COLUMN = (
    "The question file has no column naming each question's relevant source, so retrieval cannot be checked. "
    "Add one — for example `source`, `relevant_sources`, `document` or `file` — holding the file name each "
    "question was written from (optionally with a page, such as `report.pdf#page=3`; several separated by "
    "`|` or `;`), and upload the file again; or pick the column in the box above if it has another name."
)


def number(value: float) -> str:
    return "n/a" if value is None or np.isnan(value) else f"{value:.3f}"


def all_labels_unknown(result) -> bool:
    """True when no label of any labelled question names a document (or page) of the knowledge base."""
    unknown = {label.casefold() for label in result.unknown_sources}
    return result.n_labelled > 0 and all(
        all(label.casefold() in unknown for label in labels) for labels in result.per_question["relevant"]
    )


def retrieved_list(names, pages) -> str:
    return " | ".join(name if page is None or pd.isna(page) else f"{name} p.{int(page)}" for name, page in zip(names, pages))


def per_question_table(result) -> pd.DataFrame:
    frame = result.per_question
    return pd.DataFrame(
        {
            "row": frame["row"].astype(int),
            "question": frame["question"],
            "relevant": [" | ".join(labels) for labels in frame["relevant"]],
            "hit": frame["hit_at_k"].astype(bool),
            "first relevant rank": frame["first_relevant_rank"],
            "precision": frame["precision_at_k"].astype(float),
            "recall": frame["recall_at_k"].astype(float),
            "reciprocal rank": frame["reciprocal_rank"].astype(float),
            "retrieved (rank order)": [retrieved_list(n, p) for n, p in zip(frame["retrieved"], frame["retrieved_pages"])],
        }
    )


def failure_table(result) -> pd.DataFrame:
    frame = result.failures.drop(columns=["chunk"])
    unknown = {label.casefold() for label in result.unknown_sources}
    known = {
        int(row): any(label.casefold() not in unknown for label in labels)
        for row, labels in zip(result.per_question["row"], result.per_question["relevant"])
    }
    frame["expected is in the knowledge base"] = [known.get(int(row), False) for row in frame["row"]]
    if frame["page"].isna().all():  # text files: no pages
        frame = frame.drop(columns=["page"])
    return frame


st.title("Retrieval and chunking")
st.write(
    "Two checks that need no LLM: whether each test question retrieves the source it was written from, and "
    "how coverage and retrieval change when the documents are chunked differently."
)
analysis = flow.require_analysis()
inputs = flow.stored_inputs()
questions = analysis.questions
settings = state.settings()

# ------------------------------------------------------------------ retrieval check
st.header("Retrieval check")
st.write(
    "Each question retrieves the k chunks most similar to it (cosine similarity of the embeddings the coverage "
    "analysis uses), and the files of the retrieved chunks are compared with the relevant source(s) the question "
    "file names for it."
)
columns = [str(column) for column in questions.frame.columns]
candidates = [column for column in columns if column != questions.question_column]
detected = retrieval.find_relevant_column(columns)
if detected == questions.question_column:
    detected = None
options = [DETECTED, *candidates]
if settings.relevant_column and settings.relevant_column not in options:
    options.append(settings.relevant_column)  # chosen for another file: shown, and refused below


def option_label(option: str) -> str:
    if option == DETECTED:
        return f"detected: {detected}" if detected else "none detected"
    return option if option in candidates else f"{option} (not a column of this file)"


left, right = st.columns([2, 1])
state.seed_widget(state.W_RELEVANT_COLUMN, settings.relevant_column if settings.relevant_column in options else DETECTED)
left.selectbox(
    "Column naming each question's relevant source(s)", options, format_func=option_label,
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
column = settings.relevant_column or detected

checks = flow.checks_for(analysis)
result = checks.retrieval
if checks.retrieval_error:
    st.error(checks.retrieval_error)

usable = None  # the retrieval result the chunking comparison can reuse the labels of
if result is None:
    if not column:
        st.info(NO_COLUMN)
    elif column == questions.question_column:
        st.error(f"'{column}' is the question column itself; choose the column that names each question's source file.")
elif all_labels_unknown(result):
    examples = ", ".join(f"'{label}'" for label in result.unknown_sources[:3])
    st.error(
        f"No value in '{result.relevant_column}' (such as {examples}) names a document of the knowledge base; "
        "choose the column that holds each question's source file name."
    )
else:
    usable = result
    k = result.k
    cards = st.columns(5)
    cards[0].metric(f"Precision@{k}", number(result.precision_at_k), help=HELP["precision"], border=True)
    cards[1].metric(f"Recall@{k}", number(result.recall_at_k), help=HELP["recall"], border=True)
    cards[2].metric(f"Hit@{k}", number(result.hit_at_k), help=HELP["hit"], border=True)
    cards[3].metric("MRR", number(result.mrr), help=HELP["mrr"], border=True)
    cards[4].metric("Unlabelled, left out", f"{result.n_unlabelled:,}", help=HELP["unlabelled"], border=True)
    st.caption(
        f"{result.n_labelled:,} labelled question(s) from column “{result.relevant_column}”, each retrieving "
        f"{k} of {len(analysis.corpus.chunks):,} chunks. Every labelled question counts, off-topic or not."
    )
    flow.show_warnings(result.notes)
    if result.unknown_sources:
        with st.expander(f"Sources not in the knowledge base ({len(result.unknown_sources)})"):
            st.dataframe(pd.DataFrame({"named in the question file": list(result.unknown_sources)}), hide_index=True)
            st.caption("The knowledge base has: " + ", ".join(d.name for d in analysis.corpus.documents))

    if result.n_labelled:
        st.subheader("Failures")
        failures = failure_table(result)
        if failures.empty:
            st.success(f"Every labelled question retrieved one of its relevant sources in its top {k}.")
        else:
            st.caption(
                f"{failures['row'].nunique():,} of {result.n_labelled:,} labelled question(s) retrieved none of their "
                f"relevant sources in the top {k}. What they retrieved instead, best first: a wrong label, a source "
                "missing from the knowledge base, or a passage the chunking split shows up here."
            )
            st.dataframe(
                failures, hide_index=True,
                column_config={
                    "question": st.column_config.TextColumn(width="medium"),
                    "similarity": st.column_config.NumberColumn(format="%.3f"),
                    "passage": st.column_config.TextColumn(width="large"),
                },
            )
            widgets.csv_download(
                "Download the failures (CSV)", failures, f"retrieval-failures-k{k}.csv",
                help=f"Each question that retrieved none of its sources in the top {k}, with what it retrieved instead.",
            )
        st.subheader("Every labelled question")
        labelled = per_question_table(result)
        st.dataframe(
            labelled, hide_index=True,
            column_config={
                "question": st.column_config.TextColumn(width="medium"),
                "precision": st.column_config.NumberColumn(f"precision@{k}", format="%.3f"),
                "recall": st.column_config.NumberColumn(f"recall@{k}", format="%.3f"),
                "reciprocal rank": st.column_config.NumberColumn(format="%.3f"),
                "retrieved (rank order)": st.column_config.TextColumn(width="large"),
            },
        )
        widgets.csv_download(
            "Download every labelled question (CSV)", labelled, f"retrieval-questions-k{k}.csv",
            help=f"Precision, recall and hit in the top {k} chunks, reciprocal rank and what each question retrieved.",
        )

# ------------------------------------------------------------------ chunking comparison
st.header("Chunking comparison")
k = int(settings.retrieval_k)
st.write(
    "The same questions against the documents chunked several ways: coverage (K chosen automatically for each "
    f"chunk count) and, when the questions name their sources, the retrieval figures at k = {k}. The off-topic "
    "screening of the current analysis is held fixed, so the differences come from the chunking alone. Texts "
    "already embedded are taken from the cache."
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
current = inputs.chunking
st.caption(
    f"The current analysis uses chunk size {current.chunk_size:,} with overlap {current.chunk_overlap:,}. "
    "Add, edit or delete rows; " + ("a relevant-source column adds the retrieval figures." if usable is None else
                                    f"retrieval is checked against “{usable.relevant_column}”.")
)
try:
    grid = chunking_comparison.grid_from_frame(grid_table)
except CoverageError as error:
    st.error(str(error))
    st.stop()

relevant_column = usable.relevant_column if usable is not None else None
config = analysis.config
key = (
    inputs.corpus_key, inputs.question_key, tuple(grid), k, relevant_column,
    tuple(int(i) for i in np.flatnonzero(analysis.is_outlier)),
    config.random_state, config.multi_threshold, config.multi_n,
)
provider = inputs.embedding.provider
paid = provider != "local"
embedder = None
prices = flow.price_table() if paid else None
consent = True
if paid:
    try:
        embedder = flow.embedder_for(inputs)
        plans = chunking_comparison.plan_chunkings(inputs.corpus.documents, grid, embedder, flow.embedding_cache())
        estimate = costs.estimate_embedding_cost(sum(p.approx_tokens for p in plans), provider, embedder.model, prices)
    except CoverageError as error:
        st.error(str(error))
        st.stop()
    st.dataframe(
        pd.DataFrame(
            {
                "chunk size": [p.config.chunk_size for p in plans],
                "overlap": [p.config.chunk_overlap for p in plans],
                "chunks": [p.n_chunks for p in plans],
                "texts to embed": [p.n_to_embed for p in plans],
                "tokens (approx.)": [p.approx_tokens for p in plans],
            }
        ),
        hide_index=True,
    )
    n_send = sum(p.n_to_embed for p in plans)
    st.metric(
        f"Embedding with {embedder.model}", estimate.label.split(" (")[0],
        help=f"{n_send:,} chunk texts are not in the embedding cache and would be sent. Prices come from the "
        "table on Configure.",
    )
    st.caption(estimate.label)
    consent = st.checkbox("I accept the estimated embedding cost", key=state.W_CHUNKING_COST_OK)

if st.button("Compare chunkings", key=state.W_COMPARE_CHUNKINGS, type="primary", disabled=not consent):
    try:
        embedder = embedder or flow.embedder_for(inputs)
        relevant = retrieval.relevant_from_questions(questions, relevant_column) if relevant_column else None
        with st.status(f"Comparing {len(grid)} chunk configuration(s)…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")

            def progress(done: int, total: int, chunking, step: str) -> None:
                name = f"{chunking.chunk_size}/{chunking.chunk_overlap}"
                if step == "embedding":
                    text = f"Configuration {done + 1} of {total}: {name} (chunking, embedding, measuring)…"
                    status.update(label=text)
                else:
                    text = f"Configuration {done} of {total} done: {name}."
                    st.write(text)
                bar.progress(done / total if total else 1.0, text=text)

            table, messages = chunking_comparison.compare_chunkings(
                inputs.corpus.documents, questions, inputs.question_embedding, grid, embedder, flow.embedding_cache(),
                config=config, is_outlier=analysis.is_outlier, relevant=relevant, k=k, price_table=prices,
                progress=progress,
            )
            status.update(label=f"Compared {len(table)} configuration(s).", state="complete", expanded=False)
    except CoverageError as error:
        st.error(str(error))
    else:
        state.put_stage(state.CHUNKING_COMPARISON, key, (table, messages, k, paid))

stored = state.get(state.CHUNKING_COMPARISON)
if not isinstance(stored, state.Stage):
    st.stop()
table, messages, shown_k, shown_paid = stored.value
if stored.key != key:
    st.info(
        "This table was made with other settings (grid, k, relevant-source column, screening or inputs); "
        "click **Compare chunkings** to update it."
    )
flow.show_warnings(messages)
hidden = [] if shown_paid else ["new_tokens", "cost_usd"]
if table["error"].isna().all():
    hidden.append("error")
retrieval_columns = ["precision_at_k", "recall_at_k", "hit_at_k", "mrr"]
if table[retrieval_columns].isna().all().all():
    hidden += retrieval_columns
chunking_table = table.drop(columns=hidden)
st.dataframe(
    chunking_table, hide_index=True,
    column_config={
        "chunk_size": st.column_config.NumberColumn("chunk size", format="%d"),
        "chunk_overlap": st.column_config.NumberColumn("overlap", format="%d"),
        "n_chunks": st.column_config.NumberColumn("chunks", format="%d"),
        "n_clusters": st.column_config.NumberColumn("K", format="%d"),
        "basic": st.column_config.NumberColumn("basic coverage", format="%.3f"),
        "balanced": st.column_config.NumberColumn("balanced coverage", format="%.3f"),
        "precision_at_k": st.column_config.NumberColumn(f"precision@{shown_k}", format="%.3f"),
        "recall_at_k": st.column_config.NumberColumn(f"recall@{shown_k}", format="%.3f"),
        "hit_at_k": st.column_config.NumberColumn(f"hit@{shown_k}", format="%.3f"),
        "mrr": st.column_config.NumberColumn("MRR", format="%.3f"),
        "newly_embedded": st.column_config.NumberColumn("newly embedded", format="%d"),
        "new_tokens": st.column_config.NumberColumn("new tokens", format="%d"),
        "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f"),
        "error": st.column_config.TextColumn(width="large"),
    },
)
widgets.csv_download("Download the comparison (CSV)", chunking_table, "chunking-comparison.csv")
st.caption(
    "Coverage scores are relative: compare them across rows, not with a fixed bar. Newly embedded counts the "
    "chunk texts that were not in the cache."
)
if table["basic"].notna().any():
    st.plotly_chart(plots.chunking_comparison_chart(table, shown_k))
