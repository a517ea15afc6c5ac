"""Knowledge-base fitness: how well the documents support each question (the reverse direction)."""

import math

import streamlit as st

from coverage_core.checks import answerability
from coverage_core.errors import CoverageError
from coverage_core.outputs import plots
from ui import check_steps, columns, flow, formats, state, widgets
from ui.messages import shown_message
from ui.views import fitness as view

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

# The label analysis: each statistic's name, AnswerabilityResult field, its format and its meaning in one line.
# Their names appear in the label-analysis expander only; the page says what they find in shares.
LABEL_STATISTICS = (
    ("Point-biserial r", "point_biserial_r", formats.score,
     "how strongly the best similarity goes with the label (0: not at all, 1: perfectly)."),
    ("p-value", "p_value", formats.p_value,
     "how likely a link that strong is by chance alone (small: it is not chance)."),
    ("AUROC", "auroc", formats.score,
     "the chance that an answerable question sits closer to the documents than a not-answerable one "
     "(0.5: a coin toss, 1: always)."),
    ("Youden's J", "youden_j", formats.score,
     "how cleanly the best dividing line splits the two groups (0: not at all, 1: perfectly)."),
    ("Best dividing line", "threshold", formats.similarity,
     "the similarity that splits them best: the one with the highest Youden's J."),
)
LABEL_ANALYSIS = "Label analysis: the statistics, for method experts"


def use_threshold(value: float) -> None:
    """on_click of "Use … as the threshold": runs before the slider exists in the rerun."""
    state.put(state.FITNESS_THRESHOLD, float(value))
    st.session_state[state.W_FITNESS_THRESHOLD] = float(value)


def choose_label_column() -> None:
    state.update_settings(label_column=st.session_state[state.W_LABEL_COLUMN] or "")


def label_column_picker(analysis, detected: str | None) -> None:
    current = state.settings().label_column
    options = view.label_column_options(analysis, current)
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


# ------------------------------------------------------------------ page
flow.start_page(
    "Knowledge-base fitness",
    "The reverse direction: for every question, its best similarity to any chunk — how well the knowledge "
    "base supports it. Questions far from every passage may be unanswerable from these documents."
)
analysis = flow.require_analysis()
inputs = state.stored_inputs()
similarities = analysis.question_table["max_similarity"].to_numpy(dtype=float)

state.seed_widget(state.W_FITNESS_THRESHOLD, float(state.get(state.FITNESS_THRESHOLD, answerability.fitness_threshold(analysis))))
threshold = st.slider(
    "Similarity below which the knowledge base may not answer a question",
    min_value=0.0, max_value=1.0, step=0.01, format=formats.SIMILARITY_FORMAT, key=state.W_FITNESS_THRESHOLD,
    on_change=lambda: state.put(state.FITNESS_THRESHOLD, st.session_state[state.W_FITNESS_THRESHOLD]),
    help="Similarities are relative to the embedding model; look at where the ranked curve drops, or use "
    "the threshold learnt from answerability labels below.",
)
table = view.fitness_table(analysis, threshold)
weak = table[table["verdict"] != ""]
left, middle, right = st.columns(3)
left.metric("Questions", f"{len(table):,}", border=True)
middle.metric(
    "May not be answerable", f"{len(weak):,}", border=True,
    help="Best similarity to any chunk below the threshold, which starts at the support level Results uses. "
    "Results' off-topic count can differ: it also keeps a question whose words one passage holds together "
    "and flags one whose named subject the documents never discuss. Relative to the model, not a proof.",
)
right.metric("Median best similarity", formats.similarity(table["best similarity"].median()), border=True)
difference = view.offtopic_difference(analysis, table)
if difference:
    st.caption(difference)

# ------------------------------------------------------------------ labels
st.subheader("Answerable and not-answerable questions")
picker = st.container()
checks = flow.checks_for(analysis)
if checks.answerability_error:
    st.error(widgets.plain(checks.answerability_error))  # an unusable column the user named, under the picker
labels = checks.labels
result = checks.answerability
settings = state.settings()
detected = view.detected_label_column(analysis, settings.label_column, labels)
with picker:
    left, _ = st.columns([1, 2])
    with left:
        label_column_picker(analysis, detected)
for note in labels.notes if labels is not None else ():
    st.info(shown_message(note), icon=":material/info:")
labelled = result is not None and labels is not None and labels.column is not None
if not labelled:
    if not (settings.label_column and labels is None):  # else the error above says what is wrong
        st.caption(NO_LABELS_HINT)
else:
    st.caption(
        f"{formats.count(result.n_labelled, 'labelled question')}, {result.n_answerable:,} answerable and "
        f"{result.n_unanswerable:,} not."
    )
    if result.note:
        st.warning(shown_message(result.note), icon=":material/warning:")
    if math.isfinite(result.threshold):
        st.write(
            f"At similarity {formats.similarity(result.threshold)}, {formats.percent(result.sensitivity)} of the "
            f"answerable questions are above the line and {formats.percent(result.specificity)} of the "
            "not-answerable ones below it: the line that separates them best."
        )
        st.button(
            f"Use {formats.similarity(result.threshold)} as the threshold", key=state.W_USE_BEST_THRESHOLD,
            on_click=use_threshold, args=(result.threshold,),
            disabled=math.isclose(threshold, result.threshold, abs_tol=1e-9),
        )
    with st.expander(LABEL_ANALYSIS):
        st.markdown("\n".join(
            f"- **{name} {shown(getattr(result, quantity))}**: {meaning}"
            for name, quantity, shown, meaning in LABEL_STATISTICS
        ))
    st.plotly_chart(
        plots.answerability_box(
            similarities, labels.labels,
            threshold=result.threshold if math.isfinite(result.threshold) else None,
            texts=analysis.questions.texts,
        )
    )

# ------------------------------------------------------------------ views
map_view = st.segmented_control(
    "View", [RANKED_VIEW, MDS_VIEW], default=RANKED_VIEW, required=True, key=state.W_FITNESS_VIEW,
    help="The MDS map is computed once per data set when you pick it (a few seconds on large sets).",
)
if map_view == MDS_VIEW:
    try:
        points = flow.mds_for(analysis)
        chunk_frame, question_frame = view.mds_frames(analysis, points, labels if labelled else None)
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
    table = view.with_labels(table, analysis, labels)
    weak = table[table["verdict"] != ""]
only_weak = st.toggle("Only questions the knowledge base may not answer", key=state.W_FITNESS_ONLY_WEAK)
shown = weak if only_weak else table
st.dataframe(
    shown,
    hide_index=True, placeholder=columns.DASH,
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
smaller = view.sweep_sizes(full)
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
    st.info(shown_message(note), icon=":material/info:")
api_model = view.sweep_model(config)
use_api = False
if api_model and smaller:
    texts = [c.text for c in analysis.corpus.chunks] + list(analysis.questions.texts)
    estimate = check_steps.sweep_estimate(config, api_model, texts, smaller)
    use_api = st.checkbox(view.sweep_consent_label(smaller, estimate), key=state.W_SWEEP_API)
    st.caption(
        f"{api_model} was trained so that its first dimensions form a smaller embedding: unticked, the "
        "stored vectors are cut, and nothing is sent. Ticked, the texts not in the embedding cache are sent "
        + ("to your base URL" if config.base_url else "to OpenAI") + " once per size when you run the sweep "
        "(priced with the table on Configure)."
    )
sweep_labels = labels if labelled else None
sweep = check_steps.dimension_sweep_for(sweep_labels, use_api)
run_slot = st.empty()
if sweep is None and smaller and run_slot.button("Run the dimension sweep", key=state.W_RUN_SWEEP):
    sweep = check_steps.run_dimension_sweep(analysis, sweep_labels, use_api)
    if sweep is not None:
        run_slot.empty()
if sweep is not None:
    sweep_table = view.sweep_table(sweep)
    st.dataframe(
        sweep_table,
        hide_index=True, placeholder=columns.DASH,
        column_config={
            name: st.column_config.NumberColumn(format=formats.SCORE_FORMAT) for name in view.SWEEP_SCORE_COLUMNS
        },
    )
    widgets.csv_download("Download the sweep (CSV)", sweep_table, "dimension-sweep.csv")
    st.plotly_chart(plots.dimension_sweep_chart(sweep))  # the note, if any, is stated above
