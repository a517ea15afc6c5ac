"""Shared page steps: load inputs, embed with progress, get the current analysis.

Pages stay thin: they read widgets and call these helpers, which call
:mod:`ui.engine` (the core calls) and keep results in session state through
:mod:`ui.state`. Every user-facing failure is a
:class:`~coverage_core.errors.CoverageError` shown with ``st.error``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from coverage_core.embeddings import EmbeddingCache, environment_key, key_variable, make_embedder
from coverage_core.errors import CoverageError
from coverage_core.ingest import read_documents, read_questions, read_uploaded_documents
from ui import engine, state

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "wiki-qa"

CONFIGURE_PAGE = "pages/2_configure.py"
RESULTS_PAGE = "pages/3_results.py"
GAPS_PAGE = "pages/4_gaps.py"


# ---------------------------------------------------------------- resources
@st.cache_resource(show_spinner="Loading the local embedding model…")
def local_embedder(model: str):
    """The local model, loaded once per server process (it holds no user data)."""
    return make_embedder("local", model or None)


def embedder():
    """The embedder for the current settings. API embedders are never cached: they hold a key."""
    settings = state.settings()
    if settings.provider == "local":
        return local_embedder(settings.model)
    config = engine.embedding_config(settings)
    return make_embedder(
        config.provider, config.model, dimensions=config.dimensions,
        api_key=state.embed_api_key(), base_url=config.base_url,
    )


def embedder_for(inputs: engine.EmbeddedInputs):
    """The embedder that made ``inputs`` (to embed new questions in the same space)."""
    config = inputs.embedding
    if config.provider == "local":
        return local_embedder(config.model or "")
    return make_embedder(
        config.provider, config.model, dimensions=config.dimensions,
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
    for message in messages:
        st.warning(message, icon=":material/warning:")


def set_documents(document_set, names: Sequence[str], source: str) -> state.LoadedDocuments:
    loaded = state.LoadedDocuments(
        fingerprint=engine.documents_fingerprint(document_set.documents),
        names=tuple(names),
        documents=tuple(document_set.documents),
        warnings=tuple(str(w) for w in document_set.warnings),
        source=source,
    )
    previous = state.documents()
    if previous is None or previous.fingerprint != loaded.fingerprint:
        state.clear_derived()
    state.put(state.DOCUMENTS, loaded)
    return loaded


def load_uploaded_documents(files: Sequence[tuple[str, bytes]], password: str | None) -> state.LoadedDocuments:
    """Read uploads (raises InputError when none is readable)."""
    document_set = read_uploaded_documents(list(files), pdf_password=password or None)
    return set_documents(document_set, [name for name, _ in files], "upload")


def set_question_file(name: str, data: bytes, source: str = "upload", column: str | None = None):
    """Remember the CSV and read it with ``column`` (None: detect). Raises InputError."""
    previous = state.question_file()
    if previous is None or previous.data != data or previous.name != name:
        state.put(state.QUESTION_FILE, state.QuestionFile(name, data, source))
        state.drop(state.QUESTIONS, state.W_QUESTION_COLUMN, state.COLUMN_ERROR, *state.QUESTION_DERIVED)
    return read_question_file(column)


def table_columns(file: state.QuestionFile) -> list[str]:
    """The columns of a question table whose question column was not detected."""
    from coverage_core.ingest import read_table

    return [str(column) for column in read_table(file.data, file.name).columns]


def chunk_texts() -> list[str]:
    """Chunk texts at the current settings (for cost estimates; nothing is embedded)."""
    documents = state.documents()
    if documents is None:
        return []
    chunks = engine.pipeline.chunk_corpus(documents.documents, engine.chunking_config(state.settings()))
    return [chunk.text for chunk in chunks]


def uncached_texts(texts: Sequence[str]) -> list[str]:
    """The distinct texts the current embedder would really send (not in the disk cache)."""
    from coverage_core.embeddings.cache import uncached_texts as not_in_cache

    try:
        model = embedder()
    except CoverageError:
        return list(dict.fromkeys(texts))  # no key yet: assume nothing is cached
    return not_in_cache(texts, model, embedding_cache())


def choose_question_column() -> None:
    """on_change of the column selectbox: re-read the CSV with the chosen column."""
    column = st.session_state.get(state.W_QUESTION_COLUMN)
    state.drop(state.COLUMN_ERROR)
    if column is None:
        return
    try:
        read_question_file(column)
    except CoverageError as error:
        state.put(state.COLUMN_ERROR, str(error))


def chunk_counts() -> dict[str, int]:
    """Chunks per document at the current chunk settings (cheap; no embedding)."""
    documents = state.documents()
    if documents is None:
        return {}
    settings = state.settings()
    key = (documents.fingerprint, engine.chunking_config(settings))
    counts = state.stage(state.CHUNK_COUNTS, key)
    if counts is None:
        counts = {}
        for chunk in engine.pipeline.chunk_corpus(documents.documents, key[1]):
            counts[chunk.document] = counts.get(chunk.document, 0) + 1
        state.put_stage(state.CHUNK_COUNTS, key, counts)
    return counts


def read_question_file(column: str | None):
    """(Re)read the stored CSV with ``column``; keeps the last good reading on error."""
    file = state.question_file()
    if file is None:
        return None
    questions = read_questions(file.data, question_column=column, name=file.name)
    current = state.questions()
    if current is None or engine.questions_fingerprint(current) != engine.questions_fingerprint(questions):
        state.drop(*state.QUESTION_DERIVED)
    state.put(state.QUESTIONS, questions)
    state.put(state.QUESTION_COLUMN, column)
    return questions


def load_example() -> None:
    """The bundled wiki-qa slice, with the local model and default settings."""
    document_set = read_documents([EXAMPLE / "docs"])
    set_documents(document_set, [d.name for d in document_set.documents], "example")
    data = (EXAMPLE / "questions.csv").read_bytes()
    set_question_file("wiki-qa questions.csv", data, source="example")
    state.update_settings(provider="local", model="", dimensions=None, base_url="")


# ---------------------------------------------------------------- analysis
def stored_inputs() -> engine.EmbeddedInputs | None:
    """The embedded corpus and questions of the last run, whatever the settings now."""
    corpus = state.get(state.CORPUS)
    vectors = state.get(state.QUESTION_VECTORS)
    if not isinstance(corpus, state.Stage) or not isinstance(vectors, state.Stage):
        return None
    if corpus.key[2] != vectors.key[1]:  # embedded with different models
        return None
    questions, embedding = vectors.value
    return engine.EmbeddedInputs(corpus.value, corpus.key, questions, embedding, vectors.key)


def wanted_keys() -> tuple[tuple, tuple] | None:
    docs, questions = state.documents(), state.questions()
    if docs is None or questions is None:
        return None
    settings = state.settings()
    try:
        return (
            engine.corpus_key(docs.fingerprint, settings),
            engine.question_key(engine.questions_fingerprint(questions), settings),
        )
    except CoverageError:  # settings the core rejects (the Configure page says why)
        return None


def is_stale(inputs: engine.EmbeddedInputs) -> bool:
    """True when the inputs or the embedding settings differ from those of ``inputs``."""
    if state.documents() is None or state.questions() is None:
        return False
    wanted = wanted_keys()
    return wanted is None or (inputs.corpus_key, inputs.question_key) != wanted


def run_embedding() -> engine.EmbeddedInputs | None:
    """Embed what is not embedded yet for the current inputs and settings, with progress.

    What finished is kept even if a later step fails (and the core's disk
    cache means a retry embeds only the rest). Errors are shown; None then.
    """
    docs, questions = state.documents(), state.questions()
    if docs is None or questions is None:
        st.error("Add documents and a question file on the Upload page first.")
        return None
    settings = state.settings()
    try:
        engine.analysis_config(settings)  # settings the core rejects stop here, before any work
        corpus_key, question_key = wanted_keys()
        model = embedder()
        cache = embedding_cache()
        with st.status("Embedding…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")

            def progress(stage: str, done: int, total: int) -> None:
                bar.progress(done / total if total else 1.0, text=f"Embedded {done:,} of {total:,} {stage}")

            corpus = state.stage(state.CORPUS, corpus_key)
            if corpus is None:
                status.update(label="Embedding the document chunks…")
                corpus = engine.pipeline.embed_corpus(docs.documents, engine.chunking_config(settings), model, cache, progress)
                state.put_stage(state.CORPUS, corpus_key, corpus)
            st.write(
                f"Chunks: {len(corpus.chunks):,} ({corpus.embedded.n_cached:,} from cache, "
                f"{corpus.embedded.n_embedded:,} embedded now)."
            )
            stored = state.stage(state.QUESTION_VECTORS, question_key)
            if stored is None:
                status.update(label="Embedding the questions…")
                embedding = engine.pipeline.embed_questions(questions, model, cache, progress)
                stored = state.put_stage(state.QUESTION_VECTORS, question_key, (questions, embedding))
            st.write(
                f"Questions: {len(questions.questions):,} ({stored[1].n_cached:,} from cache, "
                f"{stored[1].n_embedded:,} embedded now)."
            )
            inputs = stored_inputs()
            if inputs is not None and not engine.has_calibration(inputs, settings, tuning_cache()):
                status.update(label="Calibrating the support level on your documents…")
                calibration = engine.calibration_for(
                    inputs, engine.analysis_config(settings, inputs.embedding, inputs.chunking),
                    tuning_cache(), model, cache,
                )
                st.write(f"Support level: {calibration.support_threshold:.2f} ({calibration.method}).")
            status.update(label="Embedding done.", state="complete", expanded=False)
    except CoverageError as error:
        st.error(str(error))
        return None
    state.drop(state.LAST_ERROR)
    return stored_inputs()


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
    cache = tuning_cache()
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
        st.error(str(error))
        return None


def tuning_cache() -> engine.TuningCache:
    """The session's :class:`~ui.engine.TuningCache` (created on first use)."""
    cache = state.get(state.TUNING)
    if not isinstance(cache, engine.TuningCache):
        cache = engine.TuningCache()
        state.put(state.TUNING, cache)
    return cache


def calibrated_level() -> float | None:
    """The automatic (calibrated) support level of the stored corpus, if it was computed already."""
    inputs = stored_inputs()
    cache = state.get(state.TUNING)
    if inputs is None or not isinstance(cache, engine.TuningCache):
        return None
    settings = state.settings().replace(support_threshold=None)
    try:
        config = engine.analysis_config(settings, inputs.embedding, inputs.chunking)
    except CoverageError:
        return None
    found = cache.calibrations.get(engine.calibration_key(inputs, config))
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
    """The chat client for gap suggestions, or None when the LLM is off. Raises ProviderError."""
    settings = state.settings()
    if not settings.llm_enabled:
        return None
    from coverage_core.llm import ChatClient, LLMConfig

    return ChatClient(
        LLMConfig(model=settings.llm_model, base_url=settings.llm_base_url or None, api_key=state.llm_api_key())
    )


def gaps_for(analysis, use_llm: bool = False):
    """The analysis with gaps: offline drafts computed once per analysis; LLM only when asked."""
    settings = state.settings()
    llm_key = (settings.llm_model, settings.llm_base_url) if use_llm else None
    key = (analysis_key(analysis), llm_key)
    found = state.stage(state.GAPS, key)
    if found is not None:
        return found
    previous = state.get(state.GAPS)
    if not use_llm and isinstance(previous, state.Stage) and previous.key[0] == key[0]:
        return previous.value  # LLM suggestions for this analysis are kept
    llm = llm_client() if use_llm else None
    model = model_cache = None
    inputs = stored_inputs()
    if llm is not None and inputs is not None:  # LLM questions are checked against τ with the chunks' model
        model, model_cache = embedder_for(inputs), embedding_cache()
    with st.spinner("Finding gaps and writing suggestions…"):
        result = engine.with_gaps(analysis, llm, model, model_cache)
    state.put_stage(state.GAPS, key, result)
    return result


def analysis_key(analysis):
    """The inputs-and-settings key of ``analysis`` if it is the session's current one."""
    cache = state.get(state.TUNING)
    if isinstance(cache, engine.TuningCache) and cache.analysis is not None and cache.analysis[1] is analysis:
        return cache.analysis[0]
    return ("unkeyed", id(analysis))


def projection_for(analysis, method: str = "tsne"):
    """The 2-D map of the analysed vectors, computed once per data set and method.

    Keyed by the embedded inputs only, so moving K, a threshold or an
    override never recomputes it (cluster colours come from the current
    labels when it is drawn).
    """
    inputs = stored_inputs()
    key = (inputs.corpus_key, inputs.question_key, method) if inputs is not None else ("unkeyed", id(analysis), method)
    found = state.stage(state.PROJECTION, key)
    if found is None:
        from coverage_core.projection import project_2d

        with st.spinner(f"Drawing the map of {len(analysis.corpus.chunks):,} chunks (once per data set)…"):
            found = project_2d(
                analysis.corpus.vectors, analysis.question_vectors, analysis.clustering.labels,
                method=method, random_state=analysis.config.random_state,
            )
        state.put_stage(state.PROJECTION, key, found)
    return found


DEFAULT_FITNESS_THRESHOLD = 0.4


def price_table():
    """The price table as last edited on Configure (the default table before any edit)."""
    from coverage_core.costs import default_price_table

    for key in (state.PRICE_TABLE_EDITED, state.PRICE_TABLE):
        table = state.get(key)
        if table is not None:
            return table
    return default_price_table()


def checks_for(analysis) -> engine.Checks:
    """Retrieval and answerability of the current analysis, plus any sub-question result computed for it.

    Each check is computed once per analysis and its settings (k, the
    columns). A check whose column the user named is unusable is left out
    with its reason (``retrieval_error``, ``answerability_error``), for the
    page that owns the setting to show; the other check still runs.
    """
    settings = state.settings()
    key = (analysis_key(analysis), settings.retrieval_k, settings.relevant_column, settings.label_column)
    found = state.stage(state.RETRIEVAL, key)
    if found is None:
        found = engine.checks(analysis, settings)
        state.put_stage(state.RETRIEVAL, key, found)
    return dataclasses.replace(found, subquestions=subquestions_for_inputs())


def subquestions_for_inputs():
    """The last sub-question result, if it was computed on the current embedded inputs.

    The ``SUBQUESTIONS`` stage is keyed ``(corpus key, questions key, ...)``.
    """
    inputs = stored_inputs()
    stored = state.get(state.SUBQUESTIONS)
    if inputs is None or not isinstance(stored, state.Stage):
        return None
    return stored.value if stored.key[:2] == (inputs.corpus_key, inputs.question_key) else None


def html_report_builder(analysis, inputs_record: dict):
    """A function that builds the HTML report (run only when the user downloads it).

    Everything it needs is read from the session now, so the function itself
    touches no session state.
    """
    from coverage_core.html_report import build_html_report

    inputs = stored_inputs()
    projection = None
    stored = state.get(state.PROJECTION)
    if inputs is not None and isinstance(stored, state.Stage) and stored.key[:2] == (inputs.corpus_key, inputs.question_key):
        projection = stored.value
    improvement = state.get(state.IMPROVED)
    after = improvement.after if improvement is not None and improvement.before is analysis_base(analysis) else None
    threshold = float(state.get(state.FITNESS_THRESHOLD, DEFAULT_FITNESS_THRESHOLD))

    def build() -> bytes:
        return build_html_report(
            analysis, inputs=inputs_record, projection=projection, improved=after, fitness_threshold=threshold
        ).encode("utf-8")

    return build


def analysis_base(analysis):
    """The measured analysis a gapped copy was made from (itself if not a copy)."""
    cache = state.get(state.TUNING)
    if isinstance(cache, engine.TuningCache) and cache.analysis is not None:
        current = cache.analysis[1]
        if current is analysis or (current.clustering is analysis.clustering and current.metrics == analysis.metrics):
            return current
    return analysis
