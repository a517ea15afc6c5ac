"""Sub-questions: can the knowledge base answer *all* of a question, not just be about it?"""

import pandas as pd
import streamlit as st

from coverage_core.embeddings import embed_texts
from coverage_core.errors import CoverageError, ProviderError
from coverage_core.subquestions import (
    FATAL_KINDS,
    SubQuestionConfig,
    SubQuestionResult,
    analyse_subquestions,
    estimate_decomposition_cost,
    rescore_subquestions,
    unavailable_reason,
)
from ui import flow, state, widgets

QUICK_PICK = 10
TYPE_LABELS = {"core": "Core", "background": "Background", "follow-up": "Follow-up"}
STATUS_LABELS = {"failed": "failed", "skipped": "not sent"}
DEFAULTS = SubQuestionConfig()

st.title("Sub-questions")
st.write(
    "A question can be *about* the documents without the documents holding everything an answer needs. "
    "An LLM breaks each selected question into sub-questions — **core** (a complete answer must settle it), "
    "**background** (helpful context) and **follow-up** (what a reader might ask next) — and each "
    "sub-question is looked up in the knowledge base. Unsupported core sub-questions are the gaps worth fixing."
)
analysis = flow.require_analysis()
inputs = flow.stored_inputs()
settings = state.settings()

try:
    llm = flow.llm_client()
except CoverageError as error:  # e.g. the LLM is on but has no key
    st.error(str(error))
    st.page_link(flow.CONFIGURE_PAGE, label="Set up the LLM on Configure", icon=":material/tune:")
    st.stop()
reason = unavailable_reason(llm)
if reason is not None:
    st.info(reason)
    st.page_link(flow.CONFIGURE_PAGE, label="Turn on an LLM on Configure", icon=":material/tune:")
    st.stop()


class _Watched:
    """The chat client, remembering the error that made the core stop asking (bad key, server down)."""

    def __init__(self, client):
        self.client, self.config, self.fatal = client, client.config, None

    def complete_json(self, system: str, user: str):
        try:
            return self.client.complete_json(system, user)
        except ProviderError as error:
            if error.kind in FATAL_KINDS:
                self.fatal = error
            raise


def _merged(old: SubQuestionResult | None, new: SubQuestionResult, config: SubQuestionConfig) -> SubQuestionResult:
    """``old`` with ``new``'s questions added or replacing the same rows, rescored together (no LLM call)."""
    by_row = {q.row: q for q in old.questions} if old is not None else {}
    by_row.update({q.row: q for q in new.questions})
    questions = tuple(sorted(by_row.values(), key=lambda q: q.row))
    return rescore_subquestions(SubQuestionResult(config, questions, (), new.model, new.warnings), config)


def _share(value: float) -> str:
    return "–" if value != value else f"{value:.0%}"


# ------------------------------------------------------------------ stored result
# Keyed by the embedded inputs first (flow.subquestions_for_inputs() relies on that), then by what changes
# a decomposition or its similarities: the LLM, the number of sub-questions and k. Weights and the
# threshold only rescore, so they are not in the key.
key = (
    inputs.corpus_key, inputs.question_key, settings.llm_model, settings.llm_base_url,
    DEFAULTS.max_sub_questions, int(settings.retrieval_k),
)
result: SubQuestionResult | None = state.stage(state.SUBQUESTIONS, key)
done_rows = {q.row for q in result.questions if q.status == "ok"} if result is not None else set()

# ------------------------------------------------------------------ selection
questions = analysis.questions.questions
position_of_row = {q.row: i for i, q in enumerate(questions)}
least_supported = [int(i) for i in analysis.question_table["max_similarity"].to_numpy().argsort(kind="stable")]


def _pick(positions) -> None:
    st.session_state[state.W_SUB_SELECTION] = list(positions)


st.header("Questions to break down")
st.caption(
    f"One LLM request per question (a second one if the reply is not valid JSON), with {settings.llm_model}. "
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
        st.error(str(error))
    else:
        st.caption(cost.label)
if st.button("Break into sub-questions", key=state.W_SUB_RUN, type="primary", disabled=not to_send):
    watched = _Watched(llm)
    with st.status(f"Breaking {len(to_send)} questions into sub-questions…", expanded=True) as status:
        bar = st.progress(0.0, text="Starting…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Question {done} of {total}")

        try:
            model = flow.embedder_for(inputs)
            cache = flow.embedding_cache()
            new = analyse_subquestions(
                [questions[i] for i in to_send],
                analysis.question_vectors[to_send],
                analysis.corpus.vectors,
                lambda texts: embed_texts(texts, model, cache).vectors,
                watched,
                run_config,
                progress,
            )
        except CoverageError as error:
            status.update(label="Stopped.", state="error")
            st.error(str(error))
        else:
            config = result.config if result is not None else run_config
            result = state.put_stage(state.SUBQUESTIONS, key, _merged(result, new, config))
            ok = new.count("ok")
            status.update(
                label=f"{ok} of {len(to_send)} questions broken into sub-questions.",
                state="complete" if ok == len(to_send) else "error", expanded=False,
            )
    if watched.fatal is not None:
        st.error(str(watched.fatal))
        st.caption("The questions finished before it are kept; fix the problem and run again for the rest.")

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
    st.error(str(error))
else:
    if wanted != result.config:
        result = state.put_stage(state.SUBQUESTIONS, key, rescore_subquestions(result, wanted))

# ------------------------------------------------------------------ overall
scored = [q for q in result.questions if q.status == "ok"]
st.header("Overall")
st.caption(
    f"{len(scored)} of {len(result.questions)} questions broken down by {result.model or settings.llm_model}. "
    f"Supported: some chunk is at least {result.config.support_threshold:g} similar. Supported by retrieval: "
    f"one of the {result.config.top_k} chunks retrieved for the original question is."
)
columns = st.columns(3)
columns[0].metric(
    "Questions broken down", f"{len(scored)} of {len(result.questions)}", border=True,
    help="The others failed or were not sent; see below.",
)
columns[1].metric(
    "Core supported (mean)", _share(result.mean_core_supported_share()), border=True,
    help="Per question, the share of its core sub-questions the knowledge base supports; averaged over questions.",
)
columns[2].metric(
    "Weighted score (mean)", _share(result.mean_weighted_score()), border=True,
    help="Per question, the weights of its supported sub-questions over the weights of all of them; averaged.",
)
for column, coverage in zip(st.columns(3), result.by_type):
    column.metric(
        f"{TYPE_LABELS[coverage.type]} sub-questions supported", _share(coverage.share), border=True,
        help=f"{coverage.n_supported} of {coverage.n}, pooled over the questions; {coverage.n_supported_by_retrieved} "
        f"by the retrieved chunks ({_share(coverage.share_by_retrieved)}).",
    )
st.dataframe(
    pd.DataFrame(
        {
            "type": [c.type for c in result.by_type],
            "sub-questions": [c.n for c in result.by_type],
            "supported": [c.n_supported for c in result.by_type],
            "share supported": [c.share for c in result.by_type],
            "supported by retrieval": [c.n_supported_by_retrieved for c in result.by_type],
            "share by retrieval": [c.share_by_retrieved for c in result.by_type],
        }
    ),
    hide_index=True,
    column_config={
        "share supported": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
        "share by retrieval": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
    },
)

# ------------------------------------------------------------------ the gaps
chunks = analysis.corpus.chunks
gaps = pd.DataFrame(
    [
        {
            "row": q.row,
            "question": q.question,
            "unsupported core sub-question": s.text,
            "best similarity": s.best_similarity,
            "nearest document": chunks[s.best_chunk].document,
        }
        for q in scored
        for s in q.sub_questions
        if s.type == "core" and s.text in q.unsupported_core
    ],
    columns=["row", "question", "unsupported core sub-question", "best similarity", "nearest document"],
)
st.header(f"Unsupported core sub-questions ({len(gaps)})")
if gaps.empty:
    st.success("The knowledge base supports every core sub-question of these questions.")
else:
    st.caption(
        "A complete answer needs these, and no passage of the knowledge base is about them: add documents that "
        "cover them, or accept that these questions cannot be answered in full."
    )
    st.dataframe(
        gaps, hide_index=True,
        column_config={
            "question": st.column_config.TextColumn(width="medium"),
            "unsupported core sub-question": st.column_config.TextColumn(width="large"),
            "best similarity": st.column_config.NumberColumn(format="%.3f"),
        },
    )

# ------------------------------------------------------------------ per question
st.header("Per question")
st.dataframe(
    pd.DataFrame(
        [
            {
                "row": q.row,
                "question": q.question,
                "status": STATUS_LABELS.get(q.status, q.status),
                "core supported": q.core_supported_share,
                "weighted score": q.weighted_score,
                "core supported by retrieval": q.retrieved.core_supported_share,
                "sub-questions": len(q.sub_questions),
                "unsupported core": len(q.unsupported_core),
            }
            for q in result.questions
        ]
    ),
    hide_index=True,
    column_config={
        "question": st.column_config.TextColumn(width="medium"),
        "core supported": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
        "weighted score": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
        "core supported by retrieval": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent"),
    },
)
failed = [q for q in result.questions if q.status != "ok"]
if failed:
    st.warning(
        f"{len(failed)} question{'s' if len(failed) != 1 else ''} could not be broken down. "
        "Select them and run again to retry (the others are not sent again).",
        icon=":material/warning:",
    )
    st.dataframe(
        pd.DataFrame(
            {
                "row": [q.row for q in failed],
                "question": [q.question for q in failed],
                "status": [STATUS_LABELS.get(q.status, q.status) for q in failed],
                "reason": [q.reason for q in failed],
            }
        ),
        hide_index=True,
        column_config={
            "question": st.column_config.TextColumn(width="medium"),
            "reason": st.column_config.TextColumn(width="large"),
        },
    )

st.subheader("Every sub-question")
every = pd.DataFrame(
    [
        {
            "row": q.row,
            "question": q.question,
            "type": s.type + (" (assumed)" if s.type_assumed else ""),
            "sub-question": s.text,
            "best similarity": s.best_similarity,
            "supported": s.supported,
            "retrieved similarity": s.retrieved_similarity,
            "supported by retrieved": s.supported_by_retrieved,
            "nearest document": chunks[s.best_chunk].document,
        }
        for q in scored
        for s in q.sub_questions
    ],
    columns=[
        "row", "question", "type", "sub-question", "best similarity", "supported", "retrieved similarity",
        "supported by retrieved", "nearest document",
    ],
)
st.dataframe(
    every,
    hide_index=True,
    column_config={
        "question": st.column_config.TextColumn(width="medium"),
        "sub-question": st.column_config.TextColumn(width="large"),
        "best similarity": st.column_config.NumberColumn(format="%.3f"),
        "retrieved similarity": st.column_config.NumberColumn(format="%.3f"),
    },
)
widgets.csv_download("Download every sub-question (CSV)", every, "sub-questions.csv")
st.caption(
    "Supported means similar, not answered: a passage about the sub-question counts whether or not it states "
    "the answer. These results go into the JSON report on Gap analysis."
)
