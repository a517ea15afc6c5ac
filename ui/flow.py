"""Shared page steps: run the analysis with progress, get the current analysis, run the checks.

Pages stay thin: they read widgets and call these helpers, which call
:mod:`ui.engine` (the core calls; the stage order is the core's
:class:`~coverage_core.session.AnalysisSession`, kept in session state) and
keep results in session state through :mod:`ui.state`. Every user-facing failure is a
:class:`~coverage_core.errors.CoverageError` shown with ``st.error``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import streamlit as st

from coverage_core import embedding_steps, gap_finding
from coverage_core.checks.answerability import fitness_threshold
from coverage_core.checks.runner import run_traffic_check
from coverage_core.embeddings import EmbeddingCache, environment_key, key_variable, make_embedder
from coverage_core.embeddings.choice import ModelChoice, choose_model
from coverage_core.embeddings.registry import sends_requests
from coverage_core.errors import CoverageError
from coverage_core.languages import LanguageProfile, profile_languages
from coverage_core.session import EMBEDDING_STAGES, AnalysisSession, EmbeddedInputs, StageKey, calibration_key
from coverage_core.suggest.progress import progress_sentence
from ui import engine, exports, formats, history, sidebar, state
from ui.messages import shown_message, shown_messages
from ui.state import is_stale, stored_inputs, wanted_keys
from ui.views import (
    compare as compare_view,
    gaps as gaps_view,
)

CONFIGURE_PAGE = "pages/2_configure.py"
RESULTS_PAGE = "pages/3_results.py"
GAPS_PAGE = "pages/4_gaps.py"


# ---------------------------------------------------------------- pages
def start_page(title: str, intro: str | None = None) -> None:
    """Every page's first lines: the shared sidebar (:func:`ui.sidebar.render`), the title, what the page does."""
    sidebar.render()
    st.title(title)
    notice = state.provider_notice()
    if notice and title != "Configure":  # held settings wait for the user on Configure, which says so itself
        st.warning(formats.markdown_text(notice), icon=":material/key_off:")
    if intro:
        st.write(intro)


# ---------------------------------------------------------------- resources
@st.cache_resource(show_spinner="Loading the local embedding model…")
def local_embedder(provider: str, model: str):
    """A model that runs on this server, loaded once per server process (it holds no user data)."""
    return make_embedder(provider, model or None)


def embedder():
    """The embedder for the current settings."""
    return embedder_for(engine.embedding_config(state.settings()))


def embedder_for(source, dimensions: int | None = None):
    """The embedder of ``source``: embedded inputs (to embed new texts in their space) or an EmbeddingConfig.

    ``dimensions`` asks an API model for shorter vectors (the dimension
    sweep). The local model is loaded once per server; API embedders are
    never cached, since they hold the session's key.
    """
    config = source.embedding if isinstance(source, EmbeddedInputs) else source
    if not sends_requests(config.provider):
        return local_embedder(config.provider, config.model or "")
    return make_embedder(
        config.provider, config.model, dimensions=dimensions or config.dimensions,
        api_key=state.embed_api_key(), base_url=config.base_url,
    )


def embedding_cache() -> EmbeddingCache:
    """The on-disk cache (``$COVERAGE_CORE_CACHE_DIR`` or the user cache folder)."""
    return EmbeddingCache()


def embed_key_variable(settings: state.Settings) -> str:
    """The server environment variable an API embedder with these settings may take its key from.

    The core decides (:func:`coverage_core.embeddings.key_variable`): the
    provider's own variable for its own endpoint, EMBEDDING_API_KEY for a
    custom base URL, so the page and the embedder always agree.
    """
    return key_variable(settings.provider, settings.base_url or None)


def env_key_present(settings: state.Settings) -> bool:
    """Whether the server's environment holds the key these settings would use."""
    return environment_key(settings.provider, settings.base_url or None) is not None


# ---------------------------------------------------------------- inputs
def show_warnings(messages: Sequence[str]) -> None:
    """Core warnings, in the dashboard's words (:func:`ui.messages.shown_message`: they quote file names,
    columns and cells, so they are escaped)."""
    for message in shown_messages(messages):
        st.warning(message, icon=":material/warning:")


def show_error(error: object) -> None:
    """A core error, in the dashboard's words."""
    st.error(shown_message(error))


def chunks() -> list:
    """Chunks at the current settings (for cost estimates; nothing is embedded); the passages as they came with vectors."""
    documents = state.documents()
    if documents is None:
        return []
    if documents.embedded:
        return list(documents.passages.chunks)
    return embedding_steps.chunk_corpus(documents.documents, engine.chunking_config(state.settings()), token_limit())


def token_limit():
    """What chunks are fitted to for the current model (:func:`coverage_core.embedding_steps.token_limit`), so the
    counts and costs shown before a run are those of the run; an API model's needs no key."""
    config = engine.embedding_config(state.settings())
    if sends_requests(config.provider):
        return embedding_steps.offline_token_limit(config)
    return embedding_steps.token_limit(embedder(), embedding_cache())


def chunk_texts() -> list[str]:
    """Chunk texts at the current settings (for cost estimates; nothing is embedded); none for passages with vectors."""
    documents = state.documents()
    if documents is not None and documents.embedded:
        return []
    return [chunk.text for chunk in chunks()]


def calibration_cost(model: str, table, chunk_list: Sequence | None = None, counted: Sequence[str] = ()):
    """What running with the current settings would send to calibrate the support level.

    A :class:`coverage_core.costs.CalibrationCost` of the texts not in the
    embedding cache, or None when nothing would be calibrated: the user set
    the support level, or it is already known for these documents, chunking,
    model and seed. ``chunk_list`` is :func:`chunks` when the caller has it
    already; ``counted`` are texts the caller's estimate already counts (a
    probe sentence that is also a passage is not charged twice). Raises
    CoverageError for settings the core rejects.
    """
    from coverage_core import costs

    wanted = wanted_keys()
    settings = state.settings()
    if wanted is None or not engine.calibration_pending(wanted[0], settings, state.analysis_session()):
        return None
    return costs.estimate_calibration_cost(
        chunks() if chunk_list is None else chunk_list, settings.provider, model, table,
        random_state=settings.seed, uncached=uncached_texts, counted=counted,
    )


def uncached_texts(texts: Sequence[str]) -> list[str]:
    """The distinct texts the current embedder would really send (not in the disk cache)."""
    from coverage_core.embeddings.cache import uncached_texts as not_in_cache

    documents = state.documents()
    if documents is not None and documents.embedded:  # passages that came with vectors are never sent
        passages = {chunk.text for chunk in documents.passages.chunks}
        texts = [text for text in texts if text not in passages]
    try:
        model = embedder()
    except CoverageError:
        return list(dict.fromkeys(texts))  # no key yet: assume nothing is cached
    return not_in_cache(texts, model, embedding_cache())


def chunk_counts() -> dict[str, int]:
    """Chunks per document at the current chunk settings (cheap; no embedding)."""
    documents = state.documents()
    if documents is None:
        return {}
    language_profile()  # the automatic model choice, and so the chunks' token limit, follows the texts loaded
    if documents.embedded:
        key = StageKey.of(documents.fingerprint, chunking=None)
        return state.memo(state.CHUNK_COUNTS, key, lambda: _passage_counts(documents.passages.chunks))
    settings = state.settings()
    key = StageKey.of(documents.fingerprint, chunking=engine.chunking_config(settings),
                      embedding=engine.embedding_config(settings))
    return state.memo(state.CHUNK_COUNTS, key,
                      lambda: engine.chunk_counts(documents.documents, key.chunking, token_limit()))


def language_profile() -> LanguageProfile | None:
    """The languages of the loaded documents and questions; None when neither is loaded.

    Kept per inputs; new questions with the same documents read only the questions.
    """
    documents, asked = state.documents(), state.questions()
    if documents is None and asked is None:
        return None
    key = StageKey.of(documents.fingerprint if documents is not None else None,
                      questions=engine.questions_fingerprint(asked) if asked is not None else None)
    texts = asked.texts if asked is not None else []
    stored = state.stored_stage(state.LANGUAGES)

    def compute() -> LanguageProfile:
        if stored is not None and stored.key.source == key.source:
            return stored.value.with_questions(texts)
        return profile_languages(documents.documents if documents is not None else (), texts)

    profile = state.memo(state.LANGUAGES, key, compute)
    if documents is not None and not documents.embedded:  # vectors made elsewhere keep the model named for them
        choice = choose_model(profile.document_shares, profile.question_shares, _characters(documents))
        if state.settings().automatic_choice != (choice.provider, choice.model):
            state.update_settings(automatic_choice=(choice.provider, choice.model))
    return profile


def model_choice() -> ModelChoice | None:
    """What the automatic model choice picks for the loaded texts, and why; None before documents are loaded."""
    documents = state.documents()
    profile = language_profile()
    if profile is None or documents is None or documents.embedded:
        return None
    return choose_model(profile.document_shares, profile.question_shares, _characters(documents))


def _characters(documents: state.LoadedDocuments) -> int:
    return sum(len(document.text) for document in documents.documents)


def _passage_counts(passages) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in passages:
        counts[chunk.document] = counts.get(chunk.document, 0) + 1
    return counts


# ---------------------------------------------------------------- analysis
def run_embedding() -> EmbeddedInputs | None:
    """Run the whole analysis for the current inputs and settings, showing each stage as it goes.

    The session (``coverage_core.session``) embeds the passages and the
    questions (done of total, rate, time left), calibrates τ, clusters,
    screens and measures; what finished is kept even if a later step fails
    (and the disk cache means a retry embeds only the rest). Errors are
    shown; None then.
    """
    docs, questions = state.documents(), state.questions()
    if docs is None or questions is None:
        st.error("Add documents and a question file on the Upload page first.")
        return None
    language_profile()  # the automatic model choice follows the texts loaded
    settings = state.settings()
    try:
        engine.analysis_config(settings)  # settings the core rejects stop here, before any work
        corpus_key, question_key = wanted_keys()
        with st.status("Reading the documents…", expanded=True) as status:
            n_chunks = sum(chunk_counts().values())
            st.write(
                f"Read {formats.count(len(docs.documents), 'document')}: {formats.count(n_chunks, 'passage')}; "
                f"{formats.count(len(questions.questions), 'question')}."
            )
            bar = st.progress(0.0, text="Loading the embedding model…")
            model, cache = embedder(), embedding_cache()
            report = _progress_report(bar, status)
            if docs.embedded and state.stage(state.CORPUS, corpus_key) is None:  # vectors came with the passages
                status.update(label="Checking the vectors against the embedding model…")
                engine.check_passage_vectors(docs.passages, corpus_key.embedding, model, questions, cache)
            session = state.analysis_session()
            inputs = session.embed(corpus_key, question_key, questions, model, cache, documents=docs.documents,
                                   passages=docs.passages, keep_in=state.input_slots(), progress=report)
            analysis = engine.tune(inputs, settings, state.overrides(), session, model, cache, progress=report)
            _write_run(docs, inputs, analysis)
            history.record_finished(analysis)
            bar.progress(1.0, text="Done.")
            status.update(label="Analysis done.", state="complete", expanded=False)
    except CoverageError as error:
        show_error(error)
        return None
    return stored_inputs()


def _progress_report(bar, status):
    """The session's progress callback: the bar counts the embedded texts, the label names each stage."""
    clock = engine.ProgressClock()

    def report(stage: str, done: int, total: int) -> None:
        text = clock.text(stage, done, total)
        if stage in EMBEDDING_STAGES:
            bar.progress(done / total if total else 1.0, text=text)
        status.update(label=text)

    return report


def _write_run(docs: state.LoadedDocuments, inputs: EmbeddedInputs, analysis) -> None:
    """What the run found, one line a stage."""
    corpus = inputs.corpus
    if docs.embedded:
        st.write(
            f"Took the {formats.count(len(corpus.chunks), 'passage')} with their vectors "
            f"({formats.count(corpus.vectors.shape[1], 'dimension')})."
        )
    else:
        st.write(engine.embedded_sentence("passage", corpus.embedded))
    st.write(engine.embedded_sentence("question", inputs.question_embedding))
    calibration = analysis.calibration
    st.write(f"Support level: {formats.similarity(calibration.support_threshold)} ({engine.support_origin(calibration)}).")
    st.write(f"Clustered the passages into {formats.count(analysis.clustering.n_clusters, 'topic')}.")
    st.write(
        f"Screened {formats.count(len(analysis.questions.questions), 'question')}: "
        f"{int(analysis.is_outlier.sum()):,} off-topic."
    )


def current_analysis(show_notes: bool = True):
    """The analysis for the current settings, recomputing only the cheap stages.

    None when nothing has been embedded yet. If inputs or embedding settings
    changed since the last run, the last embedded data is used and a note
    says to run again.
    """
    inputs = stored_inputs()
    if inputs is None:
        return None
    if show_notes and is_stale(inputs):
        st.warning(
            "The inputs or the embedding settings changed since the last run; these results are from the "
            "last run. Run the analysis again on Configure to update them."
        )
    cache = state.analysis_session()
    settings = state.settings()
    try:
        if engine.has_calibration(inputs, settings, cache):
            return engine.tune(inputs, settings, state.overrides(), cache)
        with st.spinner("Calibrating the support level on your documents (once per corpus)…"):
            return engine.tune(
                inputs, settings, state.overrides(), cache,
                embedder=lambda: embedder_for(inputs), embed_cache=embedding_cache(),
            )
    except CoverageError as error:
        show_error(error)
        return None


def calibrated_level() -> float | None:
    """The automatic (calibrated) support level of the stored corpus, if it was computed already."""
    inputs = stored_inputs()
    cache = state.get(state.TUNING)
    if inputs is None or not isinstance(cache, AnalysisSession):
        return None
    settings = state.settings().replace(support_threshold=None)
    try:
        config = engine.analysis_config(settings, inputs.embedding, inputs.chunking)
    except CoverageError:
        return None
    found = cache.calibrations.get(calibration_key(inputs.corpus_key, config), None)
    return None if found is None else float(found.support_threshold)


def require_analysis():
    """The current analysis, or an info box and a stop."""
    analysis = current_analysis()
    if analysis is None:
        if stored_inputs() is None:
            st.info(
                "No analysis yet. Upload documents and questions (or click **Try the example** on Upload), "
                "then run the analysis on Configure."
            )
        st.stop()
    return analysis


def llm_client():
    """The chat client of the current settings, or None when the LLM is off. Raises ProviderError."""
    settings = state.settings()
    if not settings.llm_enabled:
        return None
    from coverage_core.suggest.llm import ChatClient, LLMConfig

    return ChatClient(
        LLMConfig(model=settings.llm_model, base_url=settings.llm_base_url or None, api_key=state.llm_api_key())
    )


def llm_key() -> StageKey:
    return engine.llm_key(state.settings())


def gaps_for(analysis, use_llm: bool = False, write_more: bool = False):
    """The analysis with gaps: written by the bundled model (or drafts) once per analysis; LLM only when asked.

    ``write_more``: the bundled model writes for the next gaps that hold drafts only, keeping the written ones.
    """
    # The progress bar's place exists on every run, written or not: a run that wrote (with the bar) and the
    # next one (without) must lay the page out alike, or ticking a row below would make the page jump.
    slot = st.empty()
    key = StageKey.of(analysis_key(), llm=llm_key() if use_llm else None)  # None: the bundled model or drafts
    previous = state.stored_stage(state.GAPS)
    written = ()
    if not use_llm and previous is not None and previous.key.source == key.source:
        if not write_more:
            return previous.value  # LLM suggestions, or more written gaps, for this analysis are kept
        written = previous.value.gaps
        key = StageKey.of(key.source, llm=None, written=sum(gap.written for gap in written))

    def compute():
        saved = state.stage(state.SAVED_GAPS, key.source)  # the gaps a saved analysis brought, for this analysis
        if saved is not None and not use_llm and not written:
            return dataclasses.replace(analysis, warnings=list(analysis.warnings), gaps=list(saved))
        llm = llm_client() if use_llm else None
        model = model_cache = None
        inputs = stored_inputs()
        if inputs is not None:  # written questions are checked against τ with the chunks' model
            try:
                model, model_cache = embedder_for(inputs), embedding_cache()
            except CoverageError as error:  # no model to check them with (a key missing or on hold): drafts
                show_error(error)
        bar = slot.progress(0.0, text="Finding gaps…")

        def progress(done: int, total: int, seconds_left: float | None) -> None:
            bar.progress(min(1.0, done / total) if total else 1.0, text=progress_sentence(done, total, seconds_left))

        try:
            with st.spinner("Finding gaps and writing suggestions…"):
                return gap_finding.with_gaps(analysis, llm, model, model_cache, written=written, progress=progress)
        finally:
            bar.empty()  # the questions are on the page now; a full bar would only push them down

    return state.memo(state.GAPS, key, compute)


def suggestions_table(gapped) -> None:
    """Give the suggestions editor the suggestions of ``gapped``'s gaps when they changed, keeping the user's rows;
    the first time after a saved analysis was opened, its table with the decisions it kept
    (:func:`ui.views.decisions.restore`)."""
    from ui import widgets
    from ui.views import decisions as decisions_view

    key = engine.suggestions_key(analysis_key(), gapped)
    if state.get(state.SUGGESTIONS_FOR) != key:
        merged = decisions_view.next_table(state.get(state.SUGGESTIONS_EDITED), gaps_view.suggestions_frame(gapped),
                                           state.get(state.SAVED_DECISIONS))
        state.drop(state.SAVED_DECISIONS)  # put back once
        widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, merged)
        state.put(state.SUGGESTIONS_FOR, key)


def analysis_key() -> StageKey | None:
    """The key of the session's current analysis (None before a run or for settings the core rejects)."""
    inputs = stored_inputs()
    if inputs is None:
        return None
    try:
        return engine.analysis_key(inputs, state.settings(), state.overrides())
    except CoverageError:
        return None


def projection_for(analysis, method: str = "tsne"):
    """The 2-D map of the analysed vectors, computed once per data set and method.

    Keyed by the embedded inputs only, so moving K, a threshold or an
    override never recomputes it (cluster colours come from the current
    labels when it is drawn).
    """
    from coverage_core.projection import project_2d

    def compute():
        with st.spinner(f"Drawing the map of {formats.count(len(analysis.corpus.chunks), 'chunk')} (once per data set)…"):
            return project_2d(
                analysis.corpus.vectors, analysis.question_vectors, analysis.clustering.labels,
                method=method, random_state=analysis.config.random_state,
            )

    return state.memo(state.PROJECTION, StageKey.of(stored_inputs().key, method=method), compute)


def mds_for(analysis):
    """The MDS points of the fitness page, computed once per embedded inputs (never on a threshold or K change)."""
    from coverage_core.checks import answerability

    def compute():
        n = len(analysis.corpus.chunks) + len(analysis.questions.questions)
        with st.spinner(f"Placing {formats.count(min(n, answerability.DEFAULT_MDS_POINTS), 'point')} with MDS (once per data set)…"):
            return answerability.mds_points(
                analysis.question_vectors, analysis.corpus.vectors, chunk_labels=analysis.clustering.labels,
                random_state=analysis.config.random_state,
            )

    return state.memo(state.MDS, StageKey.of(stored_inputs().key), compute)


def price_table():
    """The price table as last edited on Configure (the default table before any edit)."""
    from coverage_core.costs import default_price_table

    for key in (state.PRICE_TABLE_EDITED, state.PRICE_TABLE):
        table = state.get(key)
        if table is not None:
            return table
    return default_price_table()


def checks_for(analysis) -> exports.Checks:
    """Retrieval and answerability of the current analysis, plus any sub-question result computed for it.

    Each check is computed once per analysis and its settings (k, the
    columns). A check whose column the user named is unusable is left out
    with its reason (``retrieval_error``, ``answerability_error``), for the
    page that owns the setting to show; the other check still runs.
    """
    settings = state.settings()
    key = StageKey.of(
        analysis_key(), k=int(settings.retrieval_k), relevant_column=settings.relevant_column,
        label_column=settings.label_column,
    )
    found = state.memo(state.RETRIEVAL, key, lambda: exports.checks(analysis, settings))
    return dataclasses.replace(found, subquestions=subquestions_for_inputs())


def subquestions_for_inputs():
    """The last sub-question result, if it was computed on the current embedded inputs."""
    inputs = stored_inputs()
    stored = state.stored_stage(state.SUBQUESTIONS)
    if inputs is None or stored is None:
        return None
    return stored.value if stored.key.source == inputs.key else None


def improvement_for(analysis) -> tuple[gaps_view.Improvement | None, bool]:
    """The last "Apply" result and whether it was made from the current analysis."""
    stored = state.stored_stage(state.IMPROVED)
    if stored is None:
        return None, False
    return stored.value, stored.key == analysis_key()


def current_improvement(analysis) -> gaps_view.Improvement | None:
    """The last "Apply" result if it was made from the current analysis (what the exports may report), else None."""
    improvement, current = improvement_for(analysis)
    return improvement if current else None


def improve(analysis, accepted, rows=()) -> gaps_view.Improvement:
    """Rescore with the accepted questions (embedded with the analysis's model) and keep the result.

    ``rows`` are the suggestion-table rows of the accepted questions (:func:`ui.views.gaps.accepted_rows`),
    kept with the result for the reports.
    """
    improvement = gaps_view.improve(
        analysis, accepted, embedder_for(stored_inputs()), embedding_cache(), state.overrides(), rows,
        relevant_column=state.settings().relevant_column or None,
    )
    return state.put_stage(state.IMPROVED, analysis_key(), improvement)


def compare(analysis, other, names: tuple[str, str]) -> compare_view.Comparison:
    """Score ``other`` on the analysis's chunks and clusters, and keep the result."""
    result = compare_view.compare(analysis, other, embedder_for(stored_inputs()), embedding_cache(), names)
    key = StageKey.of(analysis_key(), other=engine.questions_fingerprint(other), name=names[1])
    return state.put_stage(state.COMPARISON, key, result)


def comparison_for() -> tuple[compare_view.Comparison | None, bool]:
    """The last comparison and whether it was made from the current analysis."""
    stored = state.stored_stage(state.COMPARISON)
    if stored is None:
        return None, False
    return stored.value, stored.key.source == analysis_key()


def html_report_builder(analysis, inputs_record: dict):
    """A function that builds the HTML report (run only when the user downloads it).

    Everything it needs is read from the session now, so the function itself
    touches no session state: the map if it was drawn for these inputs, the
    Apply result if it belongs to this analysis (with the accepted questions),
    the fitness threshold, and the checks that ran (retrieval, answerability,
    sub-questions).
    """
    inputs = stored_inputs()
    projection = None
    stored = state.stored_stage(state.PROJECTION)
    if inputs is not None and stored is not None and stored.key.source == inputs.key:
        projection = stored.value
    improvement = current_improvement(analysis)
    threshold = float(state.get(state.FITNESS_THRESHOLD, fitness_threshold(analysis)))
    found = checks_for(analysis)

    def build() -> bytes:
        return exports.html_report(
            analysis, inputs_record, found, improvement, projection=projection, fitness_threshold=threshold
        )

    return build


def saved_analysis_builder(analysis, report: bytes):
    """A function that zips ``analysis`` as a saved analysis with ``report`` and the user's decisions about its
    suggestions (:func:`ui.state.suggestion_decisions`) (run only when the user downloads it); what it needs from
    the session is read now."""
    inputs = stored_inputs()
    from_vectors = bool(inputs is not None and inputs.from_vector_store)
    question_file = state.question_file()
    name = question_file.name if question_file is not None else None
    decisions = state.suggestion_decisions(analysis_key())

    def build() -> bytes:
        return exports.saved_analysis_zip(analysis, report, from_vectors=from_vectors, question_file_name=name,
                                          decisions=decisions)

    return build


def traffic_for(analysis, log):
    """The production-traffic comparison of ``log`` against the current analysis, computed once per
    (analysis, log): the queries are embedded with the analysis's model through the disk cache."""
    key = StageKey.of(analysis_key(), log=engine.digest(tuple(log.queries), log.counts.tobytes()))

    def compute():
        inputs = stored_inputs()
        with st.spinner(f"Embedding {formats.count(log.n_distinct, 'distinct query', 'distinct queries')} and comparing them…"):
            return run_traffic_check(analysis, log, embedder_for(inputs), embedding_cache())

    return state.memo(state.TRAFFIC, key, compute)


def add_replacement_suggestions(analysis, passages) -> int:
    """Write replacement questions for the chunks ``passages`` of ``analysis`` (the stale questions' changed
    passages) and put them into the Gap page's suggestions editor; returns how many were new. The writer's
    warnings are shown, one sentence each."""
    from ui import widgets

    inputs = stored_inputs()
    embedder = None
    if inputs is not None:  # written questions are checked against τ with the chunks' model
        try:
            embedder = embedder_for(inputs)
        except CoverageError as error:  # no model to check them with: drafts
            show_error(error)
    with st.spinner(f"Writing replacement questions for {formats.count(len(passages), 'changed passage')}…"):
        suggestions, warnings = gap_finding.replacement_suggestions(analysis, passages, embedder, embedding_cache())
    for warning in warnings:
        st.warning(widgets.plain(warning))
    before = state.get(state.SUGGESTIONS_EDITED, state.get(state.SUGGESTIONS_BASE))
    chunk_texts = [chunk.text for chunk in analysis.corpus.chunks]
    merged = gaps_view.append_suggestions(before, gaps_view.replacement_frame(suggestions, chunk_texts))
    widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, merged)
    state.put(state.SUGGESTIONS_EDITED, merged)
    return len(merged) - (0 if before is None else len(before))


def add_traffic_suggestions(result) -> int:
    """Put the traffic's suggestions into the Gap page's suggestions editor; returns how many were new."""
    from ui import widgets

    before = state.get(state.SUGGESTIONS_EDITED, state.get(state.SUGGESTIONS_BASE))
    inputs = stored_inputs()
    chunk_texts = [chunk.text for chunk in inputs.corpus.chunks] if inputs is not None else []
    merged = gaps_view.append_suggestions(before, gaps_view.traffic_suggestions_frame(result, chunk_texts))
    widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, merged)
    # Also the editor's latest output: the Gap page merges its fresh gap suggestions into it.
    state.put(state.SUGGESTIONS_EDITED, merged)
    return len(merged) - (0 if before is None else len(before))
