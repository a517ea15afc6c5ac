"""Knowledge-base fitness: how well the documents support each question (the reverse direction)."""

import dataclasses
import math

import numpy as np
import streamlit as st

from coverage_core import answerability, costs, plots
from coverage_core.errors import CoverageError
from ui import engine, flow, formats, state, widgets
from ui.messages import user_message

RANKED_VIEW = "Ranked and polar"
MDS_VIEW = "MDS map"
NO_LABELS_HINT = (
    "No answerability labels. Add a column named `answerable` to the question CSV (yes / no, covered / "
    "not covered, 1 / 0 or true / false; blank when unknown), or choose the column above, to see how well "
    "similarity separates answerable from not-answerable questions and to set the threshold from data."
)
MDS_NOTE = (
    "MDS places questions and chunks so that their distances approximate 1 − cosine similarity. The "
    "literature found this view less useful than the ranked and polar views. Points far from everything "
    "(such as unanswerable questions) collapse toward the centre of an MDS map, so a central point is not "
    "a typical one."
)


def number(value: float, spec: str = ".3f") -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def use_threshold(value: float) -> None:
    """on_click of "Use … as the threshold": runs before the slider exists in the rerun."""
    state.put(state.FITNESS_THRESHOLD, float(value))
    st.session_state[state.W_FITNESS_THRESHOLD] = float(value)


def choose_label_column() -> None:
    state.update_settings(label_column=st.session_state[state.W_LABEL_COLUMN] or "")


def label_column_picker(analysis, detected: str | None) -> None:
    questions = analysis.questions
    current = state.settings().label_column
    options = [""] + [str(c) for c in questions.frame.columns if str(c) != questions.question_column]
    if current and current not in options:
        options.append(current)  # a column of an earlier file: the error below says it is missing
    if st.session_state.get(state.W_LABEL_COLUMN) not in options:
        state.drop(state.W_LABEL_COLUMN)
    state.seed_widget(state.W_LABEL_COLUMN, current)
    st.selectbox(
        "Answerability label column",
        options,
        key=state.W_LABEL_COLUMN,
        on_change=choose_label_column,
        format_func=lambda c: c if c else (f"Detected: {detected}" if detected else "Detected: none"),
        help="A column saying whether the documents answer each question (covered / not covered, "
        "yes / no, 1 / 0, true / false). Found by its name (answerable, covered, label …) or chosen here.",
    )


def api_sweep_model(config) -> str | None:
    """The OpenAI text-embedding-3 model whose shorter sizes the API can return, else None."""
    if config.provider != "openai":
        return None
    from coverage_core.embeddings import OPENAI_DEFAULT_MODEL

    model = config.model or OPENAI_DEFAULT_MODEL
    return model if model.startswith("text-embedding-3-") else None


def api_sweep_estimate(config, model: str, texts: list[str], dims: list[int]) -> costs.CostEstimate:
    """Tokens and dollars of embedding ``texts`` once per size in ``dims`` (cached ones are not sent)."""
    from coverage_core.embeddings.cache import uncached_texts

    tokens = 0
    cache = flow.embedding_cache()
    config = dataclasses.replace(config, model=model)
    for d in dims:
        try:
            embedder = flow.embedder_for(config, dimensions=d)
            tokens += costs.approximate_tokens(uncached_texts(texts, embedder, cache))
        except CoverageError:  # no key yet: assume nothing is cached
            tokens += costs.approximate_tokens(dict.fromkeys(texts))
    return costs.estimate_embedding_cost(tokens, "openai", model, flow.price_table())


def api_embed_at(config, model: str, chunk_texts: list[str], question_texts: list[str], bar):
    """``embed_at`` for the sweep: each size embedded afresh by the API (through the disk cache)."""
    from coverage_core.embeddings import embed_texts

    cache = flow.embedding_cache()
    config = dataclasses.replace(config, model=model)

    def embed_at(d: int):
        embedder = flow.embedder_for(config, dimensions=d)
        runs = []
        for what, texts in (("questions", question_texts), ("chunks", chunk_texts)):
            def progress(done: int, total: int, what=what) -> None:
                bar.progress(done / total if total else 1.0, text=f"{d} dimensions: embedded {done:,} of {total:,} {what}")

            runs.append(embed_texts(texts, embedder, cache, progress).vectors)
        return runs[0], runs[1]

    return embed_at


SWEEP_COLUMNS = {
    "d": "dimensions",
    "method": "vectors",
    "spearman": "rank agreement with full size (Spearman)",
    "mean_similarity": "mean best similarity",
    "point_biserial_r": "point-biserial r",
    "auroc": "AUROC",
}


# ------------------------------------------------------------------ page
flow.start_page(
    "Knowledge-base fitness",
    "The reverse direction: for every question, its best similarity to any chunk — how well the knowledge "
    "base supports it. Questions far from every passage may be unanswerable from these documents."
)
analysis = flow.require_analysis()
inputs = flow.stored_inputs()
similarities = analysis.question_table["max_similarity"].to_numpy(dtype=float)

state.seed_widget(state.W_FITNESS_THRESHOLD, float(state.get(state.FITNESS_THRESHOLD, flow.DEFAULT_FITNESS_THRESHOLD)))
threshold = st.slider(
    "Similarity below which the knowledge base may not answer a question",
    min_value=0.0, max_value=1.0, step=0.01, format=formats.SIMILARITY_FORMAT, key=state.W_FITNESS_THRESHOLD,
    on_change=lambda: state.put(state.FITNESS_THRESHOLD, st.session_state[state.W_FITNESS_THRESHOLD]),
    help="Similarities are relative to the embedding model; look at where the ranked curve drops, or use "
    "the threshold learnt from answerability labels below.",
)
table = engine.fitness_table(analysis, threshold)
weak = table[table["verdict"] != ""]
left, middle, right = st.columns(3)
left.metric("Questions", f"{len(table):,}", border=True)
middle.metric(
    "May not be answerable", f"{len(weak):,}", border=True,
    help="Best similarity to any chunk below the threshold. Relative to the model, not a proof.",
)
right.metric("Median best similarity", formats.similarity(table["best similarity"].median()), border=True)

# ------------------------------------------------------------------ labels
st.subheader("Answerable and not-answerable questions")
picker = st.container()
checks = flow.checks_for(analysis)
if checks.answerability_error:
    st.error(checks.answerability_error)  # an unusable column the user named, under the picker
labels = checks.labels
result = checks.answerability
settings = state.settings()
if settings.label_column:
    detected = answerability.find_label_column(
        [c for c in analysis.questions.frame.columns if str(c) != analysis.questions.question_column]
    )
else:
    detected = labels.column if labels is not None else None
with picker:
    left, _ = st.columns([1, 2])
    with left:
        label_column_picker(analysis, detected)
for note in labels.notes if labels is not None else ():
    st.info(user_message(note), icon=":material/info:")
labelled = result is not None and labels is not None and labels.column is not None
if not labelled:
    if not (settings.label_column and labels is None):  # else the error above says what is wrong
        st.caption(NO_LABELS_HINT)
else:
    st.caption(
        f"{result.n_labelled:,} labelled questions, {result.n_answerable:,} answerable and "
        f"{result.n_unanswerable:,} not. How well each question's best similarity predicts its label:"
    )
    cards = st.columns(4)
    cards[0].metric(
        "Point-biserial r", number(result.point_biserial_r), border=True,
        help="Correlation between the best similarity and the label (1 answerable, 0 not). Positive: "
        "answerable questions sit closer to the documents.",
    )
    cards[1].metric(
        "p-value", number(result.p_value, ".2g"), border=True,
        help="Two-sided test that the correlation is zero.",
    )
    cards[2].metric(
        "AUROC", number(result.auroc), border=True,
        help="Chance that a random answerable question is more similar to the documents than a random "
        "not-answerable one. 0.5 is chance, 1.0 perfect separation.",
    )
    cards[3].metric(
        "Best threshold (Youden)", formats.similarity(result.threshold), border=True,
        help="The similarity that best separates the two groups (maximises sensitivity + specificity − 1).",
    )
    if result.note:
        st.warning(user_message(result.note), icon=":material/warning:")
    if math.isfinite(result.threshold):
        st.caption(
            f"At {formats.similarity(result.threshold)}, {result.sensitivity:.0%} of answerable questions are above the threshold "
            f"and {result.specificity:.0%} of not-answerable ones below it (Youden's J = {result.youden_j:.3f})."
        )
        st.button(
            f"Use {formats.similarity(result.threshold)} as the threshold", key=state.W_USE_BEST_THRESHOLD,
            on_click=use_threshold, args=(result.threshold,),
            disabled=math.isclose(threshold, result.threshold, abs_tol=1e-9),
        )
    st.plotly_chart(
        plots.answerability_box(
            similarities, labels.labels,
            threshold=result.threshold if math.isfinite(result.threshold) else None,
            texts=analysis.questions.texts,
        )
    )

# ------------------------------------------------------------------ views
view = st.segmented_control(
    "View", [RANKED_VIEW, MDS_VIEW], default=RANKED_VIEW, required=True, key=state.W_FITNESS_VIEW,
    help="The MDS map is computed once per data set when you pick it (a few seconds on large sets).",
)
if view == MDS_VIEW:
    try:
        points = flow.mds_for(analysis)
        chunk_frame, question_frame = answerability.mds_frames(
            points, [c.text for c in analysis.corpus.chunks], analysis.questions.texts,
            chunk_documents=analysis.corpus.chunk_documents,
            labels=labels.labels if labelled else None,
            similarities=similarities,
        )
    except CoverageError as error:
        flow.show_error(error)
    else:
        st.plotly_chart(plots.mds_map(chunk_frame, question_frame))
        st.caption(points.caption)
        st.caption(MDS_NOTE)
else:
    left, right = st.columns(2)
    with left:
        st.plotly_chart(plots.similarity_ranked(analysis.question_table, threshold, labels=analysis.clusters))
    with right:
        st.plotly_chart(plots.similarity_polar(analysis.question_table, threshold, labels=analysis.clusters))

# ------------------------------------------------------------------ table
st.subheader("Every question and its nearest passage")
if labelled:
    by_row = dict(zip((int(r) for r in analysis.questions.rows), labels.labels))
    names = {1.0: "answerable", 0.0: "not answerable"}
    table.insert(
        table.columns.get_loc("verdict"), "label",
        [names.get(by_row.get(int(r), np.nan), "") for r in table["row"]],
    )
    weak = table[table["verdict"] != ""]
only_weak = st.toggle("Only questions the knowledge base may not answer", key=state.W_FITNESS_ONLY_WEAK)
shown = weak if only_weak else table
st.dataframe(
    shown,
    hide_index=True,
    column_config={
        "best similarity": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format=formats.SIMILARITY_FORMAT),
        "question": st.column_config.TextColumn(width="large"),
        "nearest passage": st.column_config.TextColumn(width="large"),
    },
)
widgets.csv_download(
    "Download these questions (CSV)", shown, "fitness-questions.csv",
    help="The table above as shown: each question's best similarity, nearest document and passage, and verdict.",
)

# ------------------------------------------------------------------ dimension sweep
st.subheader("Fewer dimensions")
config = inputs.embedding
full = int(analysis.question_vectors.shape[1])
smaller = [d for d in answerability.DEFAULT_SWEEP_DIMS if d is not None and d < full]
if smaller:
    st.write(
        f"Each question's best similarity recomputed from only the first {', '.join(str(d) for d in smaller)} "
        f"of the embeddings' {full} dimensions (re-normalised): how well the ranking agrees with the full size"
        + (" and how well similarity still separates the labelled questions." if labelled else ".")
    )
else:
    st.caption(f"The embeddings have {full} dimensions: there is no smaller size to compare.")
note = answerability.truncation_note(config.provider, config.model)
if note:
    st.info(user_message(note), icon=":material/info:")
api_model = api_sweep_model(config)
use_api = False
chunk_texts = [c.text for c in analysis.corpus.chunks]
question_texts = list(analysis.questions.texts)
if api_model and smaller:
    estimate = api_sweep_estimate(config, api_model, chunk_texts + question_texts, smaller)
    use_api = st.checkbox(
        f"Embed every text again at {', '.join(str(d) for d in smaller)} dimensions through the API "
        f"(the model's own shorter embeddings; {estimate.label})".replace("$", "\\$"),  # no LaTeX in labels
        key=state.W_SWEEP_API,
    )
    st.caption(
        f"{api_model} was trained so that its first dimensions form a smaller embedding: unticked, the "
        "stored vectors are cut, and nothing is sent. Ticked, the texts not in the embedding cache are sent "
        + ("to your base URL" if config.base_url else "to OpenAI") + " once per size when you run the sweep "
        "(priced with the table on Configure)."
    )
label_values = labels.labels if labelled else None
sweep_key = engine.sweep_key(inputs, labels if labelled else None, use_api)
sweep = state.stage(state.DIMENSION_SWEEP, sweep_key)
run_slot = st.empty()
if sweep is None and smaller and run_slot.button("Run the dimension sweep", key=state.W_RUN_SWEEP):
    try:
        if use_api:
            with st.status(f"Embedding at {len(smaller)} smaller sizes…", expanded=True) as status:
                bar = st.progress(0.0, text="Starting…")
                sweep = answerability.dimension_sweep(
                    analysis.question_vectors, analysis.corpus.vectors, labels=label_values,
                    embed_at=api_embed_at(config, api_model, chunk_texts, question_texts, bar),
                )
                status.update(label="Sweep done.", state="complete", expanded=False)
        else:
            with st.spinner(f"Recomputing the best similarities at {len(smaller) + 1} sizes…"):
                sweep = answerability.dimension_sweep(
                    analysis.question_vectors, analysis.corpus.vectors, labels=label_values
                )
    except CoverageError as error:
        flow.show_error(error)
        sweep = None
    else:
        state.put_stage(state.DIMENSION_SWEEP, sweep_key, sweep)
        run_slot.empty()
if sweep is not None:
    sweep_table = sweep.rename(columns=SWEEP_COLUMNS)
    st.dataframe(
        sweep_table,
        hide_index=True,
        column_config={
            name: st.column_config.NumberColumn(format="%.3f")
            for key, name in SWEEP_COLUMNS.items() if key not in ("d", "method")
        },
    )
    widgets.csv_download("Download the sweep (CSV)", sweep_table, "dimension-sweep.csv")
    st.plotly_chart(plots.dimension_sweep_chart(sweep))  # the note, if any, is stated above
