"""Sub-questions: can the knowledge base answer *all* of a question, not just be about it?"""

import streamlit as st

from coverage_core.checks.subquestions import SubQuestionConfig, estimate_decomposition_cost, unavailable_reason
from coverage_core.errors import CoverageError
from ui import check_steps, flow, formats, state, widgets
from ui.messages import user_message
from ui.views import subquestions as view

QUICK_PICK = 10
TYPE_LABELS = {"core": "Core", "background": "Background", "follow-up": "Follow-up"}
DEFAULTS = SubQuestionConfig()

flow.start_page(
    "Sub-questions",
    "A question can be *about* the documents without the documents holding everything an answer needs. "
    "An LLM breaks each selected question into sub-questions — **core** (a complete answer must settle it), "
    "**background** (helpful context) and **follow-up** (what a reader might ask next) — and each "
    "sub-question is looked up in the knowledge base. Unsupported core sub-questions are the gaps worth fixing."
)
analysis = flow.require_analysis()
settings = state.settings()

try:
    llm = flow.llm_client()
except CoverageError as error:  # e.g. the LLM is on but has no key
    flow.show_error(error)
    st.page_link(flow.CONFIGURE_PAGE, label="Set up the LLM on Configure", icon=":material/tune:")
    st.stop()
reason = unavailable_reason(llm)
if reason is not None:
    st.info(user_message(reason))  # a fixed sentence of the core: no user text
    st.page_link(flow.CONFIGURE_PAGE, label="Turn on an LLM on Configure", icon=":material/tune:")
    st.stop()


result = check_steps.subquestions_result()
done_rows = {q.row for q in result.questions if q.status == "ok"} if result is not None else set()

# ------------------------------------------------------------------ selection
questions = analysis.questions.questions
least_supported = view.least_supported(analysis)


def _pick(positions) -> None:
    st.session_state[state.W_SUB_SELECTION] = list(positions)


st.header("Questions to break down")
st.caption(
    f"One LLM request per question (a second one if the reply is not valid JSON), with {widgets.plain(settings.llm_model)}. "
    "Questions already broken down are not sent again."
)
quick = st.columns(3)
quick[0].button(
    f"The {QUICK_PICK} least-supported questions", on_click=_pick, args=(least_supported[:QUICK_PICK],),
    help="The questions whose best similarity to any chunk is lowest (as on Knowledge-base fitness).",
)
quick[1].button(f"The first {QUICK_PICK} questions", on_click=_pick, args=(range(min(QUICK_PICK, len(questions))),))
quick[2].button("Clear the selection", on_click=_pick, args=((),))
selected = st.multiselect(
    "Questions", list(range(len(questions))), key=state.W_SUB_SELECTION,
    format_func=lambda i: f"row {questions[i].row}: {questions[i].text}",
    placeholder="Choose questions, or use a quick pick above",
)
to_send = [i for i in selected if questions[i].row not in done_rows]

# ------------------------------------------------------------------ cost, then run
run_config = SubQuestionConfig(top_k=int(settings.retrieval_k))
if selected and not to_send:
    st.caption("Every selected question is already broken down; the results are below.")
elif to_send:
    try:
        cost = estimate_decomposition_cost(
            [questions[i] for i in to_send], settings.llm_model, flow.price_table(), "openai", run_config,
        )
    except CoverageError as error:
        flow.show_error(error)
    else:
        st.caption(widgets.plain(cost.label))  # names the model; a price has "$"
if st.button("Break into sub-questions", key=state.W_SUB_RUN, type="primary", disabled=not to_send):
    result = check_steps.break_into_subquestions(analysis, to_send, llm, result)

if result is None:
    st.stop()

# ------------------------------------------------------------------ scoring
st.header("Scoring")
for widget, value in (
    (state.W_SUB_CORE_WEIGHT, result.config.core_weight),
    (state.W_SUB_BACKGROUND_WEIGHT, result.config.background_weight),
    (state.W_SUB_FOLLOW_UP_WEIGHT, result.config.follow_up_weight),
    (state.W_SUB_THRESHOLD, result.config.support_threshold),
):
    state.seed_widget(widget, float(value))
columns = st.columns(4)
core_weight = columns[0].number_input("Core weight", min_value=0.0, step=0.25, key=state.W_SUB_CORE_WEIGHT)
background_weight = columns[1].number_input(
    "Background weight", min_value=0.0, step=0.25, key=state.W_SUB_BACKGROUND_WEIGHT
)
follow_up_weight = columns[2].number_input(
    "Follow-up weight", min_value=0.0, step=0.25, key=state.W_SUB_FOLLOW_UP_WEIGHT
)
threshold = columns[3].number_input(
    "Support threshold (similarity)", min_value=-1.0, max_value=1.0, step=0.05, key=state.W_SUB_THRESHOLD,
    help="A sub-question is supported when a chunk is at least this similar to it. Relative to the embedding model.",
)
st.caption(
    f"The weights are our assumption (defaults core {DEFAULTS.core_weight:g}, background "
    f"{DEFAULTS.background_weight:g}, follow-up {DEFAULTS.follow_up_weight:g}): the paper this follows "
    "(Xie et al., 2024, arXiv:2410.15531) did not publish its weights. Changing them or the threshold rescores "
    "at once, without asking the LLM again."
)
try:
    wanted = SubQuestionConfig(
        core_weight=core_weight, background_weight=background_weight, follow_up_weight=follow_up_weight,
        support_threshold=threshold, top_k=result.config.top_k, max_sub_questions=result.config.max_sub_questions,
        headline_support=result.config.headline_support,
    )
except CoverageError as error:
    flow.show_error(error)
else:
    result = check_steps.rescore_subquestions(result, wanted)

# ------------------------------------------------------------------ overall
n_scored = result.count("ok")
st.header("Overall")
st.caption(
    f"{n_scored:,} of {formats.count(len(result.questions), 'question')} broken down by {widgets.plain(result.model or settings.llm_model)}. "
    f"Supported: some chunk is at least {result.config.support_threshold:g} similar. Supported by retrieval: "
    f"one of the {formats.count(result.config.top_k, 'chunk')} retrieved for the original question is."
)
columns = st.columns(3)
columns[0].metric(
    "Questions broken down", f"{n_scored} of {len(result.questions)}", border=True,
    help="The others failed or were not sent; see below.",
)
columns[1].metric(
    "Core supported (mean)", formats.percent(result.mean_core_supported_share()), border=True,
    help="Per question, the share of its core sub-questions the knowledge base supports; averaged over questions.",
)
columns[2].metric(
    "Weighted score (mean)", formats.percent(result.mean_weighted_score()), border=True,
    help="Per question, the weights of its supported sub-questions over the weights of all of them; averaged.",
)
for column, coverage in zip(st.columns(3), result.by_type):
    column.metric(
        f"{TYPE_LABELS[coverage.type]} sub-questions supported", formats.percent(coverage.share), border=True,
        help=f"{coverage.n_supported} of {coverage.n}, pooled over the questions; {coverage.n_supported_by_retrieved} "
        f"by the retrieved chunks ({formats.percent(coverage.share_by_retrieved)}).",
    )
widgets.table(view.subquestion_type_table(result), bars=("share supported", "share by retrieval"))

# ------------------------------------------------------------------ the gaps
every = view.subquestion_rows(result, analysis.corpus.chunks)
gaps = view.unsupported_core_table(every)
st.header(f"Unsupported core sub-questions ({len(gaps)})")
if gaps.empty:
    st.success("The knowledge base supports every core sub-question of these questions.")
else:
    st.caption(
        "A complete answer needs these, and no passage of the knowledge base is about them: add documents that "
        "cover them, or accept that these questions cannot be answered in full."
    )
    widgets.table(gaps, medium=("question",), large=("unsupported core sub-question",), scores=("best similarity",))

# ------------------------------------------------------------------ per question
st.header("Per question")
widgets.table(
    view.subquestion_question_table(result), medium=("question",),
    bars=("core supported", "weighted score", "core supported by retrieval"),
)
failed = view.subquestion_failures(result)
if len(failed):
    st.warning(
        f"{formats.count(len(failed), 'question')} could not be broken down. "
        "Select them and run again to retry (the others are not sent again).",
        icon=":material/warning:",
    )
    widgets.table(failed, medium=("question",), large=("reason",))

st.subheader("Every sub-question")
every = every.drop(columns=["unsupported core"])
widgets.table(every, medium=("question",), large=("sub-question",), scores=("best similarity", "retrieved similarity"))
widgets.csv_download("Download every sub-question (CSV)", every, "sub-questions.csv")
st.caption(
    "Supported means similar, not answered: a passage about the sub-question counts whether or not it states "
    "the answer. These results go into the JSON report on Gap analysis."
)
