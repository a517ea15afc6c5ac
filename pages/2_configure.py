"""Configure: embedding model, chunking, clusters and thresholds, LLM; costs before anything is sent."""

import os

import streamlit as st

from coverage_core import costs
from coverage_core.embeddings import CUSTOM_KEY_VARIABLE, PROVIDERS
from coverage_core.embeddings.choice import AUTO
from coverage_core.errors import CoverageError
from coverage_core.suggest.llm import DEFAULT_LLM_MODEL, llm_key_variable
from ui import engine, flow, formats, state, widgets

flow.start_page("Configure")
documents, questions = state.documents(), state.questions()
if documents is None or questions is None:
    st.info("Add documents and a question file on the Upload page first (or click **Try the example** there).")
    st.stop()

settings = state.settings()


# A key typed for one provider or server is never sent to another: changing
# either forgets it. Choosing them here is the user's own choice, so it also
# ends the hold on settings a saved analysis brought.
def choose_provider() -> None:
    state.update_settings(provider=st.session_state[state.W_PROVIDER], model="", dimensions=None, base_url="")
    state.drop(state.EMBED_API_KEY)
    state.confirm_provider_settings()


def choose_base_url() -> None:
    state.update_settings(base_url=st.session_state[state.W_BASE_URL].strip())
    state.drop(state.EMBED_API_KEY)
    state.confirm_provider_settings()


def choose_llm_base_url() -> None:
    state.update_settings(llm_base_url=st.session_state[state.W_LLM_BASE_URL].strip())
    state.drop(state.LLM_API_KEY)


# ------------------------------------------------------------------ embedding
st.header("Embedding model")
held = state.provider_notice()
if held is not None:
    st.warning(widgets.plain(engine.notice_here(held)), icon=":material/key_off:")
    if st.button("Use these embedding settings", key=state.W_CONFIRM_PROVIDER):
        state.confirm_provider_settings()
        st.rerun()
state.seed_widget(state.W_PROVIDER, settings.provider)
provider = st.selectbox(
    "Provider", list(PROVIDERS), format_func=lambda name: PROVIDERS[name].description, key=state.W_PROVIDER,
    on_change=choose_provider,
)
spec = PROVIDERS[provider]
settings = state.settings()
model_key = f"{state.W_MODEL}_{provider}"
model_area, size_area = st.columns(2) if spec.shortens_output else (st, st)
if provider == AUTO:
    choice = flow.model_choice()
    if choice is None:
        st.caption("The model is chosen from the documents' languages; these passages came with their vectors, "
                   "so choose the model that made them.")
    else:
        label = PROVIDERS[choice.provider].label
        named = label if label == choice.model else f"{label} ({choice.model})"
        st.info(f"Chosen: {named}. {choice.reason}", icon=":material/translate:")
elif spec.typed_model:
    state.seed_widget(model_key, settings.model)
    model_area.text_input(
        f"Model (leave empty for {spec.default_model})", key=model_key, help=spec.model_help or None,
        on_change=lambda: state.update_settings(model=st.session_state[model_key].strip()),
    )
else:
    names = list(spec.models)
    state.seed_widget(model_key, settings.model if settings.model in names else spec.default_model)
    if settings.model not in names:
        state.update_settings(model=st.session_state[model_key])
    model_area.selectbox(
        "Model", names, key=model_key,
        on_change=lambda: state.update_settings(model=st.session_state[model_key], dimensions=None),
    )
if spec.shortens_output:
    state.seed_widget(state.W_DIMENSIONS, settings.dimensions or 0)
    size_area.number_input(
        "Dimensions (0 = the model's own size)", min_value=0, max_value=4096, step=64, key=state.W_DIMENSIONS,
        on_change=lambda: state.update_settings(dimensions=int(st.session_state[state.W_DIMENSIONS]) or None),
    )
if spec.compatible_servers:
    state.seed_widget(state.W_BASE_URL, settings.base_url)
    st.text_input(
        f"Base URL of a server compatible with {spec.label} (empty = {spec.label})", key=state.W_BASE_URL,
        placeholder="http://localhost:8000/v1", on_change=choose_base_url,
    )
if spec.key_variable and held is not None:
    st.caption("Confirm the embedding settings above, or choose others, before a key is used.")
elif spec.key_variable:
    settings = state.settings()
    # The same rule the embedder applies, so this says which key will really be sent.
    variable = flow.embed_key_variable(settings)
    custom_server = variable == CUSTOM_KEY_VARIABLE
    if state.typed_embed_key():  # a typed key comes first, wherever the server has one
        st.success("An API key is set for this session (kept in memory only, never saved or exported).")
        if st.button("Forget the key"):
            state.drop(state.EMBED_API_KEY)
            st.rerun()
    elif flow.env_key_present(settings):
        where = " for this base URL" if custom_server else ""
        st.success(f"Using the API key from the server's {variable} environment variable{where}.")
    else:
        if custom_server:
            st.caption(
                f"The server's {spec.key_variable} is sent only to {spec.label} itself, never to another base URL; "
                f"enter the key for this server, or set {variable} on the server."
            )
        key = st.text_input(
            f"API key{' for this base URL' if custom_server else ''} ({variable} is not set on the server)",
            type="password", key=state.W_EMBED_KEY,
            help="Kept in this browser session's memory only: never written to disk, a report or a log.",
        )
        if key:
            state.put(state.EMBED_API_KEY, key.strip())
            state.drop(state.W_EMBED_KEY)
            st.rerun()

# ------------------------------------------------------------------ chunking
st.header("Chunking")
if documents.embedded:
    st.caption("The passages came with their vectors: their chunking is fixed.")
else:
    left, right = st.columns(2)
    state.seed_widget(state.W_CHUNK_SIZE, settings.chunk_size)
    left.number_input(
        "Chunk size (characters)", min_value=100, max_value=20_000, step=100, key=state.W_CHUNK_SIZE,
        help="About 1,000 characters suit the bundled model, which reads 256 tokens.",
        on_change=lambda: state.update_settings(chunk_size=int(st.session_state[state.W_CHUNK_SIZE])),
    )
    state.seed_widget(state.W_CHUNK_OVERLAP, settings.chunk_overlap)
    right.number_input(
        "Overlap (characters)", min_value=0, max_value=10_000, step=50, key=state.W_CHUNK_OVERLAP,
        help="Must be smaller than the chunk size; 20 % is usual.",
        on_change=lambda: state.update_settings(chunk_overlap=int(st.session_state[state.W_CHUNK_OVERLAP])),
    )

n_chunks = None
try:
    n_chunks = sum(flow.chunk_counts().values())
    st.caption(
        f"{formats.count(len(documents.documents), 'document')} → {formats.count(n_chunks, 'chunk')}; "
        f"{formats.count(len(questions.questions), 'question')}."
    )
except CoverageError as error:
    flow.show_error(error)

# ------------------------------------------------------------------ tuning
st.header("Topics and gaps")
st.caption("These apply at once to the results (no re-embedding).")
auto_k = None
if n_chunks:
    try:
        auto_k = engine.default_k(n_chunks)
    except CoverageError as error:
        flow.show_error(error)
widgets.tuning_controls(n_chunks, auto_k)
with st.expander(f"{engine.EXPERTS}: their settings"):
    widgets.expert_controls()

# ------------------------------------------------------------------ support level
st.header("When does a question test a passage?")
st.caption(
    "A question tests (reaches) a passage when their similarity is at least the support level. "
    "Changing it applies at once (no re-embedding)."
)
widgets.support_controls(flow.calibrated_level())

# ------------------------------------------------------------------ LLM
st.header("LLM for gap suggestions and sub-questions")
settings = state.settings()
state.seed_widget(state.W_LLM_ON, settings.llm_enabled)
llm_on = st.toggle(
    "Use an LLM (off: the built-in model writes questions in English, drafts in other languages; "
    "sub-questions need an LLM)",
    key=state.W_LLM_ON, on_change=lambda: state.update_settings(llm_enabled=st.session_state[state.W_LLM_ON]),
)
if llm_on:
    left, right = st.columns(2)
    state.seed_widget(state.W_LLM_MODEL, settings.llm_model)
    left.text_input(
        "Model", key=state.W_LLM_MODEL,
        on_change=lambda: state.update_settings(llm_model=st.session_state[state.W_LLM_MODEL].strip() or DEFAULT_LLM_MODEL),
    )
    state.seed_widget(state.W_LLM_BASE_URL, settings.llm_base_url)
    right.text_input(
        "Base URL (empty = OpenAI; e.g. http://localhost:11434/v1 for Ollama)", key=state.W_LLM_BASE_URL,
        on_change=choose_llm_base_url,
    )
    settings = state.settings()
    variable = llm_key_variable(settings.llm_base_url or None)
    if state.llm_api_key():  # a typed key comes first, as in the client
        st.success("An LLM key is set for this session (memory only).")
        if st.button("Forget the LLM key"):
            state.drop(state.LLM_API_KEY)
            st.rerun()
    elif os.environ.get(variable, "").strip():
        st.success(f"Using the LLM key from the server's {variable} environment variable.")
    else:
        key = st.text_input(
            f"LLM API key ({variable} is not set; a local server may need none)", type="password",
            key=state.W_LLM_KEY,
        )
        if key:
            state.put(state.LLM_API_KEY, key.strip())
            state.drop(state.W_LLM_KEY)
            st.rerun()
    st.caption(
        "The LLM is called only when you ask for it: suggestions on the Gap analysis page, "
        "sub-questions on the Sub-questions page (each shows its cost first)."
    )

# ------------------------------------------------------------------ costs
settings = state.settings()
embedding_paid = settings.embedding_provider.paid
if embedding_paid or settings.llm_enabled:
    st.header("Cost before anything is sent")
    st.caption(
        "Token counts are approximate (about 4 characters per token, counted offline). "
        "Prices are list prices when this table was written: correct them to your contract."
    )
    table = widgets.persistent_editor(
        state.PRICE_TABLE, state.PRICE_TABLE_EDITED, state.W_PRICE_EDITOR,
        costs.default_price_table, num_rows="dynamic", hide_index=True, column_config=widgets.PRICE_COLUMNS,
    )
    try:
        if embedding_paid:
            chunk_list = flow.chunks()
            texts = [chunk.text for chunk in chunk_list] + list(questions.texts)
            uncached = flow.uncached_texts(texts)
            model = settings.embedding_model
            tokens = costs.approximate_tokens(uncached)
            estimate = costs.estimate_embedding_cost(tokens, settings.provider, model, table)
            # Calibrating the support level embeds short texts from the documents too, unless
            # the user set the level or it is already known for these documents and model.
            calibration = flow.calibration_cost(model, table, chunk_list, counted=texts)
            if calibration is not None and not calibration.n_texts:
                calibration = None
            total = estimate if calibration is None else costs.estimate_embedding_cost(
                tokens + calibration.estimate.input_tokens, settings.provider, model, table
            )
            n_send = len(uncached) + (calibration.n_texts if calibration is not None else 0)
            st.metric(
                f"Embedding with {widgets.plain(model)}", total.label.split(" (")[0],
                help=f"{formats.count(n_send, 'text')} {formats.plural(n_send, 'is', 'are')} not in the embedding cache and "
                "would be sent: "
                f"{len(uncached):,} of the {len(texts):,} passages and questions"
                + (f", and {calibration.n_texts:,} for the support-level calibration." if calibration else "."),
            )
            st.caption(widgets.plain(total.label))  # a plain dollar, not LaTeX; the label may name a typed model
            if calibration is not None:
                st.text(f"Passages and questions: about {formats.count(len(uncached), 'text')}, {estimate.label}")
                st.text(calibration.label)
                st.caption(costs.CALIBRATION_NOTE)
        if settings.llm_enabled:
            # At most every cluster is a gap; each request sends up to 5 passages of 1,200 characters.
            n_gaps = settings.n_clusters or auto_k or 10
            tokens_in, tokens_out = costs.estimate_llm_tokens(n_gaps, n_gaps * 5 * 1200)
            estimate = costs.estimate_llm_cost(tokens_in, tokens_out, settings.llm_model, table)
            st.text(f"Gap suggestions with {settings.llm_model}, for up to {formats.count(n_gaps, 'gap')}: {estimate.label}")
    except CoverageError as error:
        flow.show_error(error)

# ------------------------------------------------------------------ run
st.header("Run")
inputs = state.stored_inputs()
needs_run = inputs is None or state.is_stale(inputs)
if not needs_run:
    st.success("The analysis is up to date with these inputs and settings.")
    st.page_link(flow.RESULTS_PAGE, label="See the results", icon=":material/monitoring:")
consent = True
if settings.embedding_provider.paid:
    consent = st.checkbox("I accept the estimated embedding cost", key=state.W_COST_OK)
if st.button("Run analysis", key=state.W_RUN, type="primary", disabled=not consent or not needs_run):
    if flow.run_embedding() is not None and flow.current_analysis(show_notes=False) is not None:
        st.switch_page(flow.RESULTS_PAGE)
